// Naive reference loops for dnn_test.cpp: the definitions of the operations,
// written for clarity, against which the libraries' results are compared.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <streamexecutor/dnn.hpp>

namespace dnn_ref {

namespace dnn = streamexecutor::dnn;

template <typename T>
std::vector<T> RandomValues(std::int64_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> distribution(-1.0, 1.0);
  std::vector<T> values(static_cast<std::size_t>(count));
  for (T& value : values) value = static_cast<T>(distribution(engine));
  return values;
}

inline std::size_t At(const dnn::BatchDescriptor& d, std::int64_t n, std::int64_t c, std::int64_t y, std::int64_t x) {
  return static_cast<std::size_t>(((n * d.feature_map_count() + c) * d.height() + y) * d.width() + x);
}

template <typename T>
std::vector<T> Convolve(const dnn::BatchDescriptor& in, const std::vector<T>& input, const dnn::FilterDescriptor& f,
                        const std::vector<T>& filter, const dnn::ConvolutionDescriptor& c,
                        const dnn::BatchDescriptor& out) {
  std::vector<T> output(static_cast<std::size_t>(out.ElementCount()));
  for (std::int64_t n = 0; n < out.count(); ++n) {
    for (std::int64_t k = 0; k < out.feature_map_count(); ++k) {
      for (std::int64_t oy = 0; oy < out.height(); ++oy) {
        for (std::int64_t ox = 0; ox < out.width(); ++ox) {
          double sum = 0;
          for (std::int64_t ch = 0; ch < in.feature_map_count(); ++ch) {
            for (std::int64_t fy = 0; fy < f.input_filter_height(); ++fy) {
              for (std::int64_t fx = 0; fx < f.input_filter_width(); ++fx) {
                const std::int64_t iy = oy * c.vertical_filter_stride() - c.zero_padding_height() + fy;
                const std::int64_t ix = ox * c.horizontal_filter_stride() - c.zero_padding_width() + fx;
                if (iy < 0 || iy >= in.height() || ix < 0 || ix >= in.width()) continue;
                const std::size_t w = static_cast<std::size_t>(
                    ((k * f.input_feature_map_count() + ch) * f.input_filter_height() + fy) * f.input_filter_width() +
                    fx);
                sum += static_cast<double>(input[At(in, n, ch, iy, ix)]) * static_cast<double>(filter[w]);
              }
            }
          }
          output[At(out, n, k, oy, ox)] = static_cast<T>(sum);
        }
      }
    }
  }
  return output;
}

// Average pooling counts only the window's elements inside the input.
template <typename T>
std::vector<T> Pool(const dnn::PoolingDescriptor& p, const dnn::BatchDescriptor& in, const std::vector<T>& input,
                    const dnn::BatchDescriptor& out) {
  std::vector<T> output(static_cast<std::size_t>(out.ElementCount()));
  for (std::int64_t n = 0; n < out.count(); ++n) {
    for (std::int64_t c = 0; c < out.feature_map_count(); ++c) {
      for (std::int64_t oy = 0; oy < out.height(); ++oy) {
        for (std::int64_t ox = 0; ox < out.width(); ++ox) {
          double best = -std::numeric_limits<double>::infinity();
          double sum = 0;
          int counted = 0;
          for (std::int64_t wy = 0; wy < p.window_height(); ++wy) {
            for (std::int64_t wx = 0; wx < p.window_width(); ++wx) {
              const std::int64_t iy = oy * p.vertical_stride() - p.vertical_padding() + wy;
              const std::int64_t ix = ox * p.horizontal_stride() - p.horizontal_padding() + wx;
              if (iy < 0 || iy >= in.height() || ix < 0 || ix >= in.width()) continue;
              const double value = static_cast<double>(input[At(in, n, c, iy, ix)]);
              best = std::max(best, value);
              sum += value;
              ++counted;
            }
          }
          output[At(out, n, c, oy, ox)] = static_cast<T>(p.mode() == dnn::PoolingMode::kMaximum ? best : sum / counted);
        }
      }
    }
  }
  return output;
}

template <typename T>
std::vector<T> Activate(dnn::ActivationMode mode, const std::vector<T>& input) {
  std::vector<T> output(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) {
    const double x = static_cast<double>(input[i]);
    double y = 0;
    switch (mode) {
      case dnn::ActivationMode::kSigmoid: y = 1.0 / (1.0 + std::exp(-x)); break;
      case dnn::ActivationMode::kRelu: y = x > 0 ? x : 0.0; break;
      case dnn::ActivationMode::kRelu6: y = std::min(std::max(x, 0.0), 6.0); break;
      case dnn::ActivationMode::kTanh: y = std::tanh(x); break;
    }
    output[i] = static_cast<T>(y);
  }
  return output;
}

template <typename T>
std::vector<T> Softmax(const dnn::BatchDescriptor& d, const std::vector<T>& input) {
  std::vector<T> output(input.size());
  const auto nodes = static_cast<std::size_t>(d.NodesAcrossFeatureMaps());
  for (std::size_t n = 0; n < static_cast<std::size_t>(d.count()); ++n) {
    double total = 0;
    for (std::size_t i = 0; i < nodes; ++i) total += std::exp(static_cast<double>(input[n * nodes + i]));
    for (std::size_t i = 0; i < nodes; ++i) {
      output[n * nodes + i] = static_cast<T>(std::exp(static_cast<double>(input[n * nodes + i])) / total);
    }
  }
  return output;
}

// output (m x n) = input (m x k) * weights^T, weights stored n x k.
template <typename T>
std::vector<T> MatMul(const std::vector<T>& input, const std::vector<T>& weights, std::size_t m, std::size_t n,
                      std::size_t k) {
  std::vector<T> output(m * n);
  for (std::size_t row = 0; row < m; ++row) {
    for (std::size_t column = 0; column < n; ++column) {
      double sum = 0;
      for (std::size_t i = 0; i < k; ++i) {
        sum += static_cast<double>(input[row * k + i]) * static_cast<double>(weights[column * k + i]);
      }
      output[row * n + column] = static_cast<T>(sum);
    }
  }
  return output;
}

// The largest difference, relative to max(1, |expected|).
template <typename T>
double MaxRelativeError(const std::vector<T>& expected, const std::vector<T>& actual) {
  if (expected.size() != actual.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = static_cast<double>(expected[i]);
    const double scale = std::max(1.0, std::abs(e));
    worst = std::max(worst, std::abs(e - static_cast<double>(actual[i])) / scale);
  }
  return worst;
}

}  // namespace dnn_ref
