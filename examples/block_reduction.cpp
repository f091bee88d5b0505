// A block reduction over shared memory with a block barrier, the same kernel
// logic on every backend: each thread writes its value into the block's
// shared memory, then the stride halves, with a barrier after each step
// (__syncthreads on CUDA, barrier(CLK_LOCAL_MEM_FENCE) on OpenCL,
// ctx.SyncThreads() on the host, whose kernel takes a CooperativeContext).
// Each block writes its partial sum; the host adds the partials.
//
//   block_reduction [platform]     platform: host (default), opencl, cuda
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

namespace se = streamexecutor;

static void block_sum_host(const se::host::CooperativeContext& ctx, const float* in, float* partial, std::uint32_t n,
                           std::span<float> sh) {
  const std::uint64_t t = ctx.threadIdx.x;
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + t;
  sh[t] = i < n ? in[i] : 0.0f;
  ctx.SyncThreads();
  for (std::uint64_t stride = ctx.blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) sh[t] += sh[t + stride];
    ctx.SyncThreads();
  }
  if (t == 0) partial[ctx.blockIdx.x] = sh[0];
}

static constexpr const char* BLOCK_SUM_OPENCL = R"(
__kernel void block_sum(__global const float *in, __global float *partial, uint n, __local float *sh) {
  const size_t t = get_local_id(0);
  const size_t i = get_global_id(0);
  sh[t] = i < n ? in[i] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
    if (t < stride) sh[t] += sh[t + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) partial[get_group_id(0)] = sh[0];
}
)";

using BlockSumKernel =
    se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t, se::SharedDeviceMemory<float>>;

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  auto executor_or = platform->ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "block_reduction: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  se::MultiKernelLoaderSpec spec(4);
  spec.AddHostKernel<&block_sum_host>("block_sum");
  spec.AddOpenCLTextInMemory(BLOCK_SUM_OPENCL, "block_sum");
#ifdef BLOCK_REDUCTION_PTX_FILE
  spec.AddCudaPtxOnDisk(BLOCK_REDUCTION_PTX_FILE, "block_sum");
#endif
#ifdef BLOCK_REDUCTION_SPIRV_FILE
  spec.AddSpirvOnDisk(BLOCK_REDUCTION_SPIRV_FILE, "block_sum");  // block_reduction.comp, compiled at build time
#endif
  BlockSumKernel kernel(executor);
  if (se::Status loaded = executor->GetKernel(spec, &kernel); !loaded.ok()) {
    std::fprintf(stderr, "block_reduction: %s\n", loaded.ToString().c_str());
    return 3;
  }

  // Small integers, so that every partial sum and the total are exact in float
  // whatever the order of the additions.
  constexpr std::uint32_t kCount = 100000;
  constexpr std::uint32_t kThreads = 256;
  constexpr std::uint32_t kBlocks = (kCount + kThreads - 1) / kThreads;
  std::vector<float> in(kCount), partial(kBlocks, -1.0f);
  double expected = 0.0;
  for (std::uint32_t i = 0; i < kCount; ++i) {
    in[i] = static_cast<float>(i % 17);
    expected += in[i];
  }
  auto device_in = executor->template AllocateOwnedArray<float>(kCount);
  auto device_partial = executor->template AllocateOwnedArray<float>(kBlocks);
  se::Stream<B> stream(executor);
  se::Status status = stream.Init()
                          .ThenMemcpyH2D(std::span<const float>(in), device_in.ptr())
                          .ThenLaunch(se::ThreadDim(kThreads), se::BlockDim(kBlocks), kernel, device_in.ptr(),
                                      device_partial.ptr(), kCount, se::SharedDeviceMemory<float>(kThreads))
                          .ThenMemcpyD2H(device_partial.cref(), std::span<float>(partial))
                          .BlockHostUntilDone();
  if (!status.ok()) {
    std::fprintf(stderr, "block_reduction: %s\n", status.ToString().c_str());
    return 4;
  }
  double total = 0.0;
  std::uint32_t wrong_blocks = 0;
  for (std::uint32_t b = 0; b < kBlocks; ++b) {
    double block_expected = 0.0;
    for (std::uint32_t i = b * kThreads; i < kCount && i < (b + 1) * kThreads; ++i) block_expected += in[i];
    wrong_blocks += partial[b] != block_expected;
    total += partial[b];
  }
  std::printf(
      "%s: block reduction of %u floats in %u blocks of %u threads: sum %.1f (expected %.1f), %u wrong blocks\n",
      std::string(platform->Name()).c_str(), kCount, kBlocks, kThreads, total, expected, wrong_blocks);
  return wrong_blocks == 0 && total == expected ? 0 : 1;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "block_reduction: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
