// The canned-operation plugins of the cuda backend, as se::cuda::k...Plugin
// (the backend struct inherits them). Naming a plugin needs no library: the
// library is looked for when the first operation of that kind runs, and a
// missing one is an UNAVAILABLE Status that names the package to install.
#pragma once

#include "streamexecutor/core/plugin.hpp"

namespace streamexecutor::cuda_detail {

struct PluginIds {
  static constexpr BlasPluginId kCuBlasPlugin{"cuda", "cublas"};  // default BLAS
  static constexpr RngPluginId kPhiloxPlugin{"cuda", "philox"};   // default RNG (Random123 in PTX)
  static constexpr RngPluginId kCuRandPlugin{"cuda", "curand"};   // the vendor generator
  static constexpr FftPluginId kCuFftPlugin{"cuda", "cufft"};     // default FFT (cuFFT, loaded at run time)
  static constexpr DnnPluginId kCuDnnPlugin{"cuda", "cudnn"};     // default DNN (cuDNN, loaded at run time)

  // What an executor uses for a kind nobody chose.
  static PluginConfig DefaultPlugins() {
    PluginConfig defaults;
    defaults.SetBlas(kCuBlasPlugin).SetRng(kPhiloxPlugin).SetFft(kCuFftPlugin).SetDnn(kCuDnnPlugin);
    return defaults;
  }
};

}  // namespace streamexecutor::cuda_detail
