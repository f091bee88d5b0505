// The objects behind the OpenCL backend's handles: one Executor per device
// (context, program cache, sub-buffer cache), one StreamState per stream
// (in-order queue, callback thread, the stream's asynchronous error) and one
// LoadedKernel per TypedKernel (cl_kernel plus the lock for its arguments).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <CL/cl_ext.h>

#include "streamexecutor/core/stream_priority.hpp"
#include "streamexecutor/detail/spin_lock.hpp"
#include "streamexecutor/detail/sticky_status.hpp"
#include "streamexecutor/opencl/errors.hpp"

namespace streamexecutor::opencl_detail {

struct DeviceEntry {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
};

// How views with a nonzero offset reach a kernel (docs/opencl.md, "Slices").
enum class SliceScheme {
  kSvmPointer,  // allocations are SVM-backed: clSetKernelArgSVMPointer(base + offset)
  kSubBuffer,   // plain buffers: cached clCreateSubBuffer, offset aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN
};

struct Executor {
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  cl_command_queue sync_queue = nullptr;  // for the Synchronous* operations and pinned maps
  std::string label;                      // "opencl:0 (pthread-skylake...)"
  std::string device_name;
  int ordinal = 0;
  cl_device_svm_capabilities svm = 0;
  bool priority_hints = false;           // the device lists cl_khr_priority_hints: queues take CL_QUEUE_PRIORITY_KHR
  std::uint64_t base_address_align = 1;  // bytes
  std::uint64_t max_allocation = 0;
  SliceScheme slices = SliceScheme::kSubBuffer;

  std::mutex mutex;                            // guards everything below
  std::map<std::string, cl_program> programs;  // key: kind, options and code
  int programs_built = 0;
  int programs_from_disk = 0;  // built from STREAMEXECUTOR_KERNEL_CACHE's binaries
  // Kernels created so far: each LoadedKernel's argument generations start
  // at its serial << 40, so that they are unique within the executor.
  std::uint64_t kernels_created = 0;
  std::map<std::tuple<cl_mem, std::uint64_t, std::uint64_t>, cl_mem> sub_buffers;
  std::unordered_map<void*, cl_mem> pinned;  // mapped host pointer -> its buffer

  Executor() = default;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  ~Executor() {
    for (auto& [key, sub] : sub_buffers) clReleaseMemObject(sub);
    for (auto& [ptr, buffer] : pinned) {
      clEnqueueUnmapMemObject(sync_queue, buffer, ptr, 0, nullptr, nullptr);
      clReleaseMemObject(buffer);
    }
    if (sync_queue) clFinish(sync_queue);
    for (auto& [key, program] : programs) clReleaseProgram(program);
    if (sync_queue) clReleaseCommandQueue(sync_queue);
    if (context) clReleaseContext(context);
  }

  // Drops the cached sub-buffers of an allocation that is being freed.
  void ForgetSubBuffers(cl_mem parent) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = sub_buffers.lower_bound({parent, 0, 0});
    while (it != sub_buffers.end() && std::get<0>(it->first) == parent) {
      clReleaseMemObject(it->second);
      it = sub_buffers.erase(it);
    }
  }
};

// A host callback waiting for its turn. The callable is boxed once, on the
// (already allocating) callback path, never on the launch path; a function
// pointer instantiated for its type runs it.
struct CallbackJob {
  template <typename F>
  static CallbackJob For(F function) {
    CallbackJob job;
    job.callable = Box(new F(std::move(function)), [](void* f) { delete static_cast<F*>(f); });
    job.run = [](void* f) { (*static_cast<F*>(f))(); };
    return job;
  }
  void operator()() const { run(callable.get()); }

  using Box = std::unique_ptr<void, void (*)(void*)>;
  cl_event ready = nullptr;  // marker: everything enqueued before the callback has run
  cl_event done = nullptr;   // user event the queue's next barrier waits on
  Box callable{nullptr, [](void*) {}};
  void (*run)(void*) = nullptr;
};

// CL_QUEUE_PRIORITY_KHR's value for a stream priority; 0 for kNormal, which
// sets no property (the extension's default is CL_QUEUE_PRIORITY_MED_KHR).
inline cl_queue_priority_khr QueuePriorityHint(StreamPriority priority) {
  switch (priority) {
    case StreamPriority::kHigh: return CL_QUEUE_PRIORITY_HIGH_KHR;
    case StreamPriority::kLow: return CL_QUEUE_PRIORITY_LOW_KHR;
    case StreamPriority::kNormal: break;
  }
  return 0;
}

struct StreamState {
  Executor* executor = nullptr;
  cl_command_queue queue = nullptr;
  cl_queue_priority_khr priority = 0;  // QueuePriorityHint's: the profiling queue gets it too
  // Whether `queue` has CL_QUEUE_PROFILING_ENABLE. A stream starts without:
  // PoCL then reads no clock per command. The first timer moves the stream to
  // a profiling queue (EnableProfiling); the queue it leaves is kept until the
  // stream goes, so a native handle taken earlier stays valid.
  bool profiling = false;
  bool adopted = false;  // the user's queue: never replaced
  cl_command_queue untimed_queue = nullptr;

  // The first asynchronous failure (a throwing callback, a failed command),
  // reported by SynchronizeStream.
  streamexecutor::detail::StickyStatus error;

  // Callbacks run on a thread of the stream's own, started with the first
  // callback: a blocking callback then never holds one of the driver's threads,
  // and a callback may itself call into OpenCL without deadlocking the driver.
  std::mutex jobs_mutex;
  std::condition_variable jobs_ready;
  std::deque<CallbackJob> jobs;
  bool stopping = false;
  std::thread worker;
  // Set by the callback thread itself: other threads ask it whether they are
  // that thread without touching `worker`, which the owner may be assigning.
  std::atomic<std::thread::id> worker_id{};

  // kFailed: set with the first asynchronous failure; launches, copies, fills
  // and callbacks after it are skipped (as on every backend), while event
  // records and waits still go to the queue, so waiters never hang.
  // kHolding: a host callback is queued and has not run yet. OpenCL cannot
  // cancel queued commands, so commands enqueued behind a pending callback are
  // held here and enqueued (or skipped, if the callback failed) by the
  // callback thread once it has run. Launches read both bits with one load.
  static constexpr int kFailed = 1;
  static constexpr int kHolding = 2;
  std::atomic<int> mode{0};

  // A command held behind a pending callback. `run` enqueues it for real (or
  // skips it), frees the payload, and returns true when it queued a callback,
  // which holds everything after it in turn.
  struct HeldCommand {
    void* payload;
    bool (*run)(StreamState& stream, void* payload);
  };
  std::deque<HeldCommand> held;     // guarded by jobs_mutex
  std::condition_variable flushed;  // notified when kHolding clears

  void Fail(Status status) {
    error.Fail(std::move(status));
    mode.fetch_or(kFailed, std::memory_order_acq_rel);
  }
  Status Error() const { return error.Get(); }
  bool Failed() const { return (mode.load(std::memory_order_acquire) & kFailed) != 0; }
  // Whether new commands must take the slow path (failed, or held).
  bool Diverted() const { return mode.load(std::memory_order_acquire) != 0; }

  // Queues `command` behind the pending callback; false if no callback is
  // pending any more (the caller then enqueues directly). jobs_mutex is held.
  bool HoldLocked(HeldCommand command) {
    if ((mode.load(std::memory_order_acquire) & kHolding) == 0) return false;
    held.push_back(command);
    return true;
  }

  // For a synchronous operation of the executor: blocks until what was
  // queued so far has run, held commands included. On the host, because
  // OpenCL cannot tell an idle queue without queueing a marker on it, and a
  // marker plus another queue's wait on it cost a 64 KiB synchronous copy
  // 3.5 us on PoCL, where an idle queue's clFinish returns in 15 ns. `queue` is read under jobs_mutex,
  // where the owner swaps it (EnableProfiling); the old queue's work is
  // behind the new one's first barrier, and it lives as long as the stream.
  // The stream's own error stays the stream's.
  void WaitForQueued() {
    cl_command_queue current = nullptr;
    {
      std::unique_lock<std::mutex> lock(jobs_mutex);
      flushed.wait(lock, [&] { return (mode.load(std::memory_order_acquire) & kHolding) == 0; });
      current = queue;
    }
    clFinish(current);
  }
  bool RunsOnCallbackThread() const { return worker_id.load(std::memory_order_relaxed) == std::this_thread::get_id(); }

  // Waits until nothing is held (every pending callback ran and what it held
  // was enqueued). A callback thread waiting on its own stream would wait for
  // itself: that is an error instead.
  Status WaitUntilFlushed() {
    if (worker.joinable() && std::this_thread::get_id() == worker.get_id()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "BlockHostUntilDone on {} was called from a host callback of the same stream; it would wait "
                       "for the callback itself",
                       executor->label);
    }
    std::unique_lock<std::mutex> lock(jobs_mutex);
    flushed.wait(lock, [&] { return (mode.load(std::memory_order_acquire) & kHolding) == 0; });
    return Status();
  }

  // Enqueues a callback's marker and barrier and hands it to the callback
  // thread; everything after it is held until it ran. jobs_mutex is held.
  Status EnqueueCallbackLocked(CallbackJob& job) {
    const std::string& label = executor->label;
    cl_int error_code = CL_SUCCESS;
    job.done = clCreateUserEvent(executor->context, &error_code);
    if (error_code != CL_SUCCESS) {
      return ClError("clCreateUserEvent", error_code, "for a host callback on {}", label);
    }
    error_code = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &job.ready);
    if (error_code != CL_SUCCESS) {
      clReleaseEvent(job.done);
      return ClError("clEnqueueMarkerWithWaitList", error_code, "for a host callback on {}", label);
    }
    error_code = clEnqueueBarrierWithWaitList(queue, 1, &job.done, nullptr);
    if (error_code != CL_SUCCESS) {
      // Nothing waits on the user event; the marker is simply dropped.
      clReleaseEvent(job.ready);
      clReleaseEvent(job.done);
      return ClError("clEnqueueBarrierWithWaitList", error_code, "for a host callback on {}", label);
    }
    clFlush(queue);
    try {
      if (!worker.joinable()) worker = std::thread([this] { Work(); });
      jobs.push_back(std::move(job));  // strong guarantee: on a throw, `job` is untouched
    } catch (const std::exception& e) {
      // The barrier must still open: complete the user event without running
      // the callback, and fail the stream.
      Status failure = MakeError(ErrorCode::kResourceExhausted,
                                 "ThenDoHostCallback on {}: could not hand the callback to the stream's callback "
                                 "thread ({}); it was not run",
                                 label, e.what());
      Fail(failure);
      clSetUserEventStatus(job.done, CL_COMPLETE);
      clReleaseEvent(job.ready);
      clReleaseEvent(job.done);
      return failure;
    }
    mode.fetch_or(kHolding, std::memory_order_acq_rel);
    jobs_ready.notify_one();
    return Status();
  }

  void Work() {
    worker_id.store(std::this_thread::get_id(), std::memory_order_relaxed);
    for (;;) {
      CallbackJob job;
      {
        std::unique_lock<std::mutex> lock(jobs_mutex);
        jobs_ready.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      const cl_int waited = clWaitForEvents(1, &job.ready);
      if (waited != CL_SUCCESS) {
        Fail(ClError("clWaitForEvents", waited, "before a host callback on {}: earlier work of the stream failed",
                     executor->label));
      } else if (!Failed()) {
        if (Status status = streamexecutor::detail::InvokeHostCallback(job, "opencl", executor->ordinal);
            !status.ok()) {
          Fail(std::move(status));
        }
      }
      // Complete (not failed: PoCL aborts on a failed user event) so that the
      // queue keeps draining; what follows is skipped below if it failed.
      clSetUserEventStatus(job.done, CL_COMPLETE);
      clReleaseEvent(job.ready);
      clReleaseEvent(job.done);
      std::lock_guard<std::mutex> lock(jobs_mutex);
      FlushHeldLocked();
    }
  }

  // Enqueues what was held behind the callback that just ran, in order, up to
  // the next held callback. jobs_mutex is held, so producers wait for the
  // flush and then either hold behind the next callback or enqueue directly.
  void FlushHeldLocked() {
    while (!held.empty()) {
      const HeldCommand command = held.front();
      held.pop_front();
      if (command.run(*this, command.payload)) return;  // a callback holds the rest
    }
    mode.fetch_and(~kHolding, std::memory_order_acq_rel);
    flushed.notify_all();
  }

  // Called by the stream's own thread (a Stream is used by one thread at a
  // time); the callback thread enqueues held work on `queue` only under
  // jobs_mutex, so it sees the old queue or the new one, never a mix.
  Status EnableProfiling(std::string_view caller) {
    // An adopted queue is the user's: it keeps its properties, and a timer
    // on one without profiling reports that when it is read.
    if (profiling || adopted) return Status();
    std::lock_guard<std::mutex> lock(jobs_mutex);
    const cl_queue_properties properties[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE,
                                              priority != 0 ? cl_queue_properties{CL_QUEUE_PRIORITY_KHR} : 0, priority,
                                              0};
    cl_int error_code = CL_SUCCESS;
    cl_command_queue timed =
        clCreateCommandQueueWithProperties(executor->context, executor->device, properties, &error_code);
    if (error_code != CL_SUCCESS) {
      return ClError("clCreateCommandQueueWithProperties", error_code, "for the profiling queue of a stream on {} ({})",
                     executor->label, caller);
    }
    // Everything already queued runs before anything on the new queue: it
    // starts with a barrier on the old queue's last command.
    cl_event last = nullptr;
    const char* call = "clEnqueueMarkerWithWaitList";
    error_code = clEnqueueMarkerWithWaitList(queue, 0, nullptr, &last);
    if (error_code == CL_SUCCESS) {
      clFlush(queue);
      call = "clEnqueueBarrierWithWaitList";
      error_code = clEnqueueBarrierWithWaitList(timed, 1, &last, nullptr);
      clReleaseEvent(last);
    }
    if (error_code != CL_SUCCESS) {
      clReleaseCommandQueue(timed);
      return ClError(call, error_code, "moving a stream of {} to a profiling queue ({})", executor->label, caller);
    }
    untimed_queue = queue;
    queue = timed;
    profiling = true;
    return Status();
  }

  void StopWorker() {
    {
      std::lock_guard<std::mutex> lock(jobs_mutex);
      stopping = true;
    }
    jobs_ready.notify_one();
    if (worker.joinable()) worker.join();
  }
};

// An Event's latest recording. Streams on several threads may record and wait
// on one event at once: the marker is swapped and read under a lock, and a
// reader retains it before the lock is dropped, so a recording on another
// thread can never release the cl_event a wait is about to pass to the driver.
struct EventState {
  streamexecutor::detail::SpinLock lock;
  cl_event latest = nullptr;  // retained
  // The Event, plus recordings held behind a pending host callback.
  std::atomic<int> references{1};

  EventState() = default;
  EventState(const EventState&) = delete;
  EventState& operator=(const EventState&) = delete;
  ~EventState() {
    if (latest) clReleaseEvent(latest);
  }
  void Retain() { references.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (references.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // Replaces `expected` by `marker` (retaining it) if `expected` is still the
  // latest recording: a held recording's stand-in gives way to its real marker.
  void ReplaceIfLatest(cl_event expected, cl_event marker) {
    {
      std::lock_guard<streamexecutor::detail::SpinLock> guard(lock);
      if (latest != expected) return;
      clRetainEvent(marker);
      latest = marker;
    }
    clReleaseEvent(expected);
  }
  // The latest recording, retained for the caller (who releases it), or null.
  cl_event Acquire() {
    std::lock_guard<streamexecutor::detail::SpinLock> guard(lock);
    if (latest) clRetainEvent(latest);
    return latest;
  }
  // Installs `marker` (whose reference passes to the event).
  void Replace(cl_event marker) {
    cl_event previous;
    {
      std::lock_guard<streamexecutor::detail::SpinLock> guard(lock);
      previous = std::exchange(latest, marker);
    }
    if (previous) clReleaseEvent(previous);
  }
};

// Releases an Acquire()d event at scope exit.
struct EventRef {
  cl_event event;
  explicit EventRef(cl_event e) : event(e) {}
  EventRef(const EventRef&) = delete;
  EventRef& operator=(const EventRef&) = delete;
  ~EventRef() {
    if (event) clReleaseEvent(event);
  }
};

struct LoadedKernel {
  cl_kernel kernel = nullptr;
  // The TypedKernel, plus launches held behind a pending host callback.
  std::atomic<int> references{1};
  void Retain() { references.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (references.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    clReleaseKernel(kernel);
    delete this;
  }
  Executor* executor = nullptr;
  std::size_t work_group_size = 0;       // CL_KERNEL_WORK_GROUP_SIZE for this device
  std::uint64_t static_local_bytes = 0;  // CL_KERNEL_LOCAL_MEM_SIZE before any dynamic __local argument
  std::uint64_t device_local_bytes = 0;  // CL_DEVICE_LOCAL_MEM_SIZE
  // The most threads per block the typed launch's fast path takes:
  // work_group_size, or 0 when the static __local memory alone exceeds the
  // device's, so that such a launch takes the path that says so.
  std::size_t launch_limit = 0;
  // clSetKernelArg mutates the cl_kernel: argument setting and the enqueue
  // that reads the arguments happen under this lock, so one TypedKernel can
  // be launched from several threads.
  streamexecutor::detail::SpinLock launch_lock;
  // Bumped, under launch_lock, by every setting of the arguments; a prepared
  // launch whose stamp still equals it knows the cl_kernel holds its own
  // arguments and sets only those it changed (opencl/prepared.hpp).
  std::uint64_t arg_generation = 0;
};

}  // namespace streamexecutor::opencl_detail
