// The Vulkan instance and the devices the backend can drive: Vulkan 1.2 or
// newer (timeline semaphores), a queue with compute, and VK_KHR_push_descriptor
// (a launch pushes its buffers without a descriptor pool). Devices without
// them are left out and named in the platform's note.
//
// STREAMEXECUTOR_VULKAN_VALIDATION=1 enables the Khronos validation layer,
// prints what it reports as errors and counts them (ValidationErrors());
// =fatal aborts at the first, which is how the test suite requires zero.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/vulkan/api.hpp"

namespace streamexecutor::vulkan_detail {

struct PhysicalDevice {
  VkPhysicalDevice device = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
};

struct Instance {
  InstanceApi api;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  std::vector<PhysicalDevice> devices;
  std::string skipped;  // devices left out, and why
};

// Validation messages of severity error, process-wide.
STREAMEXECUTOR_EXPORT inline std::atomic<int>& ValidationErrorCount() {
  static std::atomic<int> count{0};
  return count;
}
inline int ValidationErrors() { return ValidationErrorCount().load(); }

inline bool ValidationIsFatal() {
  const char* value = std::getenv("STREAMEXECUTOR_VULKAN_VALIDATION");
  return value != nullptr && std::string_view(value) == "fatal";
}

inline VKAPI_ATTR VkBool32 VKAPI_CALL OnValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                          VkDebugUtilsMessageTypeFlagsEXT,
                                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    ValidationErrorCount().fetch_add(1);
    std::fprintf(stderr, "streamexecutor: Vulkan validation error: %s\n", data && data->pMessage ? data->pMessage : "");
    // A test run asks for this: the first misuse fails it where it happens.
    if (ValidationIsFatal()) std::abort();
  }
  return VK_FALSE;
}

inline bool ValidationRequested() {
  const char* value = std::getenv("STREAMEXECUTOR_VULKAN_VALIDATION");
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

inline bool HasDeviceExtension(const InstanceApi& api, VkPhysicalDevice device, std::string_view name) {
  std::uint32_t count = 0;
  if (api.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (api.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()) != VK_SUCCESS) return false;
  for (const VkExtensionProperties& extension : extensions) {
    if (name == extension.extensionName) return true;
  }
  return false;
}

inline Status CreateInstance(Instance& out) {
  const LoaderLoad& loader = Loader();
  if (!loader.status.ok()) return loader.status;
  out.api = loader.api;
  InstanceApi& api = out.api;
  std::uint32_t version = 0;
  api.vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_2) {
    return MakeError(ErrorCode::kUnavailable,
                     "the Vulkan loader supports Vulkan {}.{}; this backend needs 1.2 (timeline semaphores)",
                     VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
  }
  const bool validate = ValidationRequested();
  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  if (validate) {
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{
      VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, "streamexecutor", 1, "streamexecutor", 1, VK_API_VERSION_1_2};
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (VkResult r = api.vkCreateInstance(&info, nullptr, &out.instance); r != VK_SUCCESS) {
    return VkError("vkCreateInstance", r, "{}",
                   validate ? "with the validation layer (STREAMEXECUTOR_VULKAN_VALIDATION is set: install "
                              "vulkan-validationlayers)"
                            : "(is a Vulkan driver installed, e.g. mesa-vulkan-drivers?)");
  }
  if (!ResolveInstance(api, out.instance)) {
    return MakeError(ErrorCode::kUnavailable, "the Vulkan instance lacks a Vulkan 1.1 instance-level entry point");
  }
  if (validate && api.vkCreateDebugUtilsMessengerEXT != nullptr) {
    VkDebugUtilsMessengerCreateInfoEXT messenger{};
    messenger.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    messenger.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger.pfnUserCallback = &OnValidationMessage;
    api.vkCreateDebugUtilsMessengerEXT(out.instance, &messenger, nullptr, &out.messenger);
  }
  std::uint32_t count = 0;
  if (VkResult r = api.vkEnumeratePhysicalDevices(out.instance, &count, nullptr); r != VK_SUCCESS)
    return VkError("vkEnumeratePhysicalDevices", r, "listing devices");
  std::vector<VkPhysicalDevice> devices(count);
  if (VkResult r = api.vkEnumeratePhysicalDevices(out.instance, &count, devices.data()); r != VK_SUCCESS)
    return VkError("vkEnumeratePhysicalDevices", r, "listing {} devices", count);
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceProperties properties{};
    api.vkGetPhysicalDeviceProperties(device, &properties);
    auto skip = [&](std::string_view why) {
      out.skipped +=
          ::streamexecutor::detail::Format("{}{}: {}", out.skipped.empty() ? "" : "; ", properties.deviceName, why);
    };
    if (properties.apiVersion < VK_API_VERSION_1_2) {
      skip("Vulkan 1.1 only (timeline semaphores need 1.2)");
      continue;
    }
    VkPhysicalDeviceVulkan12Features features12{};
    features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    VkPhysicalDeviceFeatures2 features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features.pNext = &features12;
    api.vkGetPhysicalDeviceFeatures2(device, &features);
    if (!features12.timelineSemaphore) {
      skip("no timeline semaphores");
      continue;
    }
    if (!HasDeviceExtension(api, device, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) {
      skip("no VK_KHR_push_descriptor");
      continue;
    }
    std::uint32_t families = 0;
    api.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, nullptr);
    std::vector<VkQueueFamilyProperties> family(families);
    api.vkGetPhysicalDeviceQueueFamilyProperties(device, &families, family.data());
    // A compute queue family, preferring one without graphics (an async compute queue).
    std::uint32_t chosen = UINT32_MAX;
    for (std::uint32_t i = 0; i < families; ++i) {
      if (!(family[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
      if (chosen == UINT32_MAX || !(family[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) chosen = i;
    }
    if (chosen == UINT32_MAX) {
      skip("no compute queue");
      continue;
    }
    out.devices.push_back({device, chosen});
  }
  return Status();
}

}  // namespace streamexecutor::vulkan_detail
