// A program that uses an installed streamexecutor the way a consumer would:
// only the installed headers and the pkg-config or CMake package.
#include <streamexecutor/streamexecutor.hpp>

#include <cstdio>
#include <span>

namespace se = streamexecutor;

static void twice(const se::host::KernelContext& ctx, int* data) { data[ctx.threadIdx.x] *= 2; }
// With a block barrier: links Boost.Context, which every route must provide.
static void rotate(const se::host::CooperativeContext& ctx, int* data, std::span<int> sh) {
  sh[ctx.threadIdx.x] = data[ctx.threadIdx.x];
  ctx.SyncThreads();
  data[ctx.threadIdx.x] = sh[(ctx.threadIdx.x + 1) % ctx.blockDim.x];
}

int main() {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&twice>("twice");
  se::TypedKernel<se::DeviceMemory<int>*> kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) return 1;
  se::MultiKernelLoaderSpec rotate_spec(2);
  rotate_spec.AddHostKernel<&rotate>("rotate");
  se::TypedKernel<se::DeviceMemory<int>*, se::SharedDeviceMemory<int>> rotate_kernel(executor);
  if (!executor->GetKernel(rotate_spec, &rotate_kernel).ok()) return 1;
  int host[4] = {1, 2, 3, 4};
  auto device = executor->AllocateOwnedArray<int>(4);
  se::Stream stream(executor);
  se::Status status =
      stream.Init()
          .ThenMemcpyH2D(std::span<const int>(host), device.ptr())
          .ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, device.ptr())
          .ThenLaunch(se::ThreadDim(4), se::BlockDim(1), rotate_kernel, device.ptr(), se::SharedDeviceMemory<int>(4))
          .ThenMemcpyD2H(device.cref(), std::span<int>(host))
          .BlockHostUntilDone();
  std::printf("platforms: %s; result %d %d %d %d\n", se::MultiPlatformManager::AvailablePlatformNames().c_str(),
              host[0], host[1], host[2], host[3]);
  return status.ok() && host[0] == 4 && host[3] == 2 ? 0 : 1;  // doubled, then rotated left
}
