// The canned-operation plugins of the opencl backend, as se::opencl::k...Plugin
// (the backend struct inherits them). Naming a plugin needs no library: the
// library is looked for when the first operation of that kind runs, and a
// missing one is an UNAVAILABLE Status that names the package to install.
#pragma once

#include "streamexecutor/core/plugin.hpp"

namespace streamexecutor::opencl_detail {

struct PluginIds {
  static constexpr BlasPluginId kClBlastPlugin{"opencl", "clblast"};    // default BLAS
  static constexpr RngPluginId kPhiloxPlugin{"opencl", "philox"};       // default RNG (Random123 in OpenCL C)
  static constexpr FftPluginId kClFftPlugin{"opencl", "clfft"};         // default FFT (clFFT)
  static constexpr DnnPluginId kClBlastDnnPlugin{"opencl", "clblast"};  // default DNN (CLBlast: convolution, matmul)

  // What an executor uses for a kind nobody chose.
  static PluginConfig DefaultPlugins() {
    PluginConfig defaults;
    defaults.SetBlas(kClBlastPlugin).SetRng(kPhiloxPlugin).SetFft(kClFftPlugin).SetDnn(kClBlastDnnPlugin);
    return defaults;
  }
};

}  // namespace streamexecutor::opencl_detail
