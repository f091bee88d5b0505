// Pair 5, CUDA: one typed launch through <streamexecutor/cuda.hpp>; the same
// program as raw_cuda.cpp.
#include <streamexecutor/cuda.hpp>

namespace se = streamexecutor;

extern const char* const kPtx;  // the kernel's PTX; compile-only unit

int main() {
  auto* executor = se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaPtxInMemory(kPtx, "scale");
  se::TypedKernel<float, se::DeviceMemory<float>*> kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) return 1;
  auto x = executor->AllocateOwnedArray<float>(64);
  se::Stream stream(executor);
  return stream.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, 2.0f, x.ptr()).BlockHostUntilDone().ok()
             ? 0
             : 1;
}
