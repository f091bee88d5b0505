// The host backend's command interpreter: what running one ring command
// means (copies, fills, callbacks, event records and waits, launches), and
// how a launch's blocks are cut into chunks that every thread of the pool
// may help with. Which thread runs which stream, and when, is the
// scheduler's (thread_pool.hpp: workers, the ready list, polling, spare
// workers); it derives from this class and gives it Wake(), size(),
// serial(), ResumeWaiters(), Backoff and a BlockingGuard for callbacks.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "streamexecutor/detail/backoff.hpp"
#include "streamexecutor/detail/sticky_status.hpp"
#include "streamexecutor/host/command_queue.hpp"

namespace streamexecutor::host_detail {

template <typename Scheduler>
class CommandInterpreter {
 public:
  // Per-block scratch for SharedDeviceMemory parameters. Each worker owns this
  // much from its start, so launches never allocate it.
  static constexpr std::uint64_t kSharedMemoryPerBlock = 1 << 20;

 protected:
  CommandInterpreter() = default;

  // One launch being run: its chunks are claimed by whoever helps.
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

  // False when the stream parked on an event or a value; the command then
  // runs again when the stream resumes.
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
        scheduler().ResumeWaiters(command.event.token->Complete());
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
          const typename Scheduler::BlockingGuard blocking(&scheduler());
          if (Status status =
                  streamexecutor::detail::InvokeHostCallback(invoke, stream->label().backend, stream->label().ordinal);
              !status.ok()) {
            stream->Fail(std::move(status));
          }
        }
        command.callback.destroy(command.payload);
        return true;
      case Kind::kConditional:
        if (!skip) RunConditional(stream, command.conditional);
        if (command.conditional.release != nullptr) command.conditional.release(command.conditional.owner);
        return true;
      // Both run on a failed stream too, as event records and waits do: a
      // stream waiting on this one's value must not hang on its error.
      case Kind::kWaitValue: return !ValueWaits::Get().Park(stream, command.value);
      case Kind::kWriteValue:
        StoreWord(command.value);
        scheduler().ResumeValueWaiters();
        return true;
      case Kind::kRaiseValue:
        RaiseWord(command.value);
        scheduler().ResumeValueWaiters();
        return true;
    }
    return true;
  }

  // The body runs here, on the stream's worker, between the commands before
  // and after it. It holds no event waits (the core refuses them), so no
  // command of it parks the stream.
  void RunConditional(HostStream* stream, const ConditionalCommand& conditional) {
    do {
      if (stream->failed() || *conditional.condition == 0) return;
      for (std::size_t i = 0; i < conditional.count; ++i) {
        Command command = conditional.body[i];
        Execute(stream, command);
      }
    } while (conditional.loop);
  }

  static void Fill(const FillCommand& fill) {
    if (fill.byte_fill) {
      std::memset(fill.dst, static_cast<int>(fill.pattern & 0xff), fill.bytes);
      return;
    }
    auto* words = static_cast<std::uint32_t*>(fill.dst);
    std::fill(words, words + fill.bytes / 4, fill.pattern);
  }

  // Whether some launch is running that other threads may help with.
  bool HasActiveJobs() const { return active_jobs_.load(std::memory_order_relaxed) != 0; }

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
    const std::uint64_t parts = std::uint64_t{scheduler().size() + 1} * 4;
    job.chunk = std::max<std::uint64_t>(1, total / parts);
    job.next_chunk.store(0, std::memory_order_relaxed);
    job.blocks_done.store(0, std::memory_order_relaxed);
    job.failed.store(false, std::memory_order_relaxed);
    const bool parallel = !scheduler().serial() && slot.job != nullptr && total > 1;
    if (parallel) {
      job.active.store(true, std::memory_order_seq_cst);
      active_jobs_.fetch_add(1, std::memory_order_seq_cst);
      scheduler().Wake();
    }
    WorkOn(job);
    if (parallel) {
      // Chunks still running belong to threads that may have lost their core
      // (workers and helping callers can outnumber the cores): yield to them.
      typename Scheduler::Backoff backoff;
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
    explicit SlotGuard(CommandInterpreter* owner) : pool(owner), job(owner->AcquireJob()) {}
    ~SlotGuard() {
      if (!job) return;
      for (JobSlot& slot : pool->jobs_storage_) {
        if (&slot.job == job) slot.claimed.store(false, std::memory_order_release);
      }
    }
    CommandInterpreter* pool;
    Job* job;
  };

 private:
  Scheduler& scheduler() { return static_cast<Scheduler&>(*this); }

  std::array<JobSlot, kMaxJobs> jobs_storage_;
  std::atomic<int> active_jobs_{0};
};

}  // namespace streamexecutor::host_detail
