// Both generated headers in one consumer translation unit, as consumers build
// it: with strict warnings under g++ and clang++ (tests/strict_warnings/check.py)
// and, as CUDA, under nvcc -std=c++20 -Werror. Run, it checks that every spec
// declares its TypedKernel's arity.
#include <streamexecutor/streamexecutor.hpp>

#include <cstdio>

#include "kernels.cl.h"
#include "kernels.cu.h"

namespace {

template <typename Kernel>
int Mismatch(const streamexecutor::MultiKernelLoaderSpec& spec) {
  return spec.arity() == Kernel::kArity ? 0 : 1;
}

}  // namespace

int main() {
  namespace k = gpucc::kernel;
  namespace s = gpucc::spec;
  const int mismatches = Mismatch<k::Scalars>(s::scalars()) + Mismatch<k::AddressSpaces>(s::address_spaces()) +
                         Mismatch<k::Structs>(s::structs()) + Mismatch<k::Halves>(s::halves()) +
                         Mismatch<k::Widths>(s::widths()) + Mismatch<k::Pointers>(s::pointers()) +
                         Mismatch<k::ByValue>(s::by_value()) + Mismatch<k::Scale<float, 2>>(s::scale<float, 2>()) +
                         Mismatch<k::Fill<gpucc::Particle>>(s::fill<gpucc::Particle>());
  std::printf("generated specs: %d arity mismatch(es)\n", mismatches);
  return mismatches;
}
