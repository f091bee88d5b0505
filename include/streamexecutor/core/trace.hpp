// The trace recorder (docs/tracing.md): while a trace records, every stream
// operation is kept with its enqueue time and its start and end on the device,
// and trace::Stop (or the program's exit) writes them as Chrome trace-event
// JSON, which Perfetto and chrome://tracing open.
//
// Off, it costs the launch path one load and one branch: Observing() below.
// Everything else here runs only while something observes: a trace records,
// or a backend's profiler (NVTX under Nsight) takes annotations.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

namespace streamexecutor {

// What a traced operation is; the JSON's "cat", and the renderer's colors.
enum class TraceKind : std::uint8_t {
  kLaunch,
  kMemcpyH2D,
  kMemcpyD2H,
  kMemcpyD2D,
  kMemset,
  kHostCallback,
  kWait,
  kRecordEvent,
  kCanned,
  kCommandBuffer,
  kAllocation,
  kStreamMemory,
  kPrefetch,
  kRange,
};

// What was counted while a trace recorded, per stream and per executor
// (Stream::trace_counters, StreamExecutor::trace_counters); reset by each
// trace::Start.
struct TraceCounters {
  std::uint64_t enqueued = 0;   // operations handed to the driver
  std::uint64_t completed = 0;  // of those, finished with a device time read
  std::uint64_t failed = 0;     // refused by the driver when enqueued
  std::uint64_t bytes_h2d = 0;
  std::uint64_t bytes_d2h = 0;
  std::uint64_t bytes_d2d = 0;
  std::uint64_t blocked_ns = 0;      // host time spent in BlockHostUntilDone
  std::uint64_t device_wait_ns = 0;  // device time the stream's waits (ThenWaitFor) took
};

namespace trace {

// Starts recording to `path`, which is opened (and truncated) now so that an
// unwritable path is an error here rather than lost work at the end.
// FAILED_PRECONDITION while another trace records (from the environment or
// another thread), naming its file.
STREAMEXECUTOR_DECL Status Start(std::string_view path);
// Writes the file and closes it. Operations that have not finished are
// written without device times (marked so): call BlockHostUntilDone first to
// have them all. FAILED_PRECONDITION when no trace records.
STREAMEXECUTOR_DECL Status Stop();
STREAMEXECUTOR_DECL bool Recording();
// The file being recorded; empty when none.
STREAMEXECUTOR_DECL std::string Path();

// A named range of the calling thread's work, shown on a lane of its own and,
// on CUDA under Nsight, as an NVTX range. Costs one test while nothing observes.
class Range;

}  // namespace trace

namespace trace::detail {

// True while a trace records or a profiler takes annotations: what the
// enqueue paths test before their driver call.
STREAMEXECUTOR_EXPORT inline constinit std::atomic<bool> observing{false};
[[gnu::always_inline]] inline bool Observing() noexcept { return observing.load(std::memory_order_relaxed); }

// A stream's launch flag (Stream's `plain_`): set while the stream is
// initialized, does not capture, and nothing observes; the launch path
// already tests it. Starting and stopping a trace clears and sets it on every
// stream, so that the launch path pays nothing for tracing while off. A switch
// is registered from Init to Release; `plain` moves with the Stream.
struct LaunchSwitch {
  std::atomic<bool>* plain = nullptr;
  bool capturing = false;
};

// A relaxed load of a stream's `plain_`, which trace::Start and Stop store to
// from any thread. On x86-64 with GCC or Clang it is read with one compare
// the compiler cannot see into: an atomic load there costs the launch path
// up to 30 instructions (GCC keeps less in registers around it; see
// docs/performance.md), and an aligned byte load is atomic on x86 anyway.
// Elsewhere, and under ThreadSanitizer (which must see the atomic), it is
// the atomic load itself.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STREAMEXECUTOR_DETAIL_TSAN 1
#endif
#endif
#if !defined(STREAMEXECUTOR_DETAIL_TSAN)
#define STREAMEXECUTOR_DETAIL_TSAN 0
#endif
[[gnu::always_inline]] inline bool IsSet(const std::atomic<bool>& flag) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(__SANITIZE_THREAD__) && !STREAMEXECUTOR_DETAIL_TSAN
  static_assert(sizeof(std::atomic<bool>) == 1);
  bool set;
  asm("cmpb $0, %1" : "=@ccnz"(set) : "m"(*reinterpret_cast<const unsigned char*>(&flag)));
  return set;
#else
  return flag.load(std::memory_order_relaxed);
#endif
}

// A backend whose profiler is attached (the CUDA backend under Nsight) hands
// its range calls here; they then wrap every stream operation and Range.
struct AnnotationSink {
  void (*push)(const char* name) noexcept = nullptr;
  void (*pop)() noexcept = nullptr;
};
STREAMEXECUTOR_DECL void SetAnnotationSink(AnnotationSink sink);
STREAMEXECUTOR_DECL AnnotationSink Annotations();

// An operation as a Stream describes it to the recorder.
struct Operation {
  TraceKind kind;
  std::string_view name;  // the kernel, the canned call, the copy's caller
  std::uint64_t bytes = 0;
  const Dim3* threads = nullptr;  // launches
  const Dim3* blocks = nullptr;
  const void* records = nullptr;      // the native event this operation records
  const void* waits_event = nullptr;  // the native event it waits for
  std::uint64_t waits_op = 0;         // the operation it waits for (a stream's last), index + 1
};

// A copy, fill or prefetch as the recorder sees it: for a stream's Then* form
// and an executor's Synchronous* form alike.
inline Operation Describe(std::string_view caller, const op::MemcpyH2D& copy) {
  return {TraceKind::kMemcpyH2D, caller, copy.bytes};
}
inline Operation Describe(std::string_view caller, const op::MemcpyD2H& copy) {
  return {TraceKind::kMemcpyD2H, caller, copy.bytes};
}
inline Operation Describe(std::string_view caller, const op::MemcpyD2D& copy) {
  return {TraceKind::kMemcpyD2D, caller, copy.bytes};
}
inline Operation Describe(std::string_view caller, const op::Memset8& fill) {
  return {TraceKind::kMemset, caller, fill.bytes};
}
inline Operation Describe(std::string_view caller, const op::Memset32& fill) {
  return {TraceKind::kMemset, caller, fill.bytes};
}
inline Operation Describe(std::string_view caller, const op::Prefetch& prefetch) {
  return {TraceKind::kPrefetch, caller, prefetch.memory.size()};
}

// One operation of the trace.
struct Record {
  TraceKind kind;
  std::uint32_t pid = 0;        // the executor's process in the trace
  std::uint32_t lane = 0;       // index of the stream's lane
  std::int64_t enqueue_ns = 0;  // host time from the trace's start
  std::int64_t start_ns = -1;   // device time, -1 where unknown
  std::int64_t end_ns = -1;
  std::uint64_t waited = 0;  // the record it waited for, index + 1
  std::uint64_t bytes = 0;
  std::array<std::uint64_t, 6> dims{};  // a launch's grid and block, x y z each; grid x 0: none
  std::string name;
  std::string note;  // why the device time is missing, or the driver's refusal
  bool failed = false;
};

struct Lane {
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::string name;
  TraceCounters counters;
};

struct Process {
  const void* executor = nullptr;
  std::string label;
  TraceCounters counters;
};

// A stream's part of the trace (core/stream_trace.hpp): what Stop asks to
// read the device times of its pending operations.
class StreamTraceBase {
 public:
  virtual ~StreamTraceBase() = default;
  // Reads the device times of the operations that have finished; at_stop:
  // the others are written without.
  virtual void Resolve(bool at_stop) = 0;
  std::mutex mutex;  // before the recorder's mutex, never after
};

struct Recorder {
  std::mutex mutex;
  bool recording = false;
  bool from_environment = false;
  std::string path;
  std::FILE* file = nullptr;
  std::uint64_t session = 0;  // 0: none yet; each Start a new one
  std::chrono::steady_clock::time_point origin;
  std::vector<Record> records;
  std::vector<Lane> lanes;
  std::vector<Process> processes;
  std::unordered_map<const void*, std::uint64_t> last_record;        // native event -> its latest record, index + 1
  std::unordered_map<const void*, std::uint32_t> memory_lanes;       // executor -> its lane of allocations
  std::unordered_map<const void*, std::uint32_t> synchronous_lanes;  // executor -> its lane of Synchronous* calls
  std::uint32_t next_tid = 1;
  // Every stream with a trace part, for Stop. Taken before a stream's mutex.
  std::mutex streams_mutex;
  std::vector<StreamTraceBase*> streams;
  std::vector<LaunchSwitch*> switches;  // every initialized stream's
  std::atomic<const void*> annotation_push{nullptr};
  std::atomic<const void*> annotation_pop{nullptr};
};

// Never destroyed: streams at namespace scope report to it while the
// program exits. One per process across shared libraries (export.hpp).
STREAMEXECUTOR_EXPORT inline Recorder& TheRecorder() {
  static Recorder* const recorder = new Recorder();
  return *recorder;
}

inline std::int64_t NanosecondsSince(std::chrono::steady_clock::time_point origin) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin).count();
}

// A stream's switch: registered (plain unless capturing or observing),
// changed (capture begins or ends, the Stream moved), removed.
STREAMEXECUTOR_DECL void AddSwitch(LaunchSwitch* launch_switch);
STREAMEXECUTOR_DECL void SetSwitch(LaunchSwitch* launch_switch, std::atomic<bool>* plain, bool capturing);
STREAMEXECUTOR_DECL void RemoveSwitch(LaunchSwitch* launch_switch);

// Reads STREAMEXECUTOR_TRACE once per process (Stream::Init calls it): one
// flag across shared libraries built with hidden visibility (export.hpp).
STREAMEXECUTOR_DECL void StartFromEnvironment();
STREAMEXECUTOR_EXPORT inline void StartFromEnvironmentOnce() {
  static const bool read = (StartFromEnvironment(), true);
  (void)read;
}

// The lane of a stream in the current session; under the recorder's mutex.
STREAMEXECUTOR_DECL std::uint32_t AddLane(Recorder& recorder, const void* executor, std::string_view executor_label,
                                          std::string_view stream_name);
STREAMEXECUTOR_DECL void RenameLane(std::uint64_t session, std::uint32_t lane, std::string_view stream_name);
// Adds a record (under the recorder's mutex); its index + 1.
STREAMEXECUTOR_DECL std::uint64_t AddRecord(Recorder& recorder, std::uint32_t lane, const Operation& op,
                                            std::int64_t enqueue_ns, const Status& submitted);
STREAMEXECUTOR_DECL void WriteTrace(Recorder& recorder, std::string& json);
STREAMEXECUTOR_DECL TraceCounters CountersOfExecutor(const void* executor);
STREAMEXECUTOR_DECL TraceCounters CountersOfLane(std::uint64_t session, std::uint32_t lane);
STREAMEXECUTOR_DECL void AddBlockedTime(std::uint64_t session, std::uint32_t lane, std::int64_t nanoseconds);
// An executor's allocation or release (StreamExecutor::Allocate*, Deallocate),
// an instant on the executor's "memory" lane.
STREAMEXECUTOR_DECL void RecordAllocation(const void* executor, std::string_view executor_label, std::string_view call,
                                          std::uint64_t bytes, const Status& status);
// An executor's synchronous operation (SynchronousMemcpy*, SynchronousMemZero,
// SynchronousMemset32) in two halves: its start (session 0: nothing is
// recorded), then a span on the executor's "synchronous" lane from the call
// to its return. The host's clock, not the device's: the caller was blocked
// that long, waiting for the work queued before it included.
struct SynchronousStart {
  std::uint64_t session = 0;
  std::int64_t start_ns = 0;
};
STREAMEXECUTOR_DECL SynchronousStart BeginSynchronous();
STREAMEXECUTOR_DECL void RecordSynchronous(const void* executor, std::string_view executor_label, const Operation& op,
                                           SynchronousStart start, const Status& status);
// trace::Range's two halves: the start time (-1: nothing recorded) and the record.
STREAMEXECUTOR_DECL std::int64_t BeginRange(std::string_view name, bool& annotated);
STREAMEXECUTOR_DECL void EndRange(std::string_view name, std::int64_t start_ns, bool annotated);

}  // namespace trace::detail

namespace trace {

class Range {
 public:
  explicit Range(std::string_view name) {
    if (detail::Observing()) [[unlikely]] {
      name_ = std::string(name);
      start_ns_ = detail::BeginRange(name_, annotated_);
    }
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
  ~Range() {
    if (start_ns_ >= 0 || annotated_) detail::EndRange(name_, start_ns_, annotated_);
  }

 private:
  std::string name_;
  std::int64_t start_ns_ = -1;  // -1: not recorded
  bool annotated_ = false;
};

}  // namespace trace

}  // namespace streamexecutor

// The definitions: in every unit header-only, in the compiled part only with
// separate compilation.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
#include "streamexecutor/detail/trace_recorder.hpp"
#endif
