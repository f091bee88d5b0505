// The launch path: arguments through clSetKernelArg, then one
// clEnqueueNDRangeKernel. Nothing here allocates in the steady state (a
// sub-buffer is created once per distinct slice and then found in the cache)
// and the plain launch has no indirect call (the general one sets its
// arguments through one, LaunchSettingArgs).
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/detail/function_ref.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"
#include "streamexecutor/opencl/memory.hpp"
#include "streamexecutor/opencl/runtime.hpp"

namespace streamexecutor::opencl_detail {

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status ArgError(std::string_view call, cl_int error, cl_uint index, const std::string* name,
                                    const Executor& e) {
  return ClError(call, error, "for argument {} of kernel '{}' on {}", index, name ? *name : std::string("?"), e.label);
}
#else
STREAMEXECUTOR_DECL Status ArgError(std::string_view call, cl_int error, cl_uint index, const std::string* name,
                                    const Executor& e);
#endif

// Error paths stay out of line, so that the success path of SetArg is a call
// and a test, small enough to inline into every launch.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::noinline, gnu::cold]] STREAMEXECUTOR_DECL bool FailArg(Status& failure, cl_int error, cl_uint index,
                                                              const std::string* name, const Executor& e) {
  failure = ArgError("clSetKernelArg", error, index, name, e);
  return false;
}
#else
[[gnu::noinline, gnu::cold]] STREAMEXECUTOR_DECL bool FailArg(Status& failure, cl_int error, cl_uint index,
                                                              const std::string* name, const Executor& e);
#endif

// A view with a nonzero offset (docs/opencl.md, "Slices"): the uncommon case,
// kept out of line like the error paths.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::noinline, gnu::cold]] STREAMEXECUTOR_DECL Status SetSliceArg(LoadedKernel& kernel, cl_uint index,
                                                                    const DeviceMemoryBase& view,
                                                                    const std::string* name) {
  Executor& e = *kernel.executor;
  cl_mem parent = Buffer(view);
  if (e.slices == SliceScheme::kSvmPointer) {
    // Only SVM storage may be passed as a pointer: an adopted buffer may use
    // ordinary host memory (CL_MEM_USE_HOST_PTR), or none, and takes the
    // sub-buffer route below.
    void* base = Info<void*>(clGetMemObjectInfo, parent, CL_MEM_HOST_PTR);
    if (base != nullptr && Info<cl_bool>(clGetMemObjectInfo, parent, CL_MEM_USES_SVM_POINTER) == CL_TRUE) {
      const cl_int error =
          clSetKernelArgSVMPointer(kernel.kernel, index, static_cast<std::byte*>(base) + view.offset());
      return error == CL_SUCCESS ? Status() : ArgError("clSetKernelArgSVMPointer", error, index, name, e);
    }
  }
  if (view.offset() % e.base_address_align != 0) {
    return MakeError(
        ErrorCode::kInvalidArgument,
        "ThenLaunch of kernel '{}' on {}: argument {} is a slice at byte offset {}, which is not a multiple "
        "of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN ({} bytes) that clCreateSubBuffer requires; slice "
        "at aligned offsets or pass the whole buffer and an index",
        name ? *name : std::string("?"), e.label, index, view.offset(), e.base_address_align);
  }
  cl_mem sub = nullptr;
  {
    std::lock_guard<std::mutex> lock(e.mutex);
    const auto key = std::make_tuple(parent, view.offset(), view.size());
    if (auto it = e.sub_buffers.find(key); it != e.sub_buffers.end()) {
      sub = it->second;
    } else {
      const cl_buffer_region region{view.offset(), view.size()};
      cl_int error = CL_SUCCESS;
      // Access flags inherited: an adopted read-only buffer gives read-only slices.
      sub = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &error);
      if (error != CL_SUCCESS) {
        return ClError("clCreateSubBuffer", error, "for argument {} of kernel '{}' on {} ({} bytes at offset {})",
                       index, name ? *name : std::string("?"), e.label, view.size(), view.offset());
      }
      e.sub_buffers.emplace(key, sub);
    }
  }
  const cl_int error = clSetKernelArg(kernel.kernel, index, sizeof(cl_mem), &sub);
  return error == CL_SUCCESS ? Status() : ArgError("clSetKernelArg", error, index, name, e);
}
#else
[[gnu::noinline, gnu::cold]] STREAMEXECUTOR_DECL Status SetSliceArg(LoadedKernel& kernel, cl_uint index,
                                                                    const DeviceMemoryBase& view,
                                                                    const std::string* name);
#endif

// One argument that needs one clSetKernelArg of a plain value: a whole
// buffer, or a scalar of the kernel's own type.
template <typename P, typename A>
[[gnu::always_inline]] inline cl_int SetPlainArg(cl_kernel kernel, cl_uint index, const A& arg) {
  using V = std::remove_cv_t<P>;
  if constexpr (is_device_memory_pointer_v<V>) {
    const cl_mem buffer = Buffer(arg);
    return clSetKernelArg(kernel, index, sizeof(cl_mem), &buffer);
  } else {
    static_assert(sizeof(A) == sizeof(V));  // detail::ArgumentAsPassed gives the kernel's own type
    return clSetKernelArg(kernel, index, sizeof(V), &arg);
  }
}

// True on success; on failure stores the error in `failure`. A bool rather
// than a Status so that the success path moves no Status per argument.
template <typename P>
[[gnu::always_inline]] inline bool SetArg(LoadedKernel& kernel, cl_uint index, const PackedArgT<P>& packed,
                                          const std::string* name, Status& failure) {
  using V = std::remove_cv_t<P>;
  cl_int error = CL_SUCCESS;
  if constexpr (is_device_memory_pointer_v<V>) {
    if (packed.offset() != 0) [[unlikely]] {
      Status status = SetSliceArg(kernel, index, packed, name);
      if (status.ok()) return true;
      failure = std::move(status);
      return false;
    }
    error = SetPlainArg<P>(kernel.kernel, index, packed);
  } else if constexpr (is_shared_device_memory_v<V>) {
    // __local of the launch's size; OpenCL refuses 0 bytes, so an empty
    // request reserves one element.
    const std::size_t bytes = packed.size() ? packed.size() : sizeof(typename V::ElementType);
    error = clSetKernelArg(kernel.kernel, index, bytes, nullptr);
  } else {
    error = SetPlainArg<P>(kernel.kernel, index, packed);
  }
  if (error == CL_SUCCESS) [[likely]]
    return true;
  return FailArg(failure, error, index, name, *kernel.executor);
}

template <typename... Params, std::size_t... I>
[[gnu::always_inline]] inline Status SetArgs(LoadedKernel& kernel, const PackedArgs<Params...>& args,
                                             const std::string* name, std::index_sequence<I...>) {
  Status failure;
  (SetArg<Params>(kernel, static_cast<cl_uint>(I), std::get<I>(args), name, failure) && ...);
  ++kernel.arg_generation;  // prepared launches of this kernel must set theirs again
  return failure;
}

// Bytes of __local memory a SharedDeviceMemory argument asks for (as SetArg
// reserves them), saturated so that the sum cannot wrap.
template <typename P>
constexpr std::uint64_t SharedArgBytes(const PackedArgT<P>& packed) {
  using V = std::remove_cv_t<P>;
  if constexpr (is_shared_device_memory_v<V>) {
    return packed.size() ? std::min<std::uint64_t>(packed.size(), std::uint64_t{1} << 62)
                         : sizeof(typename V::ElementType);
  } else {
    return 0;
  }
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LocalMemoryTooLarge(const LoadedKernel& kernel,
                                                                            std::string_view name,
                                                                            std::uint64_t total) {
  return MakeError(ErrorCode::kResourceExhausted,
                   "ThenLaunch of kernel '{}' on {}: {} bytes of __local memory ({} static in the kernel, {} from "
                   "SharedDeviceMemory arguments) exceed the device's CL_DEVICE_LOCAL_MEM_SIZE of {}",
                   name, kernel.executor->label, total, kernel.static_local_bytes, total - kernel.static_local_bytes,
                   kernel.device_local_bytes);
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LocalMemoryTooLarge(const LoadedKernel& kernel,
                                                                            std::string_view name, std::uint64_t total);
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status TooManyThreads(const LoadedKernel& kernel,
                                                                       const ThreadDim& threads,
                                                                       std::string_view kernel_name) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "ThenLaunch of kernel '{}' on {}: {}x{}x{} = {} threads per block exceed this kernel's "
                   "CL_KERNEL_WORK_GROUP_SIZE of {} (the compiled kernel's own limit, at most the device's)",
                   kernel_name, kernel.executor->label, threads.x, threads.y, threads.z, threads.Count(),
                   kernel.work_group_size);
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status TooManyThreads(const LoadedKernel& kernel,
                                                                       const ThreadDim& threads,
                                                                       std::string_view kernel_name);
#endif

// What the driver would refuse, or abort on, checked before any enqueue.
// `dynamic_local_bytes`: the __local memory the arguments ask for.
[[gnu::always_inline]] inline Status CheckSizes(const LoadedKernel& kernel, const ThreadDim& threads,
                                                std::uint64_t dynamic_local_bytes, std::string_view kernel_name) {
  if (threads.Count() > kernel.work_group_size) [[unlikely]]
    return TooManyThreads(kernel, threads, kernel_name);
  const std::uint64_t local_bytes = kernel.static_local_bytes + dynamic_local_bytes;
  if (local_bytes > kernel.device_local_bytes) [[unlikely]] {
    return LocalMemoryTooLarge(kernel, kernel_name, local_bytes);
  }
  return Status();
}

// The __local memory the launch's SharedDeviceMemory arguments ask for.
template <typename... Params>
[[gnu::always_inline]] inline std::uint64_t DynamicLocalBytes(const PackedArgs<Params...>& args) {
  std::uint64_t dynamic_local_bytes = 0;
  if constexpr ((is_shared_device_memory_v<std::remove_cv_t<Params>> || ...)) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((dynamic_local_bytes += SharedArgBytes<Params>(std::get<I>(args))), ...);
    }(std::index_sequence_for<Params...>{});
  }
  return dynamic_local_bytes;
}

template <typename... Params>
[[gnu::always_inline]] inline Status CheckLaunchSizes(const LoadedKernel& kernel, const ThreadDim& threads,
                                                      const PackedArgs<Params...>& args, std::string_view kernel_name) {
  return CheckSizes(kernel, threads, DynamicLocalBytes<Params...>(args), kernel_name);
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status EnqueueFailed(cl_int error, const Executor& e,
                                                                      const ThreadDim& threads, const BlockDim& blocks,
                                                                      std::string_view kernel_name) {
  return ClError("clEnqueueNDRangeKernel", error,
                 "for kernel '{}' on {}: global size {}x{}x{}, local size {}x{}x{} (blocks {}x{}x{})", kernel_name,
                 e.label, blocks.x * threads.x, blocks.y * threads.y, blocks.z * threads.z, threads.x, threads.y,
                 threads.z, blocks.x, blocks.y, blocks.z);
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status EnqueueFailed(cl_int error, const Executor& e,
                                                                      const ThreadDim& threads, const BlockDim& blocks,
                                                                      std::string_view kernel_name);
#endif

// The global and local sizes of a launch: ThreadDim is the local size,
// BlockDim x ThreadDim the global size. The products cannot wrap: every
// launch form has passed detail::FitsDevice first, and the OpenCL device
// description bounds blocks per dimension by SIZE_MAX / the work-item limit
// (describe.hpp).
// Entries past `dims` stay unset: clEnqueueNDRangeKernel reads work_dim of them.
struct NdRange {
  std::size_t global[3];
  std::size_t local[3];
  cl_uint dims = 1;  // only the dimensions in use: drivers do per-dimension work for each

  [[gnu::always_inline]] NdRange(const ThreadDim& threads, const BlockDim& blocks) {
    local[0] = threads.x;
    global[0] = blocks.x * threads.x;
    // Every dimension is at least 1 (FitsDevice), so an OR of the others is 1
    // exactly when the launch is one-dimensional, the common case: one product.
    if ((threads.y | threads.z | blocks.y | blocks.z) == 1) [[likely]]
      return;
    local[1] = threads.y;
    local[2] = threads.z;
    global[1] = blocks.y * threads.y;
    global[2] = blocks.z * threads.z;
    dims = global[2] > 1 ? 3 : 2;
  }
};

// The enqueue every launch form but the typed one shares: `set_args()` sets
// the arguments on the cl_kernel under its lock (prepared, run-time typed,
// the typed launch's general path), then one clEnqueueNDRangeKernel. The
// sizes are checked by the caller.
template <typename SetArgsFn>
[[gnu::always_inline]] inline Status EnqueueLaunch(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads,
                                                   const BlockDim& blocks, std::string_view kernel_name,
                                                   SetArgsFn&& set_args) {
  const NdRange range(threads, blocks);
  std::lock_guard<streamexecutor::detail::SpinLock> lock(kernel.launch_lock);
  STREAMEXECUTOR_RETURN_IF_ERROR(set_args());
  const cl_int error = clEnqueueNDRangeKernel(stream.queue, kernel.kernel, range.dims, nullptr, range.global,
                                              range.local, 0, nullptr, nullptr);
  if (error != CL_SUCCESS) [[unlikely]] {
    return EnqueueFailed(error, *kernel.executor, threads, blocks, kernel_name);
  }
  return Status();
}

inline std::string_view NameOf(const std::string* name) {
  return name ? std::string_view(*name) : std::string_view("?");
}

// The general launch's sizes check and enqueue: one copy for every
// signature, which only sets its arguments (`set_args`, under the kernel's lock).
[[gnu::noinline]] inline Status LaunchSettingArgs(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads,
                                                  const BlockDim& blocks, std::uint64_t dynamic_local_bytes,
                                                  const std::string* name,
                                                  streamexecutor::detail::FunctionRef<Status()> set_args) {
  const std::string_view kernel_name = NameOf(name);
  if (Status sizes = CheckSizes(kernel, threads, dynamic_local_bytes, kernel_name); !sizes.ok()) [[unlikely]] {
    return sizes;
  }
  return EnqueueLaunch(stream, kernel, threads, blocks, kernel_name, set_args);
}

// The general launch from packed arguments: GeneralLaunch, DivertedLaunch
// and a held launch's RunHeldLaunch share one copy per signature (the plain
// path is FastLaunch).
template <typename... Params>
[[gnu::noinline]] Status LaunchKernel(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads,
                                      const BlockDim& blocks, const PackedArgs<Params...>& args,
                                      const std::string* name) {
  return LaunchSettingArgs(stream, kernel, threads, blocks, DynamicLocalBytes<Params...>(args), name, [&] {
    return SetArgs<Params...>(kernel, args, name, std::index_sequence_for<Params...>{});
  });
}

// ---- The typed launch (TypedLaunch, at the end) -----------------------------------
// Split so that a successful launch builds, moves and destroys no Status and
// the compiler keeps its arguments in registers:
// - FastLaunchApplies: no side effect; false sends the launch down the
//   general path (GeneralLaunch, out of line) before anything is set;
// - FastLaunch: the arguments and the enqueue, saying only where it stopped;
// - LaunchFaultStatus (cold) turns that into the message.
// The out-of-line calls get copies (the dimensions as integers, the packed
// arguments built for them): an address of the caller's objects reaching an
// out-of-line call makes the compiler keep those objects in memory.

enum class LaunchStop : std::uint8_t {
  kSetArg,   // clSetKernelArg failed
  kEnqueue,  // clEnqueueNDRangeKernel failed
};

// Written only when the launch fails.
struct LaunchFault {
  LaunchStop stop;
  cl_uint index;
  cl_int error;
};

template <typename P, typename A>
[[gnu::always_inline]] inline bool NeedsGeneralPath(const A& arg) {
  if constexpr (is_device_memory_pointer_v<std::remove_cv_t<P>>)
    return arg.offset() != 0;  // a slice: a sub-buffer
  else
    return false;
}

// The stream runs launches now (no host callback pending, no failure), the
// threads fit the compiled kernel (launch_limit folds CL_KERNEL_WORK_GROUP_SIZE
// and whether its static __local memory fits the device into one compare),
// and no argument is a slice (which needs a sub-buffer).
template <typename... Params, typename... Args>
[[gnu::always_inline]] inline bool FastLaunchApplies(const StreamState& stream, const LoadedKernel& kernel,
                                                     const ThreadDim& threads, const Args&... args) {
  return !stream.Diverted() && threads.Count() <= kernel.launch_limit && !(NeedsGeneralPath<Params>(args) || ...);
}

// Every argument in order, each index a constant; stops at the first failure.
template <typename... Params, std::size_t... I, typename... Args>
[[gnu::always_inline]] inline bool SetPlainArgs(cl_kernel kernel, cl_int& error, cl_uint& failed,
                                                std::index_sequence<I...>, const Args&... args) {
  return (((error = SetPlainArg<Params>(kernel, cl_uint{I}, args)) == CL_SUCCESS || (failed = cl_uint{I}, false)) &&
          ...);
}

// The launch as the raw API writes it, once FastLaunchApplies: true when
// enqueued; false with `fault` saying where it stopped.
template <typename... Params, typename... Args>
[[gnu::always_inline]] inline bool FastLaunch(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads,
                                              const BlockDim& blocks, LaunchFault& fault, const Args&... args) {
  const NdRange range(threads, blocks);
  std::lock_guard<streamexecutor::detail::SpinLock> lock(kernel.launch_lock);
  cl_int error = CL_SUCCESS;
  cl_uint failed = 0;
  const bool set = SetPlainArgs<Params...>(kernel.kernel, error, failed, std::index_sequence_for<Args...>{}, args...);
  ++kernel.arg_generation;  // prepared launches of this kernel must set theirs again
  if (!set) [[unlikely]] {
    fault = {LaunchStop::kSetArg, failed, error};
    return false;
  }
  error = clEnqueueNDRangeKernel(stream.queue, kernel.kernel, range.dims, nullptr, range.global, range.local, 0,
                                 nullptr, nullptr);
  if (error != CL_SUCCESS) [[unlikely]] {
    fault = {LaunchStop::kEnqueue, 0, error};
    return false;
  }
  return true;
}

// The dimensions as six integers, here and in GeneralLaunch: see
// Stream::RefuseLaunch.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFaultStatus(LaunchFault fault, const LoadedKernel& kernel,
                                                                          std::uint64_t tx, std::uint64_t ty,
                                                                          std::uint64_t tz, std::uint64_t bx,
                                                                          std::uint64_t by, std::uint64_t bz,
                                                                          const std::string* name) {
  const ThreadDim threads(tx, ty, tz);
  const BlockDim blocks(bx, by, bz);
  if (fault.stop == LaunchStop::kSetArg) {
    return ArgError("clSetKernelArg", fault.error, fault.index, name, *kernel.executor);
  }
  return EnqueueFailed(fault.error, *kernel.executor, threads, blocks, NameOf(name));
}
#else
[[gnu::cold, gnu::noinline]] STREAMEXECUTOR_DECL Status LaunchFaultStatus(LaunchFault fault, const LoadedKernel& kernel,
                                                                          std::uint64_t tx, std::uint64_t ty,
                                                                          std::uint64_t tz, std::uint64_t bx,
                                                                          std::uint64_t by, std::uint64_t bz,
                                                                          const std::string* name);
#endif

template <typename... Params>
[[gnu::noinline]] Status DivertedLaunch(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads,
                                        const BlockDim& blocks, const PackedArgs<Params...>& args,
                                        const std::string* name);  // held.hpp

// Everything FastLaunchApplies turns away: a held or skipped stream, a slice,
// __local memory, sizes the kernel refuses (with the message that says so).
template <typename... Params>
[[gnu::noinline]] Status GeneralLaunch(StreamState& stream, LoadedKernel& kernel, std::uint64_t tx, std::uint64_t ty,
                                       std::uint64_t tz, std::uint64_t bx, std::uint64_t by, std::uint64_t bz,
                                       const PackedArgs<Params...>& args, const std::string* name) {
  const ThreadDim threads(tx, ty, tz);
  const BlockDim blocks(bx, by, bz);
  if (stream.Diverted()) return DivertedLaunch<Params...>(stream, kernel, threads, blocks, args, name);
  return LaunchKernel<Params...>(stream, kernel, threads, blocks, args, name);
}

// The typed launch: the plain path inline, everything else out of line.
// `args` are what the plain path reads (detail::ArgumentAsPassed), `packed()` gives the
// packed arguments for the general path: the plain path never takes the
// address of an argument tuple, so the compiler keeps the values in
// registers.
template <typename... Params, typename Packed, typename... Args>
[[gnu::always_inline]] inline Status TypedLaunch(StreamState& stream, LoadedKernel& kernel, const ThreadDim& threads,
                                                 const BlockDim& blocks, const std::string* name, Packed&& packed,
                                                 const Args&... args) {
  if constexpr ((is_shared_device_memory_v<std::remove_cv_t<Params>> || ...)) {
    // __local memory is sized per launch and checked against the device's there.
    return GeneralLaunch<Params...>(stream, kernel, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z,
                                    packed(), name);
  } else {
    if (!FastLaunchApplies<Params...>(stream, kernel, threads, args...)) [[unlikely]] {
      return GeneralLaunch<Params...>(stream, kernel, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z,
                                      packed(), name);
    }
    LaunchFault fault;
    if (FastLaunch<Params...>(stream, kernel, threads, blocks, fault, args...)) [[likely]]
      return Status();
    return LaunchFaultStatus(fault, kernel, threads.x, threads.y, threads.z, blocks.x, blocks.y, blocks.z, name);
  }
}

}  // namespace streamexecutor::opencl_detail
