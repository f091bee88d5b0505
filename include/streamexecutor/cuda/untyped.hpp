// The parameter list of a CUDA kernel launched with arguments typed at run
// time (core/kernel_args.hpp), read once at load time: from the PTX .entry
// (plus the C++ types of a mangled name), or from cuFuncGetParamInfo for
// cubins and fatbins. Dynamic shared memory is not a kernel parameter.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "streamexecutor/core/kernel_args.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/loader.hpp"
#include "streamexecutor/cuda/signature.hpp"

namespace streamexecutor::cuda_detail {

inline Status ReadPtxParams(std::string_view ptx, std::string_view kernel_name, std::string_view where,
                            std::vector<DeviceParam>& params) {
  StatusOr<PtxEntry> found = ReadPtxEntry(ptx, kernel_name, where);
  if (!found.ok()) return found.status();
  const PtxEntry& entry = found.value();
  const std::optional<std::vector<CppType>> cpp = DecodeMangledParams(entry.name);
  const bool typed = cpp.has_value() && cpp->size() == entry.params.size();
  for (std::size_t i = 0; i < entry.params.size(); ++i) {
    const PtxParam& real = entry.params[i];
    DeviceParam& param = params.emplace_back();
    // PTX has no pointers: any 64-bit integer parameter may carry one.
    const bool wide_integer = !real.is_array && real.size == 8 && !PtxTypeIsFloat(real.type);
    param.takes_memory = wide_integer;
    param.takes_scalar = true;
    param.size = real.size;
    param.type = DescribePtxParam(real);
    if (typed) {  // a C++ kernel: its mangled name says pointer or not, and the element
      const CppType& type = (*cpp)[i];
      param.takes_memory = wide_integer && type.pointer_depth == 1;
      param.takes_scalar = type.pointer_depth == 0;
      if (const BuiltinType* builtin = FindBuiltin(type.builtin); builtin != nullptr && type.pointer_depth == 1) {
        param.element_size = builtin->category == 'v' ? 0 : builtin->size;
      }
      param.type = ::streamexecutor::detail::Format("{} = {}", type.spelling, param.type);
    }
  }
  return Status();
}

// Cubins and fatbins: only the sizes, from the driver where it has them.
inline Status ReadFunctionParams(const DriverApi& api, int ordinal, CUfunction function, std::string_view name,
                                 std::vector<DeviceParam>& params) {
  if (api.cuFuncGetParamInfo == nullptr) {
    return MakeError(ErrorCode::kUnimplemented,
                     "GetUntypedKernel on cuda:{}: kernel '{}' is a cubin or fatbin and this driver has no "
                     "cuFuncGetParamInfo (CUDA 12.4) to read its parameters from; load it from PTX",
                     ordinal, name);
  }
  for (std::size_t index = 0; index <= 4096; ++index) {
    std::size_t offset = 0, size = 0;
    const CUresult r = api.cuFuncGetParamInfo(function, index, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (r != CUDA_SUCCESS) return api.Error(r, "cuFuncGetParamInfo", "for kernel '{}' on cuda:{}", name, ordinal);
    DeviceParam& param = params.emplace_back();
    param.takes_memory = size == 8;
    param.takes_scalar = true;
    param.size = size;
    param.type = ::streamexecutor::detail::Format("a {}-byte parameter (cuFuncGetParamInfo)", size);
  }
  return Status();
}

inline Status LoadUntypedFunction(const DriverApi& api, ModuleCache& cache, int ordinal,
                                  const MultiKernelLoaderSpec& spec, CUfunction& function,
                                  std::vector<DeviceParam>& params) {
  std::string_view format;
  STREAMEXECUTOR_RETURN_IF_ERROR(LoadFunction(
      api, cache, ordinal, spec,
      [&](std::string_view ptx, std::string_view name, std::string_view where) {
        return ReadPtxParams(ptx, name, where, params);
      },
      function, format));
  if (format == "PTX") return Status();
  return ReadFunctionParams(api, ordinal, function, SpecKernelName(spec), params);
}

// The kernel parameter array of a run-time typed launch, on the launching
// stack frame: at most 64 arguments (KernelArgsArray's limit), no allocation.
struct UntypedParams {
  std::array<void*, 64> pointers{};
  std::array<CUdeviceptr, 64> addresses{};
  std::size_t count = 0;
  std::uint64_t shared_bytes = 0;  // shared memory is the launch's dynamic shared bytes, not a parameter

  void Fill(const KernelArgs& args) {
    for (const KernelArg& arg : args.args()) {
      if (arg.kind == KernelParamKind::kSharedMemory) {
        shared_bytes += arg.shared_bytes;
      } else if (count == pointers.size()) [[unlikely]] {
        break;  // unreachable: KernelArgsArray holds at most 64
      } else if (arg.kind == KernelParamKind::kDevicePointer) {
        addresses[count] =
            static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(arg.memory.opaque())) + arg.memory.offset();
        pointers[count] = &addresses[count];
        ++count;
      } else {
        // cuLaunchKernel only reads through these pointers.
        pointers[count++] = const_cast<std::byte*>(args.data() + arg.offset);
      }
    }
  }
};

}  // namespace streamexecutor::cuda_detail
