// se::opencl's native objects (core/interop.hpp): the executor's cl_context
// and cl_device_id, a stream's cl_command_queue, an event's latest marker, a
// view's cl_mem, a kernel's cl_kernel; adoption of a cl_command_queue or a
// cl_mem created elsewhere; registration of host memory as pinned, and the
// pinning buffer as the device view of that memory (HostMemoryDeviceView).
//
// Adopted objects are retained while wrapped and released once when the
// wrapper lets go (Stream destruction, ForgetDeviceMemory, or the
// executor's destruction): OpenCL's reference counts are how a library shares
// an object without taking it, and the caller's own reference is never
// released by us.
#pragma once

#include <cstdint>
#include <mutex>

#include "streamexecutor/core/interop.hpp"
#include "streamexecutor/opencl/backend.hpp"

namespace streamexecutor {

template <>
struct Interop<opencl> {
  using NativeContext = cl_context;
  using NativeDevice = cl_device_id;
  using NativeQueue = cl_command_queue;
  using NativeEvent = cl_event;
  using NativeMemory = cl_mem;
  using NativeKernel = cl_kernel;

  static cl_context Context(const opencl::ExecutorState& executor) { return executor.impl->context; }
  static cl_device_id Device(const opencl::ExecutorState& executor) { return executor.impl->device; }
  static cl_command_queue Queue(const opencl::StreamHandle& stream) { return stream ? stream->queue : nullptr; }
  // Borrowed: the Event releases it when it is recorded again or destroyed.
  static cl_event EventOf(const opencl::EventHandle& event) {
    if (event.state == nullptr) return nullptr;
    const opencl_detail::EventRef latest(event.state->Acquire());
    return latest.event;
  }
  static cl_mem Memory(const DeviceMemoryBase& memory) { return opencl_detail::Buffer(memory); }
  static cl_kernel Kernel(const opencl::KernelHandle& kernel) { return kernel.impl ? kernel.impl->kernel : nullptr; }

  // An in-order queue of the executor's context and device. Out-of-order
  // queues are refused: a Stream's operations rely on queue order.
  static Status AdoptStream(opencl::ExecutorState& executor, cl_command_queue queue, opencl::StreamHandle& stream) {
    opencl_detail::Executor& e = *executor.impl;
    if (queue == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument, "Stream::InitAdopted on {}: the cl_command_queue is null", e.label);
    }
    cl_context context = nullptr;
    cl_device_id device = nullptr;
    cl_command_queue_properties properties = 0;
    cl_int error = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(context), &context, nullptr);
    if (error == CL_SUCCESS) error = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(device), &device, nullptr);
    if (error == CL_SUCCESS) {
      error = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof(properties), &properties, nullptr);
    }
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clGetCommandQueueInfo", error, "adopting a cl_command_queue on {}", e.label);
    }
    if (context != e.context || device != e.device) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "Stream::InitAdopted on {}: the cl_command_queue belongs to {} (CL_QUEUE_CONTEXT {}, "
                       "CL_QUEUE_DEVICE {}), not to this executor's context {} and device {}",
                       e.label, context != e.context ? "another context" : "another device",
                       static_cast<void*>(context), static_cast<void*>(device), static_cast<void*>(e.context),
                       static_cast<void*>(e.device));
    }
    if (properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "Stream::InitAdopted on {}: the cl_command_queue is out-of-order "
                       "(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE); a Stream runs its work in order",
                       e.label);
    }
    auto* state = new (std::nothrow) opencl_detail::StreamState();
    if (state == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "Stream::InitAdopted on {}: out of memory", e.label);
    }
    error = clRetainCommandQueue(queue);
    if (error != CL_SUCCESS) {
      delete state;
      return opencl_detail::ClError("clRetainCommandQueue", error, "adopting a cl_command_queue on {}", e.label);
    }
    state->executor = &e;
    state->queue = queue;  // DestroyStream releases the reference just taken
    state->adopted = true;
    state->profiling = (properties & CL_QUEUE_PROFILING_ENABLE) != 0;
    stream = state;
    return Status();
  }

  // A buffer of the executor's context holding at least `bytes`. Slices of
  // it work like slices of the executor's own buffers: copies and fills at
  // any offset, kernel arguments at a nonzero offset through a sub-buffer
  // (offsets aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN; a sub-buffer cannot be
  // sliced again for a kernel, so adopt its parent to slice).
  static StatusOr<DeviceMemoryBase> AdoptMemory(opencl::ExecutorState& executor, cl_mem buffer, std::uint64_t bytes) {
    opencl_detail::Executor& e = *executor.impl;
    if (buffer == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument, "AdoptDeviceMemory on {}: the cl_mem is null", e.label);
    }
    cl_mem_object_type type = 0;
    cl_context context = nullptr;
    std::size_t size = 0;
    cl_int error = clGetMemObjectInfo(buffer, CL_MEM_TYPE, sizeof(type), &type, nullptr);
    if (error == CL_SUCCESS) error = clGetMemObjectInfo(buffer, CL_MEM_CONTEXT, sizeof(context), &context, nullptr);
    if (error == CL_SUCCESS) error = clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof(size), &size, nullptr);
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clGetMemObjectInfo", error, "adopting a cl_mem on {}", e.label);
    }
    if (type != CL_MEM_OBJECT_BUFFER) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "AdoptDeviceMemory on {}: the cl_mem is not a buffer (CL_MEM_TYPE {:#x}); only buffers are "
                       "DeviceMemory",
                       e.label, type);
    }
    if (context != e.context) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "AdoptDeviceMemory on {}: the cl_mem belongs to another context (CL_MEM_CONTEXT {}, this "
                       "executor's is {})",
                       e.label, static_cast<void*>(context), static_cast<void*>(e.context));
    }
    if (bytes > size) {
      return MakeError(ErrorCode::kOutOfRange,
                       "AdoptDeviceMemory on {}: {} bytes were asked for, but the cl_mem holds {} (CL_MEM_SIZE)",
                       e.label, bytes, size);
    }
    error = clRetainMemObject(buffer);
    if (error != CL_SUCCESS)
      return opencl_detail::ClError("clRetainMemObject", error, "adopting a cl_mem on {}", e.label);
    return DeviceMemoryBase(buffer, bytes);
  }
  static Status ForgetMemory(opencl::ExecutorState& executor, DeviceMemoryBase memory) {
    cl_mem buffer = opencl_detail::Buffer(memory);
    executor.impl->ForgetSubBuffers(buffer);  // they hold the buffer too
    const cl_int error = clReleaseMemObject(buffer);
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clReleaseMemObject", error, "forgetting an adopted cl_mem on {}",
                                    executor.impl->label);
    }
    return Status();
  }

  // OpenCL has no call that page-locks caller memory. A CL_MEM_USE_HOST_PTR
  // buffer over it, mapped while registered, is the portable request: drivers
  // that can (NVIDIA, AMD) pin such memory for the buffer's life; CPU devices
  // such as PoCL use the memory in place. Recorded with the executor's
  // HostAllocate buffers, so that Unregister is their unmap-and-release.
  static Status HostRegister(opencl::ExecutorState& executor, void* ptr, std::uint64_t bytes) {
    opencl_detail::Executor& e = *executor.impl;
    cl_int error = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(e.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, ptr, &error);
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clCreateBuffer(CL_MEM_USE_HOST_PTR)", error, "registering {} bytes at {} on {}",
                                    bytes, ptr, e.label);
    }
    void* mapped = clEnqueueMapBuffer(e.sync_queue, buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr,
                                      nullptr, &error);
    if (error != CL_SUCCESS) {
      clReleaseMemObject(buffer);
      return opencl_detail::ClError("clEnqueueMapBuffer", error, "registering {} bytes at {} on {}", bytes, ptr,
                                    e.label);
    }
    if (mapped != ptr) {
      // OpenCL 1.2 and later map a USE_HOST_PTR buffer at its host pointer;
      // a driver that stages through a copy gives nothing to register.
      clEnqueueUnmapMemObject(e.sync_queue, buffer, mapped, 0, nullptr, nullptr);
      clFinish(e.sync_queue);
      clReleaseMemObject(buffer);
      return MakeError(ErrorCode::kUnimplemented,
                       "HostMemoryRegister on {}: the driver mapped the CL_MEM_USE_HOST_PTR buffer at {} instead of "
                       "the registered {}: it copies instead of using the memory in place",
                       e.label, mapped, ptr);
    }
    try {
      std::lock_guard<std::mutex> lock(e.mutex);
      e.pinned.emplace(ptr, buffer);
    } catch (...) {
      clEnqueueUnmapMemObject(e.sync_queue, buffer, mapped, 0, nullptr, nullptr);
      clFinish(e.sync_queue);
      clReleaseMemObject(buffer);
      return MakeError(ErrorCode::kResourceExhausted, "HostMemoryRegister on {}: out of host memory", e.label);
    }
    return Status();
  }
  static Status HostUnregister(opencl::ExecutorState& executor, void* ptr) {
    return opencl::HostDeallocate(executor, ptr);
  }

  // Zero copy: the buffer that pins the range (HostAllocate's
  // CL_MEM_ALLOC_HOST_PTR buffer, HostRegister's CL_MEM_USE_HOST_PTR one),
  // which stays mapped while the range is pinned. OpenCL calls a region
  // mapped for writing undefined to commands until it is unmapped; only a
  // device that shares one memory with the host (CL_DEVICE_HOST_UNIFIED_MEMORY:
  // CPU devices such as PoCL, integrated GPUs) keeps the buffer's storage in
  // the mapped memory itself, so that kernels and the host see the same
  // bytes. Any other device might give kernels a copy: refused.
  static StatusOr<DeviceMemoryBase> HostMemoryView(opencl::ExecutorState& executor, void* base, std::uint64_t bytes) {
    opencl_detail::Executor& e = *executor.impl;
    cl_bool unified = CL_FALSE;
    const cl_int error = clGetDeviceInfo(e.device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(unified), &unified, nullptr);
    if (error != CL_SUCCESS && error != CL_INVALID_VALUE) {
      return opencl_detail::ClError("clGetDeviceInfo(CL_DEVICE_HOST_UNIFIED_MEMORY)", error,
                                    "before giving kernels pinned host memory on {}", e.label);
    }
    if (error != CL_SUCCESS || unified != CL_TRUE) {
      return MakeError(ErrorCode::kUnimplemented,
                       "HostMemoryDeviceView on {}: the device does not share memory with the host "
                       "(CL_DEVICE_HOST_UNIFIED_MEMORY is {}), so its kernels may work on a copy of mapped pinned "
                       "memory; copy it (ThenMemcpy) or use unified memory (TryAllocateUnifiedArray) instead",
                       e.label, error == CL_SUCCESS ? "false" : "not reported");
    }
    std::lock_guard<std::mutex> lock(e.mutex);
    auto it = e.pinned.find(base);
    if (it == e.pinned.end()) {
      return MakeError(ErrorCode::kInternal, "HostMemoryDeviceView on {}: no buffer pins the range at {}", e.label,
                       base);
    }
    return DeviceMemoryBase(it->second, bytes);
  }
  // Its slices' sub-buffers hold the buffer, and their cache is keyed by the
  // cl_mem, which a later buffer may reuse.
  static Status ForgetHostMemoryView(opencl::ExecutorState& executor, DeviceMemoryBase view) {
    executor.impl->ForgetSubBuffers(opencl_detail::Buffer(view));
    return Status();
  }
};

static_assert(StreamAdoptionBackend<opencl> && MemoryAdoptionBackend<opencl> && HostRegistrationBackend<opencl>);
static_assert(ZeroCopyBackend<opencl>);
static_assert(NativeExecutorBackend<opencl> && NativeDeviceBackend<opencl> && NativeKernelBackend<opencl>);

}  // namespace streamexecutor
