// One typed launch on the backend named by SE_CONSUMER_BACKEND (host or
// opencl). check.py compiles it with and without
// STREAMEXECUTOR_SEPARATE_COMPILATION and compares what each object defines.
#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;

void scale(const se::host::KernelContext& ctx, float a, float* x) { x[ctx.threadIdx.x] *= a; }

int main() {
  auto* executor = se::Platform<se::SE_CONSUMER_BACKEND>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddHostKernel<&scale>("scale");
  spec.AddOpenCLTextInMemory("__kernel void scale(float a, __global float* x) { x[get_global_id(0)] *= a; }", "scale");
  se::TypedKernel<float, se::DeviceMemory<float>*> kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) return 1;
  auto x = executor->AllocateOwnedArray<float>(64);
  se::Stream stream(executor);
  return stream.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, 2.0f, x.ptr()).BlockHostUntilDone().ok()
             ? 0
             : 1;
}
