// The Philox plugin of the CUDA backend: philox_kernels.cu, compiled to PTX
// by nvcc when streamexecutor was built and embedded as philox_ptx.inc (in the
// build tree, STREAMEXECUTOR_RNG_PHILOX_PTX_INC names it; installed, it sits
// beside this header). A build without nvcc has no PTX, and the plugin is
// then UNAVAILABLE at its first use rather than absent, so that code naming
// it still compiles everywhere.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "streamexecutor/canned/rng/kernels.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/cuda.hpp"

#if defined(STREAMEXECUTOR_RNG_PHILOX_PTX_INC)
#include STREAMEXECUTOR_RNG_PHILOX_PTX_INC
#elif __has_include(<streamexecutor/canned/rng/philox_ptx.inc>)
#include <streamexecutor/canned/rng/philox_ptx.inc>
#endif

namespace streamexecutor::rng_detail {

// The PTX is embedded as several literals (each under the 64 KiB that
// -Woverlength-strings allows) and joined once per process.
inline const std::string& PhiloxPtx() {
  static const std::string ptx = [] {
    std::string text;
#if defined(STREAMEXECUTOR_RNG_HAVE_PHILOX_PTX)
    for (std::string_view chunk : kPhiloxPtxChunks) text += chunk;
#endif
    return text;
  }();
  return ptx;
}

inline StatusOr<MultiKernelLoaderSpec> PhiloxSpec(std::type_identity<cuda>, PhiloxKernel which) {
  const std::string& ptx = PhiloxPtx();
  if (ptx.empty()) {
    return MakeError(ErrorCode::kUnavailable,
                     "cuda: the Philox RNG plugin has no PTX: streamexecutor was built without nvcc, so "
                     "canned/rng/philox_kernels.cu was not compiled (rebuild with the CUDA toolkit's nvcc on PATH or "
                     "in CUDA_PATH, or choose se::cuda::kCuRandPlugin)");
  }
  const bool gaussian = which == PhiloxKernel::kGaussianF32 || which == PhiloxKernel::kGaussianF64;
  MultiKernelLoaderSpec spec(gaussian ? 7 : 5);
  spec.AddCudaPtxInMemory(ptx, kPhiloxKernelNames[static_cast<std::size_t>(which)]);
  return spec;
}

}  // namespace streamexecutor::rng_detail
