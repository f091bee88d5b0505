// expect: ThenLaunch: this argument must be a se::DeviceMemory<T>* whose T matches the kernel parameter
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::TypedKernel<float, se::DeviceMemory<float>*>& kernel, se::DeviceMemory<int>* ints) {
  se::PreparedLaunch launch(kernel, se::ThreadDim(), se::BlockDim(), 1.0f, ints);
}
