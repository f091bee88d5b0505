// expect: ThenLaunch: pass SharedDeviceMemory<T> by value, not by pointer
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::Stream<se::host>& stream, se::TypedKernel<se::SharedDeviceMemory<int>>& kernel) {
  se::SharedDeviceMemory<int> scratch(16);
  stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, &scratch);
}
