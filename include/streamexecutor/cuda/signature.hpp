// The load-time check of a PTX kernel against TypedKernel<Params...>: the
// wrong argument list is an error at GetKernel, with the kernel's name, the
// parameter's index, the declared type and the real one, instead of garbage
// or a crash at the first launch.
//
// What PTX can and cannot tell:
//  - a DeviceMemory<T>* must be a 64-bit parameter (.u64/.b64/.s64); PTX does
//    not distinguish a pointer from a 64-bit integer, so a `long` parameter
//    passes this part of the check;
//  - a scalar's size must equal its .param size (a struct passed by value is
//    `.param .align A .b8 name[SIZE]`), and floating-point PTX types (.f32,
//    .f64) must be declared as floating-point C++ types and vice versa;
//  - for C++ kernels, the mangled entry name adds the C++ types: pointer or
//    not, and the element type (float vs int vs unsigned, struct names).
// SharedDeviceMemory<T> parameters are dynamic shared memory, not PTX
// parameters, so they are skipped.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/itanium.hpp"
#include "streamexecutor/cuda/ptx_parser.hpp"

namespace streamexecutor::cuda_detail {

// The TypedKernel parameters that are kernel parameters on the device.
inline std::vector<const KernelParamInfo*> DeviceParams(std::span<const KernelParamInfo> declared) {
  std::vector<const KernelParamInfo*> out;
  for (const KernelParamInfo& info : declared) {
    if (info.kind != KernelParamKind::kSharedMemory) out.push_back(&info);
  }
  return out;
}

inline std::string DescribePtxParam(const PtxParam& param) {
  if (param.is_array) {
    return ::streamexecutor::detail::Format(".param .align {} {} {}[{}] ({} bytes)", param.align, param.type,
                                            param.name, param.size / (param.element_size ? param.element_size : 1),
                                            param.size);
  }
  return ::streamexecutor::detail::Format(".param {}{} {} ({} bytes)", param.type, param.is_ptr ? " .ptr" : "",
                                          param.name, param.size);
}

// Compares one declared parameter with the C++ type from the mangled name;
// an empty string when they agree.
inline std::string CompareCppType(const KernelParamInfo& info, const CppType& real) {
  const bool wants_pointer = info.kind == KernelParamKind::kDevicePointer;
  if (wants_pointer && real.pointer_depth != 1) return "the kernel takes a non-pointer";
  if (!wants_pointer && real.pointer_depth != 0) return "the kernel takes a pointer";
  const BuiltinType* declared = BuiltinFromSpelling(info.value_type);
  if (real.builtin != 0) {
    const BuiltinType* actual = FindBuiltin(real.builtin);
    if (actual == nullptr || actual->category == 'v') return {};  // void*: any element type
    if (declared == nullptr) return "the element types differ";
    if (declared->category != actual->category || declared->size != actual->size) return "the element types differ";
    return {};
  }
  if (declared != nullptr) return "the element types differ";
  // Class types: compare the unqualified names, since the compiler's spelling
  // of the declared type's scope ("(anonymous namespace)::") differs from
  // the mangled one; a class template by its name alone, since compilers
  // spell its arguments differently ("long int" or "long").
  auto last = [](std::string_view name) {
    name = name.substr(0, name.find('<'));
    const std::size_t colon = name.rfind("::");
    return colon == std::string_view::npos ? name : name.substr(colon + 2);
  };
  std::string_view declared_name = info.value_type;
  for (std::string_view prefix : {"const ", "struct ", "class "}) {
    if (declared_name.substr(0, prefix.size()) == prefix) declared_name.remove_prefix(prefix.size());
  }
  if (last(declared_name) != last(real.class_name)) return "the element types differ";
  return {};
}

inline Status SignatureMismatch(std::string_view where, const PtxEntry& entry, std::size_t index,
                                const KernelParamInfo& info, std::string_view real, std::string_view why) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "GetKernel on {}: kernel '{}' parameter {}: the TypedKernel declares {} but the kernel takes {} "
                   "({})",
                   where, entry.name, index, info.declared_type, real, why);
}

// The entry `kernel_name` of `ptx`, or why there is none (with the entries
// there are, and the mangled name of a C++ kernel of that name).
inline StatusOr<PtxEntry> ReadPtxEntry(std::string_view ptx, std::string_view kernel_name, std::string_view where) {
  StatusOr<std::vector<PtxEntry>> parsed = ParsePtxEntries(ptx);
  if (!parsed.ok()) {
    return MakeError(ErrorCode::kInvalidArgument, "GetKernel on {}: cannot read the parameters of kernel '{}': {}",
                     where, kernel_name, parsed.status().message());
  }
  const std::vector<PtxEntry>& entries = parsed.value();
  for (const PtxEntry& candidate : entries) {
    if (candidate.name == kernel_name) return candidate;
  }
  std::string names, hint;
  for (const PtxEntry& candidate : entries) {
    if (names.size() < 400) names += (names.empty() ? "" : ", ") + candidate.name;
    if (MangledBaseName(candidate.name) == kernel_name) {
      hint = ::streamexecutor::detail::Format(
          " ('{}' is a C++ kernel: use its mangled name '{}', or declare it extern \"C\")", kernel_name,
          candidate.name);
    }
  }
  return MakeError(ErrorCode::kNotFound, "GetKernel on {}: the PTX has no kernel (.entry) named '{}'{}; it has: {}",
                   where, kernel_name, hint, names.empty() ? std::string("no entries at all") : names);
}

// Checks the entry `kernel_name` of `ptx` against the declared parameters.
// `where` names the device for messages ("cuda:0").
inline Status CheckPtxSignature(std::string_view ptx, std::string_view kernel_name,
                                std::span<const KernelParamInfo> declared, std::string_view where) {
  StatusOr<PtxEntry> found = ReadPtxEntry(ptx, kernel_name, where);
  if (!found.ok()) return found.status();
  const PtxEntry* entry = &found.value();

  const std::vector<const KernelParamInfo*> params = DeviceParams(declared);
  if (params.size() != entry->params.size()) {
    std::string real;
    for (const PtxParam& param : entry->params) real += (real.empty() ? "" : ", ") + param.type;
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetKernel on {}: kernel '{}' takes {} parameter(s) ({}) but the TypedKernel declares {} "
                     "(not counting SharedDeviceMemory, which is dynamic shared memory)",
                     where, entry->name, entry->params.size(), real, params.size());
  }

  const std::optional<std::vector<CppType>> cpp = DecodeMangledParams(entry->name);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const KernelParamInfo& info = *params[i];
    const PtxParam& real = entry->params[i];
    const std::string shown = DescribePtxParam(real);
    if (info.kind == KernelParamKind::kDevicePointer) {
      if (real.is_array || real.size != 8 || PtxTypeIsFloat(real.type)) {
        return SignatureMismatch(where, *entry, i, info, shown,
                                 "a DeviceMemory<T>* is a 64-bit device address: .u64, .b64 or .s64");
      }
    } else {
      if (real.size != info.value_size) {
        return SignatureMismatch(
            where, *entry, i, info, shown,
            ::streamexecutor::detail::Format("sizes differ: {} is {} bytes", info.value_type, info.value_size));
      }
      if (const BuiltinType* builtin = BuiltinFromSpelling(info.value_type); builtin != nullptr && !real.is_array) {
        if ((builtin->category == 'f') != PtxTypeIsFloat(real.type)) {
          return SignatureMismatch(where, *entry, i, info, shown,
                                   builtin->category == 'f' ? "floating point declared, integer in the kernel"
                                                            : "integer declared, floating point in the kernel");
        }
      }
      if (real.is_array && real.align > info.value_alignment) {
        return SignatureMismatch(
            where, *entry, i, info, shown,
            ::streamexecutor::detail::Format("the kernel's parameter is aligned to {} bytes, {} only to {}", real.align,
                                             info.value_type, info.value_alignment));
      }
    }
    if (cpp.has_value() && cpp->size() == params.size()) {
      if (std::string why = CompareCppType(info, (*cpp)[i]); !why.empty()) {
        return SignatureMismatch(where, *entry, i, info,
                                 ::streamexecutor::detail::Format("{} = {}", (*cpp)[i].spelling, shown), why);
      }
    }
  }
  return Status();
}

}  // namespace streamexecutor::cuda_detail
