// The four Philox kernels every Philox plugin provides, by the same names and
// parameter lists on every backend (host functions, OpenCL C, PTX), so that
// one launch path (rng.hpp) serves them all.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/kernel.hpp"

namespace streamexecutor::rng_detail {

enum class Distribution : unsigned char { kUniform, kGaussian };

enum class PhiloxKernel : unsigned char { kUniformF32, kUniformF64, kGaussianF32, kGaussianF64 };
inline constexpr std::size_t kPhiloxKernelCount = 4;

inline constexpr std::array<std::string_view, kPhiloxKernelCount> kPhiloxKernelNames = {
    "se_philox_uniform_f32", "se_philox_uniform_f64", "se_philox_gaussian_f32", "se_philox_gaussian_f64"};

// Threads per block of every Philox launch: one Philox block per thread.
inline constexpr std::uint64_t kThreadsPerBlock = 256;

// (key, stream, first block, value count, output) and, for Gaussians, mean
// and standard deviation before the output.
template <typename T>
using UniformKernel = TypedKernel<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t, DeviceMemory<T>*>;
template <typename T>
using GaussianKernel = TypedKernel<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t, T, T, DeviceMemory<T>*>;

}  // namespace streamexecutor::rng_detail
