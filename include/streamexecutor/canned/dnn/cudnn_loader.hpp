// cuDNN, loaded at run time through the canned plugins' one loader
// (canned/detail/library.hpp): a program built with the cuDNN plugin still
// starts where cuDNN is not installed, and there its first DNN call is
// UNAVAILABLE and names the package. cudnn.h is needed at build time only,
// for the types and each entry point's prototype. libcudnn.so.9 is cuDNN 9's
// front library: it forwards the legacy calls used here to libcudnn_ops and
// libcudnn_cnn.
#pragma once

#include <cudnn.h>

#include <span>
#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::dnn_detail {

inline constexpr const char* kCuDnnLibraries[] = {"libcudnn.so.9", "libcudnn.so"};
inline constexpr canned_detail::RunTimeLibrary kCuDnnLibrary{
    "cuda", "cuDNN", kCuDnnLibraries, "libcudnn9-cuda-13 (or -cuda-12) from NVIDIA's CUDA repository"};

// Every entry point the plugin calls.
#define SE_CUDNN_ENTRY_POINTS(X)       \
  X(cudnnGetErrorString)               \
  X(cudnnCreate)                       \
  X(cudnnDestroy)                      \
  X(cudnnSetStream)                    \
  X(cudnnCreateTensorDescriptor)       \
  X(cudnnDestroyTensorDescriptor)      \
  X(cudnnSetTensor4dDescriptor)        \
  X(cudnnCreateFilterDescriptor)       \
  X(cudnnDestroyFilterDescriptor)      \
  X(cudnnSetFilter4dDescriptor)        \
  X(cudnnCreateConvolutionDescriptor)  \
  X(cudnnDestroyConvolutionDescriptor) \
  X(cudnnSetConvolution2dDescriptor)   \
  X(cudnnSetConvolutionMathType)       \
  X(cudnnConvolutionForward)           \
  X(cudnnCreatePoolingDescriptor)      \
  X(cudnnDestroyPoolingDescriptor)     \
  X(cudnnSetPooling2dDescriptor)       \
  X(cudnnPoolingForward)               \
  X(cudnnCreateActivationDescriptor)   \
  X(cudnnDestroyActivationDescriptor)  \
  X(cudnnSetActivationDescriptor)      \
  X(cudnnActivationForward)            \
  X(cudnnSoftmaxForward)

struct CuDnnApi {
#define SE_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  SE_CUDNN_ENTRY_POINTS(SE_CUDNN_MEMBER)
#undef SE_CUDNN_MEMBER
};

#define SE_CUDNN_ENTRY(name) STREAMEXECUTOR_ENTRY_POINT(CuDnnApi, name),
inline constexpr canned_detail::EntryPoint<CuDnnApi> kCuDnnEntryPoints[] = {SE_CUDNN_ENTRY_POINTS(SE_CUDNN_ENTRY)};
#undef SE_CUDNN_ENTRY
#undef SE_CUDNN_ENTRY_POINTS

using CuDnnLoad = canned_detail::Loaded<CuDnnApi>;

// `names`: the sonames to try, newest first; tests pass ones that cannot exist.
inline CuDnnLoad LoadCuDnn(std::span<const char* const> names = kCuDnnLibraries) {
  canned_detail::RunTimeLibrary library = kCuDnnLibrary;
  library.sonames = names;
  return canned_detail::Load<CuDnnApi>(library, kCuDnnEntryPoints);
}

// One table per process, however many shared libraries include this header.
STREAMEXECUTOR_EXPORT inline const CuDnnLoad& CuDnn() {
  static const CuDnnLoad load = LoadCuDnn();
  return load;
}

inline Status CuDnnError(const CuDnnApi& api, cudnnStatus_t status, std::string_view caller, std::string_view call,
                         std::string_view device) {
  const ErrorCode code = status == CUDNN_STATUS_ALLOC_FAILED    ? ErrorCode::kResourceExhausted
                         : status == CUDNN_STATUS_BAD_PARAM     ? ErrorCode::kInvalidArgument
                         : status == CUDNN_STATUS_NOT_SUPPORTED ? ErrorCode::kUnimplemented
                                                                : ErrorCode::kInternal;
  const char* name = api.cudnnGetErrorString != nullptr ? api.cudnnGetErrorString(status) : nullptr;
  return MakeError(code, "{} on {}: {} failed with {} ({})", caller, device, call,
                   name != nullptr ? name : "an unknown cudnnStatus_t", static_cast<int>(status));
}

}  // namespace streamexecutor::dnn_detail
