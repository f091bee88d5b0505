// Stream<B>: an in-order queue of device work with the seed's fluent API.
//
// Every Then* call enqueues and returns at once. The first error sticks: later
// Then* calls do nothing and BlockHostUntilDone returns that error. Errors that
// happen on the device side (a kernel that throws on the host backend, a fault
// on CUDA) surface at BlockHostUntilDone.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/canned_members.hpp"
#include "streamexecutor/core/command_buffer.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/foreign_wait.hpp"
#include "streamexecutor/core/launch_attributes.hpp"
#include "streamexecutor/core/launch_check.hpp"
#include "streamexecutor/core/memory_pool.hpp"
#include "streamexecutor/core/prepared_launch.hpp"
#include "streamexecutor/core/stream_memory.hpp"
#include "streamexecutor/core/stream_priority.hpp"
#include "streamexecutor/core/stream_trace.hpp"
#include "streamexecutor/core/trace.hpp"

namespace streamexecutor {

namespace detail {
// What a stream captures into on a backend without command buffers: the
// same calls as CommandBuffer<B>'s, never made, since such a stream has no
// BeginCapture and its capture pointer stays null.
struct NoCapture {
  struct Capturer {
    void* stream = nullptr;
    void (*abandon)(void* stream) = nullptr;
  };
  bool ok() const { return true; }
  const Status& status() const { return status_; }
  Status NotCapturable(std::string_view) const { return Status(); }
  void FailCapture(Status) {}
  void SetCapturer(Capturer) {}
  template <typename... Args>
  void ThenLaunch(Args&&...) {}
  template <typename Event>
  void ThenRecordEvent(Event*) {}
  template <typename Waited>
  void ThenWaitFor(Waited*) {}
  template <typename Callback>
  void ThenDoHostCallback(Callback&&) {}
  template <typename Buffer>
  void ThenSubmit(Buffer*) {}
  template <typename Operation>
  void CaptureCanned(std::string_view, std::span<const DeviceMemoryBase>, const Operation&,
                     std::shared_ptr<const void>) {}
  template <typename Operation>
  void Capture(std::string_view, const Operation&) {}

 private:
  Status status_;
};
template <typename B>
struct CaptureTarget {
  using type = NoCapture;
};
template <CommandBufferBackend B>
struct CaptureTarget<B> {
  using type = CommandBuffer<B>;
};
}  // namespace detail

template <Backend B>
class Stream : public detail::CannedMembers<Stream<B>> {
 public:
  explicit Stream(StreamExecutor<B>* parent) : parent_(parent) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  // Moving takes the driver queue with its queued work, which goes on
  // running; the moved-from Stream is like one never initialized (Init
  // makes it a new queue of the same executor). Waits for a synchronous
  // operation on another thread that is using the queue right then.
  Stream(Stream&& other) noexcept : parent_(other.parent_) { TakeFrom(other); }
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      Release();
      parent_ = other.parent_;
      TakeFrom(other);
    }
    return *this;
  }
  // Waits for enqueued work: buffers and kernels it uses may die right after.
  ~Stream() { Release(); }

  Stream& Init() { return Init(StreamPriority::kNormal); }
  // At a priority (core/stream_priority.hpp): kLow and kHigh need a
  // StreamPriorityBackend, and are UNIMPLEMENTED elsewhere.
  Stream& Init(StreamPriority priority) {
    if (parent_ == nullptr) {
      return Fail(Status(ErrorCode::kInvalidArgument,
                         "Stream::Init: the stream was constructed with a null "
                         "StreamExecutor"));
    }
    if (initialized_) return Fail(ErrorCode::kFailedPrecondition, "Stream::Init: the stream is already initialized");
    if (Status s = detail::CreateStreamAt<B>(parent_->native_state(), handle_, priority, Label()); !s.ok()) {
      return Fail(std::move(s));
    }
    if (Status s = B::CreateEvent(parent_->native_state(), join_event_); !s.ok()) {
      B::DestroyStream(parent_->native_state(), handle_);
      return Fail(std::move(s));
    }
    priority_ = priority;
    return Initialized();
  }
  // Like Init, on a queue that other code created (core/interop.hpp): the
  // queue must belong to the executor's device and stays the caller's, who
  // destroys it after this Stream is gone (the destructor still waits for
  // the work enqueued through it, as for any stream).
  template <StreamAdoptionBackend Backend = B>
  Stream& InitAdopted(typename Interop<Backend>::NativeQueue queue) {
    if (parent_ == nullptr || initialized_) return Init();  // the same errors as Init
    if (Status s = Interop<B>::AdoptStream(parent_->native_state(), queue, handle_); !s.ok()) return Fail(std::move(s));
    if (Status s = B::CreateEvent(parent_->native_state(), join_event_); !s.ok()) {
      B::DestroyStream(parent_->native_state(), handle_);
      return Fail(std::move(s));
    }
    return Initialized();
  }
  Stream& InitWithTimer(Timer<B>* timer, StreamPriority priority = StreamPriority::kNormal) {
    Init(priority);
    if (!ok()) return *this;
    if (timer == nullptr) return Fail(Null("InitWithTimer", "timer"));
    return Check(timer->Init());
  }
  // What Init was asked for; kNormal before Init and for an adopted queue,
  // which keeps the priority its creator gave it.
  StreamPriority priority() const { return priority_; }

  // Fails the stream with `status` unless it has failed already: for work
  // queued outside the Then* calls (ThenCopyBetween's driver calls).
  Stream& FailWith(Status status) { return Fail(std::move(status)); }

  // A stream that was never initialized (or was moved from) is not ok: code
  // that checks ok() before enqueuing must not take it for a usable one.
  bool ok() const { return initialized_ && status_.ok(); }
  bool initialized() const { return initialized_; }
  // The first error, or, before Init, FAILED_PRECONDITION saying so. That
  // one is shared and names no device, so that building a Stream formats
  // nothing; the Then* calls and BlockHostUntilDone record their own.
  const Status& status() const {
    if (!initialized_ && status_.ok()) return NeverInitialized();
    return status_;
  }
  StreamExecutor<B>* parent() const { return parent_; }
  typename B::StreamHandle& native_handle() { return handle_; }

  // A name for traces (docs/tracing.md) and, where the driver has a name
  // API, for its tools (StreamNameBackend). Any time, initialized or not.
  Stream& SetName(std::string_view name) {
    name_ = std::string(name);
    if constexpr (StreamNameBackend<B>) {
      if (initialized_) B::SetStreamName(handle_, name_);
    }
    if (trace_ != nullptr) trace_->Rename(name_);
    return *this;
  }
  const std::string& name() const { return name_; }
  // What the stream did while the latest trace recorded (core/trace.hpp).
  TraceCounters trace_counters() const { return trace_ != nullptr ? trace_->Counters() : TraceCounters(); }

  // ---- Kernel launch ---------------------------------------------------------

  // Always inlined: a launch is a handful of compares and the driver call, and
  // left to itself an -O2 compiler keeps it out of line in the caller's unit.
  template <typename... Params, typename... Args>
  [[gnu::always_inline]] Stream& ThenLaunch(ThreadDim thread_dims, BlockDim block_dims,
                                            const TypedKernel<Params...>& kernel, Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "ThenLaunch: the number of arguments differs from the TypedKernel's parameter count");
    if constexpr (sizeof...(Params) == sizeof...(Args)) {
      static_assert(
          detail::CheckArguments<std::tuple<Params...>, std::tuple<Args&&...>>(std::index_sequence_for<Params...>{}) ||
          true);
      if (!status_.ok()) return *this;
      // Cleared while something observes (trace::detail::LaunchSwitch): tracing
      // costs this path nothing while off; RefuseLaunch then traces the launch.
      if (!trace::detail::IsSet(plain_) || !detail::LaunchIsValid(*parent_, thread_dims, block_dims, kernel, args...))
          [[unlikely]] {
        if (capture_ != nullptr) {
          CaptureLaunch(thread_dims.x, thread_dims.y, thread_dims.z, block_dims.x, block_dims.y, block_dims.z, kernel,
                        std::forward<Args>(args)...);
          return *this;
        }
        // Fails the stream saying why, or lets memory of a peer through (core/peer_access.hpp).
        if (!RefuseLaunch(thread_dims.x, thread_dims.y, thread_dims.z, block_dims.x, block_dims.y, block_dims.z, kernel,
                          args...)) {
          return *this;
        }
      }
      if constexpr (ArgumentLaunchBackend<B>) {
        const op::LaunchSite<typename B::KernelHandle> site{kernel.template handle<typename B::KernelHandle>(),
                                                            thread_dims, block_dims, kernel.interned_name()};
        if (Status s = B::template SubmitArguments<Params...>(handle_, site, args...); !s.ok()) [[unlikely]] {
          return Fail(std::move(s));
        }
      } else {
        const PackedArgs<Params...> packed{detail::PackOne<Params>(static_cast<Args&&>(args))...};
        const op::Launch<typename B::KernelHandle, Params...> launch{kernel.template handle<typename B::KernelHandle>(),
                                                                     thread_dims, block_dims, packed,
                                                                     kernel.interned_name()};
        if (Status s = B::Submit(handle_, launch); !s.ok()) [[unlikely]]
          return Fail(std::move(s));
      }
    }
    return *this;
  }

 private:
  template <typename... Params, typename... Args>
  Status SubmitLaunch(const ThreadDim& thread_dims, const BlockDim& block_dims, const TypedKernel<Params...>& kernel,
                      Args&&... args) {
    if constexpr (sizeof...(Params) == sizeof...(Args)) {
      if constexpr (ArgumentLaunchBackend<B>) {
        const op::LaunchSite<typename B::KernelHandle> site{kernel.template handle<typename B::KernelHandle>(),
                                                            thread_dims, block_dims, kernel.interned_name()};
        return B::template SubmitArguments<Params...>(handle_, site, args...);
      } else {
        const PackedArgs<Params...> packed{detail::PackOne<Params>(static_cast<Args&&>(args))...};
        const op::Launch<typename B::KernelHandle, Params...> launch{kernel.template handle<typename B::KernelHandle>(),
                                                                     thread_dims, block_dims, packed,
                                                                     kernel.interned_name()};
        return B::Submit(handle_, launch);
      }
    } else {
      return Status();
    }
  }

 public:
  // A launch with attributes (core/launch_attributes.hpp): cooperative, in
  // clusters, programmatic. The checks above, then the backend's own.
  template <typename... Params, typename... Args>
  Stream& ThenLaunch(const LaunchAttributes& attributes, ThreadDim thread_dims, BlockDim block_dims,
                     const TypedKernel<Params...>& kernel, Args&&... args) {
    if (attributes.none()) return ThenLaunch(thread_dims, block_dims, kernel, std::forward<Args>(args)...);
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "ThenLaunch: the number of arguments differs from the TypedKernel's parameter count");
    if (!Ready("ThenLaunch with launch attributes")) return *this;
    if (!detail::LaunchIsValid(*parent_, thread_dims, block_dims, kernel, args...) &&
        !RefuseLaunch(thread_dims.x, thread_dims.y, thread_dims.z, block_dims.x, block_dims.y, block_dims.z, kernel,
                      args...)) {
      return *this;
    }
    if constexpr (LaunchAttributeBackend<B>) {
      if (Status s = detail::CheckClusterShape(attributes, block_dims, kernel.name(), Label()); !s.ok()) {
        return Fail(std::move(s));
      }
      if (Status s =
              B::CheckLaunchAttributes(parent_->native_state(), attributes, thread_dims, block_dims, kernel.name());
          !s.ok()) {
        return Fail(std::move(s));
      }
      const op::LaunchSite<typename B::KernelHandle> site{kernel.template handle<typename B::KernelHandle>(),
                                                          thread_dims, block_dims, kernel.interned_name()};
      return Check(Enqueue(LaunchOperation(thread_dims, block_dims, kernel.name()), [&] {
        return B::template SubmitWithAttributes<Params...>(handle_, site, attributes, args...);
      }));
    } else {
      return Fail(detail::UnsupportedLaunchAttributes<B>(attributes, kernel.name(), Label()));
    }
  }

  // A launch bound once (core/prepared_launch.hpp): the same run-time checks
  // as above, without packing the arguments again.
  template <typename... Params>
  Stream& ThenLaunch(PreparedLaunch<Params...>& launch) {
    if (!Ready("ThenLaunch")) return *this;
    return Check(Enqueue(LaunchOperation(launch.threads(), launch.blocks(), launch.kernel().name()),
                         [&] { return launch.template SubmitOn<B>(*parent_, handle_); }));
  }

  // A launch typed at run time (core/kernel_args.hpp): `args` are checked
  // against the parameter list read when `kernel` was loaded.
  Stream& ThenLaunch(ThreadDim thread_dims, BlockDim block_dims, const UntypedKernel& kernel, const KernelArgs& args)
    requires UntypedLaunchBackend<B>
  {
    if (!Ready("ThenLaunch")) return *this;
    if (Status s = detail::CheckUntypedLaunch(*parent_, thread_dims, block_dims, kernel, args); !s.ok()) {
      return Fail(std::move(s));
    }
    return Check(Enqueue(LaunchOperation(thread_dims, block_dims, kernel.name()), [&] {
      return B::Submit(
          handle_, op::UntypedLaunch<typename B::KernelHandle>{kernel.template handle<typename B::KernelHandle>(),
                                                               thread_dims, block_dims, args, kernel.interned_name()});
    }));
  }

  // ---- Copies and fills ------------------------------------------------------

  template <typename T>
  Stream& ThenMemcpyH2D(std::span<const std::type_identity_t<T>> host_src, DeviceMemory<T>* device_dst) {
    if (!Admit("ThenMemcpyH2D")) return *this;
    if (device_dst == nullptr) return Fail(Null("ThenMemcpyH2D", "destination"));
    if (Status s = parent_->template CheckElementCounts<T>("ThenMemcpyH2D", host_src.size(), *device_dst); !s.ok()) {
      return Fail(std::move(s));
    }
    return CopyH2D("ThenMemcpyH2D", device_dst, host_src.data(), host_src.size_bytes());
  }
  template <typename T>
  Stream& ThenMemcpyD2H(const DeviceMemory<T>& device_src, std::span<std::type_identity_t<T>> host_dst) {
    if (!Admit("ThenMemcpyD2H")) return *this;
    if (Status s = parent_->template CheckElementCounts<T>("ThenMemcpyD2H", device_src, host_dst.size()); !s.ok()) {
      return Fail(std::move(s));
    }
    return CopyD2H("ThenMemcpyD2H", host_dst.data(), device_src, device_src.size());
  }
  template <typename T>
  Stream& ThenMemcpyD2D(DeviceMemory<T>* device_dst, const DeviceMemory<T>& device_src) {
    if (!Admit("ThenMemcpyD2D")) return *this;
    if (device_dst == nullptr) return Fail(Null("ThenMemcpyD2D", "destination"));
    if (Status s = parent_->template CheckElementCounts<T>("ThenMemcpyD2D", device_src, *device_dst); !s.ok()) {
      return Fail(std::move(s));
    }
    return CopyD2D("ThenMemcpyD2D", device_dst, device_src, device_src.size());
  }
  Stream& ThenMemcpyD2D(DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return CopyD2D("ThenMemcpyD2D", device_dst, device_src, size);
  }

  // Byte forms (seed spellings): H2D, D2H, D2D.
  Stream& ThenMemcpy(DeviceMemoryBase* device_dst, const void* host_src, std::uint64_t size) {
    return CopyH2D("ThenMemcpy (H2D)", device_dst, host_src, size);
  }
  Stream& ThenMemcpy(void* host_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return CopyD2H("ThenMemcpy (D2H)", host_dst, device_src, size);
  }
  Stream& ThenMemcpy(DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return CopyD2D("ThenMemcpy (D2D)", device_dst, device_src, size);
  }

  Stream& ThenMemZero(DeviceMemoryBase* location, std::uint64_t size) {
    constexpr std::string_view caller = "ThenMemZero";
    if (!Admit(caller)) return *this;
    if (location == nullptr) return Fail(Null(caller, "destination"));
    return Then(caller, op::Memset8{*location, 0, size});
  }
  Stream& ThenMemset32(DeviceMemoryBase* location, std::uint32_t pattern, std::uint64_t size) {
    constexpr std::string_view caller = "ThenMemset32";
    if (!Admit(caller)) return *this;
    if (location == nullptr) return Fail(Null(caller, "destination"));
    return Then(caller, op::Memset32{*location, pattern, size});
  }

  // Moves unified memory toward `to` ahead of its use there, in stream order:
  // a hint, results are the same without it (docs/api.md: PrefetchBackend).
  Stream& ThenPrefetch(const DeviceMemoryBase& memory, MemoryLocation to = MemoryLocation::kDevice) {
    constexpr std::string_view caller = "ThenPrefetch";
    if (!Ready(caller)) return *this;
    if constexpr (PrefetchBackend<B>) {
      return Then(caller, op::Prefetch{memory, to});
    } else {
      return Check(op::Validate(*parent_, caller, op::Prefetch{memory, to}));
    }
  }

  // Stream memory operations (core/stream_memory.hpp): wait until the first
  // element of `word` meets `condition` against `value`; write `value` to it.
  template <detail::StreamMemoryWord T>
  Stream& ThenWaitValue(const DeviceMemory<T>& word, std::type_identity_t<T> value,
                        WaitCondition condition = WaitCondition::kGreaterOrEqual) {
    return ThenStreamMemory("ThenWaitValue", op::WaitValue{word, detail::WordBits(value), condition, sizeof(T) == 8});
  }
  template <detail::StreamMemoryWord T>
  Stream& ThenWriteValue(DeviceMemory<T>* word, std::type_identity_t<T> value) {
    if (word == nullptr) return Admit("ThenWriteValue") ? Fail(Null("ThenWriteValue", "word")) : *this;
    return ThenStreamMemory("ThenWriteValue", op::WriteValue{*word, detail::WordBits(value), sizeof(T) == 8});
  }

  // ---- Stream-ordered allocation (core/memory_pool.hpp) -----------------------

  // `element_count` elements of T from `pool` (the executor's default pool
  // when null), usable at once by later work on this stream and by other
  // streams after an event recorded here. On error `*memory` is null.
  template <typename T>
  Stream& ThenAllocate(std::uint64_t element_count, DeviceMemory<T>* memory, MemoryPool<B>* pool = nullptr) {
    if (memory == nullptr) return Fail(Null("ThenAllocate", "DeviceMemory"));
    *memory = DeviceMemory<T>();
    if (!Ready("ThenAllocate")) return *this;
    StatusOr<DeviceMemoryBase> allocated = Status(ErrorCode::kInternal, "ThenAllocate: not run");
    const Status s = Enqueue({TraceKind::kAllocation, "ThenAllocate", element_count * sizeof(T)}, [&] {
      allocated =
          detail::AllocateInStreamOrder(parent_, pool, live_.get(), element_count, sizeof(T), detail::TypeName<T>());
      return allocated.status();
    });
    if (!s.ok()) return Fail(allocated.status());
    *memory = DeviceMemory<T>(allocated.value());
    return *this;
  }

  // The owning form: frees with ThenDeallocate on this stream when it goes
  // out of scope (or on Reset), so the stream must outlive it and stay where
  // it is. On error it holds no memory and says why (status()).
  template <typename T>
  ScopedDeviceMemory<T> ThenAllocateOwned(std::uint64_t element_count, MemoryPool<B>* pool = nullptr) {
    DeviceMemory<T> memory;
    ThenAllocate(element_count, &memory, pool);
    if (memory.IsNull()) {
      return ScopedDeviceMemory<T>(!status_.ok()         ? status_
                                   : capture_ != nullptr ? capture_->status()
                                                         : NotInitialized("ThenAllocateOwned"));
    }
    return ScopedDeviceMemory<T>(this, &DeallocateOwned, memory);
  }

  // Returns memory from ThenAllocate to its pool in stream order: work queued
  // before still uses it; the view and its copies are refused from now on.
  // Nulls `*memory`. A failed stream still returns it, to the driver.
  Stream& ThenDeallocate(DeviceMemoryBase* memory) {
    if (!initialized_) return Fail(NotInitialized("ThenDeallocate"));
    if (capture_ != nullptr) return RefuseCapture("ThenDeallocate");
    const bool failed = !status_.ok();
    return Check(Enqueue({TraceKind::kAllocation, "ThenDeallocate", memory != nullptr ? memory->size() : 0},
                         [&] { return detail::DeallocateInStreamOrder(parent_, live_.get(), failed, memory); }));
  }

  // ---- Ordering, events, timers, callbacks -----------------------------------

  Stream& ThenRecordEvent(Event<B>* event) {
    constexpr std::string_view caller = "ThenRecordEvent";
    if (!Admit(caller)) return *this;
    if (capture_ != nullptr) [[unlikely]] {
      capture_->ThenRecordEvent(event);
      return *this;
    }
    if (event == nullptr) return Fail(Null(caller, "event"));  // also tells the compiler for the store below
    if (Status s = detail::CheckEventUse(caller, "stream", *parent_, event, detail::EventUse::kRecord); !s.ok()) {
      return Fail(std::move(s));
    }
    trace::detail::Operation record{TraceKind::kRecordEvent, caller};
    record.records = &event->native_handle();
    if (Status s = Enqueue(
            record,
            [&] { return B::Submit(handle_, op::RecordEvent<typename B::EventHandle>{&event->native_handle()}); });
        !s.ok()) {
      return Fail(std::move(s));
    }
    event->recorded_.store(true, std::memory_order_release);
    return *this;
  }
  // Later work on this stream waits until `event`'s latest recording has run.
  Stream& ThenWaitFor(Event<B>* event) {
    constexpr std::string_view caller = "ThenWaitFor(Event)";
    if (!Admit(caller)) return *this;
    if (capture_ != nullptr) [[unlikely]] {
      capture_->ThenWaitFor(event);
      return *this;
    }
    if (Status s = detail::CheckEventUse(caller, "stream", *parent_, event, detail::EventUse::kWait); !s.ok()) {
      return Fail(std::move(s));
    }
    trace::detail::Operation wait{TraceKind::kWait, caller};
    wait.waits_event = &event->native_handle();
    return Check(Enqueue(
        wait, [&] { return B::Submit(handle_, op::WaitEvent<typename B::EventHandle>{&event->native_handle()}); }));
  }
  // Later work on this stream waits until everything enqueued on `other` so far has run.
  Stream& ThenWaitFor(Stream* other) {
    constexpr std::string_view caller = "ThenWaitFor(Stream)";
    if (!Ready(caller)) return *this;
    if (other == nullptr) return Fail(Null(caller, "stream"));
    if (other == this) return *this;
    if (!other->initialized_) {
      return Fail(MakeError(ErrorCode::kFailedPrecondition, "{}: the other stream is not initialized", caller));
    }
    if (other->parent_ != parent_ && !CrossExecutorWaitBackend<B>) {
      return Fail(OtherExecutor(caller, "stream", other->Label()));
    }
    trace::detail::Operation record{TraceKind::kRecordEvent, caller};
    record.records = &join_event_;
    if (Status s = other->Enqueue(
            record, [&] { return B::Submit(other->handle_, op::RecordEvent<typename B::EventHandle>{&join_event_}); });
        !s.ok()) {
      return Fail(std::move(s));
    }
    trace::detail::Operation wait{TraceKind::kWait, caller};
    wait.waits_event = &join_event_;
    return Check(
        Enqueue(wait, [&] { return B::Submit(handle_, op::WaitEvent<typename B::EventHandle>{&join_event_}); }));
  }

  // Waits on another backend's event or stream (a host stream on an OpenCL
  // event, an OpenCL stream on a CUDA stream, ...; core/foreign_wait.hpp).
  // Released even if the other stream failed: its error stays on that stream.
  template <Backend Other>
    requires(!std::same_as<Other, B>)
  Stream& ThenWaitFor(Event<Other>* event) {
    constexpr std::string_view caller = "ThenWaitFor(Event of another backend)";
    if (!Ready(caller)) return *this;
    if (event == nullptr) return Fail(Null(caller, "event"));
    if (Status s = event->CheckInitialized(caller); !s.ok()) return Fail(std::move(s));
    trace::detail::Operation wait{TraceKind::kWait, caller};
    wait.waits_event = &event->native_handle();
    return Check(Enqueue(wait, [&] {
      return detail::WaitOnForeignEvent(caller, *parent_, handle_, *event->parent(), event->native_handle());
    }));
  }
  template <Backend Other>
    requires(!std::same_as<Other, B>)
  Stream& ThenWaitFor(Stream<Other>* other) {
    constexpr std::string_view caller = "ThenWaitFor(Stream of another backend)";
    if (!Ready(caller)) return *this;
    if (other == nullptr) return Fail(Null(caller, "stream"));
    if (!other->initialized()) {
      return Fail(
          MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the other stream is not initialized", caller, Label()));
    }
    trace::detail::Operation wait{TraceKind::kWait, caller};
    wait.waits_op = other->TraceLastOperation();
    return Check(Enqueue(wait, [&] {
      return detail::WaitOnForeignStream(caller, *parent_, handle_, *other->parent(), other->native_handle());
    }));
  }

  Stream& ThenStartTimer(Timer<B>* timer) {
    if (capture_ != nullptr) return RefuseCapture("ThenStartTimer");
    if (timer == nullptr) return Ready("ThenStartTimer") ? Fail(Null("ThenStartTimer", "timer")) : *this;
    return EnableTiming("ThenStartTimer").ThenRecordEvent(&timer->start_);
  }
  Stream& ThenStopTimer(Timer<B>* timer) {
    if (capture_ != nullptr) return RefuseCapture("ThenStopTimer");
    if (timer == nullptr) return Ready("ThenStopTimer") ? Fail(Null("ThenStopTimer", "timer")) : *this;
    return EnableTiming("ThenStopTimer").ThenRecordEvent(&timer->stop_);
  }

  // Runs `callback` on a host thread once all earlier work has finished, and
  // before any later work starts. It returns void or a Status; a non-OK
  // Status it returns, or an exception it throws, fails the stream.
  template <typename Callback>
  Stream& ThenDoHostCallback(Callback&& callback) {
    static_assert(detail::CheckHostCallback<Callback>());
    if (!Admit("ThenDoHostCallback")) return *this;
    if (capture_ != nullptr) [[unlikely]] {
      // A buffer runs its own copy at each submission.
      if constexpr (std::is_copy_constructible_v<std::decay_t<Callback>>) {
        capture_->ThenDoHostCallback(std::forward<Callback>(callback));
        return *this;
      } else {
        return RefuseCapture("ThenDoHostCallback (a callable that cannot be copied)");
      }
    }
    return Check(Enqueue({TraceKind::kHostCallback, "host callback"}, [&] {
      return op::SubmitHostCall(std::forward<Callback>(callback),
                                [this](const auto& call) { return B::Submit(handle_, call); });
    }));
  }

  // Blocks until all enqueued work has finished; returns the first error.
  Status BlockHostUntilDone() {
    if (!initialized_) {
      if (status_.ok()) status_ = NotInitialized("BlockHostUntilDone");
      return status_;
    }
    if (capture_ != nullptr) [[unlikely]] {
      // Captured work has not run and will not before EndCapture: waiting
      // would wait for nothing the caller expects.
      RefuseCapture("BlockHostUntilDone");
      return capture_->NotCapturable("BlockHostUntilDone");
    }
    if (trace::detail::Observing() || trace_ != nullptr) [[unlikely]]
      return TracedBlockHostUntilDone();
    Status synced = B::SynchronizeStream(handle_);
    if (status_.ok() && !synced.ok()) status_ = std::move(synced);
    return status_;
  }

  // Runs the work recorded in `buffer` (a CommandBuffer<B>, core/command_buffer.hpp)
  // in stream order; a buffer may be submitted any number of times.
  // While capturing, the buffer is nested into the capture's buffer.
  template <typename Buffer>
  Stream& ThenSubmit(Buffer* buffer) {
    constexpr std::string_view caller = "ThenSubmit";
    if (!Admit(caller)) return *this;
    if (buffer == nullptr) return Fail(Null(caller, "command buffer"));
    if (capture_ != nullptr) [[unlikely]] {
      if constexpr (CommandBufferNestingBackend<B>) {
        capture_->ThenSubmit(buffer);
        return *this;
      } else {
        return Fail(capture_->NotCapturable(caller));
      }
    }
    return Check(
        Enqueue({TraceKind::kCommandBuffer, "command buffer"}, [&] { return buffer->SubmitOn(parent_, handle_); }));
  }

  // ---- Capture (docs/api.md, "Capture") ------------------------------------------
  // From BeginCapture to EndCapture the work enqueued on this stream is
  // recorded into `buffer` (initialized, of this executor, nothing submitted
  // yet) instead of run: copies, fills, launches of TypedKernels, host
  // callbacks, event records and waits. Anything else fails the capture,
  // as does any check the operation fails; the stream itself stays usable
  // and EndCapture returns the capture's first error. Meanwhile the
  // executor refuses synchronous operations, as CUDA's global capture mode
  // does.
  Status BeginCapture(CommandBuffer<B>* buffer)
    requires CommandBufferBackend<B>
  {
    constexpr std::string_view caller = "Stream::BeginCapture";
    if (capture_ != nullptr) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the stream is already capturing; EndCapture first",
                       caller, Label());
    }
    if (!Ready(caller)) return status_;
    if (buffer == nullptr) return Null(caller, "command buffer");
    STREAMEXECUTOR_RETURN_IF_ERROR(buffer->CheckCaptureStart(caller, parent_, Label()));
    buffer->SetCapturer({this, &AbandonCapture});
    capture_ = buffer;
    trace::detail::SetSwitch(switch_.get(), &plain_, true);
    parent_->CaptureBegan();
    return Status();
  }
  // Ends the capture into `buffer` (on the stream that began it) and returns
  // its first error, if any; the buffer is then ready to submit.
  Status EndCapture(CommandBuffer<B>* buffer)
    requires CommandBufferBackend<B>
  {
    constexpr std::string_view caller = "Stream::EndCapture";
    if (buffer == nullptr) return Null(caller, "command buffer");
    if (capture_ != buffer) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: {}", caller, Label(),
                       buffer->capturer().stream != nullptr
                           ? "the capture into this command buffer was begun on another stream; end it there"
                           : "this stream is not capturing into the command buffer");
    }
    StopCapture();
    return buffer->status();
  }
  bool capturing() const { return capture_ != nullptr; }

  // For canned-operation libraries: checks that the stream can take work
  // (initialised, no sticky error) and records `status` as its error when it
  // is one. Same rules as the Then* calls above.
  // While capturing, canned operations are recorded (EnqueueCanned).
  bool ReadyForCanned(std::string_view caller) { return Admit(caller); }
  Stream& CheckCanned(Status status) { return Check(std::move(status)); }
  // A canned operation's work: `operation` is what the backend's Submit
  // takes (a host call on host, an op::LibraryCall on OpenCL and CUDA);
  // while capturing, the capture's buffer records it instead, with `buffers`
  // checked at each of its submissions. Its errors are then the capture's.
  // `keep` is an object the work uses (an FFT plan) that the buffer then
  // holds on to; queued work holds its own reference in `operation`.
  template <typename Operation>
  Status EnqueueCanned(std::string_view caller, std::span<const DeviceMemoryBase> buffers, const Operation& operation,
                       std::shared_ptr<const void> keep = {}) {
    if (capture_ != nullptr) [[unlikely]] {
      capture_->CaptureCanned(caller, buffers, operation, std::move(keep));
      return Status();
    }
    return Enqueue({TraceKind::kCanned, caller}, [&] { return B::Submit(handle_, operation); });
  }
  // For a canned path that cannot be recorded: fails the capture.
  Status NotCapturable(std::string_view caller) const {
    return capture_ != nullptr ? capture_->NotCapturable(caller) : Status();
  }

 private:
  // The copies, under the name the caller used (for messages).
  Stream& CopyD2D(std::string_view caller, DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src,
                  std::uint64_t size) {
    if (!Admit(caller)) return *this;
    if (device_dst == nullptr) return Fail(Null(caller, "destination"));
    return Then(caller, op::MemcpyD2D{*device_dst, device_src, size});
  }
  Stream& CopyD2H(std::string_view caller, void* host_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    if (!Admit(caller)) return *this;
    return Then(caller, op::MemcpyD2H{host_dst, device_src, size});
  }
  Stream& CopyH2D(std::string_view caller, DeviceMemoryBase* device_dst, const void* host_src, std::uint64_t size) {
    if (!Admit(caller)) return *this;
    if (device_dst == nullptr) return Fail(Null(caller, "destination"));
    return Then(caller, op::MemcpyH2D{*device_dst, host_src, size});
  }
  // Synchronous operations of the executor come after this stream's work
  // from here on (core/synchronous.hpp).
  void StopCapture() noexcept {
    capture_->SetCapturer({});
    capture_ = nullptr;
    if (switch_ != nullptr) trace::detail::SetSwitch(switch_.get(), &plain_, false);
    parent_->CaptureEnded();
  }
  // The buffer captured into is going away: the stream runs its work again.
  static void AbandonCapture(void* stream) { static_cast<Stream*>(stream)->StopCapture(); }

  Stream& Initialized() {
    trace::detail::StartFromEnvironmentOnce();
    if constexpr (StreamNameBackend<B>) {
      if (!name_.empty()) B::SetStreamName(handle_, name_);
    }
    live_.reset(new (std::nothrow) detail::LiveStream<B>());
    switch_.reset(new (std::nothrow) trace::detail::LaunchSwitch());
    if (live_ == nullptr || switch_ == nullptr) {
      live_.reset();
      switch_.reset();
      B::DestroyEvent(parent_->native_state(), join_event_);
      B::DestroyStream(parent_->native_state(), handle_);
      return Fail(ErrorCode::kResourceExhausted, "Stream::Init: out of host memory");
    }
    initialized_ = true;
    switch_->plain = &plain_;
    trace::detail::AddSwitch(switch_.get());
    live_->handle = &handle_;
    parent_->Link(*live_);
    return *this;
  }

  void Release() noexcept {
    if (!initialized_) return;
    if (capture_ != nullptr) {
      capture_->FailCapture(
          MakeError(ErrorCode::kFailedPrecondition,
                    "Stream::BeginCapture on {}: the capturing stream was destroyed before EndCapture", Label()));
      StopCapture();
    }
    B::SynchronizeStream(handle_).IgnoreError();
    trace_.reset();  // reads the times of its last operations: they have run
    // Out of the executor's list before the handle goes: a synchronous
    // operation on another thread may be recording on it until then.
    parent_->Unlink(*live_);
    B::DestroyEvent(parent_->native_state(), join_event_);
    B::DestroyStream(parent_->native_state(), handle_);
    live_.reset();
    initialized_ = false;
    trace::detail::RemoveSwitch(switch_.get());
    switch_.reset();
  }
  // `other`'s handles are copied, not cleared, until Relink returns: a
  // synchronous operation that pinned the stream before may still read them
  // through the old place.
  void TakeFrom(Stream& other) noexcept {
    static_assert(std::is_trivially_copyable_v<typename B::StreamHandle> &&
                  std::is_trivially_copyable_v<typename B::EventHandle>);
    handle_ = other.handle_;
    join_event_ = other.join_event_;
    initialized_ = std::exchange(other.initialized_, false);
    capture_ = std::exchange(other.capture_, nullptr);
    if (capture_ != nullptr) capture_->SetCapturer({this, &AbandonCapture});
    switch_ = std::move(other.switch_);
    status_ = std::move(other.status_);
    other.status_ = Status();
    if (switch_ != nullptr) trace::detail::SetSwitch(switch_.get(), &plain_, capture_ != nullptr);
    other.plain_.store(false, std::memory_order_relaxed);
    live_ = std::move(other.live_);
    priority_ = std::exchange(other.priority_, StreamPriority::kNormal);
    trace_ = std::move(other.trace_);
    name_ = std::move(other.name_);
    if (initialized_) parent_->Relink(*live_, &handle_);
    other.handle_ = {};
    other.join_event_ = {};
  }

  // A launch while something observes (RefuseLaunch calls it), with the
  // stream's events around it (core/stream_trace.hpp).
  template <typename... Params, typename... Args>
  [[gnu::cold, gnu::noinline]] void TracedLaunch(const ThreadDim& threads, const BlockDim& blocks,
                                                 const TypedKernel<Params...>& kernel, const Args&... args) {
    Check(Traced(LaunchOperation(threads, blocks, kernel.name()),
                 [&] { return SubmitLaunch(threads, blocks, kernel, args...); }));
  }

  // Out of the launch path: why a launch that LaunchIsValid refused is wrong
  // (the stream fails, false), or true for one whose only fault there is
  // memory of an executor this one enabled peer access to, which the full
  // checks accept; the launch then goes on inline. (Launching from here
  // instead made GCC keep the launch path's values differently: up to 7
  // more instructions per OpenCL launch, performance.md.)
  // The dimensions come as six integers, in registers: a reference, or a
  // ThreadDim by value (passed in memory), makes the compiler store the
  // caller's dimensions on every launch, refused or not.
  template <typename... Params, typename... Args>
  [[gnu::cold, gnu::noinline]] bool RefuseLaunch(std::uint64_t tx, std::uint64_t ty, std::uint64_t tz, std::uint64_t bx,
                                                 std::uint64_t by, std::uint64_t bz,
                                                 const TypedKernel<Params...>& kernel, const Args&... args) {
    const ThreadDim threads(tx, ty, tz);
    const BlockDim blocks(bx, by, bz);
    if (!initialized_) {
      Fail(NotInitialized("ThenLaunch"));
      return false;
    }
    Status why = detail::CheckLaunch(*parent_, threads, blocks, kernel, args...);  // core/launch_check.hpp
    if (why.ok() && trace::detail::Observing()) {
      TracedLaunch(threads, blocks, kernel, args...);  // here, not inline: the launch path stays as it is
      return false;
    }
    if (why.ok()) [[unlikely]] {
      if (detail::TakesPeerMemory<Params...>(*parent_, args...)) return true;
      why = MakeError(ErrorCode::kInternal,
                      "ThenLaunch of kernel '{}' on {}: refused by the inline checks, "
                      "accepted by the full ones",
                      kernel.name(), Label());
    }
    Fail(std::move(why));
    return false;
  }

  // Out of the launch path, like RefuseLaunch: recording into the command
  // buffer inline would put its checks and copies into every caller's code.
  template <typename... Params, typename... Args>
  [[gnu::cold, gnu::noinline]] void CaptureLaunch(std::uint64_t tx, std::uint64_t ty, std::uint64_t tz,
                                                  std::uint64_t bx, std::uint64_t by, std::uint64_t bz,
                                                  const TypedKernel<Params...>& kernel, Args&&... args) {
    capture_->ThenLaunch(ThreadDim(tx, ty, tz), BlockDim(bx, by, bz), kernel, std::forward<Args>(args)...);
  }

  static Status DeallocateOwned(void* stream, DeviceMemoryBase* memory) {
    auto* self = static_cast<Stream*>(stream);
    self->ThenDeallocate(memory);
    return self->status_;
  }

  // ---- Tracing (core/trace.hpp, core/stream_trace.hpp) ----------------------
  template <Backend>
  friend class Stream;

  // `submit`, the operation's driver call, traced while something observes.
  template <typename Call>
  [[gnu::always_inline]] Status Enqueue(const trace::detail::Operation& op, Call&& call) {
    if (trace::detail::Observing()) [[unlikely]]
      return Traced(op, call);
    return call();
  }
  template <typename Call>
  [[gnu::cold, gnu::noinline]] Status Traced(const trace::detail::Operation& op, Call&& call) {
    if (trace_ == nullptr) {
      trace_.reset(new (std::nothrow) detail::StreamTrace<B>(parent_, name_));
      if (trace_ == nullptr) return call();  // out of memory: untraced
    }
    return trace_->Run(handle_, op, call);
  }
  [[gnu::cold, gnu::noinline]] Status TracedBlockHostUntilDone() {
    const auto start = std::chrono::steady_clock::now();
    Status synced = B::SynchronizeStream(handle_);
    if (status_.ok() && !synced.ok()) status_ = std::move(synced);
    if (trace_ != nullptr) {
      trace_->Synchronized(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }
    return status_;
  }
  std::uint64_t TraceLastOperation() const {
    if (trace_ == nullptr || !trace::detail::Observing()) return 0;
    return trace_->LastOperation();
  }
  static trace::detail::Operation LaunchOperation(const ThreadDim& threads, const BlockDim& blocks,
                                                  std::string_view kernel) {
    trace::detail::Operation op{TraceKind::kLaunch, kernel};
    op.threads = &threads;
    op.blocks = &blocks;
    return op;
  }
  // Validates a copy or fill and hands it to the backend.
  template <typename Operation>
  Stream& Then(std::string_view caller, const Operation& operation) {
    if (capture_ != nullptr) [[unlikely]] {
      capture_->Capture(caller, operation);
      return *this;
    }
    if (Status s = op::Validate(*parent_, caller, operation); !s.ok()) [[unlikely]]
      return Fail(std::move(s));
    if (trace::detail::Observing()) [[unlikely]]
      return Check(Traced(trace::detail::Describe(caller, operation), [&] { return B::Submit(handle_, operation); }));
    return Check(B::Submit(handle_, operation));
  }

  template <typename Operation>
  Stream& ThenStreamMemory(std::string_view caller, const Operation& operation) {
    if (!Ready(caller)) return *this;
    if (Status s = op::Validate(*parent_, caller, operation); !s.ok()) [[unlikely]]
      return Fail(std::move(s));
    if constexpr (StreamMemoryOperationBackend<B>) {
      return Check(Enqueue({TraceKind::kStreamMemory, caller, 8}, [&] { return B::Submit(handle_, operation); }));
    } else {
      return Fail(detail::UnsupportedStreamMemoryOperation<B>(caller, Label()));
    }
  }
  Stream& EnableTiming(std::string_view caller) {
    if constexpr (TimingStreamBackend<B>) {
      if (!Ready(caller)) return *this;
      if (Status s = B::EnableTiming(handle_); !s.ok()) return Fail(std::move(s));
    }
    return *this;
  }
  // Whether the stream takes `caller`'s work: run it, or record it while
  // capturing. Ready: run it; a capture refuses what it cannot record.
  bool Admit(std::string_view caller) {
    if (!status_.ok()) return false;
    if (!initialized_) {
      Fail(NotInitialized(caller));
      return false;
    }
    return capture_ == nullptr || capture_->ok();
  }
  bool Ready(std::string_view caller) {
    if (!Admit(caller)) return false;
    if (capture_ != nullptr) [[unlikely]] {
      RefuseCapture(caller);
      return false;
    }
    return true;
  }
  // Messages name the device; a stream built on a null executor has none.
  std::string_view Label() const {
    return parent_ != nullptr ? std::string_view(parent_->DeviceLabel()) : "<no executor>";
  }
  Status OtherExecutor(std::string_view caller, std::string_view what, std::string_view other) const {
    return MakeError(ErrorCode::kUnimplemented,
                     "{} on {}: the {} belongs to {}; on this backend a stream waits only on events and streams of its "
                     "own executor",
                     caller, Label(), what, other);
  }
  Status NotInitialized(std::string_view caller) const {
    return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the stream was not initialized (call Init())", caller,
                     Label());
  }
  static const Status& NeverInitialized() {
    // Never destroyed: a Stream at namespace scope may be asked at exit.
    static const Status* const status =
        new Status(ErrorCode::kFailedPrecondition, "Stream: the stream was not initialized (call Init())");
    return *status;
  }
  Status Null(std::string_view caller, std::string_view what) const {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} pointer is null", caller, Label(), what);
  }

  Stream& Check(Status status) {
    if (!status.ok()) [[unlikely]]
      return Fail(std::move(status));
    return *this;
  }
  // While capturing, errors are the capture's: the buffer keeps the first
  // and EndCapture returns it; the stream stays usable.
  Stream& Fail(Status status) {
    if (capture_ != nullptr) [[unlikely]] {
      capture_->FailCapture(std::move(status));
      return *this;
    }
    if (status_.ok()) status_ = std::move(status);
    return *this;
  }
  Stream& RefuseCapture(std::string_view caller) {
    if (capture_->ok()) capture_->FailCapture(capture_->NotCapturable(caller));
    return *this;
  }
  Stream& Fail(ErrorCode code, std::string_view message) { return Fail(MakeError(code, "{} ({})", message, Label())); }

  StreamExecutor<B>* parent_;
  typename B::StreamHandle handle_{};
  typename B::EventHandle join_event_{};  // for ThenWaitFor(Stream*)
  StreamPriority priority_ = StreamPriority::kNormal;
  bool initialized_ = false;
  // Initialized, not capturing, nothing observing: what the launch path asks
  // (trace::detail::IsSet reads it).
  std::atomic<bool> plain_{false};
  typename detail::CaptureTarget<B>::type* capture_ = nullptr;  // BeginCapture's buffer
  Status status_;
  // In the executor's list while initialized; on the heap so that a move
  // leaves it where synchronous operations found it.
  std::unique_ptr<detail::LiveStream<B>> live_;
  std::string name_;
  // Made by the first operation traced (core/stream_trace.hpp).
  std::unique_ptr<detail::StreamTrace<B>> trace_;
  std::unique_ptr<trace::detail::LaunchSwitch> switch_;  // plain_'s entry in the trace's list
};

template <Backend B>
Stream(StreamExecutor<B>*) -> Stream<B>;

}  // namespace streamexecutor
