// The canned operations' steady state allocates nothing on the host backend:
// after the first call (which makes the executor's RNG state and loads the
// kernels, or makes the FFT plan), seeding, drawing and transforming call
// operator new zero times on any thread. Replaces the global operator new
// (tests/counting_new.cpp), hence an executable of its own.
#include <catch2/catch.hpp>

#include <complex>
#include <cstdint>

#include "counting_new.hpp"

#include <streamexecutor/host.hpp>
#include <streamexecutor/rng.hpp>
#if defined(SE_TEST_WITH_FFTW3)  // set by meson.build where FFTW3 is linked
#include <streamexecutor/fft.hpp>
#endif

namespace se = streamexecutor;

TEST_CASE("1000 RNG calls on the host allocate nothing", "[rng][allocation]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  auto floats = executor->AllocateOwnedArray<float>(1000);
  auto doubles = executor->AllocateOwnedArray<double>(1000);
  const std::uint8_t seed[16] = {1, 2, 3, 4, 5, 6, 7, 8};
  se::Stream stream(executor);
  stream.Init();
  auto draw = [&] {
    stream.ThenSetRngSeed(seed, sizeof(seed))
        .ThenPopulateRandUniform(floats.ptr())
        .ThenPopulateRandGaussian(0.0, 1.0, doubles.ptr());
  };
  for (int i = 0; i < 10; ++i) draw();  // warm-up: the executor's RNG state, the kernels
  REQUIRE(stream.BlockHostUntilDone().ok());

  const long before = GlobalNewCalls();
  for (int i = 0; i < 1000; ++i) draw();
  se::Status done = stream.BlockHostUntilDone();
  const long after = GlobalNewCalls();
  REQUIRE(done.ok());
  CHECK(after - before == 0);
}

#if defined(STREAMEXECUTOR_FFT_WITH_FFTW3)
TEST_CASE("1000 FFTs on the host allocate nothing once the plan exists", "[fft][allocation]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  auto plan = se::fft::Create1dPlan(executor, 256, se::fft::Type::kC2CForward);
  REQUIRE(plan.ok());
  auto data = executor->AllocateOwnedArray<std::complex<float>>(256);
  REQUIRE(executor->SynchronousMemZero(data.ptr(), 256 * sizeof(std::complex<float>)).ok());
  se::Stream stream(executor);
  stream.Init();
  for (int i = 0; i < 10; ++i) stream.ThenFft(&plan.value(), *data.ptr(), data.ptr());
  REQUIRE(stream.BlockHostUntilDone().ok());

  const long before = GlobalNewCalls();
  for (int i = 0; i < 1000; ++i) stream.ThenFft(&plan.value(), *data.ptr(), data.ptr());
  se::Status done = stream.BlockHostUntilDone();
  const long after = GlobalNewCalls();
  REQUIRE(done.ok());
  CHECK(after - before == 0);
}
#endif
