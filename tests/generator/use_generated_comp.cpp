// The headers generated from GLSL compute shaders in one consumer translation
// unit, compiled with strict warnings under g++ and clang++
// (tests/strict_warnings/check.py): the embedded words, the twins and their
// layout checks must be clean.
#include "bodies.comp.h"
#include "kernels.comp.h"

int main() {
  const streamexecutor::MultiKernelLoaderSpec scalars = gpucc::spec::glsl_scalars();
  const streamexecutor::MultiKernelLoaderSpec bodies = gpucc::spec::bodies();
  const bool ok = scalars.arity() == gpucc::kernel::GlslScalars::kArity &&
                  bodies.arity() == gpucc::kernel::Bodies::kArity && scalars.spirv() != nullptr;
  return ok ? 0 : 1;
}
