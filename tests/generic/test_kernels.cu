// The CUDA versions of the generic suite's kernels (test_kernels.hpp), compiled
// to PTX by nvcc at build time. extern "C" keeps the entry names equal to the
// spec's kernel names; the C++ (mangled) case is covered by tests/cuda/.
#include <cstdint>

extern "C" __global__ void saxpy(float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void coordinates(std::uint32_t* out) {
  const std::uint64_t block = (std::uint64_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const std::uint64_t thread = (std::uint64_t(threadIdx.z) * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const std::uint64_t per_block = std::uint64_t(blockDim.x) * blockDim.y * blockDim.z;
  out[block * per_block + thread] = (blockIdx.x << 24) | (blockIdx.y << 20) | (blockIdx.z << 16) | (threadIdx.x << 8) |
                                    (threadIdx.y << 4) | threadIdx.z;
}

// SharedDeviceMemory<int> is dynamic shared memory: not a parameter here.
extern "C" __global__ void reverse(int* data, std::uint32_t width) {
  extern __shared__ int scratch[];
  int* slice = data + std::uint64_t(blockIdx.x) * width;
  for (std::uint32_t i = 0; i < width; ++i) scratch[i] = slice[i];
  for (std::uint32_t i = 0; i < width; ++i) slice[i] = scratch[width - 1 - i];
}

extern "C" __global__ void add(int* data, int value) { data[blockIdx.x * blockDim.x + threadIdx.x] += value; }

// A static __shared__ array: the kernel's attributes report its 1 KiB.
extern "C" __global__ void block_sum(const float* in, float* out, std::uint32_t n) {
  __shared__ float tile[256];
  const std::uint32_t t = threadIdx.x;
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + t;
  tile[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (std::uint32_t stride = 1; stride < blockDim.x; stride *= 2) {
    if (t % (2 * stride) == 0 && t + stride < blockDim.x) tile[t] += tile[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = tile[0];
}
