// expect: UpdateLaunch: the number of arguments differs from the TypedKernel's parameter count
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
se::Status f(se::CommandBuffer<se::host>& buffer, se::TypedKernel<float, se::DeviceMemory<float>*>& kernel) {
  return buffer.UpdateLaunch(buffer.LastCommand(), se::ThreadDim(), se::BlockDim(), kernel, 1.0f);
}
