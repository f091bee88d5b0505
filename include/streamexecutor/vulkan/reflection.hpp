// The load-time check of a SPIR-V compute shader: the module is validated
// (SPIRV-Tools), its interface is read (SPIRV-Cross, plus a small scan of the
// words for what SPIRV-Cross's C API does not show: Workgroup variables and
// LocalSizeId), and a TypedKernel's declared parameters are matched against
// it. The result is the layout a launch fills: which binding, push-constant
// offset or specialization constant each parameter goes to. See docs/vulkan.md
// for the conventions.
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
#include "streamexecutor/detail/separate_compilation.hpp"
#include "streamexecutor/vulkan/spirv_module.hpp"
#include "streamexecutor/vulkan/spirv_types.hpp"

namespace streamexecutor::vulkan_detail {

// ---- Checks and the layout ----------------------------------------------------

// "binding 1 of set 0 ('Y')" and "a storage buffer of float (stride 4)".
inline std::string DescriptorName(const DescriptorInfo& info) {
  return ::streamexecutor::detail::Format(
      "binding {} of set {}{}", info.binding, info.set,
      info.name.empty() ? std::string() : ::streamexecutor::detail::Format(" ('{}')", info.name));
}
inline std::string DescriptorKind(const DescriptorInfo& info) {
  std::string text;
  if (info.count != 1) {
    text +=
        info.count == 0 ? "a runtime-sized array of " : ::streamexecutor::detail::Format("an array of {} ", info.count);
  } else {
    text += "a ";
  }
  text += info.what;
  if (info.what == "storage buffer" && info.shape_problem.empty()) {
    text += ::streamexecutor::detail::Format(" of {} (stride {})", info.element.name, info.stride);
  }
  return text;
}
inline std::string DescribeDescriptor(const DescriptorInfo& info) {
  return ::streamexecutor::detail::Format("{} is {}", DescriptorName(info), DescriptorKind(info));
}

// "bindings 0 to 2", "binding 0", "no binding".
inline std::string BindingRange(std::uint32_t count) {
  if (count == 0) return "no binding";
  if (count == 1) return "binding 0";
  return ::streamexecutor::detail::Format("bindings 0 to {}", count - 1);
}

inline std::string DescribePush(const PushMember& member) {
  return ::streamexecutor::detail::Format("{} {} (offset {}, {} bytes)", member.type.name, member.name, member.offset,
                                          member.size);
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
  return MakeError(
      ErrorCode::kInvalidArgument,
      "GetKernel on {}: kernel '{}' parameter {}: the TypedKernel declares {} but {}{}{}{}{}", label, kernel, index + 1,
      param.declared_type, actual, why.empty() ? "" : " (", why, why.empty() ? "" : ")",
      suggestion.empty() ? std::string() : ::streamexecutor::detail::Format("; declare it as {}", suggestion));
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
      declared_scalars +=
          ::streamexecutor::detail::Format("{}{}", declared_scalars.empty() ? "" : ", ", param.declared_type);
    }
  }
  std::vector<SharedArray> spec_arrays;
  for (const SharedArray& array : reflected.shared) {
    if (array.spec_sized) spec_arrays.push_back(array);
  }
  std::string push_members;
  for (const PushMember& member : reflected.push) {
    push_members += ::streamexecutor::detail::Format("{}{}", push_members.empty() ? "" : ", ", DescribePush(member));
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
            bindings += ::streamexecutor::detail::Format("{}{}", bindings.empty() ? "" : ", ", info.binding);
          }
          return ParamMismatch(
              label, kernel, i, param,
              ::streamexecutor::detail::Format(
                  "the shader has no binding {} in set 0 for it (DeviceMemory parameter {} of the "
                  "TypedKernel; the shader's bindings: {}; bindings are either 0, 1, 2, ... in the order "
                  "of the DeviceMemory parameters, or each one's position in the parameter list)",
                  binding, buffers, bindings.empty() ? std::string("none") : bindings),
              "", "");
        }
        const DescriptorInfo& info = *found;
        if (info.what != "storage buffer" || info.count != 1 || !info.shape_problem.empty()) {
          return ParamMismatch(
              label, kernel, i, param, ::streamexecutor::detail::Format("the shader's {}", DescribeDescriptor(info)),
              info.shape_problem.empty() ? "DeviceMemory<T> parameters are single storage buffers" : info.shape_problem,
              "");
        }
        slot.size = info.stride;
        // A named type only where its size is the stride (a vec3 array's is not).
        const std::string element = info.element.size == info.stride ? SuggestCpp(info.element) : std::string();
        const std::string suggestion =
            element.empty()
                ? ::streamexecutor::detail::Format(
                      "streamexecutor::DeviceMemory<T>* with sizeof(T) == {} (the array stride)", info.stride)
                : ::streamexecutor::detail::Format("streamexecutor::DeviceMemory<{}>*", element);
        std::string why = KindMismatch(param, info.element);
        if (why.empty() && info.stride != param.value_size) {
          why = ::streamexecutor::detail::Format("{} is {} bytes, the buffer's elements are {} bytes apart",
                                                 param.value_type, param.value_size, info.stride);
        }
        if (!why.empty()) {
          return ParamMismatch(label, kernel, i, param,
                               ::streamexecutor::detail::Format("the shader's {}", DescribeDescriptor(info)), why,
                               suggestion);
        }
        break;
      }
      case KernelParamKind::kScalar: {
        const std::uint32_t index = scalars++;
        if (index >= reflected.push.size()) {
          return ParamMismatch(
              label, kernel, i, param,
              ::streamexecutor::detail::Format(
                  "the shader has {} push constant(s) ({}) for the TypedKernel's {} scalar "
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
          why = ::streamexecutor::detail::Format("{} is {} bytes, the member {}", param.value_type, param.value_size,
                                                 member.size);
        }
        if (!why.empty()) {
          return ParamMismatch(
              label, kernel, i, param,
              ::streamexecutor::detail::Format("push constant {} of the shader is {}", index + 1, DescribePush(member)),
              why, [&] {
                const std::string cpp = SuggestCpp(member.type);
                return cpp.empty() ? ::streamexecutor::detail::Format("a type T with sizeof(T) == {}", member.size)
                                   : cpp;
              }());
        }
        break;
      }
      case KernelParamKind::kSharedMemory: {
        const std::uint32_t index = shared++;
        if (index >= spec_arrays.size()) {
          std::string fixed;
          for (const SharedArray& array : reflected.shared) {
            if (!array.spec_sized)
              fixed += ::streamexecutor::detail::Format("{}{}", fixed.empty() ? "" : ", ", array.name);
          }
          return ParamMismatch(
              label, kernel, i, param,
              ::streamexecutor::detail::Format(
                  "the shader has {} shared array(s) sized by a specialization constant for it{}", spec_arrays.size(),
                  fixed.empty() ? std::string()
                                : ::streamexecutor::detail::Format(" (fixed-size shared variables: {})", fixed)),
              "a SharedDeviceMemory<T> parameter is a shared array whose length is a specialization constant, "
              "e.g. layout(constant_id = 0) const uint kCount = 1; shared T data[kCount];",
              "");
        }
        const SharedArray& array = spec_arrays[index];
        if (index > 0 && spec_arrays[index - 1].constant_id == array.constant_id) {
          return ParamMismatch(label, kernel, i, param,
                               ::streamexecutor::detail::Format(
                                   "the shader's shared arrays '{}' and '{}' are both sized by constant_id {}",
                                   spec_arrays[index - 1].name, array.name, array.constant_id),
                               "each SharedDeviceMemory parameter needs a constant of its own", "");
        }
        slot.constant_id = array.constant_id;
        slot.size = array.element.size;
        std::string why = KindMismatch(param, array.element);
        if (why.empty() && array.element.size != 0 && array.element.size != param.value_size) {
          why = ::streamexecutor::detail::Format("{} is {} bytes, {} {}", param.value_type, param.value_size,
                                                 array.element.name, array.element.size);
        }
        if (!why.empty()) {
          return ParamMismatch(
              label, kernel, i, param,
              ::streamexecutor::detail::Format("the shader's shared array '{}' (sized by constant_id {}) holds {}",
                                               array.name, array.constant_id, array.element.name),
              why, [&] {
                const std::string cpp = SuggestCpp(array.element);
                return cpp.empty() ? std::string()
                                   : ::streamexecutor::detail::Format("streamexecutor::SharedDeviceMemory<{}>", cpp);
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
