// A SPIR-V module read at load time: validated by SPIRV-Tools (a module that
// fails validation never reaches the driver), and its interface read by
// SPIRV-Cross's C API and the word scan (spirv_words.hpp) into Reflected.
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
#include <vector>

#include "streamexecutor/vulkan/spirv_types.hpp"
#include "streamexecutor/vulkan/spirv_words.hpp"

namespace streamexecutor::vulkan_detail {

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
                         ::streamexecutor::detail::Format("struct {}", name != nullptr && *name != '\0' ? name : "?")};
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
    suffix = (length == 0 ? std::string("[]") : ::streamexecutor::detail::Format("[{}]", length)) + suffix;
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
    info.shape_problem = ::streamexecutor::detail::Format("its block has {} members, not one array", members);
    return;
  }
  const spvc_type member = spvc_compiler_get_type_handle(compiler, spvc_type_get_member_type(block, 0));
  const unsigned dimensions = spvc_type_get_num_array_dimensions(member);
  if (dimensions == 0) {
    info.shape_problem = ::streamexecutor::detail::Format("its block's member is a single {}, not an array",
                                                          CrossType(compiler, member, 0).name);
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
    list += ::streamexecutor::detail::Format("{}'{}'", list.empty() ? "" : ", ", name);
    found = found || (compute && name == kernel_name);
  }
  if (!found) {
    return MakeError(
        ErrorCode::kNotFound, "GetKernel on {}: the SPIR-V module has no compute entry point '{}'; {}{}", label,
        kernel_name,
        compute_names.empty() ? std::string("it has none")
                              : ::streamexecutor::detail::Format("its compute entry points are {}", compute_names),
        other_names.empty() ? std::string() : ::streamexecutor::detail::Format(" (other stages: {})", other_names));
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

}  // namespace streamexecutor::vulkan_detail
