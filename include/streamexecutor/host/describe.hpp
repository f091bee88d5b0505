// What GetDeviceDescription reports for the host backend: the CPU's name and
// vendor from /proc/cpuinfo, physical memory as device memory, and the pool's
// limits.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "streamexecutor/core/device_description.hpp"

namespace streamexecutor::host_detail {

inline std::string CpuInfoField(std::string_view field, std::string_view fallback) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.compare(0, field.size(), field) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return std::string(fallback);
}

// glibc's cache queries; elsewhere (and where the kernel does not say) 0,
// which the description reads as unknown.
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL1_DCACHE_LINESIZE)
inline constexpr int kLevel2CacheSize = _SC_LEVEL2_CACHE_SIZE;
inline constexpr int kLevel1LineSize = _SC_LEVEL1_DCACHE_LINESIZE;
#else
inline constexpr int kLevel2CacheSize = -1;
inline constexpr int kLevel1LineSize = -1;
#endif
inline std::uint64_t SysconfBytes(int name) {
  const long value = name < 0 ? -1 : sysconf(name);
  return value > 0 ? static_cast<std::uint64_t>(value) : 0;
}

inline DeviceDescription DescribeCpu(std::string_view platform_name, int ordinal, unsigned workers,
                                     std::uint64_t shared_memory_per_block) {
  DeviceDescription d;
  d.platform_name = std::string(platform_name);
  d.device_ordinal = ordinal;
  d.name = CpuInfoField("model name", "CPU");
  d.vendor = CpuInfoField("vendor_id", "unknown vendor");
  d.driver_version = "streamexecutor host backend";
  d.api_version = "C++20";
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  d.device_memory_size = pages > 0 && page_size > 0 ? std::uint64_t(pages) * std::uint64_t(page_size) : 0;
  d.max_allocation_size = d.device_memory_size;
  d.shared_memory_per_block = shared_memory_per_block;
  d.compute_units = static_cast<int>(workers);
  d.max_threads_per_block = 1 << 20;
  d.max_block_dims = Dim3{1 << 20, 1 << 20, 1 << 20};
  d.max_grid_dims = Dim3{(1ull << 31) - 1, 65535, 65535};
  d.unified_memory = true;
  // A worker runs one block at a time, all of its threads, with the block's
  // scratch as its shared memory: what the occupancy rule counts with.
  d.threads_per_multiprocessor = d.max_threads_per_block;
  d.blocks_per_multiprocessor = 1;
  d.shared_memory_per_multiprocessor = shared_memory_per_block;
  d.l2_cache_size = SysconfBytes(kLevel2CacheSize);
  d.cache_line_size = SysconfBytes(kLevel1LineSize);
  d.concurrent_kernels = true;  // streams run on different workers at once
  d.integrated = true;
  return d;
}

}  // namespace streamexecutor::host_detail
