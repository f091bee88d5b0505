// The Philox plugin of the OpenCL backend: Random123's own OpenCL C headers,
// compiled by the driver with the Philox kernels below. The formulas are
// philox.hpp's, spelled in OpenCL C; rng_test.cpp holds them to the host's
// bit for bit.
//
// The headers reach the OpenCL compiler through -I: Random123 ships them for
// OpenCL C, and passing the directory (rather than pasting their text here)
// compiles exactly what the host side includes. The directory is the one the
// build found (STREAMEXECUTOR_RANDOM123_INCLUDE_DIR, set by meson.build),
// else Debian's /usr/include.
#pragma once

#include <string>
#include <type_traits>

#include "streamexecutor/canned/rng/common.hpp"
#include "streamexecutor/canned/rng/kernels.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/opencl.hpp"

#if !defined(STREAMEXECUTOR_RANDOM123_INCLUDE_DIR)
#define STREAMEXECUTOR_RANDOM123_INCLUDE_DIR "/usr/include"
#endif

namespace streamexecutor::rng_detail {

// FP_CONTRACT OFF: a fused multiply-add in the Gaussian's mean + stddev * z
// would round differently from the host. Double kernels only where the
// device has doubles; elsewhere loading one is NOT_FOUND (see rng.hpp).
inline constexpr const char* kPhiloxOpenCLSource = R"CLC(
#pragma OPENCL FP_CONTRACT OFF
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define SE_RNG_HAVE_DOUBLE 1
#else
#define R123_USE_U01_DOUBLE 0
#define SE_RNG_HAVE_DOUBLE 0
#endif
#include <Random123/philox.h>
#include <Random123/u01fixedpt.h>

inline philox4x32_ctr_t se_philox_block(ulong key, ulong stream, ulong block) {
  philox4x32_ctr_t counter = {{(uint)block, (uint)(block >> 32), (uint)stream, (uint)(stream >> 32)}};
  philox4x32_key_t words = {{(uint)key, (uint)(key >> 32)}};
  return philox4x32(counter, words);
}

inline ulong se_join64(uint lo, uint hi) { return (ulong)lo | ((ulong)hi << 32); }

inline void se_gaussian_pair_f32(uint radius_word, uint angle_word, float mean, float stddev, float* out0,
                                 float* out1) {
  const float radius = sqrt(-2.0f * log(u01fixedpt_open_closed_32_float(radius_word)));
  const float angle = 6.28318530717958647692f * u01fixedpt_closed_open_32_float(angle_word);
  *out0 = mean + stddev * (radius * cos(angle));
  *out1 = mean + stddev * (radius * sin(angle));
}

__kernel void se_philox_uniform_f32(ulong key, ulong stream, ulong first_block, ulong count, __global float* out) {
  const ulong index = get_global_id(0);
  if (index >= (count + 3) / 4) return;
  const philox4x32_ctr_t w = se_philox_block(key, stream, first_block + index);
  const ulong base = index * 4;
  for (uint j = 0; j < 4 && base + j < count; ++j) out[base + j] = u01fixedpt_open_closed_32_float(w.v[j]);
}

__kernel void se_philox_gaussian_f32(ulong key, ulong stream, ulong first_block, ulong count, float mean,
                                     float stddev, __global float* out) {
  const ulong index = get_global_id(0);
  if (index >= (count + 3) / 4) return;
  const philox4x32_ctr_t w = se_philox_block(key, stream, first_block + index);
  const ulong base = index * 4;
  float z[4];
  se_gaussian_pair_f32(w.v[0], w.v[1], mean, stddev, &z[0], &z[1]);
  se_gaussian_pair_f32(w.v[2], w.v[3], mean, stddev, &z[2], &z[3]);
  for (uint j = 0; j < 4 && base + j < count; ++j) out[base + j] = z[j];
}

#if SE_RNG_HAVE_DOUBLE
inline void se_gaussian_pair_f64(ulong radius_word, ulong angle_word, double mean, double stddev, double* out0,
                                 double* out1) {
  const double radius = sqrt(-2.0 * log(u01fixedpt_open_closed_64_double(radius_word)));
  const double angle = 6.28318530717958647692 * u01fixedpt_closed_open_64_double(angle_word);
  *out0 = mean + stddev * (radius * cos(angle));
  *out1 = mean + stddev * (radius * sin(angle));
}

__kernel void se_philox_uniform_f64(ulong key, ulong stream, ulong first_block, ulong count, __global double* out) {
  const ulong index = get_global_id(0);
  if (index >= (count + 1) / 2) return;
  const philox4x32_ctr_t w = se_philox_block(key, stream, first_block + index);
  const ulong base = index * 2;
  out[base] = u01fixedpt_open_closed_64_double(se_join64(w.v[0], w.v[1]));
  if (base + 1 < count) out[base + 1] = u01fixedpt_open_closed_64_double(se_join64(w.v[2], w.v[3]));
}

__kernel void se_philox_gaussian_f64(ulong key, ulong stream, ulong first_block, ulong count, double mean,
                                     double stddev, __global double* out) {
  const ulong index = get_global_id(0);
  if (index >= (count + 1) / 2) return;
  const philox4x32_ctr_t w = se_philox_block(key, stream, first_block + index);
  const ulong base = index * 2;
  double z[2];
  se_gaussian_pair_f64(se_join64(w.v[0], w.v[1]), se_join64(w.v[2], w.v[3]), mean, stddev, &z[0], &z[1]);
  out[base] = z[0];
  if (base + 1 < count) out[base + 1] = z[1];
}
#endif
)CLC";

// sqrt correctly rounded, as on the host (OpenCL's default allows 3 ulp).
inline std::string PhiloxOpenCLOptions() {
  return std::string("-cl-fp32-correctly-rounded-divide-sqrt -I") + STREAMEXECUTOR_RANDOM123_INCLUDE_DIR;
}

template <>
struct Adapter<opencl> {
  static StatusOr<MultiKernelLoaderSpec> PhiloxSpec(PhiloxKernel which) {
    const bool gaussian = which == PhiloxKernel::kGaussianF32 || which == PhiloxKernel::kGaussianF64;
    MultiKernelLoaderSpec spec(gaussian ? 7 : 5);
    spec.AddOpenCLTextInMemory(kPhiloxOpenCLSource, kPhiloxKernelNames[static_cast<std::size_t>(which)],
                               PhiloxOpenCLOptions());
    return spec;
  }
};

}  // namespace streamexecutor::rng_detail
