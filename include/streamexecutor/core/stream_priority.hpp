// Stream priorities, chosen when a stream is created:
//
//   se::Stream urgent(executor);
//   urgent.Init(se::StreamPriority::kHigh);
//
// A priority is a scheduling preference between the streams of one device,
// never an order: work of a high-priority stream is started first where
// streams compete for the device (CUDA's block scheduler, OpenCL's queue
// priority hint, the host pool's free workers), and nothing waits for it.
// kNormal is what Init() makes; every backend has it.
//
// A backend that can honour kLow and kHigh is a StreamPriorityBackend:
//   B::CreateStream(ExecutorState&, StreamHandle&, StreamPriority).
// It may still refuse them for a device that lacks what they need (OpenCL
// without cl_khr_priority_hints), with UNIMPLEMENTED naming what is missing.
// Elsewhere Init(kLow) and Init(kHigh) are UNIMPLEMENTED naming the
// capability (docs/api.md, "Stream priorities").
#pragma once

#include <concepts>
#include <string_view>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

enum class StreamPriority : unsigned char { kLow, kNormal, kHigh };

inline constexpr std::string_view StreamPriorityName(StreamPriority priority) {
  switch (priority) {
    case StreamPriority::kLow: return "kLow";
    case StreamPriority::kNormal: return "kNormal";
    case StreamPriority::kHigh: return "kHigh";
  }
  return "unknown";
}

template <typename B>
concept StreamPriorityBackend = Backend<B> && requires(typename B::ExecutorState& executor,
                                                       typename B::StreamHandle& stream, StreamPriority priority) {
  { B::CreateStream(executor, stream, priority) } -> std::same_as<Status>;
};

namespace detail {

// Stream::Init's driver call. kNormal takes the plain CreateStream on every
// backend, so that a stream made without a priority costs what it did.
template <typename B>
Status CreateStreamAt(typename B::ExecutorState& executor, typename B::StreamHandle& stream, StreamPriority priority,
                      std::string_view device) {
  if (priority == StreamPriority::kNormal) return B::CreateStream(executor, stream);
  if (priority != StreamPriority::kLow && priority != StreamPriority::kHigh) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "Stream::Init on {}: {} is not a StreamPriority (kLow, kNormal or kHigh)", device,
                     static_cast<unsigned>(priority));
  }
  if constexpr (StreamPriorityBackend<B>) {
    return B::CreateStream(executor, stream, priority);
  } else {
    return MakeError(ErrorCode::kUnimplemented,
                     "Stream::Init(StreamPriority::{}) on {}: the {} backend has no stream priorities (only kNormal); "
                     "see StreamPriorityBackend in docs/api.md",
                     StreamPriorityName(priority), device, B::kName);
  }
}

}  // namespace detail
}  // namespace streamexecutor
