// libFuzzer target for the PTX parameter-list parser, the Itanium decoder and
// the signature check (include/streamexecutor/cuda/). Not part of the Meson
// build; see docs/cuda.md ("Fuzzing the PTX parser") for the command:
//
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
//     tests/cuda/fuzz_ptx_parser.cpp -lfmt -o build-cuda/fuzz_ptx_parser
//   build-cuda/fuzz_ptx_parser -max_total_time=300 tests/cuda/fuzz_corpus
//
// The parser headers do not include cuda.h, so no toolkit is needed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streamexecutor/cuda/signature.hpp"

namespace se = streamexecutor;
namespace cd = streamexecutor::cuda_detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  se::StatusOr<std::vector<cd::PtxEntry>> entries = cd::ParsePtxEntries(input);
  if (entries.ok()) {
    for (const cd::PtxEntry& entry : entries.value()) {
      // Every entry name is also fed to the mangled-name decoder, and the
      // check runs against a fixed TypedKernel, as GetKernel would.
      (void)cd::DecodeMangledParams(entry.name);
      constexpr auto& declared = se::detail::kParamInfos<float, se::DeviceMemory<float>*, std::uint32_t>;
      (void)cd::CheckPtxSignature(input, entry.name, declared, "cuda:0");
    }
  } else if (entries.status().message().empty()) {
    __builtin_trap();  // an error must say what is wrong
  }
  // Raw input as a mangled name too: the decoder must reject, not overrun.
  (void)cd::DecodeMangledParams(input);
  (void)cd::MangledBaseName(input);
  return 0;
}
