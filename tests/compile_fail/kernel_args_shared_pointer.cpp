// expect: KernelArgs::Add: pass SharedDeviceMemory<T> by value, not by pointer
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f() {
  se::SharedDeviceMemory<int> scratch(16);
  se::KernelArgsArray<1> args;
  args.Add(&scratch);
}
