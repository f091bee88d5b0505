// Pair 5, host: one typed launch through <streamexecutor/host.hpp>.
#include <streamexecutor/host.hpp>

namespace se = streamexecutor;

void scale(const se::host::KernelContext& ctx, float a, float* x) { x[ctx.threadIdx.x] *= a; }

int main() {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddHostKernel<&scale>("scale");
  se::TypedKernel<float, se::DeviceMemory<float>*> kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) return 1;
  auto x = executor->AllocateOwnedArray<float>(64);
  se::Stream stream(executor);
  return stream.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, 2.0f, x.ptr()).BlockHostUntilDone().ok()
             ? 0
             : 1;
}
