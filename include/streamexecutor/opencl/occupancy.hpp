// Kernel attributes on OpenCL (core/occupancy.hpp), from
// clGetKernelWorkGroupInfo. OpenCL has no occupancy calculator: the core's
// rule applies, with the limits opencl/describe.hpp reports.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streamexecutor/core/occupancy.hpp"
#include "streamexecutor/opencl/backend.hpp"

namespace streamexecutor {

template <>
struct Occupancy<opencl> {
  static constexpr bool kKernelsDeclareSharedMemory = true;  // __local arrays in the kernel body

  static StatusOr<KernelAttributes> Attributes(const opencl::ExecutorState&, const opencl::KernelHandle& kernel,
                                               const DeviceDescription& device) {
    const opencl_detail::LoadedKernel& loaded = *kernel.impl;
    const cl_kernel k = loaded.kernel;
    const cl_device_id d = loaded.executor->device;
    std::size_t work_group_size = 0, multiple = 0;
    std::size_t compile_size[3] = {0, 0, 0};
    cl_ulong private_bytes = 0;
    STREAMEXECUTOR_RETURN_IF_ERROR(
        Query(k, d, CL_KERNEL_WORK_GROUP_SIZE, "CL_KERNEL_WORK_GROUP_SIZE", sizeof(work_group_size), &work_group_size));
    STREAMEXECUTOR_RETURN_IF_ERROR(Query(k, d, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                         "CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE", sizeof(multiple), &multiple));
    STREAMEXECUTOR_RETURN_IF_ERROR(Query(k, d, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, "CL_KERNEL_COMPILE_WORK_GROUP_SIZE",
                                         sizeof(compile_size), compile_size));
    STREAMEXECUTOR_RETURN_IF_ERROR(
        Query(k, d, CL_KERNEL_PRIVATE_MEM_SIZE, "CL_KERNEL_PRIVATE_MEM_SIZE", sizeof(private_bytes), &private_bytes));
    KernelAttributes attributes;
    attributes.max_threads_per_block = std::min<std::uint64_t>(work_group_size, device.max_threads_per_block);
    if (compile_size[0] != 0) {
      attributes.required_block_dims = Dim3{compile_size[0], compile_size[1], compile_size[2]};
      attributes.max_threads_per_block = attributes.required_block_dims.Count();
    }
    // CL_KERNEL_LOCAL_MEM_SIZE as read when the kernel was loaded: later it
    // also counts the __local arguments the latest launch set.
    attributes.static_shared_memory_bytes = loaded.static_local_bytes;
    attributes.max_dynamic_shared_memory_bytes = loaded.device_local_bytes > loaded.static_local_bytes
                                                     ? loaded.device_local_bytes - loaded.static_local_bytes
                                                     : 0;
    attributes.local_memory_per_thread_bytes = private_bytes;
    attributes.preferred_block_size_multiple = std::max<std::uint64_t>(multiple, 1);
    return attributes;
  }

 private:
  static Status Query(cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info what, std::string_view name,
                      std::size_t bytes, void* value) {
    if (const cl_int error = clGetKernelWorkGroupInfo(kernel, device, what, bytes, value, nullptr);
        error != CL_SUCCESS) {
      return opencl_detail::ClError("clGetKernelWorkGroupInfo", error, "reading {}", name);
    }
    return Status();
  }
};

static_assert(KernelAttributesBackend<opencl> && !DriverOccupancyBackend<opencl>);

}  // namespace streamexecutor
