// cuBLAS, loaded at run time through the canned plugins' one loader
// (canned/detail/library.hpp): a program built with the CUDA backend and BLAS
// must start on machines without cuBLAS, so nothing links against it.
// cublas_v2.h is needed at build time only, for the types and for each entry
// point's exact signature (the table below is declared with decltype of the
// header's prototypes, so a mismatch with the toolkit does not compile).
#pragma once

#include <cublas_v2.h>

#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::blas_detail {

#define SE_CUBLAS_ENTRY_POINTS(X, A) \
  X(A, cublasCreate_v2)              \
  X(A, cublasDestroy_v2)             \
  X(A, cublasSetStream_v2)           \
  X(A, cublasSetPointerMode_v2)      \
  X(A, cublasSetWorkspace_v2)        \
  X(A, cublasSaxpy_v2)               \
  X(A, cublasDaxpy_v2)               \
  X(A, cublasSdot_v2)                \
  X(A, cublasDdot_v2)                \
  X(A, cublasSgemv_v2)               \
  X(A, cublasDgemv_v2)               \
  X(A, cublasSgemm_v2)               \
  X(A, cublasDgemm_v2)               \
  X(A, cublasHgemm)                  \
  X(A, cublasSgemmBatched)           \
  X(A, cublasDgemmBatched)           \
  X(A, cublasHgemmBatched)           \
  X(A, cublasSgemmStridedBatched)    \
  X(A, cublasDgemmStridedBatched)    \
  X(A, cublasHgemmStridedBatched)

struct CublasApi {
  SE_CUBLAS_ENTRY_POINTS(STREAMEXECUTOR_ENTRY_POINT_MEMBER, CublasApi)
  // Newer than some cuBLAS 12 builds: null where the library lacks it.
  decltype(&::cublasGetStatusName) cublasGetStatusName = nullptr;

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
  Status Error(cublasStatus_t status, std::string_view call, ::streamexecutor::detail::FormatString<Args...> context,
               Args&&... args) const {
    const ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED    ? ErrorCode::kResourceExhausted
                           : status == CUBLAS_STATUS_INVALID_VALUE ? ErrorCode::kInvalidArgument
                           : status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH
                               ? ErrorCode::kUnimplemented
                               : ErrorCode::kInternal;
    return Status(code, ::streamexecutor::detail::Format(
                            "{} failed with {} ({}) {}", call, StatusName(status), static_cast<int>(status),
                            ::streamexecutor::detail::Format(context, std::forward<Args>(args)...)));
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
inline constexpr canned_detail::RunTimeLibrary kCublasLibrary{
    "cuda", "cuBLAS", kCublasLibraries, "libcublas-13-0 (or libcublas-12-x) from NVIDIA's CUDA repository"};

inline constexpr canned_detail::EntryPoint<CublasApi> kCublasEntryPoints[] = {SE_CUBLAS_ENTRY_POINTS(
    STREAMEXECUTOR_LISTED_ENTRY_POINT, CublasApi) STREAMEXECUTOR_OPTIONAL_ENTRY_POINT(CublasApi, cublasGetStatusName)};
#undef SE_CUBLAS_ENTRY_POINTS

// Loaded once per process and never unloaded (handles may be destroyed by
// static destructors); exported, so that one table serves every shared
// library that includes this header.
STREAMEXECUTOR_EXPORT inline const canned_detail::Loaded<CublasApi>& Cublas() {
  static const canned_detail::Loaded<CublasApi> load = canned_detail::Load(kCublasLibrary, kCublasEntryPoints);
  return load;
}

}  // namespace streamexecutor::blas_detail
