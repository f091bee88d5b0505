// Memory on CUDA beyond Allocate, against the counting driver double: what
// the driver receives for ThenPrefetch and MemAdvise (cuMemPrefetchAsync and
// cuMemAdvise on managed memory only, their locations, the stream), and the
// driver's errors named in the Status.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Calls;
using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

SeCountingDoubleManaged Hints(const se::DeviceMemoryBase& memory) {
  SeCountingDoubleManaged hints{};
  REQUIRE(Double().managed_state(memory.start_address(), &hints));
  return hints;
}

}  // namespace

TEST_CASE("the counting double serves the memory entry points", "[cuda][memory]") { REQUIRE(Double().loaded()); }

TEST_CASE("ThenPrefetch moves managed memory on the stream, to the device or the host", "[cuda][memory]") {
  auto* executor = Executor();
  se::ScopedUnifiedMemory<float> shared = se::AllocateOwnedUnifiedArray<float>(executor, 1024);
  REQUIRE(shared.ok());
  se::Stream stream(executor);
  stream.Init();
  stream.ThenPrefetch(shared.cref());
  REQUIRE(stream.ok());
  SeCountingDoubleManaged hints = Hints(shared.cref());
  CHECK(hints.prefetches == 1);
  CHECK(hints.prefetched_type == CU_MEM_LOCATION_TYPE_DEVICE);
  CHECK(hints.prefetched_id == 0);
  SeCountingDoubleCall call{};
  REQUIRE(Double().latest_call("cuMemPrefetchAsync", &call));
  CHECK(call.stream == stream.native_handle()->stream);

  stream.ThenPrefetch(shared.cref().GetSlice(256, 256), se::MemoryLocation::kHost);
  REQUIRE(stream.BlockHostUntilDone().ok());
  hints = Hints(shared.cref());
  CHECK(hints.prefetches == 2);
  CHECK(hints.prefetched_type == CU_MEM_LOCATION_TYPE_HOST);
}

TEST_CASE("memory from Allocate does not migrate: its prefetches and advice reach no driver call", "[cuda][memory]") {
  auto* executor = Executor();
  auto plain = executor->AllocateOwnedArray<float>(64);
  REQUIRE(plain.ok());
  const long prefetches = Calls("cuMemPrefetchAsync");
  const long advice = Calls("cuMemAdvise");
  se::Stream stream(executor);
  stream.Init().ThenPrefetch(plain.cref(), se::MemoryLocation::kHost);
  CHECK(stream.BlockHostUntilDone().ok());
  CHECK(se::MemAdvise(executor, plain.cref(), se::MemoryAdvice::kSetReadMostly).ok());
  CHECK(Calls("cuMemPrefetchAsync") == prefetches);
  CHECK(Calls("cuMemAdvise") == advice);
}

TEST_CASE("MemAdvise sets and unsets each hint of managed memory", "[cuda][memory]") {
  auto* executor = Executor();
  se::ScopedUnifiedMemory<int> shared = se::AllocateOwnedUnifiedArray<int>(executor, 256);
  REQUIRE(shared.ok());
  const se::DeviceMemory<int>& memory = shared.cref();
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kSetReadMostly).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kSetPreferredLocation, se::MemoryLocation::kHost).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kSetAccessedBy).ok());
  SeCountingDoubleManaged hints = Hints(memory);
  CHECK(hints.read_mostly);
  CHECK(hints.preferred_type == CU_MEM_LOCATION_TYPE_HOST);
  CHECK(hints.accessed_by_type == CU_MEM_LOCATION_TYPE_DEVICE);
  CHECK(hints.accessed_by_id == 0);
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kUnsetReadMostly).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kUnsetPreferredLocation).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kUnsetAccessedBy).ok());
  hints = Hints(memory);
  CHECK_FALSE(hints.read_mostly);
  CHECK(hints.preferred_type == -1);
  CHECK(hints.accessed_by_type == -1);
}

TEST_CASE("a driver that refuses a prefetch or advice is named in the Status", "[cuda][memory][errors]") {
  auto* executor = Executor();
  se::ScopedUnifiedMemory<int> shared = se::AllocateOwnedUnifiedArray<int>(executor, 64);
  REQUIRE(shared.ok());
  se::Stream stream(executor);
  stream.Init();
  Double().fail_next("cuMemPrefetchAsync", CUDA_ERROR_INVALID_VALUE);
  stream.ThenPrefetch(shared.cref());
  const se::Status prefetched = stream.BlockHostUntilDone();
  CHECK(prefetched.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(prefetched, "cuMemPrefetchAsync failed with CUDA_ERROR_INVALID_VALUE"));
  CHECK(Mentions(prefetched, "to the device on a stream of cuda:0"));

  Double().fail_next("cuMemAdvise", CUDA_ERROR_INVALID_VALUE);
  const se::Status advised = se::MemAdvise(executor, shared.cref(), se::MemoryAdvice::kSetReadMostly);
  CHECK(advised.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(advised, "cuMemAdvise failed with CUDA_ERROR_INVALID_VALUE"));

  Double().fail_next("cuPointerGetAttribute", CUDA_ERROR_INVALID_CONTEXT);
  const se::Status asked = se::MemAdvise(executor, shared.cref(), se::MemoryAdvice::kSetReadMostly);
  CHECK_FALSE(asked.ok());
  CHECK(Mentions(asked, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED) failed"));
  CHECK(Mentions(asked, "for MemAdvise on cuda:0"));
}

TEST_CASE("MemoryPool<cuda> is the driver's pool: allocations and frees on the stream", "[cuda][memory-pool]") {
  auto* executor = Executor();
  se::MemoryPool<se::cuda> pool(executor);
  REQUIRE(pool.init_status().ok());
  REQUIRE(pool.native());
  se::Stream stream(executor);
  stream.Init();
  const long allocations = Calls("cuMemAllocFromPoolAsync");
  const long frees = Calls("cuMemFreeAsync");
  se::DeviceMemory<float> memory;
  stream.ThenAllocate(1000, &memory, &pool);
  REQUIRE(stream.ok());
  CHECK(Calls("cuMemAllocFromPoolAsync") == allocations + 1);
  SeCountingDoubleCall call{};
  REQUIRE(Double().latest_call("cuMemAllocFromPoolAsync", &call));
  CHECK(call.stream == stream.native_handle()->stream);
  se::MemoryPoolStatistics statistics = pool.GetStatistics();
  CHECK(statistics.native);
  CHECK(statistics.bytes_in_use == 4000);
  CHECK(statistics.allocations_in_use == 1);
  CHECK(statistics.bytes_reserved == 4096);  // the double rounds to 512 bytes
  CHECK(statistics.bytes_free == 0);

  const void* address = memory.opaque();
  stream.ThenDeallocate(&memory);
  REQUIRE(stream.ok());
  CHECK(Calls("cuMemFreeAsync") == frees + 1);
  REQUIRE(Double().latest_call("cuMemFreeAsync", &call));
  CHECK(call.stream == stream.native_handle()->stream);
  statistics = pool.GetStatistics();
  CHECK(statistics.bytes_in_use == 0);
  CHECK(statistics.bytes_free == 4096);

  se::DeviceMemory<float> again;
  stream.ThenAllocate(1000, &again, &pool);  // the driver's reuse: the same bytes, a new allocation id
  REQUIRE(stream.ok());
  CHECK(again.opaque() == address);
  se::DeviceMemory<float> stale(se::DeviceMemoryBase(const_cast<void*>(address), 4000));
  CHECK_FALSE(executor->SynchronousMemZero(&stale, 4000).ok());  // a view without the new id is not live
  stream.ThenDeallocate(&again);
  REQUIRE(stream.BlockHostUntilDone().ok());
}

TEST_CASE("the driver's pool: threshold, Trim, reserve and destruction reach the driver", "[cuda][memory-pool]") {
  auto* executor = Executor();
  se::Stream stream(executor);
  stream.Init();
  const long trims = Calls("cuMemPoolTrimTo");
  const long destroys = Calls("cuMemPoolDestroy");
  const long memfrees = Calls("cuMemFree");
  long syncs = 0;
  se::DeviceMemory<std::uint8_t> live;
  {
    se::MemoryPool<se::cuda> pool(executor, se::MemoryPoolOptions{.reserve = 1 << 20});
    REQUIRE(pool.init_status().ok());
    CHECK(pool.GetStatistics().bytes_reserved == 1 << 20);  // allocated and freed at once, kept (no threshold)
    se::DeviceMemory<std::uint8_t> memory;
    stream.ThenAllocate(1 << 16, &memory, &pool).ThenDeallocate(&memory);
    REQUIRE(stream.BlockHostUntilDone().ok());
    CHECK(pool.GetStatistics().bytes_reserved == 1 << 20);  // served from the reserve

    REQUIRE(pool.Trim().ok());
    CHECK(Calls("cuMemPoolTrimTo") == trims + 1);
    CHECK(pool.GetStatistics().bytes_reserved == 0);

    REQUIRE(pool.SetReleaseThreshold(0).ok());
    stream.ThenAllocate(4096, &memory, &pool).ThenDeallocate(&memory);
    CHECK(pool.GetStatistics().bytes_reserved == 4096);  // freed, kept until a synchronization
    REQUIRE(stream.BlockHostUntilDone().ok());
    CHECK(pool.GetStatistics().bytes_reserved == 0);

    stream.ThenAllocate(256, &live, &pool).ThenMemZero(&live, 256);
    REQUIRE(stream.ok());
    syncs = Calls("cuCtxSynchronize");
  }
  // Destroyed with `live` out and a fill queued on it: cuMemFree does not wait
  // for a pool's allocation, so the context is synchronized first (on a GPU
  // the fill otherwise ran on freed memory: CUDA_ERROR_LAUNCH_FAILED).
  CHECK(Calls("cuCtxSynchronize") == syncs + 1);
  CHECK(Calls("cuMemFree") == memfrees + 1);
  CHECK(Calls("cuMemPoolDestroy") == destroys + 1);
  stream.ThenDeallocate(&live);
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "not live memory of this executor"));
}

TEST_CASE("the driver pool's errors name the driver call", "[cuda][memory-pool][errors]") {
  auto* executor = Executor();
  SECTION("cuMemPoolCreate") {
    Double().fail_next("cuMemPoolCreate", CUDA_ERROR_OUT_OF_MEMORY);
    se::MemoryPool<se::cuda> pool(executor);
    CHECK(pool.init_status().code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(pool.init_status(), "cuMemPoolCreate failed with CUDA_ERROR_OUT_OF_MEMORY"));
    se::Stream stream(executor);
    se::DeviceMemory<int> memory;
    stream.Init().ThenAllocate(16, &memory, &pool);
    CHECK(Mentions(stream.status(), "ThenAllocate on cuda:0: the memory pool could not be made"));
    CHECK(pool.Trim().code() == se::ErrorCode::kResourceExhausted);
  }
  SECTION("cuMemAllocFromPoolAsync") {
    se::MemoryPool<se::cuda> pool(executor);
    se::Stream stream(executor);
    se::DeviceMemory<int> memory;
    Double().fail_next("cuMemAllocFromPoolAsync", CUDA_ERROR_OUT_OF_MEMORY);
    stream.Init().ThenAllocate(1 << 20, &memory, &pool);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(status, "cuMemAllocFromPoolAsync failed with CUDA_ERROR_OUT_OF_MEMORY"));
    CHECK(Mentions(status, "ThenAllocate on cuda:0 of 4.0 MiB"));
    CHECK(Mentions(status, "this pool (the driver's): 0 B in use by 0 allocations"));
    CHECK(memory.IsNull());
  }
  SECTION("cuMemFreeAsync") {
    se::MemoryPool<se::cuda> pool(executor);
    se::Stream stream(executor);
    se::DeviceMemory<int> memory;
    stream.Init().ThenAllocate(16, &memory, &pool);
    REQUIRE(stream.ok());
    Double().fail_next("cuMemFreeAsync", CUDA_ERROR_INVALID_VALUE);
    stream.ThenDeallocate(&memory);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(Mentions(status, "cuMemFreeAsync failed with CUDA_ERROR_INVALID_VALUE"));
    CHECK(pool.GetStatistics().allocations_in_use == 0);  // retired: its views are refused whatever the driver did
  }
}
