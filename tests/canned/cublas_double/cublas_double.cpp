// A test double of libcublas.so.13 (see cublas_double.hpp): the entry points
// the BLAS plugin resolves, defined against cuBLAS's own prototypes, so the
// double and the plugin agree with the toolkit's ABI by construction.
#include <cublas_v2.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../../library_double.hpp"
#include "cublas_double.hpp"

namespace {

struct Handle {
  cudaStream_t stream = nullptr;
  cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
  void* workspace = nullptr;  // null: cuBLAS's own (cublasSetStream goes back to it)
  std::size_t workspace_bytes = 0;
};

struct Record : library_double::CallLog<cublasStatus_t, CUBLAS_STATUS_SUCCESS> {
  SeCublasDoubleCall last{};
  bool any = false;
};

Record& Recorded() {
  static Record record;
  return record;
}

// Counts the call and says whether it was told to fail; records it otherwise.
cublasStatus_t Enter(const char* name, const SeCublasDoubleCall& call) {
  Record& r = Recorded();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (const cublasStatus_t status = r.EnterLocked(name); status != CUBLAS_STATUS_SUCCESS) return status;
  r.last = call;
  std::strncpy(r.last.name, name, sizeof(r.last.name) - 1);
  r.any = true;
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
double Read(const Handle* h, const T* value) {
  return h->mode == CUBLAS_POINTER_MODE_HOST && value != nullptr ? static_cast<double>(*value) : 0.0;
}
// Half scalars through the toolkit's own conversion (host code in cuda_fp16.h).
double Read(const Handle* h, const __half* value) {
  return h->mode == CUBLAS_POINTER_MODE_HOST && value != nullptr ? static_cast<double>(__half2float(*value)) : 0.0;
}

SeCublasDoubleCall Base(cublasHandle_t handle) {
  SeCublasDoubleCall call{};
  auto* h = reinterpret_cast<Handle*>(handle);
  call.handle = handle;
  call.stream = h->stream;
  call.pointer_mode = h->mode;
  call.workspace = h->workspace;
  call.workspace_bytes = h->workspace_bytes;
  return call;
}

template <typename T>
cublasStatus_t Axpy(const char* name, cublasHandle_t handle, int n, const T* alpha, const T* x, int incx, T* y,
                    int incy) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  SeCublasDoubleCall call = Base(handle);
  call.n = n;
  call.alpha = Read(reinterpret_cast<Handle*>(handle), alpha);
  call.a = x;
  call.b = y;
  call.c = y;
  call.lda = incx;
  call.ldb = incy;
  return Enter(name, call);
}

template <typename T>
cublasStatus_t Dot(const char* name, cublasHandle_t handle, int n, const T* x, int incx, const T* y, int incy,
                   T* result) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  SeCublasDoubleCall call = Base(handle);
  call.n = n;
  call.a = x;
  call.b = y;
  call.c = result;
  call.lda = incx;
  call.ldb = incy;
  return Enter(name, call);
}

template <typename T>
cublasStatus_t Gemv(const char* name, cublasHandle_t handle, cublasOperation_t trans, int m, int n, const T* alpha,
                    const T* a, int lda, const T* x, int incx, const T* beta, T* y, int incy) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = reinterpret_cast<Handle*>(handle);
  SeCublasDoubleCall call = Base(handle);
  call.trans_a = trans;
  call.m = m;
  call.n = n;
  call.alpha = Read(h, alpha);
  call.beta = Read(h, beta);
  call.a = a;
  call.b = x;
  call.c = y;
  call.lda = lda;
  call.ldb = incx;
  call.ldc = incy;
  return Enter(name, call);
}

template <typename T>
cublasStatus_t Gemm(const char* name, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                    int n, int k, const T* alpha, const T* a, int lda, const T* b, int ldb, const T* beta, T* c,
                    int ldc) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = reinterpret_cast<Handle*>(handle);
  SeCublasDoubleCall call = Base(handle);
  call.trans_a = transa;
  call.trans_b = transb;
  call.m = m;
  call.n = n;
  call.k = k;
  call.alpha = Read(h, alpha);
  call.beta = Read(h, beta);
  call.a = a;
  call.b = b;
  call.c = c;
  call.lda = lda;
  call.ldb = ldb;
  call.ldc = ldc;
  return Enter(name, call);
}

template <typename T>
SeCublasDoubleCall GemmCall(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const T* alpha, int lda, int ldb, const T* beta, int ldc) {
  auto* h = reinterpret_cast<Handle*>(handle);
  SeCublasDoubleCall call = Base(handle);
  call.trans_a = transa;
  call.trans_b = transb;
  call.m = m;
  call.n = n;
  call.k = k;
  call.alpha = Read(h, alpha);
  call.beta = Read(h, beta);
  call.lda = lda;
  call.ldb = ldb;
  call.ldc = ldc;
  return call;
}

template <typename T>
cublasStatus_t StridedBatched(const char* name, cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const T* alpha, const T* a, int lda,
                              long long stride_a, const T* b, int ldb, long long stride_b, const T* beta, T* c, int ldc,
                              long long stride_c, int batch_count) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (batch_count < 0) return CUBLAS_STATUS_INVALID_VALUE;
  SeCublasDoubleCall call = GemmCall(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc);
  call.a = a;
  call.b = b;
  call.c = c;
  call.stride_a = stride_a;
  call.stride_b = stride_b;
  call.stride_c = stride_c;
  call.batch_count = batch_count;
  return Enter(name, call);
}

// The arrays are device memory, which under the counting driver double is
// host memory: read back what the plugin copied there.
template <typename T>
cublasStatus_t Batched(const char* name, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                       int m, int n, int k, const T* alpha, const T* const a[], int lda, const T* const b[], int ldb,
                       const T* beta, T* const c[], int ldc, int batch_count) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (batch_count < 0 || a == nullptr || b == nullptr || c == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  SeCublasDoubleCall call = GemmCall(handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc);
  call.a = a;
  call.b = b;
  call.c = const_cast<T**>(c);
  call.batch_count = batch_count;
  const int kept = batch_count < 8 ? batch_count : 8;
  for (int i = 0; i < kept; ++i) {
    call.a_entries[i] = a[i];
    call.b_entries[i] = b[i];
    call.c_entries[i] = c[i];
  }
  return Enter(name, call);
}

}  // namespace

SE_LIBRARY_DOUBLE_EXPORTS(cublas, Recorded())

extern "C" {

bool se_cublas_double_last_call(SeCublasDoubleCall* out) {
  Record& r = Recorded();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.any) return false;
  *out = r.last;
  return true;
}

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  SeCublasDoubleCall call{};
  if (cublasStatus_t s = Enter("cublasCreate_v2", call); s != CUBLAS_STATUS_SUCCESS) return s;
  *handle = reinterpret_cast<cublasHandle_t>(new Handle());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  delete reinterpret_cast<Handle*>(handle);
  return Enter("cublasDestroy_v2", SeCublasDoubleCall{});
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  SeCublasDoubleCall call = Base(handle);
  call.stream = stream;
  if (cublasStatus_t s = Enter("cublasSetStream_v2", call); s != CUBLAS_STATUS_SUCCESS) return s;
  auto* h = reinterpret_cast<Handle*>(handle);
  h->stream = stream;
  h->workspace = nullptr;  // as cuBLAS documents it
  h->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (workspace == nullptr && bytes != 0) return CUBLAS_STATUS_INVALID_VALUE;
  SeCublasDoubleCall call = Base(handle);
  call.workspace = workspace;
  call.workspace_bytes = bytes;
  if (cublasStatus_t s = Enter("cublasSetWorkspace_v2", call); s != CUBLAS_STATUS_SUCCESS) return s;
  auto* h = reinterpret_cast<Handle*>(handle);
  h->workspace = workspace;
  h->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  SeCublasDoubleCall call = Base(handle);
  call.pointer_mode = mode;
  if (cublasStatus_t s = Enter("cublasSetPointerMode_v2", call); s != CUBLAS_STATUS_SUCCESS) return s;
  reinterpret_cast<Handle*>(handle)->mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    default: return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

cublasStatus_t CUBLASWINAPI cublasSaxpy_v2(cublasHandle_t handle, int n, const float* alpha, const float* x, int incx,
                                           float* y, int incy) {
  return Axpy("cublasSaxpy_v2", handle, n, alpha, x, incx, y, incy);
}
cublasStatus_t CUBLASWINAPI cublasDaxpy_v2(cublasHandle_t handle, int n, const double* alpha, const double* x, int incx,
                                           double* y, int incy) {
  return Axpy("cublasDaxpy_v2", handle, n, alpha, x, incx, y, incy);
}
cublasStatus_t CUBLASWINAPI cublasSdot_v2(cublasHandle_t handle, int n, const float* x, int incx, const float* y,
                                          int incy, float* result) {
  return Dot("cublasSdot_v2", handle, n, x, incx, y, incy, result);
}
cublasStatus_t CUBLASWINAPI cublasDdot_v2(cublasHandle_t handle, int n, const double* x, int incx, const double* y,
                                          int incy, double* result) {
  return Dot("cublasDdot_v2", handle, n, x, incx, y, incy, result);
}
cublasStatus_t CUBLASWINAPI cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                                           const float* alpha, const float* a, int lda, const float* x, int incx,
                                           const float* beta, float* y, int incy) {
  return Gemv("cublasSgemv_v2", handle, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}
cublasStatus_t CUBLASWINAPI cublasDgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                                           const double* alpha, const double* a, int lda, const double* x, int incx,
                                           const double* beta, double* y, int incy) {
  return Gemv("cublasDgemv_v2", handle, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}
cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                           int m, int n, int k, const float* alpha, const float* a, int lda,
                                           const float* b, int ldb, const float* beta, float* c, int ldc) {
  return Gemm("cublasSgemm_v2", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
cublasStatus_t CUBLASWINAPI cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                           int m, int n, int k, const double* alpha, const double* a, int lda,
                                           const double* b, int ldb, const double* beta, double* c, int ldc) {
  return Gemm("cublasDgemm_v2", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

cublasStatus_t CUBLASWINAPI cublasHgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                        int m, int n, int k, const __half* alpha, const __half* a, int lda,
                                        const __half* b, int ldb, const __half* beta, __half* c, int ldc) {
  return Gemm("cublasHgemm", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                      cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                                      const float* a, int lda, long long int stride_a, const float* b,
                                                      int ldb, long long int stride_b, const float* beta, float* c,
                                                      int ldc, long long int stride_c, int batch_count) {
  return StridedBatched("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb,
                        stride_b, beta, c, ldc, stride_c, batch_count);
}
cublasStatus_t CUBLASWINAPI cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                      cublasOperation_t transb, int m, int n, int k,
                                                      const double* alpha, const double* a, int lda,
                                                      long long int stride_a, const double* b, int ldb,
                                                      long long int stride_b, const double* beta, double* c, int ldc,
                                                      long long int stride_c, int batch_count) {
  return StridedBatched("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb,
                        stride_b, beta, c, ldc, stride_c, batch_count);
}
cublasStatus_t CUBLASWINAPI cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                      cublasOperation_t transb, int m, int n, int k,
                                                      const __half* alpha, const __half* a, int lda,
                                                      long long int stride_a, const __half* b, int ldb,
                                                      long long int stride_b, const __half* beta, __half* c, int ldc,
                                                      long long int stride_c, int batch_count) {
  return StridedBatched("cublasHgemmStridedBatched", handle, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb,
                        stride_b, beta, c, ldc, stride_c, batch_count);
}

cublasStatus_t CUBLASWINAPI cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                               cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                               const float* const a[], int lda, const float* const b[], int ldb,
                                               const float* beta, float* const c[], int ldc, int batch_count) {
  return Batched("cublasSgemmBatched", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                 batch_count);
}
cublasStatus_t CUBLASWINAPI cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                               cublasOperation_t transb, int m, int n, int k, const double* alpha,
                                               const double* const a[], int lda, const double* const b[], int ldb,
                                               const double* beta, double* const c[], int ldc, int batch_count) {
  return Batched("cublasDgemmBatched", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                 batch_count);
}
cublasStatus_t CUBLASWINAPI cublasHgemmBatched(cublasHandle_t handle, cublasOperation_t transa,
                                               cublasOperation_t transb, int m, int n, int k, const __half* alpha,
                                               const __half* const a[], int lda, const __half* const b[], int ldb,
                                               const __half* beta, __half* const c[], int ldc, int batch_count) {
  return Batched("cublasHgemmBatched", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                 batch_count);
}

}  // extern "C"
