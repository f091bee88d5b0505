// expect: this argument must be a se::DeviceMemory<T>* whose T matches the kernel parameter
// A generated kernel (tests/generator/kernels.cl: __global const int* in) given float memory.
#include <streamexecutor/opencl.hpp>

#include "kernels.cl.h"
namespace se = streamexecutor;
void f(se::Stream<se::opencl>& stream, gpucc::kernel::AddressSpaces& kernel, se::DeviceMemory<float>* floats,
       se::DeviceMemory<std::int32_t>* ints) {
  stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, floats, ints, se::SharedDeviceMemory<std::int32_t>(1),
                    ints);
}
