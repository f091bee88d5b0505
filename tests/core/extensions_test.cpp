// The per-executor extension slots that canned-operation libraries keep their
// state in: created once on first use, shared afterwards, destroyed in reverse
// order of creation, and a failed creation leaves nothing behind.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <streamexecutor/core/extensions.hpp>

namespace se = streamexecutor;

namespace {

std::vector<std::string>* g_destroyed = nullptr;

struct BlasState {
  int handle = 7;
  ~BlasState() { g_destroyed->push_back("blas"); }
};
struct FftState {
  ~FftState() { g_destroyed->push_back("fft"); }
};

}  // namespace

TEST_CASE("an extension is made once and found afterwards", "[extensions]") {
  std::vector<std::string> destroyed;
  g_destroyed = &destroyed;
  {
    se::detail::ExtensionSlots slots;
    int made = 0;
    auto make = [&]() -> se::StatusOr<std::unique_ptr<BlasState>> {
      ++made;
      return std::make_unique<BlasState>();
    };
    CHECK(slots.Find<BlasState>() == nullptr);
    auto first = slots.GetOrCreate<BlasState>(make);
    REQUIRE(first.ok());
    auto second = slots.GetOrCreate<BlasState>(make);
    REQUIRE(second.ok());
    CHECK(first.value() == second.value());
    CHECK(made == 1);
    CHECK(slots.Find<BlasState>() == first.value());
    CHECK(first.value()->handle == 7);
    REQUIRE(
        slots
            .GetOrCreate<FftState>([] { return se::StatusOr<std::unique_ptr<FftState>>(std::make_unique<FftState>()); })
            .ok());
    CHECK(destroyed.empty());
  }
  // Reverse order of creation: a later library may use an earlier one's state.
  CHECK(destroyed == std::vector<std::string>{"fft", "blas"});
}

TEST_CASE("a failed creation is reported and retried on the next request", "[extensions][errors]") {
  std::vector<std::string> destroyed;
  g_destroyed = &destroyed;
  se::detail::ExtensionSlots slots;
  auto failed = slots.GetOrCreate<BlasState>([]() -> se::StatusOr<std::unique_ptr<BlasState>> {
    return se::Status(se::ErrorCode::kUnavailable, "libcublas.so.13 not found; install the CUDA toolkit's cuBLAS");
  });
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == se::ErrorCode::kUnavailable);
  CHECK(slots.Find<BlasState>() == nullptr);
  auto null = slots.GetOrCreate<BlasState>(
      [] { return se::StatusOr<std::unique_ptr<BlasState>>(std::unique_ptr<BlasState>()); });
  REQUIRE_FALSE(null.ok());
  CHECK(null.status().message().find("returned null") != std::string::npos);
  auto made = slots.GetOrCreate<BlasState>(
      [] { return se::StatusOr<std::unique_ptr<BlasState>>(std::make_unique<BlasState>()); });
  CHECK(made.ok());
}
