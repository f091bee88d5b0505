// expect: PreparedLaunch: the number of arguments differs from the TypedKernel's parameter count
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::TypedKernel<float, se::DeviceMemory<float>*>& kernel) {
  se::PreparedLaunch launch(kernel, se::ThreadDim(), se::BlockDim(), 1.0f);
}
