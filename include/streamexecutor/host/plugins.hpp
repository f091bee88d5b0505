// The canned-operation plugins of the host backend, as se::host::k...Plugin
// (the backend struct inherits them). Naming a plugin needs no library: the
// library is looked for when the first operation of that kind runs, and a
// missing one is an UNAVAILABLE Status that names the package to install.
#pragma once

#include "streamexecutor/core/plugin.hpp"

namespace streamexecutor::host_detail {

struct PluginIds {
  static constexpr BlasPluginId kOpenBlasPlugin{"host", "openblas"};  // default BLAS (cblas)
  static constexpr RngPluginId kPhiloxPlugin{"host", "philox"};       // default RNG (Random123)
  static constexpr FftPluginId kFftw3Plugin{"host", "fftw3"};         // default FFT (FFTW3)
  static constexpr DnnPluginId kOneDnnPlugin{"host", "onednn"};       // default DNN (oneDNN CPU engine)

  // What an executor uses for a kind nobody chose.
  static PluginConfig DefaultPlugins() {
    PluginConfig defaults;
    defaults.SetBlas(kOpenBlasPlugin).SetRng(kPhiloxPlugin).SetFft(kFftw3Plugin).SetDnn(kOneDnnPlugin);
    return defaults;
  }
};

}  // namespace streamexecutor::host_detail
