// The launch path on Vulkan, both ways, on the same kernels and the same
// queue: through the library (Ours) and as a hand-written Vulkan program does
// one launch (Raw): a command buffer of a ring, bind, push descriptors, push
// constants, vkCmdDispatch, one vkQueueSubmit on a timeline semaphore. The
// raw side calls entry points from vkGetDeviceProcAddr, as volk does. Shared
// by the instruction-counting driver (vulkan_launch_count.cpp).
#pragma once

#include <vulkan/vulkan.h>
#include <streamexecutor/vulkan.hpp>

#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "launch_cases.hpp"

#ifndef SE_BENCH_VULKAN_KERNELS_DIR
#error "build with -DSE_BENCH_VULKAN_KERNELS_DIR=<folder of args1.spv, args3.spv, args8.spv>"
#endif

namespace bench {

inline void AddVulkanLaunchCode(se::MultiKernelLoaderSpec& spec, const char* name) {
  spec.AddSpirvOnDisk(std::string(SE_BENCH_VULKAN_KERNELS_DIR) + "/" + name + ".spv", name);
}
using Ours = OursLaunch<se::vulkan, &AddVulkanLaunchCode>;

inline void Check(VkResult result, const char* what) {
  if (result != VK_SUCCESS) Die(std::string(what) + " failed: " + std::to_string(static_cast<int>(result)));
}

struct Raw {
  static constexpr std::size_t kRing = 256;
  struct Fns {
#define SE_BENCH_VK(name) PFN_##name name = nullptr;
    SE_BENCH_VK(vkCreateBuffer)
    SE_BENCH_VK(vkDestroyBuffer)
    SE_BENCH_VK(vkGetBufferMemoryRequirements)
    SE_BENCH_VK(vkAllocateMemory)
    SE_BENCH_VK(vkFreeMemory)
    SE_BENCH_VK(vkBindBufferMemory)
    SE_BENCH_VK(vkCreateShaderModule)
    SE_BENCH_VK(vkDestroyShaderModule)
    SE_BENCH_VK(vkCreateDescriptorSetLayout)
    SE_BENCH_VK(vkDestroyDescriptorSetLayout)
    SE_BENCH_VK(vkCreatePipelineLayout)
    SE_BENCH_VK(vkDestroyPipelineLayout)
    SE_BENCH_VK(vkCreateComputePipelines)
    SE_BENCH_VK(vkDestroyPipeline)
    SE_BENCH_VK(vkCreateCommandPool)
    SE_BENCH_VK(vkDestroyCommandPool)
    SE_BENCH_VK(vkAllocateCommandBuffers)
    SE_BENCH_VK(vkResetCommandBuffer)
    SE_BENCH_VK(vkBeginCommandBuffer)
    SE_BENCH_VK(vkEndCommandBuffer)
    SE_BENCH_VK(vkCmdBindPipeline)
    SE_BENCH_VK(vkCmdPushDescriptorSetKHR)
    SE_BENCH_VK(vkCmdPushConstants)
    SE_BENCH_VK(vkCmdDispatch)
    SE_BENCH_VK(vkCmdFillBuffer)
    SE_BENCH_VK(vkQueueSubmit)
    SE_BENCH_VK(vkCreateSemaphore)
    SE_BENCH_VK(vkDestroySemaphore)
    SE_BENCH_VK(vkGetSemaphoreCounterValue)
    SE_BENCH_VK(vkWaitSemaphores)
#undef SE_BENCH_VK
  };
  struct Pipeline {
    VkShaderModule module = VK_NULL_HANDLE;
    VkDescriptorSetLayout set = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    std::uint32_t buffers = 0, push = 0;
  };

  se::StreamExecutor<se::vulkan>* executor = se::Platform<se::vulkan>::Get().ExecutorForDevice(0).value();
  VkDevice device = se::NativeContext(*executor);
  // The executor's own compute queue, which every stream of ours submits to.
  VkQueue queue = executor->native_state().impl->queue;
  Fns vk;
  std::array<VkBuffer, 4> buffers{};
  std::array<VkDeviceMemory, 4> memory{};
  Pipeline p1, p3, p8;
  VkCommandPool pool = VK_NULL_HANDLE;
  std::array<VkCommandBuffer, kRing> commands{};
  std::array<std::uint64_t, kRing> values{};
  std::size_t next = 0;
  VkSemaphore timeline = VK_NULL_HANDLE;
  std::uint64_t last = 0, completed = 0;
  float e = 0.5f, f = 0.25f;
  int g = 3, h = 4;

  Raw() {
#define SE_BENCH_VK_LOAD(name)                                                \
  vk.name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name)); \
  if (vk.name == nullptr) Die("no " #name);
    SE_BENCH_VK_LOAD(vkCreateBuffer)
    SE_BENCH_VK_LOAD(vkDestroyBuffer)
    SE_BENCH_VK_LOAD(vkGetBufferMemoryRequirements)
    SE_BENCH_VK_LOAD(vkAllocateMemory)
    SE_BENCH_VK_LOAD(vkFreeMemory)
    SE_BENCH_VK_LOAD(vkBindBufferMemory)
    SE_BENCH_VK_LOAD(vkCreateShaderModule)
    SE_BENCH_VK_LOAD(vkDestroyShaderModule)
    SE_BENCH_VK_LOAD(vkCreateDescriptorSetLayout)
    SE_BENCH_VK_LOAD(vkDestroyDescriptorSetLayout)
    SE_BENCH_VK_LOAD(vkCreatePipelineLayout)
    SE_BENCH_VK_LOAD(vkDestroyPipelineLayout)
    SE_BENCH_VK_LOAD(vkCreateComputePipelines)
    SE_BENCH_VK_LOAD(vkDestroyPipeline)
    SE_BENCH_VK_LOAD(vkCreateCommandPool)
    SE_BENCH_VK_LOAD(vkDestroyCommandPool)
    SE_BENCH_VK_LOAD(vkAllocateCommandBuffers)
    SE_BENCH_VK_LOAD(vkResetCommandBuffer)
    SE_BENCH_VK_LOAD(vkBeginCommandBuffer)
    SE_BENCH_VK_LOAD(vkEndCommandBuffer)
    SE_BENCH_VK_LOAD(vkCmdBindPipeline)
    SE_BENCH_VK_LOAD(vkCmdPushDescriptorSetKHR)
    SE_BENCH_VK_LOAD(vkCmdPushConstants)
    SE_BENCH_VK_LOAD(vkCmdDispatch)
    SE_BENCH_VK_LOAD(vkCmdFillBuffer)
    SE_BENCH_VK_LOAD(vkQueueSubmit)
    SE_BENCH_VK_LOAD(vkCreateSemaphore)
    SE_BENCH_VK_LOAD(vkDestroySemaphore)
    SE_BENCH_VK_LOAD(vkGetSemaphoreCounterValue)
    SE_BENCH_VK_LOAD(vkWaitSemaphores)
#undef SE_BENCH_VK_LOAD
    const std::uint32_t memory_type = executor->native_state().impl->memory_types.device;
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      VkBufferCreateInfo info{};
      info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
      info.size = 64;
      info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
      Check(vk.vkCreateBuffer(device, &info, nullptr, &buffers[i]), "vkCreateBuffer");
      VkMemoryRequirements requirements{};
      vk.vkGetBufferMemoryRequirements(device, buffers[i], &requirements);
      VkMemoryAllocateInfo allocate{};
      allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
      allocate.allocationSize = requirements.size;
      allocate.memoryTypeIndex = memory_type;
      Check(vk.vkAllocateMemory(device, &allocate, nullptr, &memory[i]), "vkAllocateMemory");
      Check(vk.vkBindBufferMemory(device, buffers[i], memory[i], 0), "vkBindBufferMemory");
    }
    p1 = MakePipeline("args1", 1, 0);
    p3 = MakePipeline("args3", 1, 8);
    p8 = MakePipeline("args8", 4, 16);
    VkCommandPoolCreateInfo pool_info{};
    pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = executor->native_state().impl->queue_family;
    Check(vk.vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    allocate.commandPool = pool;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = kRing;
    Check(vk.vkAllocateCommandBuffers(device, &allocate, commands.data()), "vkAllocateCommandBuffers");
    VkSemaphoreTypeCreateInfo type{};
    type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo semaphore{};
    semaphore.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
    semaphore.pNext = &type;
    Check(vk.vkCreateSemaphore(device, &semaphore, nullptr, &timeline), "vkCreateSemaphore");
  }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;
  ~Raw() {
    Finish();
    vk.vkDestroySemaphore(device, timeline, nullptr);
    vk.vkDestroyCommandPool(device, pool, nullptr);
    for (Pipeline* p : {&p1, &p3, &p8}) {
      vk.vkDestroyPipeline(device, p->pipeline, nullptr);
      vk.vkDestroyPipelineLayout(device, p->layout, nullptr);
      vk.vkDestroyDescriptorSetLayout(device, p->set, nullptr);
      vk.vkDestroyShaderModule(device, p->module, nullptr);
    }
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      vk.vkDestroyBuffer(device, buffers[i], nullptr);
      vk.vkFreeMemory(device, memory[i], nullptr);
    }
  }

  template <int N>
  [[gnu::always_inline]] void Launch() {
    LaunchSized<N>(kLaunchThreads, 1);
  }
  // The block size is the pipeline's (specialized for kLaunchThreads once, as
  // the library's pipeline cache holds it); `blocks` is the dispatch.
  template <int N>
  [[gnu::always_inline]] void LaunchSized(std::uint64_t, std::uint64_t blocks) {
    static_assert(N == 1 || N == 3 || N == 8);
    const Pipeline& p = N == 1 ? p1 : N == 3 ? p3 : p8;
    const std::size_t slot = next;
    next = (next + 1) % kRing;
    if (values[slot] > completed) {
      Check(vk.vkGetSemaphoreCounterValue(device, timeline, &completed), "vkGetSemaphoreCounterValue");
      if (values[slot] > completed) Wait(values[slot]);
    }
    VkCommandBuffer cb = commands[slot];
    Check(vk.vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    Check(vk.vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
    vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    std::array<VkDescriptorBufferInfo, 4> infos{};
    std::array<VkWriteDescriptorSet, 4> writes{};
    for (std::uint32_t i = 0; i < p.buffers; ++i) {
      infos[i] = {buffers[i], 0, VK_WHOLE_SIZE};
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vk.vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, p.buffers, writes.data());
    if constexpr (N == 3) {
      struct {
        float e;
        int g;
      } scalars{e, g};
      vk.vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof scalars, &scalars);
    }
    if constexpr (N == 8) {
      struct {
        float e, f;
        int g, h;
      } scalars{e, f, g, h};
      vk.vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof scalars, &scalars);
    }
    vk.vkCmdDispatch(cb, static_cast<std::uint32_t>(blocks), 1, 1);
    Check(vk.vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    const std::uint64_t wait_value = last, signal_value = last + 1;
    VkTimelineSemaphoreSubmitInfo timeline_info{};
    timeline_info.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    timeline_info.waitSemaphoreValueCount = 1;
    timeline_info.pWaitSemaphoreValues = &wait_value;
    timeline_info.signalSemaphoreValueCount = 1;
    timeline_info.pSignalSemaphoreValues = &signal_value;
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.pNext = &timeline_info;
    submit.waitSemaphoreCount = 1;
    submit.pWaitSemaphores = &timeline;
    submit.pWaitDstStageMask = &stage;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cb;
    submit.signalSemaphoreCount = 1;
    submit.pSignalSemaphores = &timeline;
    Check(vk.vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit");
    values[slot] = last = signal_value;
  }
  void Finish() { Wait(last); }

 private:
  void Wait(std::uint64_t value) {
    VkSemaphoreWaitInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
    info.semaphoreCount = 1;
    info.pSemaphores = &timeline;
    info.pValues = &value;
    Check(vk.vkWaitSemaphores(device, &info, UINT64_MAX), "vkWaitSemaphores");
    completed = value;
  }
  Pipeline MakePipeline(const char* name, std::uint32_t buffer_count, std::uint32_t push_bytes) {
    Pipeline p;
    p.buffers = buffer_count;
    p.push = push_bytes;
    std::ifstream file(std::string(SE_BENCH_VULKAN_KERNELS_DIR) + "/" + name + ".spv", std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (bytes.empty() || bytes.size() % 4 != 0) Die(std::string("cannot read ") + name + ".spv");
    VkShaderModuleCreateInfo module{};
    module.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    module.codeSize = bytes.size();
    module.pCode = reinterpret_cast<const std::uint32_t*>(bytes.data());
    Check(vk.vkCreateShaderModule(device, &module, nullptr, &p.module), "vkCreateShaderModule");
    std::array<VkDescriptorSetLayoutBinding, 4> bindings{};
    for (std::uint32_t i = 0; i < buffer_count; ++i) {
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    }
    VkDescriptorSetLayoutCreateInfo set{};
    set.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    set.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    set.bindingCount = buffer_count;
    set.pBindings = bindings.data();
    Check(vk.vkCreateDescriptorSetLayout(device, &set, nullptr, &p.set), "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo layout{};
    layout.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    layout.setLayoutCount = 1;
    layout.pSetLayouts = &p.set;
    layout.pushConstantRangeCount = push_bytes > 0 ? 1u : 0u;
    layout.pPushConstantRanges = &range;
    Check(vk.vkCreatePipelineLayout(device, &layout, nullptr, &p.layout), "vkCreatePipelineLayout");
    const std::uint32_t local = kLaunchThreads;
    VkSpecializationMapEntry entry{0, 0, sizeof local};
    VkSpecializationInfo specialization{1, &entry, sizeof local, &local};
    VkComputePipelineCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = p.module;
    info.stage.pName = name;
    info.stage.pSpecializationInfo = &specialization;
    info.layout = p.layout;
    Check(vk.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &p.pipeline),
          "vkCreateComputePipelines");
    return p;
  }
};

}  // namespace bench
