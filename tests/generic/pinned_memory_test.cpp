// Pinned host memory through the executor: the owning typed buffer, the raw
// allocate/deallocate pair, registration of caller memory, copies from and to
// it on streams, and every misuse the executor's records turn into a Status.
#include <catch2/catch.hpp>

#include <numeric>
#include <utility>
#include <vector>

#include "generic/test_backend.hpp"

TEST_CASE("HostAllocate gives an owning typed buffer that streams copy from and to", "[pinned]") {
  STATIC_REQUIRE(se::PinnedMemoryBackend<TestBackend>);
  auto* executor = TestExecutor();
  se::PinnedHostMemory<float> in = executor->HostAllocate<float>(1000);
  se::PinnedHostMemory<float> out = executor->HostAllocate<float>(1000);
  REQUIRE(in.ok());
  REQUIRE(out.ok());
  CHECK(in.size() == 1000);
  CHECK(in.size_bytes() == 4000);
  CHECK(in.span().size() == 1000);
  CHECK(executor->IsPinnedHostMemory(in.data(), in.size_bytes()));
  CHECK(executor->IsPinnedHostMemory(in.data() + 10, 40));
  CHECK_FALSE(executor->IsPinnedHostMemory(in.data() + 10, in.size_bytes()));
  std::iota(in.span().begin(), in.span().end(), 0.25f);

  auto device = executor->AllocateOwnedArray<float>(1000);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(in.span(), device.ptr())
              .ThenMemcpyD2H<float>(device.cref(), out.span())
              .BlockHostUntilDone()
              .ok());
  CHECK(out[0] == 0.25f);
  CHECK(out[999] == 999.25f);
  // The byte forms and the synchronous calls take pinned pointers like any other.
  REQUIRE(executor->SynchronousMemZero(device.ptr(), 8).ok());
  REQUIRE(executor->SynchronousMemcpyD2H(device.cref(), out.size_bytes(), out.data()).ok());
  CHECK(out[1] == 0.0f);
  CHECK(out[2] == 2.25f);
}

TEST_CASE("a moved-from or reset PinnedHostMemory holds nothing, and copies from it fail", "[pinned][errors]") {
  auto* executor = TestExecutor();
  se::PinnedHostMemory<int> first = executor->HostAllocate<int>(16);
  REQUIRE(first.ok());
  int* address = first.data();
  se::PinnedHostMemory<int> second = std::move(first);
  CHECK_FALSE(first.ok());
  CHECK(first.data() == nullptr);
  CHECK(first.span().empty());
  CHECK(Mentions(first.status(), "moved from"));
  CHECK(second.data() == address);

  REQUIRE(second.Reset().ok());
  CHECK(second.Reset().ok());  // a second Reset is a no-op
  CHECK(Mentions(second.status(), "reset"));
  CHECK_FALSE(executor->IsPinnedHostMemory(address, 4));
  // The released pointer is unknown now: a stale free is refused.
  se::Status stale = executor->HostMemoryDeallocate(address);
  CHECK(stale.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(stale, "already freed"));

  auto device = executor->AllocateOwnedArray<int>(16);
  se::Stream stream(executor);
  se::Status use = stream.Init().ThenMemcpy(device.ptr(), second.data(), 16 * sizeof(int)).BlockHostUntilDone();
  CHECK(use.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(use, "host pointer is null"));
}

TEST_CASE("HostMemoryAllocate and HostMemoryDeallocate refuse bad pointers", "[pinned][errors]") {
  auto* executor = TestExecutor();
  se::StatusOr<void*> empty = executor->TryHostMemoryAllocate(0);
  CHECK(empty.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(empty.status(), "zero bytes"));
  CHECK(executor->HostMemoryAllocate(0) == nullptr);
  se::PinnedHostMemory<int> none = executor->HostAllocate<int>(0);
  CHECK_FALSE(none.ok());
  CHECK(Mentions(none.status(), "zero bytes"));
  se::PinnedHostMemory<double> huge = executor->HostAllocate<double>(~std::uint64_t{0} / 4);
  CHECK(huge.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(huge.status(), "overflow"));

  void* raw = executor->HostMemoryAllocate(256);
  REQUIRE(raw != nullptr);
  se::Status inside = executor->HostMemoryDeallocate(static_cast<char*>(raw) + 16);
  CHECK(inside.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(inside, "points 16 bytes into the pinned range"));
  se::Status wrong_call = executor->HostMemoryUnregister(raw);
  CHECK(wrong_call.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(wrong_call, "use HostMemoryDeallocate"));
  CHECK(executor->HostMemoryDeallocate(nullptr).code() == se::ErrorCode::kInvalidArgument);
  int unknown = 0;
  CHECK(executor->HostMemoryDeallocate(&unknown).code() == se::ErrorCode::kFailedPrecondition);

  REQUIRE(executor->HostMemoryDeallocate(raw).ok());
  se::Status twice = executor->HostMemoryDeallocate(raw);
  CHECK(twice.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(twice, "is not pinned memory allocated on this executor, or was already freed"));
}

TEST_CASE("registered caller memory is copied through streams and unregistered once", "[pinned]") {
  STATIC_REQUIRE(se::HostRegistrationBackend<TestBackend>);
  auto* executor = TestExecutor();
  std::vector<int> values(4096);
  std::iota(values.begin(), values.end(), 1);
  const std::uint64_t bytes = values.size() * sizeof(int);
  REQUIRE(executor->HostMemoryRegister(values.data(), bytes).ok());
  CHECK(executor->IsPinnedHostMemory(values.data() + 100, 100 * sizeof(int)));

  auto device = executor->AllocateOwnedArray<int>(values.size());
  std::vector<int> back(values.size());
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(values, device.ptr())
              .ThenMemZero(device.ptr(), 4 * sizeof(int))
              .ThenMemcpyD2H<int>(device.cref(), values)
              .BlockHostUntilDone()
              .ok());
  CHECK(values[3] == 0);
  CHECK(values[4] == 5);
  CHECK(values[4095] == 4096);

  se::Status wrong_call = executor->HostMemoryDeallocate(values.data());
  CHECK(wrong_call.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(wrong_call, "registered with HostMemoryRegister"));
  REQUIRE(executor->HostMemoryUnregister(values.data()).ok());
  se::Status twice = executor->HostMemoryUnregister(values.data());
  CHECK(twice.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(twice, "or was already unregistered"));
  CHECK_FALSE(executor->IsPinnedHostMemory(values.data(), 4));
}

TEST_CASE("registration refuses null, empty, wrapping and overlapping ranges", "[pinned][errors]") {
  auto* executor = TestExecutor();
  std::vector<char> memory(8192);
  CHECK(executor->HostMemoryRegister(nullptr, 64).code() == se::ErrorCode::kInvalidArgument);
  se::Status empty = executor->HostMemoryRegister(memory.data(), 0);
  CHECK(empty.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(empty, "zero bytes"));
  se::Status wraps = executor->HostMemoryRegister(memory.data(), ~std::uint64_t{0});
  CHECK(wraps.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(wraps, "wrap the address space"));

  REQUIRE(executor->HostMemoryRegister(memory.data() + 4096, 2048).ok());
  // Starting before and reaching in, starting inside, and the same range again.
  for (auto [offset, length] : {std::pair<int, int>{0, 4097}, {5000, 100}, {4096, 2048}, {6143, 1}}) {
    se::Status overlap = executor->HostMemoryRegister(memory.data() + offset, static_cast<std::uint64_t>(length));
    CHECK(overlap.code() == se::ErrorCode::kAlreadyExists);
    CHECK(Mentions(overlap, "already registered on this executor"));
  }
  // Right next to it, on both sides, is no overlap.
  REQUIRE(executor->HostMemoryRegister(memory.data() + 6144, 64).ok());
  REQUIRE(executor->HostMemoryRegister(memory.data(), 4096).ok());
  CHECK(executor->HostMemoryUnregister(memory.data() + 5000).code() == se::ErrorCode::kInvalidArgument);
  CHECK(executor->HostMemoryUnregister(memory.data()).ok());
  CHECK(executor->HostMemoryUnregister(memory.data() + 4096).ok());
  CHECK(executor->HostMemoryUnregister(memory.data() + 6144).ok());
}
