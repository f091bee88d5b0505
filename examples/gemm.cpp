// C = A * B^T with the canned BLAS gemm (docs/blas.md), on the platform named
// on the command line: `gemm host` (OpenBLAS) or `gemm opencl` (CLBlast), or
// `gemm cuda` (cuBLAS) where that backend is built in. Prints the corner
// entries of C and exits non-zero when the result is wrong or the platform
// cannot run it (2: no platform or device, 3: the gemm failed).
#include <streamexecutor/blas.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace se = streamexecutor;

// Matrices are column-major, as in cuBLAS: element (i, j) of an m x n matrix
// with leading dimension ld is at [i + j * ld].
constexpr int M = 96, N = 64, K = 80;

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  auto executor_or = platform->ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "gemm: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  // A is M x K; B is stored N x K and used transposed, so op(B) is K x N.
  std::vector<float> a(M * K), b(N * K), c(M * N, 0.0f);
  for (int i = 0; i < M * K; ++i) a[i] = static_cast<float>(i % 13) / 13.0f;
  for (int i = 0; i < N * K; ++i) b[i] = static_cast<float>(i % 7) / 7.0f - 0.5f;

  se::ScopedDeviceMemory<float> device_a = executor->template AllocateOwnedArray<float>(a.size());
  se::ScopedDeviceMemory<float> device_b = executor->template AllocateOwnedArray<float>(b.size());
  se::ScopedDeviceMemory<float> device_c = executor->template AllocateOwnedArray<float>(c.size());

  se::Stream stream(executor);
  se::Status done = stream.Init()
                        .template ThenMemcpyH2D<float>(a, device_a.ptr())
                        .template ThenMemcpyH2D<float>(b, device_b.ptr())
                        .ThenBlasGemm(se::blas::Transpose::kNoTranspose, se::blas::Transpose::kTranspose, M, N, K, 1.0f,
                                      device_a.cref(), M, device_b.cref(), N, 0.0f, device_c.ptr(), M)
                        .template ThenMemcpyD2H<float>(device_c.cref(), c)
                        .BlockHostUntilDone();
  if (!done.ok()) {
    std::fprintf(stderr, "gemm: %s\n", done.ToString().c_str());
    return 3;
  }

  // Checked against the definition: C(i, j) = sum_p A(i, p) * B(j, p).
  double worst = 0.0;
  for (int j = 0; j < N; ++j) {
    for (int i = 0; i < M; ++i) {
      double sum = 0.0;
      for (int p = 0; p < K; ++p) sum += static_cast<double>(a[i + p * M]) * static_cast<double>(b[j + p * N]);
      worst = std::fmax(worst, std::fabs(sum - static_cast<double>(c[i + j * M])));
    }
  }
  std::printf("%s: C = A * B^T (%dx%d, k=%d): C(0,0) = %.4f, C(%d,%d) = %.4f, largest error %.2g\n",
              std::string(platform->Name()).c_str(), M, N, K, static_cast<double>(c[0]), M - 1, N - 1,
              static_cast<double>(c[M * N - 1]), worst);
  return worst < 1e-3 ? 0 : 1;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "gemm: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
