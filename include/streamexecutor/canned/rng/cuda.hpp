// The RNG plugins of the CUDA backend. se::cuda::kPhiloxPlugin:
// philox_kernels.cu, compiled to PTX by nvcc when streamexecutor was built and
// embedded as philox_ptx.inc (in the build tree, STREAMEXECUTOR_RNG_PHILOX_PTX_INC
// names it; installed, it sits beside this header). A build without nvcc has
// no PTX, and the plugin is then UNAVAILABLE at its first use rather than
// absent, so that code naming it still compiles everywhere.
//
// se::cuda::kCuRandPlugin, the vendor generator: NVIDIA's cuRAND, loaded at
// run time (curand_loader.hpp). Its generator is cuRAND's Philox4x32-10
// (CURAND_RNG_PSEUDO_PHILOX4_32_10), but cuRAND derives its numbers in its
// own way: they are not the numbers of the Philox plugins (docs/rng.md).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "streamexecutor/canned/rng/common.hpp"
#include "streamexecutor/canned/rng/kernels.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/cuda.hpp"

#if defined(STREAMEXECUTOR_RNG_PHILOX_PTX_INC)
#include STREAMEXECUTOR_RNG_PHILOX_PTX_INC
#elif __has_include(<streamexecutor/canned/rng/philox_ptx.inc>)
#include <streamexecutor/canned/rng/philox_ptx.inc>
#endif

#if __has_include(<curand.h>)
#include "streamexecutor/canned/rng/curand_loader.hpp"
#define STREAMEXECUTOR_RNG_WITH_CURAND 1
#endif

namespace streamexecutor::rng_detail {

// The PTX is embedded as several literals (each under the 64 KiB that
// -Woverlength-strings allows) and joined once per process.
inline const std::string& PhiloxPtx() {
  static const std::string ptx = [] {
    std::string text;
#if defined(STREAMEXECUTOR_RNG_HAVE_PHILOX_PTX)
    for (std::string_view chunk : kPhiloxPtxChunks) text += chunk;
#endif
    return text;
  }();
  return ptx;
}

#if defined(STREAMEXECUTOR_RNG_WITH_CURAND)
// The executor's cuRAND generator, made on first use in its primary context
// (the one the CUDA runtime inside cuRAND uses), bound to each caller's
// stream for the length of one call. cuRAND generators are not thread-safe,
// hence the lock around every use.
class CuRandState {
 public:
  static StatusOr<std::unique_ptr<CuRandState>> Make(StreamExecutor<cuda>* executor, std::string_view /*caller*/) {
    const auto& load = CuRand();
    if (!load.status.ok()) return load.status;
    cuda::ExecutorState& native = executor->native_state();
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (!scope.ok()) return scope.status();
    curandGenerator_t generator = nullptr;
    if (const curandStatus_t r = load.api.curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_PHILOX4_32_10);
        r != CURAND_STATUS_SUCCESS) {
      return CuRandError(r, "curandCreateGenerator", executor->DeviceLabel());
    }
    return std::unique_ptr<CuRandState>(new CuRandState(load.api, native, generator));
  }
  ~CuRandState() {
    const cuda_detail::ContextScope scope(*native_->api, native_->context);
    if (scope.ok()) api_->curandDestroyGenerator(generator_);
  }
  CuRandState(const CuRandState&) = delete;
  CuRandState& operator=(const CuRandState&) = delete;

  // cuRAND's seed is 64 bits: the Philox key XOR the stream word of our seed
  // (state.hpp), and the offset starts over as it does on the Philox plugins.
  Status Reseed(const Seed& seed, std::string_view device) {
    std::lock_guard<std::mutex> lock(mutex_);
    const cuda_detail::ContextScope scope(*native_->api, native_->context);
    if (!scope.ok()) return scope.status();
    if (const curandStatus_t r = api_->curandSetPseudoRandomGeneratorSeed(generator_, seed.key ^ seed.stream);
        r != CURAND_STATUS_SUCCESS) {
      return CuRandError(r, "curandSetPseudoRandomGeneratorSeed", device);
    }
    if (const curandStatus_t r = api_->curandSetGeneratorOffset(generator_, 0); r != CURAND_STATUS_SUCCESS) {
      return CuRandError(r, "curandSetGeneratorOffset", device);
    }
    seeded_ = true;
    return Status();
  }

  template <RngValue T>
  Status Generate(Stream<cuda>& stream, std::string_view caller, const DeviceMemoryBase& values, std::uint64_t count,
                  Distribution distribution, T mean, T stddev) {
    if (stream.capturing()) return stream.NotCapturable(caller);
    const std::string& device = stream.parent()->DeviceLabel();
    const bool gaussian = distribution == Distribution::kGaussian;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!seeded_) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on {}: no RNG seed was set on this device (call ThenSetRngSeed first)", caller, device);
    }
    if (gaussian && count % 2 != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: cuRAND draws Gaussians in pairs, so the count must be even; this one is {}", caller,
                       device, count);
    }
    const cuda_detail::ContextScope scope(*native_->api, native_->context);
    if (!scope.ok()) return scope.status();
    if (const curandStatus_t r = api_->curandSetStream(generator_, Interop<cuda>::Queue(stream.native_handle()));
        r != CURAND_STATUS_SUCCESS) {
      return CuRandError(r, "curandSetStream", device);
    }
    const CUdeviceptr out = cuda::Address(values);
    const auto n = static_cast<std::size_t>(count);
    curandStatus_t r = CURAND_STATUS_SUCCESS;
    std::string_view call;
    if constexpr (sizeof(T) == 4) {
      auto* data = reinterpret_cast<float*>(static_cast<std::uintptr_t>(out));
      call = gaussian ? "curandGenerateNormal" : "curandGenerateUniform";
      r = gaussian ? api_->curandGenerateNormal(generator_, data, n, mean, stddev)
                   : api_->curandGenerateUniform(generator_, data, n);
    } else {
      auto* data = reinterpret_cast<double*>(static_cast<std::uintptr_t>(out));
      call = gaussian ? "curandGenerateNormalDouble" : "curandGenerateUniformDouble";
      r = gaussian ? api_->curandGenerateNormalDouble(generator_, data, n, mean, stddev)
                   : api_->curandGenerateUniformDouble(generator_, data, n);
    }
    return r == CURAND_STATUS_SUCCESS ? Status() : CuRandError(r, call, device);
  }

 private:
  CuRandState(const CuRandApi& api, cuda::ExecutorState& native, curandGenerator_t generator)
      : api_(&api), native_(&native), generator_(generator) {}

  const CuRandApi* api_;
  cuda::ExecutorState* native_;
  curandGenerator_t generator_;
  std::mutex mutex_;
  bool seeded_ = false;
};

#else
// Built without curand.h: the plugin exists in name only. Make refuses every
// executor, so Reseed and Generate are never reached; they exist so that the
// operations compile.
class CuRandState {
 public:
  static StatusOr<std::unique_ptr<CuRandState>> Make(StreamExecutor<cuda>* executor, std::string_view caller) {
    return MakeError(ErrorCode::kUnavailable,
                     "{} on {}: the cuRAND plugin was not built in (curand.h was not found when this program was "
                     "compiled; install the CUDA toolkit's cuRAND headers)",
                     caller, executor->DeviceLabel());
  }
  Status Reseed(const Seed&, std::string_view device) { return Missing(device); }
  template <RngValue T>
  Status Generate(Stream<cuda>& stream, std::string_view, const DeviceMemoryBase&, std::uint64_t, Distribution, T, T) {
    return Missing(stream.parent()->DeviceLabel());
  }

 private:
  static Status Missing(std::string_view device) {
    return MakeError(ErrorCode::kUnavailable, "{}: the cuRAND plugin was not built in", device);
  }
};
#endif

template <>
struct Adapter<cuda> {
  static StatusOr<MultiKernelLoaderSpec> PhiloxSpec(PhiloxKernel which) {
    const std::string& ptx = PhiloxPtx();
    if (ptx.empty()) {
      return MakeError(ErrorCode::kUnavailable,
                       "cuda: the Philox RNG plugin has no PTX: streamexecutor was built without nvcc, so "
                       "canned/rng/philox_kernels.cu was not compiled (rebuild with the CUDA toolkit's nvcc on PATH "
                       "or in CUDA_PATH, or choose se::cuda::kCuRandPlugin)");
    }
    const bool gaussian = which == PhiloxKernel::kGaussianF32 || which == PhiloxKernel::kGaussianF64;
    MultiKernelLoaderSpec spec(gaussian ? 7 : 5);
    spec.AddCudaPtxInMemory(ptx, kPhiloxKernelNames[static_cast<std::size_t>(which)]);
    return spec;
  }

  static constexpr RngPluginId kVendorPlugin = cuda::kCuRandPlugin;
  using VendorState = CuRandState;
};

}  // namespace streamexecutor::rng_detail
