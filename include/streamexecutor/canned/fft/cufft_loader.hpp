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

#define SE_CUFFT_ENTRY_POINTS(X) \
  X(cufftPlan1d)                 \
  X(cufftPlan2d)                 \
  X(cufftPlan3d)                 \
  X(cufftPlanMany)               \
  X(cufftDestroy)                \
  X(cufftSetStream)              \
  X(cufftExecC2C)                \
  X(cufftExecR2C)                \
  X(cufftExecC2R)                \
  X(cufftExecZ2Z)                \
  X(cufftExecD2Z)                \
  X(cufftExecZ2D)

struct CuFftApi {
#define SE_CUFFT_MEMBER(name) decltype(&::name) name = nullptr;
  SE_CUFFT_ENTRY_POINTS(SE_CUFFT_MEMBER)
#undef SE_CUFFT_MEMBER
};

#define SE_CUFFT_ENTRY(name) STREAMEXECUTOR_ENTRY_POINT(CuFftApi, name),
inline constexpr canned_detail::EntryPoint<CuFftApi> kCuFftEntryPoints[] = {SE_CUFFT_ENTRY_POINTS(SE_CUFFT_ENTRY)};
#undef SE_CUFFT_ENTRY
#undef SE_CUFFT_ENTRY_POINTS

using CuFftLoad = canned_detail::Loaded<CuFftApi>;

// `names`: the sonames to try; tests pass ones that cannot exist.
inline CuFftLoad LoadCuFft(std::span<const char* const> names = kCuFftLibraries) {
  canned_detail::RunTimeLibrary library = kCuFftLibrary;
  library.sonames = names;
  return canned_detail::Load<CuFftApi>(library, kCuFftEntryPoints);
}

// One table per process, however many shared libraries include this header.
STREAMEXECUTOR_EXPORT inline const CuFftLoad& CuFft() {
  static const CuFftLoad load = LoadCuFft();
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
