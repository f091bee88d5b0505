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
#include <string_view>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/launch_attributes.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/kernel_params.hpp"
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

// Launch attributes (core/launch_attributes.hpp): whether the device can,
// before the driver is asked. Cooperative launch is a device attribute;
// clusters and programmatic dependent launch need compute capability 9.0;
// all of them need cuLaunchKernelEx (CUDA 11.8).
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status CheckLaunchAttributes(const DriverApi& api, CUdevice device, int ordinal,
                                                 CudaComputeCapability capability, const LaunchAttributes& attributes,
                                                 std::string_view kernel_name) {
  auto refuse = [&](std::string_view what, std::string_view why) {
    return MakeError(ErrorCode::kFailedPrecondition, "ThenLaunch of kernel '{}' on cuda:{}: {} needs {}", kernel_name,
                     ordinal, what, why);
  };
  if (api.cuLaunchKernelEx == nullptr) {
    return refuse(attributes.Describe(), "cuLaunchKernelEx, which this driver lacks (CUDA 11.8)");
  }
  const bool sm90 = !(capability < CudaComputeCapability{9, 0});
  if (attributes.clustered() && !sm90) {
    return refuse("a launch in clusters",
                  ::streamexecutor::detail::Format("compute capability 9.0; this device is {}.{}", capability.major,
                                                   capability.minor));
  }
  if (attributes.programmatic_dependent() && !sm90) {
    return refuse("a programmatic dependent launch",
                  ::streamexecutor::detail::Format("compute capability 9.0; this device is {}.{}", capability.major,
                                                   capability.minor));
  }
  if (attributes.cooperative()) {
    int cooperative = 0;
    if (const CUresult r = api.cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, device);
        r != CUDA_SUCCESS) {
      return api.Error(r, "cuDeviceGetAttribute", "asking cuda:{} whether it launches cooperative kernels", ordinal);
    }
    if (cooperative == 0) return refuse("a cooperative launch", "a device with CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH");
  }
  return Status();
}

// cuLaunchKernelEx with the attributes, in the stream's context.
STREAMEXECUTOR_DECL Status LaunchWithAttributes(const StreamState& stream, CUfunction function,
                                                const ThreadDim& threads, const BlockDim& blocks,
                                                std::uint64_t shared_bytes, void** params,
                                                const std::string* kernel_name, const LaunchAttributes& attributes) {
  if (InHostFunction()) return ContextRefused(stream, CUDA_ERROR_NOT_PERMITTED, DriverStep::kHostFunction);
  const ContextScope context_scope(*stream.api, stream.context);
  if (!context_scope.ok()) return context_scope.status();
  CUlaunchAttribute list[3] = {};
  unsigned count = 0;
  if (attributes.cooperative()) {
    list[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    list[count++].value.cooperative = 1;
  }
  if (attributes.clustered()) {
    list[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    list[count].value.clusterDim.x = static_cast<unsigned>(attributes.cluster().x);
    list[count].value.clusterDim.y = static_cast<unsigned>(attributes.cluster().y);
    list[count++].value.clusterDim.z = static_cast<unsigned>(attributes.cluster().z);
  }
  if (attributes.programmatic_dependent()) {
    list[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    list[count++].value.programmaticStreamSerializationAllowed = 1;
  }
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(blocks.x);
  config.gridDimY = static_cast<unsigned>(blocks.y);
  config.gridDimZ = static_cast<unsigned>(blocks.z);
  config.blockDimX = static_cast<unsigned>(threads.x);
  config.blockDimY = static_cast<unsigned>(threads.y);
  config.blockDimZ = static_cast<unsigned>(threads.z);
  config.sharedMemBytes = static_cast<unsigned>(shared_bytes);
  config.hStream = stream.stream;
  config.attrs = list;
  config.numAttrs = count;
  if (const CUresult r = stream.api->cuLaunchKernelEx(&config, function, params, nullptr); r != CUDA_SUCCESS) {
    return stream.api->Error(r, "cuLaunchKernelEx",
                             "launching kernel '{}' on cuda:{} with {}x{}x{} blocks of {}x{}x{} threads, {} bytes of "
                             "dynamic shared memory, {}",
                             kernel_name ? *kernel_name : std::string("?"), stream.ordinal, blocks.x, blocks.y,
                             blocks.z, threads.x, threads.y, threads.z, shared_bytes, attributes.Describe());
  }
  return Status();
}
#else
STREAMEXECUTOR_DECL Status CheckLaunchAttributes(const DriverApi& api, CUdevice device, int ordinal,
                                                 CudaComputeCapability capability, const LaunchAttributes& attributes,
                                                 std::string_view kernel_name);
STREAMEXECUTOR_DECL Status LaunchWithAttributes(const StreamState& stream, CUfunction function,
                                                const ThreadDim& threads, const BlockDim& blocks,
                                                std::uint64_t shared_bytes, void** params,
                                                const std::string* kernel_name, const LaunchAttributes& attributes);
#endif

// What se::cuda declares as a LaunchAttributeBackend (it derives from this).
struct LaunchAttributeOperations {
  static constexpr bool kLaunchAttributes = true;
  template <typename Executor>
  static Status CheckLaunchAttributes(Executor& executor, const LaunchAttributes& attributes, const ThreadDim&,
                                      const BlockDim&, std::string_view kernel_name) {
    return cuda_detail::CheckLaunchAttributes(*executor.api, executor.device, executor.ordinal,
                                              executor.modules->capability, attributes, kernel_name);
  }
  template <typename... Params, typename KernelHandle, typename... Args>
  static Status SubmitWithAttributes(StreamState*& stream, const op::LaunchSite<KernelHandle>& site,
                                     const LaunchAttributes& attributes, const Args&... args) {
    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    return WithArgumentParams<Params...>(
        [&](void** params, std::uint64_t shared_bytes) {
          return LaunchWithAttributes(*stream, site.kernel.function, site.threads, site.blocks, shared_bytes, params,
                                      site.kernel_name, attributes);
        },
        args...);
  }
};

}  // namespace streamexecutor::cuda_detail
