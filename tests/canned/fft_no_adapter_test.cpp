// FFT on se::host_serial, which has no FFT adapter (tests/canned/no_adapter.hpp).
#include <streamexecutor/fft.hpp>

#include <complex>

#include "no_adapter.hpp"

namespace se = streamexecutor;
using no_adapter::Executor;

static_assert(!se::canned_detail::Adapted<se::fft_detail::Adapter<se::host_serial>>);

TEST_CASE("FFT on a backend without an adapter is UNAVAILABLE naming the backend", "[fft][host_serial]") {
  auto plan = se::fft::Create1dPlan(Executor(), 8, se::fft::Type::kC2CForward);
  no_adapter::RequireNoLibrary(plan.status(), "CreateFftPlan", "FFT");
  auto shape = se::fft::Create1dPlan(Executor(), 0, se::fft::Type::kC2CForward);
  CHECK(shape.status().code() == se::ErrorCode::kInvalidArgument);
  // No plan can exist, so ThenFft only ever sees an empty one.
  se::FftPlan<se::host_serial> empty;
  se::ScopedDeviceMemory<std::complex<float>> data = Executor()->AllocateOwnedArray<std::complex<float>>(8);
  se::Stream<se::host_serial> stream(Executor());
  stream.Init().ThenFft(&empty, *data.ptr(), data.ptr());
  CHECK(stream.status().code() == se::ErrorCode::kInvalidArgument);
}
