// Commands held behind a pending host callback (see StreamState::kHolding in
// runtime.hpp): OpenCL cannot cancel a queued command, so to skip what follows
// a failing callback, as every backend does, what is enqueued while a callback
// is pending waits here and the callback thread enqueues it after the callback
// ran, or skips it if the callback failed. Each held command keeps what it
// uses alive (buffers, the kernel, the event), since the user may free them
// the moment the Then* call returns. Only this slow path allocates.
#pragma once

#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"
#include "streamexecutor/opencl/launch.hpp"
#include "streamexecutor/opencl/memory.hpp"
#include "streamexecutor/opencl/runtime.hpp"

namespace streamexecutor::opencl_detail {

inline void RetainBuffer(const DeviceMemoryBase& view) {
  if (!view.IsNull()) clRetainMemObject(Buffer(view));
}
inline void ReleaseBuffer(const DeviceMemoryBase& view) {
  if (!view.IsNull()) clReleaseMemObject(Buffer(view));
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold]] STREAMEXECUTOR_DECL Status HoldFailed(const StreamState& stream, std::string_view op) {
  return MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of memory to queue behind a pending host callback", op,
                   stream.executor->label);
}
#else
[[gnu::cold]] STREAMEXECUTOR_DECL Status HoldFailed(const StreamState& stream, std::string_view op);
#endif

// Runs `hold` (which pushes the command) if a callback is pending; nullopt
// when none is, and the caller enqueues directly.
template <typename Hold>
std::optional<Status> HoldIfPending(StreamState& stream, Hold&& hold) {
  std::lock_guard<std::mutex> lock(stream.jobs_mutex);
  if ((stream.mode.load(std::memory_order_acquire) & StreamState::kHolding) == 0) return std::nullopt;
  return hold();
}

// ---- Copies and fills ---------------------------------------------------------

struct HeldTransfer {
  enum class Kind { kWrite, kRead, kCopy, kFill8, kFill32 } kind;
  DeviceMemoryBase dst;
  DeviceMemoryBase src;
  const void* host_src = nullptr;
  void* host_dst = nullptr;
  std::uint64_t bytes = 0;
  std::uint32_t pattern = 0;
};

inline bool RunHeldTransfer(StreamState& stream, void* payload) {
  const std::unique_ptr<HeldTransfer> t(static_cast<HeldTransfer*>(payload));
  if (!stream.Failed()) {
    const std::string& label = stream.executor->label;
    Status status;
    switch (t->kind) {
      case HeldTransfer::Kind::kWrite:
        status = Write(stream.queue, CL_FALSE, t->dst, t->host_src, t->bytes, label);
        break;
      case HeldTransfer::Kind::kRead:
        status = Read(stream.queue, CL_FALSE, t->host_dst, t->src, t->bytes, label);
        break;
      case HeldTransfer::Kind::kCopy: status = Copy(stream.queue, t->dst, t->src, t->bytes, label); break;
      case HeldTransfer::Kind::kFill8: status = Fill8(stream.queue, t->dst, t->pattern, t->bytes, label); break;
      case HeldTransfer::Kind::kFill32: status = Fill32(stream.queue, t->dst, t->pattern, t->bytes, label); break;
    }
    if (!status.ok()) stream.Fail(std::move(status));
  }
  ReleaseBuffer(t->dst);
  ReleaseBuffer(t->src);
  return false;
}

// The slow path of every copy and fill: skipped after a failure, held behind
// a pending callback, otherwise nullopt (enqueue directly).
inline std::optional<Status> DivertTransfer(StreamState& stream, const HeldTransfer& transfer, std::string_view op) {
  if (stream.Failed()) return Status();
  return HoldIfPending(stream, [&]() -> Status {
    auto* payload = new (std::nothrow) HeldTransfer(transfer);
    if (payload == nullptr) return HoldFailed(stream, op);
    RetainBuffer(payload->dst);
    RetainBuffer(payload->src);
    try {
      stream.held.push_back({payload, &RunHeldTransfer});
    } catch (...) {
      ReleaseBuffer(payload->dst);
      ReleaseBuffer(payload->src);
      delete payload;
      return HoldFailed(stream, op);
    }
    return Status();
  });
}

// ---- Launches -------------------------------------------------------------------

template <typename... Params>
struct HeldLaunch {
  LoadedKernel* kernel;
  ThreadDim threads;
  BlockDim blocks;
  PackedArgs<Params...> args;
  const std::string* name;

  template <typename F>
  void ForEachBuffer(F&& f) const {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((is_device_memory_pointer_v<std::remove_cv_t<Params>> ? f(std::get<I>(args)) : void()), ...);
    }(std::index_sequence_for<Params...>{});
  }
};

template <typename... Params>
bool RunHeldLaunch(StreamState& stream, void* payload) {
  const std::unique_ptr<HeldLaunch<Params...>> l(static_cast<HeldLaunch<Params...>*>(payload));
  if (!stream.Failed()) {
    if (Status status = LaunchKernel<Params...>(stream, *l->kernel, l->threads, l->blocks, l->args, l->name);
        !status.ok()) {
      stream.Fail(std::move(status));
    }
  }
  l->ForEachBuffer([](const auto& view) {
    if constexpr (std::is_same_v<std::decay_t<decltype(view)>, DeviceMemoryBase>) ReleaseBuffer(view);
  });
  l->kernel->Release();
  return false;
}

template <typename... Params>
[[gnu::noinline]] Status DivertedLaunch(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads,
                                        const BlockDim& blocks, const PackedArgs<Params...>& args,
                                        const std::string* name) {
  if (stream.Failed()) return Status();  // skipped, as on every backend
  // Size errors are reported by ThenLaunch itself, held or not.
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckLaunchSizes<Params...>(kernel, threads, args, name ? std::string_view(*name) : std::string_view("?")));
  std::optional<Status> held = HoldIfPending(stream, [&]() -> Status {
    auto* payload = new (std::nothrow) HeldLaunch<Params...>{&kernel, threads, blocks, args, name};
    if (payload == nullptr) return HoldFailed(stream, "ThenLaunch");
    try {
      stream.held.push_back({payload, &RunHeldLaunch<Params...>});
    } catch (...) {
      delete payload;
      return HoldFailed(stream, "ThenLaunch");
    }
    kernel.Retain();
    payload->ForEachBuffer([](const auto& view) {
      if constexpr (std::is_same_v<std::decay_t<decltype(view)>, DeviceMemoryBase>) RetainBuffer(view);
    });
    return Status();
  });
  if (held) return *held;
  return LaunchKernel<Params...>(stream, kernel, threads, blocks, args, name);
}

// ---- Host callbacks -------------------------------------------------------------

inline bool RunHeldCallback(StreamState& stream, void* payload) {
  const std::unique_ptr<CallbackJob> job(static_cast<CallbackJob*>(payload));
  if (stream.Failed()) return false;
  if (Status status = stream.EnqueueCallbackLocked(*job); !status.ok()) {
    stream.Fail(std::move(status));
    return false;
  }
  return true;  // holds what follows until it ran
}

// ---- Event records and waits: never skipped, so that waiters do not hang ---------

struct HeldRecord {
  EventState* event;  // retained
  cl_event stand_in;  // a user event that stood for the record until now; retained
};

inline void CL_CALLBACK CompleteStandIn(cl_event, cl_int, void* user_data) {
  auto stand_in = static_cast<cl_event>(user_data);
  clSetUserEventStatus(stand_in, CL_COMPLETE);
  clReleaseEvent(stand_in);
}

// A recording of another executor (another cl_context) cannot sit in this
// context's wait lists; a user event of this context stands in for it and the
// driver completes it from the foreign event's completion callback, so no
// thread of ours waits. Completed even when the foreign work failed, as held
// records are: a waiter never hangs on another stream's error. The caller
// owns the returned event.
inline StatusOr<cl_event> BridgeFromOtherContext(const Executor& executor, cl_event foreign) {
  cl_int error = CL_SUCCESS;
  cl_event bridge = clCreateUserEvent(executor.context, &error);
  if (error != CL_SUCCESS) {
    return ClError("clCreateUserEvent", error, "standing in for an event of another device on {}", executor.label);
  }
  clRetainEvent(bridge);  // the callback's reference
  error = clSetEventCallback(foreign, CL_COMPLETE, &CompleteStandIn, bridge);
  if (error != CL_SUCCESS) {
    clReleaseEvent(bridge);
    clReleaseEvent(bridge);
    return ClError("clSetEventCallback", error, "waiting on {} for an event of another device", executor.label);
  }
  return bridge;
}

// ---- Waits between backends -----------------------------------------------------
// A stream of this backend waiting on another backend's event waits on a user
// event of its context (the gate); the other backend's release completes it.
inline void OpenGate(void* gate) noexcept {
  clSetUserEventStatus(static_cast<cl_event>(gate), CL_COMPLETE);
  clReleaseEvent(static_cast<cl_event>(gate));
}
inline void CL_CALLBACK FireRelease(cl_event, cl_int, void* user_data) {
  const std::unique_ptr<op::ForeignRelease> release(static_cast<op::ForeignRelease*>(user_data));
  (*release)();
}
// And an event of ours lifts another backend's wait from the driver's
// completion callback (which also runs when the recording stream failed).
inline Status NotifyForeign(const Executor& executor, EventState& event, op::ForeignRelease release) {
  const EventRef latest(event.Acquire());
  if (!latest.event) {  // never recorded: complete
    release();
    return Status();
  }
  auto* box = new (std::nothrow) op::ForeignRelease(release);
  if (box == nullptr) {
    return MakeError(ErrorCode::kResourceExhausted,
                     "ThenWaitFor on an event of {}: out of memory to register the waiter", executor.label);
  }
  if (const cl_int error = clSetEventCallback(latest.event, CL_COMPLETE, &FireRelease, box); error != CL_SUCCESS) {
    delete box;
    return ClError("clSetEventCallback", error, "letting another backend wait on an event of {}", executor.label);
  }
  return Status();
}

inline bool RunHeldRecord(StreamState& stream, void* payload) {
  const std::unique_ptr<HeldRecord> r(static_cast<HeldRecord*>(payload));
  cl_event marker = nullptr;
  const cl_int error = clEnqueueMarkerWithWaitList(stream.queue, 0, nullptr, &marker);
  if (error != CL_SUCCESS) {
    stream.Fail(ClError("clEnqueueMarkerWithWaitList", error, "recording an event on {}", stream.executor->label));
    CompleteStandIn(nullptr, CL_COMPLETE, r->stand_in);
  } else {
    clFlush(stream.queue);
    // Timers read the profiling times of the real marker.
    r->event->ReplaceIfLatest(r->stand_in, marker);
    if (clSetEventCallback(marker, CL_COMPLETE, &CompleteStandIn, r->stand_in) != CL_SUCCESS) {
      CompleteStandIn(nullptr, CL_COMPLETE, r->stand_in);  // untracked: better early than never
    }
    clReleaseEvent(marker);
  }
  r->event->Release();
  return false;
}

// Installs a user event as the event's latest recording at once (so that
// waits enqueued from now on target this record) and holds the real marker.
inline std::optional<Status> DivertRecord(StreamState& stream, EventState& event) {
  return HoldIfPending(stream, [&]() -> Status {
    cl_int error = CL_SUCCESS;
    cl_event stand_in = clCreateUserEvent(stream.executor->context, &error);
    if (error != CL_SUCCESS) {
      return ClError("clCreateUserEvent", error, "recording an event behind a host callback on {}",
                     stream.executor->label);
    }
    auto* payload = new (std::nothrow) HeldRecord{&event, stand_in};
    if (payload == nullptr) {
      clReleaseEvent(stand_in);
      return HoldFailed(stream, "ThenRecordEvent");
    }
    try {
      stream.held.push_back({payload, &RunHeldRecord});
    } catch (...) {
      delete payload;
      clReleaseEvent(stand_in);
      return HoldFailed(stream, "ThenRecordEvent");
    }
    event.Retain();
    clRetainEvent(stand_in);  // the held record's reference; the event takes the creation's
    event.Replace(stand_in);
    return Status();
  });
}

struct HeldWait {
  cl_event awaited;  // retained
};

inline bool RunHeldWait(StreamState& stream, void* payload) {
  const std::unique_ptr<HeldWait> w(static_cast<HeldWait*>(payload));
  const cl_int error = clEnqueueBarrierWithWaitList(stream.queue, 1, &w->awaited, nullptr);
  if (error != CL_SUCCESS) {
    stream.Fail(ClError("clEnqueueBarrierWithWaitList", error, "waiting for an event on {}", stream.executor->label));
  }
  clReleaseEvent(w->awaited);
  return false;
}

inline std::optional<Status> DivertWait(StreamState& stream, cl_event awaited) {
  return HoldIfPending(stream, [&]() -> Status {
    auto* payload = new (std::nothrow) HeldWait{awaited};
    if (payload == nullptr) return HoldFailed(stream, "ThenWaitFor");
    try {
      stream.held.push_back({payload, &RunHeldWait});
    } catch (...) {
      delete payload;
      return HoldFailed(stream, "ThenWaitFor");
    }
    clRetainEvent(awaited);
    return Status();
  });
}

}  // namespace streamexecutor::opencl_detail
