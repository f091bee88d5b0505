// What the Vulkan backend knows of a shader's interface and of a
// TypedKernel's parameters, reduced to what matching them needs: the layout a
// launch fills (ParamSlot, ShaderLayout), what the module says (Reflected),
// and how C++ and SPIR-V types are named and compared. reflection.hpp does the
// matching; spirv_words.hpp and spirv_module.hpp read the module.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/kernel_args.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/fmt.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

namespace streamexecutor::vulkan_detail {

// Where each declared parameter of a TypedKernel goes in the shader's interface.
struct ParamSlot {
  KernelParamKind kind;
  std::uint32_t binding = 0;      // kDevicePointer: storage-buffer binding in descriptor set 0
  std::uint32_t offset = 0;       // kScalar: byte offset in the push-constant block
  std::uint32_t size = 0;         // kScalar: bytes; kDevicePointer: array stride; kSharedMemory: element bytes
  std::uint32_t constant_id = 0;  // kSharedMemory: the specialization constant sizing the shared array (elements)
};

struct ShaderLayout {
  std::string entry_point;
  std::vector<ParamSlot> params;          // one per declared parameter, in order
  std::uint32_t buffer_count = 0;         // storage-buffer bindings 0..buffer_count-1 of set 0
  std::uint32_t push_constant_bytes = 0;  // size of the push-constant block (0: none)
  // LocalSize literal values (the defaults of the specialization constants where those are used).
  std::array<std::uint32_t, 3> local_size{1, 1, 1};
  std::array<bool, 3> local_size_specialized{false, false, false};  // dimension set by a specialization constant
  std::array<std::uint32_t, 3> local_size_constant_id{0, 0, 0};     // its constant_id
  std::uint32_t static_shared_bytes = 0;  // Workgroup variables of fixed size (best effort; 0 if unknown)
};

// Vulkan guarantees this much push-constant space on every device.
inline constexpr std::uint32_t kGuaranteedPushConstantBytes = 128;

enum class Arith { kUnknown, kSigned, kUnsigned, kChar, kFloat, kBool };

// One element or value type of the shader, reduced to what matching needs.
struct SpirvType {
  Arith kind = Arith::kUnknown;  // of the scalar, or of a vector's or matrix's components
  std::uint32_t size = 0;        // bytes without any layout padding; 0: unknown
  std::uint32_t lanes = 1;       // components of a vector or matrix
  bool composite = false;        // vector, matrix, array or struct: matched by size only
  std::string name;              // GLSL spelling: "uint", "vec4", "struct Particle", "float[4]"
};

// A descriptor the module declares.
struct DescriptorInfo {
  std::uint32_t set = 0;
  std::uint32_t binding = 0;
  std::string_view what;    // "storage buffer", "uniform buffer", ...
  std::string name;         // of the variable, else of its block
  std::uint32_t count = 1;  // elements of a descriptor array (0: runtime-sized)
  // Storage buffers only:
  std::string shape_problem;  // why the block is not one array of elements
  SpirvType element;
  std::uint32_t stride = 0;
};

struct PushMember {
  std::string name;
  SpirvType type;
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
};

// A Workgroup variable. Only an array whose length is a specialization
// constant can stand for a SharedDeviceMemory parameter.
struct SharedArray {
  std::string name;
  bool spec_sized = false;
  std::uint32_t constant_id = 0;
  SpirvType element;        // spec_sized only
  std::uint32_t bytes = 0;  // not spec_sized: the variable's size (0: unknown)
};

// What the module says, copied out of SPIRV-Cross so that its context can go
// before any matching.
struct Reflected {
  std::string entry_point;
  std::vector<DescriptorInfo> descriptors;
  bool has_push_block = false;
  std::string push_block_name;
  std::vector<PushMember> push;
  std::uint32_t push_bytes = 0;
  std::vector<SharedArray> shared;  // spec-sized ones by constant id ascending, then the rest
  std::array<std::uint32_t, 3> local_size{1, 1, 1};
  std::array<bool, 3> local_size_specialized{false, false, false};
  std::array<std::uint32_t, 3> local_size_constant_id{0, 0, 0};
};

// C++ element and scalar types by the names GCC and Clang give them. Anything
// else (structs, enums, std::array) is kUnknown and checked by size only.
constexpr Arith ClassifyCpp(std::string_view name) {
  struct Entry {
    std::string_view name;
    Arith kind;
  };
  constexpr std::array<Entry, 23> kTable{{
      {"float", Arith::kFloat},
      {"double", Arith::kFloat},
      {"_Float16", Arith::kFloat},
      {"__fp16", Arith::kFloat},
      {"char", Arith::kChar},
      {"char8_t", Arith::kChar},
      {"signed char", Arith::kSigned},
      {"unsigned char", Arith::kUnsigned},
      {"short int", Arith::kSigned},
      {"short", Arith::kSigned},
      {"short unsigned int", Arith::kUnsigned},
      {"unsigned short", Arith::kUnsigned},
      {"int", Arith::kSigned},
      {"unsigned int", Arith::kUnsigned},
      {"long int", Arith::kSigned},
      {"long", Arith::kSigned},
      {"long unsigned int", Arith::kUnsigned},
      {"unsigned long", Arith::kUnsigned},
      {"long long int", Arith::kSigned},
      {"long long", Arith::kSigned},
      {"long long unsigned int", Arith::kUnsigned},
      {"unsigned long long", Arith::kUnsigned},
      {"bool", Arith::kBool},
  }};
  // DeviceMemory<const T> names its element "const T" (or "T const").
  if (name.starts_with("const ")) name.remove_prefix(6);
  if (name.ends_with(" const")) name.remove_suffix(6);
  for (const Entry& entry : kTable) {
    if (entry.name == name) return entry.kind;
  }
  return Arith::kUnknown;
}

// "a 4-byte", "an 8-byte".
inline std::string SizedArticle(std::size_t bytes) {
  const std::string digits = ::streamexecutor::detail::Format("{}", bytes);
  const bool an = digits.front() == '8' || digits == "11" || digits == "18";
  return ::streamexecutor::detail::Format("{} {}-byte", an ? "an" : "a", bytes);
}

constexpr std::string_view DescribeArith(Arith kind) {
  switch (kind) {
    case Arith::kSigned: return "signed integer";
    case Arith::kUnsigned: return "unsigned integer";
    case Arith::kChar: return "character";
    case Arith::kFloat: return "floating-point type";
    case Arith::kBool: return "boolean";
    case Arith::kUnknown: break;
  }
  return "type";
}

// GLSL's name of a scalar type, and its vector prefix ("u" for uvec4).
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string GlslScalarName(Arith kind, std::uint32_t bits, bool vector_prefix) {
  switch (kind) {
    case Arith::kBool: return vector_prefix ? "b" : "bool";
    case Arith::kFloat:
      if (bits == 32) return vector_prefix ? "" : "float";
      if (bits == 64) return vector_prefix ? "d" : "double";
      return vector_prefix ? ::streamexecutor::detail::Format("f{}", bits)
                           : ::streamexecutor::detail::Format("float{}_t", bits);
    case Arith::kSigned:
      if (bits == 32) return vector_prefix ? "i" : "int";
      return vector_prefix ? ::streamexecutor::detail::Format("i{}", bits)
                           : ::streamexecutor::detail::Format("int{}_t", bits);
    case Arith::kUnsigned:
      if (bits == 32) return vector_prefix ? "u" : "uint";
      return vector_prefix ? ::streamexecutor::detail::Format("u{}", bits)
                           : ::streamexecutor::detail::Format("uint{}_t", bits);
    case Arith::kChar:
    case Arith::kUnknown: break;
  }
  return "?";
}
#else
STREAMEXECUTOR_DECL std::string GlslScalarName(Arith kind, std::uint32_t bits, bool vector_prefix);
#endif

// A scalar, vector or matrix type, named the GLSL way.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL SpirvType MakeNumeric(Arith kind, std::uint32_t bits, std::uint32_t components,
                                          std::uint32_t columns) {
  SpirvType type;
  type.kind = kind;
  type.lanes = components * columns;
  type.size = kind == Arith::kBool ? 0 : bits / 8 * type.lanes;
  type.composite = type.lanes > 1;
  if (columns > 1) {
    type.name = ::streamexecutor::detail::Format("{}mat{}x{}", GlslScalarName(kind, bits, true), columns, components);
  } else if (components > 1) {
    type.name = ::streamexecutor::detail::Format("{}vec{}", GlslScalarName(kind, bits, true), components);
  } else {
    type.name = GlslScalarName(kind, bits, false);
  }
  return type;
}
#else
STREAMEXECUTOR_DECL SpirvType MakeNumeric(Arith kind, std::uint32_t bits, std::uint32_t components,
                                          std::uint32_t columns);
#endif

// The C++ type to declare for a shader type, for hints; empty where only the
// size can be said.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string SuggestCpp(const SpirvType& type) {
  if (type.kind == Arith::kBool) return "std::uint32_t";
  if (!type.composite) {
    const std::uint32_t bits = type.size * 8;
    switch (type.kind) {
      case Arith::kFloat: return bits == 32 ? "float" : bits == 64 ? "double" : bits == 16 ? "_Float16" : "";
      case Arith::kSigned: return bits == 32 ? "int" : ::streamexecutor::detail::Format("std::int{}_t", bits);
      case Arith::kUnsigned: return ::streamexecutor::detail::Format("std::uint{}_t", bits);
      default: return "";
    }
  }
  if (type.size == 0) return "";
  if (type.kind != Arith::kUnknown && type.lanes > 1) {
    SpirvType component = type;
    component.composite = false;
    component.size = type.size / type.lanes;
    const std::string scalar = SuggestCpp(component);
    return scalar.empty() ? "" : ::streamexecutor::detail::Format("std::array<{}, {}>", scalar, type.lanes);
  }
  return "";
}
#else
STREAMEXECUTOR_DECL std::string SuggestCpp(const SpirvType& type);
#endif

// Empty when `declared` (the C++ element or scalar type of a parameter) can
// stand for `actual`; otherwise why not. Sizes are compared by the callers,
// which know whether a stride or a member size is meant.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string KindMismatch(const KernelParamInfo& declared, const SpirvType& actual) {
  const Arith cpp = ClassifyCpp(declared.value_type);
  if (cpp == Arith::kBool) {
    return "bool has no defined layout in Vulkan buffers or push constants: use std::uint32_t (uint in the shader)";
  }
  if (actual.kind == Arith::kBool)
    return ::streamexecutor::detail::Format("SPIR-V {} has no defined size in memory", actual.name);
  if (cpp == Arith::kUnknown) return {};
  if (actual.composite) {
    std::string_view what = "composite";
    if (actual.name.starts_with("struct ")) what = "struct";
    if (actual.lanes > 1 && actual.kind != Arith::kUnknown) {
      what = actual.name.find("mat") != std::string::npos ? "matrix" : "vector";
    }
    return ::streamexecutor::detail::Format(
        "{} is {} {}, {} is {}", declared.value_type, SizedArticle(declared.value_size), DescribeArith(cpp),
        actual.name,
        actual.size != 0 ? ::streamexecutor::detail::Format("{} {}", SizedArticle(actual.size), what)
                         : ::streamexecutor::detail::Format("a {}", what));
  }
  bool same = cpp == actual.kind;
  if (cpp == Arith::kChar) same = actual.kind == Arith::kSigned || actual.kind == Arith::kUnsigned;  // ABI's sign
  // 16-bit floats travel as raw bits where the compiler has no _Float16.
  if (cpp == Arith::kUnsigned && actual.kind == Arith::kFloat && actual.size == 2) same = true;
  if (same && declared.value_size == actual.size) return {};
  return ::streamexecutor::detail::Format("{} is {} {}, SPIR-V {} {} {}", declared.value_type,
                                          SizedArticle(declared.value_size), DescribeArith(cpp), actual.name,
                                          SizedArticle(actual.size), DescribeArith(actual.kind));
}
#else
STREAMEXECUTOR_DECL std::string KindMismatch(const KernelParamInfo& declared, const SpirvType& actual);
#endif

}  // namespace streamexecutor::vulkan_detail
