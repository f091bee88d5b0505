// The canned BLAS operations on one backend (-DSE_BLAS_TEST_BACKEND=host or
// opencl): every operation in float and double against a naive loop, then
// the error paths. The plugin-choice cases ([plugin]) fix the executor's
// plugin for the rest of the process, so Meson runs them in a process of
// their own.
#include <streamexecutor/blas.hpp>

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace se = streamexecutor;
using se::blas::Transpose;

#ifndef SE_BLAS_TEST_BACKEND
#error "build with -DSE_BLAS_TEST_BACKEND=host|opencl"
#endif
using B = se::SE_BLAS_TEST_BACKEND;

int SeTestPreflight() {
  auto& platform = se::Platform<B>::Get();
  if (platform.VisibleDeviceCount() == 0) {
    fmt::print("SKIPPED: the {} platform has no device: {}\n", platform.Name(), platform.InitStatus().ToString());
    return 77;
  }
  return -1;
}

namespace {

se::StreamExecutor<B>* Executor() { return se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie(); }

bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

// Multiples of 1/8 in [-1, 1]: products and short sums are exact in float.
template <typename T>
std::vector<T> Data(std::size_t n, int seed) {
  std::vector<T> data(n);
  for (std::size_t i = 0; i < n; ++i) {
    data[i] = static_cast<T>(static_cast<int>((i * 37 + static_cast<std::size_t>(seed) * 11) % 17) - 8) / T(8);
  }
  return data;
}

template <typename T>
se::ScopedDeviceMemory<T> Upload(const std::vector<T>& host) {
  se::ScopedDeviceMemory<T> device = Executor()->template AllocateOwnedArray<T>(host.size());
  REQUIRE(device.ok());
  REQUIRE(Executor()->SynchronousMemcpyH2D(std::span<const T>(host), device.ptr()).ok());
  return device;
}

template <typename T>
std::vector<T> Download(const se::DeviceMemory<T>& device) {
  std::vector<T> host(device.ElementCount());
  REQUIRE(Executor()->SynchronousMemcpyD2H(device, std::span<T>(host)).ok());
  return host;
}

template <typename T>
void RequireClose(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-11;
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])) <=
            tolerance * (1.0 + std::abs(static_cast<double>(want[i]))));
  }
}

// op(M)(i, j) of a column-major matrix with leading dimension ld.
template <typename T>
T At(const std::vector<T>& m, int ld, Transpose t, int i, int j) {
  return t == Transpose::kNoTranspose ? m[static_cast<std::size_t>(i + j * ld)]
                                      : m[static_cast<std::size_t>(j + i * ld)];
}

template <typename T>
void ReferenceGemm(Transpose ta, Transpose tb, int m, int n, int k, T alpha, const std::vector<T>& a, int lda,
                   const std::vector<T>& b, int ldb, T beta, std::vector<T>& c, int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      T sum = 0;
      for (int p = 0; p < k; ++p) sum += At(a, lda, ta, i, p) * At(b, ldb, tb, p, j);
      T& out = c[static_cast<std::size_t>(i + j * ldc)];
      out = alpha * sum + beta * out;
    }
  }
}

se::Status Run(se::Stream<B>& stream) { return stream.BlockHostUntilDone(); }

}  // namespace

TEMPLATE_TEST_CASE("axpy matches a loop, contiguous and strided", "[blas]", float, double) {
  using T = TestType;
  for (const auto& [incx, incy] : {std::pair{1, 1}, std::pair{2, 3}}) {
    const int n = 1001;
    std::vector<T> x = Data<T>(static_cast<std::size_t>(n * incx), 1);
    std::vector<T> y = Data<T>(static_cast<std::size_t>(n * incy), 2);
    auto dx = Upload(x), dy = Upload(y);
    se::Stream stream(Executor());
    REQUIRE(Run(stream.Init().ThenBlasAxpy(n, T(1.5), dx.cref(), incx, dy.ptr(), incy)).ok());
    for (int i = 0; i < n; ++i) y[static_cast<std::size_t>(i * incy)] += T(1.5) * x[static_cast<std::size_t>(i * incx)];
    RequireClose(Download(dy.cref()), y);
  }
}

TEMPLATE_TEST_CASE("dot matches a loop; the empty dot is zero", "[blas]", float, double) {
  using T = TestType;
  const int n = 999;
  std::vector<T> x = Data<T>(static_cast<std::size_t>(2 * n), 3), y = Data<T>(static_cast<std::size_t>(n), 4);
  auto dx = Upload(x), dy = Upload(y), result = Upload(std::vector<T>{T(7), T(7)});
  se::Stream stream(Executor());
  REQUIRE(Run(stream.Init().ThenBlasDot(n, dx.cref(), 2, dy.cref(), 1, result.ptr())).ok());
  T want = 0;
  for (int i = 0; i < n; ++i) want += x[static_cast<std::size_t>(2 * i)] * y[static_cast<std::size_t>(i)];
  RequireClose(Download(result.cref()), std::vector<T>{want, T(7)});

  REQUIRE(Run(stream.ThenBlasDot(0, dx.cref(), 1, dy.cref(), 1, result.ptr())).ok());
  RequireClose(Download(result.cref()), std::vector<T>{T(0), T(7)});
}

TEMPLATE_TEST_CASE("gemv matches a loop, plain and transposed, with a padded leading dimension", "[blas]", float,
                   double) {
  using T = TestType;
  const int m = 45, n = 31, lda = 50;
  const std::vector<T> a = Data<T>(static_cast<std::size_t>(lda * n), 5);
  auto da = Upload(a);
  for (Transpose t : {Transpose::kNoTranspose, Transpose::kTranspose}) {
    const int x_len = t == Transpose::kNoTranspose ? n : m, y_len = t == Transpose::kNoTranspose ? m : n;
    const std::vector<T> x = Data<T>(static_cast<std::size_t>(x_len), 6);
    std::vector<T> y = Data<T>(static_cast<std::size_t>(2 * y_len), 7);
    auto dx = Upload(x), dy = Upload(y);
    se::Stream stream(Executor());
    REQUIRE(Run(stream.Init().ThenBlasGemv(t, m, n, T(2), da.cref(), lda, dx.cref(), 1, T(0.5), dy.ptr(), 2)).ok());
    for (int i = 0; i < y_len; ++i) {
      T sum = 0;
      for (int p = 0; p < x_len; ++p) {
        sum += (t == Transpose::kNoTranspose ? a[static_cast<std::size_t>(i + p * lda)]
                                             : a[static_cast<std::size_t>(p + i * lda)]) *
               x[static_cast<std::size_t>(p)];
      }
      T& out = y[static_cast<std::size_t>(2 * i)];
      out = T(2) * sum + T(0.5) * out;
    }
    RequireClose(Download(dy.cref()), y);
  }
}

TEMPLATE_TEST_CASE("gemm matches a loop for every transpose pair, on slices", "[blas]", float, double) {
  using T = TestType;
  const int m = 37, n = 23, k = 19, lda = 41, ldb = 40, ldc = 39, pad = 5;
  for (Transpose ta : {Transpose::kNoTranspose, Transpose::kTranspose}) {
    for (Transpose tb : {Transpose::kNoTranspose, Transpose::kTranspose}) {
      const int a_cols = ta == Transpose::kNoTranspose ? k : m, b_cols = tb == Transpose::kNoTranspose ? n : k;
      const std::vector<T> a = Data<T>(static_cast<std::size_t>(lda * a_cols), 8);
      const std::vector<T> b = Data<T>(static_cast<std::size_t>(ldb * b_cols), 9);
      std::vector<T> c = Data<T>(static_cast<std::size_t>(ldc * n), 10);
      // Each operand sits `pad` elements into a larger allocation, so that
      // the views' offsets reach the library.
      std::vector<T> a_padded(static_cast<std::size_t>(pad), T(99));
      a_padded.insert(a_padded.end(), a.begin(), a.end());
      std::vector<T> c_padded(static_cast<std::size_t>(pad), T(99));
      c_padded.insert(c_padded.end(), c.begin(), c.end());
      auto da = Upload(a_padded), db = Upload(b), dc = Upload(c_padded);
      se::DeviceMemory<T> a_view = da.cref().GetSlice(pad, a.size());
      se::DeviceMemory<T> c_view = dc.cref().GetSlice(pad, c.size());
      se::Stream stream(Executor());
      INFO("transa=" << se::blas::TransposeString(ta) << " transb=" << se::blas::TransposeString(tb));
      REQUIRE(Run(stream.Init().ThenBlasGemm(ta, tb, m, n, k, T(1.5), a_view, lda, db.cref(), ldb, T(0.5), &c_view,
                                             ldc))
                  .ok());
      ReferenceGemm(ta, tb, m, n, k, T(1.5), a, lda, b, ldb, T(0.5), c, ldc);
      std::vector<T> want(static_cast<std::size_t>(pad), T(99));
      want.insert(want.end(), c.begin(), c.end());
      RequireClose(Download(dc.cref()), want);
    }
  }
}

TEMPLATE_TEST_CASE("gemm with k = 0 scales C by beta, as BLAS defines it", "[blas]", float, double) {
  using T = TestType;
  const int m = 5, n = 4, ldc = 7;
  auto a = Upload(std::vector<T>(8, T(1)));
  for (int rows : {ldc, m}) {  // padded columns, then contiguous ones
    std::vector<T> c = Data<T>(static_cast<std::size_t>(rows * n), 3);
    auto dc = Upload(c);
    se::Stream stream(Executor());
    REQUIRE(Run(stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, 0, T(3), a.cref(),
                                           m, a.cref(), 1, T(0.5), dc.ptr(), rows))
                .ok());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) c[static_cast<std::size_t>(i + j * rows)] *= T(0.5);
    RequireClose(Download(dc.cref()), c);
  }
}

TEMPLATE_TEST_CASE("batched gemm matches a loop, on separate allocations and on slices of one", "[blas]", float,
                   double) {
  using T = TestType;
  const int m = 16, n = 12, k = 9, batch = 3;
  const std::size_t a_size = m * k, b_size = k * n, c_size = m * n;
  // B is used transposed: each is stored n x k (ldb = n).
  std::vector<std::vector<T>> a, b_stored, c;
  for (int i = 0; i < batch; ++i) {
    a.push_back(Data<T>(a_size, 20 + i));
    b_stored.push_back(Data<T>(b_size, 30 + i));
    c.push_back(Data<T>(c_size, 40 + i));
  }
  std::vector<std::vector<T>> want = c;
  for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
    ReferenceGemm(Transpose::kNoTranspose, Transpose::kTranspose, m, n, k, T(2), a[i], m, b_stored[i], n, T(-1),
                  want[i], m);
  }

  SECTION("separate allocations") {
    std::vector<se::ScopedDeviceMemory<T>> da, db, dc;
    std::vector<se::DeviceMemory<T>*> pa, pb, pc;
    for (int i = 0; i < batch; ++i) {
      da.push_back(Upload(a[static_cast<std::size_t>(i)]));
      db.push_back(Upload(b_stored[static_cast<std::size_t>(i)]));
      dc.push_back(Upload(c[static_cast<std::size_t>(i)]));
    }
    for (int i = 0; i < batch; ++i) {
      pa.push_back(da[static_cast<std::size_t>(i)].ptr());
      pb.push_back(db[static_cast<std::size_t>(i)].ptr());
      pc.push_back(dc[static_cast<std::size_t>(i)].ptr());
    }
    se::Stream stream(Executor());
    REQUIRE(Run(stream.Init().ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kTranspose, m, n, k, T(2), pa, m,
                                                  pb, n, T(-1), pc, m, batch))
                .ok());
    for (std::size_t i = 0; i < dc.size(); ++i) RequireClose(Download(dc[i].cref()), want[i]);
  }
  SECTION("slices of one allocation per operand") {
    std::vector<T> all_a, all_b, all_c;
    for (int i = 0; i < batch; ++i) {
      all_a.insert(all_a.end(), a[static_cast<std::size_t>(i)].begin(), a[static_cast<std::size_t>(i)].end());
      const std::vector<T>& bi = b_stored[static_cast<std::size_t>(i)];
      all_b.insert(all_b.end(), bi.begin(), bi.end());
      all_c.insert(all_c.end(), c[static_cast<std::size_t>(i)].begin(), c[static_cast<std::size_t>(i)].end());
    }
    auto da = Upload(all_a), db = Upload(all_b), dc = Upload(all_c);
    std::vector<se::DeviceMemory<T>> va, vb, vc;
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      va.push_back(da.cref().GetSlice(i * a_size, a_size));
      vb.push_back(db.cref().GetSlice(i * b_size, b_size));
      vc.push_back(dc.cref().GetSlice(i * c_size, c_size));
    }
    std::vector<se::DeviceMemory<T>*> pa, pb, pc;
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      pa.push_back(&va[i]);
      pb.push_back(&vb[i]);
      pc.push_back(&vc[i]);
    }
    se::Stream stream(Executor());
    REQUIRE(Run(stream.Init().ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kTranspose, m, n, k, T(2), pa, m,
                                                  pb, n, T(-1), pc, m, batch))
                .ok());
    std::vector<T> all_want;
    for (const auto& w : want) all_want.insert(all_want.end(), w.begin(), w.end());
    RequireClose(Download(dc.cref()), all_want);
  }
}

// ---- Half precision (se::Half, canned/blas/half.hpp) ------------------------------

namespace {

using se::Half;

static_assert(Half(1.0f).bits() == 0x3C00 && Half(-2.0f).bits() == 0xC000 && Half(65504.0f).bits() == 0x7BFF);
static_assert(static_cast<float>(Half::FromBits(0x3555)) == 0.333251953125f);  // constexpr both ways

float Bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

// Whether this device runs CLBlast's half kernels (OpenCL's cl_khr_fp16);
// the host computes half gemms in float, always.
template <typename Backend = B>
bool DeviceHasHalf() {
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  if constexpr (std::is_same_v<Backend, se::opencl>) {
    std::size_t size = 0;
    const cl_device_id device = se::NativeDevice(*se::Platform<Backend>::Get().ExecutorForDevice(0).ValueOrDie());
    REQUIRE(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, nullptr, &size) == CL_SUCCESS);
    std::string extensions(size, '\0');
    REQUIRE(clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, size, extensions.data(), nullptr) == CL_SUCCESS);
    return extensions.find("cl_khr_fp16") != std::string::npos;
  }
#endif
  return true;
}

// Uniform-ish values in [-1, 1], rounded to half: not exact in short sums,
// so the tolerance below is what is checked.
std::vector<Half> HalfData(std::size_t n, std::uint32_t seed) {
  std::vector<Half> data(n);
  std::uint32_t state = seed * 2654435761u + 1u;
  for (Half& value : data) {
    state = state * 1664525u + 1013904223u;
    value = Half(static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f);
  }
  return data;
}

// C = alpha op(A) op(B) + beta C in double over the half inputs; `bound`
// collects |alpha| sum |a b| + |beta c| per element, for the tolerance.
void ReferenceHalfGemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const std::vector<Half>& a,
                       int lda, const std::vector<Half>& b, int ldb, float beta, const std::vector<Half>& c, int ldc,
                       std::vector<double>& want, std::vector<double>& bound) {
  want.assign(c.size(), 0.0);
  bound.assign(c.size(), 0.0);
  for (std::size_t i = 0; i < c.size(); ++i) want[i] = static_cast<double>(static_cast<float>(c[i]));
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0, magnitude = 0;
      for (int p = 0; p < k; ++p) {
        const double product = static_cast<double>(static_cast<float>(At(a, lda, ta, i, p))) *
                               static_cast<double>(static_cast<float>(At(b, ldb, tb, p, j)));
        sum += product;
        magnitude += std::abs(product);
      }
      const auto at = static_cast<std::size_t>(i + j * ldc);
      const double old = want[at];
      want[at] = alpha * sum + (beta == 0.0f ? 0.0 : beta * old);
      bound[at] = std::abs(alpha) * magnitude + (beta == 0.0f ? 0.0 : std::abs(beta * old));
    }
  }
}

// Host: products and sums in float, one rounding to half, so within one half
// ulp (2^-10 relative; 2^-11 is the rounding alone) plus float's error on the
// sum. A device computing in half (CLBlast's half kernels) accumulates k
// roundings of half: about k half ulps of the magnitude.
void RequireHalfClose(const std::vector<Half>& got, const std::vector<double>& want, const std::vector<double>& bound,
                      int k) {
  REQUIRE(got.size() == want.size());
  const bool in_half = std::is_same_v<B, se::opencl>;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tolerance = std::ldexp(std::abs(want[i]), -10) + std::ldexp(bound[i], in_half ? -11 : -20) *
                                                                      (in_half ? k + 2 : 1) +
                             std::ldexp(1.0, -24);
    INFO("element " << i << ": got " << static_cast<float>(got[i]) << ", want " << want[i] << " +- " << tolerance);
    REQUIRE(std::abs(static_cast<double>(static_cast<float>(got[i])) - want[i]) <= tolerance);
  }
}

}  // namespace

TEST_CASE("Half converts every half to float and back exactly", "[blas][half]") {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const Half h = Half::FromBits(static_cast<std::uint16_t>(bits));
    const float f = h;
    if (std::isnan(f)) {
      REQUIRE(h.IsNaN());
      REQUIRE(Half(f).IsNaN());
      REQUIRE((Half(f).bits() & 0x8000) == (bits & 0x8000));
      continue;
    }
    REQUIRE(!h.IsNaN());
    INFO("bits " << bits);
    REQUIRE(Half(f).bits() == bits);
  }
  CHECK(static_cast<float>(Half::FromBits(0x0001)) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(static_cast<float>(Half::FromBits(0x03FF)) == std::ldexp(1023.0f, -24));  // largest subnormal
  CHECK(static_cast<float>(Half::FromBits(0x0400)) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(static_cast<float>(Half::FromBits(0x7BFF)) == 65504.0f);
  CHECK(static_cast<float>(Half::FromBits(0x7C00)) == std::numeric_limits<float>::infinity());
  CHECK(static_cast<float>(Half::FromBits(0xFC00)) == -std::numeric_limits<float>::infinity());
  CHECK(std::signbit(static_cast<float>(Half::FromBits(0x8000))));
  CHECK(static_cast<float>(Half::FromBits(0x8000)) == 0.0f);
}

TEST_CASE("Half rounds float to nearest, ties to even, over every gap between halves", "[blas][half]") {
  // Each midpoint of two neighbouring finite halves (exact in float) goes to
  // the even one; a float ulp either side goes to the nearer one.
  for (std::uint32_t low = 0; low < 0x7BFF; ++low) {
    const std::uint32_t high = low + 1;
    const float a = Half::FromBits(static_cast<std::uint16_t>(low));
    const float b = Half::FromBits(static_cast<std::uint16_t>(high));
    const float mid = a + (b - a) / 2;
    REQUIRE(static_cast<double>(mid) == (static_cast<double>(a) + static_cast<double>(b)) / 2);
    const std::uint32_t even = (low & 1) == 0 ? low : high;
    INFO("between " << low << " and " << high);
    REQUIRE(Half(mid).bits() == even);
    REQUIRE(Half(-mid).bits() == (even | 0x8000));
    REQUIRE(Half(std::nextafter(mid, 0.0f)).bits() == low);
    REQUIRE(Half(std::nextafter(mid, 1e9f)).bits() == high);
    REQUIRE(Half(std::nextafter(a, 1e9f)).bits() == low);
    REQUIRE(Half(std::nextafter(b, 0.0f)).bits() == high);
  }
  // Overflow: from 65520 (halfway to 2^16, the even side) up is infinity.
  CHECK(Half(std::nextafter(65520.0f, 0.0f)).bits() == 0x7BFF);
  CHECK(Half(65520.0f).bits() == 0x7C00);
  CHECK(Half(-65520.0f).bits() == 0xFC00);
  CHECK(Half(1e10f).bits() == 0x7C00);
  CHECK(Half(std::numeric_limits<float>::max()).bits() == 0x7C00);
  CHECK(Half(-std::numeric_limits<float>::infinity()).bits() == 0xFC00);
  // Underflow: 2^-25 is a tie between 0 and 2^-24 (goes to 0), just above it is 2^-24.
  CHECK(Half(std::ldexp(1.0f, -25)).bits() == 0x0000);
  CHECK(Half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits() == 0x0001);
  CHECK(Half(std::ldexp(3.0f, -25)).bits() == 0x0002);  // 1.5 x 2^-24: tie, to even 2
  CHECK(Half(std::ldexp(5.0f, -25)).bits() == 0x0002);  // 2.5 x 2^-24: tie, to even 2
  CHECK(Half(std::ldexp(1.0f, -30)).bits() == 0x0000);
  CHECK(Half(-std::ldexp(1.0f, -30)).bits() == 0x8000);  // the sign of zero stays
  CHECK(Half(Bits(0x00000001)).bits() == 0x0000);  // float subnormals
  CHECK(Half(Bits(0x80000001)).bits() == 0x8000);
  CHECK(Half(std::ldexp(1023.5f, -24)).bits() == 0x0400);  // the largest subnormal rounds up into the normals
  CHECK(Half(-0.0f).bits() == 0x8000);
  // NaN stays NaN, quiet, even when its payload sits below half's bits.
  CHECK(Half(std::numeric_limits<float>::quiet_NaN()).IsNaN());
  CHECK(Half(Bits(0x7F800001)).IsNaN());
  CHECK(Half(Bits(0xFF800001)).bits() == 0xFE00);
  CHECK(Half(Bits(0x7FC02000)).bits() == 0x7E01);  // the top payload bits are kept
}

#if defined(__FLT16_MANT_DIG__)
TEST_CASE("Half rounds as the compiler's _Float16 does", "[blas][half]") {
  std::uint32_t state = 12345;
  for (int i = 0; i < 4000000; ++i) {
    state = state * 1664525u + 1013904223u;
    // Exponents across half's range and beyond: bits 23-30 from a narrow window.
    const std::uint32_t exponent = 96 + (state >> 27) * 2 + ((state >> 9) & 1);  // 96 .. 159
    const std::uint32_t bits = (state & 0x807FFFFFu) | (exponent << 23);
    const float f = Bits(bits);
    const _Float16 reference = static_cast<_Float16>(f);
    INFO("float bits " << bits);
    REQUIRE(Half(f).bits() == std::bit_cast<std::uint16_t>(reference));
  }
}
#endif

TEST_CASE("half gemm matches a float loop for every transpose pair, on slices", "[blas][half]") {
  const int m = 29, n = 17, k = 37, lda = 41, ldb = 40, ldc = 33, pad = 3;
  const bool has_half = DeviceHasHalf();
  for (Transpose ta : {Transpose::kNoTranspose, Transpose::kTranspose}) {
    for (Transpose tb : {Transpose::kNoTranspose, Transpose::kTranspose}) {
      const int a_cols = ta == Transpose::kNoTranspose ? k : m, b_cols = tb == Transpose::kNoTranspose ? n : k;
      const std::vector<Half> a = HalfData(static_cast<std::size_t>(lda * a_cols), 1);
      const std::vector<Half> b = HalfData(static_cast<std::size_t>(ldb * b_cols), 2);
      // C's padding rows and the elements before the view hold 99: untouched.
      std::vector<Half> c = HalfData(static_cast<std::size_t>(ldc * n), 3);
      for (int j = 0; j < n; ++j)
        for (int i = m; i < ldc; ++i) c[static_cast<std::size_t>(i + j * ldc)] = Half(99.0f);
      std::vector<Half> c_padded(static_cast<std::size_t>(pad), Half(99.0f));
      c_padded.insert(c_padded.end(), c.begin(), c.end());
      auto da = Upload(a), db = Upload(b), dc = Upload(c_padded);
      se::DeviceMemory<Half> c_view = dc.cref().GetSlice(pad, c.size());
      se::Stream stream(Executor());
      INFO("transa=" << se::blas::TransposeString(ta) << " transb=" << se::blas::TransposeString(tb));
      const se::Status status =
          Run(stream.Init().ThenBlasGemm(ta, tb, m, n, k, 1.5f, da.cref(), lda, db.cref(), ldb, -0.5f, &c_view, ldc));
      if (!has_half) {
        REQUIRE(status.code() == se::ErrorCode::kUnimplemented);
        continue;
      }
      REQUIRE(status.ok());
      std::vector<double> want, bound;
      ReferenceHalfGemm(ta, tb, m, n, k, 1.5f, a, lda, b, ldb, -0.5f, c, ldc, want, bound);
      const std::vector<Half> got = Download(dc.cref());
      for (int i = 0; i < pad; ++i) REQUIRE(got[static_cast<std::size_t>(i)].bits() == Half(99.0f).bits());
      for (int j = 0; j < n; ++j) {
        for (int i = m; i < ldc; ++i) {
          REQUIRE(got[static_cast<std::size_t>(pad + i + j * ldc)].bits() == Half(99.0f).bits());
        }
      }
      RequireHalfClose(std::vector<Half>(got.begin() + pad, got.end()), want, bound, k);
    }
  }
}

TEST_CASE("half gemm with beta = 0 does not read C; k = 0 scales C by beta", "[blas][half]") {
  if (!DeviceHasHalf()) {
    // k = 0 takes CLBlast's scal, not its gemm: refused the same way.
    auto c = Upload(HalfData(16, 8));
    se::Stream stream(Executor());
    const se::Status status = Run(stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4,
                                                             0, 1.0f, c.cref(), 4, c.cref(), 1, 0.5f, c.ptr(), 4));
    REQUIRE(status.code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(status, "clblast::Scal failed with kNoHalfPrecision"));
    CHECK(Mentions(status, "cl_khr_fp16"));
    return;
  }
  const int m = 6, n = 5, k = 4;
  const std::vector<Half> a = HalfData(m * k, 4), b = HalfData(k * n, 5);
  auto da = Upload(a), db = Upload(b);
  auto dc = Upload(std::vector<Half>(m * n, Half(std::numeric_limits<float>::quiet_NaN())));
  se::Stream stream(Executor());
  REQUIRE(Run(stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k, 1.0f, da.cref(),
                                         m, db.cref(), k, 0.0f, dc.ptr(), m))
              .ok());
  std::vector<double> want, bound;
  ReferenceHalfGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k, 1.0f, a, m, b, k, 0.0f,
                    std::vector<Half>(m * n), m, want, bound);
  RequireHalfClose(Download(dc.cref()), want, bound, k);

  std::vector<Half> c = HalfData(m * n, 6);
  auto dc2 = Upload(c);
  REQUIRE(Run(stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, 0, 3.0f, da.cref(), m,
                                  db.cref(), 1, 0.5f, dc2.ptr(), m))
              .ok());
  const std::vector<Half> got = Download(dc2.cref());
  for (std::size_t i = 0; i < c.size(); ++i) {
    // C <- 0.5 C, one rounding of the exact product (host: in float, then to half).
    REQUIRE(got[i].bits() == Half(0.5f * static_cast<float>(c[i])).bits());
  }
}

TEST_CASE("half batched gemm matches a float loop, on separate allocations and on slices of one", "[blas][half]") {
  const int m = 12, n = 10, k = 21, batch = 3;
  const std::size_t a_size = m * k, b_size = k * n, c_size = m * n;
  const bool has_half = DeviceHasHalf();
  std::vector<std::vector<Half>> a, b, c;
  std::vector<std::vector<double>> want(batch), bound(batch);
  for (int i = 0; i < batch; ++i) {
    const auto seed = static_cast<std::uint32_t>(10 + 3 * i);
    a.push_back(HalfData(a_size, seed));
    b.push_back(HalfData(b_size, seed + 1));
    c.push_back(HalfData(c_size, seed + 2));
    const auto at = static_cast<std::size_t>(i);
    ReferenceHalfGemm(Transpose::kTranspose, Transpose::kNoTranspose, m, n, k, 2.0f, a[at], k, b[at], k, -1.0f, c[at],
                      m, want[at], bound[at]);
  }
  SECTION("separate allocations") {
    std::vector<se::ScopedDeviceMemory<Half>> da, db, dc;
    std::vector<se::DeviceMemory<Half>*> pa, pb, pc;
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      da.push_back(Upload(a[i]));
      db.push_back(Upload(b[i]));
      dc.push_back(Upload(c[i]));
    }
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      pa.push_back(da[i].ptr());
      pb.push_back(db[i].ptr());
      pc.push_back(dc[i].ptr());
    }
    se::Stream stream(Executor());
    const se::Status status = Run(stream.Init().ThenBlasGemmBatched(
        Transpose::kTranspose, Transpose::kNoTranspose, m, n, k, 2.0f, pa, k, pb, k, -1.0f, pc, m, batch));
    if (!has_half) {
      REQUIRE(status.code() == se::ErrorCode::kUnimplemented);
      REQUIRE(Mentions(status, "cl_khr_fp16"));
      return;
    }
    REQUIRE(status.ok());
    for (std::size_t i = 0; i < dc.size(); ++i) RequireHalfClose(Download(dc[i].cref()), want[i], bound[i], k);
  }
  SECTION("slices of one allocation per operand") {
    std::vector<Half> all_a, all_b, all_c;
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      all_a.insert(all_a.end(), a[i].begin(), a[i].end());
      all_b.insert(all_b.end(), b[i].begin(), b[i].end());
      all_c.insert(all_c.end(), c[i].begin(), c[i].end());
    }
    auto da = Upload(all_a), db = Upload(all_b), dc = Upload(all_c);
    std::vector<se::DeviceMemory<Half>> va, vb, vc;
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      va.push_back(da.cref().GetSlice(i * a_size, a_size));
      vb.push_back(db.cref().GetSlice(i * b_size, b_size));
      vc.push_back(dc.cref().GetSlice(i * c_size, c_size));
    }
    std::vector<se::DeviceMemory<Half>*> pa, pb, pc;
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      pa.push_back(&va[i]);
      pb.push_back(&vb[i]);
      pc.push_back(&vc[i]);
    }
    se::Stream stream(Executor());
    const se::Status status = Run(stream.Init().ThenBlasGemmBatched(
        Transpose::kTranspose, Transpose::kNoTranspose, m, n, k, 2.0f, pa, k, pb, k, -1.0f, pc, m, batch));
    if (!has_half) {
      REQUIRE(status.code() == se::ErrorCode::kUnimplemented);
      return;
    }
    REQUIRE(status.ok());
    const std::vector<Half> got = Download(dc.cref());
    for (std::size_t i = 0; i < static_cast<std::size_t>(batch); ++i) {
      RequireHalfClose(std::vector<Half>(got.begin() + static_cast<std::ptrdiff_t>(i * c_size),
                                         got.begin() + static_cast<std::ptrdiff_t>((i + 1) * c_size)),
                       want[i], bound[i], k);
    }
  }
}

TEST_CASE("half gemm runs where the device has half, else is UNIMPLEMENTED naming the device and cl_khr_fp16",
          "[blas][half]") {
  // Small integers: exact in half, whatever the device accumulates in.
  std::vector<Half> host_a(16);
  for (std::size_t i = 0; i < host_a.size(); ++i) host_a[i] = Half(static_cast<float>(i % 5) - 2.0f);
  auto a = Upload(host_a), c = Upload(std::vector<Half>(16));
  se::Stream stream(Executor());
  const se::Status status = Run(stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4,
                                                           1.0f, a.cref(), 4, a.cref(), 4, 0.0f, c.ptr(), 4));
  if (DeviceHasHalf()) {
    REQUIRE(status.ok());
    const std::vector<Half> got = Download(c.cref());
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) {
        float want = 0;
        for (int p = 0; p < 4; ++p) {
          want += static_cast<float>(host_a[static_cast<std::size_t>(i + p * 4)]) *
                  static_cast<float>(host_a[static_cast<std::size_t>(p + j * 4)]);
        }
        REQUIRE(static_cast<float>(got[static_cast<std::size_t>(i + j * 4)]) == want);
      }
    }
    return;
  }
  REQUIRE(status.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(status, "clblast::Gemm failed with kNoHalfPrecision (-2045)"));
  CHECK(Mentions(status, "cl_khr_fp16"));
  CHECK(Mentions(status, Executor()->DeviceLabel()));
  // The stream failed: later work is skipped, and the error sticks.
  CHECK(stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, a.cref(), 4, a.cref(), 4,
                            0.0f, c.ptr(), 4)
            .status()
            .code() == se::ErrorCode::kUnimplemented);
}

TEST_CASE("a half gemm whose shape does not fit is OUT_OF_RANGE naming m, n, k and the sizes, as for float",
          "[blas][half]") {
  auto a = Upload(std::vector<Half>(6 * 4)), b = Upload(std::vector<Half>(4 * 5)), c = Upload(std::vector<Half>(29));
  se::Stream stream(Executor());
  stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 6, 5, 4, 1.0f, a.cref(), 6, b.cref(), 4,
                             0.0f, c.ptr(), 6);
  REQUIRE(stream.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(stream.status(), "ThenBlasGemm on " + Executor()->DeviceLabel() +
                                      ": m=6, n=5, k=4 (transa=N, transb=N, lda=6, ldb=4, ldc=6) needs 30 elements "
                                      "of matrix C, but its DeviceMemory holds 29 (58 bytes)"));
  // Batched, B transposed (stored n x k, ldb = n): the entry's C is short.
  se::Stream other(Executor());
  std::vector<se::DeviceMemory<Half>*> as{a.ptr()}, bs{b.ptr()}, cs{c.ptr()};
  other.Init().ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kTranspose, 6, 5, 4, 1.0f, as, 6, bs, 5, 0.0f,
                                   cs, 6, 1);
  REQUIRE(other.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(other.status(), "ThenBlasGemmBatched on " + Executor()->DeviceLabel() +
                                     ": m=6, n=5, k=4 (transa=N, transb=T, lda=6, ldb=5, ldc=6) needs 30 elements "
                                     "of matrix C, but its DeviceMemory holds 29 (58 bytes) (batch entry 0)"));
  // A leading dimension below the rows stored is INVALID_ARGUMENT, as for float.
  se::Stream third(Executor());
  third.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 6, 5, 4, 1.0f, a.cref(), 5, b.cref(), 4,
                            0.0f, c.ptr(), 6);
  REQUIRE(third.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(third.status(), "lda=5 is smaller than the 6 rows A stores"));
}

TEST_CASE("BLAS calls keep stream order behind a pending host callback", "[blas]") {
  const int n = 64;
  std::vector<float> x = Data<float>(n, 1), y = Data<float>(n, 2);
  auto dx = Upload(x), dy = Upload(y);
  std::vector<float> result(n);
  std::vector<float> staged(x.size(), 0.0f);
  se::Stream stream(Executor());
  // The callback writes x's new values into host memory that a copy, queued
  // after it, uploads before the axpy reads x: a BLAS call run early would
  // read the old x.
  stream.Init()
      .ThenDoHostCallback([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        for (std::size_t i = 0; i < staged.size(); ++i) staged[i] = float(i % 5);
      })
      .ThenMemcpyH2D<float>(staged, dx.ptr())
      .ThenBlasAxpy(n, 2.0f, dx.cref(), 1, dy.ptr(), 1)
      .ThenMemcpyD2H<float>(dy.cref(), result);
  REQUIRE(Run(stream).ok());
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(result[i] == y[i] + 2.0f * float(i % 5));
}

TEST_CASE("a failed host callback skips the BLAS calls after it", "[blas]") {
  auto da = Upload(Data<float>(16, 1)), dc = Upload(std::vector<float>(16, 5.0f));
  se::Stream stream(Executor());
  stream.Init()
      .ThenDoHostCallback([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        throw std::runtime_error("callback says no");
      })
      .ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, da.cref(), 4, da.cref(), 4, 0.0f,
                    dc.ptr(), 4);
  const se::Status status = Run(stream);
  REQUIRE_FALSE(status.ok());
  REQUIRE(Mentions(status, "callback says no"));
  REQUIRE(Download(dc.cref()) == std::vector<float>(16, 5.0f));
}

TEST_CASE("streams on several threads share the executor's BLAS state, made once", "[blas]") {
  const int n = 24;
  const std::vector<float> a = Data<float>(n * n, 1), b = Data<float>(n * n, 2);
  std::vector<float> want(n * n, 0.0f);
  ReferenceGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, 1.0f, a, n, b, n, 0.0f, want, n);
  auto da = Upload(a), db = Upload(b);
  std::vector<se::ScopedDeviceMemory<float>> results;
  for (int t = 0; t < 4; ++t) results.push_back(Upload(std::vector<float>(n * n, 0.0f)));
  std::vector<se::Status> statuses(results.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      se::Stream stream(Executor());
      stream.Init();
      for (int round = 0; round < 10; ++round) {
        stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, 1.0f, da.cref(), n, db.cref(), n,
                            0.0f, results[t].ptr(), n);
      }
      statuses[t] = stream.BlockHostUntilDone();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (std::size_t t = 0; t < results.size(); ++t) {
    REQUIRE(statuses[t].ok());
    RequireClose(Download(results[t].cref()), want);
  }
  using State = se::blas_detail::Library<B>::State;
  State* state = Executor()->FindExtension<State>();
  REQUIRE(state != nullptr);
  REQUIRE(Executor()->GetOrCreateExtension<State>([]() -> se::StatusOr<std::unique_ptr<State>> {
                      return se::Status(se::ErrorCode::kInternal, "made a second time");
                    }).value() == state);
}

TEST_CASE("a gemm whose shape does not fit its buffers is OUT_OF_RANGE naming m, n, k and the sizes", "[blas]") {
  auto a = Upload(std::vector<float>(6 * 4)), b = Upload(std::vector<float>(4 * 5)), c = Upload(std::vector<float>(29));
  se::Stream stream(Executor());
  stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 6, 5, 4, 1.0f, a.cref(), 6, b.cref(), 4,
                             0.0f, c.ptr(), 6);
  const se::Status status = stream.status();
  REQUIRE(status.code() == se::ErrorCode::kOutOfRange);
  REQUIRE(Mentions(status, "ThenBlasGemm"));
  REQUIRE(Mentions(status, "m=6, n=5, k=4"));
  REQUIRE(Mentions(status, "needs 30 elements of matrix C, but its DeviceMemory holds 29 (116 bytes)"));

  se::Stream transposed(Executor());
  transposed.Init().ThenBlasGemm(Transpose::kTranspose, Transpose::kNoTranspose, 6, 5, 5, 1.0f, a.cref(), 5, b.cref(),
                                 5, 0.0f, c.ptr(), 6);
  REQUIRE(transposed.status().code() == se::ErrorCode::kOutOfRange);
  REQUIRE(Mentions(transposed.status(), "transa=T"));
  REQUIRE(Mentions(transposed.status(), "needs 30 elements of matrix A, but its DeviceMemory holds 24"));
}

TEST_CASE("BLAS argument errors name the argument", "[blas]") {
  auto x = Upload(std::vector<float>(8)), y = Upload(std::vector<float>(8));
  auto check = [](se::Stream<B>& stream, se::ErrorCode code, std::string_view text) {
    INFO(stream.status().ToString());
    REQUIRE(stream.status().code() == code);
    REQUIRE(Mentions(stream.status(), text));
  };
  {
    se::Stream stream(Executor());
    stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 2, 2, 1.0f, x.cref(), 3, y.cref(),
                               2, 0.0f, y.ptr(), 4);
    check(stream, se::ErrorCode::kInvalidArgument, "lda=3 is smaller than the 4 rows A stores");
  }
  {
    se::Stream stream(Executor());
    stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 2, 2, 2, 1.0f, x.cref(), 2, y.cref(),
                               2, 0.0f, static_cast<se::DeviceMemory<float>*>(nullptr), 2);
    check(stream, se::ErrorCode::kInvalidArgument, "the C pointer is null");
  }
  {
    se::Stream stream(Executor());
    stream.Init().ThenBlasAxpy(-1, 1.0f, x.cref(), 1, y.ptr(), 1);
    check(stream, se::ErrorCode::kInvalidArgument, "n=-1 is negative");
  }
  {
    se::Stream stream(Executor());
    stream.Init().ThenBlasAxpy(4, 1.0f, x.cref(), 0, y.ptr(), 1);
    check(stream, se::ErrorCode::kInvalidArgument, "incx=0 must be positive");
  }
  {
    se::Stream stream(Executor());
    stream.Init().ThenBlasDot(9, x.cref(), 1, y.cref(), 1, y.ptr());
    check(stream, se::ErrorCode::kOutOfRange, "n=9 (incx=1, incy=1) needs 9 elements of vector x");
  }
  {
    se::Stream stream(Executor());
    stream.Init().ThenBlasGemv(Transpose::kNoTranspose, std::uint64_t{INT_MAX} + 1, 1, 1.0f, x.cref(), 1, x.cref(), 1,
                               0.0f, y.ptr(), 1);
    check(stream, se::ErrorCode::kInvalidArgument, "m=2147483648 is larger than the BLAS libraries' int limit");
  }
  {
    se::Stream stream(Executor());
    std::vector<se::DeviceMemory<float>*> one{x.ptr()};
    stream.Init().ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 2, 2, 2, 1.0f, one, 2, one, 2,
                                      0.0f, one, 2, 2);
    check(stream, se::ErrorCode::kOutOfRange, "batch_count=2 but the batch lists hold 1 A, 1 B and 1 C matrices");
  }
  {
    se::ScopedDeviceMemory<float> freed = Upload(std::vector<float>(8));
    se::DeviceMemory<float> stale = freed.cref();
    REQUIRE(freed.Reset().ok());
    se::Stream stream(Executor());
    stream.Init().ThenBlasAxpy(4, 1.0f, stale, 1, y.ptr(), 1);
    check(stream, se::ErrorCode::kFailedPrecondition, "vector x DeviceMemory is not live memory");
  }
}

TEST_CASE("BLAS on an uninitialised or failed stream does nothing, and the first error sticks", "[blas]") {
  auto a = Upload(Data<float>(4, 1)), c = Upload(std::vector<float>(4, 3.0f));
  se::Stream uninitialised(Executor());
  uninitialised.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 2, 2, 2, 1.0f, a.cref(), 2, a.cref(), 2,
                             0.0f, c.ptr(), 2);
  REQUIRE(uninitialised.status().code() == se::ErrorCode::kFailedPrecondition);
  REQUIRE(Mentions(uninitialised.status(), "ThenBlasGemm"));
  REQUIRE(Mentions(uninitialised.status(), "not initialized"));

  se::Stream stream(Executor());
  stream.Init().ThenBlasAxpy(8, 1.0f, a.cref(), 1, c.ptr(), 1);  // too long: OUT_OF_RANGE
  const se::Status first = stream.status();
  REQUIRE(first.code() == se::ErrorCode::kOutOfRange);
  stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 2, 2, 2, 1.0f, a.cref(), 2, a.cref(), 2, 0.0f,
                      c.ptr(), 2);
  REQUIRE(Run(stream) == first);
  REQUIRE(Download(c.cref()) == std::vector<float>(4, 3.0f));
}

TEST_CASE("a BLAS plugin of another platform, or one that does not exist, is refused", "[plugin]") {
  se::Platform<B>& platform = se::Platform<B>::Get();
  const se::BlasPluginId foreign =
      B::kName == std::string_view("host") ? se::BlasPluginId{"opencl", "clblast"}
                                           : se::BlasPluginId{"host", "openblas"};
  auto refused = platform.ExecutorForDeviceWithPluginConfig(0, se::PluginConfig().SetBlas(foreign));
  REQUIRE(refused.status().code() == se::ErrorCode::kInvalidArgument);
  REQUIRE(Mentions(refused.status(), "belongs to the"));

  auto executor =
      platform.ExecutorForDeviceWithPluginConfig(0, se::PluginConfig().SetBlas(se::BlasPluginId{B::kName, "mkl"}));
  REQUIRE(executor.ok());
  auto x = Upload(std::vector<float>(4, 1.0f));
  se::Stream stream(executor.value());
  stream.Init().ThenBlasAxpy(4, 1.0f, x.cref(), 1, x.ptr(), 1);
  REQUIRE(stream.status().code() == se::ErrorCode::kNotFound);
  REQUIRE(Mentions(stream.status(), fmt::format("{}:0 has no BLAS plugin 'mkl' (available: {})", B::kName,
                                                B::kName == std::string_view("host") ? "openblas" : "clblast")));

  // Once used, the choice is fixed for the device.
  const se::BlasPluginId ours = B::kName == std::string_view("host") ? se::BlasPluginId{"host", "openblas"}
                                                                    : se::BlasPluginId{"opencl", "clblast"};
  auto switched = platform.ExecutorForDeviceWithPluginConfig(0, se::PluginConfig().SetBlas(ours));
  REQUIRE(switched.status().code() == se::ErrorCode::kFailedPrecondition);
}
