// se::host's (and every HostBackend's) native objects (core/interop.hpp): the worker pool that runs
// every host executor's work, a stream's command queue, an event, and a
// view's address. Host memory adopted as DeviceMemory is any memory the
// process can address; host memory needs no pinning, so registration only
// records the range (the executor still checks it like on other backends),
// and the device view of pinned memory (HostMemoryDeviceView) is the memory.
// There is no native device or kernel object: the device is the CPU, a
// kernel is the C++ function the spec names.
#pragma once

#include <cstddef>
#include <cstdint>

#include "streamexecutor/core/interop.hpp"
#include "streamexecutor/host/backend.hpp"

namespace streamexecutor {

template <host_detail::HostMachinery B>
struct Interop<B> {
  using NativeContext = host_detail::Pool*;
  using NativeQueue = host_detail::HostStream*;
  using NativeEvent = host_detail::HostEvent*;
  using NativeMemory = void*;

  static host_detail::Pool* Context(const typename B::ExecutorState& executor) { return executor.pool; }
  static host_detail::HostStream* Queue(const typename B::StreamHandle& stream) { return stream; }
  static host_detail::HostEvent* EventOf(const typename B::EventHandle& event) { return event; }
  static void* Memory(const DeviceMemoryBase& memory) { return B::Address(memory); }

  // The caller keeps the memory allocated until it is forgotten and the
  // work queued on it has run (ForgetMemory cannot defer anything: the
  // memory is not ours to free).
  static StatusOr<DeviceMemoryBase> AdoptMemory(typename B::ExecutorState& executor, void* ptr, std::uint64_t bytes) {
    if (ptr == nullptr) {
      return MakeError(ErrorCode::kInvalidArgument, "AdoptDeviceMemory on {}: the pointer is null", executor.label);
    }
    return DeviceMemoryBase(ptr, bytes);
  }
  static Status ForgetMemory(typename B::ExecutorState&, DeviceMemoryBase) { return Status(); }

  static Status HostRegister(typename B::ExecutorState&, void*, std::uint64_t) { return Status(); }
  static Status HostUnregister(typename B::ExecutorState&, void*) { return Status(); }

  // Zero copy is the memory itself: host kernels dereference any host memory.
  static StatusOr<DeviceMemoryBase> HostMemoryView(typename B::ExecutorState&, void* base, std::uint64_t bytes) {
    return DeviceMemoryBase(base, bytes);
  }
  static Status ForgetHostMemoryView(typename B::ExecutorState&, DeviceMemoryBase) { return Status(); }
};

static_assert(MemoryAdoptionBackend<host> && HostRegistrationBackend<host> && NativeExecutorBackend<host>);
static_assert(ZeroCopyBackend<host>);

}  // namespace streamexecutor
