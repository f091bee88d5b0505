// CUDA C++ compiled at run time (a spec's AddCudaSourceInMemory/OnDisk entry):
// NVRTC turns the source into PTX for the device, which then takes the path
// every PTX kernel takes (the signature check against the TypedKernel, the
// module cache, cuModuleGetFunction). NVRTC is opened at run time through the
// canned plugins' one loader, as the driver is: a program that never loads
// CUDA C++ source runs where NVRTC is not installed.
//
// Each executor keeps what it compiled (ModuleCache::compiled). With
// STREAMEXECUTOR_KERNEL_CACHE set to a directory, the PTX is also kept there
// (detail/kernel_cache.hpp), one file per source, options, name,
// architecture and NVRTC version, so that later processes skip the compiler.
#pragma once

#include <nvrtc.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/detail/kernel_cache.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
#include <vector>
#endif

namespace streamexecutor::cuda_detail {

inline constexpr const char* kNvrtcLibraries[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
inline constexpr canned_detail::RunTimeLibrary kNvrtcLibrary{
    "cuda", "NVRTC", kNvrtcLibraries,
    "NVRTC with the CUDA toolkit (cuda-nvrtc-13-0 from NVIDIA's repository; the toolkit's lib64 directory holds "
    "libnvrtc.so.13)"};

#define SE_NVRTC_ENTRY_POINTS(X, A) \
  X(A, nvrtcGetErrorString)         \
  X(A, nvrtcVersion)                \
  X(A, nvrtcGetNumSupportedArchs)   \
  X(A, nvrtcGetSupportedArchs)      \
  X(A, nvrtcCreateProgram)          \
  X(A, nvrtcDestroyProgram)         \
  X(A, nvrtcCompileProgram)         \
  X(A, nvrtcGetPTXSize)             \
  X(A, nvrtcGetPTX)                 \
  X(A, nvrtcGetProgramLogSize)      \
  X(A, nvrtcGetProgramLog)          \
  X(A, nvrtcAddNameExpression)      \
  X(A, nvrtcGetLoweredName)

struct NvrtcApi {
  SE_NVRTC_ENTRY_POINTS(STREAMEXECUTOR_ENTRY_POINT_MEMBER, NvrtcApi)
};
inline constexpr canned_detail::EntryPoint<NvrtcApi> kNvrtcEntryPoints[] = {
    SE_NVRTC_ENTRY_POINTS(STREAMEXECUTOR_LISTED_ENTRY_POINT, NvrtcApi)};
#undef SE_NVRTC_ENTRY_POINTS

// Loaded once per process, one table for every shared library.
STREAMEXECUTOR_EXPORT inline const canned_detail::Loaded<NvrtcApi>& Nvrtc() {
  static const canned_detail::Loaded<NvrtcApi> load = canned_detail::Load(kNvrtcLibrary, kNvrtcEntryPoints);
  return load;
}

// How many times this process ran nvrtcCompileProgram: what the caches save
// is visible to tests without timing anything.
STREAMEXECUTOR_EXPORT inline std::atomic<long>& NvrtcCompilations() {
  static std::atomic<long> count{0};
  return count;
}

struct CompiledSource {
  std::string ptx;
  std::string lowered_name;  // the kernel's name in the PTX (mangled for a C++ kernel)
};

// What identifies one compilation: NVRTC's version, the architecture, the
// options, the name expression and the source itself.
struct SourceKey {
  std::string text;
  std::string architecture;  // "compute_90", or empty where the options name one
};

// The key for `source` with `spec`'s options and name on a device of
// `device`, or why NVRTC cannot compile for it.
STREAMEXECUTOR_DECL StatusOr<SourceKey> SourceKeyFor(const KernelLoaderSpec& spec, const std::string& source,
                                                     CudaComputeCapability device, int ordinal);

// Compiles (or reads from STREAMEXECUTOR_KERNEL_CACHE) `source`.
STREAMEXECUTOR_DECL StatusOr<CompiledSource> CompileCudaSource(const KernelLoaderSpec& spec, const std::string& source,
                                                               const SourceKey& key, int ordinal);

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
namespace nvrtc_detail {

inline std::vector<std::string> SplitOptions(std::string_view options) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < options.size()) {
    while (i < options.size() && (options[i] == ' ' || options[i] == '\t' || options[i] == '\n')) ++i;
    const std::size_t start = i;
    while (i < options.size() && options[i] != ' ' && options[i] != '\t' && options[i] != '\n') ++i;
    if (i > start) out.emplace_back(options.substr(start, i - start));
  }
  return out;
}

inline bool NamesArchitecture(const std::vector<std::string>& options) {
  for (const std::string& option : options) {
    const std::string_view o = option;
    if (o.starts_with("-arch") || o.starts_with("--gpu-architecture")) return true;
  }
  return false;
}

// The caller's source, options or name are wrong: INVALID_ARGUMENT.
inline ErrorCode CodeFor(nvrtcResult result) {
  switch (result) {
    case NVRTC_ERROR_COMPILATION:
    case NVRTC_ERROR_INVALID_OPTION:
    case NVRTC_ERROR_INVALID_INPUT:
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID: return ErrorCode::kInvalidArgument;
    case NVRTC_ERROR_OUT_OF_MEMORY: return ErrorCode::kResourceExhausted;
    default: return ErrorCode::kInternal;
  }
}

inline Status NvrtcError(const NvrtcApi& api, nvrtcResult result, std::string_view call, const KernelLoaderSpec& spec,
                         int ordinal) {
  const char* text = api.nvrtcGetErrorString != nullptr ? api.nvrtcGetErrorString(result) : nullptr;
  return MakeError(CodeFor(result), "{} failed with {} ({}) for the CUDA C++ source of kernel '{}' on cuda:{}", call,
                   text != nullptr ? text : "an unknown NVRTC error", static_cast<int>(result), spec.kernel_name,
                   ordinal);
}

}  // namespace nvrtc_detail

STREAMEXECUTOR_DECL StatusOr<SourceKey> SourceKeyFor(const KernelLoaderSpec& spec, const std::string& source,
                                                     CudaComputeCapability device, int ordinal) {
  const canned_detail::Loaded<NvrtcApi>& nvrtc = Nvrtc();
  if (!nvrtc.status.ok()) {
    return MakeError(nvrtc.status.code(), "GetKernel on cuda:{}: kernel '{}' is CUDA C++ source: {}", ordinal,
                     spec.kernel_name, nvrtc.status.message());
  }
  const NvrtcApi& api = nvrtc.api;
  int major = 0, minor = 0;
  if (const nvrtcResult r = api.nvrtcVersion(&major, &minor); r != NVRTC_SUCCESS) {
    return nvrtc_detail::NvrtcError(api, r, "nvrtcVersion", spec, ordinal);
  }
  SourceKey key;
  if (!nvrtc_detail::NamesArchitecture(nvrtc_detail::SplitOptions(spec.options))) {
    // The newest architecture NVRTC has that the device runs: PTX for an
    // older one runs on a newer device, never the other way round.
    int count = 0;
    if (const nvrtcResult r = api.nvrtcGetNumSupportedArchs(&count); r != NVRTC_SUCCESS) {
      return nvrtc_detail::NvrtcError(api, r, "nvrtcGetNumSupportedArchs", spec, ordinal);
    }
    std::vector<int> architectures(static_cast<std::size_t>(count > 0 ? count : 0));
    if (const nvrtcResult r = api.nvrtcGetSupportedArchs(architectures.data()); r != NVRTC_SUCCESS) {
      return nvrtc_detail::NvrtcError(api, r, "nvrtcGetSupportedArchs", spec, ordinal);
    }
    const int wanted = device.major * 10 + device.minor;
    int best = 0;
    for (const int architecture : architectures) {
      if (architecture <= wanted && architecture > best) best = architecture;
    }
    if (best == 0) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "GetKernel on cuda:{}: kernel '{}' is CUDA C++ source, and NVRTC {}.{} compiles for compute "
                       "capability {}.{} and newer only; this device is {}.{}",
                       ordinal, spec.kernel_name, major, minor, architectures.empty() ? 0 : architectures.front() / 10,
                       architectures.empty() ? 0 : architectures.front() % 10, device.major, device.minor);
    }
    key.architecture = ::streamexecutor::detail::Format("compute_{}", best);
  }
  key.text =
      ::streamexecutor::detail::Format("nvrtc {}.{}\narchitecture {}\noptions {}\nname {}\nsource {}\n{}", major, minor,
                                       key.architecture, spec.options, spec.kernel_name, source.size(), source);
  return key;
}

STREAMEXECUTOR_DECL StatusOr<CompiledSource> CompileCudaSource(const KernelLoaderSpec& spec, const std::string& source,
                                                               const SourceKey& key, int ordinal) {
  // The cache's payload: the lowered name, a newline, the PTX.
  CompiledSource compiled;
  if (std::string payload; detail::ReadKernelCache("nvrtc", key.text, payload)) {
    if (const std::size_t end = payload.find('\n'); end != std::string::npos && end > 0 && end + 1 < payload.size()) {
      compiled.lowered_name = payload.substr(0, end);
      compiled.ptx = payload.substr(end + 1);
      return compiled;
    }
  }

  const NvrtcApi& api = Nvrtc().api;
  const std::string program_name = spec.on_disk() ? spec.filename : spec.kernel_name + ".cu";
  nvrtcProgram program = nullptr;
  if (const nvrtcResult r = api.nvrtcCreateProgram(&program, source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    return nvrtc_detail::NvrtcError(api, r, "nvrtcCreateProgram", spec, ordinal);
  }
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram& program;
    ~Destroy() { api.nvrtcDestroyProgram(&program); }
  } destroy{api, program};
  // The name expression finds the kernel's lowered name whatever its
  // linkage: a template instance, a C++ kernel, an extern "C" one.
  if (const nvrtcResult r = api.nvrtcAddNameExpression(program, spec.kernel_name.c_str()); r != NVRTC_SUCCESS) {
    return nvrtc_detail::NvrtcError(api, r, "nvrtcAddNameExpression", spec, ordinal);
  }
  std::vector<std::string> options = nvrtc_detail::SplitOptions(spec.options);
  if (!key.architecture.empty()) options.push_back("--gpu-architecture=" + key.architecture);
  std::vector<const char*> option_pointers;
  std::string described;
  for (const std::string& option : options) {
    option_pointers.push_back(option.c_str());
    described += (described.empty() ? "" : " ") + option;
  }
  NvrtcCompilations().fetch_add(1, std::memory_order_relaxed);
  const nvrtcResult result =
      api.nvrtcCompileProgram(program, static_cast<int>(option_pointers.size()), option_pointers.data());
  if (result != NVRTC_SUCCESS) {
    std::string log;
    if (std::size_t size = 0; api.nvrtcGetProgramLogSize(program, &size) == NVRTC_SUCCESS && size > 1) {
      log.resize(size);
      if (api.nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) log.clear();
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    const char* text = api.nvrtcGetErrorString(result);
    return MakeError(nvrtc_detail::CodeFor(result),
                     "nvrtcCompileProgram failed with {} ({}) compiling the CUDA C++ source {}of kernel '{}' for "
                     "cuda:{} (options: {}){}{}",
                     text != nullptr ? text : "an unknown NVRTC error", static_cast<int>(result),
                     spec.on_disk() ? "'" + spec.filename + "' " : std::string(), spec.kernel_name, ordinal, described,
                     log.empty() ? "" : "\nNVRTC log:\n", log);
  }
  const char* lowered = nullptr;
  if (const nvrtcResult r = api.nvrtcGetLoweredName(program, spec.kernel_name.c_str(), &lowered);
      r != NVRTC_SUCCESS || lowered == nullptr) {
    return nvrtc_detail::NvrtcError(api, r, "nvrtcGetLoweredName", spec, ordinal);
  }
  compiled.lowered_name = lowered;
  std::size_t size = 0;
  if (const nvrtcResult r = api.nvrtcGetPTXSize(program, &size); r != NVRTC_SUCCESS) {
    return nvrtc_detail::NvrtcError(api, r, "nvrtcGetPTXSize", spec, ordinal);
  }
  compiled.ptx.resize(size);
  if (const nvrtcResult r = api.nvrtcGetPTX(program, compiled.ptx.data()); r != NVRTC_SUCCESS) {
    return nvrtc_detail::NvrtcError(api, r, "nvrtcGetPTX", spec, ordinal);
  }
  while (!compiled.ptx.empty() && compiled.ptx.back() == '\0') compiled.ptx.pop_back();
  if (detail::KernelCacheDirectory() != nullptr) {
    detail::WriteKernelCache("nvrtc", key.text, compiled.lowered_name + "\n" + compiled.ptx);
  }
  return compiled;
}
#endif

}  // namespace streamexecutor::cuda_detail
