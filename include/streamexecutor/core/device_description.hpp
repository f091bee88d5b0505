// What a device is and what it can do, filled in by each backend from its
// driver (cuDeviceGetAttribute, clGetDeviceInfo, the host's sysconf/cpuid).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "streamexecutor/detail/fmt.hpp"

#include "streamexecutor/core/dims.hpp"

namespace streamexecutor {

struct DeviceDescription {
  std::string platform_name;  // "host", "opencl", "cuda"
  int device_ordinal = 0;
  std::string name;
  std::string vendor;
  std::string driver_version;
  std::string api_version;  // OpenCL version / CUDA driver API version
  std::uint64_t device_memory_size = 0;
  std::uint64_t max_allocation_size = 0;
  std::uint64_t shared_memory_per_block = 0;
  int compute_units = 0;  // SMs, OpenCL compute units, CPU threads
  std::uint64_t max_threads_per_block = 0;
  Dim3 max_block_dims;  // threads per block, per dimension
  Dim3 max_grid_dims;   // blocks per grid, per dimension
  int warp_size = 1;
  int clock_rate_khz = 0;
  int compute_capability_major = 0;  // CUDA only
  int compute_capability_minor = 0;
  bool unified_memory = false;

  // Per multiprocessor (CUDA SM, OpenCL compute unit, host worker thread),
  // what the occupancy calculator counts with (core/occupancy.hpp). For all
  // fields below 0 means unknown (the driver does not report it).
  std::uint64_t threads_per_multiprocessor = 0;  // resident at once
  std::uint64_t blocks_per_multiprocessor = 0;   // resident at once
  std::uint64_t shared_memory_per_multiprocessor = 0;
  std::uint64_t registers_per_multiprocessor = 0;
  std::uint64_t registers_per_block = 0;
  // CUDA: the most shared memory a block may opt into (above shared_memory_per_block).
  std::uint64_t shared_memory_per_block_optin = 0;
  std::uint64_t constant_memory_size = 0;  // CUDA total constant memory, OpenCL largest constant buffer
  // The cache in front of device memory: CUDA L2, OpenCL global memory cache,
  // host the CPU's L2 (per core).
  std::uint64_t l2_cache_size = 0;
  std::uint64_t cache_line_size = 0;  // OpenCL global memory cache line, host L1 data line
  int memory_bus_width_bits = 0;      // CUDA
  int memory_clock_rate_khz = 0;      // CUDA
  int async_engine_count = 0;         // CUDA copy engines
  bool concurrent_kernels = false;    // kernels of different streams may overlap (CUDA, host)
  bool ecc_enabled = false;           // CUDA ECC on, OpenCL error correction
  bool integrated = false;            // shares memory with the host (CUDA integrated, OpenCL host unified memory, host)

  // What has no typed home above, as reported, for display.
  std::vector<std::pair<std::string, std::string>> extra;

  std::string ToString() const {
    std::string out = ::streamexecutor::detail::Format(
        "{} device {}: {} ({})\n  driver {} / api {}\n  memory {} bytes, max allocation {} bytes, shared per block {} "
        "bytes\n  compute units {}, max threads per block {}, block dims {}x{}x{}, grid dims {}x{}x{}\n  warp size {}, "
        "clock {} kHz",
        platform_name, device_ordinal, name, vendor, driver_version, api_version, device_memory_size,
        max_allocation_size, shared_memory_per_block, compute_units, max_threads_per_block, max_block_dims.x,
        max_block_dims.y, max_block_dims.z, max_grid_dims.x, max_grid_dims.y, max_grid_dims.z, warp_size,
        clock_rate_khz);
    if (compute_capability_major != 0) {
      out += ::streamexecutor::detail::Format(", compute capability {}.{}", compute_capability_major,
                                              compute_capability_minor);
    }
    out += ::streamexecutor::detail::Format(
        "\n  per multiprocessor: {} threads, {} blocks, {} bytes shared, {} registers; {} registers per block, "
        "{} bytes shared per block opt-in\n  constant memory {} bytes, L2 cache {} bytes, cache line {} bytes, "
        "memory bus {} bits at {} kHz, {} copy engines\n  concurrent kernels {}, ECC {}, integrated {}, unified "
        "memory {}",
        Known(threads_per_multiprocessor), Known(blocks_per_multiprocessor), Known(shared_memory_per_multiprocessor),
        Known(registers_per_multiprocessor), Known(registers_per_block), Known(shared_memory_per_block_optin),
        Known(constant_memory_size), Known(l2_cache_size), Known(cache_line_size), Known(memory_bus_width_bits),
        Known(memory_clock_rate_khz), Known(async_engine_count), YesNo(concurrent_kernels), YesNo(ecc_enabled),
        YesNo(integrated), YesNo(unified_memory));
    for (const auto& [key, value] : extra) out += ::streamexecutor::detail::Format("\n  {}: {}", key, value);
    return out;
  }

 private:
  static const char* YesNo(bool value) { return value ? "yes" : "no"; }
  // 0 is "not reported" in the fields above.
  template <typename T>
  static std::string Known(T value) {
    return value == 0 ? std::string("unknown") : ::streamexecutor::detail::Format("{}", value);
  }
};

namespace detail {
// A launch limit of 0 would refuse every launch; no conforming device reports
// one (CUDA's and OpenCL's minimum is 1). The executor raises a 0 to 1 when it
// describes its device, and the launch checks rely on that (FitsDevice).
inline void RaiseZeroLaunchLimits(DeviceDescription& description) {
  for (std::uint64_t* limit :
       {&description.max_threads_per_block, &description.max_block_dims.x, &description.max_block_dims.y,
        &description.max_block_dims.z, &description.max_grid_dims.x, &description.max_grid_dims.y,
        &description.max_grid_dims.z}) {
    if (*limit == 0) *limit = 1;
  }
}
}  // namespace detail

}  // namespace streamexecutor
