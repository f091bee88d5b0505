// DeviceDescription from clGetDeviceInfo.
#pragma once

#include <CL/cl_ext.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/device_description.hpp"
#include "streamexecutor/opencl/runtime.hpp"

namespace streamexecutor::opencl_detail {

inline std::string SvmCapabilities(cl_device_svm_capabilities svm) {
  std::string out;
  auto add = [&](cl_device_svm_capabilities bit, std::string_view name) {
    if (svm & bit) out += ::streamexecutor::detail::Format("{}{}", out.empty() ? "" : ", ", name);
  };
  add(CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, "coarse-grain buffer");
  add(CL_DEVICE_SVM_FINE_GRAIN_BUFFER, "fine-grain buffer");
  add(CL_DEVICE_SVM_FINE_GRAIN_SYSTEM, "fine-grain system");
  add(CL_DEVICE_SVM_ATOMICS, "atomics");
  return out.empty() ? std::string("none") : out;
}

inline std::size_t KernelWorkGroupSize(cl_kernel kernel, cl_device_id device) {
  std::size_t size = 0;
  if (clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof(size), &size, nullptr) != CL_SUCCESS) {
    return std::numeric_limits<std::size_t>::max();  // unknown: the enqueue reports it
  }
  return size;
}

// CL_KERNEL_LOCAL_MEM_SIZE: the kernel's static __local arrays (0 if unknown).
inline std::uint64_t KernelStaticLocalBytes(cl_kernel kernel, cl_device_id device) {
  cl_ulong bytes = 0;
  if (clGetKernelWorkGroupInfo(kernel, device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(bytes), &bytes, nullptr) !=
      CL_SUCCESS) {
    return 0;
  }
  return bytes;
}

// What NVIDIA's and AMD's attribute-query extensions add where the device
// has them (queried by the constants of <CL/cl_ext.h>).
inline void DescribeVendorExtensions(cl_device_id device, std::string_view extensions, DeviceDescription& d) {
  auto number = [&](cl_device_info param) { return Info<cl_uint>(clGetDeviceInfo, device, param); };
  if (extensions.find("cl_nv_device_attribute_query") != std::string_view::npos) {
    d.warp_size = static_cast<int>(number(CL_DEVICE_WARP_SIZE_NV));
    d.registers_per_block = number(CL_DEVICE_REGISTERS_PER_BLOCK_NV);
  }
  if (extensions.find("cl_amd_device_attribute_query") != std::string_view::npos) {
    d.warp_size = static_cast<int>(number(CL_DEVICE_WAVEFRONT_WIDTH_AMD));
    d.shared_memory_per_multiprocessor = number(CL_DEVICE_LOCAL_MEM_SIZE_PER_COMPUTE_UNIT_AMD);
  }
  if (d.warp_size <= 0) d.warp_size = 1;  // a failed query
}

inline DeviceDescription DescribeDevice(cl_device_id device, SliceScheme slices) {
  auto text = [&](cl_device_info param) { return InfoString(clGetDeviceInfo, device, param); };
  auto number = [&]<typename T>(cl_device_info param, T) { return Info<T>(clGetDeviceInfo, device, param); };
  const auto platform = Info<cl_platform_id>(clGetDeviceInfo, device, CL_DEVICE_PLATFORM);

  DeviceDescription d;
  d.platform_name = "opencl";
  d.name = text(CL_DEVICE_NAME);
  d.vendor = text(CL_DEVICE_VENDOR);
  d.driver_version = text(CL_DRIVER_VERSION);
  d.api_version = text(CL_DEVICE_VERSION);
  d.device_memory_size = number(CL_DEVICE_GLOBAL_MEM_SIZE, cl_ulong{});
  d.max_allocation_size = number(CL_DEVICE_MAX_MEM_ALLOC_SIZE, cl_ulong{});
  d.shared_memory_per_block = number(CL_DEVICE_LOCAL_MEM_SIZE, cl_ulong{});
  d.compute_units = static_cast<int>(number(CL_DEVICE_MAX_COMPUTE_UNITS, cl_uint{}));
  d.max_threads_per_block = number(CL_DEVICE_MAX_WORK_GROUP_SIZE, std::size_t{});
  const std::vector<std::size_t> items =
      InfoVector<std::size_t>(clGetDeviceInfo, device, CL_DEVICE_MAX_WORK_ITEM_SIZES);
  const std::uint64_t dims[3] = {items.size() > 0 ? items[0] : 1, items.size() > 1 ? items[1] : 1,
                                 items.size() > 2 ? items[2] : 1};
  d.max_block_dims = Dim3{dims[0], dims[1], dims[2]};
  // OpenCL limits only the global size (a size_t per dimension), so blocks per
  // dimension are bounded by what keeps blocks x threads representable.
  constexpr std::uint64_t kMaxGlobal = std::numeric_limits<std::size_t>::max();
  d.max_grid_dims = Dim3{kMaxGlobal / dims[0], kMaxGlobal / dims[1], kMaxGlobal / dims[2]};
  d.clock_rate_khz = static_cast<int>(number(CL_DEVICE_MAX_CLOCK_FREQUENCY, cl_uint{}) * 1000);
  const auto svm = number(CL_DEVICE_SVM_CAPABILITIES, cl_device_svm_capabilities{});
  d.unified_memory = (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != 0;

  const auto type = number(CL_DEVICE_TYPE, cl_device_type{});
  if (type & CL_DEVICE_TYPE_CPU) {
    // A CPU device's compute unit is a thread that runs one work-group at a
    // time (PoCL, Intel's CPU runtime), with local memory for that group.
    d.threads_per_multiprocessor = d.max_threads_per_block;
    d.blocks_per_multiprocessor = 1;
    d.shared_memory_per_multiprocessor = d.shared_memory_per_block;
  }
  d.constant_memory_size = number(CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, cl_ulong{});
  d.l2_cache_size = number(CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cl_ulong{});
  d.cache_line_size = number(CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, cl_uint{});
  d.ecc_enabled = number(CL_DEVICE_ERROR_CORRECTION_SUPPORT, cl_bool{}) != CL_FALSE;
  d.integrated = number(CL_DEVICE_HOST_UNIFIED_MEMORY, cl_bool{}) != CL_FALSE;
  DescribeVendorExtensions(device, text(CL_DEVICE_EXTENSIONS), d);

  d.extra.emplace_back(
      "platform", ::streamexecutor::detail::Format("{} ({})", InfoString(clGetPlatformInfo, platform, CL_PLATFORM_NAME),
                                                   InfoString(clGetPlatformInfo, platform, CL_PLATFORM_VERSION)));
  d.extra.emplace_back("OpenCL C version", text(CL_DEVICE_OPENCL_C_VERSION));
  d.extra.emplace_back("device type", type & CL_DEVICE_TYPE_GPU           ? "GPU"
                                      : type & CL_DEVICE_TYPE_CPU         ? "CPU"
                                      : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
                                                                          : "other");
  d.extra.emplace_back(
      "preferred vector widths (char short int long float double half)",
      ::streamexecutor::detail::Format("{} {} {} {} {} {} {}", number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR, cl_uint{}),
                                       number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT, cl_uint{}),
                                       number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT, cl_uint{}),
                                       number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG, cl_uint{}),
                                       number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, cl_uint{}),
                                       number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, cl_uint{}),
                                       number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF, cl_uint{})));
  d.extra.emplace_back("SVM capabilities", SvmCapabilities(svm));
  d.extra.emplace_back("base address alignment", ::streamexecutor::detail::Format(
                                                     "{} bytes", number(CL_DEVICE_MEM_BASE_ADDR_ALIGN, cl_uint{}) / 8));
  d.extra.emplace_back("slices passed to kernels as", slices == SliceScheme::kSvmPointer
                                                          ? "SVM pointers (any offset)"
                                                          : "cached sub-buffers (offsets aligned to the base address)");
  d.extra.emplace_back(
      "profiling timer resolution",
      ::streamexecutor::detail::Format("{} ns", number(CL_DEVICE_PROFILING_TIMER_RESOLUTION, std::size_t{})));
  d.extra.emplace_back("local memory type", number(CL_DEVICE_LOCAL_MEM_TYPE, cl_device_local_mem_type{}) == CL_LOCAL
                                                ? "dedicated"
                                                : "global");
  return d;
}

}  // namespace streamexecutor::opencl_detail
