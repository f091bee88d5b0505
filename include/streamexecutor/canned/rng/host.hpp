// The Philox plugin of the host backend: the kernels are host functions over
// Random123's C++ Philox4x32 (philox.hpp), one Philox block per kernel
// thread, so the stream's worker threads share the work block by block.
#pragma once

#include <cstdint>
#include <type_traits>

#include "streamexecutor/canned/rng/common.hpp"
#include "streamexecutor/canned/rng/kernels.hpp"
#include "streamexecutor/canned/rng/philox.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/host.hpp"

namespace streamexecutor::rng_detail {

inline std::uint64_t HostThreadIndex(const host::KernelContext& ctx) {
  return ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
}

inline void HostUniformF32(const host::KernelContext& ctx, std::uint64_t key, std::uint64_t stream,
                           std::uint64_t first_block, std::uint64_t count, float* out) {
  const std::uint64_t index = HostThreadIndex(ctx);
  if (index < (count + 3) / 4) UniformBlock(key, stream, first_block, index, count, out);
}
inline void HostUniformF64(const host::KernelContext& ctx, std::uint64_t key, std::uint64_t stream,
                           std::uint64_t first_block, std::uint64_t count, double* out) {
  const std::uint64_t index = HostThreadIndex(ctx);
  if (index < (count + 1) / 2) UniformBlock(key, stream, first_block, index, count, out);
}
inline void HostGaussianF32(const host::KernelContext& ctx, std::uint64_t key, std::uint64_t stream,
                            std::uint64_t first_block, std::uint64_t count, float mean, float stddev, float* out) {
  const std::uint64_t index = HostThreadIndex(ctx);
  if (index < (count + 3) / 4) GaussianBlock(key, stream, first_block, index, count, mean, stddev, out);
}
inline void HostGaussianF64(const host::KernelContext& ctx, std::uint64_t key, std::uint64_t stream,
                            std::uint64_t first_block, std::uint64_t count, double mean, double stddev, double* out) {
  const std::uint64_t index = HostThreadIndex(ctx);
  if (index < (count + 1) / 2) GaussianBlock(key, stream, first_block, index, count, mean, stddev, out);
}

template <>
struct Adapter<host> {
  static StatusOr<MultiKernelLoaderSpec> PhiloxSpec(PhiloxKernel which) {
    const std::string_view name = kPhiloxKernelNames[static_cast<std::size_t>(which)];
    const bool gaussian = which == PhiloxKernel::kGaussianF32 || which == PhiloxKernel::kGaussianF64;
    MultiKernelLoaderSpec spec(gaussian ? 7 : 5);
    switch (which) {
      case PhiloxKernel::kUniformF32: spec.AddHostKernel<&HostUniformF32>(name); break;
      case PhiloxKernel::kUniformF64: spec.AddHostKernel<&HostUniformF64>(name); break;
      case PhiloxKernel::kGaussianF32: spec.AddHostKernel<&HostGaussianF32>(name); break;
      case PhiloxKernel::kGaussianF64: spec.AddHostKernel<&HostGaussianF64>(name); break;
    }
    return spec;
  }
};

}  // namespace streamexecutor::rng_detail
