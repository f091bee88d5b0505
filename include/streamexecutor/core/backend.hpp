// The Backend concept: what a backend tag type (se::host, se::opencl, se::cuda)
// provides so that the core templates can drive it. A backend is a struct of
// native handle types and static functions; the core's Platform, StreamExecutor,
// Stream, Event and Timer own the handles and call these functions directly,
// so every call compiles to a direct call into the backend's driver code.
//
// What a backend provides is split into capabilities, one small concept each
// (platform, memory, streams, events, kernels); Backend is the ones every
// backend has. Optional features (unified memory, pinned host memory, peer
// access) are further concepts that the core checks with `if constexpr` or
// `requires`, so a missing one is a compile-time fact.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "streamexecutor/core/device_description.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

namespace detail {
struct ConceptProbeCallback {
  void operator()() const {}
};
}  // namespace detail

// Each capability is a small concept; Backend is the conjunction of the ones
// every backend has. A failed Backend<B> check names the capability missing.

// Driver-wide state and one device.
template <typename B>
concept PlatformBackend = requires {
  { B::kName } -> std::convertible_to<std::string_view>;
  typename B::PlatformState;  // driver-wide state: loaded library, device list
  typename B::ExecutorState;  // one device: context, program/module cache
} && requires(typename B::PlatformState& platform, typename B::ExecutorState& executor, int ordinal) {
  // A failed init (no driver) is reported, and leaves zero devices.
  { B::InitPlatform(platform) } -> std::same_as<Status>;
  { B::DeviceCount(platform) } -> std::same_as<int>;
  { B::OpenExecutor(platform, ordinal, executor) } -> std::same_as<Status>;
  { B::CloseExecutor(executor) } -> std::same_as<void>;
  { B::Describe(executor) } -> std::same_as<DeviceDescription>;
  // The canned-operation plugins an executor uses unless told otherwise.
  { B::DefaultPlugins() } -> std::same_as<PluginConfig>;
};

// Device memory: allocations the core registers and checks.
template <typename B>
concept MemoryBackend =
    PlatformBackend<B> && requires(typename B::ExecutorState& executor, std::uint64_t bytes, DeviceMemoryBase memory) {
      { B::Allocate(executor, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
      { B::Deallocate(executor, memory) } -> std::same_as<Status>;
    };

// In-order queues, and the copies, fills and host calls they run. The
// synchronous operations are the core's (submit, then synchronize).
template <typename B>
concept StreamBackend =
    PlatformBackend<B> && requires { typename B::StreamHandle; } &&
    requires(typename B::ExecutorState& executor, typename B::StreamHandle& stream, const op::MemcpyH2D& h2d,
             const op::MemcpyD2H& d2h, const op::MemcpyD2D& d2d, const op::Memset8& fill8, const op::Memset32& fill32,
             const op::HostCall<detail::ConceptProbeCallback>& host_call) {
      { B::CreateStream(executor, stream) } -> std::same_as<Status>;
      { B::DestroyStream(executor, stream) } -> std::same_as<void>;
      { B::SynchronizeStream(stream) } -> std::same_as<Status>;
      { B::Submit(stream, h2d) } -> std::same_as<Status>;
      { B::Submit(stream, d2h) } -> std::same_as<Status>;
      { B::Submit(stream, d2d) } -> std::same_as<Status>;
      { B::Submit(stream, fill8) } -> std::same_as<Status>;
      { B::Submit(stream, fill32) } -> std::same_as<Status>;
      { B::Submit(stream, host_call) } -> std::same_as<Status>;
    };

// Events: a record is waited on by any stream of the same executor.
template <typename B>
concept EventBackend = StreamBackend<B> && requires { typename B::EventHandle; } &&
                       requires(typename B::ExecutorState& executor, typename B::StreamHandle& stream,
                                typename B::EventHandle& event, const op::RecordEvent<typename B::EventHandle>& record,
                                const op::WaitEvent<typename B::EventHandle>& wait) {
                         { B::CreateEvent(executor, event) } -> std::same_as<Status>;
                         { B::DestroyEvent(executor, event) } -> std::same_as<void>;
                         { B::Submit(stream, record) } -> std::same_as<Status>;
                         { B::Submit(stream, wait) } -> std::same_as<Status>;
                         { B::QueryEvent(event) } -> std::same_as<StatusOr<bool>>;
                         { B::SynchronizeEvent(event) } -> std::same_as<Status>;
                         { B::ElapsedNanoseconds(event, event) } -> std::same_as<StatusOr<std::uint64_t>>;
                       };

// Kernels: loaded from a MultiKernelLoaderSpec, checked against the
// TypedKernel's parameters, launched on a stream.
template <typename B>
concept KernelBackend =
    StreamBackend<B> && requires { typename B::KernelHandle; } &&
    std::is_trivially_copyable_v<typename B::KernelHandle> &&
    requires(typename B::ExecutorState& executor, typename B::StreamHandle& stream, typename B::KernelHandle& kernel,
             const MultiKernelLoaderSpec& spec, const op::Launch<typename B::KernelHandle>& launch) {
      // The kernel formats it loads (core/kernel_spec.hpp's kernel_formats).
      { B::kKernelFormats.size() } -> std::convertible_to<std::size_t>;
      { B::kKernelFormats[0] } -> std::convertible_to<const KernelFormat&>;
      { B::SpecKernelName(spec) } -> std::convertible_to<std::string_view>;
      { B::template LoadKernel<>(executor, spec, kernel) } -> std::same_as<Status>;
      { B::ReleaseKernel(executor, kernel) } -> std::same_as<void>;
      { B::Submit(stream, launch) } -> std::same_as<Status>;
    };

template <typename B>
concept Backend = PlatformBackend<B> && MemoryBackend<B> && StreamBackend<B> && EventBackend<B> && KernelBackend<B>;

// A backend that can run an operation on the calling thread (its memory is
// host memory): the core's synchronous calls then skip the stream round trip.
template <typename B, typename Operation>
concept InlineExecutionBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, const Operation& operation) {
      { B::ExecuteInline(executor, operation) } -> std::same_as<Status>;
    };

// A backend whose typed launch takes the caller's arguments as they were
// passed (B::SubmitArguments<Params...>(stream, op::LaunchSite, args...)) and
// packs them itself, so that the launch path holds no argument tuple in
// memory (OpenCL, CUDA). Others receive op::Launch with PackedArgs.
template <typename B>
concept ArgumentLaunchBackend = Backend<B> && requires { requires B::kLaunchesFromArguments; };

// Streams that wait on events and streams of other executors of the same
// platform (OpenCL: a user event of the waiting context, completed by the
// driver when the foreign event completes).
template <typename B>
concept CrossExecutorWaitBackend = Backend<B> && requires { requires B::kWaitsAcrossExecutors; };

// Waits between backends (Stream<A>::ThenWaitFor(Event<B>*)): the waiting
// stream A queues a wait that an op::ForeignRelease lifts, and B's event
// fires that release when its latest recording completes. Both sides use
// the drivers' own mechanisms (host completion tokens, OpenCL user events
// and event callbacks, CUDA stream memory operations and host functions):
// no thread of ours waits.
//
// NotifyWhenComplete: on success `release` fires exactly once, when the
// recording that is the event's latest at the call completes (also when
// its stream failed, so that a waiter never hangs on another stream's
// error), or at once if the event was never recorded. On failure it has
// not fired and never will.
template <typename B>
concept ForeignWaitBackend = Backend<B> && requires(typename B::StreamHandle& stream, const op::WaitForeign& wait) {
  { B::Submit(stream, wait) } -> std::same_as<Status>;
};
template <typename B>
concept EventNotifyBackend = Backend<B> && requires(typename B::ExecutorState& executor, typename B::EventHandle& event,
                                                    op::ForeignRelease release) {
  { B::NotifyWhenComplete(executor, event, release) } -> std::same_as<Status>;
};

// Memory that host code and device code can both dereference. HostAddress
// gives the host's pointer to a view of it (ScopedUnifiedMemory's
// host_ptr()), which is not the handle on every backend (OpenCL's is a cl_mem).
template <typename B>
concept UnifiedMemoryBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, std::uint64_t bytes, const DeviceMemoryBase& memory) {
      { B::AllocateUnified(executor, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
      { B::HostAddress(memory) } -> std::same_as<void*>;
    };

// Optional: moves unified memory toward where it is used next, in stream
// order (Stream::ThenPrefetch). Without it prefetching checks the memory and
// does nothing more.
template <typename B>
concept PrefetchBackend = Backend<B> && requires(typename B::StreamHandle& stream, const op::Prefetch& prefetch) {
  { B::Submit(stream, prefetch) } -> std::same_as<Status>;
};
// Optional: usage hints for unified memory (MemAdvise), applied when given.
// Without it the hints are checked and have no effect.
template <typename B>
concept MemoryAdviceBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, const DeviceMemoryBase& memory, MemoryAdvice advice,
                           MemoryLocation location) {
      { B::Advise(executor, memory, advice, location) } -> std::same_as<Status>;
    };

// Optional: the driver's own stream-ordered pools, which MemoryPool<B> uses
// instead of the library's (core/memory_pool.hpp) where HasNativePools says
// the driver and device have them. Usage as the driver counts it.
// DestroyPool frees the allocations still `outstanding` once the device has
// finished the work queued on them, then the pool.
struct NativePoolUsage {
  std::uint64_t reserved = 0;  // held from the device: in use and free
  std::uint64_t used = 0;      // in use by allocations (as the pool rounds them)
};
template <typename B>
concept NativeMemoryPoolBackend =
    Backend<B> &&
    requires(typename B::ExecutorState& executor, typename B::PoolHandle& pool, typename B::StreamHandle& stream,
             const DeviceMemoryBase& memory, std::uint64_t bytes, std::span<const DeviceMemoryBase> outstanding) {
      { B::HasNativePools(executor) } -> std::same_as<bool>;
      { B::CreatePool(executor, pool) } -> std::same_as<Status>;
      { B::DestroyPool(executor, pool, outstanding) } -> std::same_as<void>;
      { B::AllocateFromPool(stream, pool, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
      { B::FreeToPool(stream, memory) } -> std::same_as<Status>;
      { B::ReservePool(executor, pool, bytes) } -> std::same_as<Status>;
      { B::TrimPool(executor, pool, bytes) } -> std::same_as<Status>;
      { B::SetPoolReleaseThreshold(executor, pool, bytes) } -> std::same_as<Status>;
      { B::PoolUsage(executor, pool) } -> std::same_as<StatusOr<NativePoolUsage>>;
    };

// Page-locked host memory for fast, truly asynchronous copies.
template <typename B>
concept PinnedMemoryBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, std::uint64_t bytes, void* ptr) {
      { B::HostAllocate(executor, bytes) } -> std::same_as<StatusOr<void*>>;
      { B::HostDeallocate(executor, ptr) } -> std::same_as<Status>;
    };

// Direct access and copies between two devices of one platform.
template <typename B>
concept PeerAccessBackend = Backend<B> && requires(typename B::ExecutorState& a, typename B::ExecutorState& b) {
  { B::CanEnablePeerAccess(a, b) } -> std::same_as<bool>;
  { B::EnablePeerAccess(a, b) } -> std::same_as<Status>;
};

// Command buffers: copies, fills, host calls, event records and waits and
// launches recorded once into a native object (a CUDA graph, an OpenCL
// cl_command_buffer_khr, the host's packed command array), finalized, then
// submitted to any stream of the executor any number of times. Record takes
// what it needs out of the operation (the operation itself lives on the
// caller's stack); the core validates each operation before recording it and
// checks its memory again at every submission (core/command_buffer.hpp).
template <typename B>
concept CommandBufferBackend =
    Backend<B> && requires { typename B::CommandBufferHandle; } &&
    requires(typename B::ExecutorState& executor, typename B::CommandBufferHandle& buffer,
             typename B::StreamHandle& stream, const op::MemcpyH2D& h2d, const op::MemcpyD2H& d2h,
             const op::MemcpyD2D& d2d, const op::Memset8& fill8, const op::Memset32& fill32,
             const op::HostCall<detail::ConceptProbeCallback>& host_call,
             const op::RecordEvent<typename B::EventHandle>& record, const op::WaitEvent<typename B::EventHandle>& wait,
             const op::Launch<typename B::KernelHandle>& launch) {
      { B::CreateCommandBuffer(executor, buffer) } -> std::same_as<Status>;
      { B::DestroyCommandBuffer(executor, buffer) } -> std::same_as<void>;
      { B::Record(buffer, h2d) } -> std::same_as<Status>;
      { B::Record(buffer, d2h) } -> std::same_as<Status>;
      { B::Record(buffer, d2d) } -> std::same_as<Status>;
      { B::Record(buffer, fill8) } -> std::same_as<Status>;
      { B::Record(buffer, fill32) } -> std::same_as<Status>;
      { B::Record(buffer, host_call) } -> std::same_as<Status>;
      { B::Record(buffer, record) } -> std::same_as<Status>;
      { B::Record(buffer, wait) } -> std::same_as<Status>;
      { B::Record(buffer, launch) } -> std::same_as<Status>;
      { B::FinalizeCommandBuffer(buffer) } -> std::same_as<Status>;
      { B::SubmitCommandBuffer(stream, buffer) } -> std::same_as<Status>;
    };
// Optional: a command buffer whose operations may run at once where they do
// not depend on each other (CommandBuffer::After): the next operation
// recorded depends on the index-th operations given, not on all before it.
// Without it, a backend runs the recording order, which keeps any dependencies.
template <typename B>
concept CommandBufferDependencyBackend =
    CommandBufferBackend<B> &&
    requires(typename B::CommandBufferHandle& buffer, std::span<const std::size_t> dependencies) {
      { B::SetNextDependencies(buffer, dependencies) } -> std::same_as<Status>;
    };
// Optional: a copy of a command buffer (CommandBuffer::Clone), operation for
// operation, so that updates find the same indices in it.
template <typename B>
concept CommandBufferCloneBackend = CommandBufferBackend<B> && requires(typename B::ExecutorState& executor,
                                                                        const typename B::CommandBufferHandle& source,
                                                                        typename B::CommandBufferHandle& clone) {
  { B::CloneCommandBuffer(executor, source, clone) } -> std::same_as<Status>;
};
// Optional: another buffer's operations recorded as one (CommandBuffer::ThenSubmit).
template <typename B>
concept CommandBufferNestingBackend =
    CommandBufferBackend<B> &&
    requires(typename B::CommandBufferHandle& buffer, const op::Nested<typename B::CommandBufferHandle>& nested) {
      { B::Record(buffer, nested) } -> std::same_as<Status>;
    };
// Optional: a buffer's operations run if, or while, a device value is
// non-zero (CommandBuffer::ThenIf, ThenWhile). The body holds device work
// only (the core refuses host copies, callbacks and events in it).
template <typename B>
concept CommandBufferConditionalBackend =
    CommandBufferBackend<B> &&
    requires(typename B::CommandBufferHandle& buffer, const op::Conditional<typename B::CommandBufferHandle>& branch) {
      { B::Record(buffer, branch) } -> std::same_as<Status>;
    };
// Optional: new values for a recorded launch, copy or fill (the index-th
// operation recorded), before or after Finalize, for later submissions.
template <typename B>
concept CommandBufferUpdateBackend =
    CommandBufferBackend<B> &&
    requires(typename B::CommandBufferHandle& buffer, std::size_t index, const op::MemcpyH2D& h2d,
             const op::MemcpyD2H& d2h, const op::MemcpyD2D& d2d, const op::Memset8& fill8, const op::Memset32& fill32,
             const op::Launch<typename B::KernelHandle>& launch) {
      { B::Update(buffer, index, h2d) } -> std::same_as<Status>;
      { B::Update(buffer, index, d2h) } -> std::same_as<Status>;
      { B::Update(buffer, index, d2d) } -> std::same_as<Status>;
      { B::Update(buffer, index, fill8) } -> std::same_as<Status>;
      { B::Update(buffer, index, fill32) } -> std::same_as<Status>;
      { B::Update(buffer, index, launch) } -> std::same_as<Status>;
    };

// Events that cost more when they can be timed (CUDA: an event without
// CU_EVENT_DISABLE_TIMING): plain events are made without timing, and
// Timers ask for timing ones.
template <typename B>
concept TimingEventBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, typename B::EventHandle& event) {
      { B::CreateTimingEvent(executor, event) } -> std::same_as<Status>;
    };

// Streams that time their work only on request (OpenCL queue profiling costs
// every command): a stream's first Timer turns it on.
template <typename B>
concept TimingStreamBackend = Backend<B> && requires(typename B::StreamHandle& stream) {
  { B::EnableTiming(stream) } -> std::same_as<Status>;
};

// Events whose time is read on the host's steady clock (the host backend's):
// the steady_clock time, since its epoch, at which the event's latest
// recording ran. Traces (core/stream_trace.hpp) then need no anchor.
template <typename B>
concept HostClockEventBackend = Backend<B> && requires(typename B::EventHandle& event) {
  { B::EventSteadyClockNanoseconds(event) } -> std::same_as<StatusOr<std::int64_t>>;
};

// A driver with a name API for its queues, which its tools show (NVTX's
// stream names on CUDA): Stream::SetName passes the name on.
template <typename B>
concept StreamNameBackend = Backend<B> && requires(typename B::StreamHandle& stream, const std::string& name) {
  { B::SetStreamName(stream, name) } -> std::same_as<void>;
};

// ---- Capability constants ------------------------------------------------------
// Differences of behaviour that are not an extra operation are constants a
// backend may declare; Capabilities<B> gives each with the value a backend
// gets when it says nothing. Code that differs between backends asks these,
// never a backend's name.
template <typename B>
struct Capabilities {
  // Host callbacks may call into the backend: enqueue on a stream, record,
  // synchronize another stream. CUDA forbids CUDA calls inside a host
  // function (cuLaunchHostFunc), so its callbacks get FAILED_PRECONDITION.
  static constexpr bool kCallbacksMayEnqueue = [] {
    if constexpr (requires { B::kCallbacksMayEnqueue; })
      return bool{B::kCallbacksMayEnqueue};
    else
      return true;
  }();
  // Work already queued behind a host callback that fails is skipped. CUDA's
  // driver cannot cancel launches, copies and fills queued before the
  // callback ran, so there they still run; later callbacks are skipped and
  // the stream reports the failure on every backend.
  static constexpr bool kCallbackFailureSkipsQueuedWork = [] {
    if constexpr (requires { B::kCallbackFailureSkipsQueuedWork; })
      return bool{B::kCallbackFailureSkipsQueuedWork};
    else
      return true;
  }();
  // Every operation has run when its Then* call returns (a serial backend):
  // a queued operation is never pending, so tests of pending work do not apply.
  static constexpr bool kRunsOnEnqueue = [] {
    if constexpr (requires { B::kRunsOnEnqueue; })
      return bool{B::kRunsOnEnqueue};
    else
      return false;
  }();
};

// ---- Index of the capabilities declared elsewhere ------------------------------
// Each is next to the core code that uses it:
//   core/copy.hpp            DeviceMemoryIsHostMemoryBackend, PeerCopyBackend
//   core/interop.hpp         NativeExecutorBackend, NativeDeviceBackend, NativeStreamBackend,
//                            NativeKernelBackend, StreamAdoptionBackend, MemoryAdoptionBackend,
//                            HostRegistrationBackend, ZeroCopyBackend
//   core/ipc.hpp             IpcMemoryBackend, IpcEventBackend
//   core/launch_attributes.hpp LaunchAttributeBackend
//   core/occupancy.hpp       KernelAttributesBackend, DriverOccupancyBackend
//   core/prepared_launch.hpp PreparedLaunchBackend
//   core/stream_memory.hpp   StreamMemoryOperationBackend
//   core/stream_priority.hpp StreamPriorityBackend
//   core/synchronous.hpp     StreamIdleQueryBackend, CallbackThreadBackend, StreamHostWaitBackend
//   core/untyped_launch.hpp  UntypedLaunchBackend
//   collectives/operations.hpp CollectiveBackend (the collectives family, <streamexecutor/collectives.hpp>)
// tests/core/capability_index_test.py keeps this list complete.

}  // namespace streamexecutor
