// expect: TypedKernel parameter is a raw pointer
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
se::TypedKernel<float*>* kernel = nullptr;
void f() { (void)sizeof(se::TypedKernel<float*>); }
