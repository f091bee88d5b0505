// How StreamExecutor<B> runs its synchronous operations (SynchronousMemcpy*,
// SynchronousMemZero, SynchronousMemset32) and SynchronizeAllActivity, for
// every backend.
//
// A synchronous operation comes after the work already queued on the
// executor's streams, as cudaMemcpy does after earlier launches: ported code
// (the seed's gpucc example) launches and then reads the results with
// SynchronousMemcpyD2H. So the executor keeps a list of its live streams: a
// Stream links itself in at Init and out in its destructor, and nothing on
// the launch or enqueue path touches the list. A synchronous operation records
// an ordering event on each stream that may still run earlier work, and waits
// for those events: on the device, from the stream the executor keeps for
// synchronous operations, or on the host where the backend runs the operation
// on the calling thread (InlineExecutionBackend). A backend that cannot tell
// an idle stream without queueing something on it waits on the host instead
// (StreamHostWaitBackend: OpenCL).
#pragma once

#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

template <Backend B>
class Stream;

// Optional: B::StreamIsIdle(stream) -> bool, true only when everything queued
// on the stream before the call has finished (false when unsure). Cheap, so
// that an idle stream costs a synchronous operation nothing more than the
// question (host: the ring is empty; CUDA: cuStreamQuery). Without it every
// stream counts as busy.
template <typename B>
concept StreamIdleQueryBackend = requires(typename B::StreamHandle& stream) {
  { B::StreamIsIdle(stream) } -> std::same_as<bool>;
};
// Optional: B::CallerIsCallbackOf(stream) -> bool, whether the calling thread
// is running one of the stream's host callbacks (host, OpenCL). A backend
// whose callbacks may not call the backend at all (CUDA) needs none.
template <typename B>
concept CallbackThreadBackend = requires(const typename B::StreamHandle& stream) {
  { B::CallerIsCallbackOf(stream) } -> std::same_as<bool>;
};

// Optional: B::WaitForQueuedWork(stream), which blocks until the work queued
// on the stream so far has run (it may also wait for work queued meanwhile)
// and leaves the stream's own error to the stream. For a backend with no
// idle query whose wait costs next to nothing on an idle stream: OpenCL, where
// an idle queue's clFinish returns in tens of nanoseconds but a marker and a
// wait on it from another queue cost a synchronous copy 3.5 us on PoCL.
template <typename B>
concept StreamHostWaitBackend = requires(typename B::StreamHandle& stream) {
  { B::WaitForQueuedWork(stream) } -> std::same_as<void>;
};

namespace detail {

// A Stream's entry in its executor's list. `pins` counts synchronous
// operations using the stream outside the list's lock, one stream at a time
// each; its destructor waits for them after unlinking it. The Stream keeps
// it on the heap, so that moving the Stream leaves it in place.
template <typename B>
struct LiveStream {
  typename B::StreamHandle* handle = nullptr;
  LiveStream* previous = nullptr;
  LiveStream* next = nullptr;
  std::atomic<int> pins{0};
};

// A base of StreamExecutor<B>.
template <typename B>
class SynchronousOperations {
 public:
  SynchronousOperations() = default;
  SynchronousOperations(const SynchronousOperations&) = delete;
  SynchronousOperations& operator=(const SynchronousOperations&) = delete;

 protected:
  using EventHandle = typename B::EventHandle;

  // `operation` was validated. Run on the calling thread where the backend
  // can (host memory), else on a stream kept for synchronous operations and
  // waited for. One stream serialises them (callers on several threads take
  // turns); a stream whose synchronization failed is dropped, so that one
  // error never sticks to later calls.
  template <typename Operation>
  Status RunValidated(typename B::ExecutorState& executor, const Operation& operation) {
    if constexpr (InlineExecutionBackend<B, Operation>) {
      STREAMEXECUTOR_RETURN_IF_ERROR(AwaitStreams(executor));
      return B::ExecuteInline(executor, operation);
    } else {
      std::lock_guard<std::mutex> lock(sync_mutex_);
      if (!sync_stream_open_) {
        STREAMEXECUTOR_RETURN_IF_ERROR(B::CreateStream(executor, sync_stream_));
        sync_stream_open_ = true;
      }
      // Refused submissions (the waits' or the operation's) queued nothing
      // that could fail later, so the stream is kept; a failure seen when
      // synchronizing may stick to it, so it is dropped.
      STREAMEXECUTOR_RETURN_IF_ERROR(QueueWaitsForStreams(executor));
      STREAMEXECUTOR_RETURN_IF_ERROR(B::Submit(sync_stream_, operation));
      Status synced = B::SynchronizeStream(sync_stream_);
      if (!synced.ok()) [[unlikely]]
        DropSyncStreamLocked(executor);
      return synced;
    }
  }

  // Blocks until the work queued on the live streams before the call has
  // run. Only a failure of the waiting itself is returned (a driver error);
  // the streams' own sticky errors are theirs, read by BlockHostUntilDone.
  Status AwaitStreams(typename B::ExecutorState& executor) {
    std::vector<LiveStream<B>*> busy;
    STREAMEXECUTOR_RETURN_IF_ERROR(CollectBusyStreams(busy));
    if constexpr (StreamHostWaitBackend<B>) {
      for (LiveStream<B>* stream : busy) {
        if (!Pin(stream)) continue;
        B::WaitForQueuedWork(*stream->handle);
        Unpin(stream);
      }
      return Status();
    } else {
      std::vector<EventHandle> recorded;
      STREAMEXECUTOR_RETURN_IF_ERROR(RecordOn(executor, busy, recorded));
      Status status;
      for (EventHandle& event : recorded) {
        Status waited = B::SynchronizeEvent(event);
        if (status.ok()) status = std::move(waited);
      }
      GiveBack(recorded);
      return status;
    }
  }

  // For memory pools (core/memory_pool.hpp), which ask the stream that freed
  // a block whether the free has run: calls `visit(handle)` with `stream`
  // pinned and returns true, or returns false if it left the list (its
  // destructor had waited for its work). `visit` must not block.
  template <typename Visit>
  bool VisitLinkedStream(LiveStream<B>* stream, Visit&& visit) {
    if (!Pin(stream)) return false;
    visit(*stream->handle);
    Unpin(stream);
    return true;
  }

  // While a stream of the executor captures (Stream::BeginCapture), a
  // synchronous operation would neither be recorded nor wait for the
  // captured work: refused, as CUDA's global capture mode refuses such calls.
  Status RefuseWhileCapturing(std::string_view caller, std::string_view label) const {
    if (capturing_.load(std::memory_order_acquire) == 0) [[likely]]
      return Status();
    return MakeError(ErrorCode::kFailedPrecondition,
                     "{} on {}: a stream of this executor is capturing into a command buffer (Stream::BeginCapture); "
                     "a synchronous operation is not recorded and cannot wait for the captured work: end the capture "
                     "first, or enqueue the operation on the capturing stream",
                     caller, label);
  }

  // For the executor's destructor.
  void CloseSynchronous(typename B::ExecutorState& executor) {
    {
      std::lock_guard<std::mutex> lock(sync_mutex_);
      DropSyncStreamLocked(executor);
    }
    std::lock_guard<std::mutex> lock(streams_mutex_);
    for (EventHandle& event : spare_events_) B::DestroyEvent(executor, event);
    spare_events_.clear();
  }

 private:
  template <Backend>
  friend class streamexecutor::Stream;

  void CaptureBegan() { capturing_.fetch_add(1, std::memory_order_acq_rel); }
  void CaptureEnded() { capturing_.fetch_sub(1, std::memory_order_acq_rel); }

  void Link(LiveStream<B>& stream) {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    stream.previous = nullptr;
    stream.next = first_stream_;
    if (first_stream_ != nullptr) first_stream_->previous = &stream;
    first_stream_ = &stream;
  }
  // After Unlink returns no synchronous operation touches the stream.
  void Unlink(LiveStream<B>& stream) {
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      if (stream.previous != nullptr)
        stream.previous->next = stream.next;
      else
        first_stream_ = stream.next;
      if (stream.next != nullptr) stream.next->previous = stream.previous;
      stream.previous = stream.next = nullptr;
    }
    AwaitUnpinned(stream);
  }
  // A Stream was moved: its entry (which stays where it is, and in the list,
  // so that an operation that collected it still finds it) now reads the
  // handle at its new place. Returns once no operation still reads the old
  // place, which the moved-from Stream may free right after.
  void Relink(LiveStream<B>& stream, typename B::StreamHandle* handle) {
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      stream.handle = handle;
    }
    AwaitUnpinned(stream);
  }
  static void AwaitUnpinned(LiveStream<B>& stream) {
    for (int pins = stream.pins.load(std::memory_order_acquire); pins != 0;
         pins = stream.pins.load(std::memory_order_acquire)) {
      stream.pins.wait(pins, std::memory_order_acquire);
    }
  }

  // The synchronous stream waits on the device: no host round trip between
  // the streams' work and the operation (CUDA: cuEventRecord on each busy
  // stream, cuStreamWaitEvent on this one, then the copy). A wait holds the
  // recording it was queued for, so the events go back at once.
  Status QueueWaitsForStreams(typename B::ExecutorState& executor) {
    if constexpr (StreamHostWaitBackend<B>) {
      return AwaitStreams(executor);
    } else {
      std::vector<LiveStream<B>*> busy;
      STREAMEXECUTOR_RETURN_IF_ERROR(CollectBusyStreams(busy));
      std::vector<EventHandle> recorded;
      STREAMEXECUTOR_RETURN_IF_ERROR(RecordOn(executor, busy, recorded));
      Status status;
      for (EventHandle& event : recorded) {
        status = B::Submit(sync_stream_, op::WaitEvent<EventHandle>{&event});
        if (!status.ok()) break;
      }
      GiveBack(recorded);
      return status;
    }
  }

  // The live streams that may still run work queued before this call. A
  // stream whose host callback is the caller is left out: its earlier work
  // has run, and the rest waits for the caller.
  Status CollectBusyStreams(std::vector<LiveStream<B>*>& busy) {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    for (LiveStream<B>* stream = first_stream_; stream != nullptr; stream = stream->next) {
      typename B::StreamHandle& handle = *stream->handle;
      if constexpr (StreamIdleQueryBackend<B>) {
        if (B::StreamIsIdle(handle)) continue;
      }
      if constexpr (CallbackThreadBackend<B>) {
        if (B::CallerIsCallbackOf(handle)) continue;
      }
      try {
        busy.push_back(stream);
      } catch (const std::bad_alloc&) {
        return OutOfMemory();
      }
    }
    return Status();
  }
  // Keeps a collected stream alive while it is used outside the list's lock:
  // recording on it or waiting for it may wait for its host callbacks, which
  // may create or destroy streams, so one stream is pinned at a time. False
  // if it left the list: its destructor had waited for its work (a newer
  // stream at the same address is merely waited for too).
  bool Pin(LiveStream<B>* wanted) {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    for (LiveStream<B>* stream = first_stream_; stream != nullptr; stream = stream->next) {
      if (stream != wanted) continue;
      stream->pins.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    return false;
  }
  static void Unpin(LiveStream<B>* stream) {
    if (stream->pins.fetch_sub(1, std::memory_order_release) == 1) stream->pins.notify_all();
  }

  // Records an ordering event on each stream still live. Records run on
  // failed streams too (every backend), so waiting never hangs on one.
  Status RecordOn(typename B::ExecutorState& executor, const std::vector<LiveStream<B>*>& busy,
                  std::vector<EventHandle>& recorded) {
    try {
      recorded.reserve(busy.size());
    } catch (const std::bad_alloc&) {
      return OutOfMemory();
    }
    for (LiveStream<B>* stream : busy) {
      if (!Pin(stream)) continue;
      StatusOr<EventHandle> event = TakeEvent(executor);
      Status status = event.status();
      if (status.ok()) {
        recorded.push_back(event.value());  // cannot throw: reserved; given back with the others
        status = B::Submit(*stream->handle, op::RecordEvent<EventHandle>{&recorded.back()});
      }
      Unpin(stream);
      if (!status.ok()) {
        GiveBack(recorded);
        return status;
      }
    }
    return Status();
  }
  void GiveBack(std::vector<EventHandle>& events) {
    if (events.empty()) return;
    std::lock_guard<std::mutex> lock(streams_mutex_);
    GiveBackLocked(events);
  }
  void GiveBackLocked(std::vector<EventHandle>& events) {
    for (const EventHandle& event : events) spare_events_.push_back(event);
    events.clear();
  }
  // Made on first need and kept: a busy stream costs a record and a wait,
  // not a driver object.
  StatusOr<EventHandle> TakeEvent(typename B::ExecutorState& executor) {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    if (!spare_events_.empty()) {
      EventHandle event = spare_events_.back();
      spare_events_.pop_back();
      return event;
    }
    try {
      spare_events_.reserve(events_made_ + 1);  // so that giving events back never throws
    } catch (const std::bad_alloc&) {
      return OutOfMemory();
    }
    EventHandle event{};
    STREAMEXECUTOR_RETURN_IF_ERROR(B::CreateEvent(executor, event));
    ++events_made_;
    return event;
  }
  [[gnu::cold]] static Status OutOfMemory() {
    return Status(ErrorCode::kResourceExhausted,
                  "a synchronous operation: out of host memory to order it after the executor's streams");
  }
  void DropSyncStreamLocked(typename B::ExecutorState& executor) {
    if (!sync_stream_open_) return;
    B::DestroyStream(executor, sync_stream_);
    sync_stream_ = typename B::StreamHandle{};
    sync_stream_open_ = false;
  }

  std::mutex sync_mutex_;  // the synchronous stream; taken before streams_mutex_
  typename B::StreamHandle sync_stream_{};
  bool sync_stream_open_ = false;
  std::mutex streams_mutex_;       // the list and the spare ordering events
  std::atomic<int> capturing_{0};  // streams capturing now
  LiveStream<B>* first_stream_ = nullptr;
  std::vector<EventHandle> spare_events_;
  std::size_t events_made_ = 0;
};

}  // namespace detail
}  // namespace streamexecutor
