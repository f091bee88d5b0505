// y = a*x + y over 2^20 floats, split across several streams: each stream
// uploads its part, runs saxpy and downloads the result; a final stream waits
// for every part's event, then a host callback checks the whole result while
// a timer measures the device work.
//
//   saxpy [platform]     platform: host (default), opencl, cuda
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string_view>
#include <variant>
#include <vector>

namespace se = streamexecutor;

static void saxpy_host(const se::host::KernelContext& ctx, float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

static constexpr const char* SAXPY_OPENCL = R"(
__kernel void saxpy(float a, __global const float *x, __global float *y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

using SaxpyKernel = se::TypedKernel<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>;

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  auto executor_or = platform->ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "saxpy: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  se::MultiKernelLoaderSpec spec(4);
  spec.AddHostKernel<&saxpy_host>("saxpy");
  spec.AddOpenCLTextInMemory(SAXPY_OPENCL, "saxpy");
#ifdef SAXPY_PTX_FILE
  spec.AddCudaPtxOnDisk(SAXPY_PTX_FILE, "saxpy");
#endif
#ifdef SAXPY_SPIRV_FILE
  spec.AddSpirvOnDisk(SAXPY_SPIRV_FILE, "saxpy");  // saxpy.comp, compiled at build time
#endif
  SaxpyKernel kernel(executor);
  if (se::Status loaded = executor->GetKernel(spec, &kernel); !loaded.ok()) {
    std::fprintf(stderr, "saxpy: %s\n", loaded.ToString().c_str());
    return 3;
  }

  constexpr std::uint32_t kCount = 1 << 20;
  constexpr int kParts = 4;
  constexpr std::uint32_t kPart = kCount / kParts;
  constexpr float kA = 2.5f;
  std::vector<float> x(kCount), y(kCount, 1.0f), result(kCount, 0.0f);
  std::iota(x.begin(), x.end(), 0.0f);

  auto dx = executor->template AllocateOwnedArray<float>(kCount);
  auto dy = executor->template AllocateOwnedArray<float>(kCount);

  // One stream per part, each recording an event when its part is back on the host.
  std::vector<std::unique_ptr<se::Stream<B>>> streams;
  std::vector<std::unique_ptr<se::Event<B>>> done;
  for (int p = 0; p < kParts; ++p) {
    const std::uint32_t first = p * kPart;
    se::DeviceMemory<float> part_x = dx.cref().GetSlice(first, kPart);
    se::DeviceMemory<float> part_y = dy.cref().GetSlice(first, kPart);
    auto& stream = *streams.emplace_back(std::make_unique<se::Stream<B>>(executor));
    auto& event = *done.emplace_back(std::make_unique<se::Event<B>>(executor));
    event.Init();
    stream.Init()
        .ThenMemcpyH2D(std::span(x).subspan(first, kPart), &part_x)
        .ThenMemcpyH2D(std::span(y).subspan(first, kPart), &part_y)
        .ThenLaunch(se::ThreadDim(256), se::BlockDim(kPart / 256), kernel, kA, &part_x, &part_y, kPart)
        .ThenMemcpyD2H(part_y, std::span(result).subspan(first, kPart))
        .ThenRecordEvent(&event);
  }

  // The final stream joins all parts, checks them in a host callback, and is timed.
  std::uint32_t wrong = kCount;
  se::Timer timer(executor);
  se::Stream gather(executor);
  gather.InitWithTimer(&timer).ThenStartTimer(&timer);
  for (auto& event : done) gather.ThenWaitFor(event.get());
  gather.ThenStopTimer(&timer).ThenDoHostCallback([&] {
    wrong = 0;
    for (std::uint32_t i = 0; i < kCount; ++i) wrong += result[i] != kA * x[i] + 1.0f;
  });
  se::Status status = gather.BlockHostUntilDone();
  for (auto& stream : streams) {
    if (se::Status s = stream->BlockHostUntilDone(); !s.ok() && status.ok()) status = s;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "saxpy: %s\n", status.ToString().c_str());
    return 4;
  }
  std::printf("%s: saxpy of %u floats on %d streams: %u wrong, %.3f ms from first wait to last part\n",
              std::string(platform->Name()).c_str(), kCount, kParts, wrong, timer.Nanoseconds() / 1e6);
  std::printf("y[1000] = %.1f (expected %.1f)\n", result[1000], kA * 1000.0f + 1.0f);
  return wrong == 0 ? 0 : 1;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "saxpy: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
