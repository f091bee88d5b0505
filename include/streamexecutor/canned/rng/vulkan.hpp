// The Philox plugin of the Vulkan backend (se::vulkan::kPhiloxPlugin):
// philox.comp, compiled to SPIR-V when streamexecutor was built and embedded
// as philox_spirv.inc (in the build tree, STREAMEXECUTOR_RNG_PHILOX_SPIRV_INC
// names it; installed, it sits beside this header). A build without
// glslangValidator has no SPIR-V, and the plugin is then UNAVAILABLE at its
// first use, so that code naming it still compiles everywhere.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "streamexecutor/canned/rng/common.hpp"
#include "streamexecutor/canned/rng/kernels.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/vulkan.hpp"

#if defined(STREAMEXECUTOR_RNG_PHILOX_SPIRV_INC)
#include STREAMEXECUTOR_RNG_PHILOX_SPIRV_INC
#elif __has_include(<streamexecutor/canned/rng/philox_spirv.inc>)
#include <streamexecutor/canned/rng/philox_spirv.inc>
#endif

namespace streamexecutor::rng_detail {

template <>
struct Adapter<vulkan> {
  static StatusOr<MultiKernelLoaderSpec> PhiloxSpec(PhiloxKernel which) {
#if defined(STREAMEXECUTOR_RNG_HAVE_PHILOX_SPIRV)
    // In PhiloxKernel's order. Double kernels need shaderFloat64 and every
    // kernel shaderInt64 (the 64-bit parameters): GetKernel refuses them as
    // NOT_FOUND on a device without.
    static constexpr std::array<std::span<const std::uint32_t>, kPhiloxKernelCount> kModules = {
        std::span<const std::uint32_t>(kPhiloxSpirv_uniform_f32),
        std::span<const std::uint32_t>(kPhiloxSpirv_uniform_f64),
        std::span<const std::uint32_t>(kPhiloxSpirv_gaussian_f32),
        std::span<const std::uint32_t>(kPhiloxSpirv_gaussian_f64)};
    const auto index = static_cast<std::size_t>(which);
    const bool gaussian = which == PhiloxKernel::kGaussianF32 || which == PhiloxKernel::kGaussianF64;
    MultiKernelLoaderSpec spec(gaussian ? 7 : 5);
    spec.AddSpirvInMemory(kModules[index], kPhiloxKernelNames[index]);
    return spec;
#else
    return MakeError(ErrorCode::kUnavailable,
                     "the Vulkan Philox kernels ({}) were not built: streamexecutor was built without "
                     "glslangValidator (Debian: glslang-tools)",
                     kPhiloxKernelNames[static_cast<std::size_t>(which)]);
#endif
  }
};

}  // namespace streamexecutor::rng_detail
