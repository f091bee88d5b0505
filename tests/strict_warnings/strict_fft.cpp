// strict_warnings.cpp's companion for <streamexecutor/fft.hpp>: plans of
// every rank and ThenFft of every type on every enabled backend, compiled
// (never run) by check.py under -Wall -Wextra -Wpedantic -Wshadow
// -Wconversion -Werror with g++ and clang++.
#include <streamexecutor/fft.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <complex>

namespace se = streamexecutor;

namespace {

template <typename B>
se::Status ExerciseFft(se::StreamExecutor<B>* executor) {
  auto c2c = se::fft::Create1dPlan(executor, 64, se::fft::Type::kC2CForward);
  auto r2c = se::fft::Create2dPlan(executor, 8, 8, se::fft::Type::kR2C);
  auto z2d = se::fft::Create3dPlan(executor, 4, 4, 4, se::fft::Type::kZ2D);
  if (!c2c.ok() || !r2c.ok() || !z2d.ok()) return c2c.status();
  se::ScopedDeviceMemory<std::complex<float>> complex = executor->template AllocateOwnedArray<std::complex<float>>(64);
  se::ScopedDeviceMemory<float> real = executor->template AllocateOwnedArray<float>(64);
  se::ScopedDeviceMemory<std::complex<double>> zcomplex =
      executor->template AllocateOwnedArray<std::complex<double>>(64);
  se::ScopedDeviceMemory<double> dreal = executor->template AllocateOwnedArray<double>(64);
  se::Stream<B> stream(executor);
  return stream.Init()
      .ThenFft(&c2c.value(), *complex.ptr(), complex.ptr())
      .ThenFft(&r2c.value(), *real.ptr(), complex.ptr())
      .ThenFft(&z2d.value(), *zcomplex.ptr(), dreal.ptr())
      .BlockHostUntilDone();
}

template <typename B>
int RunFft() {
  se::StatusOr<se::StreamExecutor<B>*> executor = se::Platform<B>::Get().ExecutorForDevice(0);
  if (!executor.ok()) return 1;
  return ExerciseFft(executor.value()).ok() ? 0 : 1;
}

}  // namespace

int StrictFftEntry() {
  int result = 0;
  // Every enabled backend, se::host_serial (no adapter: UNAVAILABLE) included.
  se::EnabledBackends::ForEach([&result]<typename B>() { result += RunFft<B>(); });
  return result;
}
