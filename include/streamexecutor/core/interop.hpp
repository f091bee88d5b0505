// Raw handle interop: the native objects behind executors, streams, events,
// memory and kernels, and adoption of objects created by other code.
//
// The native side of each backend lives in <backend>/interop.hpp as a
// specialization of Interop<B> (kept out of backend.hpp, which holds the
// driver calls of the core's own paths). The core reaches it only through
// the concepts below, so a backend without, say, stream adoption leaves that
// specialization member out and the call does not compile.
//
// One scheme for every backend: free functions named after the role,
// se::NativeContext(executor), se::NativeDevice(executor),
// se::NativeQueue(stream), se::NativeEvent(event), se::NativeMemory(executor,
// view), se::NativeKernel(executor, kernel), whose return types are the
// backend's own (cl_command_queue, CUstream, ...). Every accessor borrows: the
// handle stays owned by the streamexecutor object it came from.
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <string_view>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/kernel.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/type_name.hpp"

namespace streamexecutor {

template <Backend B>
class Stream;
template <Backend B>
class Event;

// Specialized by each backend in <backend>/interop.hpp; the primary template
// has no members, so every capability below is false for an unknown backend.
template <typename B>
struct Interop {};

// Native context and device of an executor.
template <typename B>
concept NativeExecutorBackend = Backend<B> && requires(const typename B::ExecutorState& executor) {
  { Interop<B>::Context(executor) } -> std::same_as<typename Interop<B>::NativeContext>;
};
template <typename B>
concept NativeDeviceBackend = Backend<B> && requires(const typename B::ExecutorState& executor) {
  { Interop<B>::Device(executor) } -> std::same_as<typename Interop<B>::NativeDevice>;
};
// Native queue of a stream, event of an event, memory of a view.
template <typename B>
concept NativeStreamBackend =
    Backend<B> && requires(const typename B::StreamHandle& stream, const typename B::EventHandle& event,
                           const DeviceMemoryBase& memory) {
      { Interop<B>::Queue(stream) } -> std::same_as<typename Interop<B>::NativeQueue>;
      { Interop<B>::EventOf(event) } -> std::same_as<typename Interop<B>::NativeEvent>;
      { Interop<B>::Memory(memory) } -> std::same_as<typename Interop<B>::NativeMemory>;
    };
template <typename B>
concept NativeKernelBackend = Backend<B> && requires(const typename B::KernelHandle& kernel) {
  { Interop<B>::Kernel(kernel) } -> std::same_as<typename Interop<B>::NativeKernel>;
};

// Wrapping a queue created elsewhere as a Stream (Stream::InitAdopted). The
// backend checks that the queue belongs to the executor's device; the queue
// is never destroyed by the Stream (OpenCL: the Stream holds a reference of
// its own, taken here and dropped at its destruction).
template <typename B>
concept StreamAdoptionBackend =
    NativeStreamBackend<B> && requires(typename B::ExecutorState& executor, typename Interop<B>::NativeQueue queue,
                                       typename B::StreamHandle& stream) {
      { Interop<B>::AdoptStream(executor, queue, stream) } -> std::same_as<Status>;
    };

// Registering memory allocated elsewhere as DeviceMemory of an executor
// (AdoptDeviceMemory). AdoptMemory checks the handle and takes what the
// backend needs to use it (OpenCL: a reference); ForgetMemory gives that back
// and never frees the memory itself.
template <typename B>
concept MemoryAdoptionBackend =
    NativeStreamBackend<B> && requires(typename B::ExecutorState& executor, typename Interop<B>::NativeMemory native,
                                       std::uint64_t bytes, DeviceMemoryBase memory) {
      { Interop<B>::AdoptMemory(executor, native, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
      { Interop<B>::ForgetMemory(executor, memory) } -> std::same_as<Status>;
    };

// Page-locking host memory the caller allocated (HostMemoryRegister).
template <typename B>
concept HostRegistrationBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, void* ptr, std::uint64_t bytes) {
      { Interop<B>::HostRegister(executor, ptr, bytes) } -> std::same_as<Status>;
      { Interop<B>::HostUnregister(executor, ptr) } -> std::same_as<Status>;
    };

// Zero copy: kernels reading and writing pinned host memory in place
// (HostMemoryDeviceView, core/pinned_memory.hpp). HostMemoryView gives the
// device's view of a whole pinned range [base, base+bytes): CUDA the device
// pointer of the mapped memory (cuMemHostGetDevicePointer), OpenCL the buffer
// that pins it, host the memory itself; a device that cannot reach host
// memory in place says so (UNIMPLEMENTED). ForgetHostMemoryView drops what
// the backend keeps for such a view (OpenCL: its slices' sub-buffers) before
// the range is released.
template <typename B>
concept ZeroCopyBackend = Backend<B> && requires(typename B::ExecutorState& executor, void* base, std::uint64_t bytes,
                                                 DeviceMemoryBase view) {
  { Interop<B>::HostMemoryView(executor, base, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
  { Interop<B>::ForgetHostMemoryView(executor, view) } -> std::same_as<Status>;
};

// ---- Accessors ---------------------------------------------------------------

// cl_context / CUcontext (the device's primary context) / the host worker pool.
template <NativeExecutorBackend B>
typename Interop<B>::NativeContext NativeContext(const StreamExecutor<B>& executor) {
  return Interop<B>::Context(executor.native_state());
}
// cl_device_id / CUdevice.
template <NativeDeviceBackend B>
typename Interop<B>::NativeDevice NativeDevice(const StreamExecutor<B>& executor) {
  return Interop<B>::Device(executor.native_state());
}
// cl_command_queue / CUstream / the host command queue; null before Init().
// Work the caller enqueues on it directly is ordered with the stream's own
// work, but a stream's sticky error does not see it.
template <NativeStreamBackend B>
typename Interop<B>::NativeQueue NativeQueue(Stream<B>& stream) {
  return Interop<B>::Queue(stream.native_handle());
}
// The native event of the latest recording (OpenCL: a marker, replaced by
// every recording and released with it: clRetainEvent it to keep it; null
// before the first recording) or the event itself (CUDA: one CUevent for the
// Event's life). Null before Init().
template <NativeStreamBackend B>
typename Interop<B>::NativeEvent NativeEvent(Event<B>& event) {
  return Interop<B>::EventOf(event.native_handle());
}
// The native memory of a live view of `executor`: OpenCL the cl_mem of the
// whole allocation (a cl_mem cannot be offset: add view.offset() yourself),
// CUDA the CUdeviceptr of the view's first byte, host its address.
template <NativeStreamBackend B>
StatusOr<typename Interop<B>::NativeMemory> NativeMemory(const StreamExecutor<B>& executor,
                                                         const DeviceMemoryBase& view) {
  STREAMEXECUTOR_RETURN_IF_ERROR(executor.CheckDeviceRange("NativeMemory", "argument", view, view.size()));
  return Interop<B>::Memory(view);
}
// cl_kernel / CUfunction of a kernel loaded by `executor`. OpenCL: do not set
// its arguments while a stream may launch it (launches set them under a lock
// of their own).
template <NativeKernelBackend B>
StatusOr<typename Interop<B>::NativeKernel> NativeKernel(const StreamExecutor<B>& executor, const KernelBase& kernel) {
  if (!kernel.IsLoaded()) {
    return MakeError(ErrorCode::kFailedPrecondition, "NativeKernel on {}: the kernel is not loaded",
                     executor.DeviceLabel());
  }
  if (kernel.executor() != &executor) {
    return MakeError(ErrorCode::kInvalidArgument, "NativeKernel on {}: kernel '{}' was loaded by another executor",
                     executor.DeviceLabel(), kernel.name());
  }
  return Interop<B>::Kernel(kernel.template handle<typename B::KernelHandle>());
}

namespace detail {

// StreamExecutor's adoption calls (a base class, so that executor.hpp only
// gains the record bookkeeping they share with allocations).
template <typename B>
class AdoptionApi {
 public:
  // Registers `count` elements of memory allocated elsewhere (a cl_mem, a
  // CUdeviceptr, a host pointer) with the executor, so that copies, fills and
  // launches accept it like its own allocations. The executor never frees it:
  // Deallocate refuses it, ForgetDeviceMemory unregisters it, and the
  // executor forgets what is left when it is destroyed. The caller frees the
  // memory after forgetting it and after the work that uses it is done.
  // (The native type goes through I so that a backend without Interop<B>
  // still instantiates the executor.)
  template <typename T, typename I = Interop<B>>
    requires MemoryAdoptionBackend<B>
  StatusOr<DeviceMemory<T>> AdoptDeviceMemory(typename I::NativeMemory native, std::uint64_t count) {
    StreamExecutor<B>& self = Self();
    if (count == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "AdoptDeviceMemory on {}: zero elements of {}", self.DeviceLabel(),
                       detail::TypeName<T>());
    }
    if (count > ~std::uint64_t{0} / sizeof(T)) {
      return MakeError(ErrorCode::kInvalidArgument, "AdoptDeviceMemory on {}: {} elements of {} overflow 64 bits",
                       self.DeviceLabel(), count, detail::TypeName<T>());
    }
    const std::uint64_t bytes = count * sizeof(T);
    StatusOr<DeviceMemoryBase> adopted = Interop<B>::AdoptMemory(self.native_state(), native, bytes);
    if (!adopted.ok()) return adopted.status();
    forget_.store(&Interop<B>::ForgetMemory, std::memory_order_release);
    StatusOr<DeviceMemoryBase> registered =
        self.RegisterAllocation(adopted.value().opaque(), bytes, RecordKind::kAdopted);
    if (!registered.ok()) {
      Interop<B>::ForgetMemory(self.native_state(), adopted.value()).IgnoreError();
      return registered.status();
    }
    return DeviceMemory<T>(registered.value());
  }

  // Unregisters adopted memory without freeing it, and nulls the view.
  // Memory this executor allocated is refused (Deallocate it), as are slices
  // and views that are not, or no longer, registered.
  Status ForgetDeviceMemory(DeviceMemoryBase* memory) {
    StreamExecutor<B>& self = Self();
    if (memory == nullptr || memory->IsNull()) {
      return MakeError(ErrorCode::kInvalidArgument, "ForgetDeviceMemory on {}: the DeviceMemory is {}",
                       self.DeviceLabel(), memory == nullptr ? "a null pointer" : DescribeNullMemory(*memory));
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(self.RetireRecord("ForgetDeviceMemory", *memory, RecordKind::kAdopted));
    const DeviceMemoryBase whole(memory->opaque(), memory->size());
    *memory = DeviceMemoryBase();
    return forget_.load(std::memory_order_acquire)(self.native_state(), whole);
  }

 protected:
  // For the executor's destructor.
  void ForgetAllAdopted() {
    const Forget forget = forget_.load(std::memory_order_acquire);
    if (forget == nullptr) return;
    StreamExecutor<B>& self = Self();
    for (const DeviceMemoryBase& left : self.RetireAll(RecordKind::kAdopted))
      forget(self.native_state(), left).IgnoreError();
  }

 private:
  StreamExecutor<B>& Self() { return static_cast<StreamExecutor<B>&>(*this); }

  // Set by the first adoption; a pointer, so that the destructor forgets
  // without naming the Interop<B> specialization (never instantiated for
  // executors that adopted nothing).
  using Forget = Status (*)(typename B::ExecutorState&, DeviceMemoryBase);
  std::atomic<Forget> forget_{nullptr};
};

}  // namespace detail
}  // namespace streamexecutor
