// A recording test double of cuDNN, built as libcudnn.so.9 in a folder of its
// own: with that folder (and the counting driver double's) first on
// LD_LIBRARY_PATH, se::cuda::kCuDnnPlugin runs against it on machines with no
// GPU. It keeps what each descriptor was set to, records every compute call
// with the descriptors as they were at that moment and the handle's stream,
// and fills the call's output with a marker (the counting driver double's
// device memory is host memory), so that a test sees where it wrote. It
// computes no convolution: that is cuDNN's and needs a GPU.
#include <cudnn.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "../../library_double.hpp"
#include "cudnn_double.hpp"

// cudnn.h leaves these incomplete: the double gives them their content.
struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  SeCudnnDoubleTensor set{};
};
struct cudnnFilterStruct {
  int format = 0, type = 0, k = 0, c = 0, h = 0, w = 0;
};
struct cudnnConvolutionStruct {
  int pad_h = 0, pad_w = 0, u = 0, v = 0, dilation_h = 0, dilation_w = 0, mode = 0, type = 0, math = 0;
};
struct cudnnPoolingStruct {
  int mode = 0, nan = 0, window_h = 0, window_w = 0, pad_v = 0, pad_h = 0, stride_v = 0, stride_h = 0;
};
struct cudnnActivationStruct {
  int mode = 0, nan = 0;
  double coef = 0;
};

namespace {

// The value a compute call writes over its whole output.
constexpr double kMarker = 0.5;

struct Record : library_double::CallLog<cudnnStatus_t, CUDNN_STATUS_SUCCESS> {
  SeCudnnDoubleCall last{};
  SeCudnnDoubleLive live{};
};

Record& TheRecord() {
  static Record record;
  return record;
}

cudnnStatus_t Enter(const char* name) { return TheRecord().Enter(name); }

template <typename T>
cudnnStatus_t Make(const char* name, T** out) {
  if (const cudnnStatus_t s = Enter(name); s != CUDNN_STATUS_SUCCESS) return s;
  if (out == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *out = new T();
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  if constexpr (std::is_same_v<T, cudnnContext>) {
    r.live.handles += 1;
  } else {
    r.live.descriptors += 1;
  }
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t Destroy(const char* name, T* object) {
  if (const cudnnStatus_t s = Enter(name); s != CUDNN_STATUS_SUCCESS) return s;
  if (object == nullptr) return CUDNN_STATUS_SUCCESS;
  delete object;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  if constexpr (std::is_same_v<T, cudnnContext>) {
    r.live.handles -= 1;
  } else {
    r.live.descriptors -= 1;
  }
  return CUDNN_STATUS_SUCCESS;
}

// Starts the record of a compute call: its name, the stream, x, y, scalars.
SeCudnnDoubleCall Begin(const char* name, cudnnHandle_t handle, const void* alpha, cudnnTensorDescriptor_t x,
                        const void* x_data, const void* beta, cudnnTensorDescriptor_t y, void* y_data) {
  SeCudnnDoubleCall call{};
  std::strncpy(call.name, name, sizeof(call.name) - 1);
  call.stream = handle->stream;
  call.x = x->set;
  call.y = y->set;
  call.x_data = x_data;
  call.y_data = y_data;
  if (y->set.data_type == CUDNN_DATA_DOUBLE) {
    call.alpha = *static_cast<const double*>(alpha);
    call.beta = *static_cast<const double*>(beta);
  } else {
    call.alpha = *static_cast<const float*>(alpha);
    call.beta = *static_cast<const float*>(beta);
  }
  return call;
}

// Writes the marker over y's elements and keeps the record.
cudnnStatus_t Finish(const SeCudnnDoubleCall& call) {
  const SeCudnnDoubleTensor& y = call.y;
  const std::size_t count = static_cast<std::size_t>(y.n) * static_cast<std::size_t>(y.c) *
                            static_cast<std::size_t>(y.h) * static_cast<std::size_t>(y.w);
  for (std::size_t i = 0; i < count; ++i) {
    if (y.data_type == CUDNN_DATA_DOUBLE) {
      static_cast<double*>(call.y_data)[i] = kMarker;
    } else {
      static_cast<float*>(call.y_data)[i] = static_cast<float>(kMarker);
    }
  }
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.last = call;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_ALLOC_FAILED: return "CUDNN_STATUS_ALLOC_FAILED";
    default: return "CUDNN_STATUS_INTERNAL_ERROR (double)";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) { return Make("cudnnCreate", handle); }
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) { return Destroy("cudnnDestroy", handle); }
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (const cudnnStatus_t s = Enter("cudnnSetStream"); s != CUDNN_STATUS_SUCCESS) return s;
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) { return Make("cudnnCreateTensorDescriptor", d); }
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  return Destroy("cudnnDestroyTensorDescriptor", d);
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type,
                                         int n, int c, int h, int w) {
  if (const cudnnStatus_t s = Enter("cudnnSetTensor4dDescriptor"); s != CUDNN_STATUS_SUCCESS) return s;
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  d->set = SeCudnnDoubleTensor{static_cast<int>(format), static_cast<int>(type), n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) { return Make("cudnnCreateFilterDescriptor", d); }
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  return Destroy("cudnnDestroyFilterDescriptor", d);
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  if (const cudnnStatus_t s = Enter("cudnnSetFilter4dDescriptor"); s != CUDNN_STATUS_SUCCESS) return s;
  *d = cudnnFilterStruct{static_cast<int>(format), static_cast<int>(type), k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  return Make("cudnnCreateConvolutionDescriptor", d);
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  return Destroy("cudnnDestroyConvolutionDescriptor", d);
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t type) {
  if (const cudnnStatus_t s = Enter("cudnnSetConvolution2dDescriptor"); s != CUDNN_STATUS_SUCCESS) return s;
  const int math = d->math;
  *d = cudnnConvolutionStruct{
      pad_h, pad_w, u, v, dilation_h, dilation_w, static_cast<int>(mode), static_cast<int>(type), math};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  if (const cudnnStatus_t s = Enter("cudnnSetConvolutionMathType"); s != CUDNN_STATUS_SUCCESS) return s;
  d->math = static_cast<int>(math);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t x,
                                      const void* x_data, const cudnnFilterDescriptor_t w, const void* w_data,
                                      const cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t algo,
                                      void* workspace, size_t workspace_bytes, const void* beta,
                                      const cudnnTensorDescriptor_t y, void* y_data) {
  if (const cudnnStatus_t s = Enter("cudnnConvolutionForward"); s != CUDNN_STATUS_SUCCESS) return s;
  SeCudnnDoubleCall call = Begin("cudnnConvolutionForward", handle, alpha, x, x_data, beta, y, y_data);
  call.filter_format = w->format;
  call.filter_type = w->type;
  call.filter_k = w->k;
  call.filter_c = w->c;
  call.filter_h = w->h;
  call.filter_w = w->w;
  call.w_data = w_data;
  call.pad_h = conv->pad_h;
  call.pad_w = conv->pad_w;
  call.stride_u = conv->u;
  call.stride_v = conv->v;
  call.dilation_h = conv->dilation_h;
  call.dilation_w = conv->dilation_w;
  call.conv_mode = conv->mode;
  call.conv_type = conv->type;
  call.math_type = conv->math;
  call.algo = static_cast<int>(algo);
  call.workspace = workspace;
  call.workspace_bytes = workspace_bytes;
  return Finish(call);
}

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) {
  return Make("cudnnCreatePoolingDescriptor", d);
}
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
  return Destroy("cudnnDestroyPoolingDescriptor", d);
}
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int window_h, int window_w, int pad_v, int pad_h,
                                          int stride_v, int stride_h) {
  if (const cudnnStatus_t s = Enter("cudnnSetPooling2dDescriptor"); s != CUDNN_STATUS_SUCCESS) return s;
  *d = cudnnPoolingStruct{
      static_cast<int>(mode), static_cast<int>(nan), window_h, window_w, pad_v, pad_h, stride_v, stride_h};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t p, const void* alpha,
                                  const cudnnTensorDescriptor_t x, const void* x_data, const void* beta,
                                  const cudnnTensorDescriptor_t y, void* y_data) {
  if (const cudnnStatus_t s = Enter("cudnnPoolingForward"); s != CUDNN_STATUS_SUCCESS) return s;
  SeCudnnDoubleCall call = Begin("cudnnPoolingForward", handle, alpha, x, x_data, beta, y, y_data);
  call.pooling_mode = p->mode;
  call.pooling_nan = p->nan;
  call.window_h = p->window_h;
  call.window_w = p->window_w;
  call.pooling_pad_v = p->pad_v;
  call.pooling_pad_h = p->pad_h;
  call.pooling_stride_v = p->stride_v;
  call.pooling_stride_h = p->stride_h;
  return Finish(call);
}

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* d) {
  return Make("cudnnCreateActivationDescriptor", d);
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d) {
  return Destroy("cudnnDestroyActivationDescriptor", d);
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t nan, double coef) {
  if (const cudnnStatus_t s = Enter("cudnnSetActivationDescriptor"); s != CUDNN_STATUS_SUCCESS) return s;
  *d = cudnnActivationStruct{static_cast<int>(mode), static_cast<int>(nan), coef};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t a, const void* alpha,
                                     const cudnnTensorDescriptor_t x, const void* x_data, const void* beta,
                                     const cudnnTensorDescriptor_t y, void* y_data) {
  if (const cudnnStatus_t s = Enter("cudnnActivationForward"); s != CUDNN_STATUS_SUCCESS) return s;
  SeCudnnDoubleCall call = Begin("cudnnActivationForward", handle, alpha, x, x_data, beta, y, y_data);
  call.activation_mode = a->mode;
  call.activation_nan = a->nan;
  call.activation_coef = a->coef;
  return Finish(call);
}

cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                  const void* alpha, const cudnnTensorDescriptor_t x, const void* x_data,
                                  const void* beta, const cudnnTensorDescriptor_t y, void* y_data) {
  if (const cudnnStatus_t s = Enter("cudnnSoftmaxForward"); s != CUDNN_STATUS_SUCCESS) return s;
  SeCudnnDoubleCall call = Begin("cudnnSoftmaxForward", handle, alpha, x, x_data, beta, y, y_data);
  call.softmax_algo = static_cast<int>(algo);
  call.softmax_mode = static_cast<int>(mode);
  return Finish(call);
}

void se_cudnn_double_last(SeCudnnDoubleCall* out) { TheRecord().Snapshot(TheRecord().last, out); }

void se_cudnn_double_live(SeCudnnDoubleLive* out) { TheRecord().Snapshot(TheRecord().live, out); }

}  // extern "C"

SE_LIBRARY_DOUBLE_EXPORTS(cudnn, TheRecord())
