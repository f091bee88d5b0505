// The load-time check of a SPIR-V compute shader: the module is validated
// (SPIRV-Tools), its interface is read (SPIRV-Cross, plus a small scan of the
// words for what SPIRV-Cross's C API does not show: Workgroup variables and
// LocalSizeId), and a TypedKernel's declared parameters are matched against
// it. The result is the layout a launch fills: which binding, push-constant
// offset or specialization constant each parameter goes to. See docs/vulkan.md
// for the conventions.
#pragma once

#include <spirv-tools/libspirv.h>
#include <spirv_cross/spirv_cross_c.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "streamexecutor/core/kernel_args.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/status.hpp"
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
  const std::string digits = fmt::format("{}", bytes);
  const bool an = digits.front() == '8' || digits == "11" || digits == "18";
  return fmt::format("{} {}-byte", an ? "an" : "a", bytes);
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
      return vector_prefix ? fmt::format("f{}", bits) : fmt::format("float{}_t", bits);
    case Arith::kSigned:
      if (bits == 32) return vector_prefix ? "i" : "int";
      return vector_prefix ? fmt::format("i{}", bits) : fmt::format("int{}_t", bits);
    case Arith::kUnsigned:
      if (bits == 32) return vector_prefix ? "u" : "uint";
      return vector_prefix ? fmt::format("u{}", bits) : fmt::format("uint{}_t", bits);
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
    type.name = fmt::format("{}mat{}x{}", GlslScalarName(kind, bits, true), columns, components);
  } else if (components > 1) {
    type.name = fmt::format("{}vec{}", GlslScalarName(kind, bits, true), components);
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
      case Arith::kSigned: return bits == 32 ? "int" : fmt::format("std::int{}_t", bits);
      case Arith::kUnsigned: return fmt::format("std::uint{}_t", bits);
      default: return "";
    }
  }
  if (type.size == 0) return "";
  if (type.kind != Arith::kUnknown && type.lanes > 1) {
    SpirvType component = type;
    component.composite = false;
    component.size = type.size / type.lanes;
    const std::string scalar = SuggestCpp(component);
    return scalar.empty() ? "" : fmt::format("std::array<{}, {}>", scalar, type.lanes);
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
  if (actual.kind == Arith::kBool) return fmt::format("SPIR-V {} has no defined size in memory", actual.name);
  if (cpp == Arith::kUnknown) return {};
  if (actual.composite) {
    std::string_view what = "composite";
    if (actual.name.starts_with("struct ")) what = "struct";
    if (actual.lanes > 1 && actual.kind != Arith::kUnknown) {
      what = actual.name.find("mat") != std::string::npos ? "matrix" : "vector";
    }
    return fmt::format(
        "{} is {} {}, {} is {}", declared.value_type, SizedArticle(declared.value_size), DescribeArith(cpp),
        actual.name,
        actual.size != 0 ? fmt::format("{} {}", SizedArticle(actual.size), what) : fmt::format("a {}", what));
  }
  bool same = cpp == actual.kind;
  if (cpp == Arith::kChar) same = actual.kind == Arith::kSigned || actual.kind == Arith::kUnsigned;  // ABI's sign
  // 16-bit floats travel as raw bits where the compiler has no _Float16.
  if (cpp == Arith::kUnsigned && actual.kind == Arith::kFloat && actual.size == 2) same = true;
  if (same && declared.value_size == actual.size) return {};
  return fmt::format("{} is {} {}, SPIR-V {} {} {}", declared.value_type, SizedArticle(declared.value_size),
                     DescribeArith(cpp), actual.name, SizedArticle(actual.size), DescribeArith(actual.kind));
}
#else
STREAMEXECUTOR_DECL std::string KindMismatch(const KernelParamInfo& declared, const SpirvType& actual);
#endif

// ---- Reading the words ------------------------------------------------------
// SPIRV-Cross's C API lists no Workgroup variables and (in the versions
// Debian ships) no LocalSizeId, so those few instructions are read here.
// The module has passed validation before this runs; bounds are still checked.

inline constexpr std::uint32_t kSpirvMagic = 0x07230203;

struct SpirvWords {
  std::span<const std::uint32_t> words;
  std::unordered_map<std::uint32_t, std::size_t> defs;  // result id -> first word of its instruction
  std::unordered_map<std::uint32_t, std::uint32_t> spec_ids;
  std::unordered_map<std::uint32_t, std::string> names;
  std::vector<std::uint32_t> workgroup_variables;
  // OpExecutionModeId LocalSizeId operands by entry-point function id.
  std::unordered_map<std::uint32_t, std::array<std::uint32_t, 3>> local_size_ids;
  std::unordered_map<std::string, std::uint32_t> entry_functions;  // GLCompute entry name -> function id

  // The instruction defining `id`: its opcode and operands (word 0 excluded).
  std::uint16_t Opcode(std::uint32_t id) const {
    auto found = defs.find(id);
    return found == defs.end() ? 0 : static_cast<std::uint16_t>(words[found->second] & 0xffff);
  }
  std::span<const std::uint32_t> Operands(std::uint32_t id) const {
    auto found = defs.find(id);
    if (found == defs.end()) return {};
    const std::size_t count = words[found->second] >> 16;
    return words.subspan(found->second + 1, count - 1);
  }
};

inline std::string LiteralString(std::span<const std::uint32_t> operands) {
  std::string text;
  for (std::uint32_t word : operands) {
    for (int byte = 0; byte < 4; ++byte) {
      const char c = static_cast<char>((word >> (8 * byte)) & 0xff);
      if (c == '\0') return text;
      text += c;
    }
  }
  return text;
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL void ScanWords(std::span<const std::uint32_t> words, SpirvWords& out) {
  out.words = words;
  std::size_t at = 5;
  while (at < words.size()) {
    const std::uint32_t count = words[at] >> 16;
    const auto opcode = static_cast<SpvOp>(words[at] & 0xffff);
    if (count == 0 || at + count > words.size()) break;
    const std::span<const std::uint32_t> ops = words.subspan(at + 1, count - 1);
    switch (opcode) {
      case SpvOpName:
        if (!ops.empty()) out.names[ops[0]] = LiteralString(ops.subspan(1));
        break;
      case SpvOpEntryPoint:
        if (ops.size() >= 3 && ops[0] == SpvExecutionModelGLCompute) {
          out.entry_functions[LiteralString(ops.subspan(2))] = ops[1];
        }
        break;
      case SpvOpExecutionModeId:
        if (ops.size() >= 5 && ops[1] == SpvExecutionModeLocalSizeId) {
          out.local_size_ids[ops[0]] = {ops[2], ops[3], ops[4]};
        }
        break;
      case SpvOpDecorate:
        if (ops.size() >= 3 && ops[1] == SpvDecorationSpecId) out.spec_ids[ops[0]] = ops[2];
        break;
      case SpvOpTypeBool:
      case SpvOpTypeInt:
      case SpvOpTypeFloat:
      case SpvOpTypeVector:
      case SpvOpTypeMatrix:
      case SpvOpTypeArray:
      case SpvOpTypeRuntimeArray:
      case SpvOpTypeStruct:
      case SpvOpTypePointer:
        if (!ops.empty()) out.defs[ops[0]] = at;
        break;
      case SpvOpConstant:
      case SpvOpSpecConstant:
      case SpvOpSpecConstantOp:
        if (ops.size() >= 2) out.defs[ops[1]] = at;
        break;
      case SpvOpVariable:
        if (ops.size() >= 3) {
          out.defs[ops[1]] = at;
          if (ops[2] == SpvStorageClassWorkgroup) out.workgroup_variables.push_back(ops[1]);
        }
        break;
      default: break;
    }
    at += count;
  }
}
#else
STREAMEXECUTOR_DECL void ScanWords(std::span<const std::uint32_t> words, SpirvWords& out);
#endif

// A Workgroup type as C lays it out (no layout decorations apply there): the
// size is a best guess of what the device reserves, used only for reporting.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL SpirvType WordsType(const SpirvWords& spirv, std::uint32_t id, int depth = 0) {
  const std::span<const std::uint32_t> ops = spirv.Operands(id);
  if (depth > 16) return SpirvType{Arith::kUnknown, 0, 1, true, "?"};
  switch (spirv.Opcode(id)) {
    case SpvOpTypeBool: return MakeNumeric(Arith::kBool, 32, 1, 1);
    case SpvOpTypeInt:
      if (ops.size() >= 3) return MakeNumeric(ops[2] != 0 ? Arith::kSigned : Arith::kUnsigned, ops[1], 1, 1);
      break;
    case SpvOpTypeFloat:
      if (ops.size() >= 2) return MakeNumeric(Arith::kFloat, ops[1], 1, 1);
      break;
    case SpvOpTypeVector:
      if (ops.size() >= 3) {
        const SpirvType component = WordsType(spirv, ops[1], depth + 1);
        return MakeNumeric(component.kind, component.size * 8, ops[2], 1);
      }
      break;
    case SpvOpTypeMatrix:
      if (ops.size() >= 3) {
        const SpirvType column = WordsType(spirv, ops[1], depth + 1);
        if (column.lanes == 0) break;
        return MakeNumeric(column.kind, column.size / column.lanes * 8, column.lanes, ops[2]);
      }
      break;
    case SpvOpTypeArray:
      if (ops.size() >= 3) {
        SpirvType element = WordsType(spirv, ops[1], depth + 1);
        const std::span<const std::uint32_t> length = spirv.Operands(ops[2]);
        const bool literal = spirv.Opcode(ops[2]) == SpvOpConstant && length.size() >= 3;
        SpirvType array{element.kind, literal ? element.size * length[2] : 0, element.lanes, true,
                        literal ? fmt::format("{}[{}]", element.name, length[2]) : element.name + "[]"};
        return array;
      }
      break;
    case SpvOpTypeStruct: {
      std::uint32_t size = 0, align = 1;
      for (std::size_t i = 1; i < ops.size(); ++i) {
        const SpirvType member = WordsType(spirv, ops[i], depth + 1);
        if (member.size == 0) {
          size = 0;
          break;
        }
        const std::uint32_t member_align = member.lanes == 0 ? 1 : member.size / member.lanes;
        const std::uint32_t a = member_align == 0 ? 1 : std::min<std::uint32_t>(member_align, 8);
        align = std::max(align, a);
        size = (size + a - 1) / a * a + member.size;
      }
      if (size != 0) size = (size + align - 1) / align * align;
      auto name = spirv.names.find(ops.empty() ? 0 : ops[0]);
      return SpirvType{Arith::kUnknown, size, 1, true,
                       fmt::format("struct {}", name == spirv.names.end() ? std::string("?") : name->second)};
    }
    default: break;
  }
  return SpirvType{Arith::kUnknown, 0, 1, true, "?"};
}
#else
STREAMEXECUTOR_DECL SpirvType WordsType(const SpirvWords& spirv, std::uint32_t id, int depth = 0);
#endif

// The Workgroup variables, spec-sized arrays first by constant id.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::vector<SharedArray> ReadShared(const SpirvWords& spirv) {
  std::vector<SharedArray> shared;
  for (std::uint32_t variable : spirv.workgroup_variables) {
    SharedArray array;
    auto name = spirv.names.find(variable);
    array.name = name == spirv.names.end() || name->second.empty() ? fmt::format("%{}", variable) : name->second;
    const std::span<const std::uint32_t> var = spirv.Operands(variable);
    const std::span<const std::uint32_t> pointer = var.empty() ? var : spirv.Operands(var[0]);
    const std::uint32_t pointee = pointer.size() >= 3 ? pointer[2] : 0;
    const std::span<const std::uint32_t> type = spirv.Operands(pointee);
    if (spirv.Opcode(pointee) == SpvOpTypeArray && type.size() >= 3 && spirv.Opcode(type[2]) == SpvOpSpecConstant &&
        spirv.spec_ids.contains(type[2])) {
      array.spec_sized = true;
      array.constant_id = spirv.spec_ids.at(type[2]);
      array.element = WordsType(spirv, type[1]);
    } else {
      array.bytes = WordsType(spirv, pointee).size;
    }
    shared.push_back(std::move(array));
  }
  std::stable_sort(shared.begin(), shared.end(), [](const SharedArray& a, const SharedArray& b) {
    if (a.spec_sized != b.spec_sized) return a.spec_sized;
    return a.spec_sized && a.constant_id < b.constant_id;
  });
  return shared;
}
#else
STREAMEXECUTOR_DECL std::vector<SharedArray> ReadShared(const SpirvWords& spirv);
#endif

// ---- SPIRV-Tools and SPIRV-Cross ----------------------------------------------

// The Vulkan environment that accepts the module's SPIR-V version: Vulkan 1.1
// for SPIR-V up to 1.3, newer ones only where the module needs them.
constexpr spv_target_env ValidationEnv(std::uint32_t version_word) {
  const std::uint32_t minor = (version_word >> 8) & 0xff;
  if ((version_word >> 16) != 1 || minor <= 3) return SPV_ENV_VULKAN_1_1;
  if (minor == 4) return SPV_ENV_VULKAN_1_1_SPIRV_1_4;
  if (minor == 5) return SPV_ENV_VULKAN_1_2;
  return SPV_ENV_VULKAN_1_3;
}

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status ValidateModule(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                          std::string_view label) {
  if (words.size() < 5) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "SPIR-V module for kernel '{}' on {} is {} word(s) long: too short for a SPIR-V header "
                     "(5 words)",
                     kernel_name, label, words.size());
  }
  if (words[0] != kSpirvMagic) {
    const std::uint32_t w = words[0];
    const std::uint32_t swapped = (w >> 24) | ((w >> 8) & 0xff00) | ((w << 8) & 0xff0000) | (w << 24);
    return MakeError(ErrorCode::kInvalidArgument,
                     "SPIR-V module for kernel '{}' on {} does not start with the SPIR-V magic number 0x{:08x} "
                     "(it starts with 0x{:08x}){}",
                     kernel_name, label, kSpirvMagic, words[0],
                     swapped == kSpirvMagic ? ": it is in the other byte order, swap each word first"
                                            : ": it is not SPIR-V, or it was read with the wrong size");
  }
  struct Tools {
    spv_context context = nullptr;
    spv_diagnostic diagnostic = nullptr;
    ~Tools() {
      spvDiagnosticDestroy(diagnostic);
      if (context != nullptr) spvContextDestroy(context);
    }
  } tools;
  tools.context = spvContextCreate(ValidationEnv(words[1]));
  if (tools.context == nullptr) {
    return MakeError(ErrorCode::kInternal, "SPIR-V module for kernel '{}' on {}: spvContextCreate failed", kernel_name,
                     label);
  }
  spv_const_binary_t binary{words.data(), words.size()};
  if (spvValidate(tools.context, &binary, &tools.diagnostic) == SPV_SUCCESS) return Status();
  std::string why = tools.diagnostic != nullptr && tools.diagnostic->error != nullptr
                        ? std::string(tools.diagnostic->error)
                        : std::string("no diagnostic");
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  return MakeError(ErrorCode::kInvalidArgument, "SPIR-V module for kernel '{}' on {} fails validation: {}", kernel_name,
                   label, why);
}
#else
STREAMEXECUTOR_DECL Status ValidateModule(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                          std::string_view label);
#endif

// SPIRV-Cross reports errors through a callback on its context; the context
// owns everything made from it, so destroying it frees all on every path.
struct SpvcSession {
  spvc_context context = nullptr;
  std::string error;
  SpvcSession() = default;
  SpvcSession(const SpvcSession&) = delete;
  SpvcSession& operator=(const SpvcSession&) = delete;
  ~SpvcSession() {
    if (context != nullptr) spvc_context_destroy(context);
  }
  static void OnError(void* userdata, const char* message) {
    std::string& text = *static_cast<std::string*>(userdata);
    if (!text.empty()) text += "; ";
    text += message != nullptr ? message : "unknown error";
  }
};

// A SPIRV-Cross type as matching sees it. `drop_dimensions` leaves out outer
// array dimensions (1 for the elements of a buffer's array).
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL SpirvType CrossType(spvc_compiler compiler, spvc_type type, unsigned drop_dimensions) {
  SpirvType result;
  const unsigned bits = spvc_type_get_bit_width(type);
  Arith kind = Arith::kUnknown;
  switch (spvc_type_get_basetype(type)) {
    case SPVC_BASETYPE_BOOLEAN: kind = Arith::kBool; break;
    case SPVC_BASETYPE_INT8:
    case SPVC_BASETYPE_INT16:
    case SPVC_BASETYPE_INT32:
    case SPVC_BASETYPE_INT64: kind = Arith::kSigned; break;
    case SPVC_BASETYPE_UINT8:
    case SPVC_BASETYPE_UINT16:
    case SPVC_BASETYPE_UINT32:
    case SPVC_BASETYPE_UINT64: kind = Arith::kUnsigned; break;
    case SPVC_BASETYPE_FP16:
    case SPVC_BASETYPE_FP32:
    case SPVC_BASETYPE_FP64: kind = Arith::kFloat; break;
    case SPVC_BASETYPE_STRUCT: {
      const char* name = spvc_compiler_get_name(compiler, spvc_type_get_base_type_id(type));
      size_t size = 0;
      if (spvc_compiler_get_declared_struct_size(compiler, type, &size) != SPVC_SUCCESS) size = 0;
      result = SpirvType{Arith::kUnknown, static_cast<std::uint32_t>(size), 1, true,
                         fmt::format("struct {}", name != nullptr && *name != '\0' ? name : "?")};
      break;
    }
    default: result = SpirvType{Arith::kUnknown, 0, 1, true, "an opaque type"}; break;
  }
  if (kind != Arith::kUnknown) {
    result = MakeNumeric(kind, bits, spvc_type_get_vector_size(type), spvc_type_get_columns(type));
  }
  const unsigned dimensions = spvc_type_get_num_array_dimensions(type);
  // SPIRV-Cross stores the outermost dimension last; GLSL writes it first.
  std::string suffix;
  for (unsigned d = 0; d + drop_dimensions < dimensions; ++d) {
    const bool literal = spvc_type_array_dimension_is_literal(type, d) != SPVC_FALSE;
    const SpvId length = literal ? spvc_type_get_array_dimension(type, d) : 0;  // else a constant's id
    suffix = (length == 0 ? std::string("[]") : fmt::format("[{}]", length)) + suffix;
    result.size *= length;
    result.composite = true;
  }
  result.name += suffix;
  return result;
}
#else
STREAMEXECUTOR_DECL SpirvType CrossType(spvc_compiler compiler, spvc_type type, unsigned drop_dimensions);
#endif

// What a storage buffer's block holds: one array of elements, or why not.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL void ReadBufferBlock(spvc_compiler compiler, spvc_type_id block_id, DescriptorInfo& info) {
  const spvc_type block = spvc_compiler_get_type_handle(compiler, block_id);
  const unsigned members = spvc_type_get_num_member_types(block);
  if (members != 1) {
    info.shape_problem = fmt::format("its block has {} members, not one array", members);
    return;
  }
  const spvc_type member = spvc_compiler_get_type_handle(compiler, spvc_type_get_member_type(block, 0));
  const unsigned dimensions = spvc_type_get_num_array_dimensions(member);
  if (dimensions == 0) {
    info.shape_problem =
        fmt::format("its block's member is a single {}, not an array", CrossType(compiler, member, 0).name);
    return;
  }
  info.element = CrossType(compiler, member, 1);
  // The stride, not the element's size, is what a C++ array must match: a
  // vec3 takes 16 bytes of a std430 array.
  unsigned stride = 0;
  if (spvc_compiler_type_struct_member_array_stride(compiler, block, 0, &stride) != SPVC_SUCCESS) stride = 0;
  info.stride = stride;
}
#else
STREAMEXECUTOR_DECL void ReadBufferBlock(spvc_compiler compiler, spvc_type_id block_id, DescriptorInfo& info);
#endif

// Validates the module and copies out what the checks need.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status Reflect(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                   std::string_view label, Reflected& out) {
  STREAMEXECUTOR_RETURN_IF_ERROR(ValidateModule(words, kernel_name, label));
  SpvcSession session;
  auto failed = [&](std::string_view what) {
    return MakeError(ErrorCode::kInvalidArgument, "SPIR-V module for kernel '{}' on {}: SPIRV-Cross cannot {}: {}",
                     kernel_name, label, what, session.error.empty() ? std::string("no message") : session.error);
  };
  if (spvc_context_create(&session.context) != SPVC_SUCCESS) {
    session.context = nullptr;
    return MakeError(ErrorCode::kInternal, "SPIR-V module for kernel '{}' on {}: spvc_context_create failed",
                     kernel_name, label);
  }
  spvc_context_set_error_callback(session.context, &SpvcSession::OnError, &session.error);
  spvc_parsed_ir ir = nullptr;
  if (spvc_context_parse_spirv(session.context, words.data(), words.size(), &ir) != SPVC_SUCCESS) {
    return failed("parse it");
  }
  spvc_compiler compiler = nullptr;
  if (spvc_context_create_compiler(session.context, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP,
                                   &compiler) != SPVC_SUCCESS) {
    return failed("reflect it");
  }

  const spvc_entry_point* entries = nullptr;
  size_t entry_count = 0;
  if (spvc_compiler_get_entry_points(compiler, &entries, &entry_count) != SPVC_SUCCESS) {
    return failed("list its entry points");
  }
  std::string compute_names, other_names;
  bool found = false;
  for (size_t i = 0; i < entry_count; ++i) {
    const std::string_view name = entries[i].name != nullptr ? entries[i].name : "";
    const bool compute = entries[i].execution_model == SpvExecutionModelGLCompute;
    std::string& list = compute ? compute_names : other_names;
    list += fmt::format("{}'{}'", list.empty() ? "" : ", ", name);
    found = found || (compute && name == kernel_name);
  }
  if (!found) {
    return MakeError(ErrorCode::kNotFound, "GetKernel on {}: the SPIR-V module has no compute entry point '{}'; {}{}",
                     label, kernel_name,
                     compute_names.empty() ? std::string("it has none")
                                           : fmt::format("its compute entry points are {}", compute_names),
                     other_names.empty() ? std::string() : fmt::format(" (other stages: {})", other_names));
  }
  const std::string entry(kernel_name);
  if (spvc_compiler_set_entry_point(compiler, entry.c_str(), SpvExecutionModelGLCompute) != SPVC_SUCCESS) {
    return failed("select the entry point");
  }
  out.entry_point = entry;

  spvc_resources resources = nullptr;
  if (spvc_compiler_create_shader_resources(compiler, &resources) != SPVC_SUCCESS) {
    return failed("list its resources");
  }
  struct Kind {
    spvc_resource_type type;
    std::string_view what;
  };
  static constexpr std::array<Kind, 10> kDescriptorKinds{{
      {SPVC_RESOURCE_TYPE_STORAGE_BUFFER, "storage buffer"},
      {SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, "uniform buffer"},
      {SPVC_RESOURCE_TYPE_STORAGE_IMAGE, "storage image"},
      {SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, "combined image sampler"},
      {SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, "sampled image"},
      {SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS, "sampler"},
      {SPVC_RESOURCE_TYPE_ATOMIC_COUNTER, "atomic counter"},
      {SPVC_RESOURCE_TYPE_SUBPASS_INPUT, "subpass input"},
      {SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE, "acceleration structure"},
      {SPVC_RESOURCE_TYPE_SHADER_RECORD_BUFFER, "shader record buffer"},
  }};
  for (const Kind& kind : kDescriptorKinds) {
    const spvc_reflected_resource* list = nullptr;
    size_t count = 0;
    if (spvc_resources_get_resource_list_for_type(resources, kind.type, &list, &count) != SPVC_SUCCESS) {
      return failed("list its descriptors");
    }
    for (size_t i = 0; i < count; ++i) {
      DescriptorInfo info;
      info.what = kind.what;
      info.set = spvc_compiler_get_decoration(compiler, list[i].id, SpvDecorationDescriptorSet);
      info.binding = spvc_compiler_get_decoration(compiler, list[i].id, SpvDecorationBinding);
      const char* name = list[i].name;
      if (name == nullptr || *name == '\0') name = spvc_compiler_get_name(compiler, list[i].base_type_id);
      info.name = name != nullptr ? name : "";
      const spvc_type variable_type = spvc_compiler_get_type_handle(compiler, list[i].type_id);
      if (const unsigned dimensions = spvc_type_get_num_array_dimensions(variable_type); dimensions > 0) {
        const bool literal = spvc_type_array_dimension_is_literal(variable_type, dimensions - 1) != SPVC_FALSE;
        info.count = literal ? spvc_type_get_array_dimension(variable_type, dimensions - 1) : 0;
      }
      if (kind.type == SPVC_RESOURCE_TYPE_STORAGE_BUFFER) ReadBufferBlock(compiler, list[i].base_type_id, info);
      out.descriptors.push_back(std::move(info));
    }
  }
  std::sort(out.descriptors.begin(), out.descriptors.end(), [](const DescriptorInfo& a, const DescriptorInfo& b) {
    return a.set != b.set ? a.set < b.set : a.binding < b.binding;
  });

  const spvc_reflected_resource* push = nullptr;
  size_t push_count = 0;
  if (spvc_resources_get_resource_list_for_type(resources, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &push, &push_count) !=
      SPVC_SUCCESS) {
    return failed("list its push constants");
  }
  if (push_count > 0) {  // validation allows one block per entry point
    out.has_push_block = true;
    const char* name = spvc_compiler_get_name(compiler, push[0].base_type_id);
    out.push_block_name = name != nullptr ? name : "";
    const spvc_type block = spvc_compiler_get_type_handle(compiler, push[0].base_type_id);
    size_t bytes = 0;
    if (spvc_compiler_get_declared_struct_size(compiler, block, &bytes) != SPVC_SUCCESS) {
      return failed("size its push-constant block");
    }
    out.push_bytes = static_cast<std::uint32_t>(bytes);
    const unsigned members = spvc_type_get_num_member_types(block);
    for (unsigned i = 0; i < members; ++i) {
      PushMember member;
      const char* member_name = spvc_compiler_get_member_name(compiler, push[0].base_type_id, i);
      member.name = member_name != nullptr ? member_name : "";
      member.type =
          CrossType(compiler, spvc_compiler_get_type_handle(compiler, spvc_type_get_member_type(block, i)), 0);
      unsigned offset = 0;
      size_t size = 0;
      if (spvc_compiler_type_struct_member_offset(compiler, block, i, &offset) != SPVC_SUCCESS ||
          spvc_compiler_get_declared_struct_member_size(compiler, block, i, &size) != SPVC_SUCCESS) {
        return failed("lay out its push-constant block");
      }
      member.offset = offset;
      member.size = static_cast<std::uint32_t>(size);
      out.push.push_back(std::move(member));
    }
  }

  SpirvWords spirv;
  ScanWords(words, spirv);
  out.shared = ReadShared(spirv);

  // gl_WorkGroupSize built from specialization constants overrides LocalSize;
  // LocalSizeId (SPIR-V 1.6 from glslang) names the constants directly.
  spvc_specialization_constant size_constants[3] = {};
  spvc_compiler_get_work_group_size_specialization_constants(compiler, &size_constants[0], &size_constants[1],
                                                             &size_constants[2]);
  const auto local_size_id = spirv.local_size_ids.find(spirv.entry_functions[entry]);
  for (unsigned i = 0; i < 3; ++i) {
    out.local_size[i] = spvc_compiler_get_execution_mode_argument_by_index(compiler, SpvExecutionModeLocalSize, i);
    const spvc_constant_id id = size_constants[i].id;
    if (id != 0 && spvc_compiler_has_decoration(compiler, id, SpvDecorationSpecId)) {
      out.local_size_specialized[i] = true;
      out.local_size_constant_id[i] = size_constants[i].constant_id;
      out.local_size[i] = spvc_constant_get_scalar_u32(spvc_compiler_get_constant_handle(compiler, id), 0, 0);
    } else if (local_size_id != spirv.local_size_ids.end()) {
      const std::uint32_t operand = local_size_id->second[i];
      const std::span<const std::uint32_t> constant = spirv.Operands(operand);
      if (constant.size() >= 3) out.local_size[i] = constant[2];
      if (spirv.Opcode(operand) == SpvOpSpecConstant && spirv.spec_ids.contains(operand)) {
        out.local_size_specialized[i] = true;
        out.local_size_constant_id[i] = spirv.spec_ids.at(operand);
      }
    }
    if (out.local_size[i] == 0) out.local_size[i] = 1;
  }
  return Status();
}
#else
STREAMEXECUTOR_DECL Status Reflect(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                   std::string_view label, Reflected& out);
#endif

// ---- Checks and the layout ----------------------------------------------------

// "binding 1 of set 0 ('Y')" and "a storage buffer of float (stride 4)".
inline std::string DescriptorName(const DescriptorInfo& info) {
  return fmt::format("binding {} of set {}{}", info.binding, info.set,
                     info.name.empty() ? std::string() : fmt::format(" ('{}')", info.name));
}
inline std::string DescriptorKind(const DescriptorInfo& info) {
  std::string text;
  if (info.count != 1) {
    text += info.count == 0 ? "a runtime-sized array of " : fmt::format("an array of {} ", info.count);
  } else {
    text += "a ";
  }
  text += info.what;
  if (info.what == "storage buffer" && info.shape_problem.empty()) {
    text += fmt::format(" of {} (stride {})", info.element.name, info.stride);
  }
  return text;
}
inline std::string DescribeDescriptor(const DescriptorInfo& info) {
  return fmt::format("{} is {}", DescriptorName(info), DescriptorKind(info));
}

// "bindings 0 to 2", "binding 0", "no binding".
inline std::string BindingRange(std::uint32_t count) {
  if (count == 0) return "no binding";
  if (count == 1) return "binding 0";
  return fmt::format("bindings 0 to {}", count - 1);
}

inline std::string DescribePush(const PushMember& member) {
  return fmt::format("{} {} (offset {}, {} bytes)", member.type.name, member.name, member.offset, member.size);
}

// Checks of the module alone, whatever the parameters: every descriptor is a
// storage buffer of one array in set 0, and the push constants fit.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status CheckInterface(const Reflected& reflected, std::string_view label) {
  const std::string_view kernel = reflected.entry_point;
  for (const DescriptorInfo& info : reflected.descriptors) {
    if (info.set != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: kernel '{}': {}: kernels take their buffers in descriptor set 0 only", label,
                       kernel, DescribeDescriptor(info));
    }
    if (info.what != "storage buffer" || info.count != 1) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: kernel '{}': {}: kernels take single storage buffers only (GLSL: "
                       "layout(set = 0, binding = N) buffer Name {{ T data[]; }};)",
                       label, kernel, DescribeDescriptor(info));
    }
    if (!info.shape_problem.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: kernel '{}': {}: {} (a DeviceMemory<T> parameter is a block holding one "
                       "array of T)",
                       label, kernel, DescribeDescriptor(info), info.shape_problem);
    }
  }
  if (reflected.push_bytes > kGuaranteedPushConstantBytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetKernel on {}: kernel '{}': push constants over {} bytes: its push-constant block is {} bytes, "
                     "more than Vulkan guarantees; pass large values in a buffer",
                     label, kernel, kGuaranteedPushConstantBytes, reflected.push_bytes);
  }
  return Status();
}
#else
STREAMEXECUTOR_DECL Status CheckInterface(const Reflected& reflected, std::string_view label);
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL void FillLayout(const Reflected& reflected, ShaderLayout& layout) {
  layout.entry_point = reflected.entry_point;
  layout.buffer_count = 0;
  for (const DescriptorInfo& info : reflected.descriptors) {
    if (info.set == 0) layout.buffer_count = std::max(layout.buffer_count, info.binding + 1);
  }
  // Push-constant ranges and updates are whole words in Vulkan; a block that
  // ends in a narrow member (int16_t, uint8_t) is padded to the next one.
  layout.push_constant_bytes = (reflected.push_bytes + 3u) / 4u * 4u;
  layout.local_size = reflected.local_size;
  layout.local_size_specialized = reflected.local_size_specialized;
  layout.local_size_constant_id = reflected.local_size_constant_id;
  layout.static_shared_bytes = 0;
  for (const SharedArray& array : reflected.shared) {
    if (array.spec_sized) continue;
    if (array.bytes == 0) {
      layout.static_shared_bytes = 0;
      break;
    }
    layout.static_shared_bytes += array.bytes;
  }
}
#else
STREAMEXECUTOR_DECL void FillLayout(const Reflected& reflected, ShaderLayout& layout);
#endif

// Reads the module's interface: everything but the parameters. Fails where the
// module breaks a convention whatever the parameters (see CheckInterface), or
// where its storage-buffer bindings are not 0, 1, 2, ...
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status ReflectShader(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                         std::string_view label, ShaderLayout& layout) {
  Reflected reflected;
  STREAMEXECUTOR_RETURN_IF_ERROR(Reflect(words, kernel_name, label, reflected));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckInterface(reflected, label));
  for (std::size_t i = 0; i < reflected.descriptors.size(); ++i) {
    if (reflected.descriptors[i].binding != i) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: kernel '{}' has no binding {} in set 0 but has binding {}: storage buffers "
                       "are bound at 0, 1, 2, ... in the order of the DeviceMemory parameters",
                       label, kernel_name, i, reflected.descriptors[i].binding);
    }
  }
  FillLayout(reflected, layout);
  layout.params.clear();
  return Status();
}
#else
STREAMEXECUTOR_DECL Status ReflectShader(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                         std::string_view label, ShaderLayout& layout);
#endif

inline Status ParamMismatch(std::string_view label, std::string_view kernel, std::size_t index,
                            const KernelParamInfo& param, std::string_view actual, std::string_view why,
                            std::string_view suggestion) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "GetKernel on {}: kernel '{}' parameter {}: the TypedKernel declares {} but {}{}{}{}{}", label,
                   kernel, index + 1, param.declared_type, actual, why.empty() ? "" : " (", why, why.empty() ? "" : ")",
                   suggestion.empty() ? std::string() : fmt::format("; declare it as {}", suggestion));
}

// Reflects the module and matches it against the declared parameters, filling
// layout.params with one slot per parameter.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status CheckSignature(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                          std::string_view label, std::span<const KernelParamInfo> signature,
                                          ShaderLayout& layout) {
  Reflected reflected;
  STREAMEXECUTOR_RETURN_IF_ERROR(Reflect(words, kernel_name, label, reflected));
  const std::string_view kernel = reflected.entry_point;
  // Sets other than 0 first: a buffer there is no parameter's, whatever its binding.
  for (const DescriptorInfo& info : reflected.descriptors) {
    if (info.set != 0) return CheckInterface(reflected, label);
  }
  std::vector<ParamSlot> slots(signature.size());
  std::uint32_t buffers = 0, scalars = 0, shared = 0;
  std::string declared_scalars;
  for (const KernelParamInfo& param : signature) {
    if (param.kind == KernelParamKind::kScalar) {
      declared_scalars += fmt::format("{}{}", declared_scalars.empty() ? "" : ", ", param.declared_type);
    }
  }
  std::vector<SharedArray> spec_arrays;
  for (const SharedArray& array : reflected.shared) {
    if (array.spec_sized) spec_arrays.push_back(array);
  }
  std::string push_members;
  for (const PushMember& member : reflected.push) {
    push_members += fmt::format("{}{}", push_members.empty() ? "" : ", ", DescribePush(member));
  }
  // Bindings either count the DeviceMemory parameters (0, 1, 2, ...) or are
  // their positions in the whole parameter list (the form an untyped load
  // needs: ReadParams). The shader's own bindings say which.
  std::vector<std::uint32_t> positions, bindings_used;
  for (std::size_t i = 0; i < signature.size(); ++i) {
    if (signature[i].kind == KernelParamKind::kDevicePointer) positions.push_back(static_cast<std::uint32_t>(i));
  }
  for (const DescriptorInfo& info : reflected.descriptors) bindings_used.push_back(info.binding);
  std::sort(bindings_used.begin(), bindings_used.end());
  bindings_used.erase(std::unique(bindings_used.begin(), bindings_used.end()), bindings_used.end());
  const bool positional = !positions.empty() && bindings_used == positions;

  for (std::size_t i = 0; i < signature.size(); ++i) {
    const KernelParamInfo& param = signature[i];
    ParamSlot& slot = slots[i];
    slot.kind = param.kind;
    switch (param.kind) {
      case KernelParamKind::kDevicePointer: {
        const std::uint32_t binding = positional ? static_cast<std::uint32_t>(i) : buffers;
        ++buffers;
        slot.binding = binding;
        auto found = std::find_if(reflected.descriptors.begin(), reflected.descriptors.end(),
                                  [&](const DescriptorInfo& info) { return info.binding == binding; });
        if (found == reflected.descriptors.end()) {
          std::string bindings;
          for (const DescriptorInfo& info : reflected.descriptors) {
            bindings += fmt::format("{}{}", bindings.empty() ? "" : ", ", info.binding);
          }
          return ParamMismatch(
              label, kernel, i, param,
              fmt::format("the shader has no binding {} in set 0 for it (DeviceMemory parameter {} of the "
                          "TypedKernel; the shader's bindings: {}; bindings are either 0, 1, 2, ... in the order "
                          "of the DeviceMemory parameters, or each one's position in the parameter list)",
                          binding, buffers, bindings.empty() ? std::string("none") : bindings),
              "", "");
        }
        const DescriptorInfo& info = *found;
        if (info.what != "storage buffer" || info.count != 1 || !info.shape_problem.empty()) {
          return ParamMismatch(
              label, kernel, i, param, fmt::format("the shader's {}", DescribeDescriptor(info)),
              info.shape_problem.empty() ? "DeviceMemory<T> parameters are single storage buffers" : info.shape_problem,
              "");
        }
        slot.size = info.stride;
        // A named type only where its size is the stride (a vec3 array's is not).
        const std::string element = info.element.size == info.stride ? SuggestCpp(info.element) : std::string();
        const std::string suggestion =
            element.empty()
                ? fmt::format("streamexecutor::DeviceMemory<T>* with sizeof(T) == {} (the array stride)", info.stride)
                : fmt::format("streamexecutor::DeviceMemory<{}>*", element);
        std::string why = KindMismatch(param, info.element);
        if (why.empty() && info.stride != param.value_size) {
          why = fmt::format("{} is {} bytes, the buffer's elements are {} bytes apart", param.value_type,
                            param.value_size, info.stride);
        }
        if (!why.empty()) {
          return ParamMismatch(label, kernel, i, param, fmt::format("the shader's {}", DescribeDescriptor(info)), why,
                               suggestion);
        }
        break;
      }
      case KernelParamKind::kScalar: {
        const std::uint32_t index = scalars++;
        if (index >= reflected.push.size()) {
          return ParamMismatch(
              label, kernel, i, param,
              fmt::format("the shader has {} push constant(s) ({}) for the TypedKernel's {} scalar "
                          "parameter(s) ({})",
                          reflected.push.size(), push_members.empty() ? "no block" : push_members,
                          std::count_if(signature.begin(), signature.end(),
                                        [](const KernelParamInfo& p) { return p.kind == KernelParamKind::kScalar; }),
                          declared_scalars),
              "scalar parameters are the members of the push-constant block, in order", "");
        }
        const PushMember& member = reflected.push[index];
        slot.offset = member.offset;
        slot.size = member.size;
        std::string why = KindMismatch(param, member.type);
        if (why.empty() && member.size != param.value_size) {
          why = fmt::format("{} is {} bytes, the member {}", param.value_type, param.value_size, member.size);
        }
        if (!why.empty()) {
          return ParamMismatch(label, kernel, i, param,
                               fmt::format("push constant {} of the shader is {}", index + 1, DescribePush(member)),
                               why, [&] {
                                 const std::string cpp = SuggestCpp(member.type);
                                 return cpp.empty() ? fmt::format("a type T with sizeof(T) == {}", member.size) : cpp;
                               }());
        }
        break;
      }
      case KernelParamKind::kSharedMemory: {
        const std::uint32_t index = shared++;
        if (index >= spec_arrays.size()) {
          std::string fixed;
          for (const SharedArray& array : reflected.shared) {
            if (!array.spec_sized) fixed += fmt::format("{}{}", fixed.empty() ? "" : ", ", array.name);
          }
          return ParamMismatch(
              label, kernel, i, param,
              fmt::format("the shader has {} shared array(s) sized by a specialization constant for it{}",
                          spec_arrays.size(),
                          fixed.empty() ? std::string() : fmt::format(" (fixed-size shared variables: {})", fixed)),
              "a SharedDeviceMemory<T> parameter is a shared array whose length is a specialization constant, "
              "e.g. layout(constant_id = 0) const uint kCount = 1; shared T data[kCount];",
              "");
        }
        const SharedArray& array = spec_arrays[index];
        if (index > 0 && spec_arrays[index - 1].constant_id == array.constant_id) {
          return ParamMismatch(label, kernel, i, param,
                               fmt::format("the shader's shared arrays '{}' and '{}' are both sized by constant_id {}",
                                           spec_arrays[index - 1].name, array.name, array.constant_id),
                               "each SharedDeviceMemory parameter needs a constant of its own", "");
        }
        slot.constant_id = array.constant_id;
        slot.size = array.element.size;
        std::string why = KindMismatch(param, array.element);
        if (why.empty() && array.element.size != 0 && array.element.size != param.value_size) {
          why = fmt::format("{} is {} bytes, {} {}", param.value_type, param.value_size, array.element.name,
                            array.element.size);
        }
        if (!why.empty()) {
          return ParamMismatch(label, kernel, i, param,
                               fmt::format("the shader's shared array '{}' (sized by constant_id {}) holds {}",
                                           array.name, array.constant_id, array.element.name),
                               why, [&] {
                                 const std::string cpp = SuggestCpp(array.element);
                                 return cpp.empty() ? std::string()
                                                    : fmt::format("streamexecutor::SharedDeviceMemory<{}>", cpp);
                               }());
        }
        if (slot.size == 0) slot.size = static_cast<std::uint32_t>(param.value_size);
        break;
      }
    }
  }
  for (const DescriptorInfo& info : reflected.descriptors) {
    if (!positional && info.binding >= buffers) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: kernel '{}': the shader's {}, {}, has no parameter: the TypedKernel declares "
                       "{} DeviceMemory parameter(s), for {} of set 0",
                       label, kernel, DescriptorName(info), DescriptorKind(info), buffers, BindingRange(buffers));
    }
  }
  if (scalars < reflected.push.size()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetKernel on {}: kernel '{}': push constant {} of the shader, {}, has no parameter: the "
                     "TypedKernel declares {} scalar parameter(s) ({}) for the shader's {} ({})",
                     label, kernel, scalars + 1, DescribePush(reflected.push[scalars]), scalars,
                     declared_scalars.empty() ? std::string("none") : declared_scalars, reflected.push.size(),
                     push_members);
  }
  if (shared < spec_arrays.size()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetKernel on {}: kernel '{}': the shader's shared array '{}' is sized by specialization "
                     "constant {} but has no parameter: the TypedKernel declares {} SharedDeviceMemory parameter(s)",
                     label, kernel, spec_arrays[shared].name, spec_arrays[shared].constant_id, shared);
  }
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckInterface(reflected, label));
  FillLayout(reflected, layout);
  layout.params = std::move(slots);
  return Status();
}
#else
STREAMEXECUTOR_DECL Status CheckSignature(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                          std::string_view label, std::span<const KernelParamInfo> signature,
                                          ShaderLayout& layout);
#endif

// The parameter list of an untyped load (GetUntypedKernel), read from the
// module alone. A module does not say how buffers and push constants
// interleave in a C-style parameter list, so the untyped form asks the shader
// to say it: each storage buffer is bound at its parameter's position, each
// shared array is sized by the specialization constant whose id is its
// position, and the push-constant members fill the other positions in order.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL Status ReadParams(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                      std::string_view label, ShaderLayout& layout, std::vector<DeviceParam>& params) {
  Reflected reflected;
  STREAMEXECUTOR_RETURN_IF_ERROR(Reflect(words, kernel_name, label, reflected));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckInterface(reflected, label));
  std::vector<const SharedArray*> spec_arrays;
  for (const SharedArray& array : reflected.shared) {
    if (array.spec_sized) spec_arrays.push_back(&array);
  }
  const std::size_t count = reflected.descriptors.size() + reflected.push.size() + spec_arrays.size();
  std::vector<ParamSlot> slots(count);
  std::vector<DeviceParam> read(count);
  std::vector<bool> taken(count, false);
  const std::string_view convention =
      "an untyped kernel binds each storage buffer at its parameter's position and sizes each shared array by the "
      "specialization constant whose id is its position; the push-constant members fill the other positions";
  auto place = [&](std::uint32_t position, std::string_view what, const std::string& name) -> Status {
    if (position >= count || taken[position]) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetUntypedKernel on {}: kernel '{}': the shader's {} '{}' is at position {}, {} of its {} "
                       "parameters ({})",
                       label, reflected.entry_point, what, name, position,
                       position >= count ? "past the last" : "taken by another", count, convention);
    }
    taken[position] = true;
    return Status();
  };
  for (const DescriptorInfo& info : reflected.descriptors) {
    STREAMEXECUTOR_RETURN_IF_ERROR(place(info.binding, "storage buffer", info.name));
    slots[info.binding] = ParamSlot{KernelParamKind::kDevicePointer, info.binding, 0, info.stride, 0};
    DeviceParam& param = read[info.binding];
    param.takes_memory = true;
    param.element_size = info.stride;
    param.type = info.element.name;
  }
  for (const SharedArray* array : spec_arrays) {
    STREAMEXECUTOR_RETURN_IF_ERROR(place(array->constant_id, "shared array", array->name));
    slots[array->constant_id] =
        ParamSlot{KernelParamKind::kSharedMemory, 0, 0, array->element.size, array->constant_id};
    DeviceParam& param = read[array->constant_id];
    param.takes_shared = true;
    param.element_size = array->element.size;
    param.type = array->element.name;
  }
  std::size_t next = 0;
  for (const PushMember& member : reflected.push) {
    while (next < count && taken[next]) ++next;
    slots[next] = ParamSlot{KernelParamKind::kScalar, 0, member.offset, member.size, 0};
    DeviceParam& param = read[next];
    param.takes_scalar = true;
    param.size = member.size;
    param.type = member.type.name;
    taken[next] = true;
  }
  FillLayout(reflected, layout);
  layout.params = std::move(slots);
  params = std::move(read);
  return Status();
}
#else
STREAMEXECUTOR_DECL Status ReadParams(std::span<const std::uint32_t> words, std::string_view kernel_name,
                                      std::string_view label, ShaderLayout& layout, std::vector<DeviceParam>& params);
#endif

}  // namespace streamexecutor::vulkan_detail
