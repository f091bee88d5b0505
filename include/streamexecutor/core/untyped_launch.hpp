// The launch-time check of a launch typed at run time (core/kernel_args.hpp):
// the arguments against the parameter list the backend read at load time,
// then the checks every launch gets (core/launch_check.hpp). Compares on the
// success path; messages are built only on failure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/kernel_args.hpp"
#include "streamexecutor/core/launch_check.hpp"

namespace streamexecutor {

// A backend that launches UntypedKernels (every backend does).
template <typename B>
concept UntypedLaunchBackend =
    Backend<B> &&
    requires(typename B::ExecutorState& executor, typename B::StreamHandle& stream, typename B::KernelHandle& kernel,
             const MultiKernelLoaderSpec& spec, std::vector<DeviceParam>& params, bool& shared_is_parameter,
             const op::UntypedLaunch<typename B::KernelHandle>& launch) {
      { B::LoadUntypedKernel(executor, spec, kernel, params, shared_is_parameter) } -> std::same_as<Status>;
      { B::Submit(stream, launch) } -> std::same_as<Status>;
    };

namespace detail {

inline std::string_view KindName(KernelParamKind kind) {
  switch (kind) {
    case KernelParamKind::kDevicePointer: return "device memory";
    case KernelParamKind::kSharedMemory: return "shared memory";
    default: return "a scalar";
  }
}

inline std::string DescribeArgs(const KernelArgs& args, bool with_shared) {
  std::string list;
  for (const KernelArg& arg : args.args()) {
    if (arg.kind == KernelParamKind::kSharedMemory && !with_shared) continue;
    list += ::streamexecutor::detail::Format("{}{}", list.empty() ? "" : ", ", arg.type);
  }
  return list;
}

// Empty when `arg` can be passed for `param`; otherwise why not.
inline std::string ArgMismatch(const KernelArg& arg, const DeviceParam& param) {
  switch (arg.kind) {
    case KernelParamKind::kDevicePointer:
      if (!param.takes_memory)
        return ::streamexecutor::detail::Format("device memory was given, the kernel takes {}",
                                                param.takes_shared ? "shared memory" : "a scalar");
      if (arg.size != 0 && param.element_size != 0 && arg.size != param.element_size) {
        return ::streamexecutor::detail::Format("the elements are {} bytes, the kernel's are {}", arg.size,
                                                param.element_size);
      }
      return {};
    case KernelParamKind::kSharedMemory:
      if (!param.takes_shared)
        return ::streamexecutor::detail::Format("shared memory was given, the kernel takes {}",
                                                param.takes_memory ? "device memory" : "a scalar");
      return {};
    default:
      if (!param.takes_scalar)
        return ::streamexecutor::detail::Format("a scalar was given, the kernel takes {}",
                                                param.takes_shared ? "shared memory" : "device memory");
      if (param.size != 0 && arg.size != param.size) {
        return ::streamexecutor::detail::Format("sizes differ: {} bytes given, the kernel's parameter is {} bytes",
                                                arg.size, param.size);
      }
      return {};
  }
}

[[gnu::cold]] inline Status UntypedCountMismatch(std::string_view where, const std::string& name,
                                                 const UntypedKernel& kernel, const KernelArgs& args,
                                                 std::size_t given) {
  std::string params;
  for (const DeviceParam& param : kernel.params())
    params += ::streamexecutor::detail::Format("{}{}", params.empty() ? "" : ", ", param.type);
  return MakeError(ErrorCode::kInvalidArgument,
                   "ThenLaunch of kernel '{}' on {}: the kernel takes {} parameter(s) ({}) but {} argument(s) were "
                   "given ({}){}",
                   name, where, kernel.params().size(), params, given, DescribeArgs(args, kernel.shared_is_parameter()),
                   kernel.shared_is_parameter() ? "" : " (not counting shared memory, which is not a parameter here)");
}

// Every argument against the kernel's parameters, then the checks of every
// launch: kernel, dimensions, live memory, shared memory size.
template <typename Executor>
Status CheckUntypedLaunch(const Executor& executor, const ThreadDim& threads, const BlockDim& blocks,
                          const UntypedKernel& kernel, const KernelArgs& args) {
  if (!kernel.IsLoaded() || kernel.executor() != &executor) [[unlikely]]
    return KernelNotUsable(executor, kernel);
  if (!args.status().ok()) [[unlikely]] {
    return Status(args.status().code(),
                  ::streamexecutor::detail::Format("ThenLaunch of kernel '{}' on {}: {}", kernel.name(),
                                                   executor.DeviceLabel(), args.status().message()));
  }
  const DeviceDescription& device = executor.GetDeviceDescription();
  if (!FitsDevice(device, threads, blocks)) [[unlikely]]
    return BadDimensions(executor, kernel.name(), threads, blocks);

  const std::span<const DeviceParam> params = kernel.params();
  std::size_t next = 0;  // the parameter the next argument is for
  std::uint64_t shared = 0;
  bool wrapped = false;
  bool all_live = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const KernelArg& arg = args.args()[i];
    if (arg.kind == KernelParamKind::kSharedMemory)
      wrapped |= __builtin_add_overflow(shared, arg.shared_bytes, &shared);
    if (arg.kind == KernelParamKind::kDevicePointer) all_live &= executor.IsLiveView(arg.memory);
    if (arg.kind == KernelParamKind::kSharedMemory && !kernel.shared_is_parameter()) continue;
    if (next == params.size()) break;  // too many: reported below
    const DeviceParam& param = params[next];
    if (std::string why = ArgMismatch(arg, param); !why.empty()) [[unlikely]] {
      return MakeError(
          ErrorCode::kInvalidArgument,
          "ThenLaunch of kernel '{}' on {}: argument {} is {} ({}) but the kernel's parameter {} is {}: {}",
          kernel.name(), executor.DeviceLabel(), i, arg.type, KindName(arg.kind), next, param.type, why);
    }
    ++next;
  }
  std::size_t given = 0;
  for (const KernelArg& arg : args.args())
    given += arg.kind != KernelParamKind::kSharedMemory || kernel.shared_is_parameter();
  if (given != params.size()) [[unlikely]]
    return UntypedCountMismatch(executor.DeviceLabel(), kernel.name(), kernel, args, given);
  if (!all_live) [[unlikely]] {
    std::vector<const DeviceMemoryBase*> views;
    for (const KernelArg& arg : args.args())
      views.push_back(arg.kind == KernelParamKind::kDevicePointer ? &arg.memory : nullptr);
    // Memory of a peer passes there (core/peer_access.hpp); the shared memory is checked still.
    STREAMEXECUTOR_RETURN_IF_ERROR(executor.CheckLaunchMemory(kernel.name(), views));
  }
  if (wrapped || shared > device.shared_memory_per_block) [[unlikely]] {
    return MakeError(ErrorCode::kResourceExhausted,
                     "ThenLaunch of kernel '{}' on {}: {} bytes of shared memory requested, the device allows {}",
                     kernel.name(), executor.DeviceLabel(), wrapped ? ~std::uint64_t{0} : shared,
                     device.shared_memory_per_block);
  }
  return Status();
}

}  // namespace detail

}  // namespace streamexecutor
