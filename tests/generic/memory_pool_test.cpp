// Stream-ordered allocation from memory pools (core/memory_pool.hpp):
// ThenAllocate / ThenDeallocate, reuse only where it is safe, stale views
// refused after reuse, statistics, Trim / threshold / reserve, and every
// bad-input path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <thread>
#include <vector>

#include "generic/gate.hpp"
#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

se::MemoryPoolStatistics DefaultPoolStatistics(se::StreamExecutor<TestBackend>* executor) {
  return se::DefaultMemoryPool(executor).value()->GetStatistics();
}

}  // namespace

TEST_CASE("stream-ordered memory is usable by the stream's later work at once", "[memory-pool][kernel-results]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  se::Stream stream(executor);
  stream.Init();
  std::vector<int> in(64);
  std::iota(in.begin(), in.end(), 0);
  std::vector<int> out(64, -1);
  se::DeviceMemory<int> memory;
  stream.ThenAllocate(64, &memory);
  REQUIRE(stream.ok());
  REQUIRE(!memory.IsNull());
  CHECK(memory.ElementCount() == 64);
  stream.ThenMemcpy(&memory, in.data(), 64 * sizeof(int))
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, &memory, 5)
      .ThenMemcpy(out.data(), memory, 64 * sizeof(int))
      .ThenDeallocate(&memory);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(memory.IsNull());
  for (int i = 0; i < 64; ++i) CHECK(out[static_cast<std::size_t>(i)] == i + 5);
}

TEST_CASE("a block freed on a stream is reused by that stream at once", "[memory-pool]") {
  auto* executor = TestExecutor();
  se::MemoryPool<TestBackend> pool(executor);
  REQUIRE(pool.init_status().ok());
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<float> first;
  stream.ThenAllocate(1000, &first, &pool);
  const void* address = first.opaque();
  stream.ThenMemZero(&first, 4000).ThenDeallocate(&first);
  se::DeviceMemory<float> second;
  stream.ThenAllocate(900, &second, &pool);  // the same block size: 4 KiB
  REQUIRE(stream.ok());
  CHECK(second.opaque() == address);
  const se::MemoryPoolStatistics statistics = pool.GetStatistics();
  CHECK(statistics.allocations == 2);
  CHECK(statistics.bytes_in_use == 3600);
  if (statistics.native) {  // the driver's pool: it counts reserved bytes, not reuses
    CHECK(statistics.bytes_reserved >= 4000);
  } else {
    CHECK(statistics.reused == 1);
    CHECK(statistics.driver_allocations == 1);
    CHECK(statistics.bytes_reserved == 4096);
  }
  stream.ThenDeallocate(&second);
  REQUIRE(stream.BlockHostUntilDone().ok());
}

TEST_CASE("another stream reuses a block only after the free has run", "[memory-pool][async-callbacks]") {
  auto* executor = TestExecutor();
  se::MemoryPool<TestBackend> pool(executor);
  se::Stream a(executor), b(executor);
  a.Init();
  b.Init();
  test_gate::Gate gate;
  gate.Close(a);  // a's free cannot run before the gate opens
  se::DeviceMemory<int> memory;
  a.ThenAllocate(256, &memory, &pool);
  const void* blocked = memory.opaque();
  a.ThenDeallocate(&memory);
  se::DeviceMemory<int> other;
  b.ThenAllocate(256, &other, &pool);
  REQUIRE(b.ok());
  CHECK(other.opaque() != blocked);  // a new block, not a's (the driver's pools alike)
  gate.Open();
  REQUIRE(a.BlockHostUntilDone().ok());
  se::DeviceMemory<int> third;
  b.ThenAllocate(256, &third, &pool);  // a's free has run: its block is anyone's
  REQUIRE(b.ok());
  if (!pool.native()) {
    CHECK(third.opaque() == blocked);
    CHECK(pool.GetStatistics().reused == 1);
    CHECK(pool.GetStatistics().driver_allocations == 2);
  }
  b.ThenDeallocate(&other).ThenDeallocate(&third);
  REQUIRE(b.BlockHostUntilDone().ok());
}

TEST_CASE("a view of memory returned to the pool is refused, even once the bytes are reused", "[memory-pool][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  se::MemoryPool<TestBackend> pool(executor);
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<int> memory;
  stream.ThenAllocate(16, &memory, &pool);
  const se::DeviceMemory<int> stale = memory;
  stream.ThenDeallocate(&memory);
  se::DeviceMemory<int> fresh;
  stream.ThenAllocate(16, &fresh, &pool);
  REQUIRE(stream.ok());
  REQUIRE(fresh.opaque() == stale.opaque());              // the same bytes...
  CHECK(fresh.allocation_id() != stale.allocation_id());  // ...under a new id
  se::DeviceMemory<int> copy = stale;
  stream.ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, &copy, 1);
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "argument 0 is not live memory of this executor"));
  CHECK(executor->SynchronousMemZero(&copy, 64).code() == se::ErrorCode::kFailedPrecondition);
  CHECK(executor->SynchronousMemZero(&fresh, 64).ok());
  se::Stream cleanup(executor);
  cleanup.Init().ThenDeallocate(&fresh);
  CHECK(cleanup.BlockHostUntilDone().ok());
}

TEST_CASE("freeing twice, the wrong way or memory of no pool is a clear error", "[memory-pool][errors]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<int> memory;
  stream.ThenAllocate(8, &memory);
  se::DeviceMemory<int> copy = memory;
  SECTION("twice") {
    stream.ThenDeallocate(&memory).ThenDeallocate(&copy);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "ThenDeallocate on"));
    CHECK(Mentions(status, "not live memory of this executor"));
  }
  SECTION("with Deallocate") {
    const se::Status status = executor->Deallocate(&copy);
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "allocated from a memory pool (ThenAllocate): free it in stream order with ThenDeallocate"));
    stream.ThenDeallocate(&memory);
    CHECK(stream.BlockHostUntilDone().ok());
  }
  SECTION("memory from Allocate") {
    se::DeviceMemory<int> plain = executor->AllocateArray<int>(8);
    stream.ThenDeallocate(&plain);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "was not allocated by ThenAllocate"));
    CHECK(executor->Deallocate(&plain).ok());
    se::Stream other(executor);
    other.Init().ThenDeallocate(&memory);
    CHECK(other.BlockHostUntilDone().ok());
  }
  SECTION("a slice") {
    se::DeviceMemory<int> slice = memory.GetSlice(2, 4);
    stream.ThenDeallocate(&slice);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "pass the whole allocation"));
    se::Stream other(executor);
    other.Init().ThenDeallocate(&memory);
    CHECK(other.BlockHostUntilDone().ok());
  }
  SECTION("null") {
    stream.ThenDeallocate(nullptr);
    CHECK(stream.BlockHostUntilDone().code() == se::ErrorCode::kInvalidArgument);
    se::Stream other(executor);
    other.Init().ThenDeallocate(&memory);
    CHECK(other.BlockHostUntilDone().ok());
  }
}

TEST_CASE("impossible allocations are refused with what holds the memory", "[memory-pool][errors]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<std::uint8_t> memory;
  SECTION("2^62 bytes") {
    stream.ThenAllocate(std::uint64_t{1} << 62, &memory);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(status, "ThenAllocate on"));
    CHECK(memory.IsNull());
  }
  SECTION("a size that overflows") {
    se::DeviceMemory<double> doubles;
    stream.ThenAllocate(std::numeric_limits<std::uint64_t>::max() / 4, &doubles);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(status, "overflow a 64-bit size"));
  }
  SECTION("zero elements") {
    stream.ThenAllocate(0, &memory);
    CHECK(stream.BlockHostUntilDone().code() == se::ErrorCode::kInvalidArgument);
  }
  SECTION("a pool of another executor or none") {
    se::MemoryPool<TestBackend> orphan(nullptr);
    CHECK(orphan.init_status().code() == se::ErrorCode::kInvalidArgument);
    stream.ThenAllocate(4, &memory, &orphan);
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "the memory pool belongs to no executor"));
  }
}

TEST_CASE("pool and executor statistics follow allocations", "[memory-pool]") {
  auto* executor = TestExecutor();
  const se::MemoryStatistics before = se::GetMemoryStatistics(executor);
  se::MemoryPool<TestBackend> pool(executor);
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<std::uint8_t> small, large;
  stream.ThenAllocate(100, &small, &pool).ThenAllocate(3 * kMiB, &large, &pool);
  REQUIRE(stream.ok());
  se::MemoryPoolStatistics statistics = pool.GetStatistics();
  CHECK(statistics.bytes_in_use == 100 + 3 * kMiB);
  CHECK(statistics.peak_bytes_in_use == 100 + 3 * kMiB);
  CHECK(statistics.allocations_in_use == 2);
  if (statistics.native) {
    CHECK(statistics.bytes_reserved >= 100 + 3 * kMiB);
  } else {
    CHECK(statistics.bytes_reserved == 256 + 3 * kMiB);
    CHECK(statistics.bytes_free == 0);
  }
  const se::MemoryStatistics during = se::GetMemoryStatistics(executor);
  CHECK(during.bytes_in_use == before.bytes_in_use + 100 + 3 * kMiB);
  CHECK(during.allocations_in_use == before.allocations_in_use + 2);
  CHECK(during.bytes_reserved_in_pools == before.bytes_reserved_in_pools + statistics.bytes_reserved);
  stream.ThenDeallocate(&large);
  statistics = pool.GetStatistics();
  CHECK(statistics.bytes_in_use == 100);
  CHECK(statistics.peak_bytes_in_use == 100 + 3 * kMiB);
  if (statistics.native) {
    CHECK(statistics.largest_free_block == 0);  // not known
  } else {
    CHECK(statistics.largest_free_block == 3 * kMiB);
    CHECK(statistics.bytes_free == 3 * kMiB);
    CHECK(se::GetMemoryStatistics(executor).largest_free_block >= std::uint64_t{3} << 20);
  }
  stream.ThenDeallocate(&small);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(pool.GetStatistics().allocations_in_use == 0);
  CHECK(se::GetMemoryStatistics(executor).bytes_in_use == before.bytes_in_use);
}

TEST_CASE("Trim, the release threshold and a reserve decide what the pool keeps", "[memory-pool]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  stream.Init();
  SECTION("Trim") {
    se::MemoryPool<TestBackend> pool(executor);
    se::DeviceMemory<float> a, b;
    stream.ThenAllocate(1 << 20, &a, &pool).ThenAllocate(1 << 18, &b, &pool).ThenDeallocate(&a).ThenDeallocate(&b);
    REQUIRE(stream.BlockHostUntilDone().ok());
    CHECK(pool.GetStatistics().bytes_reserved >= 5 * kMiB);
    REQUIRE(pool.Trim(1 << 20).ok());
    if (pool.native()) {
      // cuMemPoolTrimTo keeps at least what is asked, in the driver's chunks
      // (on an H200 one 32 MiB chunk held both blocks and stayed).
      CHECK(pool.GetStatistics().bytes_reserved >= kMiB);
    } else {
      CHECK(pool.GetStatistics().bytes_reserved <= kMiB);  // the larger block goes first
    }
    REQUIRE(pool.Trim().ok());
    CHECK(pool.GetStatistics().bytes_reserved == 0);
    if (!pool.native()) CHECK(pool.GetStatistics().driver_releases == 2);
  }
  SECTION("a threshold of zero returns every freed block") {
    se::MemoryPool<TestBackend> pool(executor, se::MemoryPoolOptions{.release_threshold = 0});
    se::DeviceMemory<float> a;
    stream.ThenAllocate(1000, &a, &pool).ThenDeallocate(&a);
    REQUIRE(stream.BlockHostUntilDone().ok());  // a native pool releases when synchronized
    CHECK(pool.GetStatistics().bytes_reserved == 0);
    if (!pool.native()) CHECK(pool.GetStatistics().driver_releases == 1);
  }
  SECTION("a reserve serves the first allocations") {
    se::MemoryPool<TestBackend> pool(executor, se::MemoryPoolOptions{.reserve = 4096});
    REQUIRE(pool.init_status().ok());
    const std::uint64_t reserved = pool.GetStatistics().bytes_reserved;
    CHECK(reserved >= 4096);
    se::DeviceMemory<float> a;
    stream.ThenAllocate(1024, &a, &pool);
    REQUIRE(stream.ok());
    CHECK(pool.GetStatistics().bytes_reserved == reserved);  // no more from the driver
    if (!pool.native()) {
      CHECK(pool.GetStatistics().reused == 1);
      CHECK(pool.GetStatistics().driver_allocations == 1);
    }
    stream.ThenDeallocate(&a);
    REQUIRE(stream.BlockHostUntilDone().ok());
  }
}

TEST_CASE("a pool destroyed with live allocations refuses their views", "[memory-pool][errors]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<int> memory;
  const se::MemoryStatistics before = se::GetMemoryStatistics(executor);
  {
    se::MemoryPool<TestBackend> pool(executor);
    stream.ThenAllocate(32, &memory, &pool).ThenMemZero(&memory, 128);
    REQUIRE(stream.ok());
  }
  CHECK(executor->SynchronousMemZero(&memory, 128).code() == se::ErrorCode::kFailedPrecondition);
  stream.ThenDeallocate(&memory);
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "not live memory of this executor"));
  const se::MemoryStatistics after = se::GetMemoryStatistics(executor);
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.bytes_reserved_in_pools == before.bytes_reserved_in_pools);
}

TEST_CASE("a failed stream still gives its memory back", "[memory-pool][errors]") {
  auto* executor = TestExecutor();
  se::MemoryPool<TestBackend> pool(executor);
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<int> memory;
  stream.ThenAllocate(32, &memory, &pool).ThenMemZero(nullptr, 4);  // fails the stream
  REQUIRE_FALSE(stream.ok());
  stream.ThenDeallocate(&memory);
  CHECK(memory.IsNull());
  CHECK(pool.GetStatistics().allocations_in_use == 0);
  if (pool.native()) {
    CHECK(pool.GetStatistics().bytes_free == pool.GetStatistics().bytes_reserved);  // freed on the driver's stream
  } else {
    CHECK(pool.GetStatistics().bytes_reserved == 0);  // to the driver: the stream runs nothing more
  }
  CHECK(stream.BlockHostUntilDone().code() == se::ErrorCode::kInvalidArgument);  // the first error stays
}

TEST_CASE("allocations on streams of several threads stay bounded", "[memory-pool][threads]") {
  auto* executor = TestExecutor();
  se::MemoryPool<TestBackend> pool(executor);
  constexpr int kThreads = 2;
  constexpr int kIterations = 500;
  const auto run_round = [&] {
    std::vector<se::Status> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        se::Stream stream(executor);
        stream.Init();
        for (int i = 0; i < kIterations && stream.ok(); ++i) {
          se::DeviceMemory<std::uint32_t> memory;
          stream.ThenAllocate(1000 + static_cast<std::uint64_t>(i % 7), &memory, &pool)
              .ThenMemset32(&memory, static_cast<std::uint32_t>(i), 4000)
              .ThenDeallocate(&memory);
        }
        results[static_cast<std::size_t>(t)] = stream.BlockHostUntilDone();
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const se::Status& status : results) CHECK(status.ok());
    return pool.GetStatistics();
  };
  const se::MemoryPoolStatistics first = run_round();
  const se::MemoryPoolStatistics statistics = run_round();
  CHECK(statistics.allocations == 2 * kThreads * kIterations);
  CHECK(statistics.allocations_in_use == 0);
  // Each stream reuses its own block at once: about one block per stream,
  // bounded whatever the iteration count.
  if (statistics.native) {
    // The driver reserves in chunks of its own (32 MiB on an H200), so the
    // bound is a few blocks per stream or what the first round took,
    // whichever is more: the second round's 1000 pairs take nothing more.
    CHECK(first.bytes_reserved > 0);
    CHECK(statistics.bytes_reserved <= std::max<std::uint64_t>(first.bytes_reserved, 3 * kThreads * 4096));
  } else {
    CHECK(statistics.driver_allocations <= 3 * kThreads);
  }
}

TEST_CASE("the default pool is the executor's, and ThenDeallocate finds any pool", "[memory-pool]") {
  auto* executor = TestExecutor();
  auto pool = se::DefaultMemoryPool(executor);
  REQUIRE(pool.ok());
  CHECK(pool.value()->executor() == executor);
  CHECK(se::DefaultMemoryPool(executor).value() == pool.value());
  se::MemoryPool<TestBackend> own(executor);
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<int> a, b;
  const std::uint64_t before = DefaultPoolStatistics(executor).allocations;
  stream.ThenAllocate(4, &a).ThenAllocate(4, &b, &own).ThenDeallocate(&b).ThenDeallocate(&a);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(DefaultPoolStatistics(executor).allocations == before + 1);
  CHECK(own.GetStatistics().allocations == 1);
  CHECK(own.GetStatistics().allocations_in_use == 0);
}

TEST_CASE("memory of one executor is not freed on a stream of another", "[memory-pool][lifetime][errors]") {
  auto* first = TestExecutor();
  auto* second = SecondExecutor();
  if (second == nullptr) {
    SUCCEED("one device");
    return;
  }
  se::Stream a(first), b(second);
  a.Init();
  b.Init();
  se::DeviceMemory<int> memory;
  a.ThenAllocate(16, &memory);
  REQUIRE(a.ok());
  b.ThenDeallocate(&memory);
  const se::Status status = b.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "not live memory of this executor"));
  CHECK_FALSE(memory.IsNull());  // still the first executor's, and live
  a.ThenDeallocate(&memory);
  CHECK(a.BlockHostUntilDone().ok());
}

TEST_CASE("owned stream-ordered memory goes back to its pool on its stream", "[memory-pool]") {
  auto* executor = TestExecutor();
  se::MemoryPool<TestBackend> pool(executor);
  se::Stream stream(executor);
  stream.Init();
  std::vector<std::uint32_t> out(100);
  {
    se::ScopedDeviceMemory<std::uint32_t> memory = stream.ThenAllocateOwned<std::uint32_t>(100, &pool);
    REQUIRE(memory.ok());
    stream.ThenMemset32(memory.ptr(), 7, 400).ThenMemcpy(out.data(), memory.cref(), 400);
    CHECK(pool.GetStatistics().allocations_in_use == 1);
  }
  CHECK(pool.GetStatistics().allocations_in_use == 0);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(out == std::vector<std::uint32_t>(100, 7));
  se::ScopedDeviceMemory<int> refused = stream.ThenAllocateOwned<int>(0, &pool);
  CHECK_FALSE(refused.ok());
  CHECK(refused.status().code() == se::ErrorCode::kInvalidArgument);
}

// Allocation is not something a command buffer records: its memory would
// have to live as long as every submission (docs/api.md).
template <typename Buffer>
concept RecordsAllocation =
    requires(Buffer& buffer, se::DeviceMemory<int>* memory) { buffer.ThenAllocate(std::uint64_t{1}, memory); };
static_assert(!RecordsAllocation<se::CommandBuffer<TestBackend>>);

TEST_CASE("a command buffer uses pooled memory while it is live, and refuses it once returned",
          "[memory-pool][command-buffer][errors]") {
  auto* executor = TestExecutor();
  se::MemoryPool<TestBackend> pool(executor);
  se::Stream stream(executor);
  stream.Init();
  se::DeviceMemory<std::uint32_t> memory;
  stream.ThenAllocate(64, &memory, &pool);
  REQUIRE(stream.ok());
  const void* address = memory.opaque();
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemset32(&memory, 9, 256);
  REQUIRE(buffer.ok());
  std::vector<std::uint32_t> out(64);
  stream.ThenSubmit(&buffer).ThenMemcpy(out.data(), memory, 256).ThenDeallocate(&memory);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(out == std::vector<std::uint32_t>(64, 9));

  se::DeviceMemory<std::uint32_t> again;
  stream.ThenAllocate(64, &again, &pool);  // the same block, under a new id
  REQUIRE(stream.ok());
  CHECK(again.opaque() == address);
  stream.ThenSubmit(&buffer);  // its recorded view is of the returned allocation
  CHECK(stream.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(stream.status(), "ThenSubmit"));
  CHECK(Mentions(stream.status(), "no longer valid"));
  se::Stream cleanup(executor);
  cleanup.Init().ThenDeallocate(&again);
  CHECK(cleanup.BlockHostUntilDone().ok());
}
