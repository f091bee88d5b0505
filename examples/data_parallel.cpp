// A data-parallel training step on N ranks (docs/collectives.md): each rank
// computes a gradient of its own data with a kernel, the ranks sum the
// gradients with ThenAllReduce, and each applies the mean with a second
// kernel, all in one stream's order. Every rank ends with the same weights,
// the minimum of the summed loss, and prints them.
//
//   mpiexec -n 4 data_parallel [platform]     platform: host (default) or opencl
//
// Rank r's loss is sum_i (w[i] - t_r[i])^2 / 2 with t_r[i] = (r + 1) * (i % 5):
// its gradient is w - t_r, and the weights converge to the mean target,
// (N + 1) / 2 * (i % 5).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <streamexecutor/collectives.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace se = streamexecutor;

namespace {

constexpr std::uint64_t kCount = 256;
constexpr int kThreads = 64;
constexpr int kSteps = 30;
constexpr float kRate = 0.5f;

void gradient_host(const se::host::KernelContext& c, const float* w, float* g, int rank) {
  const auto i = c.blockIdx.x * c.blockDim.x + c.threadIdx.x;
  g[i] = w[i] - static_cast<float>((rank + 1) * static_cast<int>(i % 5));
}
void apply_host(const se::host::KernelContext& c, const float* sum, float* w, float scale) {
  const auto i = c.blockIdx.x * c.blockDim.x + c.threadIdx.x;
  w[i] -= scale * sum[i];
}
constexpr const char* kKernelsOpenCL = R"(
__kernel void gradient(__global const float* w, __global float* g, int rank) {
  const size_t i = get_global_id(0);
  g[i] = w[i] - (float)((rank + 1) * (int)(i % 5));
}
__kernel void apply(__global const float* sum, __global float* w, float scale) {
  const size_t i = get_global_id(0);
  w[i] -= scale * sum[i];
}
)";

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  auto executor_or = platform->ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "data_parallel: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();
  // NCCL where every rank is on CUDA and NCCL loads; MPI otherwise.
  se::Communicator<B> comm = se::MakeCommunicator(executor, MPI_COMM_WORLD);
  if (!comm.ok()) {
    std::fprintf(stderr, "data_parallel: %s\n", comm.status().ToString().c_str());
    return 2;
  }
  se::MultiKernelLoaderSpec gradient_spec(3), apply_spec(3);
  gradient_spec.AddHostKernel<&gradient_host>("gradient");
  gradient_spec.AddOpenCLTextInMemory(kKernelsOpenCL, "gradient");
  apply_spec.AddHostKernel<&apply_host>("apply");
  apply_spec.AddOpenCLTextInMemory(kKernelsOpenCL, "apply");
  se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, int> gradient(executor);
  se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, float> apply(executor);
  for (se::Status loaded : {executor->GetKernel(gradient_spec, &gradient), executor->GetKernel(apply_spec, &apply)}) {
    if (!loaded.ok()) {
      std::fprintf(stderr, "data_parallel: %s\n", loaded.ToString().c_str());
      return 3;
    }
  }
  auto weights = executor->template AllocateOwnedArray<float>(kCount);
  auto local = executor->template AllocateOwnedArray<float>(kCount);
  auto sum = executor->template AllocateOwnedArray<float>(kCount);
  const float scale = kRate / static_cast<float>(comm.size());
  const se::ThreadDim threads(kThreads);
  const se::BlockDim blocks(kCount / kThreads);
  se::Stream<B> stream(executor);
  stream.Init().ThenMemZero(weights.ptr(), kCount * sizeof(float));
  for (int step = 0; step < kSteps; ++step) {
    stream.ThenLaunch(threads, blocks, gradient, weights.ptr(), local.ptr(), comm.rank())
        .ThenAllReduce(comm, local.cref(), sum.ptr(), se::ReduceOp::kSum)
        .ThenLaunch(threads, blocks, apply, sum.ptr(), weights.ptr(), scale);
  }
  std::vector<float> w(kCount);
  stream.template ThenMemcpyD2H<float>(weights.cref(), w);
  if (se::Status done = stream.BlockHostUntilDone(); !done.ok()) {
    std::fprintf(stderr, "data_parallel: rank %d: %s\n", comm.rank(), done.ToString().c_str());
    return 4;
  }
  double error = 0;
  for (std::uint64_t i = 0; i < kCount; ++i) {
    const double optimum = (comm.size() + 1) / 2.0 * static_cast<double>(i % 5);
    error = std::max(error, std::fabs(w[i] - optimum));
  }
  std::printf("rank %d of %d (%s, %s): after %d steps w[0..4] = %.6f %.6f %.6f %.6f %.6f, largest error %.1e\n",
              comm.rank(), comm.size(), std::string(platform->Name()).c_str(),
              std::string(comm.transport_name()).c_str(), kSteps, w[0], w[1], w[2], w[3], w[4], error);
  return error < 1e-4 ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  int result = 2;
  if (auto platform = se::MultiPlatformManager::PlatformWithName(platform_name); !platform.ok()) {
    std::fprintf(stderr, "data_parallel: %s\n", platform.status().ToString().c_str());
  } else {
    result = std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
  }
  MPI_Finalize();
  return result;
}
