// cuBLAS, loaded at run time like the CUDA driver (cuda/driver.hpp): a
// program built with the CUDA backend and BLAS must start on machines without
// cuBLAS, so nothing links against it. cublas_v2.h is needed at build time
// only, for the types and for each entry point's exact signature (the table
// below is declared with decltype of the header's prototypes, so a mismatch
// with the toolkit does not compile).
#pragma once

#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>
#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::blas_detail {

#define SE_CUBLAS_ENTRY_POINTS(X) \
  X(cublasCreate_v2)              \
  X(cublasDestroy_v2)             \
  X(cublasSetStream_v2)           \
  X(cublasSetPointerMode_v2)      \
  X(cublasSaxpy_v2)               \
  X(cublasDaxpy_v2)               \
  X(cublasSdot_v2)                \
  X(cublasDdot_v2)                \
  X(cublasSgemv_v2)               \
  X(cublasDgemv_v2)               \
  X(cublasSgemm_v2)               \
  X(cublasDgemm_v2)               \
  X(cublasHgemm)                  \
  X(cublasSgemmBatched)           \
  X(cublasDgemmBatched)           \
  X(cublasHgemmBatched)           \
  X(cublasSgemmStridedBatched)    \
  X(cublasDgemmStridedBatched)    \
  X(cublasHgemmStridedBatched)

struct CublasApi {
#define SE_CUBLAS_DECLARE(name) decltype(&::name) name = nullptr;
  SE_CUBLAS_ENTRY_POINTS(SE_CUBLAS_DECLARE)
#undef SE_CUBLAS_DECLARE
  // Newer than some cuBLAS 12 builds: null where the library lacks it.
  decltype(&::cublasGetStatusName) cublasGetStatusName = nullptr;
  void* library = nullptr;
  const char* library_name = nullptr;

  std::string_view StatusName(cublasStatus_t status) const {
    if (cublasGetStatusName != nullptr) {
      if (const char* name = cublasGetStatusName(status); name != nullptr) return name;
    }
    switch (status) {
      case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
      case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
      case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
      case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
      case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
      case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
      case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
      case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
      case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
      default: return "an unknown cuBLAS status";
    }
  }

  template <typename... Args>
  Status Error(cublasStatus_t status, std::string_view call, fmt::format_string<Args...> context,
               Args&&... args) const {
    const ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED       ? ErrorCode::kResourceExhausted
                           : status == CUBLAS_STATUS_INVALID_VALUE    ? ErrorCode::kInvalidArgument
                           : status == CUBLAS_STATUS_NOT_SUPPORTED ||
                                   status == CUBLAS_STATUS_ARCH_MISMATCH
                               ? ErrorCode::kUnimplemented
                               : ErrorCode::kInternal;
    return Status(code, fmt::format("{} failed with {} ({}) {}", call, StatusName(status), static_cast<int>(status),
                                    fmt::format(context, std::forward<Args>(args)...)));
  }
};

// The sonames tried, newest first; the _v2 entry points used here have the
// same ABI in both. Tests put a directory holding a double of the first on
// LD_LIBRARY_PATH. A build may name one library of its own instead (a
// vendored cuBLAS; the missing-library test names one that does not exist).
#if defined(STREAMEXECUTOR_CUBLAS_LIBRARY)
inline constexpr const char* kCublasLibraries[] = {STREAMEXECUTOR_CUBLAS_LIBRARY};
#else
inline constexpr const char* kCublasLibraries[] = {"libcublas.so.13", "libcublas.so.12"};
#endif
inline constexpr std::string_view kCublasPackage = "libcublas-13-0 (or libcublas-12-x) from NVIDIA's CUDA repository";

struct CublasLoad {
  CublasApi api;
  Status status;
};

inline CublasLoad LoadCublas() {
  CublasLoad load;
  CublasApi& api = load.api;
  const canned_detail::OpenedLibrary opened = canned_detail::OpenFirstLibrary(kCublasLibraries);
  api.library = opened.handle;
  api.library_name = opened.name;
  const std::string& tried = opened.errors;
  if (api.library == nullptr) {
    load.status = MakeError(ErrorCode::kUnavailable,
                            "cuBLAS is not installed: {} (install the package {}, or put the directory holding "
                            "libcublas.so.13 on LD_LIBRARY_PATH)",
                            tried, kCublasPackage);
    return load;
  }
#define SE_CUBLAS_RESOLVE(name)                                                                                 \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(api.library, #name));                                   \
  if (api.name == nullptr) {                                                                                    \
    load.status = MakeError(ErrorCode::kUnavailable, "{} does not export {}: it is not a usable cuBLAS (install " \
                            "the package {})", api.library_name, #name, kCublasPackage);                          \
    return load;                                                                                                \
  }
  SE_CUBLAS_ENTRY_POINTS(SE_CUBLAS_RESOLVE)
#undef SE_CUBLAS_RESOLVE
  api.cublasGetStatusName =
      reinterpret_cast<decltype(api.cublasGetStatusName)>(dlsym(api.library, "cublasGetStatusName"));
  return load;
}

// Loaded once per process and never unloaded (handles may be destroyed by
// static destructors); exported, so one table serves every shared library.
STREAMEXECUTOR_EXPORT inline const CublasLoad& Cublas() {
  static const CublasLoad load = LoadCublas();
  return load;
}

}  // namespace streamexecutor::blas_detail

#if !defined(STREAMEXECUTOR_KEEP_CUBLAS_ENTRY_POINT_LIST)
#undef SE_CUBLAS_ENTRY_POINTS
#endif
