// Kernel attributes and the occupancy calculator (core/occupancy.hpp) on every
// backend: attributes within the device's limits, a static shared array
// reported where kernels can declare one, active blocks that fall as dynamic
// shared memory grows, suggested block sizes that launch and compute the right
// result, and the errors of a bad query. The typed per-multiprocessor fields of
// the DeviceDescription too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <string>
#include <vector>

#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

namespace {

se::KernelAttributes AttributesOf(const se::KernelBase& kernel) {
  auto attributes = TestExecutor()->GetKernelAttributes(kernel);
  INFO(attributes.status().ToString());
  REQUIRE(attributes.ok());
  return attributes.value();
}

}  // namespace

TEST_CASE("kernel attributes are within the device's limits", "[occupancy]") {
  auto* executor = TestExecutor();
  const se::DeviceDescription& device = executor->GetDeviceDescription();
  tk::SaxpyKernel saxpy(executor);
  tk::ReverseKernel reverse(executor);
  tk::BlockSumKernel block_sum(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &saxpy).ok());
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &reverse).ok());
  REQUIRE(executor->GetKernel(tk::BlockSumSpec(), &block_sum).ok());
  for (const se::KernelBase* kernel : std::initializer_list<const se::KernelBase*>{&saxpy, &reverse, &block_sum}) {
    const se::KernelAttributes a = AttributesOf(*kernel);
    INFO(kernel->name() << ": " << a.ToString());
    CHECK(a.max_threads_per_block >= 1);
    CHECK(a.max_threads_per_block <= device.max_threads_per_block);
    CHECK(a.preferred_block_size_multiple >= 1);
    CHECK(a.static_shared_memory_bytes + a.max_dynamic_shared_memory_bytes <= device.shared_memory_per_block);
    CHECK(a.max_dynamic_shared_memory_bytes > 0);
    CHECK_FALSE(a.HasRequiredBlockDims());
  }
  CHECK(AttributesOf(saxpy).static_shared_memory_bytes == 0);
  // Dynamic shared memory is the launch's, not the kernel's.
  CHECK(AttributesOf(reverse).static_shared_memory_bytes == 0);
  // block_sum's static array of 256 floats (a thread_local on the host,
  // where kernels declare no shared memory).
  if constexpr (se::Occupancy<TestBackend>::kKernelsDeclareSharedMemory) {
    CHECK(AttributesOf(block_sum).static_shared_memory_bytes >= tk::kBlockSumMaxThreads * sizeof(float));
  } else {
    CHECK(AttributesOf(block_sum).static_shared_memory_bytes == 0);
  }
}

TEST_CASE("a kernel launched after its __local arguments were set keeps its static figure", "[occupancy]") {
  // OpenCL's CL_KERNEL_LOCAL_MEM_SIZE counts the __local arguments a launch
  // set; the attributes are the kernel's own on every backend.
  auto* executor = TestExecutor();
  tk::ReverseKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &kernel).ok());
  const se::KernelAttributes before = AttributesOf(kernel);
  auto data = executor->AllocateOwnedArray<int>(4096);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemZero(data.ptr(), 4096 * sizeof(int))
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(4), kernel, data.ptr(), se::SharedDeviceMemory<int>(1024),
                          std::uint32_t{1024})
              .BlockHostUntilDone()
              .ok());
  const se::KernelAttributes after = AttributesOf(kernel);
  CHECK(after.static_shared_memory_bytes == before.static_shared_memory_bytes);
  CHECK(after.max_dynamic_shared_memory_bytes == before.max_dynamic_shared_memory_bytes);
}

TEST_CASE("run-time typed kernels have the same attributes", "[occupancy]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel typed(executor);
  se::UntypedKernel untyped(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &typed).ok());
  REQUIRE(executor->GetUntypedKernel(tk::SaxpySpec(), &untyped).ok());
  const se::KernelAttributes a = AttributesOf(typed), b = AttributesOf(untyped);
  CHECK(a.max_threads_per_block == b.max_threads_per_block);
  CHECK(a.preferred_block_size_multiple == b.preferred_block_size_multiple);
  CHECK(a.static_shared_memory_bytes == b.static_shared_memory_bytes);
}

TEST_CASE("active blocks per multiprocessor fall as dynamic shared memory grows", "[occupancy]") {
  auto* executor = TestExecutor();
  tk::ReverseKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &kernel).ok());
  const se::KernelAttributes a = AttributesOf(kernel);
  const std::uint64_t threads = std::min(a.preferred_block_size_multiple, a.max_threads_per_block);
  const std::uint64_t most = a.max_dynamic_shared_memory_bytes;
  std::vector<std::uint64_t> active;
  for (std::uint64_t shared : {std::uint64_t{0}, most / 64, most / 16, most / 4, most / 2, most}) {
    auto blocks = executor->MaxActiveBlocksPerMultiprocessor(kernel, threads, shared);
    INFO(shared << " bytes: " << blocks.status().ToString());
    REQUIRE(blocks.ok());
    CHECK(blocks.value() >= 1);  // it fits the kernel's limit, so one block is resident
    if (!active.empty()) CHECK(blocks.value() <= active.back());
    active.push_back(blocks.value());
  }
  // Where the device holds several blocks (GPUs), shared memory is what
  // limits them at the end; a CPU compute unit runs one block at a time.
  if (active.front() > 1) CHECK(active.back() < active.front());
  const se::DeviceDescription& device = executor->GetDeviceDescription();
  if (device.blocks_per_multiprocessor != 0) CHECK(active.front() <= device.blocks_per_multiprocessor);
}

TEST_CASE("a suggested block size is within the kernel's limits and the device's occupancy", "[occupancy]") {
  auto* executor = TestExecutor();
  const se::DeviceDescription& device = executor->GetDeviceDescription();
  tk::SaxpyKernel saxpy(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &saxpy).ok());
  const se::KernelAttributes a = AttributesOf(saxpy);
  auto best = executor->SuggestBlockSize(saxpy);
  INFO(best.status().ToString());
  REQUIRE(best.ok());
  const se::BlockSizeSuggestion& s = best.value();
  CHECK(s.threads_per_block >= 1);
  CHECK(s.threads_per_block <= a.max_threads_per_block);
  CHECK((s.threads_per_block % a.preferred_block_size_multiple == 0 || s.threads_per_block == a.max_threads_per_block));
  CHECK(s.active_blocks_per_multiprocessor >= 1);
  CHECK(s.min_blocks_for_full_occupancy ==
        s.active_blocks_per_multiprocessor * static_cast<std::uint64_t>(device.compute_units));
  auto again = executor->MaxActiveBlocksPerMultiprocessor(saxpy, s.threads_per_block, 0);
  REQUIRE(again.ok());
  CHECK(again.value() == s.active_blocks_per_multiprocessor);
  // No other block size keeps more threads resident.
  for (std::uint64_t size = a.preferred_block_size_multiple; size <= s.threads_per_block; size *= 2) {
    auto other = executor->MaxActiveBlocksPerMultiprocessor(saxpy, size, 0);
    REQUIRE(other.ok());
    CHECK(other.value() * size <= s.active_blocks_per_multiprocessor * s.threads_per_block);
  }

  // A limit is honoured.
  auto limited = executor->SuggestBlockSize(saxpy, 0, 64);
  REQUIRE(limited.ok());
  CHECK(limited.value().threads_per_block <= 64);

  // Shared memory that grows with the block: each size asked is a candidate.
  tk::ReverseKernel reverse(executor);
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &reverse).ok());
  std::vector<std::uint64_t> asked;
  auto per_size = executor->SuggestBlockSize(reverse, [&](std::uint64_t threads) {
    asked.push_back(threads);
    return threads * sizeof(int);
  });
  INFO(per_size.status().ToString());
  REQUIRE(per_size.ok());
  CHECK(!asked.empty());
  const std::uint64_t chosen = per_size.value().threads_per_block;
  CHECK(std::find(asked.begin(), asked.end(), chosen) != asked.end());
  auto check = executor->MaxActiveBlocksPerMultiprocessor(reverse, chosen, chosen * sizeof(int));
  REQUIRE(check.ok());
  CHECK(check.value() == per_size.value().active_blocks_per_multiprocessor);
}

TEST_CASE("kernels run with the suggested block size", "[occupancy][kernel-results]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());

  tk::SaxpyKernel saxpy(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &saxpy).ok());
  auto best = executor->SuggestBlockSize(saxpy);
  REQUIRE(best.ok());
  constexpr std::uint32_t n = 100'003;
  const std::uint64_t threads = best.value().threads_per_block;
  std::vector<float> x(n), y(n, 1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  REQUIRE(stream.ThenMemcpyH2D<float>(x, dx.ptr())
              .ThenMemcpyH2D<float>(y, dy.ptr())
              .ThenLaunch(se::ThreadDim(threads), se::BlockDim((n + threads - 1) / threads), saxpy, 2.0f, dx.ptr(),
                          dy.ptr(), n)
              .ThenMemcpyD2H<float>(dy.cref(), y)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t i = 0; i < n; i += 331) CHECK(y[i] == 2.0f * static_cast<float>(i) + 1.0f);
  CHECK(y[n - 1] == 2.0f * static_cast<float>(n - 1) + 1.0f);

  // A block barrier over a static shared array, with the size suggested
  // under its array's limit.
  tk::BlockSumKernel block_sum(executor);
  REQUIRE(executor->GetKernel(tk::BlockSumSpec(), &block_sum).ok());
  auto sum_best = executor->SuggestBlockSize(block_sum, 0, tk::kBlockSumMaxThreads);
  REQUIRE(sum_best.ok());
  const std::uint64_t block = sum_best.value().threads_per_block;
  REQUIRE(block <= tk::kBlockSumMaxThreads);
  constexpr std::uint32_t m = 10'000;
  const std::uint64_t blocks = (m + block - 1) / block;
  std::vector<float> in(m), out(blocks, -1.0f);
  for (std::uint32_t i = 0; i < m; ++i) in[i] = static_cast<float>(i % 7);  // sums stay exact in float
  auto din = executor->AllocateOwnedArray<float>(m);
  auto dout = executor->AllocateOwnedArray<float>(blocks);
  REQUIRE(stream.ThenMemcpyH2D<float>(in, din.ptr())
              .ThenLaunch(se::ThreadDim(block), se::BlockDim(blocks), block_sum, din.ptr(), dout.ptr(), m)
              .ThenMemcpyD2H<float>(dout.cref(), out)
              .BlockHostUntilDone()
              .ok());
  for (std::uint64_t b = 0; b < blocks; ++b) {
    float expected = 0.0f;
    for (std::uint64_t i = b * block; i < std::min<std::uint64_t>((b + 1) * block, m); ++i) expected += in[i];
    INFO("block " << b << " of " << block << " threads");
    CHECK(out[b] == expected);
  }
}

TEST_CASE("bad occupancy queries are refused with the reason", "[occupancy][errors]") {
  auto* executor = TestExecutor();
  tk::ReverseKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &kernel).ok());
  const se::KernelAttributes a = AttributesOf(kernel);
  const std::string label = executor->DeviceLabel();

  auto zero = executor->MaxActiveBlocksPerMultiprocessor(kernel, 0, 0);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(zero.status(), "MaxActiveBlocksPerMultiprocessor of kernel 'reverse' on " + label));
  CHECK(Mentions(zero.status(), "0 threads per block"));

  auto too_many = executor->MaxActiveBlocksPerMultiprocessor(kernel, a.max_threads_per_block + 1, 0);
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(too_many.status(), fmt::format("the kernel runs at most {}", a.max_threads_per_block)));

  auto shared = executor->MaxActiveBlocksPerMultiprocessor(kernel, 1, a.max_dynamic_shared_memory_bytes + 1);
  REQUIRE_FALSE(shared.ok());
  CHECK(shared.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(shared.status(), fmt::format("the kernel may have at most {}", a.max_dynamic_shared_memory_bytes)));

  auto suggest_shared = executor->SuggestBlockSize(kernel, a.max_dynamic_shared_memory_bytes + 1);
  REQUIRE_FALSE(suggest_shared.ok());
  CHECK(suggest_shared.status().code() == se::ErrorCode::kInvalidArgument);

  auto never_fits =
      executor->SuggestBlockSize(kernel, [&](std::uint64_t) { return a.max_dynamic_shared_memory_bytes + 1; });
  REQUIRE_FALSE(never_fits.ok());
  CHECK(Mentions(never_fits.status(), "no block size fits"));

  tk::ReverseKernel unloaded(executor);
  auto not_loaded = executor->GetKernelAttributes(unloaded);
  REQUIRE_FALSE(not_loaded.ok());
  CHECK(not_loaded.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(not_loaded.status(), "GetKernelAttributes on " + label + ": the kernel is not loaded"));
  CHECK_FALSE(executor->SuggestBlockSize(unloaded).ok());
  CHECK_FALSE(executor->MaxActiveBlocksPerMultiprocessor(unloaded, 1).ok());
}

TEST_CASE("the device description has typed per-multiprocessor limits", "[occupancy][platform]") {
  const se::DeviceDescription& d = TestExecutor()->GetDeviceDescription();
  INFO(d.ToString());
  // 0 is unknown; a known figure holds at least one block of the largest size.
  if (d.threads_per_multiprocessor != 0) CHECK(d.threads_per_multiprocessor >= d.max_threads_per_block);
  if (d.shared_memory_per_multiprocessor != 0) CHECK(d.shared_memory_per_multiprocessor >= d.shared_memory_per_block);
  if (d.registers_per_multiprocessor != 0) CHECK(d.registers_per_multiprocessor >= d.registers_per_block);
  CHECK(d.ToString().find("per multiprocessor:") != std::string::npos);
  for (const auto& [key, value] : d.extra) {
    INFO(key);
    CHECK(key.find("per SM") == std::string::npos);  // typed now
    CHECK(key.find("L2 cache") == std::string::npos);
    CHECK(key.find("worker threads") == std::string::npos);  // compute_units
  }
}
