// expect: ThenLaunch: argument does not convert to the kernel's scalar parameter type without narrowing
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::TypedKernel<float, se::DeviceMemory<float>*>& kernel, se::DeviceMemory<float>* x) {
  se::PreparedLaunch launch(kernel, se::ThreadDim(), se::BlockDim(), 1.0f, x);
  launch.Set<0>(2.0);  // a double where the kernel takes float
}
