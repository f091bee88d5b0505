// The query side of the cuDNN test double (cudnn_double.cpp), reached by
// dlsym on the libcudnn.so.9 the plugin loaded.
#pragma once

#include <cstddef>

#include "../../library_double.hpp"

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

typedef void (*SeCudnnDoubleLastFn)(SeCudnnDoubleCall* out);
typedef void (*SeCudnnDoubleLiveFn)(SeCudnnDoubleLive* out);
}

namespace se_test {

struct CudnnDoubleApi : library_double::QueryApi {
  SeCudnnDoubleLastFn last = nullptr;
  SeCudnnDoubleLiveFn live = nullptr;

  bool loaded() const { return common_loaded() && last != nullptr && live != nullptr; }

  static CudnnDoubleApi Find() {
    const library_double::Query query("libcudnn.so.9", "cudnn");
    CudnnDoubleApi api;
    api.FindCommon(query);
    query.Find("last", api.last);
    query.Find("live", api.live);
    return api;
  }
};

}  // namespace se_test
