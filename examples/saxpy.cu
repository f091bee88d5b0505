// The saxpy example's kernel for the CUDA backend, compiled to PTX by nvcc at
// build time (examples/meson.build) and loaded with AddCudaPtxOnDisk.
// extern "C" so that the PTX entry is named "saxpy", as in the spec.
#include <cstdint>

extern "C" __global__ void saxpy(float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
