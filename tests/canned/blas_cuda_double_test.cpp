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

#include <algorithm>
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

// The counting driver double's call counts (device memory, copies, events).
long DriverCalls(const char* entry_point) {
  static se_test::CountingDoubleApi api = se_test::CountingDoubleApi::Find();
  REQUIRE(api.loaded());
  return api.calls(entry_point);
}

const void* Offset(const void* base, std::size_t bytes) { return static_cast<const char*>(base) + bytes; }

// Views i * step elements into one allocation per operand.
template <typename T>
struct StridedOperands {
  se::ScopedDeviceMemory<T> a, b, c;
  std::vector<se::DeviceMemory<T>> va, vb, vc;
  std::vector<se::DeviceMemory<T>*> pa, pb, pc;

  StridedOperands(std::size_t count, std::size_t a_step, std::size_t b_step, std::size_t c_step)
      : a(Allocate<T>(a_step * count + 16)), b(Allocate<T>(b_step * count + 16)), c(Allocate<T>(c_step * count + 16)) {
    for (std::size_t i = 0; i < count; ++i) {
      va.push_back(a.cref().GetSlice(i * a_step, 16));
      vb.push_back(b.cref().GetSlice(i * b_step, 16));
      vc.push_back(c.cref().GetSlice(i * c_step, 16));
    }
    for (std::size_t i = 0; i < count; ++i) {
      pa.push_back(&va[i]);
      pb.push_back(&vb[i]);
      pc.push_back(&vc[i]);
    }
  }
};

TEST_CASE("a half gemm reaches cublasHgemm with half scalars, addresses and stream", "[blas]") {
  Warm();
  auto a = Allocate<se::Half>(64 * 40), b = Allocate<se::Half>(48 * 40), c = Allocate<se::Half>(70 * 40);
  se::DeviceMemory<se::Half> c_view = c.cref().GetSlice(100, 60 * 40);
  se::Stream stream(Executor());
  const long before = Cublas().calls("cublasHgemm");
  REQUIRE(stream.Init()
              .ThenBlasGemm(Transpose::kTranspose, Transpose::kNoTranspose, 33, 40, 30, 1.5f, a.cref(), 64, b.cref(),
                            48, -0.25f, &c_view, 60)
              .BlockHostUntilDone()
              .ok());
  REQUIRE(Cublas().calls("cublasHgemm") == before + 1);
  SeCublasDoubleCall call = Last();
  CHECK(std::string(call.name) == "cublasHgemm");
  CHECK((call.trans_a == CUBLAS_OP_T && call.trans_b == CUBLAS_OP_N));
  CHECK((call.m == 33 && call.n == 40 && call.k == 30));
  CHECK((call.lda == 64 && call.ldb == 48 && call.ldc == 60));
  // The scalars as __half, read by the toolkit's own conversion.
  CHECK(call.alpha == 1.5);
  CHECK(call.beta == -0.25);
  CHECK(call.pointer_mode == CUBLAS_POINTER_MODE_HOST);
  CHECK(call.a == Address(a.cref()));
  CHECK(call.b == Address(b.cref()));
  CHECK(call.c == Offset(Address(c.cref()), 100 * sizeof(se::Half)));
  CHECK(call.stream == Stream(stream));

  // A float scalar that half cannot hold is rounded to the nearest half.
  REQUIRE(stream
              .ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 0.1f, a.cref(), 4, b.cref(), 4,
                            1e-8f, c.ptr(), 4)
              .BlockHostUntilDone()
              .ok());
  call = Last();
  CHECK(call.alpha == 0.0999755859375);  // 0x2E66
  CHECK(call.beta == 0.0);               // below half's smallest subnormal
}

TEST_CASE("a batch of equally strided slices is one cublas<t>gemmStridedBatched", "[blas]") {
  Warm();
  const long copies = DriverCalls("cuMemcpyHtoDAsync"), allocations = DriverCalls("cuMemAlloc");
  SECTION("float, distinct strides per operand") {
    StridedOperands<float> ops(5, 16, 20, 24);
    se::Stream stream(Executor());
    const long gemms = Cublas().calls("cublasSgemm_v2"), before = Cublas().calls("cublasSgemmStridedBatched");
    REQUIRE(stream.Init()
                .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kTranspose, 4, 4, 3, 2.0f, ops.pa, 4, ops.pb,
                                     4, -1.0f, ops.pc, 4, 5)
                .BlockHostUntilDone()
                .ok());
    CHECK(Cublas().calls("cublasSgemmStridedBatched") == before + 1);
    CHECK(Cublas().calls("cublasSgemm_v2") == gemms);  // not one per entry
    const SeCublasDoubleCall call = Last();
    CHECK(std::string(call.name) == "cublasSgemmStridedBatched");
    CHECK(call.batch_count == 5);
    CHECK((call.stride_a == 16 && call.stride_b == 20 && call.stride_c == 24));
    CHECK((call.m == 4 && call.n == 4 && call.k == 3 && call.trans_a == CUBLAS_OP_N && call.trans_b == CUBLAS_OP_T));
    CHECK((call.lda == 4 && call.ldb == 4 && call.ldc == 4 && call.alpha == 2.0 && call.beta == -1.0));
    CHECK(call.a == Address(ops.va[0]));
    CHECK(call.b == Address(ops.vb[0]));
    CHECK(call.c == Address(ops.vc[0]));
    CHECK(call.stream == Stream(stream));
  }
  SECTION("double, one A for every entry (stride 0)") {
    StridedOperands<double> ops(3, 0, 16, 16);
    se::Stream stream(Executor());
    REQUIRE(stream.Init()
                .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0, ops.pa, 4, ops.pb,
                                     4, 0.0, ops.pc, 4, 3)
                .BlockHostUntilDone()
                .ok());
    const SeCublasDoubleCall call = Last();
    CHECK(std::string(call.name) == "cublasDgemmStridedBatched");
    CHECK((call.batch_count == 3 && call.stride_a == 0 && call.stride_b == 16 && call.stride_c == 16));
  }
  SECTION("half, with half scalars") {
    StridedOperands<se::Half> ops(4, 16, 16, 32);
    se::Stream stream(Executor());
    REQUIRE(stream.Init()
                .ThenBlasGemmBatched(Transpose::kTranspose, Transpose::kNoTranspose, 4, 4, 4, 0.5f, ops.pa, 4, ops.pb,
                                     4, 2.0f, ops.pc, 4, 4)
                .BlockHostUntilDone()
                .ok());
    const SeCublasDoubleCall call = Last();
    CHECK(std::string(call.name) == "cublasHgemmStridedBatched");
    CHECK((call.batch_count == 4 && call.stride_a == 16 && call.stride_b == 16 && call.stride_c == 32));
    CHECK((call.alpha == 0.5 && call.beta == 2.0 && call.trans_a == CUBLAS_OP_T));
    CHECK(call.c == Address(ops.vc[0]));
  }
  // Strides need no pointer arrays: nothing allocated or copied.
  CHECK(DriverCalls("cuMemcpyHtoDAsync") == copies);
  CHECK(DriverCalls("cuMemAlloc") == allocations + 3);  // the three test allocations only
}

TEST_CASE("a batch of one is a plain gemm", "[blas]") {
  Warm();
  StridedOperands<float> ops(1, 16, 16, 16);
  se::Stream stream(Executor());
  const long before = Cublas().calls("cublasSgemm_v2");
  REQUIRE(stream.Init()
              .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, ops.pa, 4, ops.pb,
                                   4, 0.0f, ops.pc, 4, 1)
              .BlockHostUntilDone()
              .ok());
  CHECK(Cublas().calls("cublasSgemm_v2") == before + 1);
  CHECK(Last().c == Address(ops.vc[0]));
}

TEST_CASE("any other batch is one cublas<t>gemmBatched, its pointer arrays in a buffer that only grows", "[blas]") {
  Warm();
  // Allocations of unequal sizes, listed out of order: no constant step.
  std::vector<se::ScopedDeviceMemory<float>> memory;
  for (std::size_t size : {16u, 40u, 24u, 64u, 16u, 48u}) memory.push_back(Allocate<float>(size));
  const std::vector<std::size_t> order{3, 0, 5, 1, 4, 2};
  std::vector<se::DeviceMemory<float>*> pa, pb, pc;
  for (std::size_t i : order) {
    pa.push_back(memory[i].ptr());
    pb.push_back(memory[(i + 1) % 6].ptr());
    pc.push_back(memory[(i + 2) % 6].ptr());
  }
  const auto batched = [&](se::Stream<se::cuda>& stream, int count) {
    return stream
        .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.5f, pa, 4, pb, 4, 0.5f, pc, 4,
                             count)
        .BlockHostUntilDone();
  };
  const auto check_arrays = [&](const SeCublasDoubleCall& call, int count) {
    CHECK(call.batch_count == count);
    // A's, B's and C's arrays, one after the other in the buffer.
    CHECK(call.b == Offset(call.a, static_cast<std::size_t>(count) * sizeof(void*)));
    CHECK(call.c == Offset(call.a, 2 * static_cast<std::size_t>(count) * sizeof(void*)));
    for (std::size_t i = 0; i < static_cast<std::size_t>(std::min(count, 8)); ++i) {
      INFO("entry " << i);
      CHECK(call.a_entries[i] == Address(*pa[i]));
      CHECK(call.b_entries[i] == Address(*pb[i]));
      CHECK(call.c_entries[i] == Address(*pc[i]));
    }
  };

  se::Stream stream(Executor()), other(Executor());
  stream.Init();
  other.Init();
  long allocations = DriverCalls("cuMemAlloc");
  const long copies = DriverCalls("cuMemcpyHtoDAsync"), records = DriverCalls("cuEventRecord"),
             waits = DriverCalls("cuStreamWaitEvent"), gemms = Cublas().calls("cublasSgemm_v2");
  REQUIRE(batched(stream, 6).ok());
  SeCublasDoubleCall call = Last();
  CHECK(std::string(call.name) == "cublasSgemmBatched");
  CHECK((call.m == 4 && call.n == 4 && call.k == 4 && call.alpha == 1.5 && call.beta == 0.5));
  CHECK(call.stream == Stream(stream));
  check_arrays(call, 6);
  const void* buffer = call.a;
  CHECK(DriverCalls("cuMemcpyHtoDAsync") == copies + 1);
  CHECK(DriverCalls("cuEventRecord") == records + 1);
  CHECK(Cublas().calls("cublasSgemm_v2") == gemms);
  // The first batch that needs arrays allocates the executor's buffer...
  CHECK(DriverCalls("cuMemAlloc") <= allocations + 1);
  allocations = DriverCalls("cuMemAlloc");

  // ...and later batches that fit reuse it, from any stream, each waiting
  // for the previous reader of the arrays before overwriting them.
  REQUIRE(batched(other, 5).ok());
  call = Last();
  check_arrays(call, 5);
  CHECK(call.a == buffer);
  CHECK(call.stream == Stream(other));
  REQUIRE(batched(stream, 6).ok());
  CHECK(Last().a == buffer);
  CHECK(DriverCalls("cuMemAlloc") == allocations);
  CHECK(DriverCalls("cuMemcpyHtoDAsync") == copies + 3);
  CHECK(DriverCalls("cuEventRecord") == records + 3);
  CHECK(DriverCalls("cuStreamWaitEvent") >= waits + 2);

  // A larger batch grows the buffer once; the smaller ones after it fit.
  std::vector<se::DeviceMemory<float>*> many_a, many_b, many_c;
  for (std::size_t i = 0; i < 300; ++i) {
    many_a.push_back(pa[i % 6]);
    many_b.push_back(pb[(i * 5) % 6]);
    many_c.push_back(pc[(i * 7) % 6]);
  }
  const long frees = DriverCalls("cuMemFree");
  REQUIRE(stream
              .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, many_a, 4, many_b,
                                   4, 0.0f, many_c, 4, 300)
              .BlockHostUntilDone()
              .ok());
  // The old buffer may still be read by the batch before: retired, not freed.
  CHECK(DriverCalls("cuMemFree") == frees);
  call = Last();
  CHECK(call.batch_count == 300);
  CHECK(call.c == Offset(call.a, 600 * sizeof(void*)));
  CHECK(call.a_entries[6] == Address(*pa[0]));
  CHECK(call.b_entries[7] == Address(*pb[5]));
  CHECK(call.c_entries[7] == Address(*pc[1]));
  CHECK(DriverCalls("cuMemAlloc") == allocations + 1);
  REQUIRE(batched(stream, 6).ok());
  check_arrays(Last(), 6);
  CHECK(Last().a == call.a);  // the grown buffer
  CHECK(DriverCalls("cuMemAlloc") == allocations + 1);
  // That call found the last reader done (cuEventQuery) and freed the retired buffer.
  CHECK(DriverCalls("cuMemFree") == frees + 1);

  // A failed stream makes no copy, no event and no cuBLAS call.
  const long failed_copies = DriverCalls("cuMemcpyHtoDAsync"), failed_gemms = Cublas().calls("cublasSgemmBatched");
  se::Stream failed(Executor());
  failed.Init().ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 64, 64, 64, 1.0f, memory[0].cref(), 64,
                             memory[0].cref(), 64, 0.0f, memory[0].ptr(), 64);
  REQUIRE(failed.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(!batched(failed, 6).ok());
  CHECK(DriverCalls("cuMemcpyHtoDAsync") == failed_copies);
  CHECK(Cublas().calls("cublasSgemmBatched") == failed_gemms);
}

TEST_CASE("a half or double batch with pointer arrays reaches cublasHgemmBatched / cublasDgemmBatched", "[blas]") {
  Warm();
  auto x = Allocate<se::Half>(16), y = Allocate<se::Half>(48), z = Allocate<se::Half>(32);
  std::vector<se::DeviceMemory<se::Half>*> ha{z.ptr(), x.ptr(), y.ptr()}, hb{x.ptr(), x.ptr(), z.ptr()},
      hc{y.ptr(), z.ptr(), x.ptr()};
  se::Stream stream(Executor());
  REQUIRE(stream.Init()
              .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kTranspose, 4, 4, 4, 0.25f, ha, 4, hb, 4, 1.0f,
                                   hc, 4, 3)
              .BlockHostUntilDone()
              .ok());
  SeCublasDoubleCall call = Last();
  CHECK(std::string(call.name) == "cublasHgemmBatched");
  CHECK((call.alpha == 0.25 && call.beta == 1.0 && call.trans_b == CUBLAS_OP_T && call.batch_count == 3));
  CHECK((call.a_entries[0] == Address(z.cref()) && call.b_entries[2] == Address(z.cref()) &&
         call.c_entries[1] == Address(z.cref())));

  auto p = Allocate<double>(16), q = Allocate<double>(40);
  std::vector<se::DeviceMemory<double>*> da{q.ptr(), p.ptr()}, dc{p.ptr(), q.ptr()};
  REQUIRE(stream
              .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0, da, 4, da, 4, 0.0,
                                   dc, 4, 2)
              .BlockHostUntilDone()
              .ok());
  call = Last();
  CHECK(std::string(call.name) == "cublasDgemmBatched");
  CHECK((call.a_entries[0] == Address(q.cref()) && call.c_entries[0] == Address(p.cref())));
}

TEST_CASE("a failed batched call names its cuBLAS entry point", "[blas]") {
  Warm();
  auto x = Allocate<float>(16), y = Allocate<float>(40);
  std::vector<se::DeviceMemory<float>*> pa{y.ptr(), x.ptr()}, pc{x.ptr(), y.ptr()};
  Cublas().fail_next("cublasSgemmBatched", CUBLAS_STATUS_EXECUTION_FAILED);
  const long records = DriverCalls("cuEventRecord");
  se::Stream stream(Executor());
  stream.Init().ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, pa, 4, pa, 4, 0.0f,
                                    pc, 4, 2);
  const se::Status status = stream.BlockHostUntilDone();
  REQUIRE(status.code() == se::ErrorCode::kInternal);
  CHECK(Mentions(status, "cublasSgemmBatched failed with CUBLAS_STATUS_EXECUTION_FAILED"));
  // The arrays' copy was enqueued: the event is recorded all the same.
  CHECK(DriverCalls("cuEventRecord") == records + 1);

  StridedOperands<float> ops(2, 16, 16, 16);
  Cublas().fail_next("cublasSgemmStridedBatched", CUBLAS_STATUS_INVALID_VALUE);
  se::Stream other(Executor());
  other.Init().ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, ops.pa, 4, ops.pb,
                                   4, 0.0f, ops.pc, 4, 2);
  CHECK(other.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(other.status(), "cublasSgemmStridedBatched failed with CUBLAS_STATUS_INVALID_VALUE"));
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
  CHECK(Mentions(stream.status(),
                 "the cuBLAS plugin needs cuBLAS (libcublas_not_installed.so.13), which could not be loaded"));
  CHECK(Mentions(stream.status(), "libcublas-13-0"));
  // A later stream gets the same answer (the load is tried once per process).
  se::Stream again(Executor());
  again.Init().ThenBlasDot(4, a.cref(), 1, a.cref(), 1, a.ptr());
  CHECK(again.status().code() == se::ErrorCode::kUnavailable);
}

TEST_CASE("a captured gemm calls cuBLAS once, on a stream in capture mode, as a child graph of the buffer",
          "[blas][capture]") {
  Warm();
  auto a = Allocate<float>(16), b = Allocate<float>(16), c = Allocate<float>(16);
  se::Stream stream(Executor());
  stream.Init();
  se::CommandBuffer buffer(Executor());
  buffer.Init();
  const long gemms = Cublas().calls("cublasSgemm_v2"), begins = DriverCalls("cuStreamBeginCapture"),
             ends = DriverCalls("cuStreamEndCapture"), children = DriverCalls("cuGraphAddChildGraphNode");
  REQUIRE(stream.BeginCapture(&buffer).ok());
  stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, a.cref(), 4, b.cref(), 4, 0.0f,
                      c.ptr(), 4);
  REQUIRE(stream.EndCapture(&buffer).ok());
  CHECK(Cublas().calls("cublasSgemm_v2") == gemms + 1);
  CHECK(Last().stream != Stream(stream));  // the buffer's capture stream, not the user's
  // A workspace of the capture's own, so that cuBLAS puts no allocation node into the graph.
  CHECK(Last().workspace != nullptr);
  CHECK(Last().workspace_bytes == 4u << 20);
  CHECK(DriverCalls("cuStreamBeginCapture") == begins + 1);
  CHECK(DriverCalls("cuStreamEndCapture") == ends + 1);
  CHECK(DriverCalls("cuGraphAddChildGraphNode") == children + 1);
  const long launches = DriverCalls("cuGraphLaunch");
  REQUIRE(stream.ThenSubmit(&buffer).ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(DriverCalls("cuGraphLaunch") == launches + 2);
  CHECK(Cublas().calls("cublasSgemm_v2") == gemms + 1);  // replayed by the graph, not called again
  // A call on a stream goes back to cuBLAS's own workspace.
  stream.ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, a.cref(), 4, b.cref(), 4, 0.0f,
                      c.ptr(), 4);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(Last().workspace == nullptr);

  SECTION("a batch that needs pointer arrays cannot be captured") {
    // Three entries at uneven offsets: no constant stride, so pointer arrays.
    auto whole = Allocate<float>(256);
    std::vector<se::DeviceMemory<float>> views{whole.cref().GetSlice(0, 16), whole.cref().GetSlice(16, 16),
                                               whole.cref().GetSlice(64, 16)};
    std::vector<se::DeviceMemory<float>*> as{&views[0], &views[1], &views[2]}, bs = as, cs = as;
    se::CommandBuffer batched(Executor());
    batched.Init();
    REQUIRE(stream.BeginCapture(&batched).ok());
    stream.ThenBlasGemmBatched(
        Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, std::span<se::DeviceMemory<float>* const>(as),
        4, std::span<se::DeviceMemory<float>* const>(bs), 4, 0.0f, std::span<se::DeviceMemory<float>* const>(cs), 4, 3);
    const se::Status captured = stream.EndCapture(&batched);
    CHECK(captured.code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(captured, "pointer arrays"));
  }
}
