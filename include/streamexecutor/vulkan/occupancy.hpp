// Kernel attributes on Vulkan (core/occupancy.hpp), from the shader's
// reflection: its work-group size where the shader fixes it, its static
// shared memory. Vulkan has no occupancy calculator: the core's rule applies,
// with the limits vulkan/backend_impl.hpp's Describe reports.
#pragma once

#include <algorithm>
#include <cstdint>

#include "streamexecutor/core/occupancy.hpp"
#include "streamexecutor/vulkan/backend.hpp"

namespace streamexecutor {

template <>
struct Occupancy<vulkan> {
  static constexpr bool kKernelsDeclareSharedMemory = true;  // `shared` arrays in the shader

  static StatusOr<KernelAttributes> Attributes(const vulkan::ExecutorState&, const vulkan::KernelHandle& kernel,
                                               const DeviceDescription& device) {
    const vulkan_detail::ShaderLayout& layout = kernel.impl->layout;
    KernelAttributes attributes;
    attributes.max_threads_per_block = device.max_threads_per_block;
    if (!layout.local_size_specialized[0] && !layout.local_size_specialized[1] && !layout.local_size_specialized[2]) {
      attributes.required_block_dims = Dim3{layout.local_size[0], layout.local_size[1], layout.local_size[2]};
      attributes.max_threads_per_block = attributes.required_block_dims.Count();
    }
    attributes.static_shared_memory_bytes = layout.static_shared_bytes;
    attributes.max_dynamic_shared_memory_bytes = device.shared_memory_per_block > layout.static_shared_bytes
                                                     ? device.shared_memory_per_block - layout.static_shared_bytes
                                                     : 0;
    attributes.preferred_block_size_multiple =
        std::max<std::uint64_t>(static_cast<std::uint64_t>(std::max(device.warp_size, 1)), 1);
    return attributes;
  }
};

static_assert(KernelAttributesBackend<vulkan> && !DriverOccupancyBackend<vulkan>);

}  // namespace streamexecutor
