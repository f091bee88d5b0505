// Unified (managed) memory hints on CUDA: Stream::ThenPrefetch through
// cuMemPrefetchAsync and MemAdvise through cuMemAdvise, both in the forms
// that take a CUmemLocation (CUDA 12.2), optional driver entry points.
//
// Both apply to managed memory only (cuMemAllocManaged): for memory from
// cuMemAlloc the driver refuses them, and the memory never migrates anyway,
// so the hint is dropped after one cuPointerGetAttribute. A driver without
// the entry points drops every hint: results are the same without them.
#pragma once

#include <cuda.h>

#include <string_view>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"

namespace streamexecutor::cuda_detail {

inline CUmemLocation Location(MemoryLocation where, int ordinal) {
  CUmemLocation location{};
  location.type = where == MemoryLocation::kHost ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  location.id = where == MemoryLocation::kHost ? 0 : ordinal;
  return location;
}

// Whether `address` is managed memory; the current context must be the
// memory's.
inline StatusOr<bool> IsManaged(const DriverApi& api, CUdeviceptr address, std::string_view caller, int ordinal) {
  unsigned int managed = 0;  // the driver writes a boolean; zeroed for either width
  if (const CUresult r = api.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, address);
      r != CUDA_SUCCESS) {
    return api.Error(r, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED)", "for {} on cuda:{}", caller, ordinal);
  }
  return managed != 0;
}

inline Status Prefetch(const DriverApi& api, CUstream stream, int ordinal, CUdeviceptr address, std::uint64_t bytes,
                       MemoryLocation to) {
  if (api.cuMemPrefetchAsync == nullptr || bytes == 0) return Status();
  StatusOr<bool> managed = IsManaged(api, address, "ThenPrefetch", ordinal);
  if (!managed.ok()) return managed.status();
  if (!managed.value()) return Status();
  if (const CUresult r = api.cuMemPrefetchAsync(address, bytes, Location(to, ordinal), 0, stream); r != CUDA_SUCCESS) {
    return api.Error(r, "cuMemPrefetchAsync", "moving {} bytes of managed memory to {} on a stream of cuda:{}", bytes,
                     to == MemoryLocation::kHost ? "the host" : "the device", ordinal);
  }
  return Status();
}

inline CUmem_advise AdviceCode(MemoryAdvice advice) {
  switch (advice) {
    case MemoryAdvice::kSetReadMostly: return CU_MEM_ADVISE_SET_READ_MOSTLY;
    case MemoryAdvice::kUnsetReadMostly: return CU_MEM_ADVISE_UNSET_READ_MOSTLY;
    case MemoryAdvice::kSetPreferredLocation: return CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    case MemoryAdvice::kUnsetPreferredLocation: return CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION;
    case MemoryAdvice::kSetAccessedBy: return CU_MEM_ADVISE_SET_ACCESSED_BY;
    case MemoryAdvice::kUnsetAccessedBy: break;
  }
  return CU_MEM_ADVISE_UNSET_ACCESSED_BY;
}

inline Status Advise(const DriverApi& api, int ordinal, CUdeviceptr address, std::uint64_t bytes, MemoryAdvice advice,
                     MemoryLocation where) {
  if (api.cuMemAdvise == nullptr || bytes == 0) return Status();
  StatusOr<bool> managed = IsManaged(api, address, "MemAdvise", ordinal);
  if (!managed.ok()) return managed.status();
  if (!managed.value()) return Status();
  if (const CUresult r = api.cuMemAdvise(address, bytes, AdviceCode(advice), Location(where, ordinal));
      r != CUDA_SUCCESS) {
    return api.Error(r, "cuMemAdvise", "advising on {} bytes of managed memory on cuda:{}", bytes, ordinal);
  }
  return Status();
}

}  // namespace streamexecutor::cuda_detail
