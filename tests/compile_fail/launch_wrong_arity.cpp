// expect: the number of arguments differs from the TypedKernel's parameter count
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::Stream<se::host>& stream, se::TypedKernel<float, se::DeviceMemory<float>*>& kernel) {
  stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, 1.0f);
}
