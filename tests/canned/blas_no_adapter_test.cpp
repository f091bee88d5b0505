// BLAS on se::host_serial, which has no BLAS adapter (tests/canned/no_adapter.hpp).
#include <streamexecutor/blas.hpp>

#include "no_adapter.hpp"

namespace se = streamexecutor;
using no_adapter::Executor;

static_assert(!se::canned_detail::Adapted<se::blas_detail::Adapter<se::host_serial>>);

TEST_CASE("BLAS on a backend without an adapter is UNAVAILABLE naming the backend", "[blas][host_serial]") {
  se::ScopedDeviceMemory<float> x = Executor()->AllocateOwnedArray<float>(8);
  se::Stream<se::host_serial> stream(Executor());
  stream.Init().ThenBlasAxpy(8, 1.0f, x.cref(), 1, x.ptr(), 1);
  no_adapter::RequireNoLibrary(stream.status(), "ThenBlasAxpy", "BLAS");
  // The arguments are checked first, as on every backend.
  se::Stream<se::host_serial> bad(Executor());
  bad.Init().ThenBlasAxpy(9, 1.0f, x.cref(), 1, x.ptr(), 1);
  CHECK(bad.status().code() == se::ErrorCode::kOutOfRange);
}
