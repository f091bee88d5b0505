// cuRAND, loaded at run time through the canned plugins' one loader
// (canned/detail/library.hpp), so that a program built with
// se::cuda::kCuRandPlugin still starts where cuRAND is not installed; there
// the first RNG call is UNAVAILABLE and names the package. curand.h is needed
// at build time only, for the types and each entry point's prototype.
#pragma once

#include <curand.h>

#include <span>
#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::rng_detail {

// The sonames tried, newest first: CUDA 12 and 13 ship libcurand.so.10.
inline constexpr const char* kCuRandLibraries[] = {"libcurand.so.10", "libcurand.so"};
inline constexpr canned_detail::RunTimeLibrary kCuRandLibrary{
    "cuda", "cuRAND", kCuRandLibraries,
    "libcurand-13-0 from NVIDIA's CUDA repository, or Debian's libcurand10 (non-free)"};

#define SE_CURAND_ENTRY_POINTS(X, A)       \
  X(A, curandCreateGenerator)              \
  X(A, curandDestroyGenerator)             \
  X(A, curandSetStream)                    \
  X(A, curandSetPseudoRandomGeneratorSeed) \
  X(A, curandSetGeneratorOffset)           \
  X(A, curandGenerateUniform)              \
  X(A, curandGenerateUniformDouble)        \
  X(A, curandGenerateNormal)               \
  X(A, curandGenerateNormalDouble)

struct CuRandApi {
  SE_CURAND_ENTRY_POINTS(STREAMEXECUTOR_ENTRY_POINT_MEMBER, CuRandApi)
};
inline constexpr canned_detail::EntryPoint<CuRandApi> kCuRandEntryPoints[] = {
    SE_CURAND_ENTRY_POINTS(STREAMEXECUTOR_LISTED_ENTRY_POINT, CuRandApi)};
#undef SE_CURAND_ENTRY_POINTS

// Loaded once per process; exported, so that one table serves every shared
// library that includes this header.
STREAMEXECUTOR_EXPORT inline const canned_detail::Loaded<CuRandApi>& CuRand() {
  static const canned_detail::Loaded<CuRandApi> load = canned_detail::Load(kCuRandLibrary, kCuRandEntryPoints);
  return load;
}

inline std::string_view CuRandStatusName(curandStatus_t status) {
  switch (status) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
  }
  return "an unknown curandStatus_t";
}

inline Status CuRandError(curandStatus_t status, std::string_view call, std::string_view device) {
  const ErrorCode code = status == CURAND_STATUS_ALLOCATION_FAILED     ? ErrorCode::kResourceExhausted
                         : status == CURAND_STATUS_LENGTH_NOT_MULTIPLE ? ErrorCode::kInvalidArgument
                                                                       : ErrorCode::kInternal;
  return MakeError(code, "{} on {}: {} ({})", call, device, CuRandStatusName(status), static_cast<int>(status));
}

}  // namespace streamexecutor::rng_detail
