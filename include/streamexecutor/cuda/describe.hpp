// DeviceDescription for a CUDA device, from cuDeviceGetAttribute.
#pragma once

#include <cuda.h>

#include <string>

#include "streamexecutor/cuda/backend.hpp"

namespace streamexecutor {

inline DeviceDescription cuda::Describe(const ExecutorState& executor) {
  const cuda_detail::DriverApi& api = *executor.api;
  // An attribute the driver does not know (older driver) reads as 0 rather
  // than failing the whole description.
  auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    if (api.cuDeviceGetAttribute(&value, which, executor.device) != CUDA_SUCCESS) value = 0;
    return value;
  };
  DeviceDescription d;
  d.platform_name = std::string(kName);
  d.device_ordinal = executor.ordinal;
  char name[256] = {};
  if (api.cuDeviceGetName(name, sizeof(name) - 1, executor.device) != CUDA_SUCCESS) name[0] = '\0';
  d.name = name[0] ? name : "unnamed CUDA device";
  d.vendor = "NVIDIA";
  d.driver_version =
      ::streamexecutor::detail::Format("CUDA driver {}.{}", api.driver_version / 1000, api.driver_version % 1000 / 10);
  d.api_version = ::streamexecutor::detail::Format("CUDA driver API {}.{} (built against)", CUDA_VERSION / 1000,
                                                   CUDA_VERSION % 1000 / 10);
  std::size_t total = 0;
  if (api.cuDeviceTotalMem(&total, executor.device) != CUDA_SUCCESS) total = 0;
  d.device_memory_size = total;
  d.max_allocation_size = total;
  d.shared_memory_per_block = static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK));
  d.compute_units = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.max_threads_per_block = static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
  d.max_block_dims = Dim3{static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)),
                          static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)),
                          static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z))};
  d.max_grid_dims = Dim3{static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)),
                         static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)),
                         static_cast<std::uint64_t>(attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z))};
  d.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  d.clock_rate_khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  d.compute_capability_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.compute_capability_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.unified_memory = attribute(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) != 0;

  auto count = [&](CUdevice_attribute which) { return static_cast<std::uint64_t>(attribute(which)); };
  d.threads_per_multiprocessor = count(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  d.blocks_per_multiprocessor = count(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  d.shared_memory_per_multiprocessor = count(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  d.registers_per_multiprocessor = count(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  d.registers_per_block = count(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  d.shared_memory_per_block_optin = count(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.constant_memory_size = count(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY);
  d.l2_cache_size = count(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.memory_bus_width_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  d.memory_clock_rate_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d.async_engine_count = attribute(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
  d.concurrent_kernels = attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS) != 0;
  d.ecc_enabled = attribute(CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0;
  d.integrated = attribute(CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0;

  struct Extra {
    const char* label;
    CUdevice_attribute attribute;
  };
  static constexpr Extra kExtras[] = {
      {"unified addressing", CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
      {"compute mode", CU_DEVICE_ATTRIBUTE_COMPUTE_MODE},
      {"PCI bus id", CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
      {"PCI device id", CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID},
      {"cluster launch", CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH},
  };
  for (const Extra& extra : kExtras) d.extra.emplace_back(extra.label, std::to_string(attribute(extra.attribute)));
  d.extra.emplace_back("cuFuncGetParamInfo (load-time size check)", api.cuFuncGetParamInfo ? "yes" : "no");
  return d;
}

}  // namespace streamexecutor
