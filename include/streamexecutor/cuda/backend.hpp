// se::cuda — NVIDIA GPUs through the CUDA driver API, loaded at run time
// (driver.hpp). Each device is used through its primary context, the one the
// runtime API shares, so that kernels and memory interoperate with CUDA
// runtime code in the same process.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/stream_priority.hpp"
#include "streamexecutor/core/untyped_launch.hpp"
#include "streamexecutor/cuda/command_buffer_operations.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/foreign_wait.hpp"
#include "streamexecutor/cuda/ipc.hpp"
#include "streamexecutor/cuda/kernel_params.hpp"
#include "streamexecutor/cuda/launch.hpp"
#include "streamexecutor/cuda/loader.hpp"
#include "streamexecutor/cuda/managed.hpp"
#include "streamexecutor/cuda/memory_pool.hpp"
#include "streamexecutor/cuda/nvtx.hpp"
#include "streamexecutor/cuda/plugins.hpp"
#include "streamexecutor/cuda/state.hpp"
#include "streamexecutor/cuda/stream_memory.hpp"
#include "streamexecutor/cuda/untyped.hpp"

namespace streamexecutor {

// Exported so that Platform<cuda> is one per process across shared libraries.
struct STREAMEXECUTOR_EXPORT cuda : cuda_detail::PluginIds,
                                    cuda_detail::NativePoolOperations,
                                    cuda_detail::CommandBufferOperations,
                                    cuda_detail::LaunchAttributeOperations,
                                    cuda_detail::StreamMemoryOperations,
                                    cuda_detail::IpcOperations,
                                    cuda_detail::NvtxOperations {
  static constexpr std::string_view kName = "cuda";
  using cuda_detail::StreamMemoryOperations::Submit;  // beside this struct's own Submit overloads
  // In the order the loader prefers them: code for the device first.
  static constexpr std::array<KernelFormat, 4> kKernelFormats{kernel_formats::kCudaCubin, kernel_formats::kCudaFatbin,
                                                              kernel_formats::kCudaPtx, kernel_formats::kCudaSource};
  // cuStreamWaitEvent takes events of other contexts and devices.
  static constexpr bool kWaitsAcrossExecutors = true;
  // cuLaunchHostFunc: a host function must not call CUDA (Capabilities<B>).
  static constexpr bool kCallbacksMayEnqueue = false;
  // Work queued behind a failing host function still runs (Capabilities<B>).
  static constexpr bool kCallbackFailureSkipsQueuedWork = false;

  struct PlatformState {
    const cuda_detail::DriverApi* api = nullptr;
    int device_count = 0;
  };
  struct ExecutorState {
    const cuda_detail::DriverApi* api = nullptr;
    CUdevice device = 0;
    CUcontext context = nullptr;  // primary context, retained while open
    int ordinal = 0;
    cuda_detail::ModuleCache* modules = nullptr;
    cuda_detail::WaitRings* wait_rings = nullptr;  // for waits on other backends
  };
  using StreamHandle = cuda_detail::StreamState*;
  struct EventHandle {
    const cuda_detail::DriverApi* api = nullptr;
    CUcontext context = nullptr;
    CUevent event = nullptr;
  };
  struct KernelHandle {
    CUfunction function = nullptr;
  };

  // ---- Platform and executor -------------------------------------------------

  static Status InitPlatform(PlatformState& platform) {
    const cuda_detail::DriverLoad& load = cuda_detail::Driver();
    if (!load.status.ok()) return load.status;
    cuda_detail::AttachNvtx();  // under Nsight: ranges and stream names (nvtx.hpp)
    platform.api = &load.api;
    if (const CUresult r = platform.api->cuDeviceGetCount(&platform.device_count); r != CUDA_SUCCESS) {
      platform.device_count = 0;
      return platform.api->Error(r, "cuDeviceGetCount", "while counting CUDA devices");
    }
    return Status();
  }
  static int DeviceCount(const PlatformState& platform) { return platform.device_count; }

  static Status OpenExecutor(PlatformState& platform, int ordinal, ExecutorState& executor) {
    const cuda_detail::DriverApi& api = *platform.api;
    executor.api = &api;
    executor.ordinal = ordinal;
    if (const CUresult r = api.cuDeviceGet(&executor.device, ordinal); r != CUDA_SUCCESS) {
      return api.Error(r, "cuDeviceGet", "for device {}", ordinal);
    }
    if (const CUresult r = api.cuDevicePrimaryCtxRetain(&executor.context, executor.device); r != CUDA_SUCCESS) {
      executor.context = nullptr;
      return api.Error(r, "cuDevicePrimaryCtxRetain", "on cuda:{}", ordinal);
    }
    executor.modules = new cuda_detail::ModuleCache();
    for (auto [which, field] :
         {std::pair{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &CudaComputeCapability::major},
          std::pair{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &CudaComputeCapability::minor}}) {
      if (const CUresult r = api.cuDeviceGetAttribute(&(executor.modules->capability.*field), which, executor.device);
          r != CUDA_SUCCESS) {
        return api.Error(r, "cuDeviceGetAttribute", "reading the compute capability of cuda:{}", ordinal);
      }
    }
    executor.wait_rings = new cuda_detail::WaitRings();
    return Status();
  }
  static void CloseExecutor(ExecutorState& executor) {
    if (executor.api == nullptr) return;
    if (executor.modules != nullptr) {
      if (executor.context != nullptr) {
        if (const cuda_detail::ContextScope context_scope(*executor.api, executor.context); context_scope.ok()) {
          for (auto& [key, loaded] : executor.modules->modules) executor.api->cuModuleUnload(loaded);
          if (executor.wait_rings != nullptr) executor.wait_rings->FreeAll(*executor.api);
        }
      }
      delete std::exchange(executor.modules, nullptr);
    }
    delete std::exchange(executor.wait_rings, nullptr);
    if (executor.context != nullptr) {
      executor.api->cuDevicePrimaryCtxRelease(executor.device);
      executor.context = nullptr;
    }
  }

  static DeviceDescription Describe(const ExecutorState& executor);

  // ---- Memory ----------------------------------------------------------------

  static StatusOr<DeviceMemoryBase> Allocate(ExecutorState& executor, std::uint64_t bytes) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    CUdeviceptr ptr = 0;
    if (const CUresult r = executor.api->cuMemAlloc(&ptr, bytes); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemAlloc", "allocating {} bytes on cuda:{}", bytes, executor.ordinal);
    }
    return DeviceMemoryBase(ToOpaque(ptr), bytes);
  }
  static StatusOr<DeviceMemoryBase> AllocateUnified(ExecutorState& executor, std::uint64_t bytes) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    CUdeviceptr ptr = 0;
    if (const CUresult r = executor.api->cuMemAllocManaged(&ptr, bytes, CU_MEM_ATTACH_GLOBAL); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemAllocManaged", "allocating {} bytes of managed memory on cuda:{}", bytes,
                                 executor.ordinal);
    }
    return DeviceMemoryBase(ToOpaque(ptr), bytes);
  }
  static void* HostAddress(const DeviceMemoryBase& m) { return reinterpret_cast<void*>(m.start_address()); }  // managed
  static Status Advise(ExecutorState& executor, const DeviceMemoryBase& memory, MemoryAdvice advice,
                       MemoryLocation location) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return cuda_detail::Advise(*executor.api, executor.ordinal, Address(memory), memory.size(), advice, location);
  }
  static Status Deallocate(ExecutorState& executor, DeviceMemoryBase memory) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = executor.api->cuMemFree(Address(memory)); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemFree", "freeing {} bytes at {} on cuda:{}", memory.size(), memory.opaque(),
                                 executor.ordinal);
    }
    return Status();
  }
  // Portable pinned memory (fast, truly asynchronous copies from any context),
  // mapped into the device's address space for kernels (HostMemoryDeviceView).
  static StatusOr<void*> HostAllocate(ExecutorState& executor, std::uint64_t bytes) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    void* ptr = nullptr;
    const unsigned flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
    if (const CUresult r = executor.api->cuMemHostAlloc(&ptr, bytes, flags); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemHostAlloc", "allocating {} bytes of pinned host memory for cuda:{}", bytes,
                                 executor.ordinal);
    }
    return ptr;
  }
  static Status HostDeallocate(ExecutorState& executor, void* ptr) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = executor.api->cuMemFreeHost(ptr); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemFreeHost", "freeing pinned host memory {} for cuda:{}", ptr,
                                 executor.ordinal);
    }
    return Status();
  }
  // Registration of caller memory (HostMemoryRegister) and the device view of
  // pinned memory (HostMemoryDeviceView) are in cuda/interop.hpp.

  static CUdeviceptr Address(const DeviceMemoryBase& memory) { return cuda_detail::DeviceAddress(memory); }

  // ---- Streams -----------------------------------------------------------------

  static Status CreateStream(ExecutorState& executor, StreamHandle& stream) {
    return CreateStream(executor, stream, StreamPriority::kNormal);
  }
  // kHigh is the context's greatest priority and kLow its least
  // (cuCtxGetStreamPriorityRange); kNormal is cuStreamCreate's, 0.
  static Status CreateStream(ExecutorState& executor, StreamHandle& stream, StreamPriority priority) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    auto state = std::make_unique<cuda_detail::StreamState>();
    state->api = executor.api;
    state->context = executor.context;
    state->ordinal = executor.ordinal;
    state->wait_rings = executor.wait_rings;
    // Non-blocking: no implicit synchronisation with the legacy default stream,
    // so independent streams really overlap.
    const cuda_detail::DriverApi& api = *executor.api;
    if (priority == StreamPriority::kNormal) {
      if (const CUresult r = api.cuStreamCreate(&state->stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
        return api.Error(r, "cuStreamCreate", "on cuda:{}", executor.ordinal);
      }
    } else {
      int least = 0, greatest = 0;
      if (const CUresult r = api.cuCtxGetStreamPriorityRange(&least, &greatest); r != CUDA_SUCCESS) {
        return api.Error(r, "cuCtxGetStreamPriorityRange", "for a stream at StreamPriority::{} on cuda:{}",
                         StreamPriorityName(priority), executor.ordinal);
      }
      const int value = priority == StreamPriority::kHigh ? greatest : least;
      if (const CUresult r = api.cuStreamCreateWithPriority(&state->stream, CU_STREAM_NON_BLOCKING, value);
          r != CUDA_SUCCESS) {
        return api.Error(r, "cuStreamCreateWithPriority", "(priority {}, StreamPriority::{}) on cuda:{}", value,
                         StreamPriorityName(priority), executor.ordinal);
      }
    }
    stream = state.release();
    return Status();
  }
  static void DestroyStream(ExecutorState&, StreamHandle& stream) {
    if (stream == nullptr) return;
    if (const cuda_detail::ContextScope context_scope(*stream->api, stream->context); context_scope.ok()) {
      // Callbacks still queued own boxes that point at the state: drain first.
      const CUresult synced = stream->api->cuStreamSynchronize(stream->stream);
      if (!stream->adopted) stream->api->cuStreamDestroy(stream->stream);
      // Synchronized, so its waits have passed; after an error the ring is
      // kept out of use rather than risk a wait still reading it.
      if (stream->wait_ring != nullptr && synced == CUDA_SUCCESS) stream->wait_rings->Give(stream->wait_ring);
    }
    delete std::exchange(stream, nullptr);
  }
  // A synchronous operation waits only for streams that are still busy
  // (core/synchronous.hpp); any failure here just counts the stream as busy.
  static bool StreamIsIdle(StreamHandle& stream) {
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    return context_scope.ok() && stream->api->cuStreamQuery(stream->stream) == CUDA_SUCCESS;
  }
  static Status SynchronizeStream(StreamHandle& stream) {
    if (stream == nullptr) return Status(ErrorCode::kFailedPrecondition, "SynchronizeStream: no CUDA stream");
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = stream->api->cuStreamSynchronize(stream->stream); r != CUDA_SUCCESS) {
      return stream->api->Error(r, "cuStreamSynchronize", "on a stream of cuda:{}", stream->ordinal);
    }
    return stream->CurrentError();
  }

  static Status Submit(StreamHandle& stream, const op::MemcpyH2D& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const void* src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    if (bytes == 0) return Status();
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return CheckStream(stream, stream->api->cuMemcpyHtoDAsync(Address(dst), src, bytes, stream->stream),
                       "cuMemcpyHtoDAsync", bytes);
  }
  static Status Submit(StreamHandle& stream, const op::MemcpyD2H& operation) {
    void* dst = operation.dst;
    const DeviceMemoryBase& src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    if (bytes == 0) return Status();
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return CheckStream(stream, stream->api->cuMemcpyDtoHAsync(dst, Address(src), bytes, stream->stream),
                       "cuMemcpyDtoHAsync", bytes);
  }
  static Status Submit(StreamHandle& stream, const op::MemcpyD2D& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const DeviceMemoryBase& src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    if (bytes == 0) return Status();
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return CheckStream(stream, stream->api->cuMemcpyDtoDAsync(Address(dst), Address(src), bytes, stream->stream),
                       "cuMemcpyDtoDAsync", bytes);
  }
  // Copy between two devices' allocations (after EnablePeerAccess, or staged
  // through the host by the driver where peer access is unavailable).
  static Status EnqueueMemcpyPeer(StreamHandle& stream, const ExecutorState& dst_executor, DeviceMemoryBase dst,
                                  const ExecutorState& src_executor, DeviceMemoryBase src, std::uint64_t bytes) {
    if (bytes == 0) return Status();
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = stream->api->cuMemcpyPeerAsync(Address(dst), dst_executor.context, Address(src),
                                                          src_executor.context, bytes, stream->stream);
        r != CUDA_SUCCESS) {
      return stream->api->Error(r, "cuMemcpyPeerAsync", "copying {} bytes from cuda:{} to cuda:{}", bytes,
                                src_executor.ordinal, dst_executor.ordinal);
    }
    return Status();
  }
  static Status Submit(StreamHandle& stream, const op::Memset8& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const std::uint32_t value = operation.value;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    if (bytes == 0) return Status();
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return CheckStream(
        stream,
        stream->api->cuMemsetD8Async(Address(dst), static_cast<unsigned char>(value & 0xff), bytes, stream->stream),
        "cuMemsetD8Async", bytes);
  }
  static Status Submit(StreamHandle& stream, const op::Memset32& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const std::uint32_t pattern = operation.pattern;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    if (bytes == 0) return Status();
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return CheckStream(stream, stream->api->cuMemsetD32Async(Address(dst), pattern, bytes / 4, stream->stream),
                       "cuMemsetD32Async", bytes);
  }

  static Status Submit(StreamHandle& stream, const op::Prefetch& prefetch) {
    if (stream->Failed()) [[unlikely]]
      return Status();
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return cuda_detail::Prefetch(*stream->api, stream->stream, stream->ordinal, Address(prefetch.memory),
                                 prefetch.memory.size(), prefetch.to);
  }

  // A canned operation's library call: the library enqueues on the stream.
  template <typename F>
  static Status Submit(StreamHandle& stream, const op::LibraryCall<F>& call) {
    return call.call(*stream);
  }
  template <typename Callback>
  static Status Submit(StreamHandle& stream, const op::HostCall<Callback>& operation) {
    Callback&& callback = static_cast<Callback&&>(operation.callable);

    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    using Box = cuda_detail::CallbackBox<std::decay_t<Callback>>;
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    std::unique_ptr<Box> box;
    try {
      box = std::make_unique<Box>(Box{stream, std::forward<Callback>(callback)});
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on cuda:{}: copying the callback threw: {}",
                       stream->ordinal, e.what());
    } catch (...) {
      return MakeError(ErrorCode::kInternal,
                       "ThenDoHostCallback on cuda:{}: copying the callback threw a non-std::exception",
                       stream->ordinal);
    }
    if (const CUresult r = stream->api->cuLaunchHostFunc(stream->stream, &Box::Run, box.get()); r != CUDA_SUCCESS) {
      return stream->api->Error(r, "cuLaunchHostFunc", "queueing a host callback on cuda:{}", stream->ordinal);
    }
    box.release();  // the trampoline owns it now
    return Status();
  }

  // ---- Events ------------------------------------------------------------------

  // Plain events are made without timing (CU_EVENT_DISABLE_TIMING: recording
  // and waiting on them is cheaper, as NVIDIA advises for synchronization);
  // only a Timer's events time (CreateTimingEvent, called by Timer::Init).
  static Status CreateEvent(ExecutorState& executor, EventHandle& event) {
    return CreateEventWithFlags(executor, event, CU_EVENT_DISABLE_TIMING);
  }
  static Status CreateTimingEvent(ExecutorState& executor, EventHandle& event) {
    return CreateEventWithFlags(executor, event, CU_EVENT_DEFAULT);
  }
  static Status CreateEventWithFlags(ExecutorState& executor, EventHandle& event, unsigned flags) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    event.api = executor.api;
    event.context = executor.context;
    if (const CUresult r = executor.api->cuEventCreate(&event.event, flags); r != CUDA_SUCCESS) {
      event.event = nullptr;
      return executor.api->Error(r, "cuEventCreate", "on cuda:{}", executor.ordinal);
    }
    return Status();
  }
  static void DestroyEvent(ExecutorState&, EventHandle& event) {
    if (event.event == nullptr) return;
    if (const cuda_detail::ContextScope context_scope(*event.api, event.context); context_scope.ok()) {
      event.api->cuEventDestroy(event.event);
    }
    event.event = nullptr;
  }
  static Status Submit(StreamHandle& stream, const op::RecordEvent<EventHandle>& operation) {
    EventHandle& event = *operation.event;

    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = stream->api->cuEventRecord(event.event, stream->stream); r != CUDA_SUCCESS) {
      return stream->api->Error(r, "cuEventRecord", "on a stream of cuda:{}", stream->ordinal);
    }
    return Status();
  }
  static Status Submit(StreamHandle& stream, const op::WaitEvent<EventHandle>& operation) {
    EventHandle& event = *operation.event;

    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = stream->api->cuStreamWaitEvent(stream->stream, event.event, 0); r != CUDA_SUCCESS) {
      return stream->api->Error(r, "cuStreamWaitEvent", "on a stream of cuda:{}", stream->ordinal);
    }
    return Status();
  }
  // Waits between backends (foreign_wait.hpp): stream memory operations on
  // a word of pinned host memory the other backend's release stores to;
  // our events notify from a host function behind a wait on the event.
  static Status Submit(StreamHandle& stream, const op::WaitForeign& operation) {
    const cuda_detail::ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (stream->wait_ring == nullptr) {
      StatusOr<cuda_detail::WaitRing*> ring = stream->wait_rings->Take(*stream->api, stream->ordinal);
      if (!ring.ok()) return ring.status();
      stream->wait_ring = ring.value();
    }
    StatusOr<op::ForeignRelease> release =
        cuda_detail::QueueForeignWait(*stream->api, stream->stream, *stream->wait_ring, stream->ordinal);
    if (!release.ok()) return release.status();
    *operation.release = release.value();
    return Status();
  }
  static Status NotifyWhenComplete(ExecutorState& executor, EventHandle& event, op::ForeignRelease release) {
    const cuda_detail::ContextScope context_scope(*event.api, event.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return cuda_detail::NotifyForeign(*event.api, event.event, executor.ordinal, release);
  }

  static StatusOr<bool> QueryEvent(EventHandle& event) {
    const cuda_detail::ContextScope context_scope(*event.api, event.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    const CUresult r = event.api->cuEventQuery(event.event);
    if (r == CUDA_SUCCESS) return true;
    if (r == CUDA_ERROR_NOT_READY) return false;
    return event.api->Error(r, "cuEventQuery", "polling an event");
  }
  static Status SynchronizeEvent(EventHandle& event) {
    const cuda_detail::ContextScope context_scope(*event.api, event.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    if (const CUresult r = event.api->cuEventSynchronize(event.event); r != CUDA_SUCCESS) {
      return event.api->Error(r, "cuEventSynchronize", "waiting for an event");
    }
    return Status();
  }
  static StatusOr<std::uint64_t> ElapsedNanoseconds(EventHandle& start, EventHandle& stop) {
    if (cuda_detail::InHostFunction()) [[unlikely]]
      return cuda_detail::InHostFunctionError();
    STREAMEXECUTOR_RETURN_IF_ERROR(SynchronizeEvent(stop));
    float milliseconds = 0.0f;
    if (const CUresult r = start.api->cuEventElapsedTime(&milliseconds, start.event, stop.event); r != CUDA_SUCCESS) {
      return start.api->Error(r, "cuEventElapsedTime",
                              "reading a timer (were both ThenStartTimer and ThenStopTimer enqueued?)");
    }
    if (milliseconds < 0.0f) {
      return Status(ErrorCode::kFailedPrecondition, "the stop event completed before the start event");
    }
    return static_cast<std::uint64_t>(static_cast<double>(milliseconds) * 1e6);
  }

  // ---- Kernels -----------------------------------------------------------------

  static std::string_view SpecKernelName(const MultiKernelLoaderSpec& spec) {
    return cuda_detail::SpecKernelName(spec);
  }
  template <typename... Params>
  static Status LoadKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return cuda_detail::LoadKernel(*executor.api, *executor.modules, executor.ordinal, spec,
                                   detail::kParamInfos<Params...>, kernel.function);
  }
  // Modules belong to the executor's cache and outlive their kernels.
  static void ReleaseKernel(ExecutorState&, KernelHandle&) {}

  // ThenLaunch hands over the caller's arguments (ArgumentLaunchBackend):
  // scalars of the kernel's own type are passed by their own address.
  static constexpr bool kLaunchesFromArguments = true;
  template <typename... Params, typename... Args>
  [[gnu::always_inline]] static Status SubmitArguments(StreamHandle& stream, const op::LaunchSite<KernelHandle>& site,
                                                       const Args&... args) {
    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    // The success path builds no Status (launch.hpp).
    return cuda_detail::WithArgumentParams<Params...>(
        [&](void** params, std::uint64_t shared_bytes) __attribute__((always_inline)) {
          return cuda_detail::LaunchFunction(*stream, site.kernel.function, site.threads, site.blocks, shared_bytes,
                                             params, site.kernel_name);
        },
        args...);
  }
  // The same launch with packed arguments (prepared launches): their
  // elements are read in place as the caller's arguments are.
  template <typename... Params>
  [[gnu::always_inline]] static Status Submit(StreamHandle& stream,
                                              const op::Launch<KernelHandle, Params...>& operation) {
    const op::LaunchSite<KernelHandle> site{operation.kernel, operation.threads, operation.blocks,
                                            operation.kernel_name};
    return std::apply([&](const auto&... args) { return SubmitArguments<Params...>(stream, site, args...); },
                      operation.args);
  }

  // Run-time typed kernels (core/kernel_args.hpp): the parameter list is read
  // from the PTX, or from cuFuncGetParamInfo for binaries (cuda/untyped.hpp).
  static Status LoadUntypedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel,
                                  std::vector<DeviceParam>& params, bool& shared_is_parameter) {
    shared_is_parameter = false;  // dynamic shared memory is a launch setting
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    return cuda_detail::LoadUntypedFunction(*executor.api, *executor.modules, executor.ordinal, spec, kernel.function,
                                            params);
  }
  // A launch typed at run time, checked by the core.
  static Status Submit(StreamHandle& stream, const op::UntypedLaunch<KernelHandle>& launch) {
    if (stream->Failed()) [[unlikely]]
      return Status();
    cuda_detail::UntypedParams params;
    params.Fill(launch.args);
    return cuda_detail::LaunchFunction(*stream, launch.kernel.function, launch.threads, launch.blocks,
                                       params.shared_bytes, params.count == 0 ? nullptr : params.pointers.data(),
                                       launch.kernel_name);
  }

  // ---- Command buffers: CommandBufferOperations (cuda/command_buffer_operations.hpp) -----------------

  // ---- Peer access ---------------------------------------------------------------

  static bool CanEnablePeerAccess(ExecutorState& from, ExecutorState& to) {
    if (cuda_detail::InHostFunction()) [[unlikely]]
      return false;
    int can = 0;
    return from.api->cuDeviceCanAccessPeer(&can, from.device, to.device) == CUDA_SUCCESS && can != 0;
  }
  // Lets kernels and copies on `from` access memory of `to`.
  static Status EnablePeerAccess(ExecutorState& from, ExecutorState& to) {
    const cuda_detail::ContextScope context_scope(*from.api, from.context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    const CUresult r = from.api->cuCtxEnablePeerAccess(to.context, 0);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return Status();
    return from.api->Error(r, "cuCtxEnablePeerAccess", "from cuda:{} to cuda:{}", from.ordinal, to.ordinal);
  }

 private:
  static void* ToOpaque(CUdeviceptr ptr) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)); }

  static Status CheckStream(StreamHandle stream, CUresult r, std::string_view call, std::uint64_t bytes) {
    if (r == CUDA_SUCCESS) [[likely]]
      return Status();
    return stream->api->Error(r, call, "({} bytes on a stream of cuda:{})", bytes, stream->ordinal);
  }
};

static_assert(Backend<cuda>);
static_assert(UnifiedMemoryBackend<cuda> && PrefetchBackend<cuda> && MemoryAdviceBackend<cuda>);
static_assert(NativeMemoryPoolBackend<cuda>);
static_assert(PinnedMemoryBackend<cuda>);
static_assert(PeerAccessBackend<cuda>);
static_assert(StreamMemoryOperationBackend<cuda>);
static_assert(IpcMemoryBackend<cuda> && IpcEventBackend<cuda>);
static_assert(ForeignWaitBackend<cuda> && EventNotifyBackend<cuda>);
static_assert(CommandBufferBackend<cuda>);
static_assert(CommandBufferUpdateBackend<cuda>);
static_assert(CommandBufferCloneBackend<cuda> && CommandBufferNestingBackend<cuda>);
static_assert(CommandBufferDependencyBackend<cuda>);
static_assert(CommandBufferConditionalBackend<cuda>);
static_assert(UntypedLaunchBackend<cuda>);
static_assert(StreamPriorityBackend<cuda>);
#if defined(STREAMEXECUTOR_CUDA_WITH_NVTX)
static_assert(StreamNameBackend<cuda>);
#endif

}  // namespace streamexecutor

#include "streamexecutor/cuda/describe.hpp"
#include "streamexecutor/cuda/interop.hpp"
#include "streamexecutor/cuda/occupancy.hpp"
