// The query side of the cuDNN test double (cudnn_double.cpp), reached by
// dlsym on the libcudnn.so.9 the plugin loaded.
#pragma once

#include <dlfcn.h>

#include <cstddef>

extern "C" {

struct SeCudnnDoubleTensor {
  int format;
  int data_type;
  int n, c, h, w;
};

// What one compute call saw: its descriptors as they were set at that moment.
struct SeCudnnDoubleCall {
  char name[40];
  void* stream;  // the handle's stream when the call ran
  SeCudnnDoubleTensor x, y;
  int filter_format, filter_type, filter_k, filter_c, filter_h, filter_w;
  int pad_h, pad_w, stride_u, stride_v, dilation_h, dilation_w, conv_mode, conv_type, math_type;
  int algo;
  std::size_t workspace_bytes;
  const void* workspace;
  int pooling_mode, pooling_nan, window_h, window_w, pooling_pad_v, pooling_pad_h, pooling_stride_v, pooling_stride_h;
  int activation_mode, activation_nan;
  double activation_coef;
  int softmax_algo, softmax_mode;
  double alpha, beta;
  const void* x_data;
  const void* w_data;
  void* y_data;
};

struct SeCudnnDoubleLive {
  int handles;
  int descriptors;  // of every kind
};

typedef long (*SeCudnnDoubleCallsFn)(const char* name);
typedef void (*SeCudnnDoubleLastFn)(SeCudnnDoubleCall* out);
typedef void (*SeCudnnDoubleLiveFn)(SeCudnnDoubleLive* out);
typedef void (*SeCudnnDoubleFailNextFn)(const char* name, int status);
}

namespace se_test {

struct CudnnDoubleApi {
  SeCudnnDoubleCallsFn calls = nullptr;
  SeCudnnDoubleLastFn last = nullptr;
  SeCudnnDoubleLiveFn live = nullptr;
  SeCudnnDoubleFailNextFn fail_next = nullptr;

  bool loaded() const { return calls != nullptr && last != nullptr && live != nullptr && fail_next != nullptr; }

  // RTLD_NOLOAD: the library the plugin already opened.
  static CudnnDoubleApi Find() {
    CudnnDoubleApi api;
    void* library = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) return api;
    api.calls = reinterpret_cast<SeCudnnDoubleCallsFn>(dlsym(library, "se_cudnn_double_calls"));
    api.last = reinterpret_cast<SeCudnnDoubleLastFn>(dlsym(library, "se_cudnn_double_last"));
    api.live = reinterpret_cast<SeCudnnDoubleLiveFn>(dlsym(library, "se_cudnn_double_live"));
    api.fail_next = reinterpret_cast<SeCudnnDoubleFailNextFn>(dlsym(library, "se_cudnn_double_fail_next"));
    dlclose(library);
    return api;
  }
};

}  // namespace se_test
