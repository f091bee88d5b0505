// cuFFT, loaded at run time through the canned plugins' one loader
// (canned/detail/library.hpp), so that a program built with
// se::cuda::kCuFftPlugin still starts where cuFFT is not installed; there plan
// creation is UNAVAILABLE and names the package. cufft.h is needed at build
// time only, for the types and each entry point's prototype.
#pragma once

#include <cufft.h>

#include <span>
#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::fft_detail {

// CUDA 12 and 13 ship libcufft.so.12 (CUDA 11: .so.10).
inline constexpr const char* kCuFftLibraries[] = {"libcufft.so.12", "libcufft.so.11", "libcufft.so.10", "libcufft.so"};
inline constexpr canned_detail::RunTimeLibrary kCuFftLibrary{
    "cuda", "cuFFT", kCuFftLibraries, "libcufft-13-0 from NVIDIA's CUDA repository, or Debian's libcufft11 (non-free)"};

#define SE_CUFFT_ENTRY_POINTS(X, A) \
  X(A, cufftPlan1d)                 \
  X(A, cufftPlan2d)                 \
  X(A, cufftPlan3d)                 \
  X(A, cufftPlanMany)               \
  X(A, cufftDestroy)                \
  X(A, cufftSetStream)              \
  X(A, cufftExecC2C)                \
  X(A, cufftExecR2C)                \
  X(A, cufftExecC2R)                \
  X(A, cufftExecZ2Z)                \
  X(A, cufftExecD2Z)                \
  X(A, cufftExecZ2D)

struct CuFftApi {
  SE_CUFFT_ENTRY_POINTS(STREAMEXECUTOR_ENTRY_POINT_MEMBER, CuFftApi)
};
inline constexpr canned_detail::EntryPoint<CuFftApi> kCuFftEntryPoints[] = {
    SE_CUFFT_ENTRY_POINTS(STREAMEXECUTOR_LISTED_ENTRY_POINT, CuFftApi)};
#undef SE_CUFFT_ENTRY_POINTS

// Loaded once per process; exported, so that one table serves every shared
// library that includes this header.
STREAMEXECUTOR_EXPORT inline const canned_detail::Loaded<CuFftApi>& CuFft() {
  static const canned_detail::Loaded<CuFftApi> load = canned_detail::Load(kCuFftLibrary, kCuFftEntryPoints);
  return load;
}

// The results every cuFFT since CUDA 10 has; others print as their number
// (the enum gained and lost members across versions, so no switch over it).
inline std::string_view CuFftResultName(cufftResult result) {
  if (result == CUFFT_INVALID_PLAN) return "CUFFT_INVALID_PLAN";
  if (result == CUFFT_ALLOC_FAILED) return "CUFFT_ALLOC_FAILED";
  if (result == CUFFT_INVALID_TYPE) return "CUFFT_INVALID_TYPE";
  if (result == CUFFT_INVALID_VALUE) return "CUFFT_INVALID_VALUE";
  if (result == CUFFT_INTERNAL_ERROR) return "CUFFT_INTERNAL_ERROR";
  if (result == CUFFT_EXEC_FAILED) return "CUFFT_EXEC_FAILED";
  if (result == CUFFT_SETUP_FAILED) return "CUFFT_SETUP_FAILED";
  if (result == CUFFT_INVALID_SIZE) return "CUFFT_INVALID_SIZE";
  if (result == CUFFT_UNALIGNED_DATA) return "CUFFT_UNALIGNED_DATA";
  if (result == CUFFT_INVALID_DEVICE) return "CUFFT_INVALID_DEVICE";
  if (result == CUFFT_NOT_IMPLEMENTED) return "CUFFT_NOT_IMPLEMENTED";
  if (result == CUFFT_NOT_SUPPORTED) return "CUFFT_NOT_SUPPORTED";
  return "cufftResult";
}

inline Status CuFftError(cufftResult result, std::string_view call, std::string_view device) {
  return MakeError(result == CUFFT_ALLOC_FAILED                                    ? ErrorCode::kResourceExhausted
                   : result == CUFFT_INVALID_SIZE || result == CUFFT_INVALID_VALUE ? ErrorCode::kInvalidArgument
                                                                                   : ErrorCode::kInternal,
                   "{} on {}: {} ({})", call, device, CuFftResultName(result), static_cast<int>(result));
}

}  // namespace streamexecutor::fft_detail
