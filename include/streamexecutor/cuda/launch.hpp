// The launch path: the current-context check and one cuLaunchKernel, inlined
// into every launch. Each way a launch can fail is one cold, out-of-line call
// that builds the Status, so that a launch that succeeds builds none and the
// inlined path keeps nothing alive for its failures. Used by the typed, the
// packed and the run-time typed launches (backend.hpp); the argument arrays
// come from kernel_params.hpp.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/state.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

namespace streamexecutor::cuda_detail {

// The dimensions come as six integers, here and below: see Stream::RefuseLaunch.
[[gnu::always_inline]] inline CUresult CallLaunchKernel(const StreamState& stream, CUfunction function,
                                                        std::uint64_t tx, std::uint64_t ty, std::uint64_t tz,
                                                        std::uint64_t bx, std::uint64_t by, std::uint64_t bz,
                                                        std::uint64_t shared_bytes, void** params) {
  return stream.api->cuLaunchKernel(function, static_cast<unsigned>(bx), static_cast<unsigned>(by),
                                    static_cast<unsigned>(bz), static_cast<unsigned>(tx), static_cast<unsigned>(ty),
                                    static_cast<unsigned>(tz), static_cast<unsigned>(shared_bytes), stream.stream,
                                    params, nullptr);
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFailed(
    const StreamState& stream, CUresult r, std::uint64_t tx, std::uint64_t ty, std::uint64_t tz, std::uint64_t bx,
    std::uint64_t by, std::uint64_t bz, std::uint64_t shared_bytes, const std::string* kernel_name) {
  return stream.api->Error(r, "cuLaunchKernel",
                           "launching kernel '{}' on cuda:{} with {}x{}x{} blocks of {}x{}x{} threads and {} "
                           "bytes of dynamic shared memory",
                           kernel_name ? *kernel_name : std::string("?"), stream.ordinal, bx, by, bz, tx, ty, tz,
                           shared_bytes);
}

// Refused inside a host function, or cuCtxGetCurrent failed.
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status ContextRefused(const StreamState& stream, CUresult r,
                                                                       DriverStep step) {
  return ContextScope::Failure(*stream.api, r, step, stream.context);
}

// The launch when another context, or none, is current on the thread: switch
// (ContextScope), launch, and give the caller's context back. Out of line, so
// that the common path keeps no context to restore.
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status
LaunchSwitchingContext(const StreamState& stream, CUfunction function, std::uint64_t tx, std::uint64_t ty,
                       std::uint64_t tz, std::uint64_t bx, std::uint64_t by, std::uint64_t bz,
                       std::uint64_t shared_bytes, void** params, const std::string* kernel_name) {
  const ContextScope context_scope(*stream.api, stream.context);
  if (!context_scope.ok()) return context_scope.status();
  const CUresult r = CallLaunchKernel(stream, function, tx, ty, tz, bx, by, bz, shared_bytes, params);
  if (r == CUDA_SUCCESS) return Status();
  return LaunchFailed(stream, r, tx, ty, tz, bx, by, bz, shared_bytes, kernel_name);
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFailed(
    const StreamState& stream, CUresult r, std::uint64_t tx, std::uint64_t ty, std::uint64_t tz, std::uint64_t bx,
    std::uint64_t by, std::uint64_t bz, std::uint64_t shared_bytes, const std::string* kernel_name);
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status ContextRefused(const StreamState& stream, CUresult r,
                                                                       DriverStep step);
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status
LaunchSwitchingContext(const StreamState& stream, CUfunction function, std::uint64_t tx, std::uint64_t ty,
                       std::uint64_t tz, std::uint64_t bx, std::uint64_t by, std::uint64_t bz,
                       std::uint64_t shared_bytes, void** params, const std::string* kernel_name);
#endif

// The launch: the same steps as ContextScope, written out so that the path
// where the stream's context is already current (every launch but a thread's
// first) holds nothing for a context switch. On success the returned Status
// is a constant the caller's ok() test folds away.
[[gnu::always_inline]] inline Status LaunchFunction(StreamState& stream, CUfunction function, const ThreadDim& threads,
                                                    const BlockDim& blocks, std::uint64_t shared_bytes, void** params,
                                                    const std::string* kernel_name) {
  if (InHostFunction()) [[unlikely]] {
    return ContextRefused(stream, CUDA_ERROR_NOT_PERMITTED, DriverStep::kHostFunction);
  }
  CUcontext current;  // written by the driver
  if (const CUresult r = stream.api->cuCtxGetCurrent(&current); r != CUDA_SUCCESS) [[unlikely]] {
    return ContextRefused(stream, r, DriverStep::kCtxGetCurrent);
  }
  if (current != stream.context) [[unlikely]] {
    return LaunchSwitchingContext(stream, function, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z,
                                  shared_bytes, params, kernel_name);
  }
  const CUresult r = CallLaunchKernel(stream, function, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z,
                                      shared_bytes, params);
  if (r != CUDA_SUCCESS) [[unlikely]] {
    return LaunchFailed(stream, r, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z, shared_bytes,
                        kernel_name);
  }
  return Status();
}

}  // namespace streamexecutor::cuda_detail
