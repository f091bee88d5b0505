// Event<B> marks a point in a stream; other streams can wait for it and the
// host can poll or block on it. Timer<B> is a pair of events.
//
// Waiting across backends: every backend's event can be polled and waited on
// from the host (PollForStatus/Synchronize), which is the hook through which a
// stream of one backend can later wait for an event of another.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "streamexecutor/core/executor.hpp"

namespace streamexecutor {

template <Backend B>
class Stream;
template <Backend B>
class CommandBuffer;
template <Backend B>
class Timer;

template <Backend B>
class Event {
 public:
  // What PollForStatus reports (the seed's enumerators). Not named Status,
  // as the seed had it: inside Event that name would hide the error type.
  enum class State { kUnknown, kError, kPending, kComplete };

  explicit Event(StreamExecutor<B>* parent) : parent_(parent) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  // Moving takes the driver event with its recordings: streams that wait on
  // it wait on the same event. The moved-from Event is like one never
  // initialized. A CommandBuffer that recorded or waits on the event keeps
  // its address, so move (or destroy) it only once no such buffer is
  // submitted again.
  Event(Event&& other) noexcept : parent_(other.parent_) { TakeFrom(other); }
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      Release();
      parent_ = other.parent_;
      TakeFrom(other);
    }
    return *this;
  }
  ~Event() { Release(); }

  // Creates the driver event; false (with init_status() saying why) on failure.
  bool Init() { return Create(/*timing=*/false); }
  const Status& init_status() const { return init_status_; }
  bool initialized() const { return initialized_; }

  // Events shared between processes (core/ipc.hpp), as CUDA's
  // cuIpcGetEventHandle and cuIpcOpenEventHandle share them: InitInterprocess
  // makes one whose Export() another process opens with InitImported. Both
  // sides record it and wait on it; it is not timed.
  bool InitInterprocess() { return Create(/*timing=*/false, /*interprocess=*/true); }
  StatusOr<IpcEventHandle> Export() {
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckInitialized("Event::Export"));
    if (!interprocess_) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "Event::Export on {}: only an event made with InitInterprocess can be exported",
                       parent_->DeviceLabel());
    }
    if constexpr (IpcEventBackend<B>) {
      IpcEventHandle handle;
      detail::WriteIpcHeader(handle.bytes, B::kName, parent_->device_ordinal(), 0, 0, 0);
      STREAMEXECUTOR_RETURN_IF_ERROR(B::ExportEvent(handle_, detail::IpcPayload(handle)));
      return handle;
    } else {
      return Unshared("Event::Export");
    }
  }
  bool InitImported(const IpcEventHandle& handle) {
    if (!CanCreate("Event::InitImported")) return false;
    if constexpr (IpcEventBackend<B>) {
      StatusOr<detail::IpcHeader> header =
          detail::ReadIpcHeader(handle.bytes, B::kName, "Event::InitImported", parent_->DeviceLabel(), "Event");
      init_status_ = header.ok() ? B::ImportEvent(parent_->native_state(), detail::ConstIpcPayload(handle), handle_)
                                 : header.status();
    } else {
      init_status_ = Unshared("Event::InitImported");
    }
    initialized_ = init_status_.ok();
    interprocess_ = false;  // an imported event is not exported again
    return initialized_;
  }

  // kComplete when every recording enqueued so far has run (or none was).
  State PollForStatus() {
    if (!initialized_) return State::kError;
    StatusOr<bool> done = B::QueryEvent(handle_);
    if (!done.ok()) return State::kError;
    return done.value() ? State::kComplete : State::kPending;
  }
  Status Synchronize() {
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckInitialized("Event::Synchronize"));
    return B::SynchronizeEvent(handle_);
  }

  StreamExecutor<B>* parent() const { return parent_; }
  typename B::EventHandle& native_handle() { return handle_; }
  // Whether a stream has recorded this event at least once.
  bool recorded() const { return recorded_.load(std::memory_order_acquire); }

  Status CheckInitialized(std::string_view op) const {
    if (initialized_) return {};
    return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the Event was not initialized (call Init())", op,
                     parent_ != nullptr ? std::string_view(parent_->DeviceLabel()) : "<no executor>");
  }

 private:
  void Release() noexcept {
    if (initialized_) B::DestroyEvent(parent_->native_state(), handle_);
    initialized_ = false;
    interprocess_ = false;
  }
  void TakeFrom(Event& other) noexcept {
    handle_ = std::exchange(other.handle_, typename B::EventHandle{});
    initialized_ = std::exchange(other.initialized_, false);
    interprocess_ = std::exchange(other.interprocess_, false);
    recorded_.store(other.recorded_.exchange(false, std::memory_order_acq_rel), std::memory_order_release);
    init_status_ = std::move(other.init_status_);
    other.init_status_ = Status();
  }

  bool CanCreate(std::string_view caller) {
    if (parent_ == nullptr) {
      init_status_ =
          MakeError(ErrorCode::kInvalidArgument, "{}: the event was constructed with a null StreamExecutor", caller);
      return false;
    }
    if (initialized_) {
      init_status_ =
          MakeError(ErrorCode::kFailedPrecondition, "{} on {}: already initialized", caller, parent_->DeviceLabel());
      return false;
    }
    return true;
  }
  Status Unshared(std::string_view caller) const {
    return detail::IpcUnimplemented(caller, parent_->DeviceLabel(), B::kName, "events", "IpcEventBackend");
  }

  bool Create(bool timing, bool interprocess = false) {
    if (!CanCreate(interprocess ? "Event::InitInterprocess" : "Event::Init")) return false;
    if (interprocess) {
      if constexpr (IpcEventBackend<B>) {
        init_status_ = B::CreateInterprocessEvent(parent_->native_state(), handle_);
      } else {
        init_status_ = Unshared("Event::InitInterprocess");
      }
      interprocess_ = initialized_ = init_status_.ok();
      return initialized_;
    }
    if constexpr (TimingEventBackend<B>) {
      init_status_ = timing ? B::CreateTimingEvent(parent_->native_state(), handle_)
                            : B::CreateEvent(parent_->native_state(), handle_);
    } else {
      init_status_ = B::CreateEvent(parent_->native_state(), handle_);
    }
    initialized_ = init_status_.ok();
    return initialized_;
  }

  StreamExecutor<B>* parent_;
  typename B::EventHandle handle_{};
  bool initialized_ = false;
  bool interprocess_ = false;  // made by InitInterprocess: Export() may share it
  // Atomic: streams on several threads may record the same event.
  std::atomic<bool> recorded_{false};
  Status init_status_;

  friend class Stream<B>;
  friend class CommandBuffer<B>;
  friend class Timer<B>;
};

template <Backend B>
class Timer {
 public:
  explicit Timer(StreamExecutor<B>* parent) : start_(parent), stop_(parent) {}
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  // Moves both events (see Event's move); the moved-from Timer is like one
  // never initialized.
  Timer(Timer&&) noexcept = default;
  Timer& operator=(Timer&&) noexcept = default;

  // A Status rather than Event's bool: a timer is two driver events, and the
  // caller needs to know which failed and why.
  Status Init() {
    if (!start_.Create(/*timing=*/true)) return Named(start_.init_status(), "start");
    if (!stop_.Create(/*timing=*/true)) return Named(stop_.init_status(), "stop");
    return Status();
  }
  bool initialized() const { return start_.initialized() && stop_.initialized(); }

  // Time between ThenStartTimer and ThenStopTimer, waiting for the stop if it
  // has not run yet.
  StatusOr<std::uint64_t> ElapsedNanoseconds() {
    // Checked here once for every backend, so no backend reads an event that
    // was never recorded.
    if (!start_.recorded() || !stop_.recorded()) {
      return Status(ErrorCode::kFailedPrecondition, "timer events were never recorded (ThenStartTimer/ThenStopTimer)");
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(stop_.Synchronize());
    return B::ElapsedNanoseconds(start_.native_handle(), stop_.native_handle());
  }
  // Seed accessors: 0 when the interval cannot be measured.
  std::uint64_t Nanoseconds() { return ElapsedNanoseconds().value_or(0); }
  std::uint64_t Microseconds() { return Nanoseconds() / 1000; }

 private:
  static Status Named(const Status& why, std::string_view which) {
    return MakeError(why.code(), "Timer::Init ({} event): {}", which, why.message());
  }

  friend class Stream<B>;
  Event<B> start_;
  Event<B> stop_;
};

template <Backend B>
Event(StreamExecutor<B>*) -> Event<B>;

namespace detail {

enum class EventUse { kRecord, kWait };

// The one check of an event that a stream or a command buffer (`owner`)
// records or waits on: present, initialized, and of the owner's executor,
// except for waits where the backend waits across executors.
template <Backend B>
Status CheckEventUse(std::string_view caller, std::string_view owner, const StreamExecutor<B>& executor,
                     const Event<B>* event, EventUse use) {
  if (event == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the event pointer is null", caller,
                     executor.DeviceLabel());
  }
  STREAMEXECUTOR_RETURN_IF_ERROR(event->CheckInitialized(caller));
  const bool foreign_ok = use == EventUse::kWait && CrossExecutorWaitBackend<B>;
  if (event->parent() != &executor && !foreign_ok) {
    return MakeError(ErrorCode::kUnimplemented, "{} on {}: the event belongs to {}; {}", caller, executor.DeviceLabel(),
                     event->parent()->DeviceLabel(),
                     use == EventUse::kRecord
                         ? ::streamexecutor::detail::Format("a {} records only events of its own executor", owner)
                         : ::streamexecutor::detail::Format(
                               "on this backend a {} waits only on events and streams of its own executor", owner));
  }
  return Status();
}

}  // namespace detail
template <Backend B>
Timer(StreamExecutor<B>*) -> Timer<B>;

}  // namespace streamexecutor
