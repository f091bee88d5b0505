// MemoryPool<cuda> on the driver's own stream-ordered allocator: a
// CUmemoryPool per MemoryPool, cuMemAllocFromPoolAsync / cuMemFreeAsync on the
// stream, cuMemPoolTrimTo, the release threshold and the usage counters as
// pool attributes (core/memory_pool.hpp: NativeMemoryPoolBackend). The entry
// points are optional (CUDA 11.2); a driver or device without them
// (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) gets the library's own pool.
//
// The driver reuses a freed block on the freeing stream at once, and on other
// streams once the free is known to have run or is ordered before them by an
// event (the pool's default reuse attributes): never by luck, as the issue
// asks of the library's pool.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <limits>
#include <span>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/state.hpp"

namespace streamexecutor::cuda_detail {

// Static members of the backend (struct cuda derives from this), templated
// on the executor's state, which is declared inside the backend.
struct NativePoolOperations {
  using PoolHandle = CUmemoryPool;

  template <typename Executor>
  static bool HasNativePools(Executor& executor) {
    const DriverApi& api = *executor.api;
    if (api.cuMemPoolCreate == nullptr || api.cuMemPoolDestroy == nullptr || api.cuMemAllocFromPoolAsync == nullptr ||
        api.cuMemFreeAsync == nullptr || api.cuMemPoolTrimTo == nullptr || api.cuMemPoolSetAttribute == nullptr ||
        api.cuMemPoolGetAttribute == nullptr) {
      return false;
    }
    int supported = 0;
    return api.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, executor.device) ==
               CUDA_SUCCESS &&
           supported != 0;
  }

  template <typename Executor>
  static Status CreatePool(Executor& executor, PoolHandle& pool) {
    CUmemPoolProps properties{};
    properties.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    properties.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    properties.location.id = executor.ordinal;
    if (const CUresult r = executor.api->cuMemPoolCreate(&pool, &properties); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemPoolCreate", "creating a memory pool on cuda:{}", executor.ordinal);
    }
    return Status();
  }
  // cuMemFree does not wait for the work queued on a pool's allocation (it
  // does for cuMemAlloc's), so the context is synchronized first: on a GPU a
  // fill still queued on freed memory ended in CUDA_ERROR_LAUNCH_FAILED,
  // sticky for the whole context. Without the frees the driver would keep
  // the pool until process exit. A destructor has no Status to return.
  template <typename Executor>
  static void DestroyPool(Executor& executor, PoolHandle& pool, std::span<const DeviceMemoryBase> outstanding) {
    const ContextScope context_scope(*executor.api, executor.context);
    if (!outstanding.empty() && context_scope.ok()) {
      // An error here is a stream's, reported by that stream; the memory goes either way.
      executor.api->cuCtxSynchronize();
      for (const DeviceMemoryBase& memory : outstanding) {
        executor.api->cuMemFree(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(memory.opaque())));
      }
    }
    executor.api->cuMemPoolDestroy(pool);
    pool = nullptr;
  }

  static StatusOr<DeviceMemoryBase> AllocateFromPool(StreamState* stream, PoolHandle& pool, std::uint64_t bytes) {
    const ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    CUdeviceptr address = 0;
    if (const CUresult r = stream->api->cuMemAllocFromPoolAsync(&address, bytes, pool, stream->stream);
        r != CUDA_SUCCESS) {
      return stream->api->Error(r, "cuMemAllocFromPoolAsync", "allocating {} bytes on a stream of cuda:{}", bytes,
                                stream->ordinal);
    }
    return DeviceMemoryBase(reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)), bytes);
  }
  static Status FreeToPool(StreamState* stream, const DeviceMemoryBase& memory) {
    const ContextScope context_scope(*stream->api, stream->context);
    if (!context_scope.ok()) [[unlikely]]
      return context_scope.status();
    const auto address = static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(memory.opaque()));
    if (const CUresult r = stream->api->cuMemFreeAsync(address, stream->stream); r != CUDA_SUCCESS) {
      return stream->api->Error(r, "cuMemFreeAsync", "freeing {} bytes at {} on a stream of cuda:{}", memory.size(),
                                memory.opaque(), stream->ordinal);
    }
    return Status();
  }

  // Allocates and frees `bytes` on a stream of its own and waits: the pool
  // then holds them, up to its release threshold.
  template <typename Executor>
  static Status ReservePool(Executor& executor, PoolHandle& pool, std::uint64_t bytes) {
    const DriverApi& api = *executor.api;
    const ContextScope context_scope(api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    CUstream stream = nullptr;
    if (const CUresult r = api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
      return api.Error(r, "cuStreamCreate", "for a reserve of {} bytes on cuda:{}", bytes, executor.ordinal);
    }
    Status status;
    CUdeviceptr address = 0;
    if (const CUresult r = api.cuMemAllocFromPoolAsync(&address, bytes, pool, stream); r != CUDA_SUCCESS) {
      status = api.Error(r, "cuMemAllocFromPoolAsync", "reserving {} bytes on cuda:{}", bytes, executor.ordinal);
    } else if (const CUresult f = api.cuMemFreeAsync(address, stream); f != CUDA_SUCCESS) {
      status = api.Error(f, "cuMemFreeAsync", "after reserving {} bytes on cuda:{}", bytes, executor.ordinal);
    }
    if (const CUresult r = api.cuStreamSynchronize(stream); r != CUDA_SUCCESS && status.ok()) {
      status = api.Error(r, "cuStreamSynchronize", "after reserving {} bytes on cuda:{}", bytes, executor.ordinal);
    }
    api.cuStreamDestroy(stream);
    return status;
  }

  template <typename Executor>
  static Status TrimPool(Executor& executor, PoolHandle& pool, std::uint64_t keep_bytes) {
    if (const CUresult r = executor.api->cuMemPoolTrimTo(pool, keep_bytes); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemPoolTrimTo", "keeping {} bytes on cuda:{}", keep_bytes, executor.ordinal);
    }
    return Status();
  }
  template <typename Executor>
  static Status SetPoolReleaseThreshold(Executor& executor, PoolHandle& pool, std::uint64_t bytes) {
    cuuint64_t value = bytes;
    if (const CUresult r = executor.api->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value);
        r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuMemPoolSetAttribute(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)",
                                 "to {} bytes on cuda:{}", bytes, executor.ordinal);
    }
    return Status();
  }
  template <typename Executor>
  static StatusOr<NativePoolUsage> PoolUsage(Executor& executor, PoolHandle& pool) {
    NativePoolUsage usage;
    struct Attribute {
      CUmemPool_attribute attribute;
      std::uint64_t* value;
      const char* call;
    };
    const Attribute attributes[] = {
        {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &usage.reserved,
         "cuMemPoolGetAttribute(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)"},
        {CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &usage.used, "cuMemPoolGetAttribute(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)"},
    };
    for (const Attribute& attribute : attributes) {
      cuuint64_t value = 0;
      if (const CUresult r = executor.api->cuMemPoolGetAttribute(pool, attribute.attribute, &value);
          r != CUDA_SUCCESS) {
        return executor.api->Error(r, attribute.call, "on cuda:{}", executor.ordinal);
      }
      *attribute.value = value;
    }
    return usage;
  }
};

}  // namespace streamexecutor::cuda_detail
