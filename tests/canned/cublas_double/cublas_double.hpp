// The query side of the cuBLAS test double (cublas_double.cpp): a stand-in for
// libcublas.so.13, for machines without a GPU. It computes nothing: it records
// each call's arguments, the stream its handle was bound to and the pointer
// mode, so that a test checks what the BLAS plugin asked cuBLAS to do. Tests
// reach these functions with dlsym on the already-loaded library.
#pragma once

#include "../../library_double.hpp"

extern "C" {

// One recorded call. Matrices: a, b, c with lda, ldb, ldc. Vectors: a = x,
// b = y (read), c = y or the dot result (written), lda = incx, ldb = incy.
struct SeCublasDoubleCall {
  char name[32];
  void* handle;
  void* stream;      // the handle's stream when the call was made
  int pointer_mode;  // cublasPointerMode_t
  int trans_a;       // cublasOperation_t
  int trans_b;
  int m, n, k;
  double alpha, beta;  // read through the host pointers in host mode, else 0
  const void* a;
  const void* b;
  void* c;
  int lda, ldb, ldc;
  // Batched gemms: the count; the strided call's element strides; the
  // pointer-array call's arrays (a, b, c above hold the arrays' device
  // addresses) read back, their first 8 entries.
  int batch_count;
  long long stride_a, stride_b, stride_c;
  const void* a_entries[8];
  const void* b_entries[8];
  void* c_entries[8];
  // The handle's workspace (cublasSetWorkspace): null for cuBLAS's own.
  void* workspace;
  unsigned long long workspace_bytes;
};

typedef bool (*SeCublasDoubleLastCallFn)(SeCublasDoubleCall* out);
}

namespace se_test {

// calls and fail_next (a failed call records nothing), and the latest call.
struct CublasDoubleApi : library_double::QueryApi {
  SeCublasDoubleLastCallFn last_call = nullptr;

  bool loaded() const { return common_loaded() && last_call != nullptr; }

  static CublasDoubleApi Find() {
    const library_double::Query query("libcublas.so.13", "cublas");
    CublasDoubleApi api;
    api.FindCommon(query);
    query.Find("last_call", api.last_call);
    return api;
  }
};

}  // namespace se_test
