// The counting driver double's answers to the interop queries (which context
// a stream or a pointer belongs to, which allocation holds a pointer), and
// the test hooks that make objects of another context for them to refuse.
// A part of counting_driver_double.cpp, included at its end: it shares that
// file's registries and counters, which have internal linkage.
#pragma once

namespace {

CUresult Double_cuStreamGetCtx(CUstream stream, CUcontext* context) {
  if (CUresult r = Take(k_cuStreamGetCtx)) return r;
  if (stream == nullptr || context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *context = reinterpret_cast<const Stream*>(stream)->context;
  return CUDA_SUCCESS;
}

// The device allocation holding `ptr`, or end(); g_mutex is held.
std::map<CUdeviceptr, DeviceAllocation>::const_iterator AllocationHolding(CUdeviceptr ptr) {
  auto it = g_device_allocations.upper_bound(ptr);
  if (it == g_device_allocations.begin()) return g_device_allocations.end();
  --it;
  return ptr - it->first < it->second.bytes ? it : g_device_allocations.end();
}

// Only the attributes the backend asks (context, managed); like the driver, a
// pointer that no allocation holds is CUDA_ERROR_INVALID_VALUE.
CUresult Double_cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (CUresult r = Take(k_cuPointerGetAttribute)) return r;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_POINTER_ATTRIBUTE_CONTEXT && attribute != CU_POINTER_ATTRIBUTE_IS_MANAGED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = AllocationHolding(ptr);
  if (it == g_device_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED) {
    *static_cast<bool*>(data) = it->second.managed;  // a boolean, as documented: the caller's buffer may be wider
  } else {
    *static_cast<CUcontext*>(data) = it->second.context;
  }
  return CUDA_SUCCESS;
}

CUresult Double_cuMemGetAddressRange(CUdeviceptr* base, std::size_t* size, CUdeviceptr ptr) {
  if (CUresult r = Take(k_cuMemGetAddressRange)) return r;
  if (CUresult r = NeedContext()) return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = AllocationHolding(ptr);
  if (it == g_device_allocations.end()) return CUDA_ERROR_NOT_FOUND;
  if (base != nullptr) *base = it->first;
  if (size != nullptr) *size = it->second.bytes;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

// A stream and an allocation of the other library's context (see
// se_counting_double_foreign_context), made as that library would; freed
// with cuStreamDestroy and cuMemFree like any other.
CUstream se_counting_double_foreign_stream() {
  return reinterpret_cast<CUstream>(new Stream{reinterpret_cast<CUcontext>(&g_foreign)});
}
CUdeviceptr se_counting_double_foreign_allocation(std::size_t bytes) {
  CUdeviceptr ptr = 0;
  if (AllocateDevice(&ptr, bytes) != CUDA_SUCCESS) return 0;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_device_allocations[ptr].context = reinterpret_cast<CUcontext>(&g_foreign);
  return ptr;
}

}  // extern "C"
