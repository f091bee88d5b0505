// A stream's part of the trace (core/trace.hpp): each traced operation is
// bracketed by two events of the stream's backend, and its device start and
// end are their times after an anchor event whose host time is known. One
// mechanism on every backend: CUDA events, OpenCL profiling markers, Vulkan
// timestamp queries, the host backend's clock.
//
// Made on a stream's first operation while something observes; until then a
// Stream holds a null pointer.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/trace.hpp"
#include "streamexecutor/detail/function_ref.hpp"

namespace streamexecutor {

template <Backend B>
class StreamExecutor;

namespace detail {

template <Backend B>
class StreamTrace final : public trace::detail::StreamTraceBase {
  using EventHandle = typename B::EventHandle;
  using Recorder = trace::detail::Recorder;

 public:
  StreamTrace(StreamExecutor<B>* executor, std::string name) : executor_(executor), name_(std::move(name)) {
    Recorder& recorder = trace::detail::TheRecorder();
    const std::lock_guard lock(recorder.streams_mutex);
    recorder.streams.push_back(this);
  }
  StreamTrace(const StreamTrace&) = delete;
  StreamTrace& operator=(const StreamTrace&) = delete;
  // The stream has waited for its work: every pending time can be read.
  ~StreamTrace() override {
    {
      Recorder& recorder = trace::detail::TheRecorder();
      const std::lock_guard lock(recorder.streams_mutex);
      std::erase(recorder.streams, this);
    }
    const std::lock_guard lock(mutex);
    Resolve(false);
    for (Pending& p : pending_) {
      Destroy(p.start);
      Destroy(p.end);
    }
    for (EventHandle& event : free_) Destroy(event);
    if (anchor_made_) Destroy(anchor_);
  }

  // Runs `submit` (the operation's driver call) traced: `op` is recorded
  // with its enqueue time and, where the events could be recorded, its
  // device times later. Returns what `submit` returned. Not a template on
  // the call: one copy serves every operation and launch signature.
  [[gnu::cold]] Status Run(typename B::StreamHandle& stream, const trace::detail::Operation& op,
                           FunctionRef<Status()> submit) {
    Recorder& recorder = trace::detail::TheRecorder();
    std::uint64_t session = 0;
    std::int64_t enqueue_ns = 0;
    {
      const std::lock_guard lock(recorder.mutex);
      if (recorder.recording) {
        session = recorder.session;
        enqueue_ns = trace::detail::NanosecondsSince(recorder.origin);
      }
    }
    const trace::detail::AnnotationSink sink = trace::detail::Annotations();
    if (sink.push != nullptr) sink.push(std::string(op.name).c_str());
    if (session == 0) {  // annotations only
      Status status = submit();
      if (sink.pop != nullptr) sink.pop();
      return status;
    }
    EventHandle start{}, end{};
    bool have_start = false, have_end = false, timed = false;
    {
      const std::lock_guard lock(mutex);
      if (session_ != session) Begin(stream, session);
      // Not under the mutex while the driver runs `submit`: a host callback
      // of this stream may enqueue on it meanwhile.
      have_start = timed_ && Take(start);
      have_end = have_start && Take(end);
      timed = have_end && Record(stream, start);
    }
    Status status = submit();
    if (sink.pop != nullptr) sink.pop();
    const std::lock_guard lock(mutex);
    if (timed) timed = Record(stream, end);
    std::uint64_t index = 0;
    {
      const std::lock_guard recorder_lock(recorder.mutex);
      if (recorder.recording && recorder.session == session && session_ == session) {
        index = trace::detail::AddRecord(recorder, lane_, op, enqueue_ns, status);
        if (!timed && status.ok()) recorder.records[index - 1].note = why_untimed_;
      }
    }
    if (index == 0 || !timed || !status.ok()) {
      // A start event recorded without its end is never read: recording it
      // again later is what events allow.
      if (have_start) free_.push_back(start);
      if (have_end) free_.push_back(end);
      return status;
    }
    if (status.ok()) last_op_ = index;
    pending_.push_back(Pending{index, op.kind == TraceKind::kWait, start, end});
    // A stream that is never waited for: read what has finished, without waiting.
    if (pending_.size() >= 512) Resolve(false);
    return status;
  }

  // The stream's latest traced operation in the current trace, index + 1, or 0.
  std::uint64_t LastOperation() {
    const std::lock_guard lock(mutex);
    Recorder& recorder = trace::detail::TheRecorder();
    const std::lock_guard recorder_lock(recorder.mutex);
    return recorder.recording && session_ == recorder.session ? last_op_ : 0;
  }
  void Rename(std::string name) {
    const std::lock_guard lock(mutex);
    name_ = std::move(name);
    if (session_ != 0) trace::detail::RenameLane(session_, lane_, name_);
  }
  // After the stream's BlockHostUntilDone: everything has run.
  void Synchronized(std::int64_t blocked_ns) {
    const std::lock_guard lock(mutex);
    if (session_ == 0) return;
    trace::detail::AddBlockedTime(session_, lane_, blocked_ns);
    Resolve(false);
  }
  TraceCounters Counters() {
    const std::lock_guard lock(mutex);
    return session_ != 0 ? trace::detail::CountersOfLane(session_, lane_) : TraceCounters();
  }

  // Under `mutex`.
  void Resolve(bool at_stop) override {
    Recorder& recorder = trace::detail::TheRecorder();
    std::size_t done = 0;
    for (; done < pending_.size(); ++done) {
      Pending& p = pending_[done];
      StatusOr<bool> finished = B::QueryEvent(p.end);
      if (!finished.ok() || !finished.value()) break;
      StatusOr<std::int64_t> begin = DeviceTime(p.start);
      StatusOr<std::int64_t> finish = DeviceTime(p.end);
      const std::lock_guard lock(recorder.mutex);
      if (recorder.session == session_ && p.record <= recorder.records.size()) {
        trace::detail::Record& record = recorder.records[p.record - 1];
        if (begin.ok() && finish.ok()) {
          // As measured; WriteTrace makes them consistent with what is known for sure.
          record.start_ns = begin.value();
          record.end_ns = std::max(finish.value(), begin.value());
          trace::detail::Lane& lane = recorder.lanes[lane_];
          trace::detail::Process& process = recorder.processes[lane.pid - 1];
          ++lane.counters.completed;
          ++process.counters.completed;
          if (p.wait) {
            const auto waited = static_cast<std::uint64_t>(record.end_ns - record.start_ns);
            lane.counters.device_wait_ns += waited;
            process.counters.device_wait_ns += waited;
          }
        } else {
          record.note = (begin.ok() ? finish.status() : begin.status()).ToString();
        }
      }
    }
    for (std::size_t i = 0; i < done; ++i) {
      free_.push_back(pending_[i].start);
      free_.push_back(pending_[i].end);
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
    if (at_stop) {
      {
        const std::lock_guard lock(recorder.mutex);
        for (Pending& p : pending_) {
          if (recorder.session == session_ && p.record <= recorder.records.size()) {
            recorder.records[p.record - 1].note = "not finished when the trace stopped";
          }
        }
      }
      // Their events may still be in the queue: destroyed once the stream
      // has waited (the next session's Begin or this object's end).
      for (Pending& p : pending_) retired_.push_back(p);
      pending_.clear();
    }
  }

 private:
  struct Pending {
    std::uint64_t record;  // index + 1
    bool wait;
    EventHandle start;
    EventHandle end;
  };

  // The first operation of `session` on this stream: a lane, and the anchor.
  void Begin(typename B::StreamHandle& stream, std::uint64_t session) {
    for (Pending& p : retired_) {
      if (B::QueryEvent(p.end).value_or(false)) {
        free_.push_back(p.start);
        free_.push_back(p.end);
      } else {
        lost_.push_back(p);
      }
    }
    retired_ = std::exchange(lost_, {});
    pending_.clear();
    last_op_ = 0;
    {
      Recorder& recorder = trace::detail::TheRecorder();
      const std::lock_guard lock(recorder.mutex);
      lane_ = trace::detail::AddLane(recorder, executor_, executor_->DeviceLabel(), name_);
    }
    session_ = session;
    if constexpr (HostClockEventBackend<B>) {
      timed_ = true;  // its events tell host time themselves
      Recorder& recorder = trace::detail::TheRecorder();
      const std::lock_guard lock(recorder.mutex);
      origin_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(recorder.origin.time_since_epoch()).count();
      return;
    }
    if (anchor_made_) {
      timed_ = true;
      return Reanchor(stream);
    }
    if constexpr (TimingStreamBackend<B>) {
      if (Status s = B::EnableTiming(stream); !s.ok()) {
        why_untimed_ = "no device times: " + s.ToString();
        return;
      }
    }
    if (!Create(anchor_)) return;
    anchor_made_ = true;
    timed_ = true;
    Reanchor(stream);
  }
  // The anchor's host time: recorded and waited for, once per stream and
  // trace. The first wait drains the stream's earlier work; on the idle
  // stream the anchor then ran between the record and the wait's return,
  // and the middle of the shortest of three tries is taken.
  void Reanchor(typename B::StreamHandle& stream) {
    Recorder& recorder = trace::detail::TheRecorder();
    auto now = [&] {
      const std::lock_guard lock(recorder.mutex);
      return trace::detail::NanosecondsSince(recorder.origin);
    };
    Status s = B::Submit(stream, op::RecordEvent<EventHandle>{&anchor_});
    if (s.ok()) s = B::SynchronizeEvent(anchor_);
    std::int64_t best = -1;
    int retries = 0;
    for (int attempt = 0; attempt < 3 && s.ok(); ++attempt) {
      const std::int64_t before = now();
      s = B::Submit(stream, op::RecordEvent<EventHandle>{&anchor_});
      if (s.ok()) s = B::SynchronizeEvent(anchor_);
      const std::int64_t after = now();
      // Only the latest recording counts for later reads: keep it unless an earlier try was twice as tight.
      if (best < 0 || after - before <= 2 * best) {
        best = after - before;
        anchor_ns_ = before + (after - before) / 2;
      } else {
        --attempt;  // a late wake-up: try again, at most a few times more
        if (++retries > 6) break;
      }
    }
    if (!s.ok()) {
      why_untimed_ = "no device times: recording the anchor event failed: " + s.ToString();
      Destroy(anchor_);
      anchor_made_ = false;
      timed_ = false;
    }
  }
  // An event's device time as host time from the trace's start.
  StatusOr<std::int64_t> DeviceTime(EventHandle& event) {
    if constexpr (HostClockEventBackend<B>) {
      StatusOr<std::int64_t> at = B::EventSteadyClockNanoseconds(event);
      if (!at.ok()) return at.status();
      return at.value() - origin_ns_;
    } else {
      StatusOr<std::uint64_t> elapsed = B::ElapsedNanoseconds(anchor_, event);
      if (!elapsed.ok()) return elapsed.status();
      return anchor_ns_ + static_cast<std::int64_t>(elapsed.value());
    }
  }
  bool Create(EventHandle& event) {
    Status s;
    if constexpr (TimingEventBackend<B>) {
      s = B::CreateTimingEvent(executor_->native_state(), event);
    } else {
      s = B::CreateEvent(executor_->native_state(), event);
    }
    if (!s.ok()) why_untimed_ = "no device times: creating an event failed: " + s.ToString();
    return s.ok();
  }
  bool Take(EventHandle& event) {
    if (!free_.empty()) {
      event = free_.back();
      free_.pop_back();
      return true;
    }
    return Create(event);
  }
  bool Record(typename B::StreamHandle& stream, EventHandle& event) {
    Status s = B::Submit(stream, op::RecordEvent<EventHandle>{&event});
    if (!s.ok()) why_untimed_ = "no device times: recording an event failed: " + s.ToString();
    return s.ok();
  }
  void Destroy(EventHandle& event) { B::DestroyEvent(executor_->native_state(), event); }

  StreamExecutor<B>* executor_;
  std::string name_;
  std::uint64_t session_ = 0;  // the trace this stream's lane belongs to; 0: none
  std::uint32_t lane_ = 0;
  std::uint64_t last_op_ = 0;
  bool anchor_made_ = false;
  bool timed_ = false;  // device times can be read in this session
  EventHandle anchor_{};
  std::int64_t anchor_ns_ = 0;  // the anchor's host time, from the trace's start
  std::int64_t origin_ns_ = 0;  // HostClockEventBackend: the trace's start on the steady clock
  std::string why_untimed_ = "no device times";
  std::vector<Pending> pending_;  // enqueued, times not read yet, in stream order
  std::vector<Pending> retired_;  // left unfinished by a trace's end
  std::vector<Pending> lost_;
  std::vector<EventHandle> free_;  // recorded and read: ready to record again
};

}  // namespace detail
}  // namespace streamexecutor
