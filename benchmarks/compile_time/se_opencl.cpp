// Pair 5, OpenCL: one typed launch through <streamexecutor/opencl.hpp>; the
// same program as raw_opencl.cpp.
#include <streamexecutor/opencl.hpp>

namespace se = streamexecutor;

constexpr const char* kSource = "__kernel void scale(float a, __global float* x) { x[get_global_id(0)] *= a; }";

int main() {
  auto* executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kSource, "scale");
  se::TypedKernel<float, se::DeviceMemory<float>*> kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) return 1;
  auto x = executor->AllocateOwnedArray<float>(64);
  se::Stream stream(executor);
  return stream.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, 2.0f, x.ptr()).BlockHostUntilDone().ok()
             ? 0
             : 1;
}
