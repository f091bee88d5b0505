// GLSL compute shaders compiled at run time (a spec's AddGlslInMemory/OnDisk
// entry): shaderc turns the source into SPIR-V when GetKernel loads it, and
// the module then takes the path every SPIR-V kernel takes (validation, the
// signature check, the pipeline).
//
// shaderc is reached one of two ways:
// - opened at run time through the canned plugins' one loader, as NVRTC is for
//   CUDA C++, so that a program that never loads GLSL runs where shaderc is
//   not installed: libshaderc_shared.so.1 (the Vulkan SDK's, most
//   distributions'). Debian 12's libshaderc.so.1 cannot be opened on its own
//   (it leaves SPIRV-Tools' symbols undefined), hence:
// - linked, where the program defines STREAMEXECUTOR_VULKAN_LINK_SHADERC and
//   links shaderc_combined with glslang and SPIRV-Tools (meson.build's
//   vulkan_glsl_dep does both; docs/vulkan.md lists the libraries).
// Without shaderc's header at build time, a GLSL entry is UNAVAILABLE, saying so.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/detail/fmt.hpp"

#if __has_include(<shaderc/shaderc.h>)
#include <shaderc/shaderc.h>

#include "streamexecutor/canned/detail/library.hpp"
#define STREAMEXECUTOR_VULKAN_WITH_SHADERC 1
#endif

namespace streamexecutor::vulkan_detail {

// GLSL names its entry point main; SPIR-V may name it anything. The kernel
// name becomes the entry point's name, as glslangValidator's -e does, so that
// a kernel is found by its own name whichever way it was compiled.
inline void RenameEntryPoint(std::vector<std::uint32_t>& words, std::string_view from, std::string_view to) {
  constexpr std::uint32_t kOpEntryPoint = 15;
  for (std::size_t at = 5; at < words.size();) {
    const std::uint32_t opcode = words[at] & 0xffffu, length = words[at] >> 16;
    if (length == 0 || at + length > words.size()) return;
    if (opcode == kOpEntryPoint && length >= 4) {
      // Execution model, <id>, then the name: a nul-terminated string padded to whole words.
      const char* name = reinterpret_cast<const char*>(&words[at + 3]);
      const std::size_t room = (length - 3) * 4;
      const std::size_t name_length = strnlen(name, room);
      if (std::string_view(name, name_length) == from) {
        const std::size_t old_words = name_length / 4 + 1, new_words = to.size() / 4 + 1;
        std::vector<std::uint32_t> name_words(new_words, 0);
        std::memcpy(name_words.data(), to.data(), to.size());
        const auto first = words.begin() + static_cast<std::ptrdiff_t>(at + 3);
        words.erase(first, first + static_cast<std::ptrdiff_t>(old_words));
        words.insert(words.begin() + static_cast<std::ptrdiff_t>(at + 3), name_words.begin(), name_words.end());
        words[at] = (static_cast<std::uint32_t>(length - old_words + new_words) << 16) | opcode;
        return;
      }
    }
    at += length;
  }
}

#if defined(STREAMEXECUTOR_VULKAN_WITH_SHADERC)

inline constexpr const char* kShadercLibraries[] = {"libshaderc_shared.so.1", "libshaderc.so.1",
                                                    "libshaderc_shared.so"};
inline constexpr canned_detail::RunTimeLibrary kShadercLibrary{
    "vulkan", "shaderc", kShadercLibraries,
    "shaderc's shared library (the Vulkan SDK's libshaderc_shared.so.1; Debian 12's libshaderc.so.1 does not "
    "load on its own: link shaderc_combined with glslang and SPIRV-Tools and define "
    "STREAMEXECUTOR_VULKAN_LINK_SHADERC=1 instead, docs/vulkan.md)"};

#define SE_SHADERC_ENTRY_POINTS(X, A)                   \
  X(A, shaderc_compiler_initialize)                     \
  X(A, shaderc_compiler_release)                        \
  X(A, shaderc_compile_options_initialize)              \
  X(A, shaderc_compile_options_release)                 \
  X(A, shaderc_compile_options_add_macro_definition)    \
  X(A, shaderc_compile_options_set_optimization_level)  \
  X(A, shaderc_compile_options_set_generate_debug_info) \
  X(A, shaderc_compile_options_set_target_env)          \
  X(A, shaderc_compile_into_spv)                        \
  X(A, shaderc_result_release)                          \
  X(A, shaderc_result_get_length)                       \
  X(A, shaderc_result_get_bytes)                        \
  X(A, shaderc_result_get_compilation_status)           \
  X(A, shaderc_result_get_error_message)

struct ShadercApi {
  SE_SHADERC_ENTRY_POINTS(STREAMEXECUTOR_ENTRY_POINT_MEMBER, ShadercApi)
};
#if defined(STREAMEXECUTOR_VULKAN_LINK_SHADERC)
// The functions this program links.
inline const canned_detail::Loaded<ShadercApi>& Shaderc() {
  static const canned_detail::Loaded<ShadercApi> linked = [] {
    canned_detail::Loaded<ShadercApi> table;
#define SE_SHADERC_LINKED(Api, name) table.api.name = &::name;
    SE_SHADERC_ENTRY_POINTS(SE_SHADERC_LINKED, ShadercApi)
#undef SE_SHADERC_LINKED
    table.soname = "linked";
    return table;
  }();
  return linked;
}
#else
inline constexpr canned_detail::EntryPoint<ShadercApi> kShadercEntryPoints[] = {
    SE_SHADERC_ENTRY_POINTS(STREAMEXECUTOR_LISTED_ENTRY_POINT, ShadercApi)};

// Loaded once per process, one table for every shared library.
STREAMEXECUTOR_EXPORT inline const canned_detail::Loaded<ShadercApi>& Shaderc() {
  static const canned_detail::Loaded<ShadercApi> load = canned_detail::Load(kShadercLibrary, kShadercEntryPoints);
  return load;
}
#endif
#undef SE_SHADERC_ENTRY_POINTS

inline std::string_view ShadercStatusName(shaderc_compilation_status status) {
  switch (status) {
    case shaderc_compilation_status_success: return "success";
    case shaderc_compilation_status_invalid_stage: return "invalid_stage";
    case shaderc_compilation_status_compilation_error: return "compilation_error";
    case shaderc_compilation_status_internal_error: return "internal_error";
    case shaderc_compilation_status_null_result_object: return "null_result_object";
    case shaderc_compilation_status_invalid_assembly: return "invalid_assembly";
    case shaderc_compilation_status_validation_error: return "validation_error";
    case shaderc_compilation_status_transformation_error: return "transformation_error";
    case shaderc_compilation_status_configuration_error: return "configuration_error";
  }
  return "an unknown status";
}

#endif

// The spec's GLSL compiled to SPIR-V for Vulkan 1.2, its entry point named
// after the kernel. `options`, separated by spaces: -DNAME, -DNAME=VALUE,
// -O (optimize for speed), -Os (for size), -O0 (not at all: the default, as
// glslangValidator's), -g (debug information).
inline StatusOr<std::vector<std::uint32_t>> CompileGlsl(const KernelLoaderSpec& spec, std::string_view label) {
  const std::string where = spec.on_disk() ? ::streamexecutor::detail::Format(" '{}'", spec.filename) : std::string();
#if defined(STREAMEXECUTOR_VULKAN_WITH_SHADERC)
  const canned_detail::Loaded<ShadercApi>& shaderc = Shaderc();
  if (!shaderc.status.ok()) {
    return MakeError(ErrorCode::kUnavailable, "GLSL source{} of kernel '{}' on {}: {}", where, spec.kernel_name, label,
                     shaderc.status.message());
  }
  StatusOr<std::string> source = spec.Contents();
  if (!source.ok()) return source.status();
  const ShadercApi& api = shaderc.api;

  struct Owned {
    const ShadercApi& api;
    shaderc_compiler_t compiler;
    shaderc_compile_options_t options;
    shaderc_compilation_result_t result = nullptr;
    ~Owned() {
      if (result != nullptr) api.shaderc_result_release(result);
      if (options != nullptr) api.shaderc_compile_options_release(options);
      if (compiler != nullptr) api.shaderc_compiler_release(compiler);
    }
  } owned{api, api.shaderc_compiler_initialize(), api.shaderc_compile_options_initialize()};
  if (owned.compiler == nullptr || owned.options == nullptr) {
    return MakeError(ErrorCode::kResourceExhausted, "shaderc could not make a compiler for kernel '{}' on {}",
                     spec.kernel_name, label);
  }
  api.shaderc_compile_options_set_target_env(owned.options, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
  api.shaderc_compile_options_set_optimization_level(owned.options, shaderc_optimization_level_zero);
  for (std::size_t at = 0; at < spec.options.size();) {
    const std::size_t end = std::min(spec.options.find(' ', at), spec.options.size());
    const std::string_view option = std::string_view(spec.options).substr(at, end - at);
    at = end + 1;
    if (option.empty()) continue;
    if (option.starts_with("-D") && option.size() > 2) {
      const std::string_view definition = option.substr(2);
      const std::size_t equals = definition.find('=');
      const std::string_view name = definition.substr(0, equals);
      const std::string_view value =
          equals == std::string_view::npos ? std::string_view() : definition.substr(equals + 1);
      api.shaderc_compile_options_add_macro_definition(owned.options, name.data(), name.size(), value.data(),
                                                       value.size());
    } else if (option == "-O") {
      api.shaderc_compile_options_set_optimization_level(owned.options, shaderc_optimization_level_performance);
    } else if (option == "-Os") {
      api.shaderc_compile_options_set_optimization_level(owned.options, shaderc_optimization_level_size);
    } else if (option == "-O0") {
      api.shaderc_compile_options_set_optimization_level(owned.options, shaderc_optimization_level_zero);
    } else if (option == "-g") {
      api.shaderc_compile_options_set_generate_debug_info(owned.options);
    } else {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GLSL source{} of kernel '{}' on {}: unknown option '{}' (known: -DNAME, -DNAME=VALUE, -O, -Os, "
                       "-O0, -g)",
                       where, spec.kernel_name, label, option);
    }
  }
  const std::string file_name = spec.on_disk() ? spec.filename : spec.kernel_name + ".comp";
  owned.result = api.shaderc_compile_into_spv(owned.compiler, source.value().data(), source.value().size(),
                                              shaderc_glsl_compute_shader, file_name.c_str(), "main", owned.options);
  if (owned.result == nullptr) {
    return MakeError(ErrorCode::kResourceExhausted, "shaderc_compile_into_spv returned no result for kernel '{}' on {}",
                     spec.kernel_name, label);
  }
  const shaderc_compilation_status status = api.shaderc_result_get_compilation_status(owned.result);
  if (status != shaderc_compilation_status_success) {
    const char* log = api.shaderc_result_get_error_message(owned.result);
    std::string text = log != nullptr ? log : "";
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const bool source_error = status == shaderc_compilation_status_compilation_error ||
                              status == shaderc_compilation_status_invalid_stage ||
                              status == shaderc_compilation_status_validation_error;
    return MakeError(source_error ? ErrorCode::kInvalidArgument : ErrorCode::kInternal,
                     "shaderc_compile_into_spv failed with {} compiling the GLSL source{} of kernel '{}' for {} "
                     "(options: {}){}{}",
                     ShadercStatusName(status), where, spec.kernel_name, label,
                     spec.options.empty() ? "none" : spec.options, text.empty() ? "" : "\nshaderc log:\n", text);
  }
  const std::size_t bytes = api.shaderc_result_get_length(owned.result);
  std::vector<std::uint32_t> words(bytes / 4);
  std::memcpy(words.data(), api.shaderc_result_get_bytes(owned.result), words.size() * 4);
  RenameEntryPoint(words, "main", spec.kernel_name);
  return words;
#else
  return MakeError(ErrorCode::kUnavailable,
                   "GLSL source{} of kernel '{}' on {}: this program was built without shaderc's header "
                   "(<shaderc/shaderc.h>, Debian: libshaderc-dev), so GLSL is not compiled at run time; compile it "
                   "to SPIR-V at build time instead (docs/vulkan.md)",
                   where, spec.kernel_name, label);
#endif
}

}  // namespace streamexecutor::vulkan_detail
