// se::opencl — every OpenCL platform and device the ICD loader shows, driven
// through the OpenCL C API (<CL/cl.h>; CLHPP is not used). The objects
// behind the handles are in runtime.hpp, program building and the signature
// check in loader.hpp and signature.hpp. docs/opencl.md explains the design.
#pragma once

#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/stream_priority.hpp"
#include "streamexecutor/core/untyped_launch.hpp"
#include "streamexecutor/opencl/command_buffer_operations.hpp"
#include "streamexecutor/opencl/describe.hpp"
#include "streamexecutor/opencl/held.hpp"
#include "streamexecutor/opencl/launch.hpp"
#include "streamexecutor/opencl/loader.hpp"
#include "streamexecutor/opencl/memory.hpp"
#include "streamexecutor/opencl/plugins.hpp"
#include "streamexecutor/opencl/prepared.hpp"
#include "streamexecutor/opencl/runtime.hpp"
#include "streamexecutor/opencl/untyped.hpp"

namespace streamexecutor {

// Exported so that Platform<opencl> is one per process across shared libraries.
struct STREAMEXECUTOR_EXPORT opencl : opencl_detail::PluginIds, opencl_detail::CommandBufferOperations<opencl> {
  static constexpr std::string_view kName = "opencl";
  static constexpr std::array<KernelFormat, 2> kKernelFormats{kernel_formats::kOpenCLText,
                                                              kernel_formats::kOpenCLBinary};
  // Streams wait on events and streams of the platform's other devices.
  static constexpr bool kWaitsAcrossExecutors = true;

  struct PlatformState {
    std::vector<opencl_detail::DeviceEntry> devices;  // every device of every platform, flattened
  };
  struct ExecutorState {
    opencl_detail::Executor* impl = nullptr;
  };
  using StreamHandle = opencl_detail::StreamState*;
  struct EventHandle {
    opencl_detail::EventState* state = nullptr;
  };
  struct KernelHandle {
    opencl_detail::LoadedKernel* impl = nullptr;
  };

  // ---- Platform and executor -------------------------------------------------

  static Status InitPlatform(PlatformState& platform) {
    cl_uint count = 0;
    cl_int error = clGetPlatformIDs(0, nullptr, &count);
    if (error != CL_SUCCESS || count == 0) {
      return opencl_detail::ClError(
          "clGetPlatformIDs", error == CL_SUCCESS ? -1001 : error,
          "(the ICD loader found no OpenCL platform: is an ICD such as pocl-opencl-icd installed?)");
    }
    std::vector<cl_platform_id> platforms(count);
    error = clGetPlatformIDs(count, platforms.data(), nullptr);
    if (error != CL_SUCCESS) return opencl_detail::ClError("clGetPlatformIDs", error, "listing {} platform(s)", count);
    for (cl_platform_id id : platforms) {
      cl_uint devices = 0;
      // A platform without devices answers CL_DEVICE_NOT_FOUND: skip it.
      if (clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, 0, nullptr, &devices) != CL_SUCCESS || devices == 0) continue;
      std::vector<cl_device_id> ids(devices);
      if (clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, devices, ids.data(), nullptr) != CL_SUCCESS) continue;
      for (cl_device_id device : ids) platform.devices.push_back({id, device});
    }
    return Status();
  }
  static int DeviceCount(const PlatformState& platform) { return static_cast<int>(platform.devices.size()); }

  static Status OpenExecutor(PlatformState& platform, int ordinal, ExecutorState& executor) {
    const opencl_detail::DeviceEntry entry = platform.devices.at(static_cast<std::size_t>(ordinal));
    auto impl = std::make_unique<opencl_detail::Executor>();
    impl->device = entry.device;
    impl->ordinal = ordinal;
    impl->device_name = opencl_detail::InfoString(clGetDeviceInfo, entry.device, CL_DEVICE_NAME);
    impl->label = ::streamexecutor::detail::Format("opencl:{} ({})", ordinal, impl->device_name);
    const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                                reinterpret_cast<cl_context_properties>(entry.platform), 0};
    cl_int error = CL_SUCCESS;
    impl->context = clCreateContext(properties, 1, &entry.device, nullptr, nullptr, &error);
    if (error != CL_SUCCESS) return opencl_detail::ClError("clCreateContext", error, "for {}", impl->label);
    impl->sync_queue = clCreateCommandQueueWithProperties(impl->context, entry.device, nullptr, &error);
    if (error != CL_SUCCESS)
      return opencl_detail::ClError("clCreateCommandQueueWithProperties", error, "for {}", impl->label);
    impl->svm =
        opencl_detail::Info<cl_device_svm_capabilities>(clGetDeviceInfo, entry.device, CL_DEVICE_SVM_CAPABILITIES);
    impl->priority_hints =
        opencl_detail::InfoString(clGetDeviceInfo, entry.device, CL_DEVICE_EXTENSIONS).find("cl_khr_priority_hints") !=
        std::string::npos;
    impl->base_address_align = std::max<std::uint64_t>(
        1, opencl_detail::Info<cl_uint>(clGetDeviceInfo, entry.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
    impl->max_allocation = opencl_detail::Info<cl_ulong>(clGetDeviceInfo, entry.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    // Slices at any offset need SVM-backed allocations; without SVM, offsets
    // must be sub-buffer aligned. The variable forces the sub-buffer scheme
    // (for testing it on SVM devices).
    const char* scheme = std::getenv("STREAMEXECUTOR_OPENCL_SLICES");
    const bool force_sub_buffers = scheme != nullptr && std::string_view(scheme) == "subbuffer";
    impl->slices = (impl->svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) && !force_sub_buffers
                       ? opencl_detail::SliceScheme::kSvmPointer
                       : opencl_detail::SliceScheme::kSubBuffer;
    executor.impl = impl.release();
    return Status();
  }
  static void CloseExecutor(ExecutorState& executor) { delete std::exchange(executor.impl, nullptr); }

  static DeviceDescription Describe(const ExecutorState& executor) {
    DeviceDescription d = opencl_detail::DescribeDevice(executor.impl->device, executor.impl->slices);
    d.device_ordinal = executor.impl->ordinal;
    return d;
  }

  // ---- Memory ----------------------------------------------------------------

  static StatusOr<DeviceMemoryBase> Allocate(ExecutorState& executor, std::uint64_t bytes) {
    opencl_detail::Executor& e = *executor.impl;
    if (e.slices == opencl_detail::SliceScheme::kSvmPointer) {
      return opencl_detail::AllocateSvm(e, bytes, CL_MEM_READ_WRITE, "clSVMAlloc");
    }
    cl_int error = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(e.context, CL_MEM_READ_WRITE, bytes, nullptr, &error);
    if (error != CL_SUCCESS)
      return opencl_detail::ClError("clCreateBuffer", error, "of {} bytes on {}", bytes, e.label);
    return DeviceMemoryBase(buffer, bytes);
  }
  static Status Deallocate(ExecutorState& executor, DeviceMemoryBase memory) {
    auto buffer = static_cast<cl_mem>(memory.opaque());
    executor.impl->ForgetSubBuffers(buffer);
    // SVM storage is freed by the buffer's destructor callback (AllocateSvm),
    // that is once no enqueued command uses the buffer any more.
    const cl_int error = clReleaseMemObject(buffer);
    if (error != CL_SUCCESS) return opencl_detail::ClError("clReleaseMemObject", error, "on {}", executor.impl->label);
    return Status();
  }
  // Fine-grained SVM: the host dereferences opencl::HostAddress(memory) while
  // kernels use the same memory. Free it with Deallocate.
  static StatusOr<DeviceMemoryBase> AllocateUnified(ExecutorState& executor, std::uint64_t bytes) {
    opencl_detail::Executor& e = *executor.impl;
    if (!(e.svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
      return MakeError(ErrorCode::kUnimplemented,
                       "AllocateUnified on {}: the device has no fine-grained buffer SVM "
                       "(CL_DEVICE_SVM_CAPABILITIES = {:#x}: {}), so host and device cannot share memory",
                       e.label, e.svm, opencl_detail::SvmCapabilities(e.svm));
    }
    return opencl_detail::AllocateSvm(e, bytes, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER,
                                      "clSVMAlloc (fine-grained)");
  }
  // The host address of a unified allocation (plus the view's offset); null
  // for memory that is not SVM-backed.
  static void* HostAddress(const DeviceMemoryBase& memory) {
    void* base = opencl_detail::Info<void*>(clGetMemObjectInfo, static_cast<cl_mem>(memory.opaque()), CL_MEM_HOST_PTR);
    return base ? static_cast<std::byte*>(base) + memory.offset() : nullptr;
  }

  // Pinned memory: a CL_MEM_ALLOC_HOST_PTR buffer, mapped for its lifetime.
  // The driver picks memory it can transfer from without staging.
  static StatusOr<void*> HostAllocate(ExecutorState& executor, std::uint64_t bytes) {
    opencl_detail::Executor& e = *executor.impl;
    cl_int error = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(e.context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &error);
    if (error != CL_SUCCESS)
      return opencl_detail::ClError("clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", error, "of {} bytes on {}", bytes,
                                    e.label);
    void* ptr = clEnqueueMapBuffer(e.sync_queue, buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr,
                                   nullptr, &error);
    if (error != CL_SUCCESS) {
      clReleaseMemObject(buffer);
      return opencl_detail::ClError("clEnqueueMapBuffer", error, "mapping {} bytes of pinned memory on {}", bytes,
                                    e.label);
    }
    std::lock_guard<std::mutex> lock(e.mutex);
    e.pinned.emplace(ptr, buffer);
    return ptr;
  }
  static Status HostDeallocate(ExecutorState& executor, void* ptr) {
    opencl_detail::Executor& e = *executor.impl;
    cl_mem buffer = nullptr;
    {
      std::lock_guard<std::mutex> lock(e.mutex);
      auto it = e.pinned.find(ptr);
      if (it == e.pinned.end()) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "HostDeallocate on {}: {} was not returned by HostAllocate or was already freed", e.label,
                         ptr);
      }
      buffer = it->second;
      e.pinned.erase(it);
    }
    cl_int error = clEnqueueUnmapMemObject(e.sync_queue, buffer, ptr, 0, nullptr, nullptr);
    if (error == CL_SUCCESS) error = clFinish(e.sync_queue);
    clReleaseMemObject(buffer);
    if (error != CL_SUCCESS)
      return opencl_detail::ClError("clEnqueueUnmapMemObject", error, "of pinned memory on {}", e.label);
    return Status();
  }

  // ---- Streams -----------------------------------------------------------------

  static Status CreateStream(ExecutorState& executor, StreamHandle& stream) {
    return CreateStream(executor, stream, StreamPriority::kNormal);
  }
  // kLow and kHigh are cl_khr_priority_hints' CL_QUEUE_PRIORITY_KHR, on a
  // device that lists the extension; elsewhere they are refused.
  static Status CreateStream(ExecutorState& executor, StreamHandle& stream, StreamPriority priority) {
    opencl_detail::Executor& e = *executor.impl;
    const cl_queue_priority_khr hint = opencl_detail::QueuePriorityHint(priority);
    if (hint != 0 && !e.priority_hints) {
      return MakeError(ErrorCode::kUnimplemented,
                       "Stream::Init(StreamPriority::{}) on {}: the device does not list cl_khr_priority_hints, "
                       "which queue priorities need; only kNormal is available there",
                       StreamPriorityName(priority), e.label);
    }
    // No profiling until a timer asks for it (EnableTiming).
    const cl_queue_properties properties[] = {CL_QUEUE_PRIORITY_KHR, hint, 0};
    cl_int error = CL_SUCCESS;
    cl_command_queue queue =
        clCreateCommandQueueWithProperties(e.context, e.device, hint != 0 ? properties : nullptr, &error);
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clCreateCommandQueueWithProperties", error,
                                    "for a stream at StreamPriority::{} on {}", StreamPriorityName(priority), e.label);
    }
    stream = new opencl_detail::StreamState();
    stream->executor = &e;
    stream->queue = queue;
    stream->priority = hint;
    return Status();
  }
  static void DestroyStream(ExecutorState&, StreamHandle& stream) {
    if (!stream) return;
    stream->WaitUntilFlushed().IgnoreError();
    clFinish(stream->queue);
    stream->StopWorker();
    clReleaseCommandQueue(stream->queue);
    if (stream->untimed_queue) clReleaseCommandQueue(stream->untimed_queue);
    delete std::exchange(stream, nullptr);
  }
  // What a synchronous operation asks of each stream (core/synchronous.hpp;
  // why it waits on the host: StreamState::WaitForQueued).
  static void WaitForQueuedWork(StreamHandle& stream) { stream->WaitForQueued(); }
  static bool CallerIsCallbackOf(const StreamHandle& stream) { return stream->RunsOnCallbackThread(); }
  // Timers read the markers' timestamps, which only a profiling queue records.
  static Status EnableTiming(StreamHandle& stream) { return stream->EnableProfiling("ThenStartTimer/ThenStopTimer"); }
  static Status SynchronizeStream(StreamHandle& stream) {
    STREAMEXECUTOR_RETURN_IF_ERROR(stream->WaitUntilFlushed());
    const cl_int error = clFinish(stream->queue);
    if (error != CL_SUCCESS)
      return opencl_detail::ClError("clFinish", error, "on a stream of {}", stream->executor->label);
    return stream->Error();
  }

  // Every enqueue has one slow path (StreamState::Diverted): after a failure
  // the command is skipped, behind a pending host callback it is held
  // (held.hpp); otherwise it goes straight to the queue.
  static Status Submit(StreamHandle& stream, const op::MemcpyH2D& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const void* src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertTransfer(
              *stream, {opencl_detail::HeldTransfer::Kind::kWrite, dst, {}, src, nullptr, bytes, 0},
              "ThenMemcpy (H2D)")) {
        return *held;
      }
    }
    return opencl_detail::Write(stream->queue, CL_FALSE, dst, src, bytes, stream->executor->label);
  }
  static Status Submit(StreamHandle& stream, const op::MemcpyD2H& operation) {
    void* dst = operation.dst;
    const DeviceMemoryBase& src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertTransfer(
              *stream, {opencl_detail::HeldTransfer::Kind::kRead, {}, src, nullptr, dst, bytes, 0},
              "ThenMemcpy (D2H)")) {
        return *held;
      }
    }
    return opencl_detail::Read(stream->queue, CL_FALSE, dst, src, bytes, stream->executor->label);
  }
  static Status Submit(StreamHandle& stream, const op::MemcpyD2D& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const DeviceMemoryBase& src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertTransfer(
              *stream, {opencl_detail::HeldTransfer::Kind::kCopy, dst, src, nullptr, nullptr, bytes, 0},
              "ThenMemcpy (D2D)")) {
        return *held;
      }
    }
    return opencl_detail::Copy(stream->queue, dst, src, bytes, stream->executor->label);
  }
  static Status Submit(StreamHandle& stream, const op::Memset8& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const std::uint32_t value = operation.value;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertTransfer(
              *stream, {opencl_detail::HeldTransfer::Kind::kFill8, dst, {}, nullptr, nullptr, bytes, value},
              "ThenMemZero")) {
        return *held;
      }
    }
    return opencl_detail::Fill8(stream->queue, dst, value, bytes, stream->executor->label);
  }
  static Status Submit(StreamHandle& stream, const op::Memset32& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const std::uint32_t pattern = operation.pattern;
    const std::uint64_t bytes = operation.bytes;

    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertTransfer(
              *stream, {opencl_detail::HeldTransfer::Kind::kFill32, dst, {}, nullptr, nullptr, bytes, pattern},
              "ThenMemset32")) {
        return *held;
      }
    }
    return opencl_detail::Fill32(stream->queue, dst, pattern, bytes, stream->executor->label);
  }

  // In stream order: a marker says when earlier work is done, the stream's
  // callback thread then runs the callable and completes a user event, and a
  // barrier on that user event holds back what is already queued; what is
  // enqueued later is held on the host until the callback ran (held.hpp).
  //
  // Exception-safe: the callable is copied before anything reaches the queue,
  // and if handing the job to the callback thread fails after the barrier is
  // queued, the user event is completed anyway (without running the callback)
  // so that the queue never waits forever.
  static Status Submit(StreamHandle& stream, const op::Prefetch& prefetch) {
    if (stream->Diverted()) [[unlikely]]
      return Status();  // a hint: not worth holding while the queue waits (opencl/held.hpp)
    return opencl_detail::Migrate(stream->queue, prefetch.memory, prefetch.to == MemoryLocation::kHost,
                                  stream->executor->label);
  }

  // A canned operation's library call (opencl/library_call.hpp).
  template <typename F>
  static Status Submit(StreamHandle& stream, const op::LibraryCall<F>& call) {
    return opencl_detail::EnqueueLibraryCall(*stream, call.caller, call.buffers, call.call);
  }
  template <typename Callback>
  static Status Submit(StreamHandle& stream, const op::HostCall<Callback>& operation) {
    Callback&& callback = static_cast<Callback&&>(operation.callable);

    using F = std::decay_t<Callback>;
    opencl_detail::CallbackJob job;
    try {
      job = opencl_detail::CallbackJob::For(F(std::forward<Callback>(callback)));
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on {}: copying the callback threw: {}",
                       stream->executor->label, e.what());
    } catch (...) {
      return MakeError(ErrorCode::kInternal,
                       "ThenDoHostCallback on {}: copying the callback threw a non-std::exception",
                       stream->executor->label);
    }
    if (stream->Failed()) return Status();  // skipped, as on every backend
    std::lock_guard<std::mutex> lock(stream->jobs_mutex);
    if (stream->mode.load(std::memory_order_acquire) & opencl_detail::StreamState::kHolding) {
      auto* payload = new (std::nothrow) opencl_detail::CallbackJob(std::move(job));
      if (payload == nullptr) return opencl_detail::HoldFailed(*stream, "ThenDoHostCallback");
      try {
        stream->held.push_back({payload, &opencl_detail::RunHeldCallback});
      } catch (...) {
        delete payload;
        return opencl_detail::HoldFailed(*stream, "ThenDoHostCallback");
      }
      return Status();
    }
    return stream->EnqueueCallbackLocked(job);
  }

  // ---- Events ------------------------------------------------------------------

  static Status CreateEvent(ExecutorState& executor, EventHandle& event) {
    event.state = new (std::nothrow) opencl_detail::EventState();
    if (event.state == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "creating an event on {}: out of memory", executor.impl->label);
    }
    return Status();
  }
  // Held recordings keep the state alive until they reach the queue.
  static void DestroyEvent(ExecutorState&, EventHandle& event) {
    if (event.state) std::exchange(event.state, nullptr)->Release();
  }
  static Status Submit(StreamHandle& stream, const op::RecordEvent<EventHandle>& operation) {
    EventHandle& event = *operation.event;

    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertRecord(*stream, *event.state)) return *held;
    }
    cl_event marker = nullptr;
    cl_int error = clEnqueueMarkerWithWaitList(stream->queue, 0, nullptr, &marker);
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clEnqueueMarkerWithWaitList", error, "recording an event on {}",
                                    stream->executor->label);
    }
    // Other queues may wait on this marker: it must reach the device.
    clFlush(stream->queue);
    event.state->Replace(marker);
    return Status();
  }
  static Status Submit(StreamHandle& stream, const op::WaitEvent<EventHandle>& operation) {
    EventHandle& event = *operation.event;

    const opencl_detail::EventRef latest(event.state->Acquire());
    if (!latest.event) return Status();  // never recorded: nothing to wait for
    // An event of another executor (ThenWaitFor across devices) lives in
    // another context: wait on a stand-in of ours instead.
    cl_context context = nullptr;
    if (const cl_int error = clGetEventInfo(latest.event, CL_EVENT_CONTEXT, sizeof(context), &context, nullptr);
        error != CL_SUCCESS) {
      return opencl_detail::ClError("clGetEventInfo(CL_EVENT_CONTEXT)", error, "waiting for an event on {}",
                                    stream->executor->label);
    }
    opencl_detail::EventRef bridge(nullptr);
    if (context != stream->executor->context) [[unlikely]] {
      StatusOr<cl_event> stand_in = opencl_detail::BridgeFromOtherContext(*stream->executor, latest.event);
      if (!stand_in.ok()) return stand_in.status();
      bridge.event = stand_in.value();
    }
    cl_event wait_on = bridge.event != nullptr ? bridge.event : latest.event;
    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertWait(*stream, wait_on)) return *held;
    }
    const cl_int error = clEnqueueBarrierWithWaitList(stream->queue, 1, &wait_on, nullptr);
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clEnqueueBarrierWithWaitList", error, "waiting for an event on {}",
                                    stream->executor->label);
    }
    return Status();
  }
  // Waits between backends (ForeignWaitBackend, EventNotifyBackend): a user
  // event of this context gates the queue, and the other backend's release
  // completes it; our events notify through clSetEventCallback.
  static Status Submit(StreamHandle& stream, const op::WaitForeign& operation) {
    cl_int error = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(stream->executor->context, &error);
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clCreateUserEvent", error, "waiting on another backend on {}",
                                    stream->executor->label);
    }
    if (stream->Diverted()) [[unlikely]] {
      if (auto held = opencl_detail::DivertWait(*stream, gate)) {
        if (!held->ok()) {
          clReleaseEvent(gate);
          return *held;
        }
        *operation.release = op::ForeignRelease{&opencl_detail::OpenGate, gate};
        return Status();
      }
    }
    error = clEnqueueBarrierWithWaitList(stream->queue, 1, &gate, nullptr);
    if (error != CL_SUCCESS) {
      clReleaseEvent(gate);
      return opencl_detail::ClError("clEnqueueBarrierWithWaitList", error, "waiting on another backend on {}",
                                    stream->executor->label);
    }
    *operation.release = op::ForeignRelease{&opencl_detail::OpenGate, gate};
    return Status();
  }
  static Status NotifyWhenComplete(ExecutorState& executor, EventHandle& event, op::ForeignRelease release) {
    return opencl_detail::NotifyForeign(*executor.impl, *event.state, release);
  }

  static StatusOr<bool> QueryEvent(EventHandle& event) {
    const opencl_detail::EventRef latest(event.state->Acquire());
    if (!latest.event) return true;
    cl_int state = CL_COMPLETE;
    const cl_int error =
        clGetEventInfo(latest.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, nullptr);
    if (error != CL_SUCCESS)
      return opencl_detail::ClError("clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)", error, "");
    if (state < 0) {
      return opencl_detail::ClError("the recorded command", state,
                                    "(an earlier command of the recording stream failed)");
    }
    return state == CL_COMPLETE;
  }
  static Status SynchronizeEvent(EventHandle& event) {
    const opencl_detail::EventRef latest(event.state->Acquire());
    if (!latest.event) return Status();
    const cl_int error = clWaitForEvents(1, &latest.event);
    if (error != CL_SUCCESS) return opencl_detail::ClError("clWaitForEvents", error, "waiting for a recorded event");
    return Status();
  }
  static StatusOr<std::uint64_t> ElapsedNanoseconds(EventHandle& start, EventHandle& stop) {
    // Waited for first: a recording held behind a callback is a stand-in
    // until it reaches the queue, and only the real marker has timestamps.
    STREAMEXECUTOR_RETURN_IF_ERROR(SynchronizeEvent(start));
    STREAMEXECUTOR_RETURN_IF_ERROR(SynchronizeEvent(stop));
    const opencl_detail::EventRef first(start.state->Acquire());
    const opencl_detail::EventRef last(stop.state->Acquire());
    if (!first.event || !last.event) {
      return Status(ErrorCode::kFailedPrecondition, "timer events were never recorded (ThenStartTimer/ThenStopTimer)");
    }
    cl_ulong begin = 0, end = 0;
    cl_int error = clGetEventProfilingInfo(first.event, CL_PROFILING_COMMAND_END, sizeof(begin), &begin, nullptr);
    if (error == CL_SUCCESS) {
      error = clGetEventProfilingInfo(last.event, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
    }
    if (error != CL_SUCCESS) {
      return opencl_detail::ClError("clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", error, "of a timer{}",
                                    error == CL_PROFILING_INFO_NOT_AVAILABLE
                                        ? " (its stream's queue was adopted without CL_QUEUE_PROFILING_ENABLE)"
                                        : "");
    }
    if (end < begin) {
      return Status(ErrorCode::kFailedPrecondition, "the stop event completed before the start event");
    }
    return static_cast<std::uint64_t>(end - begin);
  }

  // ---- Kernels -----------------------------------------------------------------

  static std::string_view SpecKernelName(const MultiKernelLoaderSpec& spec) {
    if (spec.opencl_text()) return spec.opencl_text()->kernel_name;
    if (spec.opencl_binary()) return spec.opencl_binary()->kernel_name;
    return "<no OpenCL kernel>";
  }

  template <typename... Params>
  static Status LoadKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel) {
    return LoadCheckedKernel(executor, spec, detail::kParamInfos<Params...>, kernel);
  }
  static Status LoadCheckedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec,
                                  std::span<const KernelParamInfo> signature, KernelHandle& kernel);
  // Run-time typed kernels (core/kernel_args.hpp): the parameter list comes
  // from the argument info, read once here (untyped.hpp).
  static Status LoadUntypedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel,
                                  std::vector<DeviceParam>& params, bool& shared_is_parameter) {
    shared_is_parameter = true;  // __local memory is a kernel argument
    return LoadKernelWith(executor, spec, kernel, [&](cl_kernel created, const std::string& name) {
      return opencl_detail::ReadDeviceParams(created, name, executor.impl->label, params);
    });
  }
  template <typename Check>
  static Status LoadKernelWith(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel,
                               Check&& check) {
    opencl_detail::Executor& e = *executor.impl;
    StatusOr<opencl_detail::ProgramSource> source = opencl_detail::PickSource(e, spec);
    if (!source.ok()) return source.status();
    StatusOr<cl_program> program = opencl_detail::GetProgram(e, source.value());
    if (!program.ok()) return program.status();
    const std::string& name = source.value().spec->kernel_name;
    StatusOr<cl_kernel> created =
        opencl_detail::CreateCheckedKernel(e, program.value(), name, [&](cl_kernel k) { return check(k, name); });
    if (!created.ok()) return created.status();
    auto loaded = std::make_unique<opencl_detail::LoadedKernel>();
    loaded->kernel = created.value();
    loaded->executor = &e;
    loaded->work_group_size = opencl_detail::KernelWorkGroupSize(loaded->kernel, e.device);
    // Queried once here: a launch compares static plus dynamic __local memory
    // with the device's before enqueueing, since drivers may abort on more.
    loaded->static_local_bytes = opencl_detail::KernelStaticLocalBytes(loaded->kernel, e.device);
    loaded->device_local_bytes = opencl_detail::Info<cl_ulong>(clGetDeviceInfo, e.device, CL_DEVICE_LOCAL_MEM_SIZE);
    loaded->launch_limit = loaded->static_local_bytes <= loaded->device_local_bytes ? loaded->work_group_size : 0;
    {
      std::lock_guard<std::mutex> lock(e.mutex);
      loaded->arg_generation = ++e.kernels_created << 40;  // opencl/prepared.hpp
    }
    kernel.impl = loaded.release();
    return Status();
  }
  // Launches held behind a callback keep the kernel until they are enqueued.
  static void ReleaseKernel(ExecutorState&, KernelHandle& kernel) {
    if (kernel.impl) std::exchange(kernel.impl, nullptr)->Release();
  }

  // CL_PROGRAM_BINARIES of the program `spec` builds on this executor (from
  // the cache), for saving and loading back with AddOpenCLBinary*.
  static StatusOr<std::string> ProgramBinary(ExecutorState& executor, const MultiKernelLoaderSpec& spec) {
    StatusOr<opencl_detail::ProgramSource> source = opencl_detail::PickSource(*executor.impl, spec);
    if (!source.ok()) return source.status();
    StatusOr<cl_program> program = opencl_detail::GetProgram(*executor.impl, source.value());
    if (!program.ok()) return program.status();
    return opencl_detail::ProgramBinary(*executor.impl, program.value());
  }
  // How many programs this executor has built from what the spec gave (the
  // cache's misses), and how many from binaries in STREAMEXECUTOR_KERNEL_CACHE.
  static int ProgramsBuilt(ExecutorState& executor) {
    std::lock_guard<std::mutex> lock(executor.impl->mutex);
    return executor.impl->programs_built;
  }
  static int ProgramsFromDiskCache(ExecutorState& executor) {
    std::lock_guard<std::mutex> lock(executor.impl->mutex);
    return executor.impl->programs_from_disk;
  }

  // No allocation and no dynamic dispatch: clSetKernelArg per argument, then one
  // clEnqueueNDRangeKernel (launch.hpp). ThenLaunch hands over the caller's
  // arguments: the plain path reads them where they are
  // (detail::ArgumentAsPassed), and they are packed only for the general path.
  static constexpr bool kLaunchesFromArguments = true;
  template <typename... Params, typename... Args>
  [[gnu::always_inline]] static Status SubmitArguments(StreamHandle& stream, const op::LaunchSite<KernelHandle>& site,
                                                       const Args&... args) {
    return opencl_detail::TypedLaunch<Params...>(
        *stream, *site.kernel.impl, site.threads, site.blocks, site.kernel_name,
        [&] { return PackedArgs<Params...>{streamexecutor::detail::PackOne<Params>(args)...}; },
        streamexecutor::detail::ArgumentAsPassed<Params>(args)...);
  }
  // The same launch with packed arguments: command buffers replay these.
  template <typename... Params>
  [[gnu::always_inline]] static Status Submit(StreamHandle& stream,
                                              const op::Launch<KernelHandle, Params...>& operation) {
    return std::apply(
        [&](const auto&... args) {
          return opencl_detail::TypedLaunch<Params...>(
              *stream, *operation.kernel.impl, operation.threads, operation.blocks, operation.kernel_name,
              [&]() -> const PackedArgs<Params...>& { return operation.args; }, args...);
        },
        operation.args);
  }

  // A PreparedLaunch: clSetKernelArg only for what changed since it last set
  // the kernel's arguments, if no other launch has set them since (prepared.hpp).
  template <typename... Params>
  static Status Submit(StreamHandle& stream, const op::PreparedLaunch<KernelHandle, Params...>& prepared) {
    const op::Launch<KernelHandle, Params...>& launch = prepared.launch;
    if (stream->Diverted()) [[unlikely]]
      return Submit(stream, launch);  // held or skipped: sets all when it runs
    return opencl_detail::LaunchPrepared<Params...>(*stream, *launch.kernel.impl, launch.threads, launch.blocks,
                                                    launch.args, launch.kernel_name, prepared.stamp, prepared.changed);
  }

  // A launch typed at run time, checked by the core (untyped.hpp).
  static Status Submit(StreamHandle& stream, const op::UntypedLaunch<KernelHandle>& launch) {
    const std::uint64_t shared_bytes = opencl_detail::SharedArgsBytes(launch.args);
    if (stream->Diverted()) [[unlikely]] {
      return opencl_detail::DivertedUntypedLaunch(*stream, *launch.kernel.impl, launch.threads, launch.blocks,
                                                  launch.args, shared_bytes, launch.kernel_name);
    }
    return opencl_detail::LaunchUntyped(*stream, *launch.kernel.impl, launch.threads, launch.blocks, launch.args.args(),
                                        launch.args.data(), shared_bytes, launch.kernel_name);
  }

  // ---- Command buffers: CommandBufferOperations (opencl/command_buffer_operations.hpp)
};

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status opencl::LoadCheckedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec,
                                                     std::span<const KernelParamInfo> signature, KernelHandle& kernel) {
  return LoadKernelWith(executor, spec, kernel, [&](cl_kernel created, const std::string& name) {
    return opencl_detail::CheckSignature(created, name, executor.impl->label, signature);
  });
}
#endif

static_assert(Backend<opencl>);
static_assert(PrefetchBackend<opencl>);
static_assert(UnifiedMemoryBackend<opencl>);
static_assert(PinnedMemoryBackend<opencl>);
static_assert(ForeignWaitBackend<opencl> && EventNotifyBackend<opencl>);
static_assert(CommandBufferBackend<opencl>);
static_assert(CommandBufferUpdateBackend<opencl>);
static_assert(CommandBufferCloneBackend<opencl> && CommandBufferNestingBackend<opencl>);
static_assert(CommandBufferConditionalBackend<opencl>);
static_assert(UntypedLaunchBackend<opencl>);
static_assert(StreamPriorityBackend<opencl>);

}  // namespace streamexecutor

// Native objects (Interop<opencl>), kernel attributes (Occupancy<opencl>), wherever the backend is.
#include "streamexecutor/opencl/interop.hpp"
#include "streamexecutor/opencl/occupancy.hpp"
