// The block_reduction example's kernel for the CUDA backend, compiled to PTX by
// nvcc at build time (examples/meson.build) and loaded with AddCudaPtxOnDisk.
// The same logic as the host and OpenCL kernels in block_reduction.cpp.
#include <cstdint>

extern "C" __global__ void block_sum(const float* in, float* partial, std::uint32_t n) {
  extern __shared__ float sh[];
  const unsigned t = threadIdx.x;
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + t;
  sh[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) sh[t] += sh[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = sh[0];
}
