// expect: argument does not convert to the kernel's scalar parameter type without narrowing
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::Stream<se::host>& stream, se::TypedKernel<float, se::DeviceMemory<float>*>& kernel,
       se::DeviceMemory<float>* out) {
  double value = 42.5;
  stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, value, out);
}
