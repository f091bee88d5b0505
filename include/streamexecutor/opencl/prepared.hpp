// Prepared launches on OpenCL (core/prepared_launch.hpp): clSetKernelArg only
// for the arguments changed since this PreparedLaunch last set them.
//
// The cl_kernel is shared by every launch of its TypedKernel (ordinary,
// prepared, run-time typed, recorded into a command buffer), and each of them
// overwrites its arguments. So skipping is allowed only when nothing else
// has set arguments since: every setting bumps LoadedKernel::arg_generation
// under launch_lock, and a prepared launch remembers the generation its own
// setting produced. Equal: the cl_kernel still holds its arguments, and only
// those changed by Set<I> are set again. Different: all are set.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "streamexecutor/opencl/launch.hpp"

namespace streamexecutor::opencl_detail {

template <typename... Params, std::size_t... I>
Status SetChangedArgs(LoadedKernel& kernel, const PackedArgs<Params...>& args, std::uint64_t changed,
                      const std::string* name, std::index_sequence<I...>) {
  Status failure;
  ((((changed >> I) & 1) == 0 || SetArg<Params>(kernel, static_cast<cl_uint>(I), std::get<I>(args), name, failure)) &&
   ...);
  return failure;
}

template <typename... Params>
Status LaunchPrepared(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads, const BlockDim& blocks,
                      const PackedArgs<Params...>& args, const std::string* name, std::uint64_t& stamp,
                      std::uint64_t& changed) {
  const std::string_view kernel_name = NameOf(name);
  if (Status sizes = CheckLaunchSizes<Params...>(kernel, threads, args, kernel_name); !sizes.ok()) [[unlikely]] {
    return sizes;
  }
  return EnqueueLaunch(stream, kernel, threads, blocks, kernel_name, [&]() -> Status {
    const std::uint64_t to_set = stamp == kernel.arg_generation ? changed : ~std::uint64_t{0};
    Status failure = SetChangedArgs<Params...>(kernel, args, to_set, name, std::index_sequence_for<Params...>{});
    ++kernel.arg_generation;
    // After a failed clSetKernelArg the stamp stays old: the next launch sets all.
    if (!failure.ok()) [[unlikely]]
      return failure;
    stamp = kernel.arg_generation;
    changed = 0;
    return Status();
  });
}

}  // namespace streamexecutor::opencl_detail
