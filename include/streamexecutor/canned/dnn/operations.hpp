// The canned DNN operations as Stream<B> sees them: Stream::ThenConvolve and
// friends call these Canned* functions by argument-dependent lookup. Each
// checks every shape and buffer the same way on every backend (docs/dnn.md
// has the rules), then hands the checked arguments to the backend's
// Adapter<B> (canned/dnn/host.hpp, opencl.hpp, cuda.hpp) with the executor's
// DNN state, created on its first DNN call. A backend without an adapter gets
// UNAVAILABLE there (canned/detail/adapter.hpp).
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "streamexecutor/canned/dnn/common.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/stream.hpp"

namespace streamexecutor {
namespace dnn_detail {

template <Backend B>
StatusOr<typename Adapter<B>::State*> GetState(StreamExecutor<B>* executor) {
  return executor->template GetOrCreateExtension<typename Adapter<B>::State>(
      [executor] { return Adapter<B>::Make(*executor); });
}

// Size first (the message names the descriptor), then liveness and null views.
template <Backend B, typename T>
Status CheckBuffer(StreamExecutor<B>* executor, std::string_view caller, std::string_view role,
                   std::string_view described, std::int64_t elements, const DeviceMemoryBase& memory) {
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckHolds(caller, executor->DeviceLabel(), role, described, elements, sizeof(T), memory));
  return executor->CheckDeviceRange(caller, role, memory, static_cast<std::uint64_t>(elements) * sizeof(T));
}

inline Status CheckOutputShape(std::string_view caller, std::string_view device, const dnn::BatchDescriptor& expected,
                               const dnn::BatchDescriptor& output, std::string_view why) {
  if (output.count() == expected.count() && output.feature_map_count() == expected.feature_map_count() &&
      output.height() == expected.height() && output.width() == expected.width()) {
    return Status();
  }
  return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the output is {}, but {} gives {}", caller, device,
                   output.ToString(), why, expected.ToString());
}

// Runs `run.operator()<Adapter<B>>(state)` with the executor's DNN state.
// `run` is a template on the adapter, so that its body (the adapter's
// operation) is compiled only for a backend that has one.
template <Backend B, typename Run>
Stream<B>& Dispatch(Stream<B>& stream, std::string_view caller, Run&& run) {
  if constexpr (!canned_detail::Adapted<Adapter<B>>) {
    return stream.CheckCanned(Adapter<B>::Unavailable(caller, stream.parent()->DeviceLabel()));
  } else {
    StatusOr<typename Adapter<B>::State*> state = GetState(stream.parent());
    if (!state.ok()) return stream.CheckCanned(state.status());
    return stream.CheckCanned(run.template operator()<Adapter<B>>(*state.value()));
  }
}

template <Backend B, dnn::Element T>
Status CheckConvolve(StreamExecutor<B>* executor, const ConvolveArgs& a) {
  constexpr std::string_view caller = "ThenConvolve";
  const std::string& device = executor->DeviceLabel();
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckBatch(caller, device, "input", a.input));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckBatch(caller, device, "output", a.output));
  const dnn::FilterDescriptor& f = a.filter;
  const dnn::ConvolutionDescriptor& c = a.convolution;
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "filter", "output_feature_map_count", f.output_feature_map_count(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "filter", "input_feature_map_count", f.input_feature_map_count(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "filter", "input_filter_height", f.input_filter_height(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "filter", "input_filter_width", f.input_filter_width(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "convolution", "zero_padding_height", c.zero_padding_height(), 0));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "convolution", "zero_padding_width", c.zero_padding_width(), 0));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "convolution", "vertical_filter_stride", c.vertical_filter_stride(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "convolution", "horizontal_filter_stride", c.horizontal_filter_stride(), 1));
  if (f.input_feature_map_count() != a.input.feature_map_count()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the filter reads {} input feature maps, but the input {} has {}", caller, device,
                     f.input_feature_map_count(), a.input.ToString(), a.input.feature_map_count());
  }
  const dnn::BatchDescriptor expected(
      a.input.count(), f.output_feature_map_count(),
      WindowOutput(a.input.height(), f.input_filter_height(), c.zero_padding_height(), c.vertical_filter_stride()),
      WindowOutput(a.input.width(), f.input_filter_width(), c.zero_padding_width(), c.horizontal_filter_stride()));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckOutputShape(
      caller, device, expected, a.output,
      ::streamexecutor::detail::Format("{} with {} over {}", f.ToString(), c.ToString(), a.input.ToString())));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      (CheckBuffer<B, T>(executor, caller, "input", a.input.ToString(), a.input.ElementCount(), a.input_data)));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      (CheckBuffer<B, T>(executor, caller, "filter", f.ToString(), f.ElementCount(), a.filter_data)));
  return CheckBuffer<B, T>(executor, caller, "output", a.output.ToString(), a.output.ElementCount(), a.output_data);
}

template <Backend B, dnn::Element T>
Status CheckPool(StreamExecutor<B>* executor, const PoolArgs& a) {
  constexpr std::string_view caller = "ThenPoolForward";
  const std::string& device = executor->DeviceLabel();
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckBatch(caller, device, "input", a.input));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckBatch(caller, device, "output", a.output));
  const dnn::PoolingDescriptor& p = a.pooling;
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, "pooling", "window_height", p.window_height(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, "pooling", "window_width", p.window_width(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, "pooling", "vertical_stride", p.vertical_stride(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "pooling", "horizontal_stride", p.horizontal_stride(), 1));
  // A window entirely in the padding has no element to take or average.
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "pooling", "vertical_padding", p.vertical_padding(), 0));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, "pooling", "horizontal_padding", p.horizontal_padding(), 0));
  if (p.vertical_padding() >= p.window_height() || p.horizontal_padding() >= p.window_width()) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} pads as much as its window or more", caller, device,
                     p.ToString());
  }
  const dnn::BatchDescriptor expected(
      a.input.count(), a.input.feature_map_count(),
      WindowOutput(a.input.height(), p.window_height(), p.vertical_padding(), p.vertical_stride()),
      WindowOutput(a.input.width(), p.window_width(), p.horizontal_padding(), p.horizontal_stride()));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckOutputShape(caller, device, expected, a.output,
                       ::streamexecutor::detail::Format("{} over {}", p.ToString(), a.input.ToString())));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      (CheckBuffer<B, T>(executor, caller, "input", a.input.ToString(), a.input.ElementCount(), a.input_data)));
  return CheckBuffer<B, T>(executor, caller, "output", a.output.ToString(), a.output.ElementCount(), a.output_data);
}

template <Backend B, dnn::Element T>
Status CheckPointwise(StreamExecutor<B>* executor, std::string_view caller, const PointwiseArgs& a) {
  const std::string& device = executor->DeviceLabel();
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckBatch(caller, device, "dimensions", a.dimensions));
  const std::string described = a.dimensions.ToString();
  STREAMEXECUTOR_RETURN_IF_ERROR(
      (CheckBuffer<B, T>(executor, caller, "input", described, a.dimensions.ElementCount(), a.input_data)));
  return CheckBuffer<B, T>(executor, caller, "output", described, a.dimensions.ElementCount(), a.output_data);
}

template <Backend B, dnn::Element T>
Status CheckMatMul(StreamExecutor<B>* executor, const MatMulArgs& a) {
  constexpr std::string_view caller = "ThenMatMul";
  const std::string& device = executor->DeviceLabel();
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckBatch(caller, device, "input", a.input));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckBatch(caller, device, "output", a.output));
  if (a.output.count() != a.input.count()) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the input {} and the output {} differ in count", caller,
                     device, a.input.ToString(), a.output.ToString());
  }
  if (a.n * a.k > INT_MAX) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the weights have {} x {} elements, more than {}", caller,
                     device, a.n, a.k, INT_MAX);
  }
  STREAMEXECUTOR_RETURN_IF_ERROR(
      (CheckBuffer<B, T>(executor, caller, "input", a.input.ToString(), a.input.ElementCount(), a.input_data)));
  STREAMEXECUTOR_RETURN_IF_ERROR((CheckBuffer<B, T>(
      executor, caller, "weights", ::streamexecutor::detail::Format("matrix of {} output x {} input nodes", a.n, a.k),
      a.n * a.k, a.weights)));
  return CheckBuffer<B, T>(executor, caller, "output", a.output.ToString(), a.output.ElementCount(), a.output_data);
}

inline Status NullOutput(std::string_view caller, std::string_view device) {
  return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the output DeviceMemory pointer is null", caller, device);
}

}  // namespace dnn_detail

// Forward convolution (cross-correlation) of `input_data` with `filter_data`
// into `*output_data`, whose descriptor must be the one the shapes give.
template <Backend B, dnn::Element T>
Stream<B>& CannedConvolve(Stream<B>& stream, const dnn::BatchDescriptor& input_descriptor,
                          const DeviceMemory<T>& input_data, const dnn::FilterDescriptor& filter_descriptor,
                          const DeviceMemory<T>& filter_data, const dnn::ConvolutionDescriptor& convolution_descriptor,
                          const dnn::BatchDescriptor& output_descriptor, DeviceMemory<T>* output_data) {
  constexpr std::string_view caller = "ThenConvolve";
  if (!stream.ReadyForCanned(caller)) return stream;
  StreamExecutor<B>* executor = stream.parent();
  if (output_data == nullptr) return stream.CheckCanned(dnn_detail::NullOutput(caller, executor->DeviceLabel()));
  const dnn_detail::ConvolveArgs args{input_descriptor,       input_data,        filter_descriptor, filter_data,
                                      convolution_descriptor, output_descriptor, *output_data};
  if (Status s = dnn_detail::CheckConvolve<B, T>(executor, args); !s.ok()) return stream.CheckCanned(std::move(s));
  return dnn_detail::Dispatch(stream, caller, [&]<typename A>(typename A::State& state) {
    return A::template Convolve<T>(stream, state, args);
  });
}

// Max or average pooling (PoolingDescriptor::mode) of each feature map.
template <Backend B, dnn::Element T>
Stream<B>& CannedPoolForward(Stream<B>& stream, const dnn::PoolingDescriptor& pooling_dimensions,
                             const dnn::BatchDescriptor& input_dimensions, const DeviceMemory<T>& input_data,
                             const dnn::BatchDescriptor& output_dimensions, DeviceMemory<T>* output_data) {
  constexpr std::string_view caller = "ThenPoolForward";
  if (!stream.ReadyForCanned(caller)) return stream;
  StreamExecutor<B>* executor = stream.parent();
  if (output_data == nullptr) return stream.CheckCanned(dnn_detail::NullOutput(caller, executor->DeviceLabel()));
  const dnn_detail::PoolArgs args{pooling_dimensions, input_dimensions, input_data, output_dimensions, *output_data};
  if (Status s = dnn_detail::CheckPool<B, T>(executor, args); !s.ok()) return stream.CheckCanned(std::move(s));
  return dnn_detail::Dispatch(
      stream, caller, [&]<typename A>(typename A::State& state) { return A::template Pool<T>(stream, state, args); });
}

// Elementwise activation; input and output may be the same memory.
template <Backend B, dnn::Element T>
Stream<B>& CannedActivate(Stream<B>& stream, dnn::ActivationMode activation_mode,
                          const dnn::BatchDescriptor& dimensions, const DeviceMemory<T>& input_data,
                          DeviceMemory<T>* output_data) {
  constexpr std::string_view caller = "ThenActivate";
  if (!stream.ReadyForCanned(caller)) return stream;
  StreamExecutor<B>* executor = stream.parent();
  if (output_data == nullptr) return stream.CheckCanned(dnn_detail::NullOutput(caller, executor->DeviceLabel()));
  const dnn_detail::PointwiseArgs args{activation_mode, dimensions, input_data, *output_data};
  if (Status s = dnn_detail::CheckPointwise<B, T>(executor, caller, args); !s.ok()) {
    return stream.CheckCanned(std::move(s));
  }
  return dnn_detail::Dispatch(stream, caller, [&]<typename A>(typename A::State& state) {
    return A::template Activate<T>(stream, state, args);
  });
}

// Softmax over each example's NodesAcrossFeatureMaps() values.
template <Backend B, dnn::Element T>
Stream<B>& CannedSoftmax(Stream<B>& stream, const dnn::BatchDescriptor& dimensions, const DeviceMemory<T>& input_data,
                         DeviceMemory<T>* output_data) {
  constexpr std::string_view caller = "ThenSoftmax";
  if (!stream.ReadyForCanned(caller)) return stream;
  StreamExecutor<B>* executor = stream.parent();
  if (output_data == nullptr) return stream.CheckCanned(dnn_detail::NullOutput(caller, executor->DeviceLabel()));
  // The mode is an activation's; softmax has none and ignores it.
  const dnn_detail::PointwiseArgs args{dnn::ActivationMode::kRelu, dimensions, input_data, *output_data};
  if (Status s = dnn_detail::CheckPointwise<B, T>(executor, caller, args); !s.ok()) {
    return stream.CheckCanned(std::move(s));
  }
  return dnn_detail::Dispatch(stream, caller, [&]<typename A>(typename A::State& state) {
    return A::template Softmax<T>(stream, state, args);
  });
}

// A fully connected layer without bias: for each example, output nodes =
// weights (output nodes x input nodes, row-major) times input nodes.
template <Backend B, dnn::Element T>
Stream<B>& CannedMatMul(Stream<B>& stream, const DeviceMemory<T>& input_data, const DeviceMemory<T>& weights,
                        const dnn::BatchDescriptor& input_dimensions, const dnn::BatchDescriptor& output_dimensions,
                        DeviceMemory<T>* output_data) {
  constexpr std::string_view caller = "ThenMatMul";
  if (!stream.ReadyForCanned(caller)) return stream;
  StreamExecutor<B>* executor = stream.parent();
  if (output_data == nullptr) return stream.CheckCanned(dnn_detail::NullOutput(caller, executor->DeviceLabel()));
  const dnn_detail::MatMulArgs args{input_data,
                                    weights,
                                    *output_data,
                                    input_dimensions,
                                    output_dimensions,
                                    input_dimensions.count(),
                                    output_dimensions.NodesAcrossFeatureMaps(),
                                    input_dimensions.NodesAcrossFeatureMaps()};
  if (Status s = dnn_detail::CheckMatMul<B, T>(executor, args); !s.ok()) return stream.CheckCanned(std::move(s));
  return dnn_detail::Dispatch(
      stream, caller, [&]<typename A>(typename A::State& state) { return A::template MatMul<T>(stream, state, args); });
}

}  // namespace streamexecutor
