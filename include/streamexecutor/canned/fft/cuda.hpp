// se::cuda::kCuFftPlugin: NVIDIA cuFFT, loaded at run time like the driver
// (cuda/driver.hpp), so that a program built with it still starts where
// cuFFT is not installed; there plan creation is UNAVAILABLE and names the
// package. cufft.h is needed at build time only, for the types. A plan is a
// cuFFT plan (cufftPlan{1,2,3}d; a batched plan cufftPlanMany) made in the
// executor's primary context; each transform binds
// the caller's stream (cufftSetStream) for the length of its enqueue.
#pragma once

#include <cufft.h>
#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/canned/fft/common.hpp"
#include "streamexecutor/cuda.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::fft_detail {

// CUDA 12 and 13 ship libcufft.so.12 (CUDA 11: .so.10).
inline constexpr const char* kCuFftLibraries[] = {"libcufft.so.12", "libcufft.so.11", "libcufft.so.10", "libcufft.so"};
inline constexpr std::string_view kCuFftPackage =
    "libcufft-13-0 from NVIDIA's CUDA repository, or Debian's libcufft11 (non-free)";

struct CuFftApi {
  decltype(&::cufftPlan1d) cufftPlan1d = nullptr;
  decltype(&::cufftPlan2d) cufftPlan2d = nullptr;
  decltype(&::cufftPlan3d) cufftPlan3d = nullptr;
  decltype(&::cufftPlanMany) cufftPlanMany = nullptr;
  decltype(&::cufftDestroy) cufftDestroy = nullptr;
  decltype(&::cufftSetStream) cufftSetStream = nullptr;
  decltype(&::cufftExecC2C) cufftExecC2C = nullptr;
  decltype(&::cufftExecR2C) cufftExecR2C = nullptr;
  decltype(&::cufftExecC2R) cufftExecC2R = nullptr;
  decltype(&::cufftExecZ2Z) cufftExecZ2Z = nullptr;
  decltype(&::cufftExecD2Z) cufftExecD2Z = nullptr;
  decltype(&::cufftExecZ2D) cufftExecZ2D = nullptr;
};

struct CuFftLoad {
  CuFftApi api;
  Status status;
};

// `names`: the sonames to try; tests pass ones that cannot exist.
inline CuFftLoad LoadCuFft(std::span<const char* const> names = kCuFftLibraries) {
  CuFftLoad load;
  const canned_detail::OpenedLibrary opened = canned_detail::OpenFirstLibrary(names);
  void* const library = opened.handle;
  const std::string& errors = opened.errors;
  if (library == nullptr) {
    load.status = MakeError(ErrorCode::kUnavailable,
                            "cuda: the cuFFT plugin needs cuFFT ({}), which could not be loaded: {}; install {}",
                            names.empty() ? "" : names[0], errors, kCuFftPackage);
    return load;
  }
  CuFftApi& api = load.api;
  std::string missing;
  using canned_detail::ResolveSymbol;
  ResolveSymbol(library, "cufftPlan1d", api.cufftPlan1d, missing);
  ResolveSymbol(library, "cufftPlan2d", api.cufftPlan2d, missing);
  ResolveSymbol(library, "cufftPlan3d", api.cufftPlan3d, missing);
  ResolveSymbol(library, "cufftPlanMany", api.cufftPlanMany, missing);
  ResolveSymbol(library, "cufftDestroy", api.cufftDestroy, missing);
  ResolveSymbol(library, "cufftSetStream", api.cufftSetStream, missing);
  ResolveSymbol(library, "cufftExecC2C", api.cufftExecC2C, missing);
  ResolveSymbol(library, "cufftExecR2C", api.cufftExecR2C, missing);
  ResolveSymbol(library, "cufftExecC2R", api.cufftExecC2R, missing);
  ResolveSymbol(library, "cufftExecZ2Z", api.cufftExecZ2Z, missing);
  ResolveSymbol(library, "cufftExecD2Z", api.cufftExecD2Z, missing);
  ResolveSymbol(library, "cufftExecZ2D", api.cufftExecZ2D, missing);
  if (!missing.empty()) {
    load.status = MakeError(ErrorCode::kUnavailable, "cuda: the loaded cuFFT lacks {}; install {}", missing,
                            kCuFftPackage);
  }
  return load;  // kept loaded until exit, as the driver is
}

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
  return MakeError(result == CUFFT_ALLOC_FAILED ? ErrorCode::kResourceExhausted
                   : result == CUFFT_INVALID_SIZE || result == CUFFT_INVALID_VALUE ? ErrorCode::kInvalidArgument
                                                                                    : ErrorCode::kInternal,
                   "{} on {}: {} ({})", call, device, CuFftResultName(result), static_cast<int>(result));
}

inline cufftType CuFftType(fft::Type type) {
  switch (type) {
    case fft::Type::kC2CForward:
    case fft::Type::kC2CInverse: return CUFFT_C2C;
    case fft::Type::kR2C: return CUFFT_R2C;
    case fft::Type::kC2R: return CUFFT_C2R;
    case fft::Type::kZ2ZForward:
    case fft::Type::kZ2ZInverse: return CUFFT_Z2Z;
    case fft::Type::kD2Z: return CUFFT_D2Z;
    case fft::Type::kZ2D: return CUFFT_Z2D;
  }
  return CUFFT_C2C;
}

template <>
class BackendPlan<cuda> {
 public:
  static constexpr std::string_view kPluginName = "cufft";

  static StatusOr<std::unique_ptr<BackendPlan>> Make(StreamExecutor<cuda>* executor, const PlanSpec& spec) {
    const CuFftLoad& load = CuFft();
    if (!load.status.ok()) return load.status;
    cuda::ExecutorState& native = executor->native_state();
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (!scope.ok()) return scope.status();
    const auto n = [&](int i) { return static_cast<int>(spec.dims[static_cast<std::size_t>(i)]); };
    const cufftType type = CuFftType(spec.type);
    cufftHandle handle = 0;
    cufftResult r = CUFFT_SUCCESS;
    if (spec.batched) {
      // The advanced layout, every embed given (CheckShape and CheckSide kept
      // each number below 2^31): cuFFT's null embed would drop the strides.
      int dims[3] = {}, in_embed[3] = {}, out_embed[3] = {};
      for (int i = 0; i < spec.rank; ++i) {
        const auto at = static_cast<std::size_t>(i);
        dims[i] = n(i);
        in_embed[i] = static_cast<int>(spec.in.embed[at]);
        out_embed[i] = static_cast<int>(spec.out.embed[at]);
      }
      r = load.api.cufftPlanMany(&handle, spec.rank, dims, in_embed, static_cast<int>(spec.in.stride),
                                 static_cast<int>(spec.in.distance), out_embed, static_cast<int>(spec.out.stride),
                                 static_cast<int>(spec.out.distance), type, static_cast<int>(spec.batch));
      if (r != CUFFT_SUCCESS) return CuFftError(r, "cufftPlanMany", executor->DeviceLabel());
    } else {
      if (spec.rank == 1) r = load.api.cufftPlan1d(&handle, n(0), type, 1);
      if (spec.rank == 2) r = load.api.cufftPlan2d(&handle, n(0), n(1), type);
      if (spec.rank == 3) r = load.api.cufftPlan3d(&handle, n(0), n(1), n(2), type);
      if (r != CUFFT_SUCCESS) {
        return CuFftError(r, "cufftPlan" + std::to_string(spec.rank) + "d", executor->DeviceLabel());
      }
    }
    return std::unique_ptr<BackendPlan>(new BackendPlan(load.api, executor, spec, handle));
  }

  ~BackendPlan() {
    cuda::ExecutorState& native = executor_->native_state();
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (scope.ok()) api_->cufftDestroy(handle_);
  }
  BackendPlan(const BackendPlan&) = delete;
  BackendPlan& operator=(const BackendPlan&) = delete;

  Status Enqueue(Stream<cuda>& stream, const DeviceMemoryBase& input, const DeviceMemoryBase& output) {
    const std::string& device = executor_->DeviceLabel();
    cuda::ExecutorState& native = executor_->native_state();
    // One plan, one bound stream at a time.
    std::lock_guard<std::mutex> lock(mutex_);
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (!scope.ok()) return scope.status();
    if (const cufftResult r = api_->cufftSetStream(handle_, Interop<cuda>::Queue(stream.native_handle()));
        r != CUFFT_SUCCESS) {
      return CuFftError(r, "cufftSetStream", device);
    }
    void* in = reinterpret_cast<void*>(static_cast<std::uintptr_t>(cuda::Address(input)));
    void* out = reinterpret_cast<void*>(static_cast<std::uintptr_t>(cuda::Address(output)));
    const int direction = fft::IsForward(spec_.type) ? CUFFT_FORWARD : CUFFT_INVERSE;
    cufftResult r = CUFFT_SUCCESS;
    std::string_view call;
    switch (spec_.type) {
      case fft::Type::kC2CForward:
      case fft::Type::kC2CInverse:
        call = "cufftExecC2C";
        r = api_->cufftExecC2C(handle_, static_cast<cufftComplex*>(in), static_cast<cufftComplex*>(out), direction);
        break;
      case fft::Type::kR2C:
        call = "cufftExecR2C";
        r = api_->cufftExecR2C(handle_, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out));
        break;
      case fft::Type::kC2R:
        call = "cufftExecC2R";
        r = api_->cufftExecC2R(handle_, static_cast<cufftComplex*>(in), static_cast<cufftReal*>(out));
        break;
      case fft::Type::kZ2ZForward:
      case fft::Type::kZ2ZInverse:
        call = "cufftExecZ2Z";
        r = api_->cufftExecZ2Z(handle_, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleComplex*>(out),
                               direction);
        break;
      case fft::Type::kD2Z:
        call = "cufftExecD2Z";
        r = api_->cufftExecD2Z(handle_, static_cast<cufftDoubleReal*>(in), static_cast<cufftDoubleComplex*>(out));
        break;
      case fft::Type::kZ2D:
        call = "cufftExecZ2D";
        r = api_->cufftExecZ2D(handle_, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleReal*>(out));
        break;
    }
    return r == CUFFT_SUCCESS ? Status() : CuFftError(r, call, device);
  }

 private:
  BackendPlan(const CuFftApi& api, StreamExecutor<cuda>* executor, const PlanSpec& spec, cufftHandle handle)
      : api_(&api), executor_(executor), spec_(spec), handle_(handle) {}

  const CuFftApi* api_;
  StreamExecutor<cuda>* executor_;
  PlanSpec spec_;
  cufftHandle handle_;
  std::mutex mutex_;
};

}  // namespace streamexecutor::fft_detail
