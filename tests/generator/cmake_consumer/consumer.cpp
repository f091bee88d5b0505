// Uses the header streamexecutor_kernel_header() generated from kernels.cl.
#include <cstdio>
#include <cstring>

#include "kernels.gpu.h"

int main() {
  const streamexecutor::MultiKernelLoaderSpec spec = from_cmake::spec::address_spaces();
  const bool ok = spec.arity() == from_cmake::kernel::AddressSpaces::kArity && spec.opencl_text() != nullptr &&
                  std::strcmp(spec.opencl_text()->kernel_name.c_str(), "address_spaces") == 0;
  std::printf("CMake-generated header: %s\n", ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}
