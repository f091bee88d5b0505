// DNN on the CUDA backend: cuDNN's legacy (descriptor) API, loaded at run
// time (cudnn_loader.hpp). The executor's state holds one cudnnHandle_t made
// in its primary context (the one the CUDA runtime inside cuDNN uses) and one
// descriptor of each kind, all made on first use; a call sets the handle's
// stream and the descriptors and enqueues, so it allocates nothing. A handle
// and its descriptors serve one call at a time, hence the lock.
//
// Matmul is a 1x1 convolution: its n x k weights are an OIHW filter of n
// output maps over k input maps, so it needs no other library.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>

#include "streamexecutor/canned/dnn/common.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/cuda.hpp"

#if __has_include(<cudnn.h>)
#include "streamexecutor/canned/dnn/cudnn_loader.hpp"
#define STREAMEXECUTOR_DNN_WITH_CUDNN 1
#endif

namespace streamexecutor::dnn_detail {

#if defined(STREAMEXECUTOR_DNN_WITH_CUDNN)
template <>
struct Adapter<cuda> {
  class State {
   public:
    ~State() {
      const cuda_detail::ContextScope scope(*native_->api, native_->context);
      if (!scope.ok()) return;
      api_->cudnnDestroyActivationDescriptor(activation_);
      api_->cudnnDestroyPoolingDescriptor(pooling_);
      api_->cudnnDestroyConvolutionDescriptor(convolution_);
      api_->cudnnDestroyFilterDescriptor(filter_);
      api_->cudnnDestroyTensorDescriptor(y_);
      api_->cudnnDestroyTensorDescriptor(x_);
      api_->cudnnDestroy(handle_);
    }
    State(const State&) = delete;
    State& operator=(const State&) = delete;

   private:
    friend struct Adapter<cuda>;
    State(const CuDnnApi& api, cuda::ExecutorState& native) : api_(&api), native_(&native) {}

    const CuDnnApi* api_;
    cuda::ExecutorState* native_;
    std::mutex mutex_;
    cudnnHandle_t handle_ = nullptr;
    cudnnTensorDescriptor_t x_ = nullptr;
    cudnnTensorDescriptor_t y_ = nullptr;
    cudnnFilterDescriptor_t filter_ = nullptr;
    cudnnConvolutionDescriptor_t convolution_ = nullptr;
    cudnnPoolingDescriptor_t pooling_ = nullptr;
    cudnnActivationDescriptor_t activation_ = nullptr;
  };

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<cuda>& executor) {
    const DnnPluginId plugin = executor.UsePlugin<PluginKind::kDnn>();
    if (!plugin.is_default() && plugin != cuda::kCuDnnPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, cuda::kCuDnnPlugin.name);
    }
    const auto& load = CuDnn();
    if (!load.status.ok()) return load.status;
    const CuDnnApi& api = load.api;
    cuda::ExecutorState& native = executor.native_state();
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (!scope.ok()) return scope.status();
    const std::string& device = executor.DeviceLabel();
    // Built up member by member: the destructor of a half-made state
    // destroys what was made (cuDNN's destroy calls accept null).
    std::unique_ptr<State> state(new State(api, native));
    constexpr std::string_view caller = "the cuDNN plugin";
    auto made = [&](cudnnStatus_t r, std::string_view call) {
      return r == CUDNN_STATUS_SUCCESS ? Status() : CuDnnError(api, r, caller, call, device);
    };
    STREAMEXECUTOR_RETURN_IF_ERROR(made(api.cudnnCreate(&state->handle_), "cudnnCreate"));
    STREAMEXECUTOR_RETURN_IF_ERROR(made(api.cudnnCreateTensorDescriptor(&state->x_), "cudnnCreateTensorDescriptor"));
    STREAMEXECUTOR_RETURN_IF_ERROR(made(api.cudnnCreateTensorDescriptor(&state->y_), "cudnnCreateTensorDescriptor"));
    STREAMEXECUTOR_RETURN_IF_ERROR(
        made(api.cudnnCreateFilterDescriptor(&state->filter_), "cudnnCreateFilterDescriptor"));
    STREAMEXECUTOR_RETURN_IF_ERROR(
        made(api.cudnnCreateConvolutionDescriptor(&state->convolution_), "cudnnCreateConvolutionDescriptor"));
    STREAMEXECUTOR_RETURN_IF_ERROR(
        made(api.cudnnCreatePoolingDescriptor(&state->pooling_), "cudnnCreatePoolingDescriptor"));
    STREAMEXECUTOR_RETURN_IF_ERROR(
        made(api.cudnnCreateActivationDescriptor(&state->activation_), "cudnnCreateActivationDescriptor"));
    return StatusOr<std::unique_ptr<State>>(std::move(state));
  }

  template <dnn::Element T>
  static Status Convolve(Stream<cuda>& stream, State& state, const ConvolveArgs& a) {
    const dnn::FilterDescriptor& f = a.filter;
    const dnn::ConvolutionDescriptor& c = a.convolution;
    return ConvolveRaw<T>(stream, state, "ThenConvolve", a.input, Int(f.output_feature_map_count()),
                          Int(f.input_filter_height()), Int(f.input_filter_width()), Int(c.zero_padding_height()),
                          Int(c.zero_padding_width()), Int(c.vertical_filter_stride()),
                          Int(c.horizontal_filter_stride()), a.output, a.input_data, a.filter_data, a.output_data);
  }

  template <dnn::Element T>
  static Status MatMul(Stream<cuda>& stream, State& state, const MatMulArgs& a) {
    const dnn::BatchDescriptor input(a.m, a.k, 1, 1);
    const dnn::BatchDescriptor output(a.m, a.n, 1, 1);
    return ConvolveRaw<T>(stream, state, "ThenMatMul", input, Int(a.n), 1, 1, 0, 0, 1, 1, output, a.input_data,
                          a.weights, a.output_data);
  }

  template <dnn::Element T>
  static Status Pool(Stream<cuda>& stream, State& state, const PoolArgs& a) {
    constexpr std::string_view caller = "ThenPoolForward";
    const dnn::PoolingDescriptor& p = a.pooling;
    return Run<T>(stream, state, caller, [&](const CuDnnApi& api, auto check) -> Status {
      STREAMEXECUTOR_RETURN_IF_ERROR(SetTensor<T>(api, state.x_, a.input, check));
      STREAMEXECUTOR_RETURN_IF_ERROR(SetTensor<T>(api, state.y_, a.output, check));
      STREAMEXECUTOR_RETURN_IF_ERROR(check(
          api.cudnnSetPooling2dDescriptor(
              state.pooling_,
              p.mode() == dnn::PoolingMode::kMaximum ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
              CUDNN_NOT_PROPAGATE_NAN, Int(p.window_height()), Int(p.window_width()), Int(p.vertical_padding()),
              Int(p.horizontal_padding()), Int(p.vertical_stride()), Int(p.horizontal_stride())),
          "cudnnSetPooling2dDescriptor"));
      const T one = 1, zero = 0;
      return check(api.cudnnPoolingForward(state.handle_, state.pooling_, &one, state.x_, Pointer(a.input_data), &zero,
                                           state.y_, Pointer(a.output_data)),
                   "cudnnPoolingForward");
    });
  }

  template <dnn::Element T>
  static Status Activate(Stream<cuda>& stream, State& state, const PointwiseArgs& a) {
    constexpr std::string_view caller = "ThenActivate";
    return Run<T>(stream, state, caller, [&](const CuDnnApi& api, auto check) -> Status {
      STREAMEXECUTOR_RETURN_IF_ERROR(SetTensor<T>(api, state.x_, a.dimensions, check));
      cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
      double coefficient = 0.0;
      switch (a.mode) {
        case dnn::ActivationMode::kSigmoid: mode = CUDNN_ACTIVATION_SIGMOID; break;
        case dnn::ActivationMode::kRelu: mode = CUDNN_ACTIVATION_RELU; break;
        case dnn::ActivationMode::kRelu6:
          mode = CUDNN_ACTIVATION_CLIPPED_RELU;
          coefficient = 6.0;
          break;
        case dnn::ActivationMode::kTanh: mode = CUDNN_ACTIVATION_TANH; break;
      }
      STREAMEXECUTOR_RETURN_IF_ERROR(
          check(api.cudnnSetActivationDescriptor(state.activation_, mode, CUDNN_NOT_PROPAGATE_NAN, coefficient),
                "cudnnSetActivationDescriptor"));
      const T one = 1, zero = 0;
      return check(api.cudnnActivationForward(state.handle_, state.activation_, &one, state.x_, Pointer(a.input_data),
                                              &zero, state.x_, Pointer(a.output_data)),
                   "cudnnActivationForward");
    });
  }

  template <dnn::Element T>
  static Status Softmax(Stream<cuda>& stream, State& state, const PointwiseArgs& a) {
    constexpr std::string_view caller = "ThenSoftmax";
    return Run<T>(stream, state, caller, [&](const CuDnnApi& api, auto check) -> Status {
      STREAMEXECUTOR_RETURN_IF_ERROR(SetTensor<T>(api, state.x_, a.dimensions, check));
      const T one = 1, zero = 0;
      // ACCURATE subtracts each example's maximum first, as oneDNN does.
      return check(api.cudnnSoftmaxForward(state.handle_, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one,
                                           state.x_, Pointer(a.input_data), &zero, state.x_, Pointer(a.output_data)),
                   "cudnnSoftmaxForward");
    });
  }

 private:
  // The front end checked that every dimension fits an int.
  static int Int(std::int64_t value) { return static_cast<int>(value); }

  static void* Pointer(const DeviceMemoryBase& memory) {
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(cuda::Address(memory)));
  }

  template <typename T>
  static constexpr cudnnDataType_t kDataType = std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

  template <typename T, typename Check>
  static Status SetTensor(const CuDnnApi& api, cudnnTensorDescriptor_t descriptor, const dnn::BatchDescriptor& batch,
                          Check& check) {
    return check(
        api.cudnnSetTensor4dDescriptor(descriptor, CUDNN_TENSOR_NCHW, kDataType<T>, Int(batch.count()),
                                       Int(batch.feature_map_count()), Int(batch.height()), Int(batch.width())),
        "cudnnSetTensor4dDescriptor");
  }

  // Locks the state, enters the executor's context, binds the handle to the
  // stream and runs body(api, check), where check(result, call) turns a
  // cudnnStatus_t into a Status that names the call.
  template <typename T, typename Body>
  static Status Run(Stream<cuda>& stream, State& state, std::string_view caller, Body&& body) {
    if (stream.capturing()) return stream.NotCapturable(caller);
    const CuDnnApi& api = *state.api_;
    const std::string& device = stream.parent()->DeviceLabel();
    auto check = [&](cudnnStatus_t r, std::string_view call) {
      return r == CUDNN_STATUS_SUCCESS ? Status() : CuDnnError(api, r, caller, call, device);
    };
    std::lock_guard<std::mutex> lock(state.mutex_);
    const cuda_detail::ContextScope scope(*state.native_->api, state.native_->context);
    if (!scope.ok()) return scope.status();
    STREAMEXECUTOR_RETURN_IF_ERROR(
        check(api.cudnnSetStream(state.handle_, Interop<cuda>::Queue(stream.native_handle())), "cudnnSetStream"));
    return body(api, check);
  }

  template <typename T>
  static Status ConvolveRaw(Stream<cuda>& stream, State& state, std::string_view caller,
                            const dnn::BatchDescriptor& input, int output_maps, int filter_height, int filter_width,
                            int pad_h, int pad_w, int stride_h, int stride_w, const dnn::BatchDescriptor& output,
                            const DeviceMemoryBase& x, const DeviceMemoryBase& w, const DeviceMemoryBase& y) {
    return Run<T>(stream, state, caller, [&](const CuDnnApi& api, auto check) -> Status {
      STREAMEXECUTOR_RETURN_IF_ERROR(SetTensor<T>(api, state.x_, input, check));
      STREAMEXECUTOR_RETURN_IF_ERROR(SetTensor<T>(api, state.y_, output, check));
      STREAMEXECUTOR_RETURN_IF_ERROR(
          check(api.cudnnSetFilter4dDescriptor(state.filter_, kDataType<T>, CUDNN_TENSOR_NCHW, output_maps,
                                               Int(input.feature_map_count()), filter_height, filter_width),
                "cudnnSetFilter4dDescriptor"));
      STREAMEXECUTOR_RETURN_IF_ERROR(
          check(api.cudnnSetConvolution2dDescriptor(state.convolution_, pad_h, pad_w, stride_h, stride_w, 1, 1,
                                                    CUDNN_CROSS_CORRELATION, kDataType<T>),
                "cudnnSetConvolution2dDescriptor"));
      // FMA math: no TF32 tensor cores, whose 10-bit mantissa would make
      // float results differ from the host's beyond float rounding.
      STREAMEXECUTOR_RETURN_IF_ERROR(
          check(api.cudnnSetConvolutionMathType(state.convolution_, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType"));
      const T one = 1, zero = 0;
      // IMPLICIT_GEMM takes no workspace, so a call allocates no device memory.
      return check(api.cudnnConvolutionForward(state.handle_, &one, state.x_, Pointer(x), state.filter_, Pointer(w),
                                               state.convolution_, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0,
                                               &zero, state.y_, Pointer(y)),
                   "cudnnConvolutionForward");
    });
  }
};
#else
// Built without cudnn.h: the plugin exists in name only.
template <>
struct Adapter<cuda> {
  struct State {};
  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<cuda>& executor) {
    const DnnPluginId plugin = executor.UsePlugin<PluginKind::kDnn>();
    if (!plugin.is_default() && plugin != cuda::kCuDnnPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, cuda::kCuDnnPlugin.name);
    }
    return NotBuiltIn(executor.DeviceLabel(), "cuDNN's header cudnn.h", "libcudnn9-dev-cuda-13");
  }
  template <typename T>
  static Status Convolve(Stream<cuda>&, State&, const ConvolveArgs&) {
    return Missing();
  }
  template <typename T>
  static Status Pool(Stream<cuda>&, State&, const PoolArgs&) {
    return Missing();
  }
  template <typename T>
  static Status Activate(Stream<cuda>&, State&, const PointwiseArgs&) {
    return Missing();
  }
  template <typename T>
  static Status Softmax(Stream<cuda>&, State&, const PointwiseArgs&) {
    return Missing();
  }
  template <typename T>
  static Status MatMul(Stream<cuda>&, State&, const MatMulArgs&) {
    return Missing();
  }

 private:
  static Status Missing() { return NotBuiltIn("cuda", "cuDNN's header cudnn.h", "libcudnn9-dev-cuda-13"); }
};
#endif

}  // namespace streamexecutor::dnn_detail
