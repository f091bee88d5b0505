// The host backend's "device", its scheduler: a pool of worker threads that
// drains stream command queues, one thread per stream at a time (so each
// stream runs in order), with the ready list, polling and spare workers for
// callbacks that block. What running a command means, and how a launch's
// blocks are shared among idle threads, is the command interpreter's
// (interpreter.hpp), which the pool derives from.
//
// A serial pool (HostBackend with Traits::kSerial) has no workers: a stream
// that becomes ready is drained at once by the thread that made it ready (the
// one that enqueued, or the one that completed the event it waited for), and
// a launch runs its blocks in order on that thread.
//
// Stream priorities (core/stream_priority.hpp) are the order in which free
// threads take ready streams: one ready list per priority, the highest that
// is not empty first, and a ready high-priority stream before helping with
// a launch that is already running. A stream keeps its thread for a batch
// (kBatch commands) and then goes to the back of its own list, so a busy
// high-priority stream delays lower ones for as long as it has work, as
// CUDA's priorities do; nothing is preempted inside a batch.
//
// Threads without work poll for a while before sleeping (Pool::Backoff),
// because waking a sleeping thread costs tens of microseconds while a
// polling one reacts within about one.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "streamexecutor/detail/backoff.hpp"
#include "streamexecutor/host/command_queue.hpp"
#include "streamexecutor/host/interpreter.hpp"

namespace streamexecutor::host_detail {

class STREAMEXECUTOR_EXPORT Pool : public CommandInterpreter<Pool> {
 public:
  // How long a thread with nothing to do keeps polling (detail::Backoff:
  // pause, then yield the core) before it sleeps. Waking a sleeping thread
  // costs tens of microseconds here; a polling one reacts within about one.
  static constexpr std::chrono::microseconds kYieldPhase{100};
  struct Backoff : streamexecutor::detail::Backoff {
    Backoff() : streamexecutor::detail::Backoff(kYieldPhase) {}
  };
  // Commands one thread runs from a stream before letting other streams go first.
  static constexpr int kBatch = 64;
  // A worker that has caught up with a stream watches its tail for a while
  // before letting it go idle (PollForMore), in `pause` rounds: every poll
  // starts with kPollMinPauses between reads of the tail, doubled up to
  // kPollMaxPauses while each read finds at least kStreamingRun new commands
  // (a producer enqueueing back to back), for kPollWindowPauses in all. Each
  // read of the tail takes its line from the producer, whose next enqueue then
  // waits for it; spacing the reads lets commands pile up between them.
  static constexpr int kPollMinPauses = 4;
  static constexpr int kPollMaxPauses = 32;
  static constexpr int kPollWindowPauses = 64;
  static constexpr int kStreamingRun = 4;

  // Throws std::system_error when a thread cannot be started; the threads
  // started so far are stopped first, so nothing is left running.
  explicit Pool(unsigned workers, bool serial = false) : serial_(serial) {
    try {
      workers_.reserve(workers);
      for (unsigned i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
    } catch (...) {
      StopAndJoin();
      throw;
    }
    // Each worker allocates its scratch when it starts; wait for that here so
    // that no allocation happens later, in the middle of someone's launches.
    while (started_.load(std::memory_order_acquire) != workers) std::this_thread::yield();
  }
  ~Pool() { StopAndJoin(); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()); }
  bool serial() const { return serial_; }

  // Puts a kQueued stream on the ready list, unless it is still on it (a
  // caller that drained it ahead of the workers leaves its node behind).
  void PushReady(HostStream* stream) {
    if (serial_) {
      PrepareCaller();
      TryDrainFromCaller(stream);
      return;
    }
    if (stream->in_ready_list_.exchange(true, std::memory_order_seq_cst)) return;
    {
      std::lock_guard<std::mutex> lock(ready_mutex_);
      const std::size_t band = Band(stream->priority_);
      ReadyList& list = ready_[band];
      stream->next_ready_ = nullptr;
      if (list.tail)
        list.tail->next_ready_ = stream;
      else
        list.head = stream;
      list.tail = stream;
      if (band == 0) urgent_count_.fetch_add(1, std::memory_order_relaxed);
      ready_count_.fetch_add(1, std::memory_order_seq_cst);
    }
    Wake();
  }

  // Completes a recording from outside the pool (another backend's driver
  // thread lifting a ThenWaitFor on it) and resumes the streams parked on it.
  static void CompleteFromOutside(CompletionToken* token) {
    HostStream* waiters = token->Complete();
    if (waiters != nullptr) waiters->pool_->ResumeWaiters(waiters);
  }

  // While a stream is parked on a ThenWaitValue, threads that would sleep
  // wake this often to read the words: a word written by a kernel or by host
  // code (not by a ThenWriteValue, which resumes its waiters itself) is seen
  // within about this long.
  static constexpr std::chrono::microseconds kValuePollInterval{200};

  // Resumes the streams whose ThenWaitValue holds now; whether there were any.
  static bool ResumeValueWaiters() {
    HostStream* stream = ValueWaits::Get().TakeSatisfied();
    const bool resumed = stream != nullptr;
    while (stream != nullptr) {
      HostStream* next = std::exchange(stream->next_waiter_, nullptr);
      stream->pool_->ResumeWaiters(stream);
      stream = next;
    }
    return resumed;
  }
  // Sleeps a thread that waits while streams are parked on values, after
  // reading their words; false when none is parked (sleep as usual).
  static bool PollValueWaits() {
    if (!ValueWaits::Get().any()) return false;
    if (!ResumeValueWaiters()) std::this_thread::sleep_for(kValuePollInterval);
    return true;
  }

  // Lets a thread that waits for a stream work on whatever launch is running.
  bool HelpOnce() { return HelpJobs(); }

  // A thread blocked on `stream` runs its queued commands itself instead of
  // waiting for a worker to pick them up: one cross-thread hand-off less per
  // synchronisation, as in TBB where the waiting thread joins the work.
  // Gives a thread that synchronises the scratch a drained launch may need.
  // Done on every synchronisation, not only when it drains, so that the one
  // allocation happens on the thread's first wait, whatever it finds to do.
  static void PrepareCaller() {
    auto& scratch = Scratch();
    if (scratch.size() < kSharedMemoryPerBlock) scratch.resize(kSharedMemoryPerBlock);
  }

  bool TryDrainFromCaller(HostStream* stream) {
    stream->draining_.fetch_add(1, std::memory_order_seq_cst);
    const bool claimed = Claim(stream);
    if (claimed) DrainCommands(stream);
    stream->draining_.fetch_sub(1, std::memory_order_seq_cst);
    return claimed;
  }

 private:
  void StopAndJoin() {
    {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      stop_.store(true, std::memory_order_seq_cst);
    }
    sleep_cv_.notify_all();
    for (auto& worker : workers_) worker.join();
    // Joined outside the lock: a spare inside a callback may still reach
    // AddSpare, which sees stop_ and starts nothing.
    std::vector<std::thread> spares;
    {
      std::lock_guard<std::mutex> lock(spares_mutex_);
      spares.swap(spares_);
    }
    for (auto& spare : spares) spare.join();
  }

  void Wake() {
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      sleep_cv_.notify_all();
    }
  }

  // Ready lists by priority, the most urgent first.
  static constexpr std::size_t kBands = 3;
  static std::size_t Band(StreamPriority priority) {
    return priority == StreamPriority::kHigh ? 0 : priority == StreamPriority::kNormal ? 1 : 2;
  }
  struct ReadyList {
    HostStream* head = nullptr;
    HostStream* tail = nullptr;
  };

  // The head of the most urgent ready list among bands 0..last_band.
  HostStream* PopReady(std::size_t last_band = kBands - 1) {
    if (ready_count_.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard<std::mutex> lock(ready_mutex_);
    for (std::size_t band = 0; band <= last_band; ++band) {
      ReadyList& list = ready_[band];
      HostStream* stream = list.head;
      if (stream == nullptr) continue;
      list.head = stream->next_ready_;
      if (!list.head) list.tail = nullptr;
      if (band == 0) urgent_count_.fetch_sub(1, std::memory_order_relaxed);
      ready_count_.fetch_sub(1, std::memory_order_relaxed);
      // Counted as draining before the node is released, so that Quiesce()
      // cannot see the stream unreferenced while this thread still holds it.
      stream->draining_.fetch_add(1, std::memory_order_seq_cst);
      stream->in_ready_list_.store(false, std::memory_order_seq_cst);
      return stream;
    }
    return nullptr;
  }
  // Runs a stream PopReady returned.
  void RunPopped(HostStream* stream) {
    if (Claim(stream)) DrainCommands(stream);
    stream->draining_.fetch_sub(1, std::memory_order_seq_cst);  // last access to the stream
  }

  // Whoever moves a stream from kQueued (or from kPolling, taking it from the
  // worker that watches it) to kRunning runs it; everyone else (a worker
  // popping a node the caller already drained) leaves it alone.
  static bool Claim(HostStream* stream) {
    auto expected = HostStream::State::kQueued;
    if (stream->state_.compare_exchange_strong(expected, HostStream::State::kRunning, std::memory_order_seq_cst)) {
      return true;
    }
    if (expected != HostStream::State::kPolling) return false;
    return stream->state_.compare_exchange_strong(expected, HostStream::State::kRunning, std::memory_order_seq_cst);
  }

  void WorkerLoop() {
    Scratch().resize(kSharedMemoryPerBlock);
    worker_of_ = this;
    started_.fetch_add(1, std::memory_order_release);
    Backoff backoff;
    std::uint64_t seen_epoch = epoch_.load(std::memory_order_seq_cst);
    while (!stop_.load(std::memory_order_relaxed)) {
      // A high-priority stream before helping with a launch already running.
      if (urgent_count_.load(std::memory_order_relaxed) != 0) {
        if (HostStream* stream = PopReady(0)) {
          RunPopped(stream);
          backoff.Reset();
          continue;
        }
      }
      if (HelpJobs()) {
        backoff.Reset();
        continue;
      }
      if (HostStream* stream = PopReady()) {
        RunPopped(stream);
        backoff.Reset();
        continue;
      }
      const bool values_parked = ValueWaits::Get().any();
      if (values_parked && ResumeValueWaiters()) {
        backoff.Reset();
        continue;
      }
      if (backoff.Poll()) continue;
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      const auto woken = [&] {
        return stop_.load(std::memory_order_relaxed) || epoch_.load(std::memory_order_seq_cst) != seen_epoch;
      };
      if (values_parked)
        sleep_cv_.wait_for(lock, kValuePollInterval, woken);
      else
        sleep_cv_.wait(lock, woken);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      seen_epoch = epoch_.load(std::memory_order_seq_cst);
      backoff.Reset();
    }
  }

  friend class CompletionToken;
  friend class CommandInterpreter<Pool>;

  // Runs up to kBatch commands of `stream`, then either finds it empty (idle),
  // parked on an event, or puts it back at the end of the ready list.
  // Runs the commands of a stream this thread has claimed (state kRunning).
  // A worker rereads the tail only in PollForMore, after a pause; a caller
  // draining its own stream rereads it at once and never polls, because it
  // returns to its own work as soon as the stream is empty.
  void DrainCommands(HostStream* stream) {
    const HostStream::DrainFrame frame(stream);
    const bool polls = worker_of_ == this;
    int poll_interval = kPollMinPauses;
    for (;;) {
      int ran = 0;
      std::uint64_t head = stream->head_.load(std::memory_order_relaxed);
      std::uint64_t tail = stream->tail_.load(std::memory_order_acquire);
      while (head < tail || (!polls && head < (tail = stream->tail_.load(std::memory_order_acquire)))) {
        if (ran == kBatch && !serial_) {
          stream->state_.store(HostStream::State::kQueued, std::memory_order_seq_cst);
          PushReady(stream);
          return;
        }
        Command& command = stream->ring_[head % HostStream::kCapacity];
        if (!Execute(stream, command)) return;  // parked on an event
        ++head;
        // seq_cst pairs with HostStream::DeferUntilDone: either it sees this
        // head, or this thread sees its flag.
        stream->head_.store(head, std::memory_order_seq_cst);
        if (stream->has_deferred_.load(std::memory_order_seq_cst)) [[unlikely]]
          stream->ReleaseDeferred(head);
        stream->head_.notify_all();
        ++ran;
      }
      if (polls) {
        poll_interval = ran >= kStreamingRun ? std::min(poll_interval * 2, kPollMaxPauses) : kPollMinPauses;
        const PollResult polled = PollForMore(stream, head, poll_interval);
        if (polled == PollResult::kTaken) return;
        if (polled == PollResult::kMore) continue;
        // Held again, but possibly taken and handed back meanwhile (a caller
        // claimed it, another worker polled it): the head may have moved.
        head = stream->head_.load(std::memory_order_relaxed);
      }
      stream->state_.store(HostStream::State::kIdle, std::memory_order_seq_cst);
      if (head == stream->tail_.load(std::memory_order_seq_cst)) return;
      auto expected = HostStream::State::kIdle;
      if (!stream->state_.compare_exchange_strong(expected, HostStream::State::kRunning, std::memory_order_seq_cst)) {
        return;  // the producer saw it idle and queued it itself
      }
    }
  }

  // Watches a drained stream's tail, still holding it, so that a producer
  // enqueueing again soon neither queues the stream nor wakes a worker. The
  // stream is kPolling meanwhile: a producer leaves it alone, and a caller
  // that synchronises (or a worker popping a stale node) may claim it and run
  // the new commands itself without waiting for the next read. kTaken means
  // that happened and this thread must not touch the stream again; kQuiet
  // that nothing came (or other work is waiting) and the stream, kRunning
  // again, goes idle as usual.
  enum class PollResult { kMore, kQuiet, kTaken };
  PollResult PollForMore(HostStream* stream, std::uint64_t head, int interval) {
    stream->state_.store(HostStream::State::kPolling, std::memory_order_seq_cst);
    bool more = false;
    for (int spent = 0; spent < kPollWindowPauses; spent += interval) {
      for (int i = 0; i < interval; ++i) streamexecutor::detail::CpuPause();
      if (stream->tail_.load(std::memory_order_acquire) != head) {
        more = true;
        break;
      }
      if (ready_count_.load(std::memory_order_relaxed) != 0 || HasActiveJobs() ||
          stop_.load(std::memory_order_relaxed)) {
        break;
      }
      if (stream->state_.load(std::memory_order_relaxed) != HostStream::State::kPolling) return PollResult::kTaken;
    }
    auto expected = HostStream::State::kPolling;
    if (!stream->state_.compare_exchange_strong(expected, HostStream::State::kRunning, std::memory_order_seq_cst)) {
      return PollResult::kTaken;
    }
    return more ? PollResult::kMore : PollResult::kQuiet;
  }

  void ResumeWaiters(HostStream* waiter) {
    while (waiter) {
      HostStream* next = waiter->next_waiter_;
      // Held across the hand-off: once the state is kQueued a caller may
      // drain the stream and, seeing it idle, destroy it before PushReady.
      waiter->draining_.fetch_add(1, std::memory_order_seq_cst);
      waiter->state_.store(HostStream::State::kQueued, std::memory_order_seq_cst);
      PushReady(waiter);
      waiter->draining_.fetch_sub(1, std::memory_order_seq_cst);  // last access to the waiter
      waiter = next;
    }
  }

  // Host callbacks may block (on an event, a lock, I/O). While every worker
  // is inside one, nothing else would run, and a callback waiting for work of
  // another stream would wait forever: a spare worker is started instead, as
  // managed blocking does in fork-join pools. Spares stay for the pool's life.
  struct BlockingGuard {
    // The pool whose worker this thread is (a se::host worker may run another
    // pool's stream: the serial one it resumed), not the stream's.
    explicit BlockingGuard(Pool*) : pool(worker_of_) {
      if (pool == nullptr) return;
      const int blocked = pool->in_callbacks_.fetch_add(1, std::memory_order_seq_cst) + 1;
      const int threads = static_cast<int>(pool->workers_.size()) + pool->spare_count_.load(std::memory_order_acquire);
      if (blocked >= threads) {
        pool->AddSpare();
      }
    }
    ~BlockingGuard() {
      if (pool) pool->in_callbacks_.fetch_sub(1, std::memory_order_seq_cst);
    }
    BlockingGuard(const BlockingGuard&) = delete;
    BlockingGuard& operator=(const BlockingGuard&) = delete;
    Pool* pool;
  };
  static constexpr int kMaxSpares = 256;
  void AddSpare() {
    std::lock_guard<std::mutex> lock(spares_mutex_);
    if (stop_.load(std::memory_order_relaxed) || spares_.size() >= kMaxSpares) return;
    try {
      spares_.emplace_back([this] { WorkerLoop(); });
      spare_count_.fetch_add(1, std::memory_order_release);
    } catch (...) {
      // No thread to spare: the callbacks keep their workers, as before.
    }
  }

  const bool serial_;
  std::vector<std::thread> workers_;
  std::atomic<unsigned> started_{0};
  static inline thread_local Pool* worker_of_ = nullptr;  // the pool whose worker this thread is
  std::atomic<int> in_callbacks_{0};
  std::mutex spares_mutex_;
  std::vector<std::thread> spares_;
  std::atomic<int> spare_count_{0};
  std::atomic<bool> stop_{false};

  std::mutex ready_mutex_;
  std::array<ReadyList, kBands> ready_{};  // under ready_mutex_
  std::atomic<int> ready_count_{0};        // in all lists
  std::atomic<int> urgent_count_{0};       // in ready_[0], the high-priority list

  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::atomic<int> sleepers_{0};
  std::atomic<std::uint64_t> epoch_{0};
};

inline void HostStream::Publish() {
  tail_.fetch_add(1, std::memory_order_seq_cst);
  producer_lock_.unlock();
  auto expected = State::kIdle;
  if (state_.load(std::memory_order_seq_cst) == State::kIdle &&
      state_.compare_exchange_strong(expected, State::kQueued, std::memory_order_seq_cst)) {
    pool_->PushReady(this);
  }
}

inline void HostStream::PublishBatch(std::uint64_t count) {
  if (count == 0) {
    producer_lock_.unlock();
    return;
  }
  tail_.fetch_add(count, std::memory_order_seq_cst);
  producer_lock_.unlock();
  auto expected = State::kIdle;
  if (state_.load(std::memory_order_seq_cst) == State::kIdle &&
      state_.compare_exchange_strong(expected, State::kQueued, std::memory_order_seq_cst)) {
    pool_->PushReady(this);
  }
}

inline void CompletionToken::Wait() const {
  if (pool_ != nullptr) Pool::PrepareCaller();
  Pool::Backoff backoff;
  while (!done()) {
    if (pool_ != nullptr && pool_->HelpOnce()) {
      backoff.Reset();
    } else if (!backoff.Poll() && !Pool::PollValueWaits()) {
      done_.wait(false, std::memory_order_acquire);
    }
  }
}

inline Status HostStream::Synchronize() {
  if (IsDrainedByThisThread()) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "BlockHostUntilDone on {} was called from a host callback of the same stream; it would "
                     "wait for the callback itself",
                     label_);
  }
  Pool::PrepareCaller();
  // Until the ring is empty, not only up to the tail seen on entry: a host
  // callback of this stream may enqueue into it while we wait, and that work
  // belongs before our return. (Other threads may not enqueue meanwhile: a
  // Stream is used by one thread at a time, its callbacks counted.)
  std::uint64_t target = tail_.load(std::memory_order_acquire);
  Pool::Backoff backoff;
  std::uint64_t head = head_.load(std::memory_order_acquire);
  for (;;) {
    while (head < target) {
      if (pool_->TryDrainFromCaller(this) || pool_->HelpOnce()) {
        backoff.Reset();
      } else if (!backoff.Poll() && !Pool::PollValueWaits()) {
        head_.wait(head, std::memory_order_acquire);
      }
      head = head_.load(std::memory_order_acquire);
    }
    const std::uint64_t tail = tail_.load(std::memory_order_acquire);
    if (tail == target) break;
    target = tail;
  }
  return error();
}

}  // namespace streamexecutor::host_detail
