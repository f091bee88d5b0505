// A counting test double of the CUDA driver, built as libcuda.so.1. It exists
// because no NVIDIA driver can exist on the machines that build and test this
// project; it is never a stand-in for a part that could run here.
//
// What it pretends: one device ("counting driver double"; two or more with
// SE_COUNTING_DOUBLE_DEVICES=n, each with its primary context, peers of each
// other) whose memory is host memory, so copies and fills really move bytes; modules are PTX text
// whose .entry parameter lists it parses, so cuModuleGetFunction fails for a
// missing kernel and cuFuncGetParamInfo answers real sizes; cuFuncGetAttribute
// and the occupancy calls answer from the resources the PTX declares, with a
// documented model (occupancy_double.inc). What it does not:
// run kernels (a launch is recorded and counted, nothing more) or enforce
// stream order (every call completes before it returns, which is one valid
// schedule of an in-order stream).
//
// Every entry point counts its calls; se_counting_double_fail_next makes the
// next call of one entry point fail with a chosen CUresult, so that error
// paths through the backend can be tested. Declarations of the query side:
// counting_driver_double.hpp.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "counting_driver_double.hpp"
#include "streamexecutor/detail/shared_pages.hpp"
#define STREAMEXECUTOR_KEEP_CUDA_ENTRY_POINT_LISTS 1  // the double serves exactly the backend's lists
#include "ptx_entries.hpp"
#include "streamexecutor/cuda/driver.hpp"

namespace {

using se_test::Function;
using se_test::Module;
using se_test::ParseEntries;

// Every entry point the backend resolves through cuGetProcAddress_v2 (the
// lists in cuda/driver.hpp, with the ABI version of each), so that the double
// cannot fall behind the backend: a new entry point there fails to compile
// here until the double implements it.
#define SE_DOUBLE_ENTRY_POINTS(X) SE_CUDA_REQUIRED_ENTRY_POINTS(X) SE_CUDA_OPTIONAL_ENTRY_POINTS(X)

// The entry points the backend dlsym's by name, counted like the others.
#define SE_DOUBLE_EXPORTED(X) X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuGetProcAddress_v2)

enum EntryIndex {
#define SE_DOUBLE_INDEX(name, ...) k_##name,
  SE_DOUBLE_ENTRY_POINTS(SE_DOUBLE_INDEX) SE_DOUBLE_EXPORTED(SE_DOUBLE_INDEX)
#undef SE_DOUBLE_INDEX
      kEntryCount
};

constexpr const char* kEntryNames[] = {
#define SE_DOUBLE_NAME(name, ...) #name,
    SE_DOUBLE_ENTRY_POINTS(SE_DOUBLE_NAME) SE_DOUBLE_EXPORTED(SE_DOUBLE_NAME)
#undef SE_DOUBLE_NAME
};

std::atomic<long> g_calls[kEntryCount];
std::atomic<int> g_fail_next[kEntryCount];  // CUresult to return once; 0: none

// Counts the call; a nonzero result is an injected failure to return.
// Set while a host function runs: the double holds callers to CUDA's rule that
// a host function makes no CUDA call, counting and refusing any it makes.
// Initial-exec, as the real driver's thread state is: a thread-local read is
// then one instruction, not a __tls_get_addr call per driver call, so the
// double does not inflate what the launch benchmarks count.
[[gnu::tls_model("initial-exec")]] thread_local bool t_in_host_function = false;
std::atomic<int> g_calls_from_host_functions{0};

inline CUresult Take(EntryIndex entry) {
  g_calls[entry].fetch_add(1, std::memory_order_relaxed);
  if (t_in_host_function) [[unlikely]] {
    g_calls_from_host_functions.fetch_add(1, std::memory_order_relaxed);
    return CUDA_ERROR_NOT_PERMITTED;
  }
  if (g_fail_next[entry].load(std::memory_order_relaxed) == 0) [[likely]]
    return CUDA_SUCCESS;
  return static_cast<CUresult>(g_fail_next[entry].exchange(0));
}

int IndexOf(std::string_view name) {
  for (int i = 0; i < kEntryCount; ++i) {
    if (name == kEntryNames[i]) return i;
  }
  return -1;
}

// ---- The pretend device -------------------------------------------------------

constexpr std::size_t kTotalMemory = std::size_t{4} << 30;
constexpr std::size_t kAlignment = 256;  // what cuMemAlloc guarantees

// Devices: one unless SE_COUNTING_DOUBLE_DEVICES asks for up to kMaxDevices.
constexpr int kMaxDevices = 4;
int DeviceCount() {
  static const int count = [] {
    const char* asked = std::getenv("SE_COUNTING_DOUBLE_DEVICES");
    const long n = asked != nullptr ? std::strtol(asked, nullptr, 10) : 1;
    return static_cast<int>(std::clamp<long>(n, 1, kMaxDevices));
  }();
  return count;
}
bool ValidDevice(CUdevice device) { return device >= 0 && device < DeviceCount(); }

struct Context {
  int retains = 0;
};
Context g_primary[kMaxDevices];  // one per device
// Another library's context: it may be made current, but the device's
// allocations and modules are not in it.
Context g_foreign;
[[gnu::tls_model("initial-exec")]] thread_local CUcontext tls_current = nullptr;

// The device whose primary context `context` is, or -1.
int PrimaryOrdinal(CUcontext context) {
  for (int i = 0; i < DeviceCount(); ++i) {
    if (context == reinterpret_cast<CUcontext>(&g_primary[i])) return i;
  }
  return -1;
}

// Calls that the real driver runs in the thread's current context fail
// without a primary one current (none, or another library's), so that a
// backend call made in the wrong context shows up in the tests.
CUresult NeedContext() { return PrimaryOrdinal(tls_current) >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }

std::mutex g_mutex;  // guards the registries below (not the launch record)
struct DeviceAllocation {
  std::size_t bytes;
  CUcontext context;
  bool managed = false;  // cuMemAllocManaged: prefetches and advice apply (managed_double.inc)
  void* pool = nullptr;  // the memory pool it came from (memory_pool_double.inc)
  SeCountingDoubleManaged hints{-1, -1, false, -1, -1, -1, -1, 0};
  bool imported = false;  // cuIpcOpenMemHandle mapped it (ipc_double.inc)
};
// Memory pools (memory_pool_double.inc): a pool allocation given to cuMemFree,
// and the releases that synchronizations make.
void PoolAllocationFreed(void* pool, std::size_t bytes);
void ReleasePoolsAboveThreshold();
std::map<CUdeviceptr, DeviceAllocation> g_device_allocations;
void UnshareIfExported(CUdeviceptr ptr);  // ipc_double.inc; under g_mutex

SeCountingDoubleLaunch g_last_launch;
bool g_launched = false;

int DeviceLimit(CUdevice_attribute which);  // the limits occupancy counts with: occupancy_double.inc
int ComputeCapability() {
  const char* asked = std::getenv("SE_COUNTING_DOUBLE_COMPUTE_CAPABILITY");
  return asked != nullptr ? std::atoi(asked) : 90;
}
int Attribute(CUdevice_attribute which) {
  switch (which) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 4;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    // SE_COUNTING_DOUBLE_COMPUTE_CAPABILITY=80 makes an older device (launch attributes' tests).
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return ComputeCapability() / 10;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return ComputeCapability() % 10;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return std::getenv("SE_COUNTING_DOUBLE_NO_COOPERATIVE") == nullptr;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return std::getenv("SE_COUNTING_DOUBLE_NO_POOLS") == nullptr;
    default: return DeviceLimit(which);
  }
}

// ---- Entry points ----------------------------------------------------------------

CUresult Double_cuDriverGetVersion(int* version) {
  if (CUresult r = Take(k_cuDriverGetVersion)) return r;
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult Double_cuDeviceGetCount(int* count) {
  if (CUresult r = Take(k_cuDeviceGetCount)) return r;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = DeviceCount();
  return CUDA_SUCCESS;
}
CUresult Double_cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = Take(k_cuDeviceGet)) return r;
  if (!ValidDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult Double_cuDeviceGetName(char* name, int length, CUdevice device) {
  if (CUresult r = Take(k_cuDeviceGetName)) return r;
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  const char text[] = "counting driver double (no GPU)";
  const std::size_t n = std::min(sizeof(text), static_cast<std::size_t>(length));
  std::memcpy(name, text, n);
  name[n - 1] = '\0';
  return CUDA_SUCCESS;
}
CUresult Double_cuDeviceGetAttribute(int* value, CUdevice_attribute which, CUdevice device) {
  if (CUresult r = Take(k_cuDeviceGetAttribute)) return r;
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  *value = Attribute(which);
  return CUDA_SUCCESS;
}
CUresult Double_cuDeviceTotalMem(std::size_t* bytes, CUdevice device) {
  if (CUresult r = Take(k_cuDeviceTotalMem)) return r;
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}
CUresult Double_cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (CUresult r = Take(k_cuDevicePrimaryCtxRetain)) return r;
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_primary[device].retains;
  *context = reinterpret_cast<CUcontext>(&g_primary[device]);
  return CUDA_SUCCESS;
}
CUresult Double_cuDevicePrimaryCtxRelease(CUdevice device) {
  if (CUresult r = Take(k_cuDevicePrimaryCtxRelease)) return r;
  if (!ValidDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_primary[device].retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --g_primary[device].retains;
  return CUDA_SUCCESS;
}
CUresult Double_cuCtxSetCurrent(CUcontext context) {
  if (CUresult r = Take(k_cuCtxSetCurrent)) return r;
  if (context != nullptr && PrimaryOrdinal(context) < 0 && context != reinterpret_cast<CUcontext>(&g_foreign)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  tls_current = context;
  return CUDA_SUCCESS;
}
CUresult Double_cuCtxGetCurrent(CUcontext* context) {
  if (CUresult r = Take(k_cuCtxGetCurrent)) return r;
  *context = tls_current;
  return CUDA_SUCCESS;
}
CUresult Double_cuCtxSynchronize() {
  if (CUresult r = Take(k_cuCtxSynchronize)) return r;
  ReleasePoolsAboveThreshold();
  return CUDA_SUCCESS;
}

// Memory: aligned host allocations stand for device memory.
CUresult AllocateDevice(CUdeviceptr* ptr, std::size_t bytes, bool managed = false) {
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > kTotalMemory) return CUDA_ERROR_OUT_OF_MEMORY;
  // Whole pages, so that any allocation can be exported alone (ipc_double.inc).
  const std::size_t page = static_cast<std::size_t>(streamexecutor::detail::PageSize());
  void* memory = std::aligned_alloc(page, (bytes + page - 1) / page * page);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = reinterpret_cast<CUdeviceptr>(memory);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_device_allocations.emplace(*ptr, DeviceAllocation{bytes, tls_current, managed});
  return CUDA_SUCCESS;
}
CUresult Double_cuMemAlloc(CUdeviceptr* ptr, std::size_t bytes) {
  if (CUresult r = Take(k_cuMemAlloc)) return r;
  if (CUresult r = NeedContext()) return r;
  return AllocateDevice(ptr, bytes);
}
CUresult Double_cuMemAllocManaged(CUdeviceptr* ptr, std::size_t bytes, unsigned) {
  if (CUresult r = Take(k_cuMemAllocManaged)) return r;
  if (CUresult r = NeedContext()) return r;
  return AllocateDevice(ptr, bytes, /*managed=*/true);
}
CUresult Double_cuMemFree(CUdeviceptr ptr) {
  if (CUresult r = Take(k_cuMemFree)) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_device_allocations.find(ptr);
  if (it == g_device_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.imported) return CUDA_ERROR_INVALID_VALUE;  // cuIpcCloseMemHandle's to let go
  if (it->second.pool != nullptr) PoolAllocationFreed(it->second.pool, it->second.bytes);
  g_device_allocations.erase(it);
  UnshareIfExported(ptr);
  std::free(reinterpret_cast<void*>(ptr));
  return CUDA_SUCCESS;
}

// Pinned host memory, and the device addresses it is mapped at (which Host
// turns back into host addresses).
#include "host_memory_double.inc"

// cuStream*, cuEvent*, cuLaunchHostFunc and the record of their order.
#include "stream_event_double.inc"
// Device memory and events shared between processes.
#include "ipc_double.inc"
CUresult Double_cuMemcpyHtoD(CUdeviceptr dst, const void* src, std::size_t bytes) {
  if (CUresult r = Take(k_cuMemcpyHtoD)) return r;
  if (CUresult r = NeedContext()) return r;
  std::memcpy(Host(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemcpyDtoH(void* dst, CUdeviceptr src, std::size_t bytes) {
  if (CUresult r = Take(k_cuMemcpyDtoH)) return r;
  if (CUresult r = NeedContext()) return r;
  std::memcpy(dst, Host(src), bytes);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) {
  if (CUresult r = Take(k_cuMemcpyDtoD)) return r;
  if (CUresult r = NeedContext()) return r;
  std::memmove(Host(dst), Host(src), bytes);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream) {
  Order(k_cuMemcpyHtoDAsync, stream, nullptr);
  if (CUresult r = Take(k_cuMemcpyHtoDAsync)) return r;
  std::memcpy(Host(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream) {
  Order(k_cuMemcpyDtoHAsync, stream, nullptr);
  if (CUresult r = Take(k_cuMemcpyDtoHAsync)) return r;
  std::memcpy(dst, Host(src), bytes);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream) {
  Order(k_cuMemcpyDtoDAsync, stream, nullptr);
  if (CUresult r = Take(k_cuMemcpyDtoDAsync)) return r;
  std::memmove(Host(dst), Host(src), bytes);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext, CUdeviceptr src, CUcontext, std::size_t bytes, CUstream) {
  if (CUresult r = Take(k_cuMemcpyPeerAsync)) return r;
  std::memmove(Host(dst), Host(src), bytes);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemsetD8(CUdeviceptr dst, unsigned char value, std::size_t count) {
  if (CUresult r = Take(k_cuMemsetD8)) return r;
  if (CUresult r = NeedContext()) return r;
  std::memset(Host(dst), value, count);
  return CUDA_SUCCESS;
}
void Fill32(CUdeviceptr dst, unsigned value, std::size_t count) {
  auto* words = static_cast<unsigned*>(Host(dst));
  std::fill(words, words + count, value);
}
CUresult Double_cuMemsetD32(CUdeviceptr dst, unsigned value, std::size_t count) {
  if (CUresult r = Take(k_cuMemsetD32)) return r;
  if (CUresult r = NeedContext()) return r;
  Fill32(dst, value, count);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemsetD8Async(CUdeviceptr dst, unsigned char value, std::size_t count, CUstream stream) {
  Order(k_cuMemsetD8Async, stream, nullptr);
  if (CUresult r = Take(k_cuMemsetD8Async)) return r;
  std::memset(Host(dst), value, count);
  return CUDA_SUCCESS;
}
CUresult Double_cuMemsetD32Async(CUdeviceptr dst, unsigned value, std::size_t count, CUstream stream) {
  Order(k_cuMemsetD32Async, stream, nullptr);
  if (CUresult r = Take(k_cuMemsetD32Async)) return r;
  Fill32(dst, value, count);
  return CUDA_SUCCESS;
}

// cuModuleLoadDataEx ... cuLaunchKernelEx (a file of its own).
#include "module_launch_double.inc"

// cuDeviceCanAccessPeer, cuCtxEnablePeerAccess and the record of enabled pairs.
#include "peer_double.inc"

// The interop entry points, defined in interop_entry_points.hpp (included at the end).
CUresult Double_cuStreamGetCtx(CUstream stream, CUcontext* context);
CUresult Double_cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult Double_cuMemGetAddressRange(CUdeviceptr* base, std::size_t* size, CUdeviceptr ptr);
// Prefetches and advice on managed memory (managed_double.inc).
CUresult Double_cuMemPrefetchAsync(CUdeviceptr ptr, std::size_t bytes, CUmemLocation location, unsigned flags,
                                   CUstream stream);
CUresult Double_cuMemAdvise(CUdeviceptr ptr, std::size_t bytes, CUmem_advise advice, CUmemLocation location);
// Stream-ordered memory pools (memory_pool_double.inc).
CUresult Double_cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* properties);
CUresult Double_cuMemPoolDestroy(CUmemoryPool pool);
CUresult Double_cuMemAllocFromPoolAsync(CUdeviceptr* ptr, std::size_t bytes, CUmemoryPool pool, CUstream stream);
CUresult Double_cuMemFreeAsync(CUdeviceptr ptr, CUstream stream);
CUresult Double_cuMemPoolTrimTo(CUmemoryPool pool, std::size_t keep);
CUresult Double_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value);
CUresult Double_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attribute, void* value);
// CUDA graphs: cuGraphCreate ... cuGraphLaunch (a file of its own).
#include "graph_double.inc"

struct ProcEntry {
  const char* name;
  void* function;
};
// The static_cast checks each function against the ABI version it is served as.
const ProcEntry kProcTable[] = {
#define SE_DOUBLE_PROC(name, version) \
  {#name, reinterpret_cast<void*>(static_cast<PFN_##name##_v##version>(&Double_##name))},
    SE_DOUBLE_ENTRY_POINTS(SE_DOUBLE_PROC)
#undef SE_DOUBLE_PROC
};

struct ErrorText {
  CUresult result;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
};

}  // namespace

extern "C" {

CUresult cuInit(unsigned flags) {
  if (CUresult r = Take(k_cuInit)) return r;
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Not part of the documented API: NVRTC 13 opens libcuda.so.1 when it
// compiles and looks this up (tests/cuda/nvrtc_test.cpp runs NVRTC with the
// double on the library path). Without it NVRTC calls a null pointer; with no
// table to give, it goes on without the driver, as on a machine without one.
CUresult cuGetExportTable(const void** table, const CUuuid*) {
  if (table != nullptr) *table = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuGetErrorName(CUresult result, const char** name) {
  Take(k_cuGetErrorName);
  for (const ErrorText& e : kErrors) {
    if (e.result == result) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;  // the backend falls back to its own table
}

CUresult cuGetErrorString(CUresult result, const char** text) {
  Take(k_cuGetErrorString);
  for (const ErrorText& e : kErrors) {
    if (e.result == result) {
      *text = e.text;
      return CUDA_SUCCESS;
    }
  }
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** function, int, cuuint64_t,
                             CUdriverProcAddressQueryResult* found) {
  if (CUresult r = Take(k_cuGetProcAddress_v2)) return r;
  for (const ProcEntry& entry : kProcTable) {
    if (std::strcmp(entry.name, symbol) == 0) {
      *function = entry.function;
      if (found != nullptr) *found = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *function = nullptr;
  if (found != nullptr) *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

// cuDriverGetVersion is also looked up with dlsym, before cuGetProcAddress.
CUresult cuDriverGetVersion(int* version) { return Double_cuDriverGetVersion(version); }

long se_counting_double_calls(const char* entry_point) {
  const int index = IndexOf(entry_point);
  return index < 0 ? -1 : g_calls[index].load();
}

bool se_counting_double_last_launch(SeCountingDoubleLaunch* out) {
  if (!g_launched) return false;
  *out = g_last_launch;
  return true;
}

bool se_counting_double_last_memory_operation(SeCountingDoubleMemoryOperation* out) {
  std::lock_guard<std::mutex> lock(g_memory_operation_mutex);
  *out = g_last_memory_operation;
  return out->entry_point[0] != '\0';
}

std::size_t se_counting_double_last_node_dependencies(std::size_t* out, std::size_t capacity) {
  const std::size_t count = std::min(capacity, g_last_node_dependencies.size());
  std::copy_n(g_last_node_dependencies.begin(), count, out);
  return g_last_node_dependencies.size();
}

void se_counting_double_fail_next(const char* entry_point, int result) {
  if (const int index = IndexOf(entry_point); index >= 0) g_fail_next[index].store(result);
}

CUcontext se_counting_double_foreign_context() { return reinterpret_cast<CUcontext>(&g_foreign); }

int se_counting_double_host_flags(const void* ptr) { return HostFlags(ptr); }

bool se_counting_double_peer_enabled(int from, int to) {
  return ValidDevice(from) && ValidDevice(to) && g_peer_enabled[from][to].load();
}

long se_counting_double_calls_from_host_functions() { return g_calls_from_host_functions.load(); }

bool se_counting_double_latest_call(const char* entry_point, SeCountingDoubleCall* out) {
  const int index = IndexOf(entry_point);
  if (index < 0) return false;
  const LatestCall& latest = g_latest[index];
  out->sequence = latest.sequence.load(std::memory_order_acquire);
  out->stream = latest.stream.load(std::memory_order_relaxed);
  out->event = latest.event.load(std::memory_order_relaxed);
  return out->sequence != 0;
}

bool se_counting_double_stream_priority(void* stream, int* out) {
  if (stream == nullptr) return false;
  *out = reinterpret_cast<const Stream*>(stream)->priority;
  return true;
}

void se_counting_double_set_priority_range(int least, int greatest) {
  g_least_priority.store(least);
  g_greatest_priority.store(greatest);
}

}  // extern "C"

#include "interop_entry_points.hpp"
#include "managed_double.inc"
#include "memory_pool_double.inc"
#include "occupancy_double.inc"
