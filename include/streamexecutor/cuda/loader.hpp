// Kernel loading for the CUDA backend: picks the spec's cubin, fatbin or PTX
// entry (or compiles its CUDA C++ source to PTX, nvrtc.hpp), checks a PTX kernel's parameter list against the
// TypedKernel (signature.hpp), loads the image once per executor with the JIT logs captured, and checks parameter sizes
// again with cuFuncGetParamInfo where the driver has it (which also covers cubins and fatbins).
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/nvrtc.hpp"
#include "streamexecutor/cuda/signature.hpp"
#include "streamexecutor/cuda/state.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

namespace streamexecutor::cuda_detail {

// Binary images first: they need no JIT and carry exactly what was built;
// then the PTX of the highest compute capability the device has; then CUDA
// C++ source, which NVRTC compiles for the device.
inline const KernelLoaderSpec* ChooseSpec(const MultiKernelLoaderSpec& spec, CudaComputeCapability device,
                                          std::string_view& format) {
  if (spec.cuda_cubin()) {
    format = "cubin";
    return &*spec.cuda_cubin();
  }
  if (spec.cuda_fatbin()) {
    format = "fatbin";
    return &*spec.cuda_fatbin();
  }
  format = "PTX";
  if (const KernelLoaderSpec* ptx = spec.cuda_ptx(device)) return ptx;
  if (spec.cuda_source() == nullptr) return nullptr;
  format = kernel_formats::kCudaSource.name;
  return spec.cuda_source();
}

inline std::string_view SpecKernelName(const MultiKernelLoaderSpec& spec) {
  std::string_view format;
  const KernelLoaderSpec* chosen = ChooseSpec(spec, CudaComputeCapability{1 << 30, 0}, format);
  return chosen ? std::string_view(chosen->kernel_name) : std::string_view("<no CUDA kernel>");
}

inline std::string TrimLog(const char* log) {
  std::string text(log);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) text.pop_back();
  return text;
}

// cuModuleLoadDataEx with the JIT's info and error logs captured.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status LoadModule(const DriverApi& api, int ordinal, std::string_view format,
                                      const KernelLoaderSpec& chosen, const std::string& image,
                                      CUmodule& image_module) {
  constexpr std::size_t kLogBytes = 16 * 1024;
  std::string info_log(kLogBytes, '\0'), error_log(kLogBytes, '\0');
  std::array<CUjit_option, 5> options{CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
  std::array<void*, 5> values{info_log.data(), reinterpret_cast<void*>(kLogBytes), error_log.data(),
                              reinterpret_cast<void*>(kLogBytes), reinterpret_cast<void*>(std::uintptr_t{0})};
  const CUresult r = api.cuModuleLoadDataEx(&image_module, image.c_str(), static_cast<unsigned>(options.size()),
                                            options.data(), values.data());
  if (r == CUDA_SUCCESS) return Status();
  image_module = nullptr;
  const std::string errors = TrimLog(error_log.c_str());
  const std::string info = TrimLog(info_log.c_str());
  return api.Error(r, "cuModuleLoadDataEx", "loading the {} {}for kernel '{}' on cuda:{}{}{}", format,
                   chosen.on_disk() ? "file '" + chosen.filename + "' " : std::string(), chosen.kernel_name, ordinal,
                   errors.empty() ? std::string() : "\nJIT error log:\n" + errors,
                   info.empty() ? std::string() : "\nJIT info log:\n" + info);
}
#else
STREAMEXECUTOR_DECL Status LoadModule(const DriverApi& api, int ordinal, std::string_view format,
                                      const KernelLoaderSpec& chosen, const std::string& image, CUmodule& image_module);
#endif

// Where the driver can say what the loaded function takes, the sizes must
// agree too: this is the only check for cubins and fatbins.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status CheckParamInfo(const DriverApi& api, int ordinal, CUfunction function, std::string_view name,
                                          std::span<const KernelParamInfo> declared) {
  if (api.cuFuncGetParamInfo == nullptr) return Status();
  const std::vector<const KernelParamInfo*> params = DeviceParams(declared);
  std::size_t count = 0;
  for (;; ++count) {
    std::size_t offset = 0, size = 0;
    const CUresult r = api.cuFuncGetParamInfo(function, count, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (r != CUDA_SUCCESS) return api.Error(r, "cuFuncGetParamInfo", "for kernel '{}' on cuda:{}", name, ordinal);
    if (count < params.size()) {
      const KernelParamInfo& info = *params[count];
      const std::size_t expected = info.kind == KernelParamKind::kDevicePointer ? 8 : info.value_size;
      if (size != expected) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "GetKernel on cuda:{}: kernel '{}' parameter {}: the TypedKernel declares {} ({} bytes) but "
                         "the loaded kernel's parameter is {} bytes (cuFuncGetParamInfo)",
                         ordinal, name, count, info.declared_type, expected, size);
      }
    }
    if (count > 4096) break;
  }
  if (count != params.size()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetKernel on cuda:{}: kernel '{}' takes {} parameter(s) but the TypedKernel declares {} (not "
                     "counting SharedDeviceMemory) (cuFuncGetParamInfo)",
                     ordinal, name, count, params.size());
  }
  return Status();
}
#else
STREAMEXECUTOR_DECL Status CheckParamInfo(const DriverApi& api, int ordinal, CUfunction function, std::string_view name,
                                          std::span<const KernelParamInfo> declared);
#endif

// Replaces CUDA C++ `source` with its PTX and `name` with the kernel's
// lowered name: from the executor's cache, else from NVRTC (or its cache on
// disk). NVRTC runs without the cache's lock, so that one executor's slow
// compile holds up no other load; two threads compiling one source agree.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status CompiledPtx(ModuleCache& cache, const KernelLoaderSpec& chosen, int ordinal,
                                       std::string& source, std::string& name) {
  StatusOr<SourceKey> key = SourceKeyFor(chosen, source, cache.capability, ordinal);
  if (!key.ok()) return key.status();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.compiled.find(key.value().text); it != cache.compiled.end()) {
      source = it->second.first;
      name = it->second.second;
      return Status();
    }
  }
  StatusOr<CompiledSource> compiled = CompileCudaSource(chosen, source, key.value(), ordinal);
  if (!compiled.ok()) return compiled.status();
  source = compiled.value().ptx;
  name = compiled.value().lowered_name;
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.compiled.emplace(std::move(key.value().text), std::make_pair(source, name));
  return Status();
}
#else
STREAMEXECUTOR_DECL Status CompiledPtx(ModuleCache& cache, const KernelLoaderSpec& chosen, int ordinal,
                                       std::string& source, std::string& name);
#endif

// Picks the spec's code, runs `read_ptx(ptx, kernel_name, where)` on PTX (the
// signature check, or reading the parameters), loads the module once per
// executor and looks the function up. `format` says which code was loaded.
template <typename ReadPtx>
Status LoadFunction(const DriverApi& api, ModuleCache& cache, int ordinal, const MultiKernelLoaderSpec& spec,
                    ReadPtx&& read_ptx, CUfunction& function, std::string_view& format) {
  const KernelLoaderSpec* chosen = ChooseSpec(spec, cache.capability, format);
  if (chosen == nullptr && spec.cuda_ptx() != nullptr) {
    return MakeError(ErrorCode::kNotFound,
                     "GetKernel on cuda:{}: kernel '{}' has PTX only for newer devices than this one, of compute "
                     "capability {}.{}{}",
                     ordinal, spec.cuda_ptx()->kernel_name, cache.capability.major, cache.capability.minor,
                     spec.DescribeEntries());
  }
  if (chosen == nullptr) {
    return MakeError(ErrorCode::kNotFound,
                     "GetKernel on cuda:{}: the MultiKernelLoaderSpec has no CUDA code (add it with "
                     "AddCudaPtxInMemory/OnDisk, AddCudaCubinInMemory/OnDisk, AddCudaFatbinInMemory or "
                     "AddCudaSourceInMemory/OnDisk){}",
                     ordinal, spec.DescribeEntries());
  }
  StatusOr<std::string> image = chosen->Contents();
  if (!image.ok()) return image.status();
  std::string name = chosen->kernel_name;  // in the image
  const bool from_source = format == kernel_formats::kCudaSource.name;
  if (from_source) {
    STREAMEXECUTOR_RETURN_IF_ERROR(CompiledPtx(cache, *chosen, ordinal, image.value(), name));
    format = "PTX";
  }
  const std::string where = ::streamexecutor::detail::Format("cuda:{}", ordinal);
  if (format == "PTX") STREAMEXECUTOR_RETURN_IF_ERROR(read_ptx(image.value(), name, where));

  CUmodule loaded = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    // Compiled source by its PTX: one file compiled with other options is other code.
    std::string key =
        std::string(format) + (chosen->on_disk() && !from_source ? "\x01" + chosen->filename : "\x02" + image.value());
    if (auto it = cache.modules.find(key); it != cache.modules.end()) {
      loaded = it->second;
    } else {
      STREAMEXECUTOR_RETURN_IF_ERROR(LoadModule(api, ordinal, format, *chosen, image.value(), loaded));
      cache.modules.emplace(std::move(key), loaded);
    }
  }
  if (const CUresult r = api.cuModuleGetFunction(&function, loaded, name.c_str()); r != CUDA_SUCCESS) {
    function = nullptr;
    return api.Error(r, "cuModuleGetFunction", "looking up kernel '{}' in the {} {}on cuda:{}", chosen->kernel_name,
                     format, chosen->on_disk() ? "file '" + chosen->filename + "' " : std::string(), ordinal);
  }
  return Status();
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status LoadKernel(const DriverApi& api, ModuleCache& cache, int ordinal,
                                      const MultiKernelLoaderSpec& spec, std::span<const KernelParamInfo> declared,
                                      CUfunction& function) {
  std::string_view format;
  STREAMEXECUTOR_RETURN_IF_ERROR(LoadFunction(
      api, cache, ordinal, spec,
      [&](std::string_view ptx, std::string_view name, std::string_view where) {
        return CheckPtxSignature(ptx, name, declared, where);
      },
      function, format));
  return CheckParamInfo(api, ordinal, function, SpecKernelName(spec), declared);
}
#else
STREAMEXECUTOR_DECL Status LoadKernel(const DriverApi& api, ModuleCache& cache, int ordinal,
                                      const MultiKernelLoaderSpec& spec, std::span<const KernelParamInfo> declared,
                                      CUfunction& function);
#endif

}  // namespace streamexecutor::cuda_detail
