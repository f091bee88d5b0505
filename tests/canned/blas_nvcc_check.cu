// <streamexecutor/blas.hpp> compiled by nvcc -std=c++20 in a CUDA translation
// unit, for the host and CUDA backends with OpenBLAS and cuBLAS. Run as a
// test: the host backend computes a gemm for real, in float and in half, and
// a batched half gemm (checked against a loop: small integers, exact in half);
// the CUDA backend runs it where a device exists and otherwise must report
// why not.
#include <streamexecutor/blas.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

namespace se = streamexecutor;

namespace {

// T is float or se::Half; `batched` makes it a batch of two gemms (the
// second on the same operands), through the batched call.
template <typename T, typename B>
se::Status Gemm(se::StreamExecutor<B>* executor, std::vector<float>* c_out, bool batched = false) {
  const int n = 8;
  std::vector<T> a(n * n), b(n * n), c(n * n);
  for (int i = 0; i < n * n; ++i) {
    a[i] = T(static_cast<float>(i % 7) - 3.0f);
    b[i] = T(static_cast<float>(i % 5) - 2.0f);
  }
  se::ScopedDeviceMemory<T> da = executor->template AllocateOwnedArray<T>(n * n);
  se::ScopedDeviceMemory<T> db = executor->template AllocateOwnedArray<T>(n * n);
  se::ScopedDeviceMemory<T> dc = executor->template AllocateOwnedArray<T>(n * n);
  se::ScopedDeviceMemory<T> dc2 = executor->template AllocateOwnedArray<T>(n * n);
  if (!da.ok() || !db.ok() || !dc.ok() || !dc2.ok()) {
    return da.ok() ? (db.ok() ? (dc.ok() ? dc2.status() : dc.status()) : db.status()) : da.status();
  }
  se::Stream<B> stream(executor);
  stream.Init().template ThenMemcpyH2D<T>(a, da.ptr()).template ThenMemcpyH2D<T>(b, db.ptr());
  if (batched) {
    std::vector<se::DeviceMemory<T>*> as{da.ptr(), da.ptr()}, bs{db.ptr(), db.ptr()}, cs{dc2.ptr(), dc.ptr()};
    stream.ThenBlasGemmBatched(se::blas::Transpose::kNoTranspose, se::blas::Transpose::kTranspose, n, n, n, 1.0f, as, n,
                               bs, n, 0.0f, cs, n, 2);
  } else {
    stream.ThenBlasGemm(se::blas::Transpose::kNoTranspose, se::blas::Transpose::kTranspose, n, n, n, 1.0f, da.cref(), n,
                        db.cref(), n, 0.0f, dc.ptr(), n);
  }
  const se::Status status = stream.template ThenMemcpyD2H<T>(dc.cref(), c).BlockHostUntilDone();
  c_out->assign(c.begin(), c.end());  // Half converts to float exactly
  return status;
}

bool Matches(const std::vector<float>& c) {
  const int n = 8;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      float sum = 0;
      for (int p = 0; p < n; ++p) {
        sum += (static_cast<float>((i + p * n) % 7) - 3.0f) * (static_cast<float>((j + p * n) % 5) - 2.0f);
      }
      if (std::fabs(sum - c[i + j * n]) > 1e-4f) return false;
    }
  }
  return true;
}

template <typename B>
const char* GemmAll(se::StreamExecutor<B>* executor, std::vector<float>* c, se::Status* status) {
  if (*status = Gemm<float>(executor, c); !status->ok() || !Matches(*c)) return "float gemm";
  if (*status = Gemm<se::Half>(executor, c); !status->ok() || !Matches(*c)) return "half gemm";
  if (*status = Gemm<se::Half>(executor, c, true); !status->ok() || !Matches(*c)) return "batched half gemm";
  return nullptr;
}

}  // namespace

int main() {
  std::vector<float> c;
  se::Status s;
  auto* host = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  if (const char* failed = GemmAll(host, &c, &s)) {
    std::fprintf(stderr, "host %s under nvcc failed: %s\n", failed, s.ToString().c_str());
    return 1;
  }
  auto cuda = se::Platform<se::cuda>::Get().ExecutorForDevice(0);
  if (!cuda.ok()) {
    std::printf("host gemm (float, half, batched half) OK; cuda: no device (%s)\n", cuda.status().ToString().c_str());
    return 0;
  }
  if (const char* failed = GemmAll(cuda.value(), &c, &s)) {
    std::fprintf(stderr, "cuda %s failed: %s\n", failed, s.ToString().c_str());
    return 1;
  }
  std::printf("host and cuda gemm (float, half, batched half) OK\n");
  return 0;
}
