// Stream-ordered allocation from a memory pool: on each of two streams,
// every iteration takes two scratch buffers from the pool, fills one, copies
// it to the other and back to the host, and frees both in stream order. The
// pool hands each stream's freed blocks back to it at once, so the driver is
// asked for a few blocks, not one per iteration; the statistics show it.
//
//   memory_pool [platform]     platform: host (default), host_serial, opencl, cuda
#include <streamexecutor/streamexecutor.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace se = streamexecutor;

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  auto executor_or = platform->ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "memory_pool: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  constexpr std::uint64_t kCount = 4096;  // 16 KiB per buffer
  constexpr std::uint64_t kBytes = kCount * sizeof(std::uint32_t);
  constexpr int kIterations = 100;
  constexpr int kStreams = 2;
  se::MemoryPool<B> pool(executor);
  std::array<se::Stream<B>, kStreams> streams{se::Stream<B>(executor), se::Stream<B>(executor)};
  std::array<std::vector<std::uint32_t>, kStreams> results;
  for (int s = 0; s < kStreams; ++s) {
    results[s].assign(kCount * kIterations, 0);
    streams[s].Init();
  }
  for (int i = 0; i < kIterations; ++i) {
    for (int s = 0; s < kStreams; ++s) {
      const auto value = static_cast<std::uint32_t>(1000 * s + i);
      se::DeviceMemory<std::uint32_t> filled, copy;
      streams[s]
          .ThenAllocate(kCount, &filled, &pool)
          .ThenAllocate(kCount, &copy, &pool)
          .ThenMemset32(&filled, value, kBytes)
          .ThenMemcpy(&copy, filled, kBytes)
          .ThenMemcpy(results[s].data() + kCount * static_cast<std::uint64_t>(i), copy, kBytes)
          .ThenDeallocate(&filled)
          .ThenDeallocate(&copy);
    }
  }
  std::uint64_t wrong = 0;
  for (int s = 0; s < kStreams; ++s) {
    if (se::Status status = streams[s].BlockHostUntilDone(); !status.ok()) {
      std::fprintf(stderr, "memory_pool: %s\n", status.ToString().c_str());
      return 4;
    }
    for (int i = 0; i < kIterations; ++i) {
      for (std::uint64_t k = 0; k < kCount; ++k) {
        wrong += results[s][kCount * static_cast<std::uint64_t>(i) + k] != static_cast<std::uint32_t>(1000 * s + i);
      }
    }
  }
  const se::MemoryPoolStatistics statistics = pool.GetStatistics();
  if (statistics.native) {  // the driver's pool (CUDA): it counts reserved bytes, not blocks
    std::printf("%s: %llu allocations of %llu KiB on %d streams from the driver's pool\n",
                std::string(platform->Name()).c_str(), static_cast<unsigned long long>(statistics.allocations),
                static_cast<unsigned long long>(kBytes / 1024), kStreams);
  } else {
    std::printf("%s: %llu allocations of %llu KiB on %d streams: %llu blocks from the driver, %llu reused\n",
                std::string(platform->Name()).c_str(), static_cast<unsigned long long>(statistics.allocations),
                static_cast<unsigned long long>(kBytes / 1024), kStreams,
                static_cast<unsigned long long>(statistics.driver_allocations),
                static_cast<unsigned long long>(statistics.reused));
  }
  std::printf("peak %llu KiB in use, %llu KiB reserved, %llu KiB free now, %llu wrong values\n",
              static_cast<unsigned long long>(statistics.peak_bytes_in_use / 1024),
              static_cast<unsigned long long>(statistics.bytes_reserved / 1024),
              static_cast<unsigned long long>(statistics.bytes_free / 1024), static_cast<unsigned long long>(wrong));
  // Each stream needs two blocks at a time; a handful more at most wait for a
  // free to run. The driver's pool reserves in chunks of its own size, so
  // only its reserve is reported.
  const bool bounded = statistics.native || statistics.driver_allocations <= 4 * kStreams;
  if (!bounded) std::fprintf(stderr, "memory_pool: the pool did not reuse its blocks\n");
  return wrong == 0 && bounded ? 0 : 1;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "memory_pool: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
