// expect: this argument must be a se::DeviceMemory<T>* whose T matches the kernel parameter
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::Stream<se::host>& stream, se::TypedKernel<float, se::DeviceMemory<float>*>& kernel,
       se::DeviceMemory<int>* ints) {
  stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, 1.0f, ints);
}
