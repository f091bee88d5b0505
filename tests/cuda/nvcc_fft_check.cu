// <streamexecutor/fft.hpp> in a CUDA translation unit: compiled and linked by
// nvcc -std=c++20 with -Werror, then run. The host backend (FFTW3) runs a
// transform for real and checks it; the CUDA backend, where no device
// exists, must report why rather than pass.
#include <streamexecutor/fft.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

namespace se = streamexecutor;

namespace {

template <se::Backend B>
int Run(se::Platform<B>& platform) {
  auto executor_or = platform.ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::printf("%s: no device: %s\n", std::string(platform.Name()).c_str(), executor_or.status().ToString().c_str());
    return platform.VisibleDeviceCount() == 0 && !platform.InitStatus().ok() ? 0 : 1;
  }
  se::StreamExecutor<B>* executor = executor_or.value();
  constexpr std::size_t n = 16;
  auto plan = se::fft::Create1dPlan(executor, n, se::fft::Type::kR2C);
  if (!plan.ok()) {
    std::printf("%s\n", plan.status().ToString().c_str());
    return 1;
  }
  // A cosine of frequency 3: all its energy lands in bin 3, n/2 of it.
  std::vector<float> signal(n);
  for (std::size_t i = 0; i < n; ++i)
    signal[i] = static_cast<float>(std::cos(2 * M_PI * 3 * static_cast<double>(i) / n));
  se::ScopedDeviceMemory<float> in = executor->template AllocateOwnedArray<float>(n);
  se::ScopedDeviceMemory<std::complex<float>> out =
      executor->template AllocateOwnedArray<std::complex<float>>(n / 2 + 1);
  std::vector<std::complex<float>> spectrum(n / 2 + 1);
  se::Stream<B> stream(executor);
  se::Status done = stream.Init()
                        .ThenMemcpyH2D(std::span<const float>(signal), in.ptr())
                        .ThenFft(&plan.value(), *in.ptr(), out.ptr())
                        .ThenMemcpyD2H(out.cref(), std::span<std::complex<float>>(spectrum))
                        .BlockHostUntilDone();
  if (!done.ok()) {
    std::printf("%s\n", done.ToString().c_str());
    return 1;
  }
  const bool right = std::abs(spectrum[3] - std::complex<float>(8, 0)) < 1e-4f && std::abs(spectrum[2]) < 1e-4f;
  std::printf("%s: bin 3 = (%g, %g)%s\n", std::string(platform.Name()).c_str(), static_cast<double>(spectrum[3].real()),
              static_cast<double>(spectrum[3].imag()), right ? "" : " (wrong)");
  return right ? 0 : 1;
}

}  // namespace

int main() {
  int failures = Run(se::Platform<se::host>::Get());
  failures += Run(se::Platform<se::cuda>::Get());
  return failures == 0 ? 0 : 1;
}
