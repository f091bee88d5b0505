// Every public API, compiled by nvcc -std=c++20 in a CUDA translation unit
// (as a user's .cu file would include it), for the host and CUDA backends.
// Run as a test: the host backend runs the whole flow for real; the CUDA
// backend runs it where a device exists and otherwise must report why not.
#include <streamexecutor/streamexecutor.hpp>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace se = streamexecutor;

namespace {

constexpr const char* kAddPtx = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry add_one(.param .u64 data, .param .u32 n) {
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r3, [%rd4];
  add.s32 %r3, %r3, 1;
  st.global.u32 [%rd4], %r3;
DONE:
  ret;
}
)";

void add_one_host(const se::host::KernelContext& ctx, int* data, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) data[i] += 1;
}

using AddOne = se::TypedKernel<se::DeviceMemory<int>*, std::uint32_t>;

template <se::Backend B>
int Run(se::Platform<B>& platform) {
  auto executor_or = platform.ExecutorForDevice(0);
  if (!executor_or.ok()) {
    std::printf("%s: no device: %s\n", std::string(platform.Name()).c_str(), executor_or.status().ToString().c_str());
    return platform.VisibleDeviceCount() == 0 && !platform.InitStatus().ok() ? 0 : 1;
  }
  se::StreamExecutor<B>* executor = executor_or.value();
  std::printf("%s\n", executor->GetDeviceDescription().ToString().c_str());

  se::MultiKernelLoaderSpec spec(2);
  spec.AddHostKernel<&add_one_host>("add_one").AddCudaPtxInMemory(kAddPtx, "add_one");
  AddOne kernel(executor);
  if (se::Status s = executor->GetKernel(spec, &kernel); !s.ok()) {
    std::printf("GetKernel: %s\n", s.ToString().c_str());
    return 1;
  }

  // Kernel attributes and the occupancy calculator.
  se::StatusOr<se::KernelAttributes> attributes = executor->GetKernelAttributes(kernel);
  se::StatusOr<se::BlockSizeSuggestion> best = executor->SuggestBlockSize(kernel);
  se::StatusOr<se::BlockSizeSuggestion> per_size =
      executor->SuggestBlockSize(kernel, [](std::uint64_t threads) { return threads * sizeof(int); }, 256);
  if (!attributes.ok() || !best.ok() || !per_size.ok() ||
      !executor->MaxActiveBlocksPerMultiprocessor(kernel, best.value().threads_per_block).ok()) {
    std::printf("occupancy: %s\n", attributes.status().ToString().c_str());
    return 1;
  }
  std::printf("%s; suggested %llu threads per block\n", attributes.value().ToString().c_str(),
              static_cast<unsigned long long>(best.value().threads_per_block));

  constexpr std::uint32_t n = 1000;
  std::vector<int> host(n, 41), back(n, 0);
  se::ScopedDeviceMemory<int> data = executor->template AllocateOwnedArray<int>(n);
  se::Timer<B> timer(executor);
  se::Event<B> done(executor);
  done.Init();
  se::Stream<B> other(executor);
  other.Init();
  bool callback_ran = false;
  se::Stream<B> stream(executor);
  stream.InitWithTimer(&timer)
      .ThenStartTimer(&timer)
      .ThenMemcpyH2D(std::span<const int>(host), data.ptr())
      .ThenLaunch(se::ThreadDim(128), se::BlockDim((n + 127) / 128), kernel, data.ptr(), n)
      .ThenMemcpyD2H(data.cref(), std::span<int>(back))
      .ThenRecordEvent(&done)
      .ThenWaitFor(&other)
      .ThenDoHostCallback([&] { callback_ran = true; })
      .ThenStopTimer(&timer);
  // Stream memory operations and a handle for another process.
  se::ScopedDeviceMemory<std::uint32_t> flag = executor->template AllocateOwnedArray<std::uint32_t>(1);
  stream.ThenWriteValue(flag.ptr(), 1u).ThenWaitValue(flag.cref(), 1u, se::WaitCondition::kEqual);
  if (se::StatusOr<se::IpcMemoryHandle> handle = executor->ExportMemory(flag.cref()); !handle.ok()) {
    std::printf("ExportMemory: %s\n", handle.status().ToString().c_str());
    return 1;
  }
  // A prepared launch and a launch typed at run time, adding one more each.
  se::PreparedLaunch prepared(kernel, se::ThreadDim(128), se::BlockDim((n + 127) / 128), data.ptr(), n);
  se::UntypedKernel untyped(executor);
  if (se::Status s = executor->GetUntypedKernel(spec, &untyped); !s.ok()) {
    std::printf("GetUntypedKernel: %s\n", s.ToString().c_str());
    return 1;
  }
  se::KernelArgsArray<2> args;
  args.Add(data.ptr()).Add(n);
  stream.ThenLaunch(prepared.template Set<1>(n))
      .ThenLaunch(se::ThreadDim(128), se::BlockDim((n + 127) / 128), untyped, args)
      .ThenMemcpyD2H(data.cref(), std::span<int>(back));
  se::Status status = stream.BlockHostUntilDone();
  if (!status.ok() || !done.Synchronize().ok() || !callback_ran) {
    std::printf("stream: %s\n", status.ToString().c_str());
    return 1;
  }
  for (int value : back) {
    if (value != 44) return 1;
  }
  // Zero copy: the kernel adds one to pinned host memory in place; peer access is between two executors.
  se::PinnedHostMemory<int> pinned = executor->template HostAllocate<int>(n);
  for (std::uint32_t i = 0; pinned.ok() && i < n; ++i) pinned[i] = 1;
  se::StatusOr<se::DeviceMemory<int>> view = executor->HostMemoryDeviceView(pinned);
  if (!view.ok()) {
    std::printf("HostMemoryDeviceView: %s\n", view.status().ToString().c_str());
    return 1;
  }
  status = stream.ThenLaunch(se::ThreadDim(128), se::BlockDim((n + 127) / 128), kernel, &view.value(), n)
               .BlockHostUntilDone();
  if (!status.ok() || pinned[0] != 2 || pinned[n - 1] != 2 || executor->CanEnablePeerAccessTo(executor)) {
    std::printf("zero copy: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("%s: add_one over %u ints ok, %.3f ms\n", std::string(platform.Name()).c_str(), n,
              timer.Nanoseconds() / 1e6);
  return 0;
}

}  // namespace

int main() {
  int failures = Run(se::Platform<se::host>::Get());
  failures += Run(se::Platform<se::cuda>::Get());
  // The manager sees both backends by name, as in a .cpp build.
  failures += se::MultiPlatformManager::PlatformWithName("cuda").ok() ? 0 : 1;
  return failures == 0 ? 0 : 1;
}
