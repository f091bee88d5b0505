// The launch path: the current-context check and one cuLaunchKernel, inlined
// into every launch; a failure is recorded as plain values (LaunchFault) and
// turned into a Status out of line, so that a launch that succeeds builds no
// Status. Used by the typed, the packed and the run-time typed launches
// (backend.hpp); the argument arrays come from kernel_params.hpp.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/state.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

namespace streamexecutor::cuda_detail {

// Where a launch stopped: the context switch (cuCtxGetCurrent,
// cuCtxSetCurrent, or refused inside a host function) or cuLaunchKernel
// itself. Left uninitialised and written only when a launch fails, so that
// the success path stores nothing.
struct LaunchFault {
  CUresult result;
  DriverStep step;
  std::uint64_t shared_bytes;
};

[[gnu::always_inline]] inline bool LaunchInCurrentContext(const StreamState& stream, CUfunction function,
                                                          std::uint64_t tx, std::uint64_t ty, std::uint64_t tz,
                                                          std::uint64_t bx, std::uint64_t by, std::uint64_t bz,
                                                          std::uint64_t shared_bytes, void** params, LaunchFault& fault) {
  const CUresult r = stream.api->cuLaunchKernel(
      function, static_cast<unsigned>(bx), static_cast<unsigned>(by), static_cast<unsigned>(bz),
      static_cast<unsigned>(tx), static_cast<unsigned>(ty), static_cast<unsigned>(tz),
      static_cast<unsigned>(shared_bytes), stream.stream, params, nullptr);
  if (r == CUDA_SUCCESS) [[likely]] return true;
  fault = {r, DriverStep::kLaunchKernel, shared_bytes};
  return false;
}

// The launch when another context, or none, is current on the thread: switch
// (ContextScope), launch, and give the caller's context back. Out of line, so
// that the common path keeps no context to restore. The dimensions come as
// six integers: see Stream::RefuseLaunch.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL bool LaunchSwitchingContext(
    const StreamState& stream, CUfunction function, std::uint64_t tx, std::uint64_t ty, std::uint64_t tz,
    std::uint64_t bx, std::uint64_t by, std::uint64_t bz, std::uint64_t shared_bytes, void** params,
    LaunchFault& fault) {
  const ContextScope context_scope(*stream.api, stream.context);
  if (!context_scope.ok()) {
    fault = {context_scope.failure(), context_scope.failed_step(), shared_bytes};
    return false;
  }
  return LaunchInCurrentContext(stream, function, tx, ty, tz, bx, by, bz, shared_bytes, params, fault);
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL bool LaunchSwitchingContext(
    const StreamState& stream, CUfunction function, std::uint64_t tx, std::uint64_t ty, std::uint64_t tz,
    std::uint64_t bx, std::uint64_t by, std::uint64_t bz, std::uint64_t shared_bytes, void** params,
    LaunchFault& fault);
#endif

// True when enqueued; false with `fault` saying where it stopped. The same
// steps as ContextScope, written out so that the path where the stream's
// context is already current (every launch but a thread's first) holds
// nothing for a context switch.
[[gnu::always_inline]] inline bool TryLaunch(StreamState& stream, CUfunction function, const ThreadDim& threads,
                                             const BlockDim& blocks, std::uint64_t shared_bytes, void** params,
                                             LaunchFault& fault) {
  if (InHostFunction()) [[unlikely]] {
    fault = {CUDA_ERROR_NOT_PERMITTED, DriverStep::kHostFunction, shared_bytes};
    return false;
  }
  CUcontext current;  // written by the driver
  if (const CUresult r = stream.api->cuCtxGetCurrent(&current); r != CUDA_SUCCESS) [[unlikely]] {
    fault = {r, DriverStep::kCtxGetCurrent, shared_bytes};
    return false;
  }
  if (current != stream.context) [[unlikely]] {
    return LaunchSwitchingContext(stream, function, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z,
                                  shared_bytes, params, fault);
  }
  return LaunchInCurrentContext(stream, function, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z,
                                shared_bytes, params, fault);
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFailed(const StreamState& stream, CUresult r,
                                                                     const ThreadDim& threads, const BlockDim& blocks,
                                                                     std::uint64_t shared_bytes,
                                                                     const std::string* kernel_name) {
  return stream.api->Error(r, "cuLaunchKernel",
                           "launching kernel '{}' on cuda:{} with {}x{}x{} blocks of {}x{}x{} threads and {} "
                           "bytes of dynamic shared memory",
                           kernel_name ? *kernel_name : std::string("?"), stream.ordinal, blocks.x, blocks.y,
                           blocks.z, threads.x, threads.y, threads.z, shared_bytes);
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFailed(const StreamState& stream, CUresult r,
                                                                     const ThreadDim& threads, const BlockDim& blocks,
                                                                     std::uint64_t shared_bytes,
                                                                     const std::string* kernel_name);
#endif

// The dimensions come as six integers: see Stream::RefuseLaunch.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFaultStatus(
    const StreamState& stream, const LaunchFault& fault, std::uint64_t tx, std::uint64_t ty, std::uint64_t tz,
    std::uint64_t bx, std::uint64_t by, std::uint64_t bz, const std::string* kernel_name) {
  if (fault.step != DriverStep::kLaunchKernel) {
    return ContextScope::Failure(*stream.api, fault.result, fault.step, stream.context);
  }
  return LaunchFailed(stream, fault.result, ThreadDim(tx, ty, tz), BlockDim(bx, by, bz), fault.shared_bytes,
                      kernel_name);
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFaultStatus(
    const StreamState& stream, const LaunchFault& fault, std::uint64_t tx, std::uint64_t ty, std::uint64_t tz,
    std::uint64_t bx, std::uint64_t by, std::uint64_t bz, const std::string* kernel_name);
#endif

// The launch with its Status, for the paths that have their arguments as an
// array already (run-time typed launches).
[[gnu::always_inline]] inline Status LaunchFunction(StreamState& stream, CUfunction function, const ThreadDim& threads,
                                                    const BlockDim& blocks, std::uint64_t shared_bytes, void** params,
                                                    const std::string* kernel_name) {
  LaunchFault fault;
  if (TryLaunch(stream, function, threads, blocks, shared_bytes, params, fault)) [[likely]] return Status();
  return LaunchFaultStatus(stream, fault, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z, kernel_name);
}

}  // namespace streamexecutor::cuda_detail
