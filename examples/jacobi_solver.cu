// The CUDA kernels of jacobi_solver.cpp, compiled to PTX at build time.
#include <cstdint>

extern "C" __global__ void jacobi_update(float* x, const float* r, const float* diagonal, std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += r[i] / diagonal[i];
}

extern "C" __global__ void convergence(const float* rr, std::int32_t* iterations, std::int32_t* go, float tolerance,
                                       std::int32_t limit) {
  *iterations += 1;
  *go = *rr > tolerance * tolerance && *iterations < limit ? 1 : 0;
}
