// se::cuda's native objects (core/interop.hpp): the executor's primary
// CUcontext and CUdevice, a stream's CUstream, an event's CUevent, a view's
// CUdeviceptr, a kernel's CUfunction; adoption of a CUstream or a CUdeviceptr
// created elsewhere; cuMemHostRegister for HostMemoryRegister, and the mapped
// device pointer of pinned memory for HostMemoryDeviceView.
//
// CUDA has no reference counts: an adopted CUstream is never destroyed by
// the Stream wrapping it (which still synchronizes it before it goes), and
// adopted memory is never freed, only unregistered. Both must belong to the
// executor's primary context, the one the CUDA runtime uses, so memory from
// cudaMalloc and streams from cudaStreamCreate on that device qualify.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "streamexecutor/core/interop.hpp"
#include "streamexecutor/cuda/backend.hpp"

namespace streamexecutor {

template <>
struct Interop<cuda> {
  using NativeContext = CUcontext;
  using NativeDevice = CUdevice;
  using NativeQueue = CUstream;
  using NativeEvent = CUevent;
  using NativeMemory = CUdeviceptr;
  using NativeKernel = CUfunction;

  static CUcontext Context(const cuda::ExecutorState& executor) { return executor.context; }
  static CUdevice Device(const cuda::ExecutorState& executor) { return executor.device; }
  static CUstream Queue(const cuda::StreamHandle& stream) { return stream ? stream->stream : nullptr; }
  static CUevent EventOf(const cuda::EventHandle& event) { return event.event; }
  static CUdeviceptr Memory(const DeviceMemoryBase& memory) { return cuda::Address(memory); }
  static CUfunction Kernel(const cuda::KernelHandle& kernel) { return kernel.function; }

  static Status AdoptStream(cuda::ExecutorState& executor, CUstream native, cuda::StreamHandle& stream) {
    // The special handles name whichever stream is the thread's default: no
    // one stream to wrap, and nothing that could be checked against our context.
    if (native == nullptr || native == CU_STREAM_LEGACY || native == CU_STREAM_PER_THREAD) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "Stream::InitAdopted on cuda:{}: the CUstream is {}; adopt a stream made by cuStreamCreate",
                       executor.ordinal,
                       native == nullptr ? "null (the legacy default stream)" : "a special default-stream handle");
    }
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    CUcontext owner = nullptr;
    if (const CUresult r = executor.api->cuStreamGetCtx(native, &owner); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuStreamGetCtx", "adopting a CUstream on cuda:{}", executor.ordinal);
    }
    if (owner != executor.context) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "Stream::InitAdopted on cuda:{}: the CUstream belongs to context {}, not to this executor's "
                       "primary context {}",
                       executor.ordinal, static_cast<void*>(owner), static_cast<void*>(executor.context));
    }
    auto state = std::make_unique<cuda_detail::StreamState>();
    state->api = executor.api;
    state->context = executor.context;
    state->ordinal = executor.ordinal;
    state->stream = native;
    state->wait_rings = executor.wait_rings;
    state->adopted = true;  // DestroyStream synchronizes it but leaves it to its owner
    stream = state.release();
    return Status();
  }

  // Memory of the executor's context (cuMemAlloc, cudaMalloc, managed
  // memory), `bytes` of which lie inside one allocation from `native` on.
  static StatusOr<DeviceMemoryBase> AdoptMemory(cuda::ExecutorState& executor, CUdeviceptr native,
                                                std::uint64_t bytes) {
    if (native == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "AdoptDeviceMemory on cuda:{}: the CUdeviceptr is 0",
                       executor.ordinal);
    }
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    CUcontext owner = nullptr;
    if (const CUresult r = executor.api->cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, native);
        r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_CONTEXT)",
                                 "adopting CUdeviceptr {:#x} on cuda:{} (is it CUDA memory?)", native,
                                 executor.ordinal);
    }
    if (owner != executor.context) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "AdoptDeviceMemory on cuda:{}: CUdeviceptr {:#x} belongs to context {}, not to this "
                       "executor's primary context {}",
                       executor.ordinal, native, static_cast<void*>(owner), static_cast<void*>(executor.context));
    }
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (const CUresult r = executor.api->cuMemGetAddressRange(&base, &size, native); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemGetAddressRange", "adopting CUdeviceptr {:#x} on cuda:{}", native,
                                 executor.ordinal);
    }
    const std::uint64_t available = size - (native - base);
    if (bytes > available) {
      return MakeError(ErrorCode::kOutOfRange,
                       "AdoptDeviceMemory on cuda:{}: {} bytes from CUdeviceptr {:#x} run past its allocation ({} "
                       "bytes at {:#x}, {} of them from the pointer on)",
                       executor.ordinal, bytes, native, size, base, available);
    }
    return DeviceMemoryBase(reinterpret_cast<void*>(static_cast<std::uintptr_t>(native)), bytes);
  }
  static Status ForgetMemory(cuda::ExecutorState&, DeviceMemoryBase) { return Status(); }

  // Pins existing host memory (cuMemHostRegister), e.g. a std::vector's
  // buffer, portable and mapped for kernels (HostMemoryDeviceView).
  static Status HostRegister(cuda::ExecutorState& executor, void* ptr, std::uint64_t bytes) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    const unsigned flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP;
    if (const CUresult r = executor.api->cuMemHostRegister(ptr, bytes, flags); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemHostRegister", "pinning {} bytes at {} for cuda:{}", bytes, ptr,
                                 executor.ordinal);
    }
    return Status();
  }
  static Status HostUnregister(cuda::ExecutorState& executor, void* ptr) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = executor.api->cuMemHostUnregister(ptr); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemHostUnregister", "unpinning {} for cuda:{}", ptr, executor.ordinal);
    }
    return Status();
  }

  // Zero copy: the device pointer of a pinned range, which HostAllocate and
  // HostRegister map (DEVICEMAP). Under unified addressing it may equal the
  // host address; kernels must be given this one either way.
  static StatusOr<DeviceMemoryBase> HostMemoryView(cuda::ExecutorState& executor, void* base, std::uint64_t bytes) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    CUdeviceptr device = 0;
    if (const CUresult r = executor.api->cuMemHostGetDevicePointer(&device, base, 0); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemHostGetDevicePointer",
                                 "mapping {} bytes of pinned host memory at {} for kernels on cuda:{} (a device "
                                 "without CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY cannot)",
                                 bytes, base, executor.ordinal);
    }
    return DeviceMemoryBase(reinterpret_cast<void*>(static_cast<std::uintptr_t>(device)), bytes);
  }
  static Status ForgetHostMemoryView(cuda::ExecutorState&, DeviceMemoryBase) { return Status(); }
};

static_assert(StreamAdoptionBackend<cuda> && MemoryAdoptionBackend<cuda> && HostRegistrationBackend<cuda>);
static_assert(ZeroCopyBackend<cuda>);
static_assert(NativeExecutorBackend<cuda> && NativeDeviceBackend<cuda> && NativeKernelBackend<cuda>);

}  // namespace streamexecutor
