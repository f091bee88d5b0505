// Native Vulkan objects behind the Vulkan backend's handles (core/interop.hpp),
// adopting VkBuffers made elsewhere, and host memory registered in place
// through VK_EXT_external_memory_host (HostMemoryRegister, HostMemoryDeviceView).
#pragma once

#include <cstdint>
#include <mutex>

#include "streamexecutor/core/interop.hpp"
#include "streamexecutor/vulkan/backend.hpp"

namespace streamexecutor {

template <>
struct Interop<vulkan> {
  using NativeContext = VkDevice;
  using NativeDevice = VkPhysicalDevice;
  // The device's compute queue, which every stream of the executor submits to
  // (a stream is a timeline on it). A caller that submits to it too must hold
  // QueueMutex(executor) around vkQueueSubmit: the queue is externally synchronized.
  using NativeQueue = VkQueue;
  // The timeline semaphore of the event's latest recording (null if never recorded).
  using NativeEvent = VkSemaphore;
  using NativeMemory = VkBuffer;
  using NativeKernel = VkShaderModule;

  static VkDevice Context(const vulkan::ExecutorState& executor) { return executor.impl->device; }
  static VkPhysicalDevice Device(const vulkan::ExecutorState& executor) { return executor.impl->physical; }
  static VkQueue Queue(const vulkan::StreamHandle& stream) { return stream ? stream->executor->queue : VK_NULL_HANDLE; }
  static VkSemaphore EventOf(const vulkan::EventHandle& event) {
    if (event.state == nullptr) return VK_NULL_HANDLE;
    std::lock_guard<std::mutex> lock(event.state->mutex);
    return event.state->timeline != nullptr ? event.state->timeline->semaphore : VK_NULL_HANDLE;
  }
  static VkBuffer Memory(const DeviceMemoryBase& memory) {
    const auto* buffer = static_cast<const vulkan_detail::Buffer*>(memory.opaque());
    return buffer != nullptr ? buffer->buffer : VK_NULL_HANDLE;
  }
  static VkShaderModule Kernel(const vulkan::KernelHandle& kernel) {
    return kernel.impl != nullptr ? kernel.impl->shader : VK_NULL_HANDLE;
  }
  // A Lockable (lock(), unlock()): hold it around your vkQueueSubmit on Queue().
  static streamexecutor::detail::SpinLock& QueueMutex(const vulkan::ExecutorState& executor) {
    return executor.impl->queue_mutex;
  }

  // A buffer of this device, usable for storage and transfers both ways; the
  // caller keeps it and its memory alive until ForgetDeviceMemory.
  static StatusOr<DeviceMemoryBase> AdoptMemory(vulkan::ExecutorState& executor, VkBuffer native, std::uint64_t bytes) {
    if (native == VK_NULL_HANDLE) {
      return MakeError(ErrorCode::kInvalidArgument, "AdoptDeviceMemory on {}: the VkBuffer is null",
                       executor.impl->label);
    }
    vulkan_detail::Executor& e = *executor.impl;
    std::lock_guard<std::mutex> lock(e.mutex);
    if (auto it = e.by_handle.find(native); it != e.by_handle.end()) {
      ++it->second->adoptions;  // the core refuses it: ForgetMemory follows
      return DeviceMemoryBase(it->second, bytes);
    }
    auto* buffer = new (std::nothrow) vulkan_detail::Buffer{native, VK_NULL_HANDLE, bytes, nullptr, false, 1};
    if (buffer == nullptr)
      return MakeError(ErrorCode::kResourceExhausted, "AdoptDeviceMemory on {}: out of memory", e.label);
    try {
      e.by_handle.emplace(native, buffer);
    } catch (...) {
      delete buffer;
      return MakeError(ErrorCode::kResourceExhausted, "AdoptDeviceMemory on {}: out of memory", e.label);
    }
    return DeviceMemoryBase(buffer, bytes);
  }
  static Status ForgetMemory(vulkan::ExecutorState& executor, DeviceMemoryBase memory) {
    auto* buffer = static_cast<vulkan_detail::Buffer*>(memory.opaque());
    vulkan_detail::Executor& e = *executor.impl;
    std::lock_guard<std::mutex> lock(e.mutex);
    if (--buffer->adoptions > 0 || buffer->owned) return Status();
    e.by_handle.erase(buffer->buffer);
    delete buffer;
    return Status();
  }

  // The caller's memory imported as device memory in place. The import
  // covers whole pages (minImportedHostPointerAlignment); the buffer starts
  // at `ptr` within them.
  static Status HostRegister(vulkan::ExecutorState& executor, void* ptr, std::uint64_t bytes) {
    vulkan_detail::Executor& e = *executor.impl;
    if (e.host_pointer_alignment == 0 || e.api.vkGetMemoryHostPointerPropertiesEXT == nullptr) {
      return MakeError(ErrorCode::kUnimplemented,
                       "HostMemoryRegister on {}: the device has no VK_EXT_external_memory_host, so it cannot use "
                       "host memory in place (copies from it still work, staged)",
                       e.label);
    }
    const std::uint64_t align = e.host_pointer_alignment;
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    const std::uintptr_t first = address / align * align;
    const std::uint64_t offset = address - first;
    const std::uint64_t span = (offset + bytes + align - 1) / align * align;
    void* base = reinterpret_cast<void*>(first);
    VkMemoryHostPointerPropertiesEXT properties{};
    properties.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
    if (VkResult r = e.api.vkGetMemoryHostPointerPropertiesEXT(
            e.device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, base, &properties);
        r != VK_SUCCESS) {
      return vulkan_detail::VkError("vkGetMemoryHostPointerPropertiesEXT", r, "registering {} bytes at {} on {}", bytes,
                                    ptr, e.label);
    }
    vulkan_detail::Buffer buffer;
    buffer.size = bytes;
    // The buffer is bound at an aligned offset at or below `ptr`; views add
    // the rest (base_offset). 256 covers every device's buffer alignment.
    const std::uint64_t bind = offset / 256 * 256;
    buffer.base_offset = offset - bind;
    VkExternalMemoryBufferCreateInfo external{};
    external.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
    external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkBufferCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.pNext = &external;
    info.size = buffer.base_offset + bytes;
    info.usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (VkResult r = e.api.vkCreateBuffer(e.device, &info, nullptr, &buffer.buffer); r != VK_SUCCESS)
      return vulkan_detail::VkError("vkCreateBuffer", r, "registering {} bytes at {} on {}", bytes, ptr, e.label);
    VkMemoryRequirements requirements{};
    e.api.vkGetBufferMemoryRequirements(e.device, buffer.buffer, &requirements);
    const std::uint32_t types = properties.memoryTypeBits & requirements.memoryTypeBits;
    if (types == 0 || bind % requirements.alignment != 0) {
      e.api.vkDestroyBuffer(e.device, buffer.buffer, nullptr);
      return MakeError(ErrorCode::kUnimplemented, "HostMemoryRegister on {}: {} bytes at {} cannot be imported ({})",
                       e.label, bytes, ptr,
                       types == 0 ? "no memory type both holds a buffer and imports host memory"
                                  : ::streamexecutor::detail::Format("the device aligns buffers to {} bytes",
                                                                     requirements.alignment));
    }
    std::uint32_t type = 0;
    while (!(types & (1u << type))) ++type;
    VkImportMemoryHostPointerInfoEXT host_pointer{};
    host_pointer.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
    host_pointer.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    host_pointer.pHostPointer = base;
    VkMemoryAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.pNext = &host_pointer;
    allocate.allocationSize = span;
    allocate.memoryTypeIndex = type;
    VkResult r = e.api.vkAllocateMemory(e.device, &allocate, nullptr, &buffer.memory);
    if (r == VK_SUCCESS) r = e.api.vkBindBufferMemory(e.device, buffer.buffer, buffer.memory, bind);
    if (r != VK_SUCCESS) {
      e.api.vkDestroyBuffer(e.device, buffer.buffer, nullptr);
      if (buffer.memory != VK_NULL_HANDLE) e.api.vkFreeMemory(e.device, buffer.memory, nullptr);
      return vulkan_detail::VkError("vkAllocateMemory/vkBindBufferMemory (imported host pointer)", r,
                                    "registering {} bytes at {} on {}", bytes, ptr, e.label);
    }
    buffer.mapped = ptr;
    std::lock_guard<std::mutex> lock(e.mutex);
    e.registered.emplace(ptr, buffer);
    return Status();
  }
  static Status HostUnregister(vulkan::ExecutorState& executor, void* ptr) {
    vulkan_detail::Executor& e = *executor.impl;
    vulkan_detail::Buffer buffer;
    {
      std::lock_guard<std::mutex> lock(e.mutex);
      auto it = e.registered.find(ptr);
      if (it == e.registered.end()) {
        return MakeError(ErrorCode::kInvalidArgument, "HostMemoryUnregister on {}: {} is not registered", e.label, ptr);
      }
      buffer = it->second;
      e.registered.erase(it);
    }
    // Queued work may still use the import: it goes once that is done.
    vulkan_detail::DestroyWhenIdle(e, buffer, nullptr);
    return Status();
  }

  // Zero copy: the buffer over the pinned range (HostAllocate's, or the
  // import of HostRegister).
  static StatusOr<DeviceMemoryBase> HostMemoryView(vulkan::ExecutorState& executor, void* base, std::uint64_t bytes) {
    vulkan_detail::Executor& e = *executor.impl;
    std::lock_guard<std::mutex> lock(e.mutex);
    for (auto* map : {&e.pinned, &e.registered}) {
      auto it = map->find(base);
      if (it != map->end()) return DeviceMemoryBase(&it->second, bytes);
    }
    return MakeError(ErrorCode::kInternal, "HostMemoryDeviceView on {}: no pinned range starts at {}", e.label, base);
  }
  static Status ForgetHostMemoryView(vulkan::ExecutorState&, DeviceMemoryBase) { return Status(); }
};

static_assert(NativeExecutorBackend<vulkan> && NativeDeviceBackend<vulkan> && NativeStreamBackend<vulkan>);
static_assert(NativeKernelBackend<vulkan> && MemoryAdoptionBackend<vulkan>);
static_assert(HostRegistrationBackend<vulkan> && ZeroCopyBackend<vulkan>);

}  // namespace streamexecutor
