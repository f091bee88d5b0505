// Kernels of the Vulkan backend: a checked SPIR-V module (reflection.hpp), its
// pipeline layout (storage buffers as push descriptors, scalars as push
// constants), and one compute pipeline per work-group size and shared-memory
// size a launch asks for, made on first use and kept.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel_args.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/vulkan/glsl.hpp"
#include "streamexecutor/vulkan/reflection.hpp"
#include "streamexecutor/vulkan/runtime.hpp"

namespace streamexecutor::vulkan_detail {

// Bindings a kernel may have; push descriptors guarantee 32.
inline constexpr std::size_t kMaxBindings = 32;
inline constexpr std::size_t kMaxShared = 8;

struct PipelineKey {
  std::array<std::uint32_t, 3> local{};
  std::array<std::uint32_t, kMaxShared> shared{};  // element counts, per shared parameter
  bool operator==(const PipelineKey&) const = default;
};

struct LoadedKernel {
  Executor* executor = nullptr;
  std::string name;
  ShaderLayout layout;
  VkShaderModule shader = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  struct Pipeline {
    PipelineKey key;
    VkPipeline pipeline;
  };
  std::mutex mutex;  // making a pipeline
  std::vector<std::unique_ptr<Pipeline>> pipelines;
  // The pipeline the last launch used, read without the lock: most launches repeat it.
  std::atomic<const Pipeline*> last{nullptr};
  // Derived at load for the launch path: the buffer parameters' bindings in
  // parameter order, and whether the scalars fill the push-constant block
  // with no gap (then it needs no zeroing before they are copied in).
  std::array<std::uint32_t, kMaxBindings> buffer_bindings{};
  std::uint32_t buffer_params = 0;
  std::uint32_t shared_params = 0;  // the entries of PipelineKey::shared in use
  bool push_covered = false;

  // Keys of this kernel differ only in the local size and the shared counts it
  // has: comparing those alone keeps a memcmp call off the launch path.
  bool SameKey(const PipelineKey& a, const PipelineKey& b) const {
    bool same = a.local[0] == b.local[0] && a.local[1] == b.local[1] && a.local[2] == b.local[2];
    for (std::uint32_t i = 0; i < shared_params; ++i) same = same && a.shared[i] == b.shared[i];
    return same;
  }

  ~LoadedKernel() {
    if (executor == nullptr) return;
    const DeviceApi& api = executor->api;
    for (auto& entry : pipelines) api.vkDestroyPipeline(executor->device, entry->pipeline, nullptr);
    if (pipeline_layout != VK_NULL_HANDLE) api.vkDestroyPipelineLayout(executor->device, pipeline_layout, nullptr);
    if (set_layout != VK_NULL_HANDLE) api.vkDestroyDescriptorSetLayout(executor->device, set_layout, nullptr);
    if (shader != VK_NULL_HANDLE) api.vkDestroyShaderModule(executor->device, shader, nullptr);
  }
};

// The module's words, checked for a whole number of words.
inline StatusOr<std::vector<std::uint32_t>> ReadSpirv(const KernelLoaderSpec& spec, std::string_view label) {
  StatusOr<std::string> bytes = spec.Contents();
  if (!bytes.ok()) return bytes.status();
  const std::string& data = bytes.value();
  if (data.empty() || data.size() % 4 != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "SPIR-V for kernel '{}' on {}{}{}: {} bytes, not a whole number of 32-bit words", spec.kernel_name,
                     label, spec.on_disk() ? " from " : "", spec.filename, data.size());
  }
  std::vector<std::uint32_t> words(data.size() / 4);
  std::memcpy(words.data(), data.data(), data.size());
  return words;
}

// The spec's module: its SPIR-V, else its GLSL compiled now (glsl.hpp).
inline StatusOr<std::vector<std::uint32_t>> ModuleWords(const MultiKernelLoaderSpec& spec, std::string_view label,
                                                        std::string_view caller) {
  if (const KernelLoaderSpec* spirv = spec.spirv()) return ReadSpirv(*spirv, label);
  if (const KernelLoaderSpec* glsl = spec.glsl()) return CompileGlsl(*glsl, label);
  return MakeError(ErrorCode::kNotFound,
                   "{} on {}: the spec has no SPIR-V (AddSpirvInMemory/OnDisk) or GLSL (AddGlslInMemory/OnDisk){}",
                   caller, label, spec.DescribeEntries());
}

// A module that declares a capability whose feature the device lacks would be
// undefined behaviour in the driver: it is NOT_FOUND instead, as OpenCL code
// for doubles is on a device without them. Capabilities come first in a
// (validated) module, after the five header words.
inline Status CheckFeatures(const Executor& e, std::span<const std::uint32_t> words, std::string_view kernel) {
  constexpr std::uint32_t kOpCapability = 17, kOpExtension = 10;
  for (std::size_t at = 5; at < words.size();) {
    const std::uint32_t opcode = words[at] & 0xffffu, length = words[at] >> 16;
    if ((opcode != kOpCapability && opcode != kOpExtension) || length == 0) break;
    if (opcode == kOpCapability && length >= 2) {
      for (const auto& [capability, feature] : e.missing_features) {
        if (capability == words[at + 1]) {
          return MakeError(ErrorCode::kNotFound,
                           "kernel '{}' on {}: the module needs the device feature {} (SPIR-V capability {}), which "
                           "this device does not have",
                           kernel, e.label, feature, capability);
        }
      }
    }
    at += length;
  }
  return Status();
}

// Module, set layout and pipeline layout for a checked shader.
inline Status CreateKernelObjects(Executor& e, std::span<const std::uint32_t> words, LoadedKernel& kernel) {
  const DeviceApi& api = e.api;
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckFeatures(e, words, kernel.name));
  if (kernel.layout.push_constant_bytes > e.properties.limits.maxPushConstantsSize) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "kernel '{}' on {}: its push constants (the scalar parameters) take {} bytes, over the device's "
                     "maxPushConstantsSize of {}",
                     kernel.name, e.label, kernel.layout.push_constant_bytes, e.properties.limits.maxPushConstantsSize);
  }
  if (std::count_if(kernel.layout.params.begin(), kernel.layout.params.end(), [](const ParamSlot& slot) {
        return slot.kind == KernelParamKind::kSharedMemory;
      }) > static_cast<std::ptrdiff_t>(kMaxShared)) {
    return MakeError(ErrorCode::kInvalidArgument, "kernel '{}' on {}: more than {} SharedDeviceMemory parameters",
                     kernel.name, e.label, kMaxShared);
  }
  if (std::count_if(kernel.layout.params.begin(), kernel.layout.params.end(), [](const ParamSlot& slot) {
        return slot.kind == KernelParamKind::kDevicePointer;
      }) > static_cast<std::ptrdiff_t>(kMaxBindings)) {
    return MakeError(ErrorCode::kInvalidArgument, "kernel '{}' on {}: more than {} buffer parameters", kernel.name,
                     e.label, kMaxBindings);
  }
  VkShaderModuleCreateInfo code{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr, 0, words.size_bytes(),
                                words.data()};
  if (VkResult r = api.vkCreateShaderModule(e.device, &code, nullptr, &kernel.shader); r != VK_SUCCESS)
    return VkError("vkCreateShaderModule", r, "for kernel '{}' on {}", kernel.name, e.label);
  // The bindings the parameters use (positional bindings leave gaps).
  std::array<VkDescriptorSetLayoutBinding, kMaxBindings> bindings{};
  std::uint32_t binding_count = 0;
  for (const ParamSlot& slot : kernel.layout.params) {
    if (slot.kind != KernelParamKind::kDevicePointer) continue;
    if (slot.binding >= 64) {
      return MakeError(ErrorCode::kInvalidArgument, "kernel '{}' on {}: binding {} is over the 63 supported",
                       kernel.name, e.label, slot.binding);
    }
    bindings[binding_count++] = {slot.binding, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT,
                                 nullptr};
  }
  VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, nullptr,
                                      VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR, binding_count,
                                      bindings.data()};
  if (VkResult r = api.vkCreateDescriptorSetLayout(e.device, &set, nullptr, &kernel.set_layout); r != VK_SUCCESS)
    return VkError("vkCreateDescriptorSetLayout", r, "for kernel '{}' on {}", kernel.name, e.label);
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kernel.layout.push_constant_bytes};
  VkPipelineLayoutCreateInfo layout{};
  layout.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &kernel.set_layout;
  layout.pushConstantRangeCount = kernel.layout.push_constant_bytes > 0 ? 1u : 0u;
  layout.pPushConstantRanges = &range;
  if (VkResult r = api.vkCreatePipelineLayout(e.device, &layout, nullptr, &kernel.pipeline_layout); r != VK_SUCCESS)
    return VkError("vkCreatePipelineLayout", r, "for kernel '{}' on {}", kernel.name, e.label);
  std::array<bool, kGuaranteedPushConstantBytes> covered{};
  for (const ParamSlot& slot : kernel.layout.params) {
    if (slot.kind == KernelParamKind::kDevicePointer) kernel.buffer_bindings[kernel.buffer_params++] = slot.binding;
    if (slot.kind == KernelParamKind::kSharedMemory) ++kernel.shared_params;
    if (slot.kind != KernelParamKind::kScalar) continue;
    for (std::uint32_t b = slot.offset; b < slot.offset + slot.size && b < covered.size(); ++b) covered[b] = true;
  }
  kernel.push_covered =
      kernel.layout.push_constant_bytes <= covered.size() &&
      std::all_of(covered.begin(), covered.begin() + kernel.layout.push_constant_bytes, [](bool b) { return b; });
  return Status();
}

// The launch's work-group size must be the shader's own where the shader
// fixes it (LocalSize without specialization constants).
// The launch path's form of CheckLocalSize: plain compares, no Status built.
[[gnu::always_inline]] inline bool LocalSizeFits(const LoadedKernel& kernel, const ThreadDim& threads) {
  const ShaderLayout& l = kernel.layout;
  return (l.local_size_specialized[0] || threads.x == l.local_size[0]) &&
         (l.local_size_specialized[1] || threads.y == l.local_size[1]) &&
         (l.local_size_specialized[2] || threads.z == l.local_size[2]);
}

inline Status CheckLocalSize(const LoadedKernel& kernel, const ThreadDim& threads) {
  const std::array<std::uint64_t, 3> asked{threads.x, threads.y, threads.z};
  for (std::size_t d = 0; d < 3; ++d) {
    if (!kernel.layout.local_size_specialized[d] && asked[d] != kernel.layout.local_size[d]) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "ThenLaunch of kernel '{}' on {}: {}x{}x{} threads per block, but the shader fixes its "
                       "work-group size to {}x{}x{} (declare local_size_x_id/_y_id/_z_id to choose it at launch)",
                       kernel.name, kernel.executor->label, threads.x, threads.y, threads.z,
                       kernel.layout.local_size[0], kernel.layout.local_size[1], kernel.layout.local_size[2]);
    }
  }
  return Status();
}

// The pipeline for `key`, made on first use (MakePipeline below).
inline StatusOr<VkPipeline> MakePipeline(LoadedKernel& kernel, const PipelineKey& key);
[[gnu::always_inline]] inline StatusOr<VkPipeline> GetPipeline(LoadedKernel& kernel, const PipelineKey& key) {
  if (const LoadedKernel::Pipeline* last = kernel.last.load(std::memory_order_acquire);
      last != nullptr && kernel.SameKey(last->key, key)) [[likely]] {
    return last->pipeline;
  }
  return MakePipeline(kernel, key);
}
// The last launch's pipeline if `key` is its key, else null: the launch
// path's test, which builds no StatusOr.
[[gnu::always_inline]] inline VkPipeline LastPipeline(const LoadedKernel& kernel, const PipelineKey& key) {
  const LoadedKernel::Pipeline* last = kernel.last.load(std::memory_order_acquire);
  return last != nullptr && kernel.SameKey(last->key, key) ? last->pipeline : VK_NULL_HANDLE;
}

inline StatusOr<VkPipeline> MakePipeline(LoadedKernel& kernel, const PipelineKey& key) {
  std::lock_guard<std::mutex> lock(kernel.mutex);
  for (const std::unique_ptr<LoadedKernel::Pipeline>& entry : kernel.pipelines) {
    if (entry->key == key) {
      kernel.last.store(entry.get(), std::memory_order_release);
      return entry->pipeline;
    }
  }
  Executor& e = *kernel.executor;
  std::array<VkSpecializationMapEntry, 3 + kMaxShared> entries{};
  std::array<std::uint32_t, 3 + kMaxShared> data{};
  std::uint32_t count = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    if (!kernel.layout.local_size_specialized[d]) continue;
    entries[count] = {kernel.layout.local_size_constant_id[d], count * 4u, 4};
    data[count++] = key.local[d];
  }
  std::size_t shared_index = 0;
  for (const ParamSlot& slot : kernel.layout.params) {
    if (slot.kind != KernelParamKind::kSharedMemory) continue;
    entries[count] = {slot.constant_id, count * 4u, 4};
    // A zero-length array is not valid: an unused scratch gets one element.
    data[count++] = key.shared[shared_index] == 0 ? 1 : key.shared[shared_index];
    ++shared_index;
  }
  VkSpecializationInfo specialization{count, entries.data(), count * sizeof(std::uint32_t), data.data()};
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                nullptr,
                0,
                VK_SHADER_STAGE_COMPUTE_BIT,
                kernel.shader,
                kernel.layout.entry_point.c_str(),
                count > 0 ? &specialization : nullptr};
  info.layout = kernel.pipeline_layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  if (VkResult r = e.api.vkCreateComputePipelines(e.device, VK_NULL_HANDLE, 1, &info, nullptr, &pipeline);
      r != VK_SUCCESS) {
    return VkError("vkCreateComputePipelines", r, "for kernel '{}' with {}x{}x{} threads per block on {}", kernel.name,
                   key.local[0], key.local[1], key.local[2], e.label);
  }
  try {
    kernel.pipelines.push_back(std::make_unique<LoadedKernel::Pipeline>(LoadedKernel::Pipeline{key, pipeline}));
  } catch (...) {
    e.api.vkDestroyPipeline(e.device, pipeline, nullptr);
    return MakeError(ErrorCode::kResourceExhausted, "kernel '{}' on {}: out of host memory for a pipeline", kernel.name,
                     e.label);
  }
  kernel.last.store(kernel.pipelines.back().get(), std::memory_order_release);
  return pipeline;
}

// What a launch's arguments become: buffer descriptors, push-constant bytes,
// shared element counts.
// Left uninitialized but for what the kernel's parameters fill: zeroing
// 2 KiB per launch was a fifth of the launch path's instructions.
struct LaunchData {
  std::array<VkDescriptorBufferInfo, 64> buffers;  // by binding
  std::array<std::byte, 128> push;                 // maxPushConstantsSize is at least 128, and we use no more
  PipelineKey key;
};

inline Status PackMemory(const LoadedKernel& kernel, const ParamSlot& slot, std::size_t position,
                         const DeviceMemoryBase& memory, LaunchData& data) {
  const Executor& e = *kernel.executor;
  const std::uint64_t align = e.properties.limits.minStorageBufferOffsetAlignment;
  const std::uint64_t offset = BufferOffset(memory);
  if (align > 1 && offset % align != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenLaunch of kernel '{}' on {}: parameter {} starts at byte offset {} of its buffer, which is "
                     "not a multiple of the device's minStorageBufferOffsetAlignment ({}): a storage buffer cannot "
                     "start there; pass the whole buffer and an element offset instead",
                     kernel.name, e.label, position + 1, offset, align);
  }
  const std::uint64_t range = memory.size();
  if (range > e.properties.limits.maxStorageBufferRange) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenLaunch of kernel '{}' on {}: parameter {} is {} bytes, over the device's "
                     "maxStorageBufferRange of {} bytes",
                     kernel.name, e.label, position + 1, range, e.properties.limits.maxStorageBufferRange);
  }
  const auto* buffer = static_cast<const Buffer*>(memory.opaque());
  data.buffers[slot.binding] = {buffer->buffer, offset, range == 0 ? VK_WHOLE_SIZE : range};
  return Status();
}

// A launch typed at run time: the core checked the arguments against the
// parameter list ReadParams gave.
inline Status PackUntyped(const LoadedKernel& kernel, std::span<const KernelArg> args, const std::byte* bytes,
                          LaunchData& data) {
  std::size_t shared_index = 0;
  for (std::size_t i = 0; i < args.size() && i < kernel.layout.params.size(); ++i) {
    const ParamSlot& slot = kernel.layout.params[i];
    const KernelArg& arg = args[i];
    switch (slot.kind) {
      case KernelParamKind::kDevicePointer:
        STREAMEXECUTOR_RETURN_IF_ERROR(PackMemory(kernel, slot, i, arg.memory, data));
        break;
      case KernelParamKind::kSharedMemory:
        data.key.shared[shared_index++] =
            static_cast<std::uint32_t>(slot.size > 0 ? arg.shared_bytes / slot.size : arg.shared_bytes);
        break;
      case KernelParamKind::kScalar:
        std::memcpy(data.push.data() + slot.offset, bytes + arg.offset, std::min<std::size_t>(arg.size, slot.size));
        break;
    }
  }
  return Status();
}

template <typename P, typename A>
Status PackArgument(const LoadedKernel& kernel, const ParamSlot& slot, std::size_t position, const A& arg,
                    LaunchData& data, std::size_t& shared_index) {
  using V = std::remove_cv_t<P>;
  if constexpr (is_device_memory_pointer_v<V>) {
    return PackMemory(kernel, slot, position, arg, data);
  } else if constexpr (is_shared_device_memory_v<V>) {
    data.key.shared[shared_index++] = static_cast<std::uint32_t>(arg.ElementCount());
  } else {
    static_assert(sizeof(V) <= 128, "a push constant is at most 128 bytes");
    std::memcpy(data.push.data() + slot.offset, &arg, sizeof(V));
  }
  return Status();
}

// The launch path's form of PackArguments: the same conditions as plain
// compares, no Status built. When it says no, PackArguments says why.
template <typename P, typename A>
[[gnu::always_inline]] inline bool PackArgumentFast(const LoadedKernel& kernel, const ParamSlot& slot, const A& arg,
                                                    LaunchData& data, std::size_t& shared_index) {
  using V = std::remove_cv_t<P>;
  if constexpr (is_device_memory_pointer_v<V>) {
    const VkPhysicalDeviceLimits& limits = kernel.executor->properties.limits;
    const std::uint64_t offset = BufferOffset(arg);
    const std::uint64_t range = arg.size();
    if ((limits.minStorageBufferOffsetAlignment > 1 && offset % limits.minStorageBufferOffsetAlignment != 0) ||
        range > limits.maxStorageBufferRange) [[unlikely]] {
      return false;
    }
    data.buffers[slot.binding] = {static_cast<const Buffer*>(arg.opaque())->buffer, offset,
                                  range == 0 ? VK_WHOLE_SIZE : range};
  } else if constexpr (is_shared_device_memory_v<V>) {
    data.key.shared[shared_index++] = static_cast<std::uint32_t>(arg.ElementCount());
  } else {
    static_assert(sizeof(V) <= 128, "a push constant is at most 128 bytes");
    std::memcpy(data.push.data() + slot.offset, &arg, sizeof(V));
  }
  return true;
}
template <typename... Params, std::size_t... I>
[[gnu::always_inline]] inline bool PackArgumentsFast(const LoadedKernel& kernel, const PackedArgs<Params...>& args,
                                                     LaunchData& data, std::index_sequence<I...>) {
  std::size_t shared_index = 0;
  return (PackArgumentFast<Params>(kernel, kernel.layout.params[I], std::get<I>(args), data, shared_index) && ...);
}

template <typename... Params, std::size_t... I>
Status PackArguments(const LoadedKernel& kernel, const PackedArgs<Params...>& args, LaunchData& data,
                     std::index_sequence<I...>) {
  Status status;
  std::size_t shared_index = 0;
  ((status.ok() ? (void)(status = PackArgument<Params>(kernel, kernel.layout.params[I], I, std::get<I>(args), data,
                                                       shared_index))
                : (void)0),
   ...);
  return status;
}

// Records bind, push descriptors, push constants and the dispatch.
[[gnu::always_inline]] inline void RecordDispatch(const Executor& e, VkCommandBuffer commands,
                                                  const LoadedKernel& kernel, VkPipeline pipeline,
                                                  const LaunchData& data, const BlockDim& blocks) {
  const DeviceApi& api = e.api;
  api.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  std::array<VkWriteDescriptorSet, kMaxBindings> writes;
  const std::uint32_t count = kernel.buffer_params;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t binding = kernel.buffer_bindings[i];
    writes[i] =
        VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, VK_NULL_HANDLE,         binding, 0, 1,
                             VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,      nullptr, &data.buffers[binding], nullptr};
  }
  if (count > 0) {
    api.vkCmdPushDescriptorSetKHR(commands, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline_layout, 0, count,
                                  writes.data());
  }
  if (kernel.layout.push_constant_bytes > 0) {
    api.vkCmdPushConstants(commands, kernel.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           kernel.layout.push_constant_bytes, data.push.data());
  }
  api.vkCmdDispatch(commands, static_cast<std::uint32_t>(blocks.x), static_cast<std::uint32_t>(blocks.y),
                    static_cast<std::uint32_t>(blocks.z));
}

}  // namespace streamexecutor::vulkan_detail
