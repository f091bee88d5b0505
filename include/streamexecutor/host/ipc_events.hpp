// The host backend's events shared between processes (core/ipc.hpp): an
// interprocess event's recordings are numbered in a page of shared memory
// (host_detail::SharedEventState) that every process using it maps. A
// recording raises `completed` to its number when its stream reaches it; a
// wait is a stream memory wait (host_detail::ValueWaits) until `completed`
// reaches the latest number at the time of the wait, so it parks only its
// stream, and a recording in another process is seen within
// Pool::kValuePollInterval.
//
// Recordings on two streams at once may complete out of order; `completed`
// then says the later number while the earlier recording still runs. Record
// an interprocess event on one stream at a time, as the pattern that shares
// it (a producer's stream) does.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>

#include "streamexecutor/core/ipc.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/shared_pages.hpp"
#include "streamexecutor/host/command_queue.hpp"
#include "streamexecutor/host/ipc.hpp"
#include "streamexecutor/host/thread_pool.hpp"

namespace streamexecutor::host_detail {

inline Status CreateInterprocessEvent(HostEvent*& event) {
  void* mapped = nullptr;
  StatusOr<streamexecutor::detail::SharedPages> pages =
      streamexecutor::detail::CreateSharedPages(streamexecutor::detail::PageSize(), "streamexecutor-event", &mapped);
  if (!pages.ok()) return pages.status();
  event = new (std::nothrow) HostEvent();
  if (event == nullptr) {
    streamexecutor::detail::UnmapSharedPages(mapped, pages.value().bytes);
    close(pages.value().fd);
    return Status(ErrorCode::kResourceExhausted, "creating an interprocess event: out of memory");
  }
  event->SetShared(static_cast<SharedEventState*>(mapped), pages.value(), /*owner=*/true);
  return Status();
}

inline Status ExportEvent(HostEvent* event, IpcPayload payload) {
  if (event == nullptr || event->shared() == nullptr) {
    return Status(ErrorCode::kFailedPrecondition, "the event was not made to be shared");
  }
  std::memcpy(payload.data(), &event->pages(), sizeof(streamexecutor::detail::SharedPages));
  return Status();
}

inline Status ImportEvent(ConstIpcPayload payload, HostEvent*& event) {
  streamexecutor::detail::SharedPages pages;
  std::memcpy(&pages, payload.data(), sizeof pages);
  if (pages.bytes < sizeof(SharedEventState)) {
    return Status(ErrorCode::kInvalidArgument, "the handle names no event state");
  }
  StatusOr<void*> mapped = streamexecutor::detail::MapSharedPages(pages);
  if (!mapped.ok()) return mapped.status();
  event = new (std::nothrow) HostEvent();
  if (event == nullptr) {
    streamexecutor::detail::UnmapSharedPages(mapped.value(), pages.bytes);
    return Status(ErrorCode::kResourceExhausted, "opening an interprocess event: out of memory");
  }
  event->SetShared(static_cast<SharedEventState*>(mapped.value()), pages, /*owner=*/false);
  return Status();
}

// A recording: the stream raises `completed` to the recording's number.
inline Status RecordShared(HostStream* stream, HostEvent& event) {
  Command* command = stream->Reserve();
  if (command == nullptr) return stream->Refused("ThenRecordEvent");
  command->kind = Command::Kind::kRaiseValue;
  command->value = ValueCommand{&event.shared()->completed, event.NextSharedRecording(),
                                streamexecutor::WaitCondition::kGreaterOrEqual, true};
  stream->Publish();
  return Status();
}

// A wait for the latest recording so far, in any process; none if it has run.
inline Status WaitShared(HostStream* stream, HostEvent& event) {
  const std::uint64_t latest = event.SharedRecorded();
  if (event.SharedCompleted() >= latest) return Status();
  Command* command = stream->Reserve();
  if (command == nullptr) return stream->Refused("ThenWaitFor");
  command->kind = Command::Kind::kWaitValue;
  command->value =
      ValueCommand{&event.shared()->completed, latest, streamexecutor::WaitCondition::kGreaterOrEqual, true};
  stream->Publish();
  return Status();
}

inline bool SharedComplete(const HostEvent& event) { return event.SharedCompleted() >= event.SharedRecorded(); }

inline void SynchronizeShared(const HostEvent& event) {
  const std::uint64_t latest = event.SharedRecorded();
  Pool::Backoff backoff;
  while (event.SharedCompleted() < latest) {
    // Resumes what this process parked on the event, which a serial pool's
    // streams need this thread for; sleeps between reads once polling is over.
    if (!backoff.Poll() && !Pool::PollValueWaits()) std::this_thread::sleep_for(Pool::kValuePollInterval);
  }
}

[[gnu::cold]] inline Status NotShared(std::string_view what) {
  return MakeError(ErrorCode::kUnimplemented, "{}: an interprocess event of the host backend does not support it",
                   what);
}

}  // namespace streamexecutor::host_detail
