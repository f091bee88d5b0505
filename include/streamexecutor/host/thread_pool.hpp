// The host backend's "device": a pool of worker threads that drains stream
// command queues, one thread per stream at a time (so each stream runs in
// order), and splits every launch's blocks across all idle threads.
//
// A serial pool (HostBackend with Traits::kSerial) has no workers: a stream that becomes
// ready is drained at once by the thread that made it ready (the one that
// enqueued, or the one that completed the event it waited for), and a
// launch runs its blocks in order on that thread.
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
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "streamexecutor/detail/backoff.hpp"
#include "streamexecutor/host/command_queue.hpp"

namespace streamexecutor::host_detail {

class STREAMEXECUTOR_EXPORT Pool {
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
  // Per-block scratch for SharedDeviceMemory parameters. Each worker owns this
  // much from its start, so launches never allocate it.
  static constexpr std::uint64_t kSharedMemoryPerBlock = 1 << 20;

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
      stream->next_ready_ = nullptr;
      if (ready_tail_) ready_tail_->next_ready_ = stream;
      else ready_head_ = stream;
      ready_tail_ = stream;
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
  struct Job {
    std::atomic<bool> active{false};
    std::atomic<int> helpers{0};
    std::atomic<std::uint64_t> next_chunk{0};
    std::atomic<std::uint64_t> blocks_done{0};
    std::atomic<bool> failed{false};
    const LaunchCommand* launch = nullptr;
    LaunchView view{};
    std::uint64_t total_blocks = 0;
    std::uint64_t chunk = 1;
    std::mutex failure_mutex;
    std::string failure;
  };
  static constexpr std::size_t kMaxJobs = 32;

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

  HostStream* PopReady() {
    if (ready_count_.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard<std::mutex> lock(ready_mutex_);
    HostStream* stream = ready_head_;
    if (stream) {
      ready_head_ = stream->next_ready_;
      if (!ready_head_) ready_tail_ = nullptr;
      ready_count_.fetch_sub(1, std::memory_order_relaxed);
      // Counted as draining before the node is released, so that Quiesce()
      // cannot see the stream unreferenced while this thread still holds it.
      stream->draining_.fetch_add(1, std::memory_order_seq_cst);
      stream->in_ready_list_.store(false, std::memory_order_seq_cst);
    }
    return stream;
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
    is_worker_ = true;
    started_.fetch_add(1, std::memory_order_release);
    Backoff backoff;
    std::uint64_t seen_epoch = epoch_.load(std::memory_order_seq_cst);
    while (!stop_.load(std::memory_order_relaxed)) {
      if (HelpJobs()) {
        backoff.Reset();
        continue;
      }
      if (HostStream* stream = PopReady()) {
        if (Claim(stream)) DrainCommands(stream);
        stream->draining_.fetch_sub(1, std::memory_order_seq_cst);  // last access to the stream
        backoff.Reset();
        continue;
      }
      if (backoff.Poll()) continue;
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      sleep_cv_.wait(lock, [&] {
        return stop_.load(std::memory_order_relaxed) || epoch_.load(std::memory_order_seq_cst) != seen_epoch;
      });
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      seen_epoch = epoch_.load(std::memory_order_seq_cst);
      backoff.Reset();
    }
  }

  friend class CompletionToken;


  // Runs up to kBatch commands of `stream`, then either finds it empty (idle),
  // parked on an event, or puts it back at the end of the ready list.
  // Runs the commands of a stream this thread has claimed (state kRunning).
  // A worker rereads the tail only in PollForMore, after a pause; a caller
  // draining its own stream rereads it at once and never polls, because it
  // returns to its own work as soon as the stream is empty.
  void DrainCommands(HostStream* stream) {
    const HostStream::DrainFrame frame(stream);
    const bool polls = is_worker_;
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
        if (stream->has_deferred_.load(std::memory_order_seq_cst)) [[unlikely]] stream->ReleaseDeferred(head);
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
      if (ready_count_.load(std::memory_order_relaxed) != 0 || active_jobs_.load(std::memory_order_relaxed) != 0 ||
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

  // False when the stream parked on an event; the command then runs again
  // when the stream resumes.
  bool Execute(HostStream* stream, Command& command) {
    using Kind = Command::Kind;
    const bool skip = stream->failed();
    switch (command.kind) {
      case Kind::kLaunch:
        if (!skip) RunLaunch(stream, command);
        return true;
      case Kind::kCopy:
        if (!skip && command.copy.bytes != 0) std::memmove(command.copy.dst, command.copy.src, command.copy.bytes);
        return true;
      case Kind::kFill:
        if (!skip) Fill(command.fill);
        return true;
      case Kind::kRecordEvent:
        // Runs even on a failed stream: a stream waiting on this event must not hang.
        ResumeWaiters(command.event.token->Complete());
        command.event.token->Release();
        return true;
      case Kind::kWaitEvent:
        if (command.event.token->AddWaiter(stream)) return false;
        command.event.token->Release();
        return true;
      case Kind::kCallback:
        if (!skip) {
          struct Invoke {
            Command& command;
            void operator()() const { command.callback.invoke(command.payload); }
          } invoke{command};
          const BlockingGuard blocking(this);
          if (Status status = streamexecutor::detail::InvokeHostCallback(invoke, stream->label().backend, stream->label().ordinal);
              !status.ok()) {
            stream->Fail(std::move(status));
          }
        }
        command.callback.destroy(command.payload);
        return true;
    }
    return true;
  }

  static void Fill(const FillCommand& fill) {
    if (fill.byte_fill) {
      std::memset(fill.dst, static_cast<int>(fill.pattern & 0xff), fill.bytes);
      return;
    }
    auto* words = static_cast<std::uint32_t*>(fill.dst);
    std::fill(words, words + fill.bytes / 4, fill.pattern);
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
    explicit BlockingGuard(Pool* p) : pool(is_worker_ ? p : nullptr) {
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

  static std::vector<std::byte>& Scratch() {
    thread_local std::vector<std::byte> scratch;
    return scratch;
  }

  // Streams are drained by workers only, whose scratch has the full size; a
  // waiting caller thread helps only with launches its scratch can hold.
  static void RunChunk(Job& job, std::uint64_t first, std::uint64_t end) {
    try {
      job.launch->runner(job.launch->function, job.view, first, end, Scratch().data());
    } catch (const std::exception& e) {
      RecordFailure(job, e.what());
    } catch (...) {
      RecordFailure(job, "a non-std::exception");
    }
  }

  static void RecordFailure(Job& job, const char* what) {
    std::lock_guard<std::mutex> lock(job.failure_mutex);
    if (!job.failed.load(std::memory_order_relaxed)) job.failure = what;
    job.failed.store(true, std::memory_order_release);
  }

  // Claims chunks of `job` until none are left; returns whether it ran any.
  static bool WorkOn(Job& job) {
    bool worked = false;
    for (;;) {
      const std::uint64_t chunk = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
      const std::uint64_t first = chunk * job.chunk;
      if (first >= job.total_blocks) return worked;
      const std::uint64_t end = std::min(first + job.chunk, job.total_blocks);
      if (!job.failed.load(std::memory_order_relaxed)) RunChunk(job, first, end);
      job.blocks_done.fetch_add(end - first, std::memory_order_acq_rel);
      worked = true;
    }
  }

  bool HelpJobs() {
    if (active_jobs_.load(std::memory_order_acquire) == 0) return false;
    bool worked = false;
    for (JobSlot& slot : jobs_storage_) {
      Job& job = slot.job;
      if (!job.active.load(std::memory_order_acquire)) continue;
      job.helpers.fetch_add(1, std::memory_order_seq_cst);
      if (job.active.load(std::memory_order_seq_cst) && job.launch->shared_bytes <= Scratch().size()) {
        worked |= WorkOn(job);
      }
      job.helpers.fetch_sub(1, std::memory_order_seq_cst);
    }
    return worked;
  }

  Job* AcquireJob() {
    for (JobSlot& slot : jobs_storage_) {
      bool expected = false;
      if (!slot.claimed.load(std::memory_order_relaxed) &&
          slot.claimed.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
        return &slot.job;
      }
    }
    return nullptr;
  }

  void RunLaunch(HostStream* stream, const Command& command) {
    const LaunchCommand& launch = command.launch;
    const std::uint64_t total = launch.grid.dim().Count();
    SlotGuard slot(this);
    Job local;
    Job& job = slot.job ? *slot.job : local;
    job.launch = &launch;
    job.view = LaunchView{launch.grid.dim(), launch.block.dim(), command.payload};
    job.total_blocks = total;
    // Enough chunks for balance across the pool, few enough to keep the
    // per-chunk atomic cheap relative to the work in it.
    const std::uint64_t parts = std::uint64_t{size() + 1} * 4;
    job.chunk = std::max<std::uint64_t>(1, total / parts);
    job.next_chunk.store(0, std::memory_order_relaxed);
    job.blocks_done.store(0, std::memory_order_relaxed);
    job.failed.store(false, std::memory_order_relaxed);
    const bool parallel = !serial_ && slot.job != nullptr && total > 1;
    if (parallel) {
      job.active.store(true, std::memory_order_seq_cst);
      active_jobs_.fetch_add(1, std::memory_order_seq_cst);
      Wake();
    }
    WorkOn(job);
    if (parallel) {
      // Chunks still running belong to threads that may have lost their core
      // (workers and helping callers can outnumber the cores): yield to them.
      Backoff backoff;
      while (job.blocks_done.load(std::memory_order_acquire) < total) {
        if (!backoff.Poll()) std::this_thread::yield();
      }
      job.active.store(false, std::memory_order_seq_cst);
      active_jobs_.fetch_sub(1, std::memory_order_seq_cst);
      while (job.helpers.load(std::memory_order_seq_cst) != 0) streamexecutor::detail::CpuPause();
    }
    if (job.failed.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(job.failure_mutex);
      stream->Fail(MakeError(ErrorCode::kAborted, "kernel '{}' threw an exception: {}",
                             launch.kernel_name ? *launch.kernel_name : std::string("<unnamed>"), job.failure));
    }
  }

  struct JobSlot {
    std::atomic<bool> claimed{false};
    Job job;
  };
  struct SlotGuard {
    explicit SlotGuard(Pool* owner) : pool(owner), job(owner->AcquireJob()) {}
    ~SlotGuard() {
      if (!job) return;
      for (JobSlot& slot : pool->jobs_storage_) {
        if (&slot.job == job) slot.claimed.store(false, std::memory_order_release);
      }
    }
    Pool* pool;
    Job* job;
  };

  const bool serial_;
  std::vector<std::thread> workers_;
  std::atomic<unsigned> started_{0};
  static inline thread_local bool is_worker_ = false;
  std::atomic<int> in_callbacks_{0};
  std::mutex spares_mutex_;
  std::vector<std::thread> spares_;
  std::atomic<int> spare_count_{0};
  std::atomic<bool> stop_{false};

  std::mutex ready_mutex_;
  HostStream* ready_head_ = nullptr;
  HostStream* ready_tail_ = nullptr;
  std::atomic<int> ready_count_{0};

  std::array<JobSlot, kMaxJobs> jobs_storage_;
  std::atomic<int> active_jobs_{0};

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
    } else if (!backoff.Poll()) {
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
      } else if (!backoff.Poll()) {
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
