// vkFFT.h (libvkfft-dev) for the Vulkan FFT plugin (canned/fft/vulkan.hpp),
// made to compile as C++ against glslang 12.
//
// VkFFT 1.2.26 initialises glslang's resource limits with glslang 11's
// layout: glslang 12 added nine mesh-shader limits (max_mesh_*_ext) before
// the last limit and the `limits` flags. C accepts the shifted initializer
// with a warning; C++ refuses it. vkFFT.h only ever takes that table's
// address for glslang_input_t::resource, so here it is read into a struct of
// the old layout whose operator& hands glslang the table in its own layout.
//
// A system header: vkFFT.h's own warnings are the library's, not a
// consumer's (-Wconversion, -Wshadow), and the stand-in struct below is
// initialised as VkFFT writes it (brace elision, trailing member unnamed).
#pragma once
#pragma GCC system_header

#include <cstddef>
#include <cstring>
#include <memory>

#include <glslang/Include/glslang_c_interface.h>

namespace streamexecutor::fft_detail {

struct VkFftGlslangLimits {
  // VkFFT's order: glslang 11's 92 limits up to max_mesh_view_count_nv, then
  // maxDualSourceDrawBuffersEXT.
  static constexpr std::size_t kOldCount = 93, kSharedCount = 92, kExtCount = 9;
  int values[kOldCount];
  glslang_limits_t limits;
  mutable glslang_resource_t converted;

  const glslang_resource_t* operator&() const {
    static_assert(offsetof(glslang_resource_t, max_mesh_output_vertices_ext) == kSharedCount * sizeof(int));
    static_assert(offsetof(glslang_resource_t, limits) == (kSharedCount + kExtCount + 1) * sizeof(int));
    int flat[kSharedCount + kExtCount + 1];
    std::memcpy(flat, values, kSharedCount * sizeof(int));
    // The EXT mesh limits as VkFFT gave the NV ones (same order); compute
    // shaders use neither.
    std::memcpy(flat + kSharedCount, values + kSharedCount - kExtCount, kExtCount * sizeof(int));
    flat[kSharedCount + kExtCount] = values[kOldCount - 1];
    std::memcpy(static_cast<void*>(&converted), flat, sizeof flat);
    converted.limits = limits;
    return std::addressof(converted);
  }
};

}  // namespace streamexecutor::fft_detail

#ifndef VKFFT_BACKEND
#define VKFFT_BACKEND 0
#endif
#if VKFFT_BACKEND != 0
#error "streamexecutor's Vulkan FFT plugin needs vkFFT.h's Vulkan backend (VKFFT_BACKEND 0)"
#endif
#define glslang_resource_t ::streamexecutor::fft_detail::VkFftGlslangLimits
#include <vkFFT.h>
#undef glslang_resource_t
