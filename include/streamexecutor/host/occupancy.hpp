// Kernel attributes on the host backends (every HostBackend) (core/occupancy.hpp): what a host
// kernel's runner can run. The host has no occupancy calculator of its own;
// the core's rule applies, with the limits host/describe.hpp reports (a worker
// runs one block at a time).
#pragma once

#include <algorithm>
#include <cstdint>

#include "streamexecutor/core/occupancy.hpp"
#include "streamexecutor/host/backend.hpp"

namespace streamexecutor {

template <host_detail::HostMachinery B>
struct Occupancy<B> {
  // Host kernels get block-shared memory only as SharedDeviceMemory
  // arguments (std::span scratch), never from their code.
  static constexpr bool kKernelsDeclareSharedMemory = false;
  // Every block size keeps a worker equally busy, so the occupancy rule alone
  // would suggest the largest (2^20 threads): one block, one busy worker, for
  // any grid smaller than that. CUDA's limit, which cooperative kernels share.
  static constexpr std::uint64_t kLargestSuggestedBlock = 1024;

  static StatusOr<KernelAttributes> Attributes(const typename B::ExecutorState&, const typename B::KernelHandle& kernel,
                                               const DeviceDescription& device) {
    KernelAttributes attributes;
    attributes.max_threads_per_block = std::min(kernel.max_threads, device.max_threads_per_block);
    attributes.max_dynamic_shared_memory_bytes = B::kSharedMemoryPerBlock;
    attributes.stack_bytes_per_thread = kernel.runtime != nullptr ? kernel.runtime->stack_bytes_per_thread : 0;
    attributes.preferred_block_size_multiple = 1;
    return attributes;
  }
};

static_assert(KernelAttributesBackend<host> && !DriverOccupancyBackend<host>);

}  // namespace streamexecutor
