// expect: argument does not convert to the kernel's scalar parameter type without narrowing
// A generated kernel (tests/generator/kernels.cl: short s) given an int variable.
#include <streamexecutor/opencl.hpp>

#include "kernels.cl.h"
namespace se = streamexecutor;
void f(se::Stream<se::opencl>& stream, gpucc::kernel::Scalars& kernel, se::DeviceMemory<double>* out, int wide) {
  stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, std::int8_t{1}, std::uint8_t{1}, wide, std::uint16_t{1},
                    1, 1u, std::int64_t{1}, std::uint64_t{1}, 1.0f, 1.0, out);
}
