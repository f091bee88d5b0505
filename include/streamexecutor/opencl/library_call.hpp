// A call into a library that enqueues on a stream's cl_command_queue itself
// (CLBlast for the canned BLAS and DNN operations), under the backend's rules
// for its own commands: skipped once the stream failed, and held behind a
// pending host callback (opencl/held.hpp) until the callback thread enqueues
// it. A held call keeps the buffers it uses alive: the caller may free them
// as soon as its Then* call returns.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/opencl/held.hpp"

namespace streamexecutor::opencl_detail {

template <typename Call>
struct HeldLibraryCall {
  Call call;
  std::vector<DeviceMemoryBase> buffers;

  static bool Run(StreamState& stream, void* payload) {
    const std::unique_ptr<HeldLibraryCall> held(static_cast<HeldLibraryCall*>(payload));
    if (!stream.Failed()) {
      if (Status status = held->call(stream); !status.ok()) stream.Fail(std::move(status));
    }
    for (const DeviceMemoryBase& buffer : held->buffers) ReleaseBuffer(buffer);
    return false;
  }
};

// `call(stream)` enqueues on stream.queue; `buffers` lists every view it uses.
template <typename Call>
Status EnqueueLibraryCall(StreamState& stream, std::string_view caller, std::span<const DeviceMemoryBase> buffers,
                          Call&& call) {
  if (stream.Diverted()) [[unlikely]] {
    if (stream.Failed()) return Status();  // skipped, as on every backend
    std::optional<Status> held = HoldIfPending(stream, [&]() -> Status {
      using Payload = HeldLibraryCall<std::decay_t<Call>>;
      Payload* payload = nullptr;
      try {
        payload = new Payload{std::forward<Call>(call), std::vector<DeviceMemoryBase>(buffers.begin(), buffers.end())};
        stream.held.push_back({payload, &Payload::Run});
      } catch (...) {
        delete payload;
        return HoldFailed(stream, caller);
      }
      for (const DeviceMemoryBase& buffer : buffers) RetainBuffer(buffer);
      return Status();
    });
    if (held) return *held;
  }
  return call(stream);
}

}  // namespace streamexecutor::opencl_detail
