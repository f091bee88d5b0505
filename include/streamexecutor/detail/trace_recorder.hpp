// The trace recorder's definitions (declared in core/trace.hpp): the lanes,
// records and counters under the recorder's mutex, the JSON writer with its
// consistency pass, and trace::Start / Stop. Included by core/trace.hpp
// wherever the definitions belong (every unit header-only; the compiled part
// with separate compilation), never directly.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "streamexecutor/core/trace.hpp"

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE

namespace streamexecutor {
namespace trace::detail {

inline std::string_view KindName(TraceKind kind) {
  static constexpr std::array<std::string_view, 14> names = {
      "launch",       "memcpy_h2d", "memcpy_d2h",     "memcpy_d2d", "memset",        "host_callback", "wait",
      "record_event", "canned",     "command_buffer", "allocation", "stream_memory", "prefetch",      "range"};
  return names[static_cast<std::size_t>(kind)];
}

inline void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += ::streamexecutor::detail::Format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// Under the recorder's mutex.
inline void Switch(LaunchSwitch& launch_switch, bool observed) {
  launch_switch.plain->store(!observed && !launch_switch.capturing, std::memory_order_relaxed);
}

// Under the recorder's mutex.
inline void UpdateObserving(Recorder& recorder) {
  const bool annotating = recorder.annotation_push.load(std::memory_order_acquire) != nullptr;
  const bool now = recorder.recording || annotating;
  observing.store(now, std::memory_order_release);
  for (LaunchSwitch* s : recorder.switches) Switch(*s, now);
}

STREAMEXECUTOR_DECL void AddSwitch(LaunchSwitch* launch_switch) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  recorder.switches.push_back(launch_switch);
  Switch(*launch_switch, observing.load(std::memory_order_relaxed));
}

STREAMEXECUTOR_DECL void SetSwitch(LaunchSwitch* launch_switch, std::atomic<bool>* plain, bool capturing) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  launch_switch->plain = plain;
  launch_switch->capturing = capturing;
  Switch(*launch_switch, observing.load(std::memory_order_relaxed));
}

STREAMEXECUTOR_DECL void RemoveSwitch(LaunchSwitch* launch_switch) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  std::erase(recorder.switches, launch_switch);
  launch_switch->plain->store(false, std::memory_order_relaxed);
}

STREAMEXECUTOR_DECL void SetAnnotationSink(AnnotationSink sink) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  recorder.annotation_pop.store(reinterpret_cast<const void*>(sink.pop), std::memory_order_release);
  recorder.annotation_push.store(reinterpret_cast<const void*>(sink.push), std::memory_order_release);
  UpdateObserving(recorder);
}

STREAMEXECUTOR_DECL AnnotationSink Annotations() {
  Recorder& recorder = TheRecorder();
  AnnotationSink sink;
  sink.push = reinterpret_cast<void (*)(const char*) noexcept>(
      const_cast<void*>(recorder.annotation_push.load(std::memory_order_acquire)));
  sink.pop =
      reinterpret_cast<void (*)() noexcept>(const_cast<void*>(recorder.annotation_pop.load(std::memory_order_acquire)));
  return sink;
}

STREAMEXECUTOR_DECL std::uint32_t AddLane(Recorder& recorder, const void* executor, std::string_view executor_label,
                                          std::string_view stream_name) {
  std::uint32_t pid = 0;
  for (std::size_t i = 0; i < recorder.processes.size(); ++i) {
    if (recorder.processes[i].executor == executor) pid = static_cast<std::uint32_t>(i + 1);
  }
  if (pid == 0) {
    recorder.processes.push_back(Process{executor, std::string(executor_label), {}});
    pid = static_cast<std::uint32_t>(recorder.processes.size());
  }
  Lane lane;
  lane.pid = pid;
  lane.tid = recorder.next_tid++;
  lane.name = stream_name.empty() ? ::streamexecutor::detail::Format("stream {}", lane.tid)
                                  : ::streamexecutor::detail::Format("stream {} '{}'", lane.tid, stream_name);
  recorder.lanes.push_back(std::move(lane));
  return static_cast<std::uint32_t>(recorder.lanes.size() - 1);
}

STREAMEXECUTOR_DECL void RenameLane(std::uint64_t session, std::uint32_t lane, std::string_view stream_name) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  if (recorder.session != session || !recorder.recording || lane >= recorder.lanes.size()) return;
  Lane& l = recorder.lanes[lane];
  l.name = ::streamexecutor::detail::Format("stream {} '{}'", l.tid, stream_name);
}

STREAMEXECUTOR_DECL std::uint64_t AddRecord(Recorder& recorder, std::uint32_t lane, const Operation& op,
                                            std::int64_t enqueue_ns, const Status& submitted) {
  Record record;
  record.kind = op.kind;
  record.lane = lane;
  record.pid = recorder.lanes[lane].pid;
  record.enqueue_ns = enqueue_ns;
  record.bytes = op.bytes;
  record.name = std::string(op.name);
  if (op.threads != nullptr && op.blocks != nullptr) {
    record.dims = {op.blocks->x, op.blocks->y, op.blocks->z, op.threads->x, op.threads->y, op.threads->z};
  }
  if (op.waits_op != 0 && op.waits_op <= recorder.records.size()) record.waited = op.waits_op;
  if (op.waits_event != nullptr) {
    const auto found = recorder.last_record.find(op.waits_event);
    if (found != recorder.last_record.end()) record.waited = found->second;
  }
  TraceCounters& stream = recorder.lanes[lane].counters;
  TraceCounters& executor = recorder.processes[record.pid - 1].counters;
  if (!submitted.ok()) {
    record.failed = true;
    record.note = submitted.ToString();
    ++stream.failed;
    ++executor.failed;
  } else {
    ++stream.enqueued;
    ++executor.enqueued;
    using Member = std::uint64_t TraceCounters::*;
    Member bytes = nullptr;
    if (op.kind == TraceKind::kMemcpyH2D) bytes = &TraceCounters::bytes_h2d;
    if (op.kind == TraceKind::kMemcpyD2H) bytes = &TraceCounters::bytes_d2h;
    if (op.kind == TraceKind::kMemcpyD2D) bytes = &TraceCounters::bytes_d2d;
    if (bytes != nullptr) {
      stream.*bytes += op.bytes;
      executor.*bytes += op.bytes;
    }
  }
  recorder.records.push_back(std::move(record));
  const std::uint64_t index = recorder.records.size();
  if (op.records != nullptr && submitted.ok()) recorder.last_record[op.records] = index;
  return index;
}

STREAMEXECUTOR_DECL TraceCounters CountersOfExecutor(const void* executor) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  for (const Process& process : recorder.processes) {
    if (process.executor == executor) return process.counters;
  }
  return TraceCounters();
}

STREAMEXECUTOR_DECL TraceCounters CountersOfLane(std::uint64_t session, std::uint32_t lane) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  if (recorder.session != session || lane >= recorder.lanes.size()) return TraceCounters();
  return recorder.lanes[lane].counters;
}

STREAMEXECUTOR_DECL void AddBlockedTime(std::uint64_t session, std::uint32_t lane, std::int64_t nanoseconds) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  if (recorder.session != session || !recorder.recording || lane >= recorder.lanes.size() || nanoseconds < 0) return;
  const auto ns = static_cast<std::uint64_t>(nanoseconds);
  recorder.lanes[lane].counters.blocked_ns += ns;
  recorder.processes[recorder.lanes[lane].pid - 1].counters.blocked_ns += ns;
}

inline std::string Microseconds(std::int64_t nanoseconds) {
  return ::streamexecutor::detail::Format("{}.{:03}", nanoseconds / 1000, nanoseconds % 1000);
}

STREAMEXECUTOR_DECL void WriteTrace(Recorder& recorder, std::string& json) {
  json = R"({"displayTimeUnit":"ns","traceEvents":[)";
  bool first = true;
  auto event = [&](std::string text) {
    if (!first) json += ",\n";
    first = false;
    json += text;
  };
  for (std::size_t i = 0; i < recorder.processes.size(); ++i) {
    std::string name;
    AppendJsonString(name, recorder.processes[i].label);
    event(::streamexecutor::detail::Format(
        R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", i + 1, name));
    event(::streamexecutor::detail::Format(
        R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", i + 1, i + 1));
  }
  for (const Lane& lane : recorder.lanes) {
    std::string name;
    AppendJsonString(name, lane.name);
    event(::streamexecutor::detail::Format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", lane.pid, lane.tid, name));
    event(::streamexecutor::detail::Format(
        R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", lane.pid, lane.tid,
        lane.tid));
  }
  // Device times come from each stream's events placed on the host clock by
  // that stream's anchor, which may be off by half a wait's round trip. What
  // is known for sure then holds by moving an operation later, never
  // earlier: it starts after it was enqueued, after the operation before it
  // on its stream ended, and a wait ends after what it waited for. In the
  // order of enqueueing, what an operation depends on is already placed.
  std::vector<std::int64_t> lane_end(recorder.lanes.size(), 0);
  for (Record& r : recorder.records) {
    if (r.start_ns < 0) continue;
    const std::int64_t shift = std::max<std::int64_t>(0, std::max(r.enqueue_ns, lane_end[r.lane]) - r.start_ns);
    r.start_ns += shift;
    r.end_ns += shift;
    if (r.waited != 0) {
      const Record& from = recorder.records[r.waited - 1];
      if (from.end_ns > r.end_ns) r.end_ns = from.end_ns;
    }
    lane_end[r.lane] = r.end_ns;
  }
  // Each executor's bytes copied so far, as counters at each copy's end.
  std::vector<std::array<std::uint64_t, 3>> copied(recorder.processes.size(), {0, 0, 0});
  std::vector<std::size_t> order(recorder.records.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Record& x = recorder.records[a];
    const Record& y = recorder.records[b];
    return (x.end_ns >= 0 ? x.end_ns : x.enqueue_ns) < (y.end_ns >= 0 ? y.end_ns : y.enqueue_ns);
  });
  std::uint64_t flow = 0;
  for (const std::size_t index : order) {
    const Record& r = recorder.records[index];
    const Lane& lane = recorder.lanes[r.lane];
    std::string name, note;
    AppendJsonString(name, r.name);
    std::string args =
        ::streamexecutor::detail::Format(R"("op":{},"enqueue_us":{})", index + 1, Microseconds(r.enqueue_ns));
    if (r.dims[0] != 0) {
      args += ::streamexecutor::detail::Format(R"(,"grid":[{},{},{}],"block":[{},{},{}])", r.dims[0], r.dims[1],
                                               r.dims[2], r.dims[3], r.dims[4], r.dims[5]);
    }
    if (r.bytes != 0) args += ::streamexecutor::detail::Format(R"(,"bytes":{})", r.bytes);
    if (!r.note.empty()) {
      AppendJsonString(note, r.note);
      args += ::streamexecutor::detail::Format(R"(,"{}":{})", r.failed ? "error" : "device_time", note);
    }
    const std::string_view kind = KindName(r.kind);
    if (r.start_ns >= 0 && r.end_ns >= r.start_ns) {
      event(::streamexecutor::detail::Format(
          R"({{"ph":"X","name":{},"cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})", name, kind, lane.pid,
          lane.tid, Microseconds(r.start_ns), Microseconds(r.end_ns - r.start_ns), args));
    } else {
      event(::streamexecutor::detail::Format(
          R"({{"ph":"i","s":"t","name":{},"cat":"{}","pid":{},"tid":{},"ts":{},"args":{{{}}}}})", name, kind, lane.pid,
          lane.tid, Microseconds(r.enqueue_ns), args));
    }
    if (r.waited != 0) {
      // The arrow: from where the waited-for operation ended to where the wait did.
      const Record& from = recorder.records[r.waited - 1];
      const Lane& from_lane = recorder.lanes[from.lane];
      const std::int64_t from_ts = from.end_ns >= 0 ? from.end_ns : from.enqueue_ns;
      const std::int64_t to_ts = r.end_ns >= 0 ? r.end_ns : r.enqueue_ns;
      ++flow;
      event(::streamexecutor::detail::Format(
          R"({{"ph":"s","id":{},"cat":"event","name":"event","pid":{},"tid":{},"ts":{}}})", flow, from_lane.pid,
          from_lane.tid, Microseconds(from_ts)));
      event(::streamexecutor::detail::Format(
          R"({{"ph":"f","bp":"e","id":{},"cat":"event","name":"event","pid":{},"tid":{},"ts":{}}})", flow, lane.pid,
          lane.tid, Microseconds(to_ts)));
    }
    const int direction = r.kind == TraceKind::kMemcpyH2D   ? 0
                          : r.kind == TraceKind::kMemcpyD2H ? 1
                          : r.kind == TraceKind::kMemcpyD2D ? 2
                                                            : -1;
    if (direction >= 0 && !r.failed) {
      auto& bytes = copied[r.pid - 1];
      bytes[static_cast<std::size_t>(direction)] += r.bytes;
      event(::streamexecutor::detail::Format(
          R"({{"ph":"C","name":"bytes copied","pid":{},"ts":{},"args":{{"h2d":{},"d2h":{},"d2d":{}}}}})", r.pid,
          Microseconds(r.end_ns >= 0 ? r.end_ns : r.enqueue_ns), bytes[0], bytes[1], bytes[2]));
    }
  }
  json += R"(],"otherData":{"streamexecutor":")";
  json += ::streamexecutor::detail::Format("{}.{}.{}", STREAMEXECUTOR_VERSION_MAJOR, STREAMEXECUTOR_VERSION_MINOR,
                                           STREAMEXECUTOR_VERSION_PATCH);
  json += R"(","counters":[)";
  auto counters = [](const TraceCounters& c) {
    return ::streamexecutor::detail::Format(
        R"("enqueued":{},"completed":{},"failed":{},"bytes_h2d":{},"bytes_d2h":{},"bytes_d2d":{},"blocked_ns":{},"device_wait_ns":{})",
        c.enqueued, c.completed, c.failed, c.bytes_h2d, c.bytes_d2h, c.bytes_d2d, c.blocked_ns, c.device_wait_ns);
  };
  for (std::size_t i = 0; i < recorder.processes.size(); ++i) {
    json += ::streamexecutor::detail::Format(R"({}{{"pid":{},{}}})", i == 0 ? "" : ",", i + 1,
                                             counters(recorder.processes[i].counters));
  }
  for (const Lane& lane : recorder.lanes) {
    json +=
        ::streamexecutor::detail::Format(R"(,{{"pid":{},"tid":{},{}}})", lane.pid, lane.tid, counters(lane.counters));
  }
  json += "]}}\n";
}

// Ends the recording, under the streams' mutex: reads the device times of
// what has finished, then writes the file. It never waits: a stream held by
// a callback that waits for the caller of Stop would never finish.
inline Status Finish(Recorder& recorder, std::size_t* operations) {
  const std::lock_guard streams(recorder.streams_mutex);
  {
    const std::lock_guard lock(recorder.mutex);
    if (!recorder.recording) {
      return Status(ErrorCode::kFailedPrecondition, "trace::Stop: no trace is recording (trace::Start)");
    }
    // Operations enqueued from here on are not recorded.
    recorder.recording = false;
    UpdateObserving(recorder);
  }
  for (StreamTraceBase* stream : recorder.streams) {
    const std::lock_guard lock(stream->mutex);
    stream->Resolve(true);
  }
  const std::lock_guard lock(recorder.mutex);
  std::string json;
  WriteTrace(recorder, json);
  if (operations != nullptr) *operations = recorder.records.size();
  Status status;
  const bool written = std::fwrite(json.data(), 1, json.size(), recorder.file) == json.size();
  const int write_errno = errno;
  if (std::fclose(recorder.file) != 0 || !written) {
    status = MakeError(ErrorCode::kInternal, "trace::Stop: writing the trace to '{}' failed: {}", recorder.path,
                       std::strerror(written ? errno : write_errno));
  }
  recorder.file = nullptr;
  recorder.records.clear();
  recorder.records.shrink_to_fit();
  recorder.last_record.clear();
  return status;
}

inline void FinishAtExit() {
  Recorder& recorder = TheRecorder();
  std::string path;
  bool from_environment = false;
  {
    const std::lock_guard lock(recorder.mutex);
    if (!recorder.recording) return;
    path = recorder.path;
    from_environment = recorder.from_environment;
  }
  std::size_t operations = 0;
  const Status status = Finish(recorder, &operations);
  if (!status.ok()) {
    std::fprintf(stderr, "streamexecutor: %s\n", status.ToString().c_str());
  } else if (from_environment) {
    std::fprintf(stderr, "streamexecutor: trace of %zu operations written to %s (STREAMEXECUTOR_TRACE)\n", operations,
                 path.c_str());
  } else {
    std::fprintf(stderr,
                 "streamexecutor: the trace to %s was still recording at exit (trace::Start without trace::Stop); "
                 "%zu operations written\n",
                 path.c_str(), operations);
  }
}

inline Status StartRecording(std::string_view path, bool from_environment) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  if (recorder.recording) {
    return MakeError(ErrorCode::kFailedPrecondition, "trace::Start('{}'): a trace is already recording to '{}'{}", path,
                     recorder.path, recorder.from_environment ? " (STREAMEXECUTOR_TRACE)" : "");
  }
  if (path.empty()) return Status(ErrorCode::kInvalidArgument, "trace::Start: the path is empty");
  const std::string file_path(path);
  std::FILE* file = std::fopen(file_path.c_str(), "w");
  if (file == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "trace::Start('{}'): cannot open the file for writing: {}", file_path,
                     std::strerror(errno));
  }
  static const bool registered = std::atexit(&FinishAtExit) == 0;
  (void)registered;
  recorder.file = file;
  recorder.path = file_path;
  recorder.from_environment = from_environment;
  recorder.records.clear();
  recorder.lanes.clear();
  recorder.processes.clear();
  recorder.last_record.clear();
  recorder.memory_lanes.clear();
  recorder.synchronous_lanes.clear();
  recorder.next_tid = 1;
  ++recorder.session;
  recorder.origin = std::chrono::steady_clock::now();
  recorder.recording = true;
  UpdateObserving(recorder);
  return Status();
}

STREAMEXECUTOR_DECL void StartFromEnvironment() {
  const char* path = std::getenv("STREAMEXECUTOR_TRACE");
  if (path == nullptr || path[0] == '\0') return;
  if (const Status status = StartRecording(path, true); !status.ok()) {
    std::fprintf(stderr, "streamexecutor: STREAMEXECUTOR_TRACE: %s; the program runs without a trace\n",
                 status.message().c_str());
  }
}

// An executor's lane of its own ("memory", "synchronous"), made on first use
// in a session. Under the recorder's mutex.
inline std::uint32_t ExecutorLane(Recorder& recorder, std::unordered_map<const void*, std::uint32_t>& lanes,
                                  const void* executor, std::string_view executor_label, std::string_view what) {
  auto [lane, added] = lanes.try_emplace(executor, 0);
  if (added) {
    lane->second = AddLane(recorder, executor, executor_label, "");
    recorder.lanes[lane->second].name =
        ::streamexecutor::detail::Format("{} {}", what, recorder.lanes[lane->second].tid);
  }
  return lane->second;
}

STREAMEXECUTOR_DECL void RecordAllocation(const void* executor, std::string_view executor_label, std::string_view call,
                                          std::uint64_t bytes, const Status& status) {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  if (!recorder.recording) return;
  const std::uint32_t lane = ExecutorLane(recorder, recorder.memory_lanes, executor, executor_label, "memory");
  Operation op{TraceKind::kAllocation, call, bytes};
  AddRecord(recorder, lane, op, NanosecondsSince(recorder.origin), status);
}

STREAMEXECUTOR_DECL SynchronousStart BeginSynchronous() {
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  if (!recorder.recording) return {};
  return {recorder.session, NanosecondsSince(recorder.origin)};
}

STREAMEXECUTOR_DECL void RecordSynchronous(const void* executor, std::string_view executor_label, const Operation& op,
                                           SynchronousStart start, const Status& status) {
  if (start.session == 0) return;
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  // A trace stopped (or stopped and started again) meanwhile has no place for it.
  if (!recorder.recording || recorder.session != start.session) return;
  const std::uint32_t lane =
      ExecutorLane(recorder, recorder.synchronous_lanes, executor, executor_label, "synchronous");
  const std::uint64_t index = AddRecord(recorder, lane, op, start.start_ns, status);
  if (!status.ok()) return;  // an instant with the error, like a refused stream operation
  Record& record = recorder.records[index - 1];
  record.start_ns = start.start_ns;
  record.end_ns = NanosecondsSince(recorder.origin);
  ++recorder.lanes[lane].counters.completed;
  ++recorder.processes[record.pid - 1].counters.completed;
}

STREAMEXECUTOR_DECL std::int64_t BeginRange(std::string_view name, bool& annotated) {
  const AnnotationSink sink = Annotations();
  if (sink.push != nullptr) {
    const std::string text(name);
    sink.push(text.c_str());
    annotated = true;
  }
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  return recorder.recording ? NanosecondsSince(recorder.origin) : -1;
}

STREAMEXECUTOR_DECL void EndRange(std::string_view name, std::int64_t start_ns, bool annotated) {
  if (annotated) {
    if (const AnnotationSink sink = Annotations(); sink.pop != nullptr) sink.pop();
  }
  if (start_ns < 0) return;
  // One lane per thread and session, on the trace's "host threads" process.
  thread_local std::uint64_t lane_session = 0;
  thread_local std::uint32_t lane = 0;
  thread_local const int thread_marker = 0;
  Recorder& recorder = TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  if (!recorder.recording) return;
  if (lane_session != recorder.session) {
    lane = AddLane(recorder, &thread_marker, "host threads", "");
    recorder.lanes[lane].name = ::streamexecutor::detail::Format("thread {}", recorder.lanes[lane].tid);
    lane_session = recorder.session;
  }
  const Operation op{TraceKind::kRange, name};
  const std::uint64_t index = AddRecord(recorder, lane, op, start_ns, Status());
  Record& record = recorder.records[index - 1];
  record.start_ns = start_ns;
  record.end_ns = NanosecondsSince(recorder.origin);
  ++recorder.lanes[lane].counters.completed;
}

}  // namespace trace::detail

namespace trace {

STREAMEXECUTOR_DECL Status Start(std::string_view path) {
  detail::StartFromEnvironmentOnce();  // so that the environment's trace, if any, is not lost afterwards
  return detail::StartRecording(path, false);
}

STREAMEXECUTOR_DECL Status Stop() { return detail::Finish(detail::TheRecorder(), nullptr); }

STREAMEXECUTOR_DECL bool Recording() {
  detail::Recorder& recorder = detail::TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  return recorder.recording;
}

STREAMEXECUTOR_DECL std::string Path() {
  detail::Recorder& recorder = detail::TheRecorder();
  const std::lock_guard lock(recorder.mutex);
  return recorder.recording ? recorder.path : std::string();
}

}  // namespace trace

}  // namespace streamexecutor

#endif  // STREAMEXECUTOR_DEFINE_OUT_OF_LINE
