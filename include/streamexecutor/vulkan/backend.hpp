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
#include "streamexecutor/detail/sticky_status.hpp"
#include "streamexecutor/vulkan/launch.hpp"
#include "streamexecutor/vulkan/platform.hpp"
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
struct STREAMEXECUTOR_EXPORT vulkan {
  static constexpr std::string_view kName = "vulkan";
  static constexpr std::array<KernelFormat, 1> kKernelFormats{kernel_formats::kSpirv};
  // Work after a failed callback is held behind it (runtime.hpp), so it is
  // skipped as on the host and OpenCL.
  static constexpr bool kWaitsAcrossExecutors = true;

  struct PlatformState {
    vulkan_detail::Instance instance;
  };
  struct ExecutorState {
    vulkan_detail::Executor* impl = nullptr;
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
  static int DeviceCount(const PlatformState& platform) {
    return static_cast<int>(platform.instance.devices.size());
  }
  static Status OpenExecutor(PlatformState& platform, int ordinal, ExecutorState& executor);
  static void CloseExecutor(ExecutorState& executor);
  static DeviceDescription Describe(const ExecutorState& executor);
  static PluginConfig DefaultPlugins() { return PluginConfig(); }

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
    auto* held = new (std::nothrow) vulkan_detail::Buffer(buffer.value());
    if (held == nullptr) {
      vulkan_detail::DestroyBuffer(e, buffer.value());
      return MakeError(ErrorCode::kResourceExhausted, "Allocate on {}: out of host memory", e.label);
    }
    return DeviceMemoryBase(held, bytes);
  }
  // Work already queued may still use the memory: the buffer goes once every
  // stream has passed the value it had reached now.
  static Status Deallocate(ExecutorState& executor, DeviceMemoryBase memory) {
    auto* buffer = static_cast<vulkan_detail::Buffer*>(memory.opaque());
    vulkan_detail::Executor::Deferred deferred{buffer, {}};
    {
      std::lock_guard<std::mutex> lock(executor.impl->lists_mutex);
      for (vulkan_detail::StreamState* s : executor.impl->streams) {
        std::lock_guard<std::mutex> stream_lock(s->mutex);
        if (s->last == 0 || s->timeline->Reached(s->last)) continue;
        s->timeline->Reference();
        deferred.until.emplace_back(s->timeline, s->last);
      }
      if (!deferred.until.empty()) {
        executor.impl->deferred.push_back(std::move(deferred));
        return Status();
      }
    }
    vulkan_detail::DestroyBuffer(*executor.impl, *buffer);
    delete buffer;
    return Status();
  }
  static void ReclaimDeferred(ExecutorState& executor, bool wait = false) {
    std::vector<vulkan_detail::Executor::Deferred> done;
    {
      std::lock_guard<std::mutex> lock(executor.impl->lists_mutex);
      auto& list = executor.impl->deferred;
      if (list.empty()) return;
      for (std::size_t i = 0; i < list.size();) {
        bool reached = true;
        for (auto& [timeline, value] : list[i].until) {
          if (wait) timeline->Wait(value, "freeing memory").IgnoreError();
          reached = reached && timeline->Reached(value);
        }
        if (reached || wait) {
          done.push_back(std::move(list[i]));
          list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      }
    }
    for (vulkan_detail::Executor::Deferred& d : done) {
      for (auto& entry : d.until) entry.first->Release();
      vulkan_detail::DestroyBuffer(*executor.impl, *d.buffer);
      delete d.buffer;
    }
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
    vulkan_detail::DestroyBuffer(e, buffer);
    return Status();
  }

  // ---- Streams -----------------------------------------------------------------

  static Status CreateStream(ExecutorState& executor, StreamHandle& stream);
  static void DestroyStream(ExecutorState& executor, StreamHandle& stream);
  static Status SynchronizeStream(StreamHandle& stream);
  static bool CallerIsCallbackOf(const StreamHandle& stream) { return stream->OnWorker(); }
  static bool StreamIsIdle(StreamHandle& stream) {
    std::uint64_t last = 0;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      last = stream->last;
      if (!stream->pending.empty()) return false;
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
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on {}: copying the callback threw a non-std::exception",
                       s->executor->label);
    }
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->Failed()) return Status();  // skipped after a failure, as on every backend
    return vulkan_detail::EnqueueHost(*s, std::move(job));
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

  // ---- Kernels -----------------------------------------------------------------

  static std::string_view SpecKernelName(const MultiKernelLoaderSpec& spec) {
    if (spec.spirv()) return spec.spirv()->kernel_name;
    return "<no SPIR-V kernel>";
  }
  template <typename... Params>
  static Status LoadKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel) {
    return LoadCheckedKernel(executor, spec, streamexecutor::detail::kParamInfos<Params...>, kernel);
  }
  static Status LoadCheckedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec,
                                  std::span<const KernelParamInfo> signature, KernelHandle& kernel);
  static void ReleaseKernel(ExecutorState&, KernelHandle& kernel) { delete std::exchange(kernel.impl, nullptr); }

  template <typename... Params>
  static Status Submit(StreamHandle& stream, const op::Launch<KernelHandle, Params...>& operation) {
    vulkan_detail::LoadedKernel& kernel = *operation.kernel.impl;
    vulkan_detail::StreamState& s = *stream;
    if (s.Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    STREAMEXECUTOR_RETURN_IF_ERROR(vulkan_detail::CheckLocalSize(kernel, operation.threads));
    vulkan_detail::LaunchData data;
    data.key.local = {static_cast<std::uint32_t>(operation.threads.x), static_cast<std::uint32_t>(operation.threads.y),
                      static_cast<std::uint32_t>(operation.threads.z)};
    STREAMEXECUTOR_RETURN_IF_ERROR(
        vulkan_detail::PackArguments<Params...>(kernel, operation.args, data, std::index_sequence_for<Params...>{}));
    StatusOr<VkPipeline> pipeline = vulkan_detail::GetPipeline(kernel, data.key);
    if (!pipeline.ok()) return pipeline.status();
    std::lock_guard<std::mutex> lock(s.mutex);
    StatusOr<std::size_t> slot = vulkan_detail::BeginSlot(s);
    if (!slot.ok()) return slot.status();
    vulkan_detail::RecordDispatch(*s.executor, s.slots[slot.value()].commands, kernel, pipeline.value(), data,
                                  operation.blocks);
    return vulkan_detail::FinishSlot(s, slot.value());
  }
};

static_assert(Backend<vulkan>);
static_assert(PinnedMemoryBackend<vulkan>);
static_assert(TimingEventBackend<vulkan>);
static_assert(CrossExecutorWaitBackend<vulkan>);

}  // namespace streamexecutor

#include "streamexecutor/vulkan/backend_impl.hpp"
