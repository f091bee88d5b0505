// expect: PreparedLaunch::Set<I>: I is not a parameter index of the kernel
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::TypedKernel<float, se::DeviceMemory<float>*>& kernel, se::DeviceMemory<float>* x) {
  se::PreparedLaunch launch(kernel, se::ThreadDim(), se::BlockDim(), 1.0f, x);
  launch.Set<2>(x);
}
