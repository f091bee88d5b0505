// The host backend's "driver objects": a stream is a ring of fixed-size
// commands filled by the caller and drained in order by one pool thread at a
// time; an event is a pair of generation counters.
//
// Nothing here allocates after a stream is created: commands are written in
// place into preallocated slots, and kernel arguments live inside the slot.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <string>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/spin_lock.hpp"
#include "streamexecutor/detail/sticky_status.hpp"
#include "streamexecutor/host/kernel_abi.hpp"

namespace streamexecutor::host_detail {

class Pool;
class HostStream;

inline std::int64_t NowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class HostEvent {
 public:
  // Called when the record is enqueued: the generation a later wait targets.
  std::uint64_t NextGeneration() { return recorded_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  std::uint64_t recorded() const { return recorded_.load(std::memory_order_acquire); }
  bool IsComplete(std::uint64_t generation) const {
    return completed_.load(std::memory_order_acquire) >= generation;
  }
  bool IsComplete() const { return IsComplete(recorded()); }
  std::int64_t timestamp_ns() const { return timestamp_ns_.load(std::memory_order_acquire); }

  // Marks `generation` complete and returns the streams that were parked on it.
  HostStream* Complete(std::uint64_t generation);
  // Parks `stream` until `generation` completes; false if it already has.
  bool AddWaiter(HostStream* stream, std::uint64_t generation);

  // Pending wait commands hold a reference, so that destroying an event that
  // another stream still has to wait on is safe, as it is on CUDA.
  void Retain() { references_.fetch_add(1, std::memory_order_relaxed); }
  // True when the caller dropped the last reference and must delete the event.
  bool Release() { return references_.fetch_sub(1, std::memory_order_acq_rel) == 1; }

  // Waits for every enqueued recording, then for the thread that completed
  // the last one to leave Complete(): after this the event may be deleted.
  void Quiesce() {
    Synchronize();
    std::lock_guard<std::mutex> lock(mutex_);
  }

  void Synchronize() const {
    const std::uint64_t target = recorded();
    std::uint64_t seen = completed_.load(std::memory_order_acquire);
    while (seen < target) {
      completed_.wait(seen, std::memory_order_acquire);
      seen = completed_.load(std::memory_order_acquire);
    }
  }

 private:
  std::atomic<std::uint64_t> recorded_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::int64_t> timestamp_ns_{0};
  std::atomic<int> references_{1};  // the Event that owns it, plus pending waits
  std::mutex mutex_;
  HostStream* waiters_ = nullptr;  // intrusive list through HostStream::next_waiter
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
  HostEvent* event;
  std::uint64_t generation;
};

struct CallbackCommand {
  void (*invoke)(void* payload);
  void (*destroy)(void* payload);
};

struct Command {
  enum class Kind : std::uint8_t { kLaunch, kCopy, kFill, kRecordEvent, kWaitEvent, kCallback };
  static constexpr std::size_t kPayloadBytes = 192;

  Kind kind;
  union {
    LaunchCommand launch;
    CopyCommand copy;
    FillCommand fill;
    EventCommand event;
    CallbackCommand callback;
  };
  // Kernel arguments (the stored tuple) or a host callback object.
  alignas(std::max_align_t) std::byte payload[kPayloadBytes];
};

class HostStream {
 public:
  enum class State : int { kIdle, kQueued, kRunning, kParked };
  static constexpr std::uint64_t kCapacity = 1024;

  HostStream(Pool* pool, int ordinal) : pool_(pool), ring_(new Command[kCapacity]), ordinal_(ordinal) {}
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  // Producer side. Reserve a slot (waits while the ring is full), fill it,
  // then Publish. Producers from several threads are serialised by a spin lock.
  Command& Reserve() {
    producer_lock_.lock();
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    std::uint64_t head = head_.load(std::memory_order_acquire);
    while (tail - head >= kCapacity) {
      head_.wait(head, std::memory_order_acquire);
      head = head_.load(std::memory_order_acquire);
    }
    return ring_[tail % kCapacity];
  }
  void Publish();  // defined with Pool

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
  int ordinal() const { return ordinal_; }

 private:
  friend class Pool;
  friend class HostEvent;

  Pool* pool_;
  std::unique_ptr<Command[]> ring_;
  std::atomic<std::uint64_t> head_{0};  // next command to run; advanced by the running thread only
  std::atomic<std::uint64_t> tail_{0};  // next slot to fill; advanced by Publish
  streamexecutor::detail::SpinLock producer_lock_;  // held from Reserve to Publish
  std::atomic<State> state_{State::kIdle};
  std::atomic<bool> in_ready_list_{false};
  // Threads that hold the stream (popped it, or are draining it); their last
  // access to the stream is the decrement.
  std::atomic<int> draining_{0};
  int ordinal_;
  std::atomic<bool> failed_{false};
  streamexecutor::detail::StickyStatus error_;
  HostStream* next_ready_ = nullptr;   // Pool's ready list
  HostStream* next_waiter_ = nullptr;  // HostEvent's waiter list
};

inline HostStream* HostEvent::Complete(std::uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  timestamp_ns_.store(NowNanoseconds(), std::memory_order_release);
  std::uint64_t seen = completed_.load(std::memory_order_relaxed);
  if (generation > seen) completed_.store(generation, std::memory_order_release);
  completed_.notify_all();
  // Parked streams re-check their own target generation when they resume.
  return std::exchange(waiters_, nullptr);
}

inline bool HostEvent::AddWaiter(HostStream* stream, std::uint64_t generation) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (IsComplete(generation)) return false;
  stream->state_.store(HostStream::State::kParked, std::memory_order_seq_cst);
  stream->next_waiter_ = waiters_;
  waiters_ = stream;
  return true;
}

}  // namespace streamexecutor::host_detail
