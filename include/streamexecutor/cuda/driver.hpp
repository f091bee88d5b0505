// The CUDA driver API, loaded at run time. A program built with the CUDA
// backend must still start on machines without an NVIDIA driver, so nothing
// links against libcuda: libcuda.so.1 is dlopen'ed on first use and every
// entry point is resolved once into a table of function pointers. cuda.h and
// cudaTypedefs.h are needed at build time only, for the types and for the
// PFN_<name>_v<version> typedefs that pin each entry point's ABI version.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/errors.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

namespace streamexecutor::cuda_detail {

// X(name, version): the entry point and the CUDA version whose ABI we call.
// Asking cuGetProcAddress for that exact version returns the variant that
// matches the typedef, whatever the installed driver's default is.
#define SE_CUDA_REQUIRED_ENTRY_POINTS(X)               \
  X(cuDriverGetVersion, 2020)                          \
  X(cuDeviceGetCount, 2000)                            \
  X(cuDeviceGet, 2000)                                 \
  X(cuDeviceGetName, 2000)                             \
  X(cuDeviceGetAttribute, 2000)                        \
  X(cuDeviceTotalMem, 3020)                            \
  X(cuDevicePrimaryCtxRetain, 7000)                    \
  X(cuDevicePrimaryCtxRelease, 11000)                  \
  X(cuCtxSetCurrent, 4000)                             \
  X(cuCtxGetCurrent, 4000)                             \
  X(cuCtxSynchronize, 2000)                            \
  X(cuMemAlloc, 3020)                                  \
  X(cuMemFree, 3020)                                   \
  X(cuMemAllocManaged, 6000)                           \
  X(cuMemHostAlloc, 2020)                              \
  X(cuMemFreeHost, 2000)                               \
  X(cuMemHostRegister, 6050)                           \
  X(cuMemHostUnregister, 4000)                         \
  X(cuMemHostGetDevicePointer, 3020)                   \
  X(cuMemcpyHtoD, 3020)                                \
  X(cuMemcpyDtoH, 3020)                                \
  X(cuMemcpyDtoD, 3020)                                \
  X(cuMemcpyHtoDAsync, 3020)                           \
  X(cuMemcpyDtoHAsync, 3020)                           \
  X(cuMemcpyDtoDAsync, 3020)                           \
  X(cuMemcpyPeerAsync, 4000)                           \
  X(cuMemsetD8, 3020)                                  \
  X(cuMemsetD32, 3020)                                 \
  X(cuMemsetD8Async, 3020)                             \
  X(cuMemsetD32Async, 3020)                            \
  X(cuStreamCreate, 2000)                              \
  X(cuStreamCreateWithPriority, 5050)                  \
  X(cuCtxGetStreamPriorityRange, 5050)                 \
  X(cuStreamDestroy, 4000)                             \
  X(cuStreamSynchronize, 2000)                         \
  X(cuStreamWaitEvent, 3020)                           \
  X(cuStreamGetCtx, 9020)                              \
  X(cuPointerGetAttribute, 4000)                       \
  X(cuMemGetAddressRange, 3020)                        \
  X(cuEventCreate, 2000)                               \
  X(cuEventDestroy, 4000)                              \
  X(cuEventRecord, 2000)                               \
  X(cuEventQuery, 2000)                                \
  X(cuEventSynchronize, 2000)                          \
  X(cuEventElapsedTime, 2000)                          \
  X(cuLaunchHostFunc, 10000)                           \
  X(cuModuleLoadDataEx, 2010)                          \
  X(cuModuleUnload, 2000)                              \
  X(cuModuleGetFunction, 2000)                         \
  X(cuLaunchKernel, 4000)                              \
  X(cuFuncGetAttribute, 2020)                          \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
  X(cuOccupancyMaxPotentialBlockSize, 6050)            \
  X(cuDeviceCanAccessPeer, 4000)                       \
  X(cuCtxEnablePeerAccess, 4000)                       \
  X(cuGraphCreate, 10000)                              \
  X(cuGraphDestroy, 10000)                             \
  X(cuGraphAddKernelNode, 12000)                       \
  X(cuGraphAddMemcpyNode, 10000)                       \
  X(cuGraphAddMemsetNode, 10000)                       \
  X(cuGraphAddHostNode, 10000)                         \
  X(cuGraphAddEventRecordNode, 11010)                  \
  X(cuGraphAddEventWaitNode, 11010)                    \
  X(cuGraphInstantiateWithFlags, 11040)                \
  X(cuGraphLaunch, 10000)                              \
  X(cuGraphExecDestroy, 10000)                         \
  X(cuGraphKernelNodeSetParams, 12000)                 \
  X(cuGraphMemcpyNodeSetParams, 10000)                 \
  X(cuGraphMemsetNodeSetParams, 10000)                 \
  X(cuGraphExecKernelNodeSetParams, 12000)             \
  X(cuGraphExecMemcpyNodeSetParams, 10020)             \
  X(cuGraphExecMemsetNodeSetParams, 10020)             \
  X(cuGraphClone, 10000)                               \
  X(cuGraphNodeFindInClone, 10000)                     \
  X(cuGraphHostNodeSetParams, 10000)                   \
  X(cuGraphAddChildGraphNode, 10000)                   \
  X(cuGraphAddEmptyNode, 10000)                        \
  X(cuGraphKernelNodeGetParams, 12000)                 \
  X(cuGraphMemcpyNodeGetParams, 10000)                 \
  X(cuGraphMemsetNodeGetParams, 10000)                 \
  X(cuGraphHostNodeGetParams, 10000)                   \
  X(cuGraphEventRecordNodeGetEvent, 11010)             \
  X(cuGraphEventWaitNodeGetEvent, 11010)               \
  X(cuGraphChildGraphNodeGetGraph, 10000)              \
  X(cuGraphGetNodes, 10000)                            \
  X(cuGraphNodeGetType, 10000)                         \
  X(cuStreamBeginCapture, 10010)                       \
  X(cuStreamEndCapture, 10000)                         \
  X(cuStreamQuery, 2000)                               \
  X(cuIpcGetMemHandle, 4010)                           \
  X(cuIpcOpenMemHandle, 11000)                         \
  X(cuIpcCloseMemHandle, 4010)                         \
  X(cuIpcGetEventHandle, 4010)                         \
  X(cuIpcOpenEventHandle, 4010)

// Newer than the oldest driver we accept: null where the driver lacks them.
#define SE_CUDA_OPTIONAL_ENTRY_POINTS(X)   \
  X(cuFuncGetParamInfo, 12040)             \
  X(cuLaunchKernelEx, 11060)               \
  X(cuStreamWaitValue32, 11070)            \
  X(cuStreamWriteValue32, 11070)           \
  X(cuStreamWaitValue64, 11070)            \
  X(cuStreamWriteValue64, 11070)           \
  X(cuMemPrefetchAsync, 12020)             \
  X(cuMemAdvise, 12020)                    \
  X(cuMemPoolCreate, 11020)                \
  X(cuMemPoolDestroy, 11020)               \
  X(cuMemAllocFromPoolAsync, 11020)        \
  X(cuMemFreeAsync, 11020)                 \
  X(cuMemPoolTrimTo, 11020)                \
  X(cuMemPoolSetAttribute, 11020)          \
  X(cuMemPoolGetAttribute, 11020)          \
  X(cuGraphConditionalHandleCreate, 12030) \
  X(cuGraphAddNode, 12020)                 \
  X(cuGraphGetEdges, 12030)

struct DriverApi {
#define SE_CUDA_DECLARE(name, version) PFN_##name##_v##version name = nullptr;
  SE_CUDA_REQUIRED_ENTRY_POINTS(SE_CUDA_DECLARE)
  SE_CUDA_OPTIONAL_ENTRY_POINTS(SE_CUDA_DECLARE)
#undef SE_CUDA_DECLARE
  // Resolved with dlsym before anything else, so that a stub or broken driver
  // is reported by cuInit itself and errors have names from the start.
  PFN_cuInit_v2000 cuInit = nullptr;
  PFN_cuGetErrorName_v6000 cuGetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 cuGetErrorString = nullptr;
  int driver_version = 0;
  void* library = nullptr;

  // "CUDA_ERROR_OUT_OF_MEMORY", from the driver when it knows the code.
  std::string_view ErrorName(CUresult result) const;
  std::string_view ErrorString(CUresult result) const {
    const char* text = nullptr;
    if (cuGetErrorString != nullptr && cuGetErrorString(result, &text) == CUDA_SUCCESS && text != nullptr) return text;
    return {};
  }
  // An error Status naming the driver call, the error and what it was doing.
  template <typename... Args>
  Status Error(CUresult result, std::string_view call, ::streamexecutor::detail::FormatString<Args...> context,
               Args&&... args) const {
    const std::string_view text = ErrorString(result);
    return Status(CodeForResult(result), ::streamexecutor::detail::Format(
                                             "{} failed with {} ({}{}{}) {}", call, ErrorName(result),
                                             static_cast<int>(result), text.empty() ? "" : ": ", text,
                                             ::streamexecutor::detail::Format(context, std::forward<Args>(args)...)));
  }
};

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string_view DriverApi::ErrorName(CUresult result) const {
  const char* name = nullptr;
  if (cuGetErrorName != nullptr && cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) return name;
  return FallbackErrorName(result);
}
#endif

// The library name the loader opens; tests point LD_LIBRARY_PATH elsewhere
// to substitute the toolkit's stub or a test double.
inline constexpr const char* kDriverLibrary = "libcuda.so.1";

struct DriverLoad {
  DriverApi api;
  Status status;
};

inline Status ResolveAll(DriverApi& api) {
  using GetProcAddress = PFN_cuGetProcAddress_v12000;
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(api.library, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "the CUDA driver in {} has no cuGetProcAddress_v2: driver version {} is older than 12.0, the "
                     "oldest this backend supports",
                     kDriverLibrary, api.driver_version);
  }
  auto resolve = [&](const char* name, void** slot, int version, bool required) -> Status {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
    const CUresult result = get_proc(name, slot, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (result == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && *slot != nullptr) return Status();
    *slot = nullptr;
    if (!required) return Status();
    if (result != CUDA_SUCCESS)
      return api.Error(result, "cuGetProcAddress", "resolving {} (ABI of CUDA {})", name, version);
    return MakeError(ErrorCode::kFailedPrecondition,
                     "the CUDA driver (version {}) has no entry point {} with the ABI of CUDA {} (query result {})",
                     api.driver_version, name, version, static_cast<int>(found));
  };
#define SE_CUDA_RESOLVE(name, version) \
  STREAMEXECUTOR_RETURN_IF_ERROR(resolve(#name, reinterpret_cast<void**>(&api.name), version, true));
  SE_CUDA_REQUIRED_ENTRY_POINTS(SE_CUDA_RESOLVE)
#undef SE_CUDA_RESOLVE
#define SE_CUDA_RESOLVE_OPTIONAL(name, version) \
  STREAMEXECUTOR_RETURN_IF_ERROR(resolve(#name, reinterpret_cast<void**>(&api.name), version, false));
  SE_CUDA_OPTIONAL_ENTRY_POINTS(SE_CUDA_RESOLVE_OPTIONAL)
#undef SE_CUDA_RESOLVE_OPTIONAL
  return Status();
}

inline DriverLoad LoadDriver() {
  DriverLoad load;
  DriverApi& api = load.api;
  // RTLD_LOCAL: the driver's symbols must not interpose on anything else.
  api.library = dlopen(kDriverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (api.library == nullptr) {
    const char* why = dlerror();
    load.status = MakeError(ErrorCode::kUnavailable,
                            "no CUDA driver: dlopen(\"{}\") failed: {} (install the NVIDIA driver, or put the "
                            "directory holding {} on LD_LIBRARY_PATH)",
                            kDriverLibrary, why ? why : "unknown reason", kDriverLibrary);
    return load;
  }
  api.cuInit = reinterpret_cast<PFN_cuInit_v2000>(dlsym(api.library, "cuInit"));
  api.cuGetErrorName = reinterpret_cast<PFN_cuGetErrorName_v6000>(dlsym(api.library, "cuGetErrorName"));
  api.cuGetErrorString = reinterpret_cast<PFN_cuGetErrorString_v6000>(dlsym(api.library, "cuGetErrorString"));
  auto driver_get_version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(dlsym(api.library, "cuDriverGetVersion"));
  if (api.cuInit == nullptr || driver_get_version == nullptr) {
    load.status = MakeError(ErrorCode::kUnavailable,
                            "{} was loaded but does not export cuInit/cuDriverGetVersion: "
                            "it is not a CUDA driver",
                            kDriverLibrary);
    return load;
  }
  if (const CUresult result = api.cuInit(0); result != CUDA_SUCCESS) {
    load.status = api.Error(result, "cuInit", "while initialising the CUDA driver from {}{}", kDriverLibrary,
                            result == CUDA_ERROR_STUB_LIBRARY
                                ? ": this is the CUDA toolkit's stub library, not a real driver (it lets programs "
                                  "link without a GPU); install the NVIDIA driver"
                            : result == CUDA_ERROR_NO_DEVICE ? ": the driver sees no CUDA device"
                                                             : "");
    return load;
  }
  if (const CUresult result = driver_get_version(&api.driver_version); result != CUDA_SUCCESS) {
    load.status = api.Error(result, "cuDriverGetVersion", "after cuInit");
    return load;
  }
  load.status = ResolveAll(api);
  return load;
}

// The process-wide table, loaded once. The library stays loaded until exit:
// unloading a driver while static destructors may still call it is unsafe.
// Exported: one driver table per process, however many shared libraries
// include these headers.
STREAMEXECUTOR_EXPORT inline const DriverLoad& Driver() {
  static const DriverLoad load = LoadDriver();
  return load;
}

// True on a thread while it runs one of our CUDA host functions (callbacks).
// The driver forbids CUDA calls there ("may return CUDA_ERROR_NOT_PERMITTED",
// or deadlock when the call waits for the stream that is running the host
// function), so every backend call checks it before touching the driver.
// Exported, with the flag inside an inline function: one flag per thread for
// the whole process, however many shared libraries include these headers.
STREAMEXECUTOR_EXPORT inline bool& InHostFunctionFlag() noexcept {
  static thread_local bool inside = false;
  return inside;
}

// How many threads are inside one of our host functions now. A thread always
// reads its own increment, so zero means the calling thread is in none: the
// usual answer costs one load of a global, where the thread-local alone is a
// __tls_get_addr call in every -fPIC unit (a shared library's launch path).
STREAMEXECUTOR_EXPORT inline constinit std::atomic<int> host_functions_running{0};

[[gnu::always_inline]] inline bool InHostFunction() noexcept {
  return host_functions_running.load(std::memory_order_relaxed) != 0 && InHostFunctionFlag();
}

// Marks the calling thread as inside a host function for its lifetime.
class HostFunctionScope {
 public:
  HostFunctionScope() : was_inside_(InHostFunctionFlag()) {
    host_functions_running.fetch_add(1, std::memory_order_relaxed);
    InHostFunctionFlag() = true;
  }
  ~HostFunctionScope() {
    InHostFunctionFlag() = was_inside_;
    host_functions_running.fetch_sub(1, std::memory_order_relaxed);
  }
  HostFunctionScope(const HostFunctionScope&) = delete;
  HostFunctionScope& operator=(const HostFunctionScope&) = delete;

 private:
  bool was_inside_;
};

[[gnu::cold]] inline Status InHostFunctionError() {
  return Status(ErrorCode::kFailedPrecondition,
                "cuda: a host callback (ThenDoHostCallback) may not call the CUDA driver: CUDA forbids CUDA calls "
                "inside a host function (they may fail or deadlock); enqueue the follow-up work from the thread that "
                "enqueued the callback, or wait on an Event it records");
}

// Where a context switch stopped. One byte rather than the call's name: a
// string_view member is two words the scope zeroes in memory on every call.
enum class DriverStep : std::uint8_t { kNone, kHostFunction, kCtxGetCurrent, kCtxSetCurrent };

// The driver call a step names; empty for kHostFunction (refused before the
// driver) and kNone.
constexpr std::string_view DriverStepCall(DriverStep step) {
  switch (step) {
    case DriverStep::kCtxGetCurrent: return "cuCtxGetCurrent";
    case DriverStep::kCtxSetCurrent: return "cuCtxSetCurrent";
    case DriverStep::kNone:
    case DriverStep::kHostFunction: break;
  }
  return {};
}

// Makes `context` current for one backend call. The current context is asked
// of the driver each time (cuCtxGetCurrent reads a thread-local inside the
// driver) rather than cached: a cache of our own goes stale as soon as other
// code (another library, the CUDA runtime) switches contexts on the thread.
// - ours already current: nothing to do (the hot path: one query);
// - another context current: switch, and give it back when the call returns;
// - none current: switch and leave ours, as the CUDA runtime leaves the primary
//   context current after its first call; there is nothing of the caller's to
//   give back, and the next call then takes the hot path.
class ContextScope {
 public:
  [[gnu::always_inline]] ContextScope(const DriverApi& api, CUcontext context) : api_(&api), context_(context) {
    if (InHostFunction()) [[unlikely]] {
      Fail(CUDA_ERROR_NOT_PERMITTED, DriverStep::kHostFunction);  // refused before the driver
      return;
    }
    CUcontext current = nullptr;
    if (const CUresult r = api.cuCtxGetCurrent(&current); r != CUDA_SUCCESS) [[unlikely]] {
      Fail(r, DriverStep::kCtxGetCurrent);
      return;
    }
    if (current == context) [[likely]]
      return;
    if (const CUresult r = api.cuCtxSetCurrent(context); r != CUDA_SUCCESS) [[unlikely]] {
      Fail(r, DriverStep::kCtxSetCurrent);
      return;
    }
    previous_ = current;  // null: nothing of the caller's to give back
  }
  [[gnu::always_inline]] ~ContextScope() {
    if (previous_ != nullptr) [[unlikely]]
      api_->cuCtxSetCurrent(previous_);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

  bool ok() const { return failure_ == CUDA_SUCCESS; }
  [[gnu::cold]] Status status() const { return Failure(*api_, failure_, step_, context_); }

  [[gnu::cold]] static Status Failure(const DriverApi& api, CUresult failure, DriverStep step, CUcontext context) {
    if (failure == CUDA_SUCCESS) return Status();
    if (step == DriverStep::kHostFunction) return InHostFunctionError();
    return api.Error(failure, DriverStepCall(step), "making the primary context {} current",
                     static_cast<const void*>(context));
  }

 private:
  void Fail(CUresult failure, DriverStep step) {
    failure_ = failure;
    step_ = step;
  }

  const DriverApi* api_;
  CUcontext context_;
  CUcontext previous_ = nullptr;  // the caller's context, restored on exit
  CUresult failure_ = CUDA_SUCCESS;
  DriverStep step_ = DriverStep::kNone;
};

}  // namespace streamexecutor::cuda_detail

// The entry-point lists are internal; the counting driver double (which must
// serve exactly these entry points) keeps them by defining this first.
#if !defined(STREAMEXECUTOR_KEEP_CUDA_ENTRY_POINT_LISTS)
#undef SE_CUDA_REQUIRED_ENTRY_POINTS
#undef SE_CUDA_OPTIONAL_ENTRY_POINTS
#endif
