// The canned-operation plugins of the vulkan backend, as se::vulkan::k...Plugin
// (the backend struct inherits them). Naming a plugin needs no library: what
// it needs is looked for when the first operation of that kind runs, and a
// missing part is an UNAVAILABLE Status that says what to install.
#pragma once

#include "streamexecutor/core/plugin.hpp"

namespace streamexecutor::vulkan_detail {

struct PluginIds {
  static constexpr RngPluginId kPhiloxPlugin{"vulkan", "philox"};  // default RNG (Philox in SPIR-V, philox.comp)
  static constexpr FftPluginId kVkFftPlugin{"vulkan", "vkfft"};    // default FFT (VkFFT, canned/fft/vulkan.hpp)

  // What an executor uses for a kind nobody chose.
  static PluginConfig DefaultPlugins() {
    PluginConfig defaults;
    defaults.SetRng(kPhiloxPlugin).SetFft(kVkFftPlugin);
    return defaults;
  }
};

}  // namespace streamexecutor::vulkan_detail
