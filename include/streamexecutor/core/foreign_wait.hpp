// Waits of a stream on another backend's event or stream (Stream::ThenWaitFor
// with an Event<Other> or Stream<Other>): the waiting backend queues a wait on
// its own driver's object, and the other backend's driver lifts it when the
// event completes (ForeignWaitBackend and EventNotifyBackend in
// core/backend.hpp).
#pragma once

#include <string_view>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor::detail {

// Queues on `waiting` (a stream of `waiting_executor`) a wait that `event`,
// of `other_executor`, lifts when it completes.
template <Backend B, Backend Other>
Status WaitOnForeignEvent(std::string_view caller, StreamExecutor<B>& waiting_executor,
                          typename B::StreamHandle& waiting, StreamExecutor<Other>& other_executor,
                          typename Other::EventHandle& event) {
  if constexpr (ForeignWaitBackend<B> && EventNotifyBackend<Other>) {
    op::ForeignRelease release;
    STREAMEXECUTOR_RETURN_IF_ERROR(B::Submit(waiting, op::WaitForeign{&release}));
    if (Status s = Other::NotifyWhenComplete(other_executor.native_state(), event, release); !s.ok()) {
      release();  // the wait is queued: lift it rather than hang the stream
      return s;
    }
    return Status();
  } else {
    return MakeError(ErrorCode::kUnimplemented, "{} on {}: a {} stream cannot wait on {} ({})", caller,
                     waiting_executor.DeviceLabel(), B::kName, other_executor.DeviceLabel(),
                     ForeignWaitBackend<B> ? "its events cannot notify another backend"
                                           : "this backend cannot wait on another backend");
  }
}

// The same for everything queued so far on `other` (a stream of
// `other_executor`, given by its handle): a marker of that stream's own
// backend, recorded whatever the stream's status (its earlier work may still
// run). Destroying it right after is safe on every backend: queued records
// and notifications hold what they need.
template <Backend B, Backend Other>
Status WaitOnForeignStream(std::string_view caller, StreamExecutor<B>& waiting_executor,
                           typename B::StreamHandle& waiting, StreamExecutor<Other>& other_executor,
                           typename Other::StreamHandle& other) {
  Event<Other> marker(&other_executor);
  if (!marker.Init()) return marker.init_status();
  STREAMEXECUTOR_RETURN_IF_ERROR(
      Other::Submit(other, op::RecordEvent<typename Other::EventHandle>{&marker.native_handle()}));
  return WaitOnForeignEvent(caller, waiting_executor, waiting, other_executor, marker.native_handle());
}

}  // namespace streamexecutor::detail
