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
#define SE_CUDNN_ENTRY_POINTS(X, A)       \
  X(A, cudnnGetErrorString)               \
  X(A, cudnnCreate)                       \
  X(A, cudnnDestroy)                      \
  X(A, cudnnSetStream)                    \
  X(A, cudnnCreateTensorDescriptor)       \
  X(A, cudnnDestroyTensorDescriptor)      \
  X(A, cudnnSetTensor4dDescriptor)        \
  X(A, cudnnCreateFilterDescriptor)       \
  X(A, cudnnDestroyFilterDescriptor)      \
  X(A, cudnnSetFilter4dDescriptor)        \
  X(A, cudnnCreateConvolutionDescriptor)  \
  X(A, cudnnDestroyConvolutionDescriptor) \
  X(A, cudnnSetConvolution2dDescriptor)   \
  X(A, cudnnSetConvolutionMathType)       \
  X(A, cudnnConvolutionForward)           \
  X(A, cudnnCreatePoolingDescriptor)      \
  X(A, cudnnDestroyPoolingDescriptor)     \
  X(A, cudnnSetPooling2dDescriptor)       \
  X(A, cudnnPoolingForward)               \
  X(A, cudnnCreateActivationDescriptor)   \
  X(A, cudnnDestroyActivationDescriptor)  \
  X(A, cudnnSetActivationDescriptor)      \
  X(A, cudnnActivationForward)            \
  X(A, cudnnSoftmaxForward)

struct CuDnnApi {
  SE_CUDNN_ENTRY_POINTS(STREAMEXECUTOR_ENTRY_POINT_MEMBER, CuDnnApi)
};
inline constexpr canned_detail::EntryPoint<CuDnnApi> kCuDnnEntryPoints[] = {
    SE_CUDNN_ENTRY_POINTS(STREAMEXECUTOR_LISTED_ENTRY_POINT, CuDnnApi)};
#undef SE_CUDNN_ENTRY_POINTS

// Loaded once per process; exported, so that one table serves every shared
// library that includes this header.
STREAMEXECUTOR_EXPORT inline const canned_detail::Loaded<CuDnnApi>& CuDnn() {
  static const canned_detail::Loaded<CuDnnApi> load = canned_detail::Load(kCuDnnLibrary, kCuDnnEntryPoints);
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
