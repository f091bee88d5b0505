// se::cuda::kCuFftPlugin: NVIDIA cuFFT, loaded at run time (cufft_loader.hpp),
// so that a program built with it still starts where cuFFT is not installed;
// there plan creation is UNAVAILABLE and names the package. A plan is a
// cuFFT plan (cufftPlan{1,2,3}d; a batched plan cufftPlanMany) made in the
// executor's primary context; each transform binds
// the caller's stream (cufftSetStream) for the length of its enqueue.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "streamexecutor/canned/fft/common.hpp"
#include "streamexecutor/cuda.hpp"

#if __has_include(<cufft.h>)
#include "streamexecutor/canned/fft/cufft_loader.hpp"
#define STREAMEXECUTOR_FFT_WITH_CUFFT 1
#endif

namespace streamexecutor::fft_detail {

#if defined(STREAMEXECUTOR_FFT_WITH_CUFFT)
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

class CuFftPlan {
 public:
  static StatusOr<std::unique_ptr<CuFftPlan>> Make(StreamExecutor<cuda>* executor, const PlanSpec& spec) {
    const auto& load = CuFft();
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
    return std::unique_ptr<CuFftPlan>(new CuFftPlan(load.api, executor, spec, handle));
  }

  ~CuFftPlan() {
    cuda::ExecutorState& native = executor_->native_state();
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (scope.ok()) api_->cufftDestroy(handle_);
  }
  CuFftPlan(const CuFftPlan&) = delete;
  CuFftPlan& operator=(const CuFftPlan&) = delete;

  // While the stream captures, cuFFT enqueues on the buffer's capture stream
  // and the buffer holds the plan (`self` is this one), whose work area the
  // recorded kernels use.
  Status Enqueue(Stream<cuda>& stream, const std::shared_ptr<CuFftPlan>& self, const DeviceMemoryBase& input,
                 const DeviceMemoryBase& output) {
    const DeviceMemoryBase operands[] = {input, output};
    return canned_detail::EnqueueLibraryCall(
        stream, "ThenFft", operands,
        [&](cuda_detail::StreamState& native) { return EnqueueOn(native.stream, input, output); }, self);
  }

 private:
  Status EnqueueOn(CUstream target, const DeviceMemoryBase& input, const DeviceMemoryBase& output) {
    const std::string& device = executor_->DeviceLabel();
    cuda::ExecutorState& native = executor_->native_state();
    // One plan, one bound stream at a time.
    std::lock_guard<std::mutex> lock(mutex_);
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (!scope.ok()) return scope.status();
    if (const cufftResult r = api_->cufftSetStream(handle_, target); r != CUFFT_SUCCESS) {
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
  CuFftPlan(const CuFftApi& api, StreamExecutor<cuda>* executor, const PlanSpec& spec, cufftHandle handle)
      : api_(&api), executor_(executor), spec_(spec), handle_(handle) {}

  const CuFftApi* api_;
  StreamExecutor<cuda>* executor_;
  PlanSpec spec_;
  cufftHandle handle_;
  std::mutex mutex_;
};

template <>
struct Adapter<cuda> {
  static constexpr std::string_view kPluginName = "cufft";
  using Plan = CuFftPlan;
};
#else
// Built without cufft.h: the plugin exists in name only.
template <>
struct Adapter<cuda> {
  static constexpr std::string_view kPluginName = "cufft";
  static constexpr std::string_view kLibrary = "cuFFT's header (cufft.h)", kPackage = "libcufft-dev-13-0";
  using Plan = PlanWithoutLibrary<Adapter>;
};
#endif

}  // namespace streamexecutor::fft_detail
