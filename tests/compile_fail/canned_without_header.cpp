// expect: CannedPopulateRandUniform
// A canned operation compiles only with its library's header (here
// <streamexecutor/rng.hpp>); the core alone names what is missing.
#include <streamexecutor/host.hpp>
namespace se = streamexecutor;
void f(se::Stream<se::host>& stream, se::DeviceMemory<float>* memory) { stream.ThenPopulateRandUniform(memory); }
