// The occupancy rule of backends without a calculator of their own (host,
// OpenCL; docs/api.md "Kernel attributes and occupancy"), the checks every
// occupancy query gets, and the block-size search, on made-up devices whose
// limits the rule must honour one by one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <streamexecutor/core/occupancy.hpp>

namespace se = streamexecutor;

namespace {

// A GPU as OpenCL's vendor extensions or CUDA describe one.
se::DeviceDescription Gpu() {
  se::DeviceDescription d;
  d.compute_units = 10;
  d.max_threads_per_block = 1024;
  d.threads_per_multiprocessor = 2048;
  d.blocks_per_multiprocessor = 32;
  d.shared_memory_per_block = 48 * 1024;
  d.shared_memory_per_multiprocessor = 64 * 1024;
  return d;
}

se::KernelAttributes Kernel(std::uint64_t static_shared = 0) {
  se::KernelAttributes a;
  a.max_threads_per_block = 1024;
  a.preferred_block_size_multiple = 32;
  a.static_shared_memory_bytes = static_shared;
  a.max_dynamic_shared_memory_bytes = 48 * 1024 - static_shared;
  return a;
}

bool Mentions(const se::Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

se::StatusOr<se::BlockSizeSuggestion> Search(const se::KernelAttributes& kernel, const se::DeviceDescription& device,
                                             std::uint64_t largest, std::uint64_t shared = 0) {
  return se::detail::SearchBlockSize(
      "gpu:0", "k", kernel, largest, se::detail::RuleThreadsPerMultiprocessor(device),
      [&](std::uint64_t) { return shared; },
      [&](std::uint64_t size, std::uint64_t bytes) -> se::StatusOr<std::uint64_t> {
        return se::detail::ActiveBlocksByRule(kernel, device, size, bytes);
      });
}

}  // namespace

TEST_CASE("the rule takes the least of the thread, block and shared-memory limits", "[occupancy]") {
  const se::DeviceDescription gpu = Gpu();
  // Threads: 2048 per multiprocessor over blocks rounded up to whole warps.
  CHECK(se::detail::ActiveBlocksByRule(Kernel(), gpu, 256, 0) == 8);
  CHECK(se::detail::ActiveBlocksByRule(Kernel(), gpu, 100, 0) == 16);  // 100 threads take 128
  CHECK(se::detail::ActiveBlocksByRule(Kernel(), gpu, 1024, 0) == 2);
  // Blocks: at most 32, however small.
  CHECK(se::detail::ActiveBlocksByRule(Kernel(), gpu, 32, 0) == 32);
  // Shared memory: 64 KiB per multiprocessor over static plus dynamic.
  CHECK(se::detail::ActiveBlocksByRule(Kernel(1024), gpu, 32, 0) == 32);
  CHECK(se::detail::ActiveBlocksByRule(Kernel(1024), gpu, 32, 7 * 1024) == 8);
  CHECK(se::detail::ActiveBlocksByRule(Kernel(1024), gpu, 32, 15 * 1024) == 4);
  CHECK(se::detail::ActiveBlocksByRule(Kernel(1024), gpu, 32, 47 * 1024) == 1);
}

TEST_CASE("active blocks fall as dynamic shared memory grows", "[occupancy]") {
  const se::DeviceDescription gpu = Gpu();
  std::uint64_t previous = se::detail::ActiveBlocksByRule(Kernel(), gpu, 64, 0);
  CHECK(previous == 32);
  for (std::uint64_t shared = 4096; shared <= 48 * 1024; shared += 4096) {
    const std::uint64_t active = se::detail::ActiveBlocksByRule(Kernel(), gpu, 64, shared);
    INFO(shared);
    CHECK(active <= previous);
    CHECK(active >= 1);
    previous = active;
  }
  CHECK(previous == 1);  // 48 KiB each: one block in 64 KiB
}

TEST_CASE("unknown per-multiprocessor limits fall back to the per-block ones", "[occupancy]") {
  se::DeviceDescription d = Gpu();
  d.threads_per_multiprocessor = 0;        // one block of the largest size
  d.blocks_per_multiprocessor = 0;         // no bound of its own
  d.shared_memory_per_multiprocessor = 0;  // the per-block figure
  CHECK(se::detail::RuleThreadsPerMultiprocessor(d) == 1024);
  CHECK(se::detail::ActiveBlocksByRule(Kernel(), d, 256, 0) == 4);
  CHECK(se::detail::ActiveBlocksByRule(Kernel(), d, 1, 0) == 32);  // 1 thread takes a warp of 32
  CHECK(se::detail::ActiveBlocksByRule(Kernel(), d, 32, 16 * 1024) == 3);

  se::DeviceDescription cpu = Gpu();  // a worker or CPU compute unit: one block at a time
  cpu.blocks_per_multiprocessor = 1;
  for (std::uint64_t shared : {0u, 1024u, 48u * 1024u})
    CHECK(se::detail::ActiveBlocksByRule(Kernel(), cpu, 64, shared) == 1);
}

TEST_CASE("occupancy queries are checked before any driver sees them", "[occupancy][errors]") {
  se::KernelAttributes a = Kernel(1024);
  CHECK(se::detail::CheckOccupancyQuery("Q", "gpu:0", "k", a, 256, 1024).ok());
  CHECK(se::detail::CheckOccupancyQuery("Q", "gpu:0", "k", a, 1024, 47 * 1024).ok());

  se::Status zero = se::detail::CheckOccupancyQuery("Q", "gpu:0", "k", a, 0, 0);
  CHECK(zero.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(zero, "Q of kernel 'k' on gpu:0: 0 threads per block"));
  se::Status big = se::detail::CheckOccupancyQuery("Q", "gpu:0", "k", a, 1025, 0);
  CHECK(big.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(big, "1025 threads per block; the kernel runs at most 1024"));
  se::Status shared = se::detail::CheckOccupancyQuery("Q", "gpu:0", "k", a, 32, 47 * 1024 + 1);
  CHECK(shared.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(shared, "48129 bytes of dynamic shared memory per block; the kernel may have at most 48128"));
  CHECK(Mentions(shared, "its static shared memory is 1024 bytes"));

  a.required_block_dims = se::Dim3{16, 4, 1};
  CHECK(se::detail::CheckOccupancyQuery("Q", "gpu:0", "k", a, 64, 0).ok());
  se::Status other = se::detail::CheckOccupancyQuery("Q", "gpu:0", "k", a, 32, 0);
  CHECK(other.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(other, "reqd_work_group_size(16, 4, 1): every launch has exactly 64 threads per block"));
}

TEST_CASE("the suggestion has the most resident threads, the largest block on a tie", "[occupancy]") {
  se::DeviceDescription d = Gpu();
  // 1024 and 512 both fill 2048 threads: the larger, found first.
  auto tie = Search(Kernel(), d, 1024);
  REQUIRE(tie.ok());
  CHECK(tie.value().threads_per_block == 1024);
  CHECK(tie.value().active_blocks_per_multiprocessor == 2);

  // 1536 threads per multiprocessor: one block of 1024 leaves a third idle,
  // two of 768 fill it.
  d.threads_per_multiprocessor = 1536;
  auto three_quarters = Search(Kernel(), d, 1024);
  REQUIRE(three_quarters.ok());
  CHECK(three_quarters.value().threads_per_block == 768);
  CHECK(three_quarters.value().active_blocks_per_multiprocessor == 2);

  // Shared memory limits blocks: 20 KiB each, three per 64 KiB; 1024 threads
  // then give 2 x 1024 = 2048 resident threads, more than 3 x 512.
  auto shared = Search(Kernel(), Gpu(), 1024, 20 * 1024);
  REQUIRE(shared.ok());
  CHECK(shared.value().threads_per_block == 1024);

  // A limit below the kernel's.
  auto limited = Search(Kernel(), Gpu(), 200);
  REQUIRE(limited.ok());
  // 200 threads take 224: 9 blocks, 1800 threads; 192: 10 blocks, 1920; 128: 16 blocks fill all 2048.
  CHECK(limited.value().threads_per_block == 128);
  CHECK(limited.value().active_blocks_per_multiprocessor == 16);
}

TEST_CASE("the search tries the limit, then every multiple of the preferred multiple below it", "[occupancy]") {
  se::DeviceDescription d = Gpu();
  d.threads_per_multiprocessor = 1 << 20;  // never full: every candidate is tried
  d.blocks_per_multiprocessor = 1;
  std::vector<std::uint64_t> asked;
  auto best = se::detail::SearchBlockSize(
      "gpu:0", "k", Kernel(), 100, 0,
      [&](std::uint64_t size) {
        asked.push_back(size);
        return std::uint64_t{0};
      },
      [&](std::uint64_t size, std::uint64_t bytes) -> se::StatusOr<std::uint64_t> {
        return se::detail::ActiveBlocksByRule(Kernel(), d, size, bytes);
      });
  REQUIRE(best.ok());
  CHECK(asked == std::vector<std::uint64_t>{100, 96, 64, 32});
  CHECK(best.value().threads_per_block == 100);

  se::KernelAttributes fixed = Kernel();
  fixed.required_block_dims = se::Dim3{8, 8, 1};
  asked.clear();
  auto required = se::detail::SearchBlockSize(
      "gpu:0", "k", fixed, 1024, 0,
      [&](std::uint64_t size) {
        asked.push_back(size);
        return std::uint64_t{0};
      },
      [&](std::uint64_t size, std::uint64_t bytes) -> se::StatusOr<std::uint64_t> {
        return se::detail::ActiveBlocksByRule(fixed, d, size, bytes);
      });
  REQUIRE(required.ok());
  CHECK(asked == std::vector<std::uint64_t>{64});
  CHECK(required.value().threads_per_block == 64);
}

TEST_CASE("a search where no block size fits says why", "[occupancy][errors]") {
  const se::KernelAttributes a = Kernel();
  auto none = se::detail::SearchBlockSize(
      "gpu:0", "k", a, 1024, 2048, [](std::uint64_t size) { return size * 2048; },
      [&](std::uint64_t size, std::uint64_t bytes) -> se::StatusOr<std::uint64_t> {
        return se::detail::ActiveBlocksByRule(a, Gpu(), size, bytes);
      });
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(none.status(), "SuggestBlockSize of kernel 'k' on gpu:0: no block size fits"));
  CHECK(Mentions(none.status(), "a block of 32 threads is 65536 bytes, and the kernel may have at most 49152"));

  // A driver error during the search is returned as it is.
  auto failed = se::detail::SearchBlockSize(
      "gpu:0", "k", a, 64, 0, [](std::uint64_t) { return std::uint64_t{0}; },
      [](std::uint64_t, std::uint64_t) -> se::StatusOr<std::uint64_t> {
        return se::Status(se::ErrorCode::kInternal, "driver said no");
      });
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message() == "driver said no");
}

TEST_CASE("KernelAttributes and the new DeviceDescription fields print", "[occupancy]") {
  se::KernelAttributes a = Kernel(1024);
  a.registers_per_thread = 40;
  a.ptx_version = 85;
  a.binary_version = 90;
  const std::string text = a.ToString();
  CHECK(text.find("max threads per block 1024") != std::string::npos);
  CHECK(text.find("static shared 1024 bytes") != std::string::npos);
  CHECK(text.find("40 registers per thread") != std::string::npos);
  CHECK(text.find("PTX 8.5, binary sm_90") != std::string::npos);

  const std::string d = Gpu().ToString();
  CHECK(d.find("per multiprocessor: 2048 threads, 32 blocks, 65536 bytes shared, unknown registers") !=
        std::string::npos);
}
