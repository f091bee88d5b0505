// The Backend concept: what a backend tag type (se::host, se::opencl, se::cuda)
// provides so that the core templates can drive it. A backend is a struct of
// native handle types and static functions; the core's Platform, StreamExecutor,
// Stream, Event and Timer own the handles and call these functions directly,
// so every call compiles to a direct call into the backend's driver code.
//
// Optional features (unified memory, pinned host memory, peer access) are
// separate concepts that the core checks with `if constexpr`/`requires`.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>

#include "streamexecutor/core/device_description.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

namespace detail {
struct ConceptProbeCallback {
  void operator()() const {}
};
}  // namespace detail

template <typename B>
concept Backend =
    requires {
      { B::kName } -> std::convertible_to<std::string_view>;
      typename B::PlatformState;  // driver-wide state: loaded library, device list
      typename B::ExecutorState;  // one device: context, program/module cache
      typename B::StreamHandle;   // in-order queue
      typename B::EventHandle;
      typename B::KernelHandle;   // loaded kernel, trivially copyable
    } && std::is_trivially_copyable_v<typename B::KernelHandle> &&
    requires(typename B::PlatformState& platform, typename B::ExecutorState& executor,
             typename B::StreamHandle& stream, typename B::EventHandle& event, typename B::KernelHandle& kernel,
             const MultiKernelLoaderSpec& spec, DeviceMemoryBase memory,
             const void* host_src, void* host_dst, std::uint64_t bytes, std::uint32_t pattern, int ordinal,
             const std::string* kernel_name, PackedArgs<> no_args) {
      // Platform: a failed init (no driver) is reported, and leaves zero devices.
      { B::InitPlatform(platform) } -> std::same_as<Status>;
      { B::DeviceCount(platform) } -> std::same_as<int>;
      // Executor (one device).
      { B::OpenExecutor(platform, ordinal, executor) } -> std::same_as<Status>;
      { B::CloseExecutor(executor) } -> std::same_as<void>;
      { B::Describe(executor) } -> std::same_as<DeviceDescription>;
      // Memory.
      { B::Allocate(executor, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
      { B::Deallocate(executor, memory) } -> std::same_as<Status>;
      { B::SyncMemcpyH2D(executor, memory, host_src, bytes) } -> std::same_as<Status>;
      { B::SyncMemcpyD2H(executor, host_dst, memory, bytes) } -> std::same_as<Status>;
      { B::SyncMemcpyD2D(executor, memory, memory, bytes) } -> std::same_as<Status>;
      { B::SyncMemset32(executor, memory, pattern, bytes) } -> std::same_as<Status>;
      { B::SyncMemset8(executor, memory, pattern, bytes) } -> std::same_as<Status>;
      // Streams.
      { B::CreateStream(executor, stream) } -> std::same_as<Status>;
      { B::DestroyStream(executor, stream) } -> std::same_as<void>;
      { B::StreamSynchronize(stream) } -> std::same_as<Status>;
      { B::EnqueueMemcpyH2D(stream, memory, host_src, bytes) } -> std::same_as<Status>;
      { B::EnqueueMemcpyD2H(stream, host_dst, memory, bytes) } -> std::same_as<Status>;
      { B::EnqueueMemcpyD2D(stream, memory, memory, bytes) } -> std::same_as<Status>;
      { B::EnqueueMemset32(stream, memory, pattern, bytes) } -> std::same_as<Status>;
      { B::EnqueueMemset8(stream, memory, pattern, bytes) } -> std::same_as<Status>;
      { B::EnqueueHostCallback(stream, detail::ConceptProbeCallback{}) } -> std::same_as<Status>;
      // Events: a record is waited on by any stream of the same executor.
      { B::CreateEvent(executor, event) } -> std::same_as<Status>;
      { B::DestroyEvent(executor, event) } -> std::same_as<void>;
      { B::RecordEvent(stream, event) } -> std::same_as<Status>;
      { B::StreamWaitEvent(stream, event) } -> std::same_as<Status>;
      { B::EventQuery(event) } -> std::same_as<StatusOr<bool>>;
      { B::EventSynchronize(event) } -> std::same_as<Status>;
      { B::EventElapsedNanoseconds(event, event) } -> std::same_as<StatusOr<std::uint64_t>>;
      // Kernels.
      { B::SpecKernelName(spec) } -> std::convertible_to<std::string_view>;
      // Loads and checks the code against TypedKernel<Params...>'s parameters.
      { B::template LoadKernel<>(executor, spec, kernel) } -> std::same_as<Status>;
      { B::ReleaseKernel(executor, kernel) } -> std::same_as<void>;
      { B::template Launch<>(stream, kernel, ThreadDim{}, BlockDim{}, no_args, kernel_name) } -> std::same_as<Status>;
    };

// Memory that host code and device code can both dereference.
template <typename B>
concept UnifiedMemoryBackend = Backend<B> && requires(typename B::ExecutorState& executor, std::uint64_t bytes) {
  { B::AllocateUnified(executor, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
};

// Page-locked host memory for fast, truly asynchronous copies.
template <typename B>
concept PinnedMemoryBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, std::uint64_t bytes, void* ptr) {
      { B::HostAllocate(executor, bytes) } -> std::same_as<StatusOr<void*>>;
      { B::HostDeallocate(executor, ptr) } -> std::same_as<Status>;
    };

// Direct access and copies between two devices of one platform.
template <typename B>
concept PeerAccessBackend = Backend<B> && requires(typename B::ExecutorState& a, typename B::ExecutorState& b) {
  { B::CanEnablePeerAccess(a, b) } -> std::same_as<bool>;
  { B::EnablePeerAccess(a, b) } -> std::same_as<Status>;
};

}  // namespace streamexecutor
