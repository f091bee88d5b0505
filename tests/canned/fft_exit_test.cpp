// A clFFT plan held by an object made before the first plan (here at
// namespace scope) is destroyed after clFFT's own plan repository at exit.
// The process must still exit cleanly: meson counts an abort as a failure.
#include <complex>
#include <cstdio>
#include <span>
#include <vector>

#include <streamexecutor/fft.hpp>
#include <streamexecutor/opencl.hpp>

namespace se = streamexecutor;

se::FftPlan<se::opencl> plan_at_namespace_scope;

int main() {
  if (se::Platform<se::opencl>::Get().VisibleDeviceCount() == 0) {
    std::puts("SKIPPED: no OpenCL device");
    return 77;
  }
  auto* executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  constexpr std::size_t kN = 64;
  auto made = se::fft::Create1dPlan(executor, kN, se::fft::Type::kC2CForward);
  if (!made.ok()) {
    std::printf("FAIL: %s\n", made.status().ToString().c_str());
    return 1;
  }
  plan_at_namespace_scope = std::move(made).value();
  auto in = executor->AllocateOwnedArray<std::complex<float>>(kN);
  auto out = executor->AllocateOwnedArray<std::complex<float>>(kN);
  std::vector<std::complex<float>> data(kN, {1.0f, 0.0f});
  se::Stream<se::opencl> stream(executor);
  const se::Status status = stream.Init()
                                .ThenMemcpyH2D(std::span<const std::complex<float>>(data), in.ptr())
                                .ThenFft(&plan_at_namespace_scope, *in.ptr(), out.ptr())
                                .ThenMemcpyD2H(out.cref(), std::span<std::complex<float>>(data))
                                .BlockHostUntilDone();
  if (!status.ok() || std::abs(data[0] - std::complex<float>(kN, 0.0f)) > 1e-3f) {
    std::printf("FAIL: %s, X[0] = %g%+gi\n", status.ToString().c_str(), data[0].real(), data[0].imag());
    return 1;
  }
  std::puts("transform done; the plan stays until exit");
  return 0;
}
