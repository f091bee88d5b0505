// expect: KernelArgs::Add: raw pointers cannot be kernel arguments; pass se::DeviceMemory<T>*
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(float* host_pointer) {
  se::KernelArgsArray<1> args;
  args.Add(host_pointer);
}
