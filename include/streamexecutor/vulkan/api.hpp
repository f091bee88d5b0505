// The Vulkan loader, opened at run time: nothing links against libvulkan, so a
// machine without Vulkan runs the program and the platform reports
// UNAVAILABLE with zero devices. Entry points are resolved once per process
// (global and instance level) and once per device (device level, through
// vkGetDeviceProcAddr, which skips the loader's dispatch trampolines on the
// launch path). <vulkan/vulkan.h> gives the types only.
#pragma once

#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <string_view>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::vulkan_detail {

// The library name the platform opens; LD_LIBRARY_PATH may point it elsewhere.
inline constexpr const char* kLoaderLibrary = "libvulkan.so.1";

#define SE_VK_GLOBAL_ENTRY_POINTS(X)        \
  X(vkCreateInstance)                       \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceLayerProperties)     \
  X(vkEnumerateInstanceVersion)

#define SE_VK_INSTANCE_ENTRY_POINTS(X)        \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Present only where VK_EXT_debug_utils is enabled (validation runs).
#define SE_VK_DEBUG_ENTRY_POINTS(X) \
  X(vkCreateDebugUtilsMessengerEXT) \
  X(vkDestroyDebugUtilsMessengerEXT)

#define SE_VK_DEVICE_ENTRY_POINTS(X) \
  X(vkDestroyDevice)                 \
  X(vkGetDeviceQueue)                \
  X(vkDeviceWaitIdle)                \
  X(vkQueueSubmit)                   \
  X(vkAllocateMemory)                \
  X(vkFreeMemory)                    \
  X(vkMapMemory)                     \
  X(vkUnmapMemory)                   \
  X(vkCreateBuffer)                  \
  X(vkDestroyBuffer)                 \
  X(vkGetBufferMemoryRequirements)   \
  X(vkBindBufferMemory)              \
  X(vkCreateCommandPool)             \
  X(vkDestroyCommandPool)            \
  X(vkAllocateCommandBuffers)        \
  X(vkFreeCommandBuffers)            \
  X(vkBeginCommandBuffer)            \
  X(vkEndCommandBuffer)              \
  X(vkResetCommandBuffer)            \
  X(vkCmdCopyBuffer)                 \
  X(vkCmdFillBuffer)                 \
  X(vkCmdPipelineBarrier)            \
  X(vkCmdBindPipeline)               \
  X(vkCmdPushConstants)              \
  X(vkCmdDispatch)                   \
  X(vkCmdWriteTimestamp)             \
  X(vkCmdResetQueryPool)             \
  X(vkCreateSemaphore)               \
  X(vkDestroySemaphore)              \
  X(vkGetSemaphoreCounterValue)      \
  X(vkWaitSemaphores)                \
  X(vkSignalSemaphore)               \
  X(vkCreateShaderModule)            \
  X(vkDestroyShaderModule)           \
  X(vkCreateDescriptorSetLayout)     \
  X(vkDestroyDescriptorSetLayout)    \
  X(vkCreatePipelineLayout)          \
  X(vkDestroyPipelineLayout)         \
  X(vkCreateComputePipelines)        \
  X(vkDestroyPipeline)               \
  X(vkCreateQueryPool)               \
  X(vkDestroyQueryPool)              \
  X(vkGetQueryPoolResults)           \
  X(vkCmdPushDescriptorSetKHR)

// Present only where the device has the extension (null otherwise).
#define SE_VK_OPTIONAL_DEVICE_ENTRY_POINTS(X) X(vkGetMemoryHostPointerPropertiesEXT)

#define SE_VK_DECLARE(name) PFN_##name name = nullptr;

struct InstanceApi {
  void* library = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  SE_VK_GLOBAL_ENTRY_POINTS(SE_VK_DECLARE)
  SE_VK_INSTANCE_ENTRY_POINTS(SE_VK_DECLARE)
  SE_VK_DEBUG_ENTRY_POINTS(SE_VK_DECLARE)
};

struct DeviceApi {
  SE_VK_DEVICE_ENTRY_POINTS(SE_VK_DECLARE)
  SE_VK_OPTIONAL_DEVICE_ENTRY_POINTS(SE_VK_DECLARE)
};

#undef SE_VK_DECLARE

constexpr std::string_view ResultName(VkResult result) {
  switch (result) {
#define SE_VK_RESULT(name) \
  case name: return #name;
    SE_VK_RESULT(VK_SUCCESS)
    SE_VK_RESULT(VK_NOT_READY)
    SE_VK_RESULT(VK_TIMEOUT)
    SE_VK_RESULT(VK_EVENT_SET)
    SE_VK_RESULT(VK_EVENT_RESET)
    SE_VK_RESULT(VK_INCOMPLETE)
    SE_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    SE_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    SE_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    SE_VK_RESULT(VK_ERROR_DEVICE_LOST)
    SE_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    SE_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    SE_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    SE_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    SE_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    SE_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    SE_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    SE_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    SE_VK_RESULT(VK_ERROR_UNKNOWN)
    SE_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    SE_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    SE_VK_RESULT(VK_ERROR_FRAGMENTATION)
    SE_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    SE_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    SE_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
    SE_VK_RESULT(VK_ERROR_NOT_PERMITTED_KHR)
#undef SE_VK_RESULT
    default: return "an unknown VkResult";
  }
}

constexpr ErrorCode ResultCode(VkResult result) {
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_FRAGMENTATION: return ErrorCode::kResourceExhausted;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED: return ErrorCode::kUnavailable;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT: return ErrorCode::kUnimplemented;
    case VK_ERROR_DEVICE_LOST: return ErrorCode::kAborted;
    default: return ErrorCode::kInternal;
  }
}

// "vkQueueSubmit failed with VK_ERROR_DEVICE_LOST (-4) <context>".
template <typename... Args>
Status VkError(std::string_view call, VkResult result, ::streamexecutor::detail::FormatString<Args...> context,
               Args&&... args) {
  return Status(ResultCode(result), ::streamexecutor::detail::Format(
                                        "{} failed with {} ({}) {}", call, ResultName(result), static_cast<int>(result),
                                        ::streamexecutor::detail::Format(context, std::forward<Args>(args)...)));
}

struct LoaderLoad {
  InstanceApi api;
  Status status;
};

inline LoaderLoad OpenLoader() {
  LoaderLoad load;
  InstanceApi& api = load.api;
  // RTLD_LOCAL: the loader's symbols must not interpose on anything else.
  api.library = dlopen(kLoaderLibrary, RTLD_NOW | RTLD_LOCAL);
  if (api.library == nullptr) {
    const char* why = dlerror();
    load.status = MakeError(ErrorCode::kUnavailable,
                            "no Vulkan: dlopen(\"{}\") failed: {} (install a Vulkan loader and driver, e.g. "
                            "libvulkan1 and mesa-vulkan-drivers)",
                            kLoaderLibrary, why ? why : "unknown reason");
    return load;
  }
  api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(api.library, "vkGetInstanceProcAddr"));
  if (api.vkGetInstanceProcAddr == nullptr) {
    load.status =
        MakeError(ErrorCode::kUnavailable, "{} was loaded but does not export vkGetInstanceProcAddr", kLoaderLibrary);
    return load;
  }
#define SE_VK_RESOLVE_GLOBAL(name) \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  SE_VK_GLOBAL_ENTRY_POINTS(SE_VK_RESOLVE_GLOBAL)
#undef SE_VK_RESOLVE_GLOBAL
  if (api.vkCreateInstance == nullptr || api.vkEnumerateInstanceVersion == nullptr) {
    load.status = MakeError(ErrorCode::kUnavailable,
                            "the Vulkan loader {} has no vkEnumerateInstanceVersion: it is older than Vulkan 1.1; "
                            "this backend needs 1.2 (timeline semaphores)",
                            kLoaderLibrary);
  }
  return load;
}

// The process-wide loader, opened once and never closed: static destructors
// of a user's objects may still call into it at exit. Exported: one table per
// process, however many shared libraries include these headers.
STREAMEXECUTOR_EXPORT inline const LoaderLoad& Loader() {
  static const LoaderLoad load = OpenLoader();
  return load;
}

// Instance-level entry points of `instance`; false if one is missing.
inline bool ResolveInstance(InstanceApi& api, VkInstance instance) {
  bool complete = true;
#define SE_VK_RESOLVE_INSTANCE(name)                                                   \
  api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name)); \
  complete = complete && api.name != nullptr;
  SE_VK_INSTANCE_ENTRY_POINTS(SE_VK_RESOLVE_INSTANCE)
#undef SE_VK_RESOLVE_INSTANCE
#define SE_VK_RESOLVE_DEBUG(name) api.name = reinterpret_cast<PFN_##name>(api.vkGetInstanceProcAddr(instance, #name));
  SE_VK_DEBUG_ENTRY_POINTS(SE_VK_RESOLVE_DEBUG)
#undef SE_VK_RESOLVE_DEBUG
  return complete;
}

// Device-level entry points; `missing` names the first one the device lacks.
inline bool ResolveDevice(const InstanceApi& instance, VkDevice device, DeviceApi& api, std::string_view& missing) {
#define SE_VK_RESOLVE_DEVICE(name)                                                      \
  api.name = reinterpret_cast<PFN_##name>(instance.vkGetDeviceProcAddr(device, #name)); \
  if (api.name == nullptr && missing.empty()) missing = #name;
  SE_VK_DEVICE_ENTRY_POINTS(SE_VK_RESOLVE_DEVICE)
#undef SE_VK_RESOLVE_DEVICE
#define SE_VK_RESOLVE_OPTIONAL(name) \
  api.name = reinterpret_cast<PFN_##name>(instance.vkGetDeviceProcAddr(device, #name));
  SE_VK_OPTIONAL_DEVICE_ENTRY_POINTS(SE_VK_RESOLVE_OPTIONAL)
#undef SE_VK_RESOLVE_OPTIONAL
  return missing.empty();
}

}  // namespace streamexecutor::vulkan_detail
