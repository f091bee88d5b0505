// The FFT tests' reference: a naive DFT in double precision and the helpers
// around it, shared by fft_test.cpp and fft_batched_test.cpp.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <streamexecutor/core/status.hpp>

namespace fft_reference {

namespace se = streamexecutor;

inline bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

using Dims = std::vector<std::size_t>;

inline std::size_t Product(const Dims& dims) {
  std::size_t n = 1;
  for (std::size_t d : dims) n *= d;
  return n;
}

// The textbook multi-dimensional DFT, O(N^2), row-major, slowest dimension first.
inline std::vector<std::complex<double>> NaiveDft(const std::vector<std::complex<double>>& x, const Dims& dims,
                                                  int sign) {
  const std::size_t n = Product(dims);
  std::vector<std::complex<double>> y(n);
  std::vector<std::size_t> out_index(dims.size()), in_index(dims.size());
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t d = dims.size(), rest = k; d-- > 0;) {
      out_index[d] = rest % dims[d];
      rest /= dims[d];
    }
    std::complex<double> sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
      double phase = 0;
      for (std::size_t d = dims.size(), rest = j; d-- > 0;) {
        in_index[d] = rest % dims[d];
        rest /= dims[d];
        phase += static_cast<double>(out_index[d] * in_index[d]) / static_cast<double>(dims[d]);
      }
      sum += x[j] * std::polar(1.0, sign * 2 * M_PI * phase);
    }
    y[k] = sum;
  }
  return y;
}

// The complex side of a real transform keeps n/2 + 1 of the last dimension.
inline std::vector<std::complex<double>> Half(const std::vector<std::complex<double>>& full, const Dims& dims) {
  const std::size_t last = dims.back(), half = last / 2 + 1;
  std::vector<std::complex<double>> out;
  for (std::size_t row = 0; row < full.size() / last; ++row) {
    for (std::size_t i = 0; i < half; ++i) out.push_back(full[row * last + i]);
  }
  return out;
}

inline std::vector<std::complex<double>> RandomComplex(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::complex<double>> x(n);
  for (auto& v : x) v = {u(rng), u(rng)};
  return x;
}

}  // namespace fft_reference
