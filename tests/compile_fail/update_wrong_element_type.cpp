// expect: this argument must be a se::DeviceMemory<T>* whose T matches the kernel parameter
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
se::Status f(se::CommandBuffer<se::host>& buffer, se::TypedKernel<float, se::DeviceMemory<float>*>& kernel,
             se::DeviceMemory<int>* ints) {
  return buffer.UpdateLaunch(buffer.LastCommand(), se::ThreadDim(), se::BlockDim(), kernel, 1.0f, ints);
}
