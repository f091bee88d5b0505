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
      REQUIRE(
          Run(stream.Init().ThenBlasGemm(ta, tb, m, n, k, T(1.5), a_view, lda, db.cref(), ldb, T(0.5), &c_view, ldc))
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
    REQUIRE(Run(stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, m, n, 0, T(3), a.cref(), m,
                                           a.cref(), 1, T(0.5), dc.ptr(), rows))
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

#include "blas_half_cases.hpp"

TEMPLATE_TEST_CASE("BLAS calls captured into a command buffer run at each submission, not at capture",
                   "[blas][capture]", float, double) {
  using T = TestType;
  const int n = 257;
  const std::vector<T> x = Data<T>(static_cast<std::size_t>(n), 5), y0 = Data<T>(static_cast<std::size_t>(n), 6);
  auto dx = Upload(x), dy = Upload(y0), result = Upload(std::vector<T>{T(0)});
  se::Stream stream(Executor());
  stream.Init();
  se::CommandBuffer buffer(Executor());
  buffer.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  stream.ThenBlasAxpy(n, T(2), dx.cref(), 1, dy.ptr(), 1).ThenBlasDot(n, dx.cref(), 1, dy.cref(), 1, result.ptr());
  REQUIRE(stream.EndCapture(&buffer).ok());
  CHECK(buffer.size() == 2);
  RequireClose(Download(dy.cref()), y0);  // nothing ran yet
  REQUIRE(Run(stream.ThenSubmit(&buffer).ThenSubmit(&buffer)).ok());
  std::vector<T> y = y0;
  T dot = 0;
  for (int i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    y[at] += T(4) * x[at];
    dot += x[at] * y[at];
  }
  RequireClose(Download(dy.cref()), y);
  RequireClose(Download(result.cref()), std::vector<T>{dot});

  SECTION("an operand freed before a submission is an error, not a fault") {
    auto scratch = Executor()->template AllocateArray<T>(static_cast<std::uint64_t>(n));
    se::CommandBuffer freed(Executor());
    freed.Init();
    REQUIRE(stream.BeginCapture(&freed).ok());
    stream.ThenBlasAxpy(n, T(1), dx.cref(), 1, &scratch, 1);
    REQUIRE(stream.EndCapture(&freed).ok());
    REQUIRE(Executor()->Deallocate(&scratch).ok());
    stream.ThenSubmit(&freed);
    CHECK(Mentions(stream.status(), "no longer valid"));
  }
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
  using State = se::blas_detail::Adapter<B>::State;
  State* state = Executor()->FindExtension<State>();
  REQUIRE(state != nullptr);
  REQUIRE(Executor()
              ->GetOrCreateExtension<State>([]() -> se::StatusOr<std::unique_ptr<State>> {
                return se::Status(se::ErrorCode::kInternal, "made a second time");
              })
              .value() == state);
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
  const se::BlasPluginId foreign = B::kName == std::string_view("host") ? se::BlasPluginId{"opencl", "clblast"}
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
