// saxpy with a generated typed kernel header: saxpy.gpu.h is written at build
// time from saxpy_kernels.cl, saxpy.cu (where nvcc is found) and saxpy.comp
// (where glslangValidator is) by tools/se_kernel_header.py, so the
// TypedKernel's parameter list is the kernels' own and their code is
// embedded; a wrong argument at ThenLaunch does not compile. Only the host
// backend's kernel is written here.
//
//   saxpy_generated [platform]     platform: host (default), opencl, cuda, vulkan
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string_view>
#include <variant>
#include <vector>

#include "saxpy.gpu.h"

namespace se = streamexecutor;

static void saxpy_host(const se::host::KernelContext& ctx, float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  auto executor_or = platform->ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "saxpy_generated: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  // OpenCL source, CUDA code and SPIR-V come from the generated spec; the host kernel is added to it.
  se::MultiKernelLoaderSpec spec = gpucc::spec::saxpy();
  spec.AddHostKernel<&saxpy_host>("saxpy");
  gpucc::kernel::Saxpy kernel(executor);
  if (se::Status loaded = executor->GetKernel(spec, &kernel); !loaded.ok()) {
    std::fprintf(stderr, "saxpy_generated: %s\n", loaded.ToString().c_str());
    // No code of this platform's format in the generated header (a build
    // without that platform's compiler): Meson's SKIP.
    return loaded.code() == se::ErrorCode::kNotFound ? 77 : 3;
  }

  constexpr std::uint32_t kCount = 1 << 16;
  constexpr float kA = 2.5f;
  std::vector<float> x(kCount), y(kCount, 1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = executor->template AllocateOwnedArray<float>(kCount);
  auto dy = executor->template AllocateOwnedArray<float>(kCount);
  se::Stream stream(executor);
  se::Status status =
      stream.Init()
          .ThenMemcpyH2D(std::span<const float>(x), dx.ptr())
          .ThenMemcpyH2D(std::span<const float>(y), dy.ptr())
          .ThenLaunch(se::ThreadDim(256), se::BlockDim(kCount / 256), kernel, kA, dx.ptr(), dy.ptr(), kCount)
          .ThenMemcpyD2H(dy.cref(), std::span<float>(y))
          .BlockHostUntilDone();
  if (!status.ok()) {
    std::fprintf(stderr, "saxpy_generated: %s\n", status.ToString().c_str());
    return 4;
  }
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < kCount; ++i) wrong += y[i] != kA * x[i] + 1.0f;
  std::printf("%s: generated saxpy of %u floats: %u wrong\n", std::string(platform->Name()).c_str(), kCount, wrong);
  return wrong == 0 ? 0 : 1;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "saxpy_generated: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
