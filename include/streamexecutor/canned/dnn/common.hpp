// The backend-independent half of the canned DNN operations: the seed's
// descriptors (namespace se::dnn), the checked argument packs handed to each
// backend's library, and the shape checks every backend shares. Tensors are
// NCHW (the seed's kBatchDepthYX), filters OIHW (kOutputInputYX), packed.
#pragma once

#include <climits>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

#include "streamexecutor/canned/detail/adapter.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/fmt.hpp"  // not <fmt/format.h>: this one configures fmt for nvcc

namespace streamexecutor::dnn {

// The element types the operations take. Each plugin says which it runs:
// oneDNN 2.6's CPU engine has no f64 primitives, CLBlast and cuDNN have both.
template <typename T>
concept Element = std::same_as<T, float> || std::same_as<T, double>;

// Only the seed's default layouts: every library here takes them as they are,
// so no operation reorders data behind the caller's back.
enum class DataLayout : unsigned char { kBatchDepthYX };     // NCHW
enum class FilterLayout : unsigned char { kOutputInputYX };  // OIHW

enum class PoolingMode : unsigned char { kMaximum, kAverage };

// kRelu6 is min(max(x, 0), 6), as in the seed.
enum class ActivationMode : unsigned char { kSigmoid, kRelu, kRelu6, kTanh };

constexpr std::string_view ActivationModeString(ActivationMode mode) {
  switch (mode) {
    case ActivationMode::kSigmoid: return "kSigmoid";
    case ActivationMode::kRelu: return "kRelu";
    case ActivationMode::kRelu6: return "kRelu6";
    case ActivationMode::kTanh: return "kTanh";
  }
  return "?";
}

// A batch of examples, each feature_map_count maps of height x width.
class BatchDescriptor {
 public:
  BatchDescriptor() = default;
  BatchDescriptor(std::int64_t count, std::int64_t feature_map_count, std::int64_t height, std::int64_t width)
      : count_(count), feature_map_count_(feature_map_count), height_(height), width_(width) {}

  std::int64_t count() const { return count_; }
  std::int64_t feature_map_count() const { return feature_map_count_; }
  std::int64_t height() const { return height_; }
  std::int64_t width() const { return width_; }
  DataLayout layout() const { return layout_; }

  BatchDescriptor& set_count(std::int64_t value) {
    count_ = value;
    return *this;
  }
  BatchDescriptor& set_feature_map_count(std::int64_t value) {
    feature_map_count_ = value;
    return *this;
  }
  BatchDescriptor& set_height(std::int64_t value) {
    height_ = value;
    return *this;
  }
  BatchDescriptor& set_width(std::int64_t value) {
    width_ = value;
    return *this;
  }
  BatchDescriptor& set_layout(DataLayout value) {
    layout_ = value;
    return *this;
  }

  std::int64_t NodesPerFeatureMap() const { return height_ * width_; }
  std::int64_t NodesAcrossFeatureMaps() const { return NodesPerFeatureMap() * feature_map_count_; }
  std::int64_t ElementCount() const { return NodesAcrossFeatureMaps() * count_; }

  std::string ToString() const {
    return ::streamexecutor::detail::Format("BatchDescriptor{{count={}, feature_map_count={}, height={}, width={}}}",
                                            count_, feature_map_count_, height_, width_);
  }

 private:
  std::int64_t count_ = 0;
  std::int64_t feature_map_count_ = 0;
  std::int64_t height_ = 0;
  std::int64_t width_ = 0;
  DataLayout layout_ = DataLayout::kBatchDepthYX;
};

class FilterDescriptor {
 public:
  FilterDescriptor() = default;
  FilterDescriptor(std::int64_t output_feature_map_count, std::int64_t input_feature_map_count,
                   std::int64_t input_filter_height, std::int64_t input_filter_width)
      : output_feature_map_count_(output_feature_map_count),
        input_feature_map_count_(input_feature_map_count),
        input_filter_height_(input_filter_height),
        input_filter_width_(input_filter_width) {}

  std::int64_t output_feature_map_count() const { return output_feature_map_count_; }
  std::int64_t input_feature_map_count() const { return input_feature_map_count_; }
  std::int64_t input_filter_height() const { return input_filter_height_; }
  std::int64_t input_filter_width() const { return input_filter_width_; }
  FilterLayout layout() const { return layout_; }

  FilterDescriptor& set_output_feature_map_count(std::int64_t value) {
    output_feature_map_count_ = value;
    return *this;
  }
  FilterDescriptor& set_input_feature_map_count(std::int64_t value) {
    input_feature_map_count_ = value;
    return *this;
  }
  FilterDescriptor& set_input_filter_height(std::int64_t value) {
    input_filter_height_ = value;
    return *this;
  }
  FilterDescriptor& set_input_filter_width(std::int64_t value) {
    input_filter_width_ = value;
    return *this;
  }
  FilterDescriptor& set_layout(FilterLayout value) {
    layout_ = value;
    return *this;
  }

  std::int64_t ElementCount() const {
    return output_feature_map_count_ * input_feature_map_count_ * input_filter_height_ * input_filter_width_;
  }

  std::string ToString() const {
    return ::streamexecutor::detail::Format(
        "FilterDescriptor{{output_feature_map_count={}, input_feature_map_count={}, input_filter_height={}, "
        "input_filter_width={}}}",
        output_feature_map_count_, input_feature_map_count_, input_filter_height_, input_filter_width_);
  }

 private:
  std::int64_t output_feature_map_count_ = 0;
  std::int64_t input_feature_map_count_ = 0;
  std::int64_t input_filter_height_ = 0;
  std::int64_t input_filter_width_ = 0;
  FilterLayout layout_ = FilterLayout::kOutputInputYX;
};

// Zero padding on both sides of each spatial dimension, then filter strides.
// A cross-correlation, as in every DNN library ("convolution" by custom).
class ConvolutionDescriptor {
 public:
  std::int64_t zero_padding_height() const { return zero_padding_height_; }
  std::int64_t zero_padding_width() const { return zero_padding_width_; }
  std::int64_t vertical_filter_stride() const { return vertical_filter_stride_; }
  std::int64_t horizontal_filter_stride() const { return horizontal_filter_stride_; }

  ConvolutionDescriptor& set_zero_padding_height(std::int64_t value) {
    zero_padding_height_ = value;
    return *this;
  }
  ConvolutionDescriptor& set_zero_padding_width(std::int64_t value) {
    zero_padding_width_ = value;
    return *this;
  }
  ConvolutionDescriptor& set_vertical_filter_stride(std::int64_t value) {
    vertical_filter_stride_ = value;
    return *this;
  }
  ConvolutionDescriptor& set_horizontal_filter_stride(std::int64_t value) {
    horizontal_filter_stride_ = value;
    return *this;
  }

  std::string ToString() const {
    return ::streamexecutor::detail::Format("ConvolutionDescriptor{{zero_padding={}x{}, strides={}x{}}}",
                                            zero_padding_height_, zero_padding_width_, vertical_filter_stride_,
                                            horizontal_filter_stride_);
  }

 private:
  std::int64_t zero_padding_height_ = 0;
  std::int64_t zero_padding_width_ = 0;
  std::int64_t vertical_filter_stride_ = 1;
  std::int64_t horizontal_filter_stride_ = 1;
};

// Average pooling divides by the window's elements inside the input: padding
// does not count (cuDNN's COUNT_EXCLUDE_PADDING, oneDNN's avg_exclude_padding).
class PoolingDescriptor {
 public:
  PoolingMode mode() const { return mode_; }
  std::int64_t window_height() const { return window_height_; }
  std::int64_t window_width() const { return window_width_; }
  std::int64_t vertical_padding() const { return vertical_padding_; }
  std::int64_t horizontal_padding() const { return horizontal_padding_; }
  std::int64_t vertical_stride() const { return vertical_stride_; }
  std::int64_t horizontal_stride() const { return horizontal_stride_; }

  PoolingDescriptor& set_pooling_mode(PoolingMode value) {
    mode_ = value;
    return *this;
  }
  PoolingDescriptor& set_window_height(std::int64_t value) {
    window_height_ = value;
    return *this;
  }
  PoolingDescriptor& set_window_width(std::int64_t value) {
    window_width_ = value;
    return *this;
  }
  PoolingDescriptor& set_vertical_padding(std::int64_t value) {
    vertical_padding_ = value;
    return *this;
  }
  PoolingDescriptor& set_horizontal_padding(std::int64_t value) {
    horizontal_padding_ = value;
    return *this;
  }
  PoolingDescriptor& set_vertical_stride(std::int64_t value) {
    vertical_stride_ = value;
    return *this;
  }
  PoolingDescriptor& set_horizontal_stride(std::int64_t value) {
    horizontal_stride_ = value;
    return *this;
  }

  std::string ToString() const {
    return ::streamexecutor::detail::Format("PoolingDescriptor{{mode={}, window={}x{}, padding={}x{}, strides={}x{}}}",
                                            mode_ == PoolingMode::kMaximum ? "kMaximum" : "kAverage", window_height_,
                                            window_width_, vertical_padding_, horizontal_padding_, vertical_stride_,
                                            horizontal_stride_);
  }

 private:
  PoolingMode mode_ = PoolingMode::kMaximum;
  std::int64_t window_height_ = 1;
  std::int64_t window_width_ = 1;
  std::int64_t vertical_padding_ = 0;
  std::int64_t horizontal_padding_ = 0;
  std::int64_t vertical_stride_ = 1;
  std::int64_t horizontal_stride_ = 1;
};

}  // namespace streamexecutor::dnn

namespace streamexecutor::dnn_detail {

// Arguments after the front end checked them: every dimension is positive and
// fits an int (cuDNN's type), the output descriptor is the one the operation
// produces, and every view is live memory of the stream's executor holding
// what its descriptor describes.
struct ConvolveArgs {
  dnn::BatchDescriptor input;
  DeviceMemoryBase input_data;
  dnn::FilterDescriptor filter;
  DeviceMemoryBase filter_data;
  dnn::ConvolutionDescriptor convolution;
  dnn::BatchDescriptor output;
  DeviceMemoryBase output_data;
};

struct PoolArgs {
  dnn::PoolingDescriptor pooling;
  dnn::BatchDescriptor input;
  DeviceMemoryBase input_data;
  dnn::BatchDescriptor output;
  DeviceMemoryBase output_data;
};

// Activation and softmax: input and output share one descriptor. Softmax runs
// over each example's NodesAcrossFeatureMaps() values (cuDNN's INSTANCE mode).
struct PointwiseArgs {
  dnn::ActivationMode mode;
  dnn::BatchDescriptor dimensions;
  DeviceMemoryBase input_data;
  DeviceMemoryBase output_data;
};

// output (m x n) = input (m x k) * weights^T, all row-major, where m is the
// batch count, k the input's and n the output's NodesAcrossFeatureMaps(), and
// weights is n x k: a fully connected layer's weights, the layout of an OIHW
// filter with 1x1 maps (so cuDNN runs it as a 1x1 convolution).
struct MatMulArgs {
  DeviceMemoryBase input_data;
  DeviceMemoryBase weights;
  DeviceMemoryBase output_data;
  dnn::BatchDescriptor input;
  dnn::BatchDescriptor output;
  std::int64_t m;
  std::int64_t n;
  std::int64_t k;
};

// The family's adapter trait (canned/detail/adapter.hpp), specialised in
// canned/dnn/<backend>.hpp for each backend with a DNN library:
//   struct State;                                  // per executor, an extension
//   static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<B>&);
//   template <dnn::Element T> static Status Convolve(Stream<B>&, State&, const ConvolveArgs&);
//   ... Pool (PoolArgs), Activate and Softmax (PointwiseArgs), MatMul (MatMulArgs).
// Other backends get the primary template: UNAVAILABLE, naming the backend.
template <typename B>
struct Adapter : canned_detail::NoAdapter<PluginKind::kDnn, B> {};

inline Status UnknownPlugin(std::string_view device, const DnnPluginId& plugin, std::string_view available) {
  return MakeError(ErrorCode::kNotFound, "{} has no DNN plugin '{}' (available: {})", device, plugin.name, available);
}

inline Status NotBuiltIn(std::string_view device, std::string_view library, std::string_view package) {
  return MakeError(ErrorCode::kUnavailable,
                   "DNN on {} needs {}, which this program was built without (install the {} package and "
                   "reconfigure, so that streamexecutor_dnn_dep finds it)",
                   device, library, package);
}

// ---- Shape checks ----------------------------------------------------------------

inline Status CheckDimension(std::string_view caller, std::string_view device, std::string_view what,
                             std::string_view name, std::int64_t value, std::int64_t minimum) {
  if (value < minimum || value > INT_MAX) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {}'s {} is {}; it must be in [{}, {}]", caller, device,
                     what, name, value, minimum, INT_MAX);
  }
  return Status();
}

inline Status CheckBatch(std::string_view caller, std::string_view device, std::string_view what,
                         const dnn::BatchDescriptor& batch) {
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, what, "count", batch.count(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckDimension(caller, device, what, "feature_map_count", batch.feature_map_count(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, what, "height", batch.height(), 1));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, what, "width", batch.width(), 1));
  if (batch.ElementCount() > INT_MAX) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} {} has {} elements, more than cuDNN's int ({})",
                     caller, device, what, batch.ToString(), batch.ElementCount(), INT_MAX);
  }
  return Status();
}

// The view holds `elements` of T: OUT_OF_RANGE naming the descriptor
// (`described`) and both sizes otherwise.
inline Status CheckHolds(std::string_view caller, std::string_view device, std::string_view role,
                         std::string_view described, std::int64_t elements, std::size_t element_bytes,
                         const DeviceMemoryBase& memory) {
  if (memory.IsNull()) return Status();  // CheckDeviceRange names a null view
  const auto needed = static_cast<std::uint64_t>(elements) * element_bytes;
  if (needed > memory.size()) {
    return MakeError(ErrorCode::kOutOfRange,
                     "{} on {}: the {} {} needs {} elements ({} bytes), but its DeviceMemory holds {} ({} bytes)",
                     caller, device, role, described, elements, needed, memory.size() / element_bytes, memory.size());
  }
  return Status();
}

// Output extent of a window of `window` over `input` padded by `padding` on
// both sides, moved by `stride`; -1 when the window does not fit once.
constexpr std::int64_t WindowOutput(std::int64_t input, std::int64_t window, std::int64_t padding,
                                    std::int64_t stride) {
  const std::int64_t span = input + 2 * padding - window;
  return span < 0 ? -1 : span / stride + 1;
}

}  // namespace streamexecutor::dnn_detail
