// se::vulkan — compute on any Vulkan 1.2 device (NVIDIA, AMD, Intel, ARM,
// Qualcomm, Mesa's lavapipe on the CPU), through the Vulkan C API opened at run
// time (api.hpp). Streams are timeline semaphores on the device's compute
// queue (runtime.hpp), kernels SPIR-V compute shaders checked against the
// TypedKernel by reflection (reflection.hpp, launch.hpp). docs/vulkan.md
// explains the design.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/untyped_launch.hpp"
#include "streamexecutor/detail/sticky_status.hpp"
#include "streamexecutor/vulkan/command_buffer.hpp"
#include "streamexecutor/vulkan/foreign_wait.hpp"
#include "streamexecutor/vulkan/launch.hpp"
#include "streamexecutor/vulkan/platform.hpp"
#include "streamexecutor/vulkan/plugins.hpp"
#include "streamexecutor/vulkan/runtime.hpp"

namespace streamexecutor {

namespace vulkan_detail {

// The state behind an Event: the timeline and value of its latest recording,
// and for a Timer's events a timestamp query.
struct EventState {
  std::mutex mutex;
  Timeline* timeline = nullptr;  // referenced while held here
  std::uint64_t value = 0;
  VkQueryPool queries = VK_NULL_HANDLE;
  bool stamped = false;  // a timestamp was written by the latest recording

  // The latest recording, referenced for the caller.
  std::pair<Timeline*, std::uint64_t> Latest() {
    std::lock_guard<std::mutex> lock(mutex);
    if (timeline != nullptr) timeline->Reference();
    return {timeline, value};
  }
  void Replace(Timeline* t, std::uint64_t v, bool stamp) {
    t->Reference();
    Timeline* old = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      old = std::exchange(timeline, t);
      value = v;
      stamped = stamp;
    }
    if (old != nullptr) old->Release();
  }
};

}  // namespace vulkan_detail

// Exported so that Platform<vulkan> is one per process across shared libraries.
struct STREAMEXECUTOR_EXPORT vulkan : vulkan_detail::PluginIds, vulkan_detail::CommandBufferOperations<vulkan> {
  static constexpr std::string_view kName = "vulkan";
  static constexpr std::array<KernelFormat, 2> kKernelFormats{kernel_formats::kSpirv, kernel_formats::kGlsl};
  // Work after a failed callback is held behind it (runtime.hpp), so it is
  // skipped as on the host and OpenCL.
  static constexpr bool kWaitsAcrossExecutors = true;

  struct PlatformState {
    vulkan_detail::Instance instance;
  };
  struct ExecutorState {
    vulkan_detail::Executor* impl = nullptr;
    vulkan_detail::Notifier* notifier = nullptr;  // made by the first NotifyWhenComplete
  };
  using StreamHandle = vulkan_detail::StreamState*;
  struct EventHandle {
    vulkan_detail::EventState* state = nullptr;
  };
  struct KernelHandle {
    vulkan_detail::LoadedKernel* impl = nullptr;
  };

  // ---- Platform and executor -------------------------------------------------

  static Status InitPlatform(PlatformState& platform) {
    STREAMEXECUTOR_RETURN_IF_ERROR(vulkan_detail::CreateInstance(platform.instance));
    if (platform.instance.devices.empty()) {
      return MakeError(ErrorCode::kUnavailable, "no Vulkan device this backend can use{}{}",
                       platform.instance.skipped.empty() ? " (the driver lists none)" : ": ",
                       platform.instance.skipped);
    }
    return Status();
  }
  static int DeviceCount(const PlatformState& platform) { return static_cast<int>(platform.instance.devices.size()); }
  static Status OpenExecutor(PlatformState& platform, int ordinal, ExecutorState& executor);
  static void CloseExecutor(ExecutorState& executor);
  static DeviceDescription Describe(const ExecutorState& executor);

  // ---- Memory ----------------------------------------------------------------

  static StatusOr<DeviceMemoryBase> Allocate(ExecutorState& executor, std::uint64_t bytes) {
    vulkan_detail::Executor& e = *executor.impl;
    ReclaimDeferred(executor);
    if (bytes > e.max_allocation) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "Allocate of {} bytes on {}: over the device's maxMemoryAllocationSize of {} bytes", bytes,
                       e.label, e.max_allocation);
    }
    StatusOr<vulkan_detail::Buffer> buffer =
        vulkan_detail::CreateBuffer(e, bytes, e.memory_types.device, false, "Allocate");
    if (!buffer.ok()) return buffer.status();
    return Hold(e, buffer.value(), "Allocate");
  }
  // Memory that host and device code both dereference: host-visible, coherent
  // memory, mapped for its lifetime (device-local too where the device has
  // such a type: integrated GPUs, resizable BAR, lavapipe).
  static StatusOr<DeviceMemoryBase> AllocateUnified(ExecutorState& executor, std::uint64_t bytes) {
    vulkan_detail::Executor& e = *executor.impl;
    ReclaimDeferred(executor);
    StatusOr<vulkan_detail::Buffer> buffer =
        vulkan_detail::CreateBuffer(e, bytes, e.memory_types.unified, true, "AllocateUnified");
    if (!buffer.ok()) return buffer.status();
    return Hold(e, buffer.value(), "AllocateUnified");
  }
  // The host address of a unified allocation (plus the view's offset); null
  // for device memory that is not mapped.
  static void* HostAddress(const DeviceMemoryBase& memory) {
    const auto* buffer = static_cast<const vulkan_detail::Buffer*>(memory.opaque());
    return buffer != nullptr && buffer->mapped != nullptr ? static_cast<std::byte*>(buffer->mapped) + memory.offset()
                                                          : nullptr;
  }
  // Work already queued may still use the memory: it goes once that is done.
  static StatusOr<DeviceMemoryBase> Hold(vulkan_detail::Executor& e, vulkan_detail::Buffer buffer,
                                         std::string_view caller) {
    auto* held = new (std::nothrow) vulkan_detail::Buffer(buffer);
    if (held != nullptr) {
      try {
        std::lock_guard<std::mutex> lock(e.mutex);
        e.by_handle.emplace(held->buffer, held);
        return DeviceMemoryBase(held, buffer.size);
      } catch (...) {
        delete held;
      }
    }
    vulkan_detail::DestroyBuffer(e, buffer);
    return MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory", caller, e.label);
  }
  static Status Deallocate(ExecutorState& executor, DeviceMemoryBase memory) {
    auto* buffer = static_cast<vulkan_detail::Buffer*>(memory.opaque());
    {
      std::lock_guard<std::mutex> lock(executor.impl->mutex);
      executor.impl->by_handle.erase(buffer->buffer);
    }
    vulkan_detail::DestroyWhenIdle(*executor.impl, *buffer, buffer);
    return Status();
  }
  static void ReclaimDeferred(ExecutorState& executor, bool wait = false) {
    vulkan_detail::ReclaimDeferred(*executor.impl, wait);
  }

  // Pinned memory: host-visible, coherent memory, mapped for its lifetime.
  static StatusOr<void*> HostAllocate(ExecutorState& executor, std::uint64_t bytes) {
    vulkan_detail::Executor& e = *executor.impl;
    StatusOr<vulkan_detail::Buffer> buffer =
        vulkan_detail::CreateBuffer(e, bytes, e.memory_types.readback, true, "HostAllocate");
    if (!buffer.ok()) return buffer.status();
    std::lock_guard<std::mutex> lock(e.mutex);
    e.pinned.emplace(buffer.value().mapped, buffer.value());
    return buffer.value().mapped;
  }
  static Status HostDeallocate(ExecutorState& executor, void* ptr) {
    vulkan_detail::Executor& e = *executor.impl;
    vulkan_detail::Buffer buffer;
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
    vulkan_detail::DestroyWhenIdle(e, buffer, nullptr);
    return Status();
  }

  // ---- Streams -----------------------------------------------------------------

  static Status CreateStream(ExecutorState& executor, StreamHandle& stream);
  static void DestroyStream(ExecutorState& executor, StreamHandle& stream);
  static Status SynchronizeStream(StreamHandle& stream);
  static bool CallerIsCallbackOf(const StreamHandle& stream) { return stream->OnWorker(); }
  // Every operation, host work included, has run once its value is reached
  // (the host thread may still be tidying up its last entry).
  static bool StreamIsIdle(StreamHandle& stream) {
    std::uint64_t last = 0;
    {
      std::lock_guard<vulkan_detail::StreamLock> lock(stream->mutex);
      last = stream->last;
    }
    return stream->timeline->Reached(last);
  }

  static Status Submit(StreamHandle& stream, const op::MemcpyH2D& operation);
  static Status Submit(StreamHandle& stream, const op::MemcpyD2H& operation);
  static Status Submit(StreamHandle& stream, const op::MemcpyD2D& operation);
  static Status Submit(StreamHandle& stream, const op::Memset8& operation) {
    return Fill(stream, operation.dst, operation.value * 0x01010101u, operation.bytes, "ThenMemset8");
  }
  static Status Submit(StreamHandle& stream, const op::Memset32& operation) {
    return Fill(stream, operation.dst, operation.pattern, operation.bytes, "ThenMemset32");
  }
  static Status Fill(StreamHandle& stream, const DeviceMemoryBase& dst, std::uint32_t pattern, std::uint64_t bytes,
                     std::string_view caller);

  template <typename Callback>
  static Status Submit(StreamHandle& stream, const op::HostCall<Callback>& operation) {
    Callback&& callback = static_cast<Callback&&>(operation.callable);
    vulkan_detail::StreamState* s = stream;
    vulkan_detail::HostJob job;
    job.user = true;
    try {
      job.callback = streamexecutor::detail::StoredCallback::Make(
          [s, f = std::decay_t<Callback>(std::forward<Callback>(callback))]() mutable {
            if (Status status = streamexecutor::detail::InvokeHostCallback(f, "vulkan", s->executor->ordinal);
                !status.ok()) {
              s->Fail(std::move(status));
            }
          });
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on {}: copying the callback threw: {}",
                       s->executor->label, e.what());
    } catch (...) {
      return MakeError(ErrorCode::kInternal,
                       "ThenDoHostCallback on {}: copying the callback threw a non-std::exception", s->executor->label);
    }
    std::lock_guard<vulkan_detail::StreamLock> lock(s->mutex);
    if (s->Failed()) return Status();  // skipped after a failure, as on every backend
    return vulkan_detail::EnqueueHost(*s, std::move(job));
  }
  // A canned library's own commands, `call(VkCommandBuffer)` (VkFFT's), as the
  // stream's next device operation (vulkan/record.hpp).
  template <typename F>
  static Status Submit(StreamHandle& stream, const op::LibraryCall<F>& call) {
    StatusOr<std::uint64_t> value = vulkan_detail::RecordOnStream(*stream, call.call);
    return value.ok() ? Status() : value.status();
  }

  // ---- Events ------------------------------------------------------------------

  static Status CreateEvent(ExecutorState& executor, EventHandle& event) {
    event.state = new (std::nothrow) vulkan_detail::EventState();
    if (event.state == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "creating an event on {}: out of memory", executor.impl->label);
    }
    return Status();
  }
  // A Timer's events write a timestamp when recorded.
  static Status CreateTimingEvent(ExecutorState& executor, EventHandle& event);
  static void DestroyEvent(ExecutorState& executor, EventHandle& event);
  static Status Submit(StreamHandle& stream, const op::RecordEvent<EventHandle>& operation);
  static Status Submit(StreamHandle& stream, const op::WaitEvent<EventHandle>& operation);
  static StatusOr<bool> QueryEvent(EventHandle& event) {
    auto [timeline, value] = event.state->Latest();
    if (timeline == nullptr) return true;
    StatusOr<std::uint64_t> now = timeline->Read();
    timeline->Release();
    if (!now.ok()) return now.status();
    return now.value() >= value;
  }
  static Status SynchronizeEvent(EventHandle& event) {
    auto [timeline, value] = event.state->Latest();
    if (timeline == nullptr) return Status();
    Status status = timeline->Wait(value, "synchronizing an event");
    timeline->Release();
    return status;
  }
  static StatusOr<std::uint64_t> ElapsedNanoseconds(EventHandle& start, EventHandle& stop);

  // Waits between backends (ForeignWaitBackend, EventNotifyBackend; foreign_wait.hpp).
  static Status Submit(StreamHandle& stream, const op::WaitForeign& operation) {
    return vulkan_detail::WaitForGate(*stream, *operation.release);
  }
  static Status NotifyWhenComplete(ExecutorState& executor, EventHandle& event, op::ForeignRelease release) {
    auto [timeline, value] = event.state->Latest();
    if (timeline == nullptr || timeline->Reached(value)) {
      if (timeline != nullptr) timeline->Release();
      release();
      return Status();
    }
    vulkan_detail::Notifier* notifier = nullptr;
    {
      std::lock_guard<std::mutex> lock(executor.impl->mutex);
      if (executor.notifier == nullptr) executor.notifier = new (std::nothrow) vulkan_detail::Notifier(*executor.impl);
      notifier = executor.notifier;
    }
    Status status = notifier != nullptr
                        ? notifier->Add(timeline, value, release)
                        : MakeError(ErrorCode::kResourceExhausted,
                                    "notifying another backend on {}: out of host memory", executor.impl->label);
    timeline->Release();
    return status;
  }

  // ---- Kernels -----------------------------------------------------------------

  static std::string_view SpecKernelName(const MultiKernelLoaderSpec& spec) {
    if (spec.spirv()) return spec.spirv()->kernel_name;
    if (spec.glsl()) return spec.glsl()->kernel_name;
    return "<no SPIR-V or GLSL kernel>";
  }
  template <typename... Params>
  static Status LoadKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel) {
    return LoadCheckedKernel(executor, spec, streamexecutor::detail::kParamInfos<Params...>, kernel);
  }
  static Status LoadCheckedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec,
                                  std::span<const KernelParamInfo> signature, KernelHandle& kernel);
  // Queued launches may still run its pipelines: they go once that is done.
  static void ReleaseKernel(ExecutorState& executor, KernelHandle& kernel) {
    vulkan_detail::LoadedKernel* loaded = std::exchange(kernel.impl, nullptr);
    if (loaded == nullptr) return;
    vulkan_detail::DestroyWhenIdle(
        *executor.impl,
        vulkan_detail::Executor::Deferred{
            {}, nullptr, loaded, [](void* k) { delete static_cast<vulkan_detail::LoadedKernel*>(k); }, {}});
  }
  // Run-time typed kernels (core/kernel_args.hpp): the parameter list comes
  // from the module, in the positional form (reflection.hpp, ReadParams).
  static Status LoadUntypedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel,
                                  std::vector<DeviceParam>& params, bool& shared_is_parameter);
  static Status Submit(StreamHandle& stream, const op::UntypedLaunch<KernelHandle>& operation) {
    vulkan_detail::LoadedKernel& kernel = *operation.kernel.impl;
    vulkan_detail::LaunchData data;
    std::memset(data.push.data(), 0, kernel.layout.push_constant_bytes);
    data.key.local = {static_cast<std::uint32_t>(operation.threads.x), static_cast<std::uint32_t>(operation.threads.y),
                      static_cast<std::uint32_t>(operation.threads.z)};
    STREAMEXECUTOR_RETURN_IF_ERROR(
        vulkan_detail::PackUntyped(kernel, operation.args.args(), operation.args.data(), data));
    return Dispatch(stream, kernel, operation.threads, operation.blocks, data);
  }
  static Status Dispatch(StreamHandle& stream, vulkan_detail::LoadedKernel& kernel, const ThreadDim& threads,
                         const BlockDim& blocks, const vulkan_detail::LaunchData& data) {
    vulkan_detail::StreamState& s = *stream;
    if (s.Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    if (!vulkan_detail::LocalSizeFits(kernel, threads)) [[unlikely]]
      return vulkan_detail::CheckLocalSize(kernel, threads);
    VkPipeline pipeline = vulkan_detail::LastPipeline(kernel, data.key);
    if (pipeline == VK_NULL_HANDLE) [[unlikely]] {
      StatusOr<VkPipeline> made = vulkan_detail::MakePipeline(kernel, data.key);
      if (!made.ok()) return made.status();
      pipeline = made.value();
    }
    std::lock_guard<vulkan_detail::StreamLock> lock(s.mutex);
    StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
    if (!slot.ok()) return slot.status();
    vulkan_detail::RecordDispatch(*s.executor, s.slots[slot.value()].commands, kernel, pipeline, data, blocks);
    return vulkan_detail::FinishSlot(s, slot.value());
  }

  template <typename... Params>
  static Status Submit(StreamHandle& stream, const op::Launch<KernelHandle, Params...>& operation) {
    vulkan_detail::LoadedKernel& kernel = *operation.kernel.impl;
    if (stream->Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    vulkan_detail::LaunchData data;
    if (!kernel.push_covered) std::memset(data.push.data(), 0, kernel.layout.push_constant_bytes);
    data.key.local = {static_cast<std::uint32_t>(operation.threads.x), static_cast<std::uint32_t>(operation.threads.y),
                      static_cast<std::uint32_t>(operation.threads.z)};
    if (!vulkan_detail::PackArgumentsFast<Params...>(kernel, operation.args, data,
                                                     std::index_sequence_for<Params...>{})) [[unlikely]] {
      return vulkan_detail::PackArguments<Params...>(kernel, operation.args, data,
                                                     std::index_sequence_for<Params...>{});
    }
    return Dispatch(stream, kernel, operation.threads, operation.blocks, data);
  }
};

static_assert(Backend<vulkan>);
static_assert(PinnedMemoryBackend<vulkan>);
static_assert(UnifiedMemoryBackend<vulkan>);
static_assert(ForeignWaitBackend<vulkan> && EventNotifyBackend<vulkan>);
static_assert(UntypedLaunchBackend<vulkan>);
static_assert(TimingEventBackend<vulkan>);
static_assert(CrossExecutorWaitBackend<vulkan>);
static_assert(CommandBufferBackend<vulkan> && CommandBufferUpdateBackend<vulkan>);
static_assert(CommandBufferCloneBackend<vulkan> && CommandBufferNestingBackend<vulkan>);
static_assert(CommandBufferConditionalBackend<vulkan>);

}  // namespace streamexecutor

#include "streamexecutor/vulkan/backend_impl.hpp"

// Native objects (Interop<vulkan>), kernel attributes (Occupancy<vulkan>), wherever the backend is.
#include "streamexecutor/vulkan/interop.hpp"
#include "streamexecutor/vulkan/occupancy.hpp"
