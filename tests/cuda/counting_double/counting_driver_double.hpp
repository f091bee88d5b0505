// The query side of the counting CUDA driver double (counting_driver_double.cpp):
// a test double built as libcuda.so.1 for machines with no NVIDIA driver. It
// answers the driver API the CUDA backend loads with one pretend device (more
// with SE_COUNTING_DOUBLE_DEVICES=n) whose "device memory" is host memory,
// runs no kernel, and counts every call.
//
// A test or benchmark that put the double on LD_LIBRARY_PATH reaches these
// functions with dlsym on the already-loaded library (CountingDoubleApi).
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>

extern "C" {

// What the double saw at its most recent cuLaunchKernel.
struct SeCountingDoubleLaunch {
  char kernel_name[128];
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  void* stream;
  std::size_t param_count;  // from the kernel's PTX .entry
  std::size_t param_sizes[16];
  unsigned char param_bytes[16][64];  // each parameter's value, as the kernel would receive it
  // cuLaunchKernelEx's attributes (all zero for cuLaunchKernel).
  int cooperative;
  unsigned cluster[3];
  int programmatic;
};

// Calls of one entry point (by its driver API name, e.g. "cuLaunchKernel").
typedef long (*SeCountingDoubleCallsFn)(const char* entry_point);
// Copies the latest launch; false before the first one.
typedef bool (*SeCountingDoubleLastLaunchFn)(SeCountingDoubleLaunch* out);
// Makes the next call of `entry_point` return `result` instead of working.
typedef void (*SeCountingDoubleFailNextFn)(const char* entry_point, int result);
// A context other than the device's primary one (as another library would
// have current); context-bound calls fail in it.
typedef CUcontext (*SeCountingDoubleForeignContextFn)();
// Driver calls made from inside a host function (CUDA forbids them; the
// double refuses each with CUDA_ERROR_NOT_PERMITTED).
typedef long (*SeCountingDoubleCallsFromHostFunctionsFn)();

// The latest call of an entry point that stream order is about (stream and
// event calls, asynchronous copies and fills, not launches), numbered in the
// order of all such calls; false before its first call.
struct SeCountingDoubleCall {
  long sequence;
  void* stream;  // CUstream, null for calls without one
  void* event;   // CUevent, null for calls without one
};
typedef bool (*SeCountingDoubleLatestCallFn)(const char* entry_point, SeCountingDoubleCall* out);

// The latest call of an occupancy entry point ("cuOccupancyMaxActiveBlocksPerMultiprocessor",
// "cuOccupancyMaxPotentialBlockSize"), as the double received it; false before the first.
struct SeCountingDoubleOccupancyCall {
  char kernel_name[128];
  int block_size;  // MaxActiveBlocks only
  std::size_t dynamic_shared_bytes;
  int block_size_limit;  // MaxPotentialBlockSize only
  bool with_callback;    // MaxPotentialBlockSize: a blockSizeToDynamicSMemSize was passed
  long calls;            // of that entry point, so far
};
typedef bool (*SeCountingDoubleLastOccupancyCallFn)(const char* entry_point, SeCountingDoubleOccupancyCall* out);
// cuFuncGetAttribute calls that asked for `attribute` (a CUfunction_attribute).
typedef long (*SeCountingDoubleFuncAttributeCallsFn)(int attribute);
// The flags that the pinned range starting at `ptr` was allocated
// (cuMemHostAlloc) or registered (cuMemHostRegister) with; -1 for none.
typedef int (*SeCountingDoubleHostFlagsFn)(const void* ptr);
// Whether cuCtxEnablePeerAccess in device `from`'s primary context enabled
// access to device `to`'s (SE_COUNTING_DOUBLE_DEVICES=2 gives two devices).
typedef bool (*SeCountingDoublePeerEnabledFn)(int from, int to);
// What cuMemPrefetchAsync and cuMemAdvise did to a managed allocation
// (locations as CUmemLocationType and id; -1 for none).
struct SeCountingDoubleManaged {
  int prefetched_type;
  int prefetched_id;
  bool read_mostly;
  int preferred_type;
  int preferred_id;
  int accessed_by_type;
  int accessed_by_id;
  long prefetches;
};
// The hints of the managed allocation holding `ptr`; false if none holds it.
typedef bool (*SeCountingDoubleManagedStateFn)(unsigned long long ptr, SeCountingDoubleManaged* out);
// The positions (0-based, in the order added) of the nodes the graph node
// added last depends on: up to `capacity` into `out`; returns how many.
typedef std::size_t (*SeCountingDoubleLastNodeDependenciesFn)(std::size_t* out, std::size_t capacity);
// The latest stream memory operation (cuStreamWaitValue32/64, cuStreamWriteValue32/64)
// as the double received it; false before the first.
struct SeCountingDoubleMemoryOperation {
  char entry_point[32];
  void* stream;
  unsigned long long address;
  unsigned long long value;
  unsigned flags;
  bool condition_held;  // waits: whether the word met the condition when the wait was queued
};
typedef bool (*SeCountingDoubleLastMemoryOperationFn)(SeCountingDoubleMemoryOperation* out);
// The priority a stream (CUstream) was created with: cuStreamCreateWithPriority's
// argument as given, 0 for cuStreamCreate; false for a null stream.
typedef bool (*SeCountingDoubleStreamPriorityFn)(void* stream, int* out);
// What cuCtxGetStreamPriorityRange answers from now on (default: 0 and -5, an H100's).
typedef void (*SeCountingDoubleSetPriorityRangeFn)(int least, int greatest);
}

namespace se_test {

// The double's query functions, or all null where libcuda.so.1 is not the double.
struct CountingDoubleApi {
  SeCountingDoubleCallsFn calls = nullptr;
  SeCountingDoubleLastLaunchFn last_launch = nullptr;
  SeCountingDoubleFailNextFn fail_next = nullptr;
  SeCountingDoubleForeignContextFn foreign_context = nullptr;
  SeCountingDoubleCallsFromHostFunctionsFn calls_from_host_functions = nullptr;
  SeCountingDoubleLatestCallFn latest_call = nullptr;
  SeCountingDoubleLastOccupancyCallFn last_occupancy_call = nullptr;
  SeCountingDoubleFuncAttributeCallsFn func_attribute_calls = nullptr;
  SeCountingDoubleHostFlagsFn host_flags = nullptr;
  SeCountingDoublePeerEnabledFn peer_enabled = nullptr;
  SeCountingDoubleManagedStateFn managed_state = nullptr;
  SeCountingDoubleLastNodeDependenciesFn last_node_dependencies = nullptr;
  SeCountingDoubleLastMemoryOperationFn last_memory_operation = nullptr;
  SeCountingDoubleStreamPriorityFn stream_priority = nullptr;
  SeCountingDoubleSetPriorityRangeFn set_priority_range = nullptr;

  bool loaded() const {
    return calls != nullptr && last_launch != nullptr && fail_next != nullptr && foreign_context != nullptr &&
           calls_from_host_functions != nullptr && latest_call != nullptr && last_occupancy_call != nullptr &&
           func_attribute_calls != nullptr && host_flags != nullptr && peer_enabled != nullptr &&
           managed_state != nullptr && last_node_dependencies != nullptr && last_memory_operation != nullptr &&
           stream_priority != nullptr && set_priority_range != nullptr;
  }

  // RTLD_NOLOAD: the library the backend already opened, never a second copy.
  static CountingDoubleApi Find() {
    CountingDoubleApi api;
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) return api;
    api.calls = reinterpret_cast<SeCountingDoubleCallsFn>(dlsym(library, "se_counting_double_calls"));
    api.last_launch = reinterpret_cast<SeCountingDoubleLastLaunchFn>(dlsym(library, "se_counting_double_last_launch"));
    api.fail_next = reinterpret_cast<SeCountingDoubleFailNextFn>(dlsym(library, "se_counting_double_fail_next"));
    api.foreign_context =
        reinterpret_cast<SeCountingDoubleForeignContextFn>(dlsym(library, "se_counting_double_foreign_context"));
    api.calls_from_host_functions = reinterpret_cast<SeCountingDoubleCallsFromHostFunctionsFn>(
        dlsym(library, "se_counting_double_calls_from_host_functions"));
    api.latest_call = reinterpret_cast<SeCountingDoubleLatestCallFn>(dlsym(library, "se_counting_double_latest_call"));
    api.last_occupancy_call =
        reinterpret_cast<SeCountingDoubleLastOccupancyCallFn>(dlsym(library, "se_counting_double_last_occupancy_call"));
    api.func_attribute_calls = reinterpret_cast<SeCountingDoubleFuncAttributeCallsFn>(
        dlsym(library, "se_counting_double_func_attribute_calls"));
    api.host_flags = reinterpret_cast<SeCountingDoubleHostFlagsFn>(dlsym(library, "se_counting_double_host_flags"));
    api.peer_enabled =
        reinterpret_cast<SeCountingDoublePeerEnabledFn>(dlsym(library, "se_counting_double_peer_enabled"));
    api.managed_state =
        reinterpret_cast<SeCountingDoubleManagedStateFn>(dlsym(library, "se_counting_double_managed_state"));
    api.last_node_dependencies = reinterpret_cast<SeCountingDoubleLastNodeDependenciesFn>(
        dlsym(library, "se_counting_double_last_node_dependencies"));
    api.last_memory_operation = reinterpret_cast<SeCountingDoubleLastMemoryOperationFn>(
        dlsym(library, "se_counting_double_last_memory_operation"));
    api.stream_priority =
        reinterpret_cast<SeCountingDoubleStreamPriorityFn>(dlsym(library, "se_counting_double_stream_priority"));
    api.set_priority_range =
        reinterpret_cast<SeCountingDoubleSetPriorityRangeFn>(dlsym(library, "se_counting_double_set_priority_range"));
    dlclose(library);  // drops only the reference NOLOAD added
    return api;
  }
};

}  // namespace se_test
