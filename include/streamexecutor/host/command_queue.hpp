// The host backend's "driver objects": a stream is a ring of fixed-size
// commands filled by the caller and drained in order by one pool thread at a
// time; an event points at the completion token of its latest recording.
//
// Nothing here allocates after a stream is created: commands are written in
// place into preallocated slots, and kernel arguments live inside the slot.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/core/stream_memory.hpp"
#include "streamexecutor/core/stream_priority.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/detail/spin_lock.hpp"
#include "streamexecutor/detail/sticky_status.hpp"
#include "streamexecutor/host/ipc.hpp"
#include "streamexecutor/host/kernel_abi.hpp"

namespace streamexecutor::host_detail {

class Pool;
class HostStream;

inline std::int64_t NowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One recording of an event. Every ThenRecordEvent makes a new token, so a
// wait targets exactly the recording that was latest when it was enqueued:
// a later record of the same event on another stream neither releases nor
// delays it. Queued record and wait commands hold references, so the Event
// may be destroyed while they are pending.
class CompletionToken {
 public:
  // `pool`: the pool whose stream records this, whose launches a waiter may
  // join while it waits; null for recordings no pool completes.
  explicit CompletionToken(Pool* pool = nullptr) : pool_(pool) {}
  void Retain() { references_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  bool done() const { return done_.load(std::memory_order_acquire); }
  std::int64_t timestamp_ns() const { return timestamp_ns_.load(std::memory_order_acquire); }
  // Spins first, joining the pool's launches, and sleeps only after that:
  // a sleeping waiter takes tens of microseconds to wake, far more than the
  // short launch it usually waits for. Defined after Pool (thread_pool.hpp).
  void Wait() const;

  ~CompletionToken() { FireNotifications(); }  // every recording completes; this only guards against hangs

  // Marks the recording complete, lifts the other backends' waits on it and
  // returns the streams parked on it.
  HostStream* Complete() {
    HostStream* waiters;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      timestamp_ns_.store(NowNanoseconds(), std::memory_order_release);
      done_.store(true, std::memory_order_release);
      waiters = std::exchange(waiters_, nullptr);
    }
    done_.notify_all();
    FireNotifications();
    return waiters;
  }
  // Parks `stream` until the recording completes; false if it already has.
  bool AddWaiter(HostStream* stream);
  // Fires `release` when the recording completes. False if it already has
  // (the caller fires it); throws std::bad_alloc when out of memory.
  bool AddNotification(streamexecutor::op::ForeignRelease release) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done()) return false;
    notifications_.push_back(release);
    return true;
  }

 private:
  void FireNotifications() {
    std::vector<streamexecutor::op::ForeignRelease> pending;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending.swap(notifications_);
    }
    for (const auto& release : pending) release();
  }

  Pool* pool_;
  std::atomic<int> references_{1};
  std::atomic<bool> done_{false};
  std::atomic<std::int64_t> timestamp_ns_{0};
  std::mutex mutex_;
  HostStream* waiters_ = nullptr;                                  // intrusive list through HostStream::next_waiter_
  std::vector<streamexecutor::op::ForeignRelease> notifications_;  // other backends' waits
};

// An interprocess event's state, in a page of shared memory that every
// process using the event maps (host/ipc.hpp). Recordings are numbered
// across processes; `completed` is the highest number that has run, so a
// wait for recording n holds until completed >= n. Accessed through
// std::atomic_ref only.
struct SharedEventState {
  alignas(8) std::uint64_t recorded;
  alignas(8) std::uint64_t completed;
};

// The Event's side: which recording is the latest. A never-recorded event is
// complete, as on CUDA. An interprocess event keeps its recordings in its
// SharedEventState instead of completion tokens.
class HostEvent {
 public:
  HostEvent() = default;
  HostEvent(const HostEvent&) = delete;
  HostEvent& operator=(const HostEvent&) = delete;
  ~HostEvent() {
    if (latest_) latest_->Release();
    if (shared_ != nullptr) streamexecutor::detail::UnmapSharedPages(shared_, pages_.bytes);
    if (owns_file_) close(pages_.fd);
  }

  // Makes this an interprocess event on `state`, mapped from `pages`;
  // `owner`: this process made the file (and keeps it open for exports).
  void SetShared(SharedEventState* state, const streamexecutor::detail::SharedPages& pages, bool owner) {
    shared_ = state;
    pages_ = pages;
    owns_file_ = owner;
  }
  SharedEventState* shared() const { return shared_; }
  const streamexecutor::detail::SharedPages& pages() const { return pages_; }
  std::uint64_t SharedRecorded() const { return std::atomic_ref<std::uint64_t>(shared_->recorded).load(); }
  std::uint64_t SharedCompleted() const { return std::atomic_ref<std::uint64_t>(shared_->completed).load(); }
  std::uint64_t NextSharedRecording() { return std::atomic_ref<std::uint64_t>(shared_->recorded).fetch_add(1) + 1; }

  // Installs `token` (which arrives with one reference, for the queued record
  // command) as the latest recording; the event takes a second reference.
  void SetLatest(CompletionToken* token) {
    token->Retain();
    CompletionToken* previous;
    {
      std::lock_guard<streamexecutor::detail::SpinLock> lock(lock_);
      previous = std::exchange(latest_, token);
    }
    if (previous) previous->Release();
  }
  // The latest recording, with a reference the caller must Release; null when
  // never recorded.
  CompletionToken* AcquireLatest() const {
    std::lock_guard<streamexecutor::detail::SpinLock> lock(lock_);
    if (latest_) latest_->Retain();
    return latest_;
  }
  bool IsComplete() const {
    CompletionToken* token = AcquireLatest();
    if (!token) return true;
    const bool done = token->done();
    token->Release();
    return done;
  }
  void Synchronize() const {
    if (CompletionToken* token = AcquireLatest()) {
      token->Wait();
      token->Release();
    }
  }
  // When the latest recording ran; 0 if never recorded.
  std::int64_t timestamp_ns() const {
    CompletionToken* token = AcquireLatest();
    if (!token) return 0;
    const std::int64_t t = token->timestamp_ns();
    token->Release();
    return t;
  }

 private:
  mutable streamexecutor::detail::SpinLock lock_;
  CompletionToken* latest_ = nullptr;
  SharedEventState* shared_ = nullptr;
  streamexecutor::detail::SharedPages pages_{};
  bool owns_file_ = false;
};

// Memory whose Deallocate came while streams still had work queued: freed by
// whichever stream finishes its share of that work last.
struct DeferredFree {
  void* ptr;
  std::atomic<int> remaining;
};

// Plain extents: union members need trivial constructors, which Dim3's
// defaults of 1 would prevent.
struct Extent {
  std::uint64_t x, y, z;
  constexpr Dim3 dim() const { return Dim3{x, y, z}; }
};

struct LaunchCommand {
  BlockRunner runner;
  AnyFunction function;
  Extent grid;
  Extent block;
  std::uint64_t shared_bytes;
  const std::string* kernel_name;
};

struct CopyCommand {
  void* dst;
  const void* src;
  std::size_t bytes;
};

struct FillCommand {
  void* dst;
  std::uint32_t pattern;
  std::size_t bytes;  // a multiple of 4 for 32-bit fills
  bool byte_fill;
};

struct EventCommand {
  CompletionToken* token;  // one reference, dropped when the command has run
};

// A stream memory operation (core/stream_memory.hpp) on a 32- or 64-bit word.
struct ValueCommand {
  void* word;
  std::uint64_t value;
  streamexecutor::WaitCondition condition;  // waits only
  bool wide;
};

struct CallbackCommand {
  void (*invoke)(void* payload);
  void (*destroy)(void* payload);
};

struct Command;
// A recorded If or While: `body` runs while (or once if) *condition != 0.
// The body's commands belong to the command buffer that recorded them;
// `release` (when not null) drops the reference a submission took on it.
struct ConditionalCommand {
  const std::int32_t* condition;
  const Command* body;
  std::size_t count;
  bool loop;
  void* owner;
  void (*release)(void* owner);
};

// A line of its own per slot: the producer filling one slot never shares a
// line with the slot a worker is reading.
struct alignas(64) Command {
  enum class Kind : std::uint8_t {
    kLaunch,
    kCopy,
    kFill,
    kRecordEvent,
    kWaitEvent,
    kCallback,
    kConditional,
    kWaitValue,
    kWriteValue,
    kRaiseValue  // a 64-bit word raised to at least the value: an interprocess event's completion
  };
  static constexpr std::size_t kPayloadBytes = 192;

  Kind kind;
  union {
    LaunchCommand launch;
    CopyCommand copy;
    FillCommand fill;
    EventCommand event;
    CallbackCommand callback;
    ConditionalCommand conditional;
    ValueCommand value;
  };
  // Kernel arguments (the stored tuple) or a host callback object.
  alignas(std::max_align_t) std::byte payload[kPayloadBytes];
};

class HostStream {
 public:
  // kPolling: drained, still held by the worker that ran it, which watches
  // the tail for a moment (Pool::PollForMore); anyone may claim it.
  enum class State : int { kIdle, kQueued, kRunning, kParked, kPolling };
  static constexpr std::uint64_t kCapacity = 1024;

  HostStream(Pool* pool, DeviceLabel label, StreamPriority priority = StreamPriority::kNormal)
      : pool_(pool), ring_(new Command[kCapacity]), label_(label), priority_(priority) {}
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;
  Pool* pool() const { return pool_; }

  // Producer side. Reserve a slot (waits while the ring is full), fill it,
  // then Publish, or Cancel if filling it failed. Producers from several
  // threads are serialised by a spin lock. Null, with refusal() saying why,
  // where the caller is a callback of this very stream and would have to
  // wait: for room in a full ring, or for another thread's producer lock
  // (that thread may itself wait for room, which only the callback's return
  // makes). Either wait would wait for the caller itself.
  Command* Reserve() {
    if (!producer_lock_.try_lock()) [[unlikely]] {
      if (!LockUnlessDrainedByThisThread()) return nullptr;
    }
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - seen_head_ >= kCapacity) [[unlikely]] {
      seen_head_ = head_.load(std::memory_order_acquire);
      while (tail - seen_head_ >= kCapacity) {
        if (IsDrainedByThisThread()) {
          refusal_ = Refusal::kFull;
          producer_lock_.unlock();
          return nullptr;
        }
        head_.wait(seen_head_, std::memory_order_acquire);
        seen_head_ = head_.load(std::memory_order_acquire);
      }
    }
    return &ring_[tail % kCapacity];
  }
  // Why Reserve returned null, for `op` ("ThenLaunch", ...), on the thread it refused.
  [[gnu::cold]] Status Refused(std::string_view op) const {
    if (refusal_ == Refusal::kOtherProducer) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on {}: a host callback of this stream enqueued into it while another thread was "
                       "enqueueing into it; a Stream takes one producer at a time, its callbacks counted as one "
                       "(docs/api.md, Thread safety), and waiting could wait for the callback itself",
                       op, label_);
    }
    return MakeError(ErrorCode::kFailedPrecondition,
                     "{} on {}: a host callback of this stream enqueued into it while its {}-command queue is "
                     "full; waiting for room would wait for the callback itself",
                     op, label_, kCapacity);
  }
  void Publish();  // defined with Pool
  void Cancel() { producer_lock_.unlock(); }

  // Batch form, for submitting a recorded command buffer: one lock, one tail
  // update and at most one wake-up for many commands. ReserveBatch returns
  // room for 1 to `wanted` commands (0 where Reserve would return null), fill
  // BatchSlot(0..n-1), then PublishBatch(n) with n <= the room (0 is fine).
  std::uint64_t ReserveBatch(std::uint64_t wanted) {
    if (Reserve() == nullptr) return 0;
    seen_head_ = head_.load(std::memory_order_acquire);
    const std::uint64_t used = tail_.load(std::memory_order_relaxed) - seen_head_;
    return std::min(wanted, kCapacity - used);
  }
  Command& BatchSlot(std::uint64_t index) { return ring_[(tail_.load(std::memory_order_relaxed) + index) % kCapacity]; }
  void PublishBatch(std::uint64_t count);  // defined with Pool

  // Whether this thread is running one of this stream's commands (a host
  // callback, possibly several frames up): blocking on the stream from here
  // would wait for the caller itself.
  bool IsDrainedByThisThread() const {
    for (const DrainFrame* frame = DrainFrame::top; frame != nullptr; frame = frame->outer) {
      if (frame->stream == this) return true;
    }
    return false;
  }
  [[gnu::noinline, gnu::cold]] bool LockUnlessDrainedByThisThread() {
    if (IsDrainedByThisThread()) {
      refusal_ = Refusal::kOtherProducer;
      return false;
    }
    producer_lock_.lock();
    return true;
  }
  // Marks the current thread as draining `stream` for its lifetime.
  struct STREAMEXECUTOR_EXPORT DrainFrame {
    explicit DrainFrame(const HostStream* s) : stream(s), outer(top) { top = this; }
    ~DrainFrame() { top = outer; }
    DrainFrame(const DrainFrame&) = delete;
    DrainFrame& operator=(const DrainFrame&) = delete;
    const HostStream* stream;
    DrainFrame* outer;
    static inline thread_local DrainFrame* top = nullptr;
  };

  bool HasPendingWork() const { return head_.load(std::memory_order_seq_cst) < tail_.load(std::memory_order_seq_cst); }
  // Frees `deferred` (its share of it) once everything enqueued so far has run.
  void DeferUntilDone(DeferredFree* deferred) {
    std::lock_guard<std::mutex> lock(deferred_mutex_);
    try {
      deferred_.push_back(PendingFree{tail_.load(std::memory_order_seq_cst), deferred});
    } catch (const std::bad_alloc&) {
      // This share is never dropped, so the memory is never freed: a leak
      // when the host is out of memory, never a use after free.
      return;
    }
    has_deferred_.store(true, std::memory_order_seq_cst);
    // The drainer may have passed the target before it saw the flag.
    ReleaseDeferredLocked(head_.load(std::memory_order_seq_cst));
  }
  // Called by the drainer after advancing head.
  void ReleaseDeferred(std::uint64_t head) {
    std::lock_guard<std::mutex> lock(deferred_mutex_);
    ReleaseDeferredLocked(head);
  }

  // Blocks until everything enqueued before the call has run; returns the
  // stream's sticky error.
  Status Synchronize();

  // Synchronize, then wait until no pool thread touches the stream any more:
  // after this it may be deleted.
  void Quiesce() {
    Synchronize().IgnoreError();
    // A node may linger on the pool's ready list after a caller drained the
    // stream; the worker that pops it is counted in draining_ before the node
    // is released, so read the list flag first.
    while (in_ready_list_.load(std::memory_order_seq_cst) || draining_.load(std::memory_order_seq_cst) != 0 ||
           state_.load(std::memory_order_seq_cst) != State::kIdle) {
      std::this_thread::yield();
    }
  }

  Status error() const { return error_.Get(); }
  // Checked before every command, so a lock-free flag beside the Status.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  void Fail(Status status) {
    error_.Fail(std::move(status));
    failed_.store(true, std::memory_order_release);
  }
  const DeviceLabel& label() const { return label_; }

 private:
  friend class Pool;
  friend class CompletionToken;
  friend class ValueWaits;

  // The producer (Reserve/Publish) and the draining thread each write their
  // own cache line, so that neither side's stores invalidate the line the
  // other works on; each side also caches the other's index and rereads it
  // only when it has caught up with its copy.
  static constexpr std::size_t kCacheLine = 64;

  // Read-mostly: written when the stream is created, fails or defers a free.
  Pool* pool_;
  std::unique_ptr<Command[]> ring_;
  DeviceLabel label_;
  const StreamPriority priority_;  // which of the pool's ready lists it joins
  std::atomic<bool> failed_{false};
  std::atomic<bool> has_deferred_{false};
  streamexecutor::detail::StickyStatus error_;

  // The producer's line.
  alignas(kCacheLine) std::atomic<std::uint64_t> tail_{0};  // next slot to fill; advanced by Publish
  streamexecutor::detail::SpinLock producer_lock_;          // held from Reserve to Publish
  std::uint64_t seen_head_ = 0;                             // a head_ the producer has read; under producer_lock_

  // The draining thread's line.
  alignas(kCacheLine) std::atomic<std::uint64_t> head_{0};  // next command to run; advanced by the running thread only
  // Why Reserve last refused: only a thread draining the stream is refused,
  // and it reads this right after (Refused).
  enum class Refusal : std::uint8_t { kFull, kOtherProducer };
  Refusal refusal_ = Refusal::kFull;

  // Scheduling state: changes when the stream goes idle, is queued or parks.
  alignas(kCacheLine) std::atomic<State> state_{State::kIdle};
  std::atomic<bool> in_ready_list_{false};
  // Threads that hold the stream (popped it, or are draining it); their last
  // access to the stream is the decrement.
  std::atomic<int> draining_{0};
  HostStream* next_ready_ = nullptr;            // Pool's ready list
  HostStream* next_waiter_ = nullptr;           // CompletionToken's or ValueWaits' waiter list
  const ValueCommand* parked_value_ = nullptr;  // the wait it is parked on in ValueWaits

  struct PendingFree {
    std::uint64_t target;  // tail when the free was requested
    DeferredFree* deferred;
  };
  void ReleaseDeferredLocked(std::uint64_t head) {
    std::size_t kept = 0;
    for (PendingFree& entry : deferred_) {
      if (entry.target > head) {
        deferred_[kept++] = entry;
      } else if (entry.deferred->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        FreeAllocation(entry.deferred->ptr);
        delete entry.deferred;
      }
    }
    deferred_.resize(kept);
    has_deferred_.store(kept != 0, std::memory_order_seq_cst);
  }
  std::mutex deferred_mutex_;
  std::vector<PendingFree> deferred_;
};

inline bool CompletionToken::AddWaiter(HostStream* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (done()) return false;
  stream->state_.store(HostStream::State::kParked, std::memory_order_seq_cst);
  stream->next_waiter_ = waiters_;
  waiters_ = stream;
  return true;
}

inline std::uint64_t LoadWord(const ValueCommand& command) {
  if (command.wide) return std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(command.word)).load();
  return std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(command.word)).load();
}
inline void StoreWord(const ValueCommand& command) {
  if (command.wide) {
    std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(command.word)).store(command.value);
  } else {
    std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(command.word))
        .store(static_cast<std::uint32_t>(command.value));
  }
}
inline void RaiseWord(const ValueCommand& command) {
  std::atomic_ref<std::uint64_t> word(*static_cast<std::uint64_t*>(command.word));
  std::uint64_t seen = word.load();
  while (seen < command.value && !word.compare_exchange_weak(seen, command.value)) {
  }
}
inline bool WaitHolds(const ValueCommand& command) {
  return streamexecutor::detail::WaitConditionHolds(LoadWord(command), command.value, command.condition, command.wide);
}

// The streams parked on a ThenWaitValue, process-wide: a word may be written
// by a stream of any pool, a kernel, or host code. A ThenWriteValue resumes
// the streams its store satisfies at once; writes of any other kind are seen
// by the pools' idle workers and by threads blocked on a stream, which poll
// while any stream is parked here (Pool::kValuePollInterval). Parked streams
// are linked through HostStream::next_waiter_ (a stream parks on one thing
// at a time), with the wait command, still in the stream's ring, beside it.
class STREAMEXECUTOR_EXPORT ValueWaits {
 public:
  static ValueWaits& Get() {
    static ValueWaits waits;  // trivially destructible: usable during static destruction
    return waits;
  }
  bool any() const { return parked_.load(std::memory_order_seq_cst) != 0; }

  // Parks `stream` on `wait` unless its condition holds; false if it holds.
  bool Park(HostStream* stream, const ValueCommand& wait) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Counted before the word is read: a writer stores, then reads the count
    // (both seq_cst), so either it sees this stream parked or this read sees
    // its store.
    parked_.fetch_add(1, std::memory_order_seq_cst);
    if (WaitHolds(wait)) {
      parked_.fetch_sub(1, std::memory_order_seq_cst);
      return false;
    }
    stream->state_.store(HostStream::State::kParked, std::memory_order_seq_cst);
    stream->parked_value_ = &wait;
    stream->next_waiter_ = head_;
    head_ = stream;
    // A thread already asleep in its Synchronize reads the words from now on.
    stream->head_.notify_all();
    return true;
  }

  // Takes the parked streams whose condition holds now off the list, linked
  // through next_waiter_; the caller resumes them (Pool::ResumeValueWaiters).
  HostStream* TakeSatisfied() {
    if (!any()) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    HostStream* satisfied = nullptr;
    HostStream** link = &head_;
    while (HostStream* stream = *link) {
      if (WaitHolds(*stream->parked_value_)) {
        *link = stream->next_waiter_;
        stream->parked_value_ = nullptr;
        stream->next_waiter_ = satisfied;
        satisfied = stream;
        parked_.fetch_sub(1, std::memory_order_seq_cst);
      } else {
        link = &stream->next_waiter_;
      }
    }
    return satisfied;
  }

 private:
  std::mutex mutex_;
  HostStream* head_ = nullptr;
  std::atomic<int> parked_{0};
};
static_assert(std::is_trivially_destructible_v<ValueWaits>);

}  // namespace streamexecutor::host_detail
