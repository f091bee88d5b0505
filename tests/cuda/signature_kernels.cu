// Kernels whose PTX the signature tests read (nvcc -ptx at build time): C and
// C++ linkage, scalars of every size, pointers, a struct passed by value.
#include <cstdint>

namespace sig {
struct Pair {
  double weight;
  int index;
};
}  // namespace sig

// C linkage: the PTX gives sizes only.
extern "C" __global__ void c_scalars(char c, short s, int i, long long q, float f, double d, float* out) {
  out[0] = static_cast<float>(c + s + i + q) + f + static_cast<float>(d);
}
extern "C" __global__ void c_struct(sig::Pair pair, double* out) { out[pair.index] = pair.weight; }
extern "C" __global__ void c_no_params() {}

// C++ linkage: mangled names give the element types too.
__global__ void cpp_saxpy(float a, const float* x, float* y, std::uint32_t n) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void cpp_mixed(std::int64_t offset, sig::Pair pair, unsigned char flag, const double* in, double* out,
                          int* counts) {
  out[offset] = in[offset] * pair.weight + flag;
  counts[pair.index] += 1;
}
// Two pointers of the same type: the second is a substitution (S_) in the name.
__global__ void cpp_copy(const int* from, const int* to_unused, int* to) {
  to[threadIdx.x] = from[threadIdx.x] + (to_unused != nullptr);
}

// Function templates: the mangled name carries the template arguments, and the
// parameters refer to them (T_, T0_), so element types and signedness are
// checked as for plain C++ kernels.
template <typename T>
__global__ void tmpl_scale(T* x, T a, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] = x[i] * a;
}
template __global__ void tmpl_scale<float>(float*, float, int);
template __global__ void tmpl_scale<unsigned>(unsigned*, unsigned, int);

template <typename T, int kTile>
__global__ void tmpl_tile(const T* in, T* out, unsigned n) {
  if (threadIdx.x < n) out[threadIdx.x] = in[threadIdx.x] * kTile;
}
template __global__ void tmpl_tile<double, 256>(const double*, double*, unsigned);

namespace sig {
template <typename T>
__global__ void tmpl_pair(Pair pair, const T* in, T* out) {
  out[pair.index] = in[pair.index] * static_cast<T>(pair.weight);
}
template __global__ void tmpl_pair<int>(Pair, const int*, int*);
}  // namespace sig
