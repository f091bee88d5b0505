// expect: host kernels must be stateless (capture nothing)
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(int captured) {
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel("k", [captured](const se::host::KernelContext&, int* out) { *out = captured; });
}
