// Stream memory operations on CUDA (core/stream_memory.hpp): one
// cuStreamWaitValue32/64 or cuStreamWriteValue32/64 each. se::cuda derives
// from StreamMemoryOperations.
//
// They are queued on a failed stream too, as the host backend runs them: a
// stream waiting on this one's value must not hang on its error.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string_view>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/core/stream_memory.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/kernel_params.hpp"
#include "streamexecutor/cuda/state.hpp"
#include "streamexecutor/detail/fmt.hpp"

namespace streamexecutor::cuda_detail {

inline unsigned WaitFlags(WaitCondition condition) {
  switch (condition) {
    case WaitCondition::kGreaterOrEqual: return CU_STREAM_WAIT_VALUE_GEQ;
    case WaitCondition::kEqual: return CU_STREAM_WAIT_VALUE_EQ;
    case WaitCondition::kAnd: return CU_STREAM_WAIT_VALUE_AND;
    case WaitCondition::kNor: return CU_STREAM_WAIT_VALUE_NOR;
  }
  return CU_STREAM_WAIT_VALUE_GEQ;
}

// The device attribute that says whether the device runs an operation: the
// driver refuses one it lacks with CUDA_ERROR_NOT_SUPPORTED.
inline std::string_view StreamMemoryAttribute(bool wide, WaitCondition condition) {
  if (wide) return "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS";
  if (condition == WaitCondition::kNor) return "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR";
  return {};
}
[[gnu::cold]] inline Status StreamMemoryError(const StreamState& stream, CUresult result, std::string_view call,
                                              std::string_view what, std::string_view attribute) {
  if (result == CUDA_ERROR_NOT_SUPPORTED && !attribute.empty()) {
    return stream.api->Error(result, call, "({} on a stream of cuda:{}; the device lacks {})", what, stream.ordinal,
                             attribute);
  }
  return stream.api->Error(result, call, "({} on a stream of cuda:{})", what, stream.ordinal);
}

struct StreamMemoryOperations {
  static Status Submit(StreamState*& stream, const op::WaitValue& wait) {
    const DriverApi& api = *stream->api;
    const std::string_view call = wait.wide ? "cuStreamWaitValue64" : "cuStreamWaitValue32";
    if ((wait.wide ? api.cuStreamWaitValue64 == nullptr : api.cuStreamWaitValue32 == nullptr)) [[unlikely]]
      return Missing(api, call);
    const ContextScope context_scope(api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    const CUdeviceptr address = DeviceAddress(wait.word);
    const unsigned flags = WaitFlags(wait.condition);
    const CUresult r =
        wait.wide ? api.cuStreamWaitValue64(stream->stream, address, wait.value, flags)
                  : api.cuStreamWaitValue32(stream->stream, address, static_cast<cuuint32_t>(wait.value), flags);
    if (r == CUDA_SUCCESS) [[likely]]
      return Status();
    return StreamMemoryError(
        *stream, r, call,
        ::streamexecutor::detail::Format("waiting until {} {}", WaitConditionName(wait.condition), wait.value),
        StreamMemoryAttribute(wait.wide, wait.condition));
  }
  static Status Submit(StreamState*& stream, const op::WriteValue& write) {
    const DriverApi& api = *stream->api;
    const std::string_view call = write.wide ? "cuStreamWriteValue64" : "cuStreamWriteValue32";
    if ((write.wide ? api.cuStreamWriteValue64 == nullptr : api.cuStreamWriteValue32 == nullptr)) [[unlikely]]
      return Missing(api, call);
    const ContextScope context_scope(api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    const CUdeviceptr address = DeviceAddress(write.word);
    const CUresult r =
        write.wide ? api.cuStreamWriteValue64(stream->stream, address, write.value, CU_STREAM_WRITE_VALUE_DEFAULT)
                   : api.cuStreamWriteValue32(stream->stream, address, static_cast<cuuint32_t>(write.value),
                                              CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r == CUDA_SUCCESS) [[likely]]
      return Status();
    return StreamMemoryError(*stream, r, call, ::streamexecutor::detail::Format("writing {}", write.value),
                             StreamMemoryAttribute(write.wide, WaitCondition::kEqual));
  }

 private:
  [[gnu::cold]] static Status Missing(const DriverApi& api, std::string_view call) {
    return MakeError(ErrorCode::kUnimplemented,
                     "{}: the CUDA driver (version {}) has no stream memory operations (CUDA 11.7 or later)", call,
                     api.driver_version);
  }
};

}  // namespace streamexecutor::cuda_detail
