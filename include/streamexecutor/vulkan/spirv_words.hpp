// A small scan of a SPIR-V module's words, for what SPIRV-Cross's C API does
// not show: Workgroup (shared) variables and LocalSizeId (spirv_module.hpp
// uses it beside SPIRV-Cross).
#pragma once

#include <spirv_cross/spirv.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "streamexecutor/vulkan/spirv_types.hpp"

namespace streamexecutor::vulkan_detail {

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
        SpirvType array{
            element.kind, literal ? element.size * length[2] : 0, element.lanes, true,
            literal ? ::streamexecutor::detail::Format("{}[{}]", element.name, length[2]) : element.name + "[]"};
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
      return SpirvType{
          Arith::kUnknown, size, 1, true,
          ::streamexecutor::detail::Format("struct {}", name == spirv.names.end() ? std::string("?") : name->second)};
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
    array.name = name == spirv.names.end() || name->second.empty() ? ::streamexecutor::detail::Format("%{}", variable)
                                                                   : name->second;
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

}  // namespace streamexecutor::vulkan_detail
