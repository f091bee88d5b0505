// Stream operations as plain values: what a Then* call asks for, before any
// backend sees it. A Stream (and the executor's synchronous calls) builds one,
// checks it with the Validate of its kind, and hands it to the backend's
// Submit overload for that kind. One Validate per kind is the single place
// where a copy or a fill is checked, whoever submits it.
//
// Operations hold views and pointers, never ownership: they are built on the
// caller's stack and consumed by Submit in the same call.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/sticky_status.hpp"

namespace streamexecutor {

// Where unified memory is wanted (Stream::ThenPrefetch, MemAdvise): the
// executor's device, or the host.
enum class MemoryLocation { kDevice, kHost };

// Usage hints for unified memory (MemAdvise), as CUDA's cuMemAdvise has them:
// pages mostly read (copied to each reader), a preferred location, and who
// else accesses them (mapped there, not migrated on access).
enum class MemoryAdvice {
  kSetReadMostly,
  kUnsetReadMostly,
  kSetPreferredLocation,
  kUnsetPreferredLocation,
  kSetAccessedBy,
  kUnsetAccessedBy,
};

}  // namespace streamexecutor

namespace streamexecutor::op {

struct MemcpyH2D {
  DeviceMemoryBase dst;
  const void* src;
  std::uint64_t bytes;
};
struct MemcpyD2H {
  void* dst;
  DeviceMemoryBase src;
  std::uint64_t bytes;
};
struct MemcpyD2D {
  DeviceMemoryBase dst;
  DeviceMemoryBase src;
  std::uint64_t bytes;
};
// Every byte of the range set to `value`.
struct Memset8 {
  DeviceMemoryBase dst;
  std::uint8_t value;
  std::uint64_t bytes;
};
// Whole 32-bit words: `bytes` and the view's offset are multiples of 4.
struct Memset32 {
  DeviceMemoryBase dst;
  std::uint32_t pattern;
  std::uint64_t bytes;
};

// Moves the pages of `memory` toward `to`, a hint in stream order.
struct Prefetch {
  DeviceMemoryBase memory;
  MemoryLocation to;
};

// A host callable, run in stream order. Held as the caller passed it (F is
// deduced like a forwarding reference): Submit copies an lvalue and moves an
// rvalue into the backend's own storage.
template <typename F>
struct HostCall {
  using Callable = F;
  F&& callable;
};
template <typename T>
inline constexpr bool IsHostCall = false;
template <typename F>
inline constexpr bool IsHostCall<HostCall<F>> = true;

// Hands `callback` to `submit` as a HostCall: as it is when it returns void,
// wrapped (detail::StatusHostCallback) when it returns a Status, so that no
// backend needs to know that callbacks may fail.
template <typename Callback, typename Submit>
Status SubmitHostCall(Callback&& callback, Submit&& submit) {
  if constexpr (streamexecutor::detail::kHostCallbackReturnsStatus<Callback>) {
    using Wrapped = streamexecutor::detail::StatusHostCallback<std::decay_t<Callback>>;
    return submit(HostCall<Wrapped>{Wrapped{std::forward<Callback>(callback)}});
  } else {
    return submit(HostCall<Callback>{std::forward<Callback>(callback)});
  }
}

// Event recording and waiting, on the backend's native event.
template <typename EventHandle>
struct RecordEvent {
  EventHandle* event;
};
template <typename EventHandle>
struct WaitEvent {
  EventHandle* event;
};

// Lets a stream of one backend go on past a wait that another backend's
// event releases (Stream<A>::ThenWaitFor(Event<B>*)). `fire(context)` is
// called exactly once, from any thread (a driver's callback thread
// included), and calls nothing but the waiting backend's own release.
struct ForeignRelease {
  void (*fire)(void* context) noexcept = nullptr;
  void* context = nullptr;
  void operator()() const noexcept { fire(context); }
};

// A wait on something outside the stream's driver: Submit queues it and
// fills `*release`, which the caller must fire exactly once (the waiting
// stream hangs until it does). Nothing is queued when Submit fails.
struct WaitForeign {
  ForeignRelease* release;
};

// A kernel launch: the loaded kernel, the grid, and the arguments already
// packed as the backend receives them (see PackedArgs).
template <typename KernelHandle, typename... Params>
struct Launch {
  const KernelHandle& kernel;
  const ThreadDim& threads;
  const BlockDim& blocks;
  const PackedArgs<Params...>& args;
  const std::string* kernel_name;  // interned by the executor: outlives the launch
};
// Another command buffer's operations recorded into a command buffer, as
// they are now (CommandBuffer::ThenSubmit).
template <typename CommandBufferHandle>
struct Nested {
  const CommandBufferHandle* buffer;
};
// Work a library enqueues on the backend's native stream itself (the canned
// families on OpenCL and CUDA): `call(*stream_handle)`. `buffers` lists every
// view it uses, for the liveness checks of a command buffer that holds it.
template <typename F>
struct LibraryCall {
  std::string_view caller;
  std::span<const DeviceMemoryBase> buffers;
  F& call;
};
// Another command buffer's operations run once if, or again while, the
// int32 at `condition` is non-zero when read on the device: before the body,
// and for a While after each iteration (CommandBuffer::ThenIf, ThenWhile).
enum class ConditionalKind : std::uint8_t { kIf, kWhile };
template <typename CommandBufferHandle>
struct Conditional {
  ConditionalKind kind;
  const DeviceMemoryBase& condition;
  const CommandBufferHandle* body;
};

template <typename T>
inline constexpr bool IsLaunch = false;
template <typename KernelHandle, typename... Params>
inline constexpr bool IsLaunch<Launch<KernelHandle, Params...>> = true;

// A typed launch for a backend that takes the caller's arguments themselves
// (ArgumentLaunchBackend): everything of Launch but the packed arguments.
template <typename KernelHandle>
struct LaunchSite {
  const KernelHandle& kernel;
  const ThreadDim& threads;
  const BlockDim& blocks;
  const std::string* kernel_name;
};

// A launch of a PreparedLaunch (core/prepared_launch.hpp), for a backend that
// can skip setting unchanged arguments. `stamp` and `changed` belong to the
// PreparedLaunch; the backend reads and updates them only while it holds the
// kernel's argument lock, so that streams launching one PreparedLaunch at
// once stay consistent.
template <typename KernelHandle, typename... Params>
struct PreparedLaunch {
  const Launch<KernelHandle, Params...>& launch;
  std::uint64_t& stamp;    // the backend's record of the argument setting it was last part of; 0: never
  std::uint64_t& changed;  // bit I: argument I changed (Set<I>) since the backend last set it
};

// ---- Validation ------------------------------------------------------------
// `Executor` is the StreamExecutor<B> the operation will run on; `caller`
// names the public call in messages ("ThenMemcpy (H2D)", "SynchronousMemZero").

namespace detail {
inline Status FirstError(Status first, Status second) { return first.ok() ? std::move(second) : std::move(first); }
}  // namespace detail

template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const MemcpyH2D& copy) {
  return detail::FirstError(executor.CheckHostPointer(caller, copy.src, copy.bytes),
                            executor.CheckDeviceRange(caller, "destination", copy.dst, copy.bytes));
}
template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const MemcpyD2H& copy) {
  return detail::FirstError(executor.CheckHostPointer(caller, copy.dst, copy.bytes),
                            executor.CheckDeviceRange(caller, "source", copy.src, copy.bytes));
}
template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const MemcpyD2D& copy) {
  return detail::FirstError(executor.CheckDeviceRange(caller, "source", copy.src, copy.bytes),
                            executor.CheckDeviceRange(caller, "destination", copy.dst, copy.bytes));
}
template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const Memset8& fill) {
  return executor.CheckDeviceRange(caller, "destination", fill.dst, fill.bytes);
}
template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const Memset32& fill) {
  return detail::FirstError(executor.CheckMemset32(caller, fill.dst, fill.bytes),
                            executor.CheckDeviceRange(caller, "destination", fill.dst, fill.bytes));
}
template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const Prefetch& prefetch) {
  return executor.CheckDeviceRange(caller, "given", prefetch.memory, prefetch.memory.size());
}

}  // namespace streamexecutor::op
