// RNG on se::host_serial, which has no RNG adapter (tests/canned/no_adapter.hpp).
#include <streamexecutor/rng.hpp>

#include <cstdint>

#include "no_adapter.hpp"

namespace se = streamexecutor;
using no_adapter::Executor;

static_assert(!se::canned_detail::Adapted<se::rng_detail::Adapter<se::host_serial>>);

TEST_CASE("RNG on a backend without an adapter is UNAVAILABLE naming the backend", "[rng][host_serial]") {
  const std::uint8_t seed[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  se::Stream<se::host_serial> seeded(Executor());
  seeded.Init().ThenSetRngSeed(seed, sizeof(seed));
  no_adapter::RequireNoLibrary(seeded.status(), "ThenSetRngSeed", "RNG");
  se::ScopedDeviceMemory<float> values = Executor()->AllocateOwnedArray<float>(8);
  se::Stream<se::host_serial> stream(Executor());
  stream.Init().ThenPopulateRandUniform(values.ptr());
  no_adapter::RequireNoLibrary(stream.status(), "ThenPopulateRandUniform", "RNG");
  // The seed is checked first, as on every backend.
  se::Stream<se::host_serial> bad(Executor());
  bad.Init().ThenSetRngSeed(seed, 4);
  CHECK(bad.status().code() == se::ErrorCode::kInvalidArgument);
}
