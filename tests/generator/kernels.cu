// Kernels for the generated-header tests (generator_cuda_test.cpp): fixed-width
// and builtin scalars, pointers (const, void), a struct by value, C and C++
// linkage, and a template with explicit instantiations.
#include <cstdint>

namespace gen_test {
struct Particle {
  float position[3];
  double mass;
  std::int32_t id;
};
}  // namespace gen_test

extern "C" __global__ void widths(std::int8_t a, std::uint8_t b, std::int16_t c, std::uint16_t d, std::int32_t e,
                                  std::uint32_t f, std::int64_t g, std::uint64_t h, float i, double j, char k, bool l,
                                  long long m, unsigned long long n, double* out) {
  out[0] = a + b + c + d + e + f + g + h + i + j + k + l + m + n;
}

// C++ linkage: the spec names the mangled entry, and the loader compares the
// element types the mangled name carries.
__global__ void pointers(const float* in, float* out, const void* raw, std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && raw != nullptr) out[i] = in[i];
}

__global__ void by_value(gen_test::Particle p, double* out) { *out = p.mass * p.position[0] + p.id; }

template <typename T, int Scale>
__global__ void scale(T* data, T offset, std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * T(Scale) + offset;
}
template __global__ void scale<float, 2>(float*, float, std::uint32_t);
template __global__ void scale<std::int64_t, 3>(std::int64_t*, std::int64_t, std::uint32_t);

template <typename T>
__global__ void fill(T* data, T value) {
  data[blockIdx.x * blockDim.x + threadIdx.x] = value;
}
// Deduced arguments, and a struct as the template argument.
template __global__ void fill(double*, double);
template __global__ void fill<gen_test::Particle>(gen_test::Particle*, gen_test::Particle);
