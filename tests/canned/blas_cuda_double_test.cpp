// The BLAS plugin of the CUDA backend against two doubles: the counting driver
// double as libcuda.so.1 (one pretend device whose memory is host memory) and
// the cuBLAS double as libcublas.so.13 (cublas_double/), which records each
// call. The checks are the calls the plugin makes: which entry point, the
// sizes, leading dimensions, transposes, scalars, device addresses (view
// offsets included), the stream the handle was bound to and the pointer mode;
// one handle per executor; nothing called for rejected or skipped work; and a
// cuBLAS failure surfaced with its status name. [no-cublas] runs in a build
// that looks for a cuBLAS that does not exist.
#include <streamexecutor/blas.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "counting_driver_double.hpp"
#include "cublas_double.hpp"

namespace se = streamexecutor;
using se::blas::Transpose;

namespace {

se::StreamExecutor<se::cuda>* Executor() { return se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie(); }

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

// Found once a BLAS call loaded cuBLAS, which is then the double.
se_test::CublasDoubleApi& Cublas() {
  static se_test::CublasDoubleApi api = se_test::CublasDoubleApi::Find();
  REQUIRE(api.loaded());
  return api;
}

SeCublasDoubleCall Last() {
  SeCublasDoubleCall call{};
  REQUIRE(Cublas().last_call(&call));
  return call;
}

const void* Address(const se::DeviceMemoryBase& view) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(se::NativeMemory(*Executor(), view).value()));
}
void* Stream(se::Stream<se::cuda>& stream) { return se::NativeQueue(stream); }

template <typename T>
se::ScopedDeviceMemory<T> Allocate(std::size_t n) {
  se::ScopedDeviceMemory<T> memory = Executor()->template AllocateOwnedArray<T>(n);
  REQUIRE(memory.ok());
  return memory;
}

// Loads cuBLAS through the plugin (one harmless call), so that the double's
// hooks can be found.
void Warm() {
  auto x = Allocate<float>(4);
  se::Stream stream(Executor());
  REQUIRE(stream.Init().ThenBlasAxpy(4, 1.0f, x.cref(), 1, x.ptr(), 1).BlockHostUntilDone().ok());
}

}  // namespace

TEST_CASE("sgemm reaches cublasSgemm_v2 with the shape, scalars, addresses and stream", "[blas]") {
  Warm();
  const long creates = Cublas().calls("cublasCreate_v2");
  auto a = Allocate<float>(64 * 40), b = Allocate<float>(48 * 40), c = Allocate<float>(70 * 40);
  se::DeviceMemory<float> c_view = c.cref().GetSlice(100, 60 * 40);
  se::Stream stream(Executor());
  const long before = Cublas().calls("cublasSgemm_v2");
  REQUIRE(stream.Init()
              .ThenBlasGemm(Transpose::kTranspose, Transpose::kNoTranspose, 33, 40, 30, 1.5f, a.cref(), 64, b.cref(),
                            48, -0.25f, &c_view, 60)
              .BlockHostUntilDone()
              .ok());
  REQUIRE(Cublas().calls("cublasSgemm_v2") == before + 1);
  const SeCublasDoubleCall call = Last();
  CHECK(std::string(call.name) == "cublasSgemm_v2");
  CHECK(call.trans_a == CUBLAS_OP_T);
  CHECK(call.trans_b == CUBLAS_OP_N);
  CHECK((call.m == 33 && call.n == 40 && call.k == 30));
  CHECK((call.lda == 64 && call.ldb == 48 && call.ldc == 60));
  CHECK(call.alpha == 1.5);
  CHECK(call.beta == -0.25);
  CHECK(call.pointer_mode == CUBLAS_POINTER_MODE_HOST);
  CHECK(call.a == Address(a.cref()));
  CHECK(call.b == Address(b.cref()));
  CHECK(call.c == Address(c_view));
  CHECK(call.c == static_cast<const char*>(Address(c.cref())) + 100 * sizeof(float));
  CHECK(call.stream == Stream(stream));
  // The executor's handle serves every stream: created once.
  CHECK(Cublas().calls("cublasCreate_v2") == creates);
  CHECK(creates == 1);
}

TEST_CASE("each operation and element type reaches its cuBLAS entry point", "[blas]") {
  Warm();
  auto xf = Allocate<float>(256), yf = Allocate<float>(64), af = Allocate<float>(64 * 64);
  auto xd = Allocate<double>(64), yd = Allocate<double>(64), ad = Allocate<double>(64 * 64);
  se::Stream stream(Executor());
  stream.Init();

  stream.ThenBlasAxpy(20, 3.0, xd.cref(), 2, yd.ptr(), 3);
  SeCublasDoubleCall call = Last();
  CHECK(std::string(call.name) == "cublasDaxpy_v2");
  CHECK((call.n == 20 && call.alpha == 3.0 && call.lda == 2 && call.ldb == 3));
  CHECK((call.a == Address(xd.cref()) && call.c == Address(yd.cref())));

  se::DeviceMemory<float> result = yf.cref().GetSlice(5, 1);
  stream.ThenBlasDot(30, xf.cref(), 1, yf.cref(), 2, &result);
  call = Last();
  CHECK(std::string(call.name) == "cublasSdot_v2");
  CHECK((call.n == 30 && call.lda == 1 && call.ldb == 2));
  // The result stays on the device: device pointer mode, the view's address.
  CHECK(call.pointer_mode == CUBLAS_POINTER_MODE_DEVICE);
  CHECK(call.c == Address(result));

  stream.ThenBlasDot(30, xd.cref(), 1, yd.cref(), 1, xd.ptr());
  CHECK(std::string(Last().name) == "cublasDdot_v2");

  stream.ThenBlasGemv(Transpose::kTranspose, 50, 20, 2.0f, af.cref(), 60, xf.cref(), 3, 0.5f, yf.ptr(), 1);
  REQUIRE(stream.ok());
  call = Last();
  CHECK(std::string(call.name) == "cublasSgemv_v2");
  CHECK((call.trans_a == CUBLAS_OP_T && call.m == 50 && call.n == 20 && call.lda == 60));
  CHECK((call.alpha == 2.0 && call.beta == 0.5 && call.ldb == 3 && call.ldc == 1));
  // Pointer mode is set per call: back to host after the dot.
  CHECK(call.pointer_mode == CUBLAS_POINTER_MODE_HOST);

  stream.ThenBlasGemv(Transpose::kNoTranspose, 8, 8, 1.0, ad.cref(), 8, xd.cref(), 1, 0.0, yd.ptr(), 1);
  CHECK(std::string(Last().name) == "cublasDgemv_v2");

  stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kTranspose, 8, 6, 4, 1.0, ad.cref(), 8, ad.cref(), 6, 0.0,
                      ad.ptr(), 8);
  call = Last();
  CHECK(std::string(call.name) == "cublasDgemm_v2");
  CHECK((call.trans_a == CUBLAS_OP_N && call.trans_b == CUBLAS_OP_T && call.m == 8 && call.n == 6 && call.k == 4));
  CHECK(call.stream == Stream(stream));
  REQUIRE(stream.BlockHostUntilDone().ok());
}

TEST_CASE("batched gemm is one cuBLAS gemm per entry, in order", "[blas]") {
  Warm();
  auto a = Allocate<float>(3 * 16), b = Allocate<float>(3 * 16), c = Allocate<float>(3 * 16);
  std::vector<se::DeviceMemory<float>> va, vb, vc;
  for (std::size_t i = 0; i < 3; ++i) {
    va.push_back(a.cref().GetSlice(i * 16, 16));
    vb.push_back(b.cref().GetSlice(i * 16, 16));
    vc.push_back(c.cref().GetSlice(i * 16, 16));
  }
  std::vector<se::DeviceMemory<float>*> pa{&va[0], &va[1], &va[2]}, pb{&vb[0], &vb[1], &vb[2]},
      pc{&vc[0], &vc[1], &vc[2]};
  se::Stream stream(Executor());
  const long before = Cublas().calls("cublasSgemm_v2");
  REQUIRE(stream.Init()
              .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, pa, 4, pb, 4, 0.0f,
                                   pc, 4, 3)
              .BlockHostUntilDone()
              .ok());
  CHECK(Cublas().calls("cublasSgemm_v2") == before + 3);
  const SeCublasDoubleCall call = Last();
  CHECK(call.a == Address(va[2]));
  CHECK(call.c == Address(vc[2]));
}

TEST_CASE("rejected and skipped work makes no cuBLAS call", "[blas]") {
  Warm();
  auto a = Allocate<float>(16), c = Allocate<float>(8);
  const long before = Cublas().calls("cublasSgemm_v2");
  se::Stream stream(Executor());
  stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, a.cref(), 4, a.cref(), 4,
                             0.0f, c.ptr(), 4);
  REQUIRE(stream.status().code() == se::ErrorCode::kOutOfRange);
  REQUIRE(Mentions(stream.status(), "m=4, n=4, k=4"));
  REQUIRE(Mentions(stream.status(), "needs 16 elements of matrix C, but its DeviceMemory holds 8 (32 bytes)"));
  // The stream has failed: a valid gemm after the error is not enqueued.
  stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 2, 2, 2, 1.0f, a.cref(), 2, a.cref(), 2, 0.0f,
                      c.ptr(), 2);
  CHECK(Cublas().calls("cublasSgemm_v2") == before);

  se::Stream uninitialised(Executor());
  uninitialised.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 2, 2, 2, 1.0f, a.cref(), 2, a.cref(), 2,
                             0.0f, c.ptr(), 2);
  CHECK(uninitialised.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Cublas().calls("cublasSgemm_v2") == before);
}

TEST_CASE("a cuBLAS failure fails the stream with the entry point and status name", "[blas]") {
  Warm();
  auto a = Allocate<float>(16);
  se::Stream stream(Executor());
  Cublas().fail_next("cublasSgemm_v2", CUBLAS_STATUS_EXECUTION_FAILED);
  stream.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, a.cref(), 4, a.cref(), 4,
                             0.0f, a.ptr(), 4);
  const se::Status status = stream.BlockHostUntilDone();
  REQUIRE(status.code() == se::ErrorCode::kInternal);
  CHECK(Mentions(status, "cublasSgemm failed with CUBLAS_STATUS_EXECUTION_FAILED"));
  CHECK(Mentions(status, "cuda:0"));

  Cublas().fail_next("cublasSetStream_v2", CUBLAS_STATUS_INVALID_VALUE);
  se::Stream other(Executor());
  other.Init().ThenBlasAxpy(4, 1.0f, a.cref(), 1, a.ptr(), 1);
  CHECK(other.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(other.status(), "cublasSetStream failed with CUBLAS_STATUS_INVALID_VALUE"));
}

TEST_CASE("without cuBLAS, BLAS calls are UNAVAILABLE naming the library and the package", "[no-cublas]") {
  auto a = Allocate<float>(16);
  se::Stream stream(Executor());
  stream.Init().ThenBlasAxpy(4, 1.0f, a.cref(), 1, a.ptr(), 1);
  REQUIRE(stream.status().code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(stream.status(), "cuBLAS is not installed"));
  CHECK(Mentions(stream.status(), "libcublas_not_installed.so.13"));
  CHECK(Mentions(stream.status(), "libcublas-13-0"));
  // A later stream gets the same answer (the load is tried once per process).
  se::Stream again(Executor());
  again.Init().ThenBlasDot(4, a.cref(), 1, a.cref(), 1, a.ptr());
  CHECK(again.status().code() == se::ErrorCode::kUnavailable);
}
