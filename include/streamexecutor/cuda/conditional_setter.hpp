// The kernel that drives ThenIf/ThenWhile's conditional nodes
// (conditional_setter.cu): a fatbin the build embeds as
// conditional_setter.inc (in the build tree STREAMEXECUTOR_CUDA_CONDITIONAL_SETTER_INC
// names it; installed, it sits beside this header). Without nvcc at build
// time there is none, and conditionals on CUDA are UNIMPLEMENTED with the reason.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/state.hpp"

#if defined(STREAMEXECUTOR_CUDA_CONDITIONAL_SETTER_INC)
#include STREAMEXECUTOR_CUDA_CONDITIONAL_SETTER_INC
#define STREAMEXECUTOR_CUDA_HAVE_CONDITIONAL_SETTER 1
#elif __has_include(<streamexecutor/cuda/conditional_setter.inc>)
#include <streamexecutor/cuda/conditional_setter.inc>
#define STREAMEXECUTOR_CUDA_HAVE_CONDITIONAL_SETTER 1
#endif

namespace streamexecutor::cuda_detail {

inline constexpr const char* kConditionalSetterName = "se_graph_set_conditional";

// The setter of the executor whose context is current, loaded on first use
// into the executor's module cache (unloaded with its other modules).
inline Status ConditionalSetter(const DriverApi& api, ModuleCache& modules, int ordinal, CUfunction* setter) {
#if !defined(STREAMEXECUTOR_CUDA_HAVE_CONDITIONAL_SETTER)
  (void)api;
  (void)modules;
  (void)setter;
  return MakeError(ErrorCode::kUnimplemented,
                   "ThenIf/ThenWhile on cuda:{}: streamexecutor was built without nvcc, so it has no kernel to set a "
                   "conditional node's value (cuda/conditional_setter.cu)",
                   ordinal);
#else
  const std::lock_guard<std::mutex> lock(modules.mutex);
  const std::string key = "streamexecutor:conditional_setter";
  CUmodule loaded = nullptr;
  try {
    if (auto found = modules.modules.find(key); found != modules.modules.end()) {
      loaded = found->second;
    } else {
      // The driver reads a fatbin through 8-byte words: copy it to such.
      std::vector<std::uint64_t> image((kConditionalSetterFatbin_bytes + 7) / 8);
      char* at = reinterpret_cast<char*>(image.data());
      for (std::string_view chunk : kConditionalSetterFatbin) {
        std::memcpy(at, chunk.data(), chunk.size());
        at += chunk.size();
      }
      if (const CUresult r = api.cuModuleLoadDataEx(&loaded, image.data(), 0, nullptr, nullptr); r != CUDA_SUCCESS) {
        return api.Error(r, "cuModuleLoadDataEx", "loading the kernel behind ThenIf/ThenWhile on cuda:{}", ordinal);
      }
      modules.modules.emplace(key, loaded);
    }
  } catch (...) {
    return MakeError(ErrorCode::kResourceExhausted, "ThenIf/ThenWhile on cuda:{}: out of host memory", ordinal);
  }
  if (const CUresult r = api.cuModuleGetFunction(setter, loaded, kConditionalSetterName); r != CUDA_SUCCESS) {
    return api.Error(r, "cuModuleGetFunction", "for {} on cuda:{}", kConditionalSetterName, ordinal);
  }
  return Status();
#endif
}

}  // namespace streamexecutor::cuda_detail
