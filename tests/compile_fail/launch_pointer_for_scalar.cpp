// expect: a pointer or DeviceMemory was passed for a scalar kernel parameter
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::Stream<se::host>& stream, se::TypedKernel<float, se::DeviceMemory<float>*>& kernel,
       se::DeviceMemory<float>* out) {
  stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, out, out);
}
