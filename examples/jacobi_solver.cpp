// An iterative solver captured once and replayed until it converges: Jacobi
// iteration for A x = b, with A diagonally dominant. One iteration is
//   r = b - A x          (a device copy and the canned BLAS gemv)
//   x = x + r / diag(A)  (a kernel)
//   rr = r . r           (the canned BLAS dot, its result left on the device)
//   go = rr > tol^2 and iterations < limit, iterations += 1   (a kernel)
// It is captured from a stream into a command buffer, and a second buffer
// runs it with ThenWhile(go): the loop runs without the host deciding each
// step (a CUDA conditional node, the host's worker, OpenCL's replay loop).
//
//   jacobi_solver [platform]     platform: host (default), opencl, cuda
//
// Prints the iteration count and the residual; exits 0 when it converged
// (2: no platform or device, 3: a kernel did not load, 4: a run failed).
#include <streamexecutor/blas.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace se = streamexecutor;

constexpr int kN = 64;
constexpr std::int32_t kLimit = 500;
constexpr float kTolerance = 1e-5f;

// x[i] += r[i] / diagonal[i]
static void jacobi_update_host(const se::host::KernelContext& ctx, float* x, const float* r, const float* diagonal,
                               std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) x[i] += r[i] / diagonal[i];
}
// One thread: go = rr > tolerance^2 && ++iterations < limit.
static void convergence_host(const se::host::KernelContext&, const float* rr, std::int32_t* iterations,
                             std::int32_t* go, float tolerance, std::int32_t limit) {
  *iterations += 1;
  *go = *rr > tolerance * tolerance && *iterations < limit ? 1 : 0;
}

static constexpr const char* kKernelsOpenCL = R"(
__kernel void jacobi_update(__global float *x, __global const float *r, __global const float *diagonal, uint n) {
  const size_t i = get_global_id(0);
  if (i < n) x[i] += r[i] / diagonal[i];
}
__kernel void convergence(__global const float *rr, __global int *iterations, __global int *go, float tolerance,
                          int limit) {
  *iterations += 1;
  *go = *rr > tolerance * tolerance && *iterations < limit ? 1 : 0;
}
)";

using UpdateKernel =
    se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>;
using ConvergenceKernel = se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<std::int32_t>*,
                                          se::DeviceMemory<std::int32_t>*, float, std::int32_t>;

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  auto executor_or = platform->ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "jacobi_solver: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  se::MultiKernelLoaderSpec update_spec(4), convergence_spec(5);
  update_spec.AddHostKernel<&jacobi_update_host>("jacobi_update");
  update_spec.AddOpenCLTextInMemory(kKernelsOpenCL, "jacobi_update");
  convergence_spec.AddHostKernel<&convergence_host>("convergence");
  convergence_spec.AddOpenCLTextInMemory(kKernelsOpenCL, "convergence");
#ifdef JACOBI_SOLVER_PTX_FILE
  update_spec.AddCudaPtxOnDisk(JACOBI_SOLVER_PTX_FILE, "jacobi_update");
  convergence_spec.AddCudaPtxOnDisk(JACOBI_SOLVER_PTX_FILE, "convergence");
#endif
  UpdateKernel update(executor);
  ConvergenceKernel convergence(executor);
  for (se::Status loaded :
       {executor->GetKernel(update_spec, &update), executor->GetKernel(convergence_spec, &convergence)}) {
    if (!loaded.ok()) {
      std::fprintf(stderr, "jacobi_solver: %s\n", loaded.ToString().c_str());
      return 3;
    }
  }

  // A: 4 on the diagonal, -1 on the two neighbouring diagonals (column-major);
  // b chosen so that the solution is x[i] = 1 + i / n.
  std::vector<float> a(kN * kN, 0.0f), diagonal(kN, 4.0f), b(kN, 0.0f), want(kN);
  for (int i = 0; i < kN; ++i) want[i] = 1.0f + static_cast<float>(i) / kN;
  for (int i = 0; i < kN; ++i) {
    a[i + i * kN] = 4.0f;
    if (i > 0) a[i + (i - 1) * kN] = -1.0f;
    if (i + 1 < kN) a[i + (i + 1) * kN] = -1.0f;
  }
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) b[i] += a[i + j * kN] * want[j];
  }
  auto device_a = executor->template AllocateOwnedArray<float>(a.size());
  auto device_diagonal = executor->template AllocateOwnedArray<float>(kN);
  auto device_b = executor->template AllocateOwnedArray<float>(kN);
  auto x = executor->template AllocateOwnedArray<float>(kN);
  auto r = executor->template AllocateOwnedArray<float>(kN);
  auto rr = executor->template AllocateOwnedArray<float>(1);
  auto iterations = executor->template AllocateOwnedArray<std::int32_t>(1);
  auto go = executor->template AllocateOwnedArray<std::int32_t>(1);

  se::Stream<B> stream(executor);
  stream.Init()
      .ThenMemcpyH2D(std::span<const float>(a), device_a.ptr())
      .ThenMemcpyH2D(std::span<const float>(diagonal), device_diagonal.ptr())
      .ThenMemcpyH2D(std::span<const float>(b), device_b.ptr());

  // One iteration, captured once: nothing runs until the buffer is submitted.
  se::CommandBuffer<B> iteration(executor);
  iteration.Init();
  if (se::Status began = stream.BeginCapture(&iteration); !began.ok()) {
    std::fprintf(stderr, "jacobi_solver: %s\n", began.ToString().c_str());
    return 4;
  }
  stream.ThenMemcpyD2D(r.ptr(), device_b.cref())
      .ThenBlasGemv(se::blas::Transpose::kNoTranspose, kN, kN, -1.0f, device_a.cref(), kN, x.cref(), 1, 1.0f, r.ptr(),
                    1)
      .ThenLaunch(se::ThreadDim(kN), se::BlockDim(1), update, x.ptr(), r.ptr(), device_diagonal.ptr(),
                  static_cast<std::uint32_t>(kN))
      .ThenBlasDot(kN, r.cref(), 1, r.cref(), 1, rr.ptr())
      .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), convergence, rr.ptr(), iterations.ptr(), go.ptr(), kTolerance,
                  kLimit);
  if (se::Status captured = stream.EndCapture(&iteration); !captured.ok()) {
    std::fprintf(stderr, "jacobi_solver: %s\n", captured.ToString().c_str());
    return 4;
  }

  // The solve: start from x = 0, then iterate while `go` is non-zero.
  se::CommandBuffer<B> solve(executor);
  solve.Init()
      .ThenMemZero(x.ptr(), kN * sizeof(float))
      .ThenMemZero(iterations.ptr(), sizeof(std::int32_t))
      .ThenMemset32(go.ptr(), 1, sizeof(std::int32_t))
      .ThenWhile(go.cref(), &iteration);
  std::vector<float> solution(kN), residual(1);
  std::vector<std::int32_t> count(1);
  se::Status done = stream.ThenSubmit(&solve)
                        .ThenMemcpyD2H(x.cref(), std::span<float>(solution))
                        .ThenMemcpyD2H(rr.cref(), std::span<float>(residual))
                        .ThenMemcpyD2H(iterations.cref(), std::span<std::int32_t>(count))
                        .BlockHostUntilDone();
  if (!done.ok()) {
    std::fprintf(stderr, "jacobi_solver: %s\n", done.ToString().c_str());
    return 4;
  }
  double worst = 0.0;
  for (int i = 0; i < kN; ++i) worst = std::fmax(worst, std::fabs(solution[i] - want[i]));
  std::printf("%s: Jacobi on %dx%d converged in %d iterations (one submission): |r| = %.2g, largest error %.2g\n",
              std::string(platform->Name()).c_str(), kN, kN, count[0], std::sqrt(static_cast<double>(residual[0])),
              worst);
  return count[0] < kLimit && worst < 1e-4 ? 0 : 1;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "jacobi_solver: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
