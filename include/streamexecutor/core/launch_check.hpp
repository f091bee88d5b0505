// The run-time checks of a launch, shared by Stream::ThenLaunch and
// CommandBuffer::ThenLaunch so that a recorded launch is refused for exactly
// the reasons a direct one is. Inline compares on the success path; the
// messages are built only on failure.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "streamexecutor/core/device_description.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor::detail {

template <typename Executor>
Status KernelNotUsable(const Executor& executor, const KernelBase& kernel) {
  if (!kernel.IsLoaded()) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "ThenLaunch on {}: the kernel is not loaded (GetKernel failed or was not called)",
                     executor.DeviceLabel());
  }
  return MakeError(ErrorCode::kInvalidArgument,
                   "ThenLaunch on {}: kernel '{}' was loaded by {}, another StreamExecutor: load it on this one "
                   "with GetKernel (a kernel belongs to the executor that loaded it)",
                   executor.DeviceLabel(), kernel.name(), kernel.loaded_on_label());
}

template <typename Executor>
Status BadDimensions(const Executor& executor, const std::string& name, const ThreadDim& t, const BlockDim& b) {
  const DeviceDescription& d = executor.GetDeviceDescription();
  return MakeError(ErrorCode::kInvalidArgument,
                   "ThenLaunch of kernel '{}' on {}: threads {}x{}x{} per block, blocks {}x{}x{}: every dimension must "
                   "be at least 1, at most {} threads per block ({}x{}x{}) and a grid of at most {}x{}x{} blocks",
                   name, executor.DeviceLabel(), t.x, t.y, t.z, b.x, b.y, b.z, d.max_threads_per_block,
                   d.max_block_dims.x, d.max_block_dims.y, d.max_block_dims.z, d.max_grid_dims.x, d.max_grid_dims.y,
                   d.max_grid_dims.z);
}

// Every limit is at least 1 (RaiseZeroLaunchLimits, when the executor opens),
// and the compiler is told so: a dimension that is a constant 1, as y and z
// usually are, then costs no compare.
[[gnu::always_inline]] inline void AssumeAtLeastOne(std::uint64_t limit) {
  if (limit == 0) __builtin_unreachable();
}

[[gnu::always_inline]] inline bool FitsDevice(const DeviceDescription& device, const ThreadDim& threads,
                                              const BlockDim& blocks) {
  AssumeAtLeastOne(device.max_block_dims.x);
  AssumeAtLeastOne(device.max_block_dims.y);
  AssumeAtLeastOne(device.max_block_dims.z);
  AssumeAtLeastOne(device.max_grid_dims.x);
  AssumeAtLeastOne(device.max_grid_dims.y);
  AssumeAtLeastOne(device.max_grid_dims.z);
  AssumeAtLeastOne(device.max_threads_per_block);
  return threads.Count() != 0 && blocks.Count() != 0 && threads.Count() <= device.max_threads_per_block &&
         threads.x <= device.max_block_dims.x && threads.y <= device.max_block_dims.y &&
         threads.z <= device.max_block_dims.z && blocks.x <= device.max_grid_dims.x &&
         blocks.y <= device.max_grid_dims.y && blocks.z <= device.max_grid_dims.z;
}

template <typename P, typename Executor, typename A>
[[gnu::always_inline]] inline bool IsLiveArgument(const Executor& executor, const A& arg) {
  const DeviceMemoryBase* view = MemoryView<P>(arg);  // null for non-memory parameters
  return view == nullptr || executor.IsLiveView(*view);
}

// For a launch that LaunchIsValid refused and CheckLaunch accepted: whether
// that is because an argument is memory of a peer (core/peer_access.hpp),
// which only the full check accepts.
template <typename... Params, typename Executor, typename... Args>
bool TakesPeerMemory(const Executor& executor, const Args&... args) {
  if constexpr (sizeof...(Params) == 0) {
    return false;  // a kernel without parameters takes no memory (and the lambda would be unused)
  } else {
    auto is_peer = [&](const DeviceMemoryBase* view) {
      return view != nullptr && !executor.IsLiveView(*view) && executor.IsEnabledPeerView(*view);
    };
    return (is_peer(MemoryView<Params>(args)) || ...);
  }
}

template <typename P, typename A>
std::uint64_t SharedBytes(const A& arg) {
  if constexpr (is_shared_device_memory_v<std::remove_cv_t<P>>)
    return arg.size();
  else
    return 0;
}

template <typename P, typename A>
[[gnu::always_inline]] inline bool SharedFits(std::uint64_t& total, const A& arg) {
  return !__builtin_add_overflow(total, SharedBytes<P>(arg), &total);
}

// The launch path's form of CheckLaunch below: the same conditions as plain
// compares, inlined into every caller, with no Status built. When it says no,
// CheckLaunch (out of line, cold) says why.
template <typename Executor, typename... Params, typename... Args>
[[gnu::always_inline]] inline bool LaunchIsValid(const Executor& executor, const ThreadDim& threads,
                                                 const BlockDim& blocks, const TypedKernel<Params...>& kernel,
                                                 const Args&... args) {
  if (!kernel.IsLoadedOn(&executor)) return false;
  const DeviceDescription& device = executor.GetDeviceDescription();
  if (!FitsDevice(device, threads, blocks)) return false;
  if constexpr ((is_device_memory_pointer_v<std::remove_cv_t<Params>> || ...)) {
    if (!(IsLiveArgument<Params>(executor, args) && ...)) return false;
  }
  if constexpr ((is_shared_device_memory_v<std::remove_cv_t<Params>> || ...)) {
    std::uint64_t shared = 0;
    if (!(SharedFits<Params>(shared, args) && ...) || shared > device.shared_memory_per_block) return false;
  }
  return true;
}

// The kernel is loaded by `executor`; the dimensions are within the device's
// limits; every DeviceMemory argument is live memory of `executor`; the
// shared memory fits.
template <typename Executor, typename... Params, typename... Args>
Status CheckLaunch(const Executor& executor, const ThreadDim& threads, const BlockDim& blocks,
                   const TypedKernel<Params...>& kernel, const Args&... args) {
  if (!kernel.IsLoaded() || kernel.executor() != &executor) [[unlikely]] {
    return KernelNotUsable(executor, kernel);
  }
  const DeviceDescription& device = executor.GetDeviceDescription();
  if (!FitsDevice(device, threads, blocks)) [[unlikely]] {
    return BadDimensions(executor, kernel.name(), threads, blocks);
  }
  if constexpr ((is_device_memory_pointer_v<std::remove_cv_t<Params>> || ...)) {
    // Every DeviceMemory argument against the executor's live allocations:
    // a freed view, another executor's memory or a stale copy of a view is
    // an error here instead of a fault inside the driver or the kernel.
    // Memory of a peer passes (core/peer_access.hpp), and the checks go on.
    if (!(IsLiveArgument<Params>(executor, args) && ...)) [[unlikely]] {
      const std::array<const DeviceMemoryBase*, sizeof...(Params)> views{MemoryView<Params>(args)...};
      STREAMEXECUTOR_RETURN_IF_ERROR(executor.CheckLaunchMemory(kernel.name(), views));
    }
  }
  if constexpr ((is_shared_device_memory_v<std::remove_cv_t<Params>> || ...)) {
    std::uint64_t shared = 0;
    bool wrapped = false;
    ((wrapped |= __builtin_add_overflow(shared, SharedBytes<Params>(args), &shared)), ...);
    if (wrapped || shared > device.shared_memory_per_block) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "ThenLaunch of kernel '{}' on {}: {} bytes of shared memory requested, the device allows {}",
                       kernel.name(), executor.DeviceLabel(), wrapped ? ~std::uint64_t{0} : shared,
                       device.shared_memory_per_block);
    }
  }
  return Status();
}

}  // namespace streamexecutor::detail
