// The Vulkan Philox kernels: philox.hpp's formulas spelled in GLSL, compiled
// to SPIR-V four times when streamexecutor is built (meson.build, one entry
// point per kernel: -DSE_DOUBLE for the double kernels, -DSE_GAUSSIAN for the
// Gaussian ones) and embedded as philox_spirv.inc, which the Vulkan adapter
// beside this file loads.
// rng_test.cpp holds the results to the host's: uniforms bit for bit,
// Gaussians within docs/rng.md's tolerance.
//
// Random123 has no GLSL spelling, so Philox4x32-10 is written out below from
// its definition (the multipliers and Weyl constants are Random123's).
//
// Every floating-point result is `precise`: a fused multiply-add would round
// mean + stddev * z differently from the host, as -fmad=false and
// FP_CONTRACT OFF prevent on CUDA and OpenCL. GLSL's sqrt is IEEE's on the
// devices we know; Vulkan only promises it to 3 ulp, still inside the tolerance.
#version 460
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0) in;

#if defined(SE_DOUBLE)
#define REAL double
#define VALUES_PER_BLOCK 2
#else
#define REAL float
#define VALUES_PER_BLOCK 4
#endif

// The TypedKernel's order: (key, stream, first block, count[, mean, stddev], out).
layout(push_constant) uniform Parameters {
  uint64_t key;
  uint64_t stream;
  uint64_t first_block;
  uint64_t count;
#if defined(SE_GAUSSIAN)
  REAL mean;
  REAL stddev;
#endif
};
layout(set = 0, binding = 0, std430) writeonly buffer Output { REAL values[]; };

uvec4 PhiloxBlock(uint64_t block) {
  uvec4 c = uvec4(uint(block), uint(block >> 32), uint(stream), uint(stream >> 32));
  uvec2 k = uvec2(uint(key), uint(key >> 32));
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

// Random123's u01fixedpt conversions: an integer of at most 24 (53) bits
// times a power of two, exact on every IEEE device.
float OpenClosed(uint word) { return float((word >> 8) + 1u) * 5.9604644775390625e-8; }
float ClosedOpen(uint word) { return float(word >> 8) * 5.9604644775390625e-8; }

// log, sin and cos are the shader's own, not GLSL's: Vulkan lets a driver's
// log be 2^-21 off near 1 (where Box-Muller's small radii come from) and its
// sin and cos 2^-11 off, and GLSL has none of them for doubles. These stay
// within a few ulp of glibc's over the ranges Box-Muller uses (x in (0, 1],
// the angle in [0, 2 pi)), well inside the tolerance docs/rng.md states.
//
// log x = e ln 2 + 2 atanh(s), s = (m - 1) / (m + 1) with m in [sqrt(1/2), sqrt(2)):
// |s| < 0.172, so six odd terms of the series reach float precision and
// thirteen double precision. ln 2 is split in two, the first part with
// trailing zero bits so that e times it is exact.
float Log(float x) {
  int e;
  float m = frexp(x, e);
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  precise float s = (m - 1.0) / (m + 1.0);
  precise float s2 = s * s;
  precise float series = 1.0 / 13.0;
  for (int k = 5; k >= 0; --k) series = 1.0 / float(2 * k + 1) + s2 * series;
  precise float result = float(e) * 6.9313812256e-01 + (2.0 * s * series + float(e) * 9.0580006145e-06);
  return result;
}

// The angle less its nearest multiple q of pi / 2 (pi / 2 in two parts, as
// for ln 2), then the Taylor series of sin and cos on [-pi/4, pi/4] by Horner:
// sin r = r (1 - r^2/(2*3) (1 - r^2/(4*5) (...))), cos r = 1 - r^2/(1*2) (1 - r^2/(3*4) (...)).
void SinCos(float angle, out float sine, out float cosine) {
  float quarter = floor(angle * 0.63661977236758134308 + 0.5);
  precise float r = (angle - quarter * 1.5707855225e+00) - quarter * 1.0804334124e-05;
  precise float r2 = r * r;
  precise float s = 0.0;
  precise float c = 0.0;
  for (int n = 13; n >= 3; n -= 2) s = 1.0 - r2 / float(n * (n - 1)) * s;
  s = r * s;
  for (int n = 12; n >= 2; n -= 2) c = 1.0 - r2 / float(n * (n - 1)) * c;
  switch (int(quarter) & 3) {
    case 0: sine = s; cosine = c; break;
    case 1: sine = c; cosine = -s; break;
    case 2: sine = -s; cosine = -c; break;
    default: sine = -c; cosine = s; break;
  }
}

#if defined(SE_DOUBLE)
uint64_t Join64(uint lo, uint hi) { return uint64_t(lo) | (uint64_t(hi) << 32); }
double OpenClosed(uint64_t word) { return double((word >> 11) + 1ul) * 1.1102230246251565404236316680908203125e-16lf; }
double ClosedOpen(uint64_t word) { return double(word >> 11) * 1.1102230246251565404236316680908203125e-16lf; }

double Log(double x) {
  int e;
  double m = frexp(x, e);
  if (m < 0.70710678118654752440lf) {
    m *= 2.0lf;
    e -= 1;
  }
  precise double s = (m - 1.0lf) / (m + 1.0lf);
  precise double s2 = s * s;
  precise double series = 1.0lf / 27.0lf;
  for (int k = 12; k >= 0; --k) series = 1.0lf / double(2 * k + 1) + s2 * series;
  precise double result =
      double(e) * 6.93147180369123816490e-01lf + (2.0lf * s * series + double(e) * 1.90821492927058770002e-10lf);
  return result;
}

void SinCos(double angle, out double sine, out double cosine) {
  double quarter = floor(angle * 0.63661977236758134308lf + 0.5lf);
  precise double r = (angle - quarter * 1.57079632673412561417e+00lf) - quarter * 6.07710050650619224932e-11lf;
  precise double r2 = r * r;
  precise double s = 0.0lf;
  precise double c = 0.0lf;
  for (int n = 19; n >= 3; n -= 2) s = 1.0lf - r2 / double(n * (n - 1)) * s;
  s = r * s;
  for (int n = 18; n >= 2; n -= 2) c = 1.0lf - r2 / double(n * (n - 1)) * c;
  switch (int(quarter) & 3) {
    case 0: sine = s; cosine = c; break;
    case 1: sine = c; cosine = -s; break;
    case 2: sine = -s; cosine = -c; break;
    default: sine = -c; cosine = s; break;
  }
}
#endif

void main() {
  const uint64_t index = uint64_t(gl_GlobalInvocationID.x);
  if (index >= (count + (VALUES_PER_BLOCK - 1)) / VALUES_PER_BLOCK) return;
  const uvec4 w = PhiloxBlock(first_block + index);
  // A storage buffer's range is at most 2^32 bytes, so every index fits in 32 bits.
  const uint64_t base = index * VALUES_PER_BLOCK;
#if defined(SE_DOUBLE)
  const uint64_t first = Join64(w.x, w.y);
  const uint64_t second = Join64(w.z, w.w);
#if defined(SE_GAUSSIAN)
  precise double radius = sqrt(-2.0lf * Log(OpenClosed(first)));
  precise double angle = 6.28318530717958647692lf * ClosedOpen(second);
  double sine, cosine;
  SinCos(angle, sine, cosine);
  precise double z0 = mean + stddev * (radius * cosine);
  precise double z1 = mean + stddev * (radius * sine);
  values[uint(base)] = z0;
  if (base + 1 < count) values[uint(base) + 1u] = z1;
#else
  values[uint(base)] = OpenClosed(first);
  if (base + 1 < count) values[uint(base) + 1u] = OpenClosed(second);
#endif
#else
#if defined(SE_GAUSSIAN)
  precise float z[4];
  for (int pair = 0; pair < 2; ++pair) {
    precise float radius = sqrt(-2.0 * Log(OpenClosed(w[2 * pair])));
    precise float angle = 6.28318530717958647692 * ClosedOpen(w[2 * pair + 1]);
    float sine, cosine;
    SinCos(angle, sine, cosine);
    z[2 * pair] = mean + stddev * (radius * cosine);
    z[2 * pair + 1] = mean + stddev * (radius * sine);
  }
  for (uint j = 0; j < 4 && base + j < count; ++j) values[uint(base) + j] = z[j];
#else
  for (uint j = 0; j < 4 && base + j < count; ++j) values[uint(base) + j] = OpenClosed(w[j]);
#endif
#endif
}
