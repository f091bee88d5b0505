// The longer members of se::vulkan: opening a device, streams, copies, fills,
// events and kernel loading. Included at the end of vulkan/backend.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "streamexecutor/vulkan/backend.hpp"

namespace streamexecutor {

namespace vulkan_detail {

// The first memory type with all of `wanted`, preferring one with `preferred` too.
inline std::uint32_t FindMemoryType(const VkPhysicalDeviceMemoryProperties& memory, VkMemoryPropertyFlags wanted,
                                    VkMemoryPropertyFlags preferred) {
  std::uint32_t found = UINT32_MAX;
  for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    if ((flags & wanted) != wanted) continue;
    if ((flags & preferred) == preferred) return i;
    if (found == UINT32_MAX) found = i;
  }
  return found;
}

}  // namespace vulkan_detail

inline Status vulkan::OpenExecutor(PlatformState& platform, int ordinal, ExecutorState& executor) {
  const vulkan_detail::PhysicalDevice& chosen = platform.instance.devices.at(static_cast<std::size_t>(ordinal));
  const vulkan_detail::InstanceApi& instance = platform.instance.api;
  auto e = std::make_unique<vulkan_detail::Executor>();
  e->instance = &instance;
  e->physical = chosen.device;
  e->queue_family = chosen.queue_family;
  e->ordinal = ordinal;
  instance.vkGetPhysicalDeviceProperties(chosen.device, &e->properties);
  e->label = ::streamexecutor::detail::Format("vulkan:{} ({})", ordinal, e->properties.deviceName);

  VkPhysicalDeviceMaintenance3Properties maintenance3{};
  maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  VkPhysicalDeviceProperties2 properties2{};
  properties2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties2.pNext = &maintenance3;
  instance.vkGetPhysicalDeviceProperties2(chosen.device, &properties2);
  e->max_allocation = maintenance3.maxMemoryAllocationSize;
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  properties2.pNext = &subgroup;
  instance.vkGetPhysicalDeviceProperties2(chosen.device, &properties2);
  e->subgroup_size = subgroup.subgroupSize;

  std::uint32_t families = 0;
  instance.vkGetPhysicalDeviceQueueFamilyProperties(chosen.device, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family(families);
  instance.vkGetPhysicalDeviceQueueFamilyProperties(chosen.device, &families, family.data());
  e->timestamp_valid_bits = family[chosen.queue_family].timestampValidBits;

  VkPhysicalDeviceMemoryProperties memory{};
  instance.vkGetPhysicalDeviceMemoryProperties(chosen.device, &memory);
  const VkMemoryPropertyFlags visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  e->memory_types.device = vulkan_detail::FindMemoryType(memory, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  if (e->memory_types.device == UINT32_MAX) e->memory_types.device = vulkan_detail::FindMemoryType(memory, 0, 0);
  e->memory_types.upload = vulkan_detail::FindMemoryType(memory, visible, 0);
  e->memory_types.readback = vulkan_detail::FindMemoryType(memory, visible, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  e->memory_types.unified = vulkan_detail::FindMemoryType(memory, visible, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (e->memory_types.upload == UINT32_MAX || e->memory_types.readback == UINT32_MAX) {
    return MakeError(ErrorCode::kUnavailable, "{} has no host-visible, coherent memory type for staging", e->label);
  }
  e->memory_types.device_is_host_visible =
      (memory.memoryTypes[e->memory_types.device].propertyFlags & visible) == visible;

  // Features the shaders may use where the device has them.
  VkPhysicalDeviceVulkan12Features has12{};
  has12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceVulkan11Features has11{};
  has11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  has11.pNext = &has12;
  VkPhysicalDeviceFeatures2 has{};
  has.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  has.pNext = &has11;
  instance.vkGetPhysicalDeviceFeatures2(chosen.device, &has);
  VkPhysicalDeviceVulkan12Features use12{};
  use12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  use12.timelineSemaphore = VK_TRUE;
  use12.shaderInt8 = has12.shaderInt8;
  use12.shaderFloat16 = has12.shaderFloat16;
  use12.storageBuffer8BitAccess = has12.storageBuffer8BitAccess;
  use12.uniformAndStorageBuffer8BitAccess = has12.uniformAndStorageBuffer8BitAccess;
  use12.storagePushConstant8 = has12.storagePushConstant8;
  use12.shaderBufferInt64Atomics = has12.shaderBufferInt64Atomics;
  use12.shaderSharedInt64Atomics = has12.shaderSharedInt64Atomics;
  use12.vulkanMemoryModel = has12.vulkanMemoryModel;
  use12.vulkanMemoryModelDeviceScope = has12.vulkanMemoryModelDeviceScope;
  VkPhysicalDeviceVulkan11Features use11{};
  use11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  use11.pNext = &use12;
  use11.storageBuffer16BitAccess = has11.storageBuffer16BitAccess;
  use11.uniformAndStorageBuffer16BitAccess = has11.uniformAndStorageBuffer16BitAccess;
  use11.storagePushConstant16 = has11.storagePushConstant16;
  VkPhysicalDeviceFeatures2 use{};
  use.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  use.pNext = &use11;
  use.features.shaderInt64 = has.features.shaderInt64;
  use.features.shaderInt16 = has.features.shaderInt16;
  use.features.shaderFloat64 = has.features.shaderFloat64;
  // The SPIR-V capabilities those features stand for (SPIR-V spec, "Capability"):
  // a module declaring one the device lacks is refused at GetKernel.
  const std::pair<std::uint32_t, std::pair<const char*, VkBool32>> capabilities[] = {
      {9, {"shaderFloat16", has12.shaderFloat16}},
      {10, {"shaderFloat64", has.features.shaderFloat64}},
      {11, {"shaderInt64", has.features.shaderInt64}},
      {12, {"shaderBufferInt64Atomics", has12.shaderBufferInt64Atomics}},
      {22, {"shaderInt16", has.features.shaderInt16}},
      {39, {"shaderInt8", has12.shaderInt8}}};
  for (const auto& [capability, feature] : capabilities) {
    if (!feature.second) e->missing_features.push_back({capability, feature.first});
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{
      VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, chosen.queue_family, 1, &priority};
  const char* extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME};
  const bool import_host =
      vulkan_detail::HasDeviceExtension(instance, chosen.device, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  if (import_host) {
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT host{};
    host.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT;
    VkPhysicalDeviceProperties2 with_host{};
    with_host.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    with_host.pNext = &host;
    instance.vkGetPhysicalDeviceProperties2(chosen.device, &with_host);
    e->host_pointer_alignment = host.minImportedHostPointerAlignment;
  }
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.pNext = &use;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = import_host ? 2u : 1u;
  info.ppEnabledExtensionNames = extensions;
  if (VkResult r = instance.vkCreateDevice(chosen.device, &info, nullptr, &e->device); r != VK_SUCCESS)
    return vulkan_detail::VkError("vkCreateDevice", r, "for {}", e->label);
  std::string_view missing;
  if (!vulkan_detail::ResolveDevice(instance, e->device, e->api, missing)) {
    return MakeError(ErrorCode::kUnavailable, "{}: the driver has no entry point {}", e->label, missing);
  }
  e->api.vkGetDeviceQueue(e->device, chosen.queue_family, 0, &e->queue);
  executor.impl = e.release();
  return Status();
}

inline void vulkan::CloseExecutor(ExecutorState& executor) {
  delete std::exchange(executor.notifier, nullptr);
  vulkan_detail::Executor* e = std::exchange(executor.impl, nullptr);
  if (e == nullptr) return;
  if (e->device != VK_NULL_HANDLE) {
    e->api.vkDeviceWaitIdle(e->device);
    vulkan_detail::ReclaimDeferred(*e, true);
    e->staging.Clear(*e);
    for (vulkan_detail::Timeline* timeline : e->idle_timelines) {
      e->api.vkDestroySemaphore(e->device, timeline->semaphore, nullptr);
      delete timeline;
    }
    for (auto& [ptr, buffer] : e->pinned) vulkan_detail::DestroyBuffer(*e, buffer);
    for (auto& [ptr, buffer] : e->registered) vulkan_detail::DestroyBuffer(*e, buffer);
    e->api.vkDestroyDevice(e->device, nullptr);
  }
  delete e;
}

inline DeviceDescription vulkan::Describe(const ExecutorState& executor) {
  const vulkan_detail::Executor& e = *executor.impl;
  const VkPhysicalDeviceLimits& limits = e.properties.limits;
  DeviceDescription d;
  d.platform_name = "vulkan";
  d.device_ordinal = e.ordinal;
  d.name = e.properties.deviceName;
  d.vendor = ::streamexecutor::detail::Format("{:#06x}", e.properties.vendorID);
  d.driver_version = ::streamexecutor::detail::Format("{:#x}", e.properties.driverVersion);
  d.api_version = ::streamexecutor::detail::Format("Vulkan {}.{}.{}", VK_API_VERSION_MAJOR(e.properties.apiVersion),
                                                   VK_API_VERSION_MINOR(e.properties.apiVersion),
                                                   VK_API_VERSION_PATCH(e.properties.apiVersion));
  VkPhysicalDeviceMemoryProperties memory{};
  e.instance->vkGetPhysicalDeviceMemoryProperties(e.physical, &memory);
  const std::uint32_t heap = memory.memoryTypes[e.memory_types.device].heapIndex;
  d.device_memory_size = memory.memoryHeaps[heap].size;
  d.max_allocation_size = e.max_allocation;
  d.shared_memory_per_block = limits.maxComputeSharedMemorySize;
  d.compute_units = 1;
  d.warp_size = static_cast<int>(std::max<std::uint32_t>(e.subgroup_size, 1));
  d.max_threads_per_block = limits.maxComputeWorkGroupInvocations;
  d.max_block_dims =
      Dim3{limits.maxComputeWorkGroupSize[0], limits.maxComputeWorkGroupSize[1], limits.maxComputeWorkGroupSize[2]};
  d.max_grid_dims =
      Dim3{limits.maxComputeWorkGroupCount[0], limits.maxComputeWorkGroupCount[1], limits.maxComputeWorkGroupCount[2]};
  d.integrated = e.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                 e.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  d.concurrent_kernels = false;
  d.extra.emplace_back("maxPushConstantsSize", ::streamexecutor::detail::Format("{}", limits.maxPushConstantsSize));
  d.extra.emplace_back("minStorageBufferOffsetAlignment",
                       ::streamexecutor::detail::Format("{}", limits.minStorageBufferOffsetAlignment));
  d.extra.emplace_back("maxStorageBufferRange", ::streamexecutor::detail::Format("{}", limits.maxStorageBufferRange));
  d.extra.emplace_back("timestampPeriod", ::streamexecutor::detail::Format("{}", limits.timestampPeriod));
  return d;
}

// ---- Streams -------------------------------------------------------------------

inline Status vulkan::CreateStream(ExecutorState& executor, StreamHandle& stream) {
  vulkan_detail::Executor& e = *executor.impl;
  auto s = std::make_unique<vulkan_detail::StreamState>();
  s->executor = &e;
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                               VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, e.queue_family};
  if (VkResult r = e.api.vkCreateCommandPool(e.device, &pool, nullptr, &s->pool); r != VK_SUCCESS)
    return e.Fail("vkCreateCommandPool", r, "creating a stream");
  StatusOr<vulkan_detail::Timeline*> timeline = vulkan_detail::CreateTimeline(e);
  if (!timeline.ok()) {
    e.api.vkDestroyCommandPool(e.device, s->pool, nullptr);
    return timeline.status();
  }
  s->timeline = timeline.value();
  // A reused timeline goes on from the value it reached.
  StatusOr<std::uint64_t> start = s->timeline->Read();
  if (!start.ok()) {
    s->timeline->Release();
    e.api.vkDestroyCommandPool(e.device, s->pool, nullptr);
    return start.status();
  }
  s->last = start.value();
  s->timeline->submitted.store(s->last, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(e.lists_mutex);
    e.streams.push_back(s.get());
  }
  stream = s.release();
  return Status();
}

inline void vulkan::DestroyStream(ExecutorState& executor, StreamHandle& stream) {
  vulkan_detail::StreamState* s = std::exchange(stream, nullptr);
  if (s == nullptr) return;
  vulkan_detail::Executor& e = *executor.impl;
  {
    std::unique_lock<vulkan_detail::StreamLock> lock(s->mutex);
    s->wake.wait(lock, [&] { return s->pending.empty(); });
  }
  s->timeline->Wait(s->last, "destroying a stream").IgnoreError();
  {
    std::lock_guard<std::mutex> lock(e.lists_mutex);
    std::erase(e.streams, s);
  }
  if (s->worker.joinable()) {
    {
      std::lock_guard<vulkan_detail::StreamLock> lock(s->mutex);
      s->stopping.store(true);
    }
    s->wake.notify_all();
    s->worker.join();
  }
  for (vulkan_detail::Slot& slot : s->slots) vulkan_detail::RecycleSlot(*s, slot);
  e.api.vkDestroyCommandPool(e.device, s->pool, nullptr);
  s->timeline->Release();
  delete s;
}

inline Status vulkan::SynchronizeStream(StreamHandle& stream) {
  vulkan_detail::StreamState& s = *stream;
  if (s.OnWorker()) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "BlockHostUntilDone on {}: called from a host callback of the same stream, which would wait "
                     "for itself",
                     s.executor->label);
  }
  // Again while the stream grew meanwhile: a callback may enqueue into its
  // own stream, and the wait includes that work.
  std::uint64_t waited = 0;
  for (;;) {
    std::uint64_t last = 0;
    {
      std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
      last = s.last;
    }
    if (last == waited) break;
    STREAMEXECUTOR_RETURN_IF_ERROR(s.timeline->Wait(last, "synchronizing a stream"));
    waited = last;
  }
  {
    // A finished slot keeps its H2D staging buffer until the ring comes back
    // to it, so the next copy would take another one from the pool and fill
    // a colder buffer (10% slower at 4-32 MiB, performance.md). Returned now,
    // the pool hands out the one just used.
    std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
    for (vulkan_detail::Slot& slot : s.slots) {
      if (slot.staging.buffer != VK_NULL_HANDLE && slot.value != 0 && slot.value <= waited)
        vulkan_detail::RecycleSlot(s, slot);
    }
  }
  vulkan_detail::ReclaimDeferred(*s.executor);  // what waited for this stream's work may go now
  return s.CurrentError();
}

// ---- Copies and fills ------------------------------------------------------------

// Host memory is read and written in stream order, when the copy runs, as
// CUDA and OpenCL do. Pinned memory (HostAllocate, HostMemoryRegister) is a
// buffer of its own: the device copies to and from it directly. Other memory
// is staged: the host half of the copy runs on the stream's host thread in
// order, or at once when the stream is idle (then that is the same order).

// H2D: into staging (now or in order), then onto the device.
inline Status vulkan::Submit(StreamHandle& stream, const op::MemcpyH2D& operation) {
  vulkan_detail::StreamState& s = *stream;
  if (s.Failed()) [[unlikely]]
    return Status();  // skipped after a failure, as on every backend
  if (operation.bytes == 0) return Status();
  vulkan_detail::Executor& e = *s.executor;
  const auto* dst = static_cast<const vulkan_detail::Buffer*>(operation.dst.opaque());
  if (auto pinned = vulkan_detail::FindPinned(e, operation.src, operation.bytes)) {
    std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
    StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
    if (!slot.ok()) return slot.status();
    const VkBufferCopy region{pinned->second, vulkan_detail::BufferOffset(operation.dst), operation.bytes};
    e.api.vkCmdCopyBuffer(s.slots[slot.value()].commands, pinned->first, dst->buffer, 1, &region);
    return vulkan_detail::FinishSlot(s, slot.value());
  }
  StatusOr<vulkan_detail::Buffer> staging = e.staging.Acquire(e, operation.bytes, false);
  if (!staging.ok()) return staging.status();
  std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
  if (s.pending.empty() && s.timeline->Reached(s.last)) {
    std::memcpy(staging.value().mapped, operation.src, operation.bytes);
  } else {
    vulkan_detail::HostJob job;
    try {
      job.callback =
          streamexecutor::detail::StoredCallback::Make([to = staging.value().mapped, from = operation.src,
                                                        bytes = operation.bytes] { std::memcpy(to, from, bytes); });
    } catch (...) {
      e.staging.Release(e, staging.value(), false);
      return MakeError(ErrorCode::kResourceExhausted, "ThenMemcpy (H2D) on {}: out of host memory", e.label);
    }
    if (Status queued = vulkan_detail::EnqueueHost(s, std::move(job)); !queued.ok()) {
      e.staging.Release(e, staging.value(), false);
      return queued;
    }
  }
  StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
  if (!slot.ok()) {
    e.staging.Release(e, staging.value(), false);  // a queued host half writes it, harmlessly, before it is reused
    return slot.status();
  }
  vulkan_detail::Slot& entry = s.slots[slot.value()];
  entry.staging = staging.value();
  entry.staging_readback = false;
  const VkBufferCopy region{0, vulkan_detail::BufferOffset(operation.dst), operation.bytes};
  e.api.vkCmdCopyBuffer(entry.commands, staging.value().buffer, dst->buffer, 1, &region);
  return vulkan_detail::FinishSlot(s, slot.value());
}

// D2H: onto staging on the device, then into the caller's memory by the
// stream's host thread, so that the copy is done when its value is reached.
inline Status vulkan::Submit(StreamHandle& stream, const op::MemcpyD2H& operation) {
  vulkan_detail::StreamState& s = *stream;
  if (s.Failed()) [[unlikely]]
    return Status();  // skipped after a failure, as on every backend
  if (operation.bytes == 0) return Status();
  vulkan_detail::Executor& e = *s.executor;
  const auto* src = static_cast<const vulkan_detail::Buffer*>(operation.src.opaque());
  if (auto pinned = vulkan_detail::FindPinned(e, operation.dst, operation.bytes)) {
    std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
    StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
    if (!slot.ok()) return slot.status();
    const VkBufferCopy region{vulkan_detail::BufferOffset(operation.src), pinned->second, operation.bytes};
    e.api.vkCmdCopyBuffer(s.slots[slot.value()].commands, src->buffer, pinned->first, 1, &region);
    vulkan_detail::RecordHostReadBarrier(e, s.slots[slot.value()].commands);
    return vulkan_detail::FinishSlot(s, slot.value());
  }
  StatusOr<vulkan_detail::Buffer> staging = e.staging.Acquire(e, operation.bytes, true);
  if (!staging.ok()) return staging.status();
  vulkan_detail::HostJob job;
  try {
    job.callback = streamexecutor::detail::StoredCallback::Make(
        [&e, buffer = staging.value(), dst = operation.dst, bytes = operation.bytes] {
          std::memcpy(dst, buffer.mapped, bytes);
          e.staging.Release(e, buffer, true);
        });
  } catch (...) {
    e.staging.Release(e, staging.value(), true);
    return MakeError(ErrorCode::kResourceExhausted, "ThenMemcpy (D2H) on {}: out of host memory", e.label);
  }
  std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
  StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
  if (!slot.ok()) {
    e.staging.Release(e, staging.value(), true);  // the job never runs
    return slot.status();
  }
  const VkBufferCopy region{vulkan_detail::BufferOffset(operation.src), 0, operation.bytes};
  e.api.vkCmdCopyBuffer(s.slots[slot.value()].commands, src->buffer, staging.value().buffer, 1, &region);
  vulkan_detail::RecordHostReadBarrier(e, s.slots[slot.value()].commands);
  STREAMEXECUTOR_RETURN_IF_ERROR(vulkan_detail::FinishSlot(s, slot.value()));
  return vulkan_detail::EnqueueHost(s, std::move(job));
}

inline Status vulkan::Submit(StreamHandle& stream, const op::MemcpyD2D& operation) {
  vulkan_detail::StreamState& s = *stream;
  if (s.Failed()) [[unlikely]]
    return Status();  // skipped after a failure, as on every backend
  if (operation.bytes == 0) return Status();
  const auto* dst = static_cast<const vulkan_detail::Buffer*>(operation.dst.opaque());
  const auto* src = static_cast<const vulkan_detail::Buffer*>(operation.src.opaque());
  if (dst == src && operation.dst.offset() < operation.src.offset() + operation.bytes &&
      operation.src.offset() < operation.dst.offset() + operation.bytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenMemcpy (D2D) on {}: source and destination overlap ({} bytes at offsets {} and {} of one "
                     "allocation); vkCmdCopyBuffer cannot copy overlapping regions",
                     s.executor->label, operation.bytes, operation.src.offset(), operation.dst.offset());
  }
  std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
  StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
  if (!slot.ok()) return slot.status();
  const VkBufferCopy region{vulkan_detail::BufferOffset(operation.src), vulkan_detail::BufferOffset(operation.dst),
                            operation.bytes};
  s.executor->api.vkCmdCopyBuffer(s.slots[slot.value()].commands, src->buffer, dst->buffer, 1, &region);
  return vulkan_detail::FinishSlot(s, slot.value());
}

// vkCmdFillBuffer writes whole aligned words; bytes before the first and after
// the last one come from a staging word holding the pattern.
inline Status vulkan::Fill(StreamHandle& stream, const DeviceMemoryBase& dst, std::uint32_t pattern,
                           std::uint64_t bytes, std::string_view) {
  vulkan_detail::StreamState& s = *stream;
  if (s.Failed()) [[unlikely]]
    return Status();  // skipped after a failure, as on every backend
  if (bytes == 0) return Status();
  vulkan_detail::Executor& e = *s.executor;
  const auto* buffer = static_cast<const vulkan_detail::Buffer*>(dst.opaque());
  const std::uint64_t begin = vulkan_detail::BufferOffset(dst);
  const std::uint64_t end = begin + bytes;
  const std::uint64_t aligned_begin = std::min(end, (begin + 3) / 4 * 4);
  const std::uint64_t aligned_end = std::max(aligned_begin, end / 4 * 4);
  vulkan_detail::Buffer staging;
  if (aligned_begin != begin || aligned_end != end) {
    StatusOr<vulkan_detail::Buffer> acquired = e.staging.Acquire(e, 8, false);
    if (!acquired.ok()) return acquired.status();
    staging = acquired.value();
    // Two pattern words: a copy may start at any byte of the first.
    std::memcpy(staging.mapped, &pattern, 4);
    std::memcpy(static_cast<std::byte*>(staging.mapped) + 4, &pattern, 4);
  }
  std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
  StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
  if (!slot.ok()) {
    if (staging.buffer != VK_NULL_HANDLE) e.staging.Release(e, staging, false);
    return slot.status();
  }
  vulkan_detail::Slot& entry = s.slots[slot.value()];
  if (aligned_end > aligned_begin) {
    e.api.vkCmdFillBuffer(entry.commands, buffer->buffer, aligned_begin, aligned_end - aligned_begin, pattern);
  }
  if (staging.buffer != VK_NULL_HANDLE) {
    entry.staging = staging;
    entry.staging_readback = false;
    // The pattern's byte k belongs at offsets congruent to k (mod 4).
    VkBufferCopy regions[2];
    std::uint32_t count = 0;
    if (aligned_begin > begin) regions[count++] = {begin % 4, begin, aligned_begin - begin};
    if (end > aligned_end && aligned_end >= aligned_begin) regions[count++] = {0, aligned_end, end - aligned_end};
    e.api.vkCmdCopyBuffer(entry.commands, staging.buffer, buffer->buffer, count, regions);
  }
  return vulkan_detail::FinishSlot(s, slot.value());
}

// ---- Events ----------------------------------------------------------------------

inline Status vulkan::CreateTimingEvent(ExecutorState& executor, EventHandle& event) {
  vulkan_detail::Executor& e = *executor.impl;
  if (e.timestamp_valid_bits == 0) {
    return MakeError(ErrorCode::kUnimplemented,
                     "a Timer on {}: its compute queue has no timestamps (timestampValidBits 0)", e.label);
  }
  STREAMEXECUTOR_RETURN_IF_ERROR(CreateEvent(executor, event));
  VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, nullptr, 0, VK_QUERY_TYPE_TIMESTAMP, 1, 0};
  if (VkResult r = e.api.vkCreateQueryPool(e.device, &info, nullptr, &event.state->queries); r != VK_SUCCESS) {
    DestroyEvent(executor, event);
    return e.Fail("vkCreateQueryPool", r, "for a Timer");
  }
  return Status();
}

inline void vulkan::DestroyEvent(ExecutorState& executor, EventHandle& event) {
  vulkan_detail::EventState* state = std::exchange(event.state, nullptr);
  if (state == nullptr) return;
  if (state->timeline != nullptr) {
    // A timestamp write still queued must not outlive its query pool.
    if (state->queries != VK_NULL_HANDLE) state->timeline->Wait(state->value, "destroying a Timer").IgnoreError();
    state->timeline->Release();
  }
  if (state->queries != VK_NULL_HANDLE)
    executor.impl->api.vkDestroyQueryPool(executor.impl->device, state->queries, nullptr);
  delete state;
}

inline Status vulkan::Submit(StreamHandle& stream, const op::RecordEvent<EventHandle>& operation) {
  vulkan_detail::StreamState& s = *stream;
  vulkan_detail::EventState& event = *operation.event->state;
  std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
  if (event.queries == VK_NULL_HANDLE || s.Failed()) {
    // The event is the stream's current value: nothing to submit.
    event.Replace(s.timeline, s.last, false);
    return Status();
  }
  StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
  if (!slot.ok()) return slot.status();
  VkCommandBuffer commands = s.slots[slot.value()].commands;
  s.executor->api.vkCmdResetQueryPool(commands, event.queries, 0, 1);
  s.executor->api.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, event.queries, 0);
  STREAMEXECUTOR_RETURN_IF_ERROR(vulkan_detail::FinishSlot(s, slot.value()));
  event.Replace(s.timeline, s.last, true);
  return Status();
}

// On the device where the recording is on the queue already; on the stream's
// host thread where it is still held behind host work or belongs to another
// device (runtime.hpp).
inline Status vulkan::Submit(StreamHandle& stream, const op::WaitEvent<EventHandle>& operation) {
  vulkan_detail::StreamState& s = *stream;
  auto [timeline, value] = operation.event->state->Latest();
  if (timeline == nullptr) return Status();  // never recorded
  struct Unref {
    vulkan_detail::Timeline* t;
    ~Unref() {
      if (t) t->Release();
    }
  } unref{timeline};
  if (timeline == s.timeline || value == 0 || timeline->Reached(value)) return Status();
  std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
  if (timeline->executor == s.executor && timeline->submitted.load(std::memory_order_acquire) >= value) {
    StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
    if (!slot.ok()) return slot.status();
    return vulkan_detail::FinishSlot(s, slot.value(), timeline, value);
  }
  vulkan_detail::HostJob job;
  job.foreign = std::exchange(unref.t, nullptr);
  job.foreign_value = value;
  return vulkan_detail::EnqueueHost(s, std::move(job));
}

inline StatusOr<std::uint64_t> vulkan::ElapsedNanoseconds(EventHandle& start, EventHandle& stop) {
  STREAMEXECUTOR_RETURN_IF_ERROR(SynchronizeEvent(start));
  STREAMEXECUTOR_RETURN_IF_ERROR(SynchronizeEvent(stop));
  vulkan_detail::EventState& first = *start.state;
  vulkan_detail::EventState& last = *stop.state;
  if (first.queries == VK_NULL_HANDLE || last.queries == VK_NULL_HANDLE || !first.stamped || !last.stamped) {
    return Status(ErrorCode::kFailedPrecondition,
                  "timer events were never recorded with a timestamp (ThenStartTimer/ThenStopTimer on a stream "
                  "that had not failed)");
  }
  const vulkan_detail::Executor& e = *first.timeline->executor;
  std::uint64_t begin = 0, end = 0;
  const VkQueryResultFlags flags = VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT;
  VkResult r = e.api.vkGetQueryPoolResults(e.device, first.queries, 0, 1, sizeof(begin), &begin, sizeof(begin), flags);
  if (r == VK_SUCCESS)
    r = e.api.vkGetQueryPoolResults(e.device, last.queries, 0, 1, sizeof(end), &end, sizeof(end), flags);
  if (r != VK_SUCCESS) return e.Fail("vkGetQueryPoolResults", r, "reading a Timer's timestamps");
  if (e.timestamp_valid_bits < 64) {
    const std::uint64_t mask = (std::uint64_t{1} << e.timestamp_valid_bits) - 1;
    begin &= mask;
    end &= mask;
  }
  if (end < begin) return Status(ErrorCode::kFailedPrecondition, "the stop event completed before the start event");
  return static_cast<std::uint64_t>(static_cast<double>(end - begin) * e.properties.limits.timestampPeriod);
}

// ---- Kernels ----------------------------------------------------------------------

inline Status vulkan::LoadUntypedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec,
                                        KernelHandle& kernel, std::vector<DeviceParam>& params,
                                        bool& shared_is_parameter) {
  vulkan_detail::Executor& e = *executor.impl;
  shared_is_parameter = true;  // shared arrays sized at launch are parameters
  const KernelLoaderSpec* code = spec.spirv() != nullptr ? spec.spirv() : spec.glsl();
  StatusOr<std::vector<std::uint32_t>> words = vulkan_detail::ModuleWords(spec, e.label, "GetUntypedKernel");
  if (!words.ok()) return words.status();
  auto loaded = std::make_unique<vulkan_detail::LoadedKernel>();
  loaded->executor = &e;
  loaded->name = code->kernel_name;
  STREAMEXECUTOR_RETURN_IF_ERROR(
      vulkan_detail::ReadParams(words.value(), code->kernel_name, e.label, loaded->layout, params));
  STREAMEXECUTOR_RETURN_IF_ERROR(vulkan_detail::CreateKernelObjects(e, words.value(), *loaded));
  kernel.impl = loaded.release();
  return Status();
}

inline Status vulkan::LoadCheckedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec,
                                        std::span<const KernelParamInfo> signature, KernelHandle& kernel) {
  vulkan_detail::Executor& e = *executor.impl;
  const KernelLoaderSpec* code = spec.spirv() != nullptr ? spec.spirv() : spec.glsl();
  StatusOr<std::vector<std::uint32_t>> words = vulkan_detail::ModuleWords(spec, e.label, "GetKernel");
  if (!words.ok()) return words.status();
  auto loaded = std::make_unique<vulkan_detail::LoadedKernel>();
  loaded->executor = &e;
  loaded->name = code->kernel_name;
  STREAMEXECUTOR_RETURN_IF_ERROR(
      vulkan_detail::CheckSignature(words.value(), code->kernel_name, e.label, signature, loaded->layout));
  STREAMEXECUTOR_RETURN_IF_ERROR(vulkan_detail::CreateKernelObjects(e, words.value(), *loaded));
  kernel.impl = loaded.release();
  return Status();
}

}  // namespace streamexecutor
