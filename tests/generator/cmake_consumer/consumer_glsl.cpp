// Uses the header streamexecutor_kernel_header() generated from a .comp file
// and the SPIR-V file streamexecutor_add_spirv() wrote from it: the two are
// one compile, so the file holds the embedded words.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "shader.gpu.h"

int main() {
  std::ifstream file(SE_SPIRV_FILE, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto& words = SE_SPIRV_WORDS;
  const bool ok =
      bytes.size() == sizeof(words) && std::equal(bytes.begin(), bytes.end(), reinterpret_cast<const char*>(words));
  std::printf("CMake-generated SPIR-V: %s\n", ok ? "the header's words" : "differs from the header's words");
  return ok ? 0 : 1;
}
