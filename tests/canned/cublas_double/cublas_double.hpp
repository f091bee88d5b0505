// The query side of the cuBLAS test double (cublas_double.cpp): a stand-in for
// libcublas.so.13, for machines without a GPU. It computes nothing: it records
// each call's arguments, the stream its handle was bound to and the pointer
// mode, so that a test checks what the BLAS plugin asked cuBLAS to do. Tests
// reach these functions with dlsym on the already-loaded library.
#pragma once

#include <dlfcn.h>

extern "C" {

// One recorded call. Matrices: a, b, c with lda, ldb, ldc. Vectors: a = x,
// b = y (read), c = y or the dot result (written), lda = incx, ldb = incy.
struct SeCublasDoubleCall {
  char name[32];
  void* handle;
  void* stream;       // the handle's stream when the call was made
  int pointer_mode;   // cublasPointerMode_t
  int trans_a;        // cublasOperation_t
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
};

typedef long (*SeCublasDoubleCallsFn)(const char* entry_point);
typedef bool (*SeCublasDoubleLastCallFn)(SeCublasDoubleCall* out);
// The next call of `entry_point` returns `status` and records nothing.
typedef void (*SeCublasDoubleFailNextFn)(const char* entry_point, int status);
}

namespace se_test {

struct CublasDoubleApi {
  SeCublasDoubleCallsFn calls = nullptr;
  SeCublasDoubleLastCallFn last_call = nullptr;
  SeCublasDoubleFailNextFn fail_next = nullptr;

  bool loaded() const { return calls != nullptr && last_call != nullptr && fail_next != nullptr; }

  // RTLD_NOLOAD: the library the plugin already opened, never a second copy.
  static CublasDoubleApi Find() {
    CublasDoubleApi api;
    void* library = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) return api;
    api.calls = reinterpret_cast<SeCublasDoubleCallsFn>(dlsym(library, "se_cublas_double_calls"));
    api.last_call = reinterpret_cast<SeCublasDoubleLastCallFn>(dlsym(library, "se_cublas_double_last_call"));
    api.fail_next = reinterpret_cast<SeCublasDoubleFailNextFn>(dlsym(library, "se_cublas_double_fail_next"));
    dlclose(library);  // drops only the reference NOLOAD added
    return api;
  }
};

}  // namespace se_test
