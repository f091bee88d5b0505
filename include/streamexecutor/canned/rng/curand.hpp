// se::cuda::kCuRandPlugin: NVIDIA's cuRAND, loaded at run time like the
// driver (cuda/driver.hpp), so that a program built with it still starts
// where cuRAND is not installed; there the first RNG call is UNAVAILABLE and
// names the package. curand.h is needed at build time only, for the types.
//
// The generator is cuRAND's Philox4x32-10 (CURAND_RNG_PSEUDO_PHILOX4_32_10),
// but cuRAND derives its numbers in its own way: they are not the numbers
// of the Philox plugins (docs/rng.md).
#pragma once

#include <curand.h>
#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/canned/rng/state.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::rng_detail {

// The sonames tried, newest first: CUDA 12 and 13 ship libcurand.so.10.
inline constexpr const char* kCuRandLibraries[] = {"libcurand.so.10", "libcurand.so"};
inline constexpr std::string_view kCuRandPackage =
    "libcurand-13-0 from NVIDIA's CUDA repository, or Debian's libcurand10 (non-free)";

struct CuRandApi {
  decltype(&::curandCreateGenerator) curandCreateGenerator = nullptr;
  decltype(&::curandDestroyGenerator) curandDestroyGenerator = nullptr;
  decltype(&::curandSetStream) curandSetStream = nullptr;
  decltype(&::curandSetPseudoRandomGeneratorSeed) curandSetPseudoRandomGeneratorSeed = nullptr;
  decltype(&::curandSetGeneratorOffset) curandSetGeneratorOffset = nullptr;
  decltype(&::curandGenerateUniform) curandGenerateUniform = nullptr;
  decltype(&::curandGenerateUniformDouble) curandGenerateUniformDouble = nullptr;
  decltype(&::curandGenerateNormal) curandGenerateNormal = nullptr;
  decltype(&::curandGenerateNormalDouble) curandGenerateNormalDouble = nullptr;
};

struct CuRandLoad {
  CuRandApi api;
  Status status;
};

// `names`: the sonames to try; tests pass ones that cannot exist.
inline CuRandLoad LoadCuRand(std::span<const char* const> names = kCuRandLibraries) {
  CuRandLoad load;
  const canned_detail::OpenedLibrary opened = canned_detail::OpenFirstLibrary(names);
  void* const library = opened.handle;
  const std::string& errors = opened.errors;
  if (library == nullptr) {
    load.status = MakeError(ErrorCode::kUnavailable, "cuda: the cuRAND plugin needs cuRAND ({}), which could not be "
                            "loaded: {}; install {}",
                            names.empty() ? "" : names[0], errors, kCuRandPackage);
    return load;
  }
  CuRandApi& api = load.api;
  std::string missing;
  using canned_detail::ResolveSymbol;
  ResolveSymbol(library, "curandCreateGenerator", api.curandCreateGenerator, missing);
  ResolveSymbol(library, "curandDestroyGenerator", api.curandDestroyGenerator, missing);
  ResolveSymbol(library, "curandSetStream", api.curandSetStream, missing);
  ResolveSymbol(library, "curandSetPseudoRandomGeneratorSeed", api.curandSetPseudoRandomGeneratorSeed, missing);
  ResolveSymbol(library, "curandSetGeneratorOffset", api.curandSetGeneratorOffset, missing);
  ResolveSymbol(library, "curandGenerateUniform", api.curandGenerateUniform, missing);
  ResolveSymbol(library, "curandGenerateUniformDouble", api.curandGenerateUniformDouble, missing);
  ResolveSymbol(library, "curandGenerateNormal", api.curandGenerateNormal, missing);
  ResolveSymbol(library, "curandGenerateNormalDouble", api.curandGenerateNormalDouble, missing);
  if (!missing.empty()) {
    load.status = MakeError(ErrorCode::kUnavailable, "cuda: the loaded cuRAND lacks {}; install {}", missing,
                            kCuRandPackage);
  }
  // Kept loaded until exit, as the driver is: generators may outlive main.
  return load;
}

// One table per process, however many shared libraries include this header.
STREAMEXECUTOR_EXPORT inline const CuRandLoad& CuRand() {
  static const CuRandLoad load = LoadCuRand();
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
  const ErrorCode code = status == CURAND_STATUS_ALLOCATION_FAILED ? ErrorCode::kResourceExhausted
                         : status == CURAND_STATUS_LENGTH_NOT_MULTIPLE ? ErrorCode::kInvalidArgument
                                                                        : ErrorCode::kInternal;
  return MakeError(code, "{} on {}: {} ({})", call, device, CuRandStatusName(status), static_cast<int>(status));
}

// The executor's cuRAND generator, made on first use in its primary context
// (the one the CUDA runtime inside cuRAND uses), bound to each caller's
// stream for the length of one call. cuRAND generators are not thread-safe,
// hence the lock around every use.
class CuRandState {
 public:
  static StatusOr<std::unique_ptr<CuRandState>> Make(StreamExecutor<cuda>* executor) {
    const CuRandLoad& load = CuRand();
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

  template <typename T>
  Status Generate(std::string_view caller, std::string_view device, CUstream stream, CUdeviceptr out,
                  std::uint64_t count, bool gaussian, T mean, T stddev) {
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
    if (const curandStatus_t r = api_->curandSetStream(generator_, stream); r != CURAND_STATUS_SUCCESS) {
      return CuRandError(r, "curandSetStream", device);
    }
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

}  // namespace streamexecutor::rng_detail
