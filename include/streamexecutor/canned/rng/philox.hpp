// The one definition of the Philox4x32-10 number streams, shared by the host
// kernels and the CUDA kernels (philox_kernels.cu includes this file under
// nvcc). The OpenCL kernels (opencl_source.hpp) spell the same formulas in
// OpenCL C; rng_test.cpp compares them bit for bit with these.
//
// Every value is derived from Random123 alone:
//   key     = seed bytes 0..7, little-endian          -> philox4x32_key_t {lo, hi}
//   counter = {block lo, block hi, stream lo, stream hi} where block is the
//             generator's running block index and stream is seed bytes
//             8..15, little-endian, zero-padded
//   block   = philox4x32_R(10, counter, key): four 32-bit words x0..x3
// and the words become values with Random123's u01fixedpt conversions, whose
// arithmetic is exact (an integer of at most 24/53 bits times a power of
// two), so uniform values are bit-identical on every IEEE device whatever its
// compiler contracts or reorders.
#pragma once

#include <Random123/philox.h>
#include <Random123/u01fixedpt.h>

#include <math.h>  // logf/sqrtf/cosf/sinf: the same names on the host and in CUDA device code

#include <cstdint>

#if defined(__CUDACC__)
#define SE_RNG_FN __host__ __device__ inline
#else
#define SE_RNG_FN inline
#endif

namespace streamexecutor::rng_detail {

// Values per Philox block: four words give four floats, or two 64-bit
// integers and so two doubles.
template <typename T>
inline constexpr std::uint64_t kValuesPerBlock = sizeof(T) == 4 ? 4 : 2;

struct PhiloxWords {
  std::uint32_t x[4];
};

SE_RNG_FN PhiloxWords PhiloxBlock(std::uint64_t key, std::uint64_t stream, std::uint64_t block) {
  r123::Philox4x32 generate;
  const r123::Philox4x32::ctr_type counter = {
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), static_cast<std::uint32_t>(stream),
       static_cast<std::uint32_t>(stream >> 32)}};
  const r123::Philox4x32::key_type words = {{static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)}};
  const r123::Philox4x32::ctr_type out = generate(counter, words);
  return PhiloxWords{{out[0], out[1], out[2], out[3]}};
}

SE_RNG_FN std::uint64_t Join64(std::uint32_t lo, std::uint32_t hi) {
  return static_cast<std::uint64_t>(lo) | (static_cast<std::uint64_t>(hi) << 32);
}

// Uniform in (0, 1]: the interval cuRAND uses, and one that never yields 0
// (so a log of it is always finite).
SE_RNG_FN float UniformFloat(std::uint32_t word) { return u01fixedpt_open_closed_32_float(word); }
SE_RNG_FN double UniformDouble(std::uint64_t word) { return u01fixedpt_open_closed_64_double(word); }

// Box-Muller: the radius from a (0, 1] uniform, the angle from a [0, 1)
// uniform. Only log, sqrt, cos and sin may round differently on another
// device (docs/rng.md gives the tolerance).
SE_RNG_FN void GaussianPair(std::uint32_t radius_word, std::uint32_t angle_word, float mean, float stddev, float* out0,
                            float* out1) {
  const float radius = sqrtf(-2.0f * logf(u01fixedpt_open_closed_32_float(radius_word)));
  const float angle = 6.28318530717958647692f * u01fixedpt_closed_open_32_float(angle_word);
  *out0 = mean + stddev * (radius * cosf(angle));
  *out1 = mean + stddev * (radius * sinf(angle));
}
SE_RNG_FN void GaussianPair(std::uint64_t radius_word, std::uint64_t angle_word, double mean, double stddev,
                            double* out0, double* out1) {
  const double radius = sqrt(-2.0 * log(u01fixedpt_open_closed_64_double(radius_word)));
  const double angle = 6.28318530717958647692 * u01fixedpt_closed_open_64_double(angle_word);
  *out0 = mean + stddev * (radius * cos(angle));
  *out1 = mean + stddev * (radius * sin(angle));
}

// The values of Philox block `block` that fall below `count`, written at
// out[block_offset * kValuesPerBlock ...]: one kernel thread's work.
SE_RNG_FN void UniformBlock(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block, std::uint64_t index,
                            std::uint64_t count, float* out) {
  const PhiloxWords w = PhiloxBlock(key, stream, first_block + index);
  const std::uint64_t base = index * 4;
  for (std::uint64_t j = 0; j < 4 && base + j < count; ++j) out[base + j] = UniformFloat(w.x[j]);
}
SE_RNG_FN void UniformBlock(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block, std::uint64_t index,
                            std::uint64_t count, double* out) {
  const PhiloxWords w = PhiloxBlock(key, stream, first_block + index);
  const std::uint64_t base = index * 2;
  out[base] = UniformDouble(Join64(w.x[0], w.x[1]));
  if (base + 1 < count) out[base + 1] = UniformDouble(Join64(w.x[2], w.x[3]));
}
SE_RNG_FN void GaussianBlock(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block, std::uint64_t index,
                             std::uint64_t count, float mean, float stddev, float* out) {
  const PhiloxWords w = PhiloxBlock(key, stream, first_block + index);
  const std::uint64_t base = index * 4;
  float z[4];
  GaussianPair(w.x[0], w.x[1], mean, stddev, &z[0], &z[1]);
  GaussianPair(w.x[2], w.x[3], mean, stddev, &z[2], &z[3]);
  for (std::uint64_t j = 0; j < 4 && base + j < count; ++j) out[base + j] = z[j];
}
SE_RNG_FN void GaussianBlock(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block, std::uint64_t index,
                             std::uint64_t count, double mean, double stddev, double* out) {
  const PhiloxWords w = PhiloxBlock(key, stream, first_block + index);
  const std::uint64_t base = index * 2;
  double z[2];
  GaussianPair(Join64(w.x[0], w.x[1]), Join64(w.x[2], w.x[3]), mean, stddev, &z[0], &z[1]);
  out[base] = z[0];
  if (base + 1 < count) out[base + 1] = z[1];
}

}  // namespace streamexecutor::rng_detail

#undef SE_RNG_FN
