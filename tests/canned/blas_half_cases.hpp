// blas_test.cpp's half-precision cases (se::Half, canned/blas/half.hpp): the
// conversions against every half and the compiler's _Float16, and half gemm and
// batched gemm against a float loop, or UNIMPLEMENTED where the device has no
// fp16. Included once, in blas_test.cpp, after the helpers it uses.
#pragma once

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
    const double tolerance = std::ldexp(std::abs(want[i]), -10) +
                             std::ldexp(bound[i], in_half ? -11 : -20) * (in_half ? k + 2 : 1) + std::ldexp(1.0, -24);
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
  CHECK(static_cast<float>(Half::FromBits(0x0001)) == std::ldexp(1.0f, -24));     // smallest subnormal
  CHECK(static_cast<float>(Half::FromBits(0x03FF)) == std::ldexp(1023.0f, -24));  // largest subnormal
  CHECK(static_cast<float>(Half::FromBits(0x0400)) == std::ldexp(1.0f, -14));     // smallest normal
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
  CHECK(Half(Bits(0x00000001)).bits() == 0x0000);        // float subnormals
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
    const se::Status status = Run(stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 0,
                                                             1.0f, c.cref(), 4, c.cref(), 1, 0.5f, c.ptr(), 4));
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
  REQUIRE(Run(stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, k, 1.0f, da.cref(), m,
                                         db.cref(), k, 0.0f, dc.ptr(), m))
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
    const se::Status status = Run(stream.Init().ThenBlasGemmBatched(Transpose::kTranspose, Transpose::kNoTranspose, m,
                                                                    n, k, 2.0f, pa, k, pb, k, -1.0f, pc, m, batch));
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
    const se::Status status = Run(stream.Init().ThenBlasGemmBatched(Transpose::kTranspose, Transpose::kNoTranspose, m,
                                                                    n, k, 2.0f, pa, k, pb, k, -1.0f, pc, m, batch));
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
  CHECK(stream
            .ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, a.cref(), 4, a.cref(), 4,
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
