// Allocation, ownership and synchronous copies, with every bad-input path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "generic/test_kernels.hpp"

TEST_CASE("typed arrays round-trip through device memory", "[memory]") {
  auto* executor = TestExecutor();
  std::vector<float> in(1000);
  std::iota(in.begin(), in.end(), 0.5f);
  auto device = executor->AllocateOwnedArray<float>(in.size());
  REQUIRE(device.ok());
  CHECK(device.cref().ElementCount() == 1000);
  CHECK(device.cref().size() == 4000);
  REQUIRE(executor->SynchronousMemcpyH2D<float>(in, device.ptr()).ok());
  std::vector<float> out(in.size(), -1.0f);
  REQUIRE(executor->SynchronousMemcpyD2H<float>(device.cref(), out).ok());
  CHECK(out == in);
}

TEST_CASE("byte copies, device-to-device copies, zero and memset32", "[memory]") {
  auto* executor = TestExecutor();
  auto a = executor->AllocateOwnedArray<std::uint32_t>(64);
  auto b = executor->AllocateOwnedArray<std::uint32_t>(64);
  REQUIRE(executor->SynchronousMemset32(a.ptr(), 0xdeadbeef, 64 * 4).ok());
  REQUIRE(executor->SynchronousMemcpyD2D(a.cref(), 64 * 4, b.ptr()).ok());
  std::vector<std::uint32_t> out(64);
  REQUIRE(executor->SynchronousMemcpyD2H(b.cref(), 64 * 4, out.data()).ok());
  CHECK(out == std::vector<std::uint32_t>(64, 0xdeadbeef));
  REQUIRE(executor->SynchronousMemZero(b.ptr(), 32 * 4).ok());
  REQUIRE(executor->SynchronousMemcpy(out.data(), b.cref(), 64 * 4).ok());
  CHECK(out[0] == 0);
  CHECK(out[31] == 0);
  CHECK(out[32] == 0xdeadbeef);
}

TEST_CASE("slices address part of an allocation", "[memory]") {
  auto* executor = TestExecutor();
  auto whole = executor->AllocateOwnedArray<int>(100);
  std::vector<int> zeros(100, 0);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(zeros, whole.ptr()).ok());
  se::DeviceMemory<int> slice = whole.cref().GetSlice(10, 20);
  REQUIRE_FALSE(slice.IsNull());
  CHECK(slice.ElementCount() == 20);
  std::vector<int> sevens(20, 7);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(sevens, &slice).ok());
  std::vector<int> out(100);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(whole.cref(), out).ok());
  CHECK(out[9] == 0);
  CHECK(out[10] == 7);
  CHECK(out[29] == 7);
  CHECK(out[30] == 0);
  CHECK(whole.cref().GetSlice(90, 11).IsNull());
  CHECK(whole.cref().GetSlice(101, 0).IsNull());
  // A copy through a slice that did not fit says which range of which view.
  se::DeviceMemory<int> short_slice = whole.cref().GetSlice(90, 11);
  const se::Status refused = executor->SynchronousMemcpyD2H(short_slice, 44, out.data());
  CHECK(refused.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(refused, "GetSlice of bytes [360, 404) of a 400-byte view"));
  CHECK(Mentions(refused, executor->DeviceLabel()));
}

TEST_CASE("a copy larger than its destination names both counts", "[memory][errors]") {
  auto* executor = TestExecutor();
  auto small = executor->AllocateOwnedArray<float>(8);
  std::vector<float> big(10, 1.0f);
  se::Status typed = executor->SynchronousMemcpyH2D<float>(big, small.ptr());
  CHECK(typed.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(typed, "10 elements of float (40 bytes)"));
  CHECK(Mentions(typed, "only 8 (32 bytes)"));

  se::Status bytes = executor->SynchronousMemcpyH2D(big.data(), 40, small.ptr());
  CHECK(bytes.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(bytes, "40 bytes do not fit in the destination DeviceMemory of 32 bytes"));

  std::vector<float> tiny(4);
  se::Status readback = executor->SynchronousMemcpyD2H<float>(small.cref(), tiny);
  CHECK(readback.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(readback, "8 elements of float"));
}

TEST_CASE("zero-size, oversize and null memory are rejected with a reason", "[memory][errors]") {
  auto* executor = TestExecutor();
  auto zero = executor->TryAllocateArray<float>(0);
  REQUIRE_FALSE(zero.ok());
  CHECK(Mentions(zero.status(), "zero elements of float"));
  CHECK(executor->AllocateArray<float>(0).IsNull());

  const std::uint64_t too_many = executor->GetDeviceDescription().max_allocation_size / sizeof(double) + 1;
  auto huge = executor->AllocateOwnedArray<double>(too_many);
  CHECK_FALSE(huge.ok());
  CHECK(huge.status().code() == se::ErrorCode::kResourceExhausted);
  CHECK(Mentions(huge.status(), "exceed the device's largest allocation"));

  se::DeviceMemory<float> null;
  float value = 0;
  se::Status status = executor->SynchronousMemcpyD2H(null, sizeof(value), &value);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "null DeviceMemory"));
  CHECK(Mentions(executor->SynchronousMemcpyH2D(&value, sizeof(value), nullptr), "destination pointer is null"));
}

TEST_CASE("a moved-from ScopedDeviceMemory is null and says so", "[memory][errors]") {
  auto* executor = TestExecutor();
  auto original = executor->AllocateOwnedScalar<int>();
  REQUIRE(original.ok());
  se::ScopedDeviceMemory<int> moved = std::move(original);
  CHECK(moved.ok());
  CHECK_FALSE(original.ok());  // NOLINT(bugprone-use-after-move): the point of the test
  CHECK(Mentions(original.status(), "moved from"));
  int value = 5;
  se::Status status = executor->SynchronousMemcpyH2D(&value, sizeof(value), original.ptr());
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "null DeviceMemory"));
  CHECK(executor->SynchronousMemcpyH2D(&value, sizeof(value), moved.ptr()).ok());
}

TEST_CASE("use after free and double free are errors, not crashes", "[memory][errors]") {
  auto* executor = TestExecutor();
  se::DeviceMemory<int> memory = executor->AllocateArray<int>(16);
  REQUIRE_FALSE(memory.IsNull());
  se::DeviceMemory<int> alias = memory;
  REQUIRE(executor->Deallocate(&memory).ok());
  CHECK(memory.IsNull());

  int host[16] = {};
  se::Status after_free = executor->SynchronousMemcpyD2H(alias, sizeof(host), host);
  CHECK(after_free.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(after_free, "not live memory of this executor"));

  se::Status double_free = executor->Deallocate(&alias);
  CHECK(double_free.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(double_free, "already freed"));
  CHECK(Mentions(executor->Deallocate(&memory), "null"));
}

TEST_CASE("freeing a slice is refused", "[memory][errors]") {
  auto* executor = TestExecutor();
  auto whole = executor->AllocateOwnedArray<int>(32);
  se::DeviceMemory<int> slice = whole.cref().GetSlice(8, 8);
  se::Status status = executor->Deallocate(&slice);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "is a slice"));
}

TEST_CASE("memset32 sizes must be whole words", "[memory][errors]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<std::uint32_t>(4);
  se::Status status = executor->SynchronousMemset32(memory.ptr(), 1, 6);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "not a multiple of 4"));
}

namespace {
// Generic code over the backend: the free forms need no `->template`.
template <typename B>
se::Status RoundTripWithFreeForms(se::StreamExecutor<B>* executor, std::vector<int>& out) {
  se::ScopedDeviceMemory<int> owned = se::AllocateOwnedArray<int>(executor, out.size());
  if (!owned.ok()) return owned.status();
  se::ScopedDeviceMemory<int> scalar = se::AllocateOwnedScalar<int>(executor);
  if (!scalar.ok()) return scalar.status();
  se::StatusOr<se::DeviceMemory<int>> tried = se::TryAllocateArray<int>(executor, 4);
  if (!tried.ok()) return tried.status();
  se::DeviceMemory<int> plain = se::AllocateArray<int>(executor, 4);
  se::DeviceMemory<int> single = se::AllocateScalar<int>(executor);
  const std::vector<int> in(out.size(), 6);
  STREAMEXECUTOR_RETURN_IF_ERROR(se::SynchronousMemcpyH2D<int>(executor, in, owned.ptr()));
  se::Stream<B> stream(executor);
  stream.Init();
  se::ThenMemcpyD2H<int>(stream, owned.cref(), out);
  STREAMEXECUTOR_RETURN_IF_ERROR(stream.BlockHostUntilDone());
  se::ThenMemcpyH2D<int>(stream, std::span<const int>(in).first(1), scalar.ptr());
  std::vector<int> one(1, 0);
  STREAMEXECUTOR_RETURN_IF_ERROR(stream.BlockHostUntilDone());
  STREAMEXECUTOR_RETURN_IF_ERROR(se::SynchronousMemcpyD2H<int>(executor, scalar.cref(), one));
  if (one[0] != 6) return se::Status(se::ErrorCode::kInternal, "scalar did not round-trip");
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->Deallocate(&tried.value()));
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->Deallocate(&plain));
  return executor->Deallocate(&single);
}
struct FreeFormState {
  int value = 7;
};
}  // namespace

TEST_CASE("free-function forms allocate and copy for generic code", "[memory]") {
  auto* executor = TestExecutor();
  std::vector<int> out(100, 0);
  REQUIRE(RoundTripWithFreeForms(executor, out).ok());
  CHECK(out == std::vector<int>(100, 6));
  auto state = se::GetOrCreateExtension<FreeFormState>(
      executor, [] { return se::StatusOr<std::unique_ptr<FreeFormState>>(std::make_unique<FreeFormState>()); });
  REQUIRE(state.ok());
  CHECK(se::FindExtension<FreeFormState>(executor) == state.value());
  // A null executor is a Status, never a dereference.
  se::StreamExecutor<TestBackend>* none = nullptr;
  CHECK(Mentions(se::AllocateOwnedArray<int>(none, 4).status(), "StreamExecutor pointer is null"));
  CHECK(se::TryAllocateArray<int>(none, 4).status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(se::AllocateArray<int>(none, 4).IsNull());
  CHECK(se::AllocateScalar<int>(none).IsNull());
  CHECK_FALSE(se::AllocateOwnedScalar<int>(none).ok());
  CHECK(se::FindExtension<FreeFormState>(none) == nullptr);
  std::vector<int> host(4);
  CHECK(se::SynchronousMemcpyH2D<int>(none, host, nullptr).code() == se::ErrorCode::kInvalidArgument);
  // The members' own rules still apply.
  CHECK(se::AllocateOwnedArray<int>(executor, 0).status().code() == se::ErrorCode::kInvalidArgument);
}

TEST_CASE("ScopedUnifiedMemory: one host address on every backend", "[memory][kernel-results]") {
  auto* executor = TestExecutor();
  se::ScopedUnifiedMemory<int> shared = se::AllocateOwnedUnifiedArray<int>(executor, 64);
  if (!shared.ok()) {
    CHECK(shared.status().code() == se::ErrorCode::kUnimplemented);  // e.g. an OpenCL device without SVM
    CHECK(shared.host_ptr() == nullptr);
    return;
  }
  REQUIRE(shared.host_ptr() != nullptr);
  CHECK(shared.ElementCount() == 64);
  CHECK(shared.host_span().size() == 64);
  for (int i = 0; i < 64; ++i) shared.host_ptr()[i] = i;
  test_kernels::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(test_kernels::AddSpec(), &kernel).ok());
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, shared.ptr(), 100)
              .BlockHostUntilDone()
              .ok());
  CHECK(shared.host_ptr()[0] == 100);
  CHECK(shared.host_ptr()[63] == 163);
  // The device views take part in copies like any allocation.
  std::vector<int> out(64, 0);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(shared.cref(), out).ok());
  CHECK(out[5] == 105);
}

TEST_CASE("ScopedUnifiedMemory owns its allocation", "[memory]") {
  auto* executor = TestExecutor();
  se::ScopedUnifiedMemory<int> shared = se::AllocateOwnedUnifiedArray<int>(executor, 8);
  if (!shared.ok()) {
    CHECK(shared.status().code() == se::ErrorCode::kUnimplemented);
    return;
  }
  std::fill_n(shared.host_ptr(), 8, 3);
  std::vector<int> out(8, 0);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(shared.cref(), out).ok());
  CHECK(out == std::vector<int>(8, 3));
  const se::DeviceMemory<int> stale = shared.cref();
  se::ScopedUnifiedMemory<int> moved(std::move(shared));
  CHECK(moved.ok());
  CHECK_FALSE(shared.ok());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  CHECK(shared.host_ptr() == nullptr);
  CHECK(Mentions(shared.status(), "moved from"));
  REQUIRE(moved.Reset().ok());
  CHECK(moved.host_ptr() == nullptr);
  CHECK(moved.host_span().empty());
  CHECK_FALSE(executor->SynchronousMemcpyD2H<int>(stale, out).ok());  // freed: refused, not read
  se::StreamExecutor<TestBackend>* none = nullptr;
  CHECK(se::AllocateOwnedUnifiedArray<int>(none, 8).status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(se::AllocateOwnedUnifiedArray<int>(executor, 0).status().code() == se::ErrorCode::kInvalidArgument);
}

TEST_CASE("prefetches and advice are hints: the contents stay, bad memory is refused", "[memory]") {
  auto* executor = TestExecutor();
  se::ScopedUnifiedMemory<int> shared = se::AllocateOwnedUnifiedArray<int>(executor, 64);
  auto plain = executor->AllocateOwnedArray<int>(64);
  REQUIRE(plain.ok());
  std::vector<int> in(64);
  std::iota(in.begin(), in.end(), 7);
  se::Stream stream(executor);
  stream.Init();
  for (se::DeviceMemory<int>* memory : {plain.ptr(), shared.ok() ? shared.ptr() : plain.ptr()}) {
    for (se::MemoryAdvice advice : {se::MemoryAdvice::kSetReadMostly, se::MemoryAdvice::kSetPreferredLocation,
                                    se::MemoryAdvice::kSetAccessedBy, se::MemoryAdvice::kUnsetReadMostly,
                                    se::MemoryAdvice::kUnsetPreferredLocation, se::MemoryAdvice::kUnsetAccessedBy}) {
      CHECK(se::MemAdvise(executor, *memory, advice, se::MemoryLocation::kHost).ok());
    }
    std::vector<int> out(64, 0);
    stream.ThenMemcpy(memory, in.data(), 256)
        .ThenPrefetch(*memory, se::MemoryLocation::kHost)
        .ThenPrefetch(*memory)  // to the device
        .ThenPrefetch(memory->GetSlice(8, 8), se::MemoryLocation::kHost)
        .ThenMemcpy(out.data(), *memory, 256);
    REQUIRE(stream.BlockHostUntilDone().ok());
    CHECK(out == in);
  }

  se::DeviceMemory<int> allocated = executor->AllocateArray<int>(8);
  const se::DeviceMemory<int> freed = allocated;  // Deallocate nulls only the view it is given
  REQUIRE(executor->Deallocate(&allocated).ok());
  const se::Status advised = se::MemAdvise(executor, freed, se::MemoryAdvice::kSetReadMostly);
  CHECK(advised.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(advised, "MemAdvise on"));
  se::StreamExecutor<TestBackend>* none = nullptr;
  CHECK(se::MemAdvise(none, *plain.ptr(), se::MemoryAdvice::kSetReadMostly).code() == se::ErrorCode::kInvalidArgument);
  stream.ThenPrefetch(freed);
  const se::Status prefetched = stream.BlockHostUntilDone();
  CHECK(prefetched.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(prefetched, "ThenPrefetch on"));
  CHECK(Mentions(prefetched, "not live memory of this executor"));
}
