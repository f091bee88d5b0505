// Launches typed at run time on OpenCL (core/kernel_args.hpp): the kernel's
// parameter list read once at load time from the argument info every program
// is built with, and the launch that sets KernelArgs on the cl_kernel.
#pragma once

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "streamexecutor/core/kernel_args.hpp"
#include "streamexecutor/opencl/held.hpp"
#include "streamexecutor/opencl/launch.hpp"
#include "streamexecutor/opencl/signature.hpp"

namespace streamexecutor::opencl_detail {

// The parameters as the launch-time check compares them (signature.hpp reads them).
inline Status ReadDeviceParams(cl_kernel kernel, std::string_view kernel_name, std::string_view device,
                               std::vector<DeviceParam>& params) {
  const auto count = Info<cl_uint>(clGetKernelInfo, kernel, CL_KERNEL_NUM_ARGS);
  for (cl_uint i = 0; i < count; ++i) {
    RealArg real;
    if (Status s = ReadArg(kernel, i, real); !s.ok()) {
      return Status(s.code(), ::streamexecutor::detail::Format("GetUntypedKernel on {}: kernel '{}': {}", device,
                                                               kernel_name, s.message()));
    }
    DeviceParam& param = params.emplace_back();
    const bool local = real.pointer && real.address == CL_KERNEL_ARG_ADDRESS_LOCAL;
    param.takes_shared = local;
    param.takes_memory = real.pointer && !local;
    param.takes_scalar = !real.pointer;
    // A typedef or struct has no size in the argument info: 0, not compared.
    (real.pointer ? param.element_size : param.size) = ClassifyOpenCL(real.base).size;
    param.type = real.name.empty() ? real.spelled : ::streamexecutor::detail::Format("{} {}", real.spelled, real.name);
  }
  return Status();
}

// __local bytes the shared arguments reserve (OpenCL refuses 0: one byte).
inline std::uint64_t SharedArgsBytes(const KernelArgs& args) {
  std::uint64_t bytes = 0;
  for (const KernelArg& arg : args.args()) {
    if (arg.kind == KernelParamKind::kSharedMemory) bytes += arg.shared_bytes ? arg.shared_bytes : 1;
  }
  return bytes;
}

// Under the kernel's launch_lock, like every argument setting.
inline Status SetUntypedArgs(LoadedKernel& kernel, std::span<const KernelArg> args, const std::byte* data,
                             const std::string* name) {
  Status failure;
  for (std::size_t i = 0; i < args.size() && failure.ok(); ++i) {
    const KernelArg& arg = args[i];
    const auto index = static_cast<cl_uint>(i);
    if (arg.kind == KernelParamKind::kDevicePointer) {
      SetArg<DeviceMemory<std::byte>*>(kernel, index, arg.memory, name, failure);
    } else if (arg.kind == KernelParamKind::kSharedMemory) {
      SetArg<SharedDeviceMemory<std::byte>>(kernel, index, SharedDeviceMemory<std::byte>(arg.shared_bytes), name,
                                            failure);
    } else if (const cl_int error = clSetKernelArg(kernel.kernel, index, arg.size, data + arg.offset);
               error != CL_SUCCESS) [[unlikely]] {
      FailArg(failure, error, index, name, *kernel.executor);
    }
  }
  ++kernel.arg_generation;  // prepared launches of this kernel must set theirs again
  return failure;
}

inline Status LaunchUntyped(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads, const BlockDim& blocks,
                            std::span<const KernelArg> args, const std::byte* data, std::uint64_t shared_bytes,
                            const std::string* name) {
  const std::string_view kernel_name = NameOf(name);
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckSizes(kernel, threads, shared_bytes, kernel_name));
  return EnqueueLaunch(stream, kernel, threads, blocks, kernel_name,
                       [&] { return SetUntypedArgs(kernel, args, data, name); });
}

// A run-time typed launch held behind a pending host callback: its own copy
// of the arguments, and references on the kernel and the buffers.
struct HeldUntypedLaunch {
  LoadedKernel* kernel;
  ThreadDim threads;
  BlockDim blocks;
  std::vector<KernelArg> args;
  std::vector<std::byte> data;
  std::uint64_t shared_bytes;
  const std::string* name;
};

inline bool RunHeldUntypedLaunch(StreamState& stream, void* payload) {
  const std::unique_ptr<HeldUntypedLaunch> l(static_cast<HeldUntypedLaunch*>(payload));
  if (!stream.Failed()) {
    if (Status status =
            LaunchUntyped(stream, *l->kernel, l->threads, l->blocks, l->args, l->data.data(), l->shared_bytes, l->name);
        !status.ok()) {
      stream.Fail(std::move(status));
    }
  }
  for (const KernelArg& arg : l->args) {
    if (arg.kind == KernelParamKind::kDevicePointer) ReleaseBuffer(arg.memory);
  }
  l->kernel->Release();
  return false;
}

[[gnu::noinline]] inline Status DivertedUntypedLaunch(StreamState& stream, LoadedKernel& kernel,
                                                      const ThreadDim& threads, const BlockDim& blocks,
                                                      const KernelArgs& args, std::uint64_t shared_bytes,
                                                      const std::string* name) {
  if (stream.Failed()) return Status();  // skipped, as on every backend
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckSizes(kernel, threads, shared_bytes, NameOf(name)));
  std::optional<Status> held = HoldIfPending(stream, [&]() -> Status {
    std::unique_ptr<HeldUntypedLaunch> payload;
    try {
      std::size_t bytes = 0;
      for (const KernelArg& arg : args.args()) {
        if (arg.kind == KernelParamKind::kScalar) bytes = std::max(bytes, arg.offset + arg.size);
      }
      payload.reset(new HeldUntypedLaunch{&kernel,
                                          threads,
                                          blocks,
                                          {args.args().begin(), args.args().end()},
                                          {args.data(), args.data() + bytes},
                                          shared_bytes,
                                          name});
      stream.held.push_back({payload.get(), &RunHeldUntypedLaunch});
    } catch (...) {
      return HoldFailed(stream, "ThenLaunch");
    }
    kernel.Retain();
    for (const KernelArg& arg : payload->args) {
      if (arg.kind == KernelParamKind::kDevicePointer) RetainBuffer(arg.memory);
    }
    (void)payload.release();  // owned by the held entry now
    return Status();
  });
  if (held) return *held;
  return LaunchUntyped(stream, kernel, threads, blocks, args.args(), args.data(), shared_bytes, name);
}

}  // namespace streamexecutor::opencl_detail
