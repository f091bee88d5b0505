// The CUDA Philox kernels, compiled to PTX by nvcc when streamexecutor is
// built (meson.build: -ptx -fmad=false, so that mean + stddev * z is not
// fused and rounds as on the host) and embedded as philox_ptx.inc, which
// cuda.hpp loads. The bodies are philox.hpp's, shared with the host kernels.
#include <cstdint>

#include "streamexecutor/canned/rng/philox.hpp"

namespace {

__device__ std::uint64_t ThreadIndex() { return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

}  // namespace

extern "C" __global__ void se_philox_uniform_f32(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block,
                                                 std::uint64_t count, float* out) {
  const std::uint64_t index = ThreadIndex();
  if (index < (count + 3) / 4) streamexecutor::rng_detail::UniformBlock(key, stream, first_block, index, count, out);
}

extern "C" __global__ void se_philox_uniform_f64(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block,
                                                 std::uint64_t count, double* out) {
  const std::uint64_t index = ThreadIndex();
  if (index < (count + 1) / 2) streamexecutor::rng_detail::UniformBlock(key, stream, first_block, index, count, out);
}

extern "C" __global__ void se_philox_gaussian_f32(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block,
                                                  std::uint64_t count, float mean, float stddev, float* out) {
  const std::uint64_t index = ThreadIndex();
  if (index < (count + 3) / 4) {
    streamexecutor::rng_detail::GaussianBlock(key, stream, first_block, index, count, mean, stddev, out);
  }
}

extern "C" __global__ void se_philox_gaussian_f64(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block,
                                                  std::uint64_t count, double mean, double stddev, double* out) {
  const std::uint64_t index = ThreadIndex();
  if (index < (count + 1) / 2) {
    streamexecutor::rng_detail::GaussianBlock(key, stream, first_block, index, count, mean, stddev, out);
  }
}
