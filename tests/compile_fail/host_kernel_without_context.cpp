// expect: the first parameter of a host kernel must be `const se::host::KernelContext&`
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void k(float, float*) {}
void f() {
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&k>("k");
}
