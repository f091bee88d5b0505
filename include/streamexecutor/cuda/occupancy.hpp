// Kernel attributes and occupancy on CUDA (core/occupancy.hpp): the driver's
// own cuFuncGetAttribute and occupancy calculator (cuOccupancy*), loaded with
// the rest of the driver (cuda/driver.hpp). The core has checked every query.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string_view>

#include "streamexecutor/core/occupancy.hpp"
#include "streamexecutor/cuda/backend.hpp"

namespace streamexecutor {

template <>
struct Occupancy<cuda> {
  static constexpr bool kKernelsDeclareSharedMemory = true;  // static __shared__ arrays

  static StatusOr<KernelAttributes> Attributes(const cuda::ExecutorState& executor, const cuda::KernelHandle& kernel,
                                               const DeviceDescription& device) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    int values[8] = {};
    static constexpr struct {
      CUfunction_attribute which;
      std::string_view name;
    } kAsked[8] = {
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"},
        {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES"},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES"},
        {CU_FUNC_ATTRIBUTE_NUM_REGS, "CU_FUNC_ATTRIBUTE_NUM_REGS"},
        {CU_FUNC_ATTRIBUTE_PTX_VERSION, "CU_FUNC_ATTRIBUTE_PTX_VERSION"},
        {CU_FUNC_ATTRIBUTE_BINARY_VERSION, "CU_FUNC_ATTRIBUTE_BINARY_VERSION"},
        {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"},
    };
    for (int i = 0; i < 8; ++i) {
      if (const CUresult r = executor.api->cuFuncGetAttribute(&values[i], kAsked[i].which, kernel.function);
          r != CUDA_SUCCESS) {
        return executor.api->Error(r, "cuFuncGetAttribute", "reading {}", kAsked[i].name);
      }
    }
    auto count = [](int value) { return static_cast<std::uint64_t>(std::max(value, 0)); };
    KernelAttributes attributes;
    attributes.max_threads_per_block = std::min(count(values[0]), device.max_threads_per_block);
    attributes.static_shared_memory_bytes = count(values[1]);
    attributes.constant_memory_bytes = count(values[2]);
    attributes.local_memory_per_thread_bytes = count(values[3]);
    attributes.registers_per_thread = values[4];
    attributes.ptx_version = values[5];
    attributes.binary_version = values[6];
    attributes.max_dynamic_shared_memory_bytes = count(values[7]);
    attributes.preferred_block_size_multiple = static_cast<std::uint64_t>(std::max(device.warp_size, 1));
    return attributes;
  }

  static StatusOr<std::uint64_t> MaxActiveBlocks(const cuda::ExecutorState& executor, const cuda::KernelHandle& kernel,
                                                 std::uint64_t threads_per_block, std::uint64_t dynamic_shared_bytes) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    int blocks = 0;
    if (const CUresult r = executor.api->cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks, kernel.function, AsInt(threads_per_block), static_cast<std::size_t>(dynamic_shared_bytes));
        r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                 "for {} threads per block and {} bytes of dynamic shared memory", threads_per_block,
                                 dynamic_shared_bytes);
    }
    return static_cast<std::uint64_t>(std::max(blocks, 0));
  }

  // Dynamic shared memory as a constant (no per-block-size callback: the
  // core evaluates that form itself, one MaxActiveBlocks per candidate).
  static StatusOr<BlockSizeSuggestion> SuggestBlockSize(const cuda::ExecutorState& executor,
                                                        const cuda::KernelHandle& kernel,
                                                        std::uint64_t dynamic_shared_bytes, std::uint64_t limit) {
    const cuda_detail::ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    int min_grid = 0, block = 0;
    if (const CUresult r = executor.api->cuOccupancyMaxPotentialBlockSize(
            &min_grid, &block, kernel.function, nullptr, static_cast<std::size_t>(dynamic_shared_bytes), AsInt(limit));
        r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuOccupancyMaxPotentialBlockSize",
                                 "for {} bytes of dynamic shared memory and blocks of at most {} threads",
                                 dynamic_shared_bytes, limit);
    }
    if (block <= 0) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "cuOccupancyMaxPotentialBlockSize found no block size up to {} threads that can be resident "
                       "with {} bytes of dynamic shared memory",
                       limit, dynamic_shared_bytes);
    }
    BlockSizeSuggestion suggestion;
    suggestion.threads_per_block = static_cast<std::uint64_t>(block);
    suggestion.min_blocks_for_full_occupancy = static_cast<std::uint64_t>(std::max(min_grid, 0));
    return suggestion;
  }

 private:
  // Block sizes reach the driver as int; the core has bounded them by the
  // kernel's limit, which the driver reported as an int.
  static int AsInt(std::uint64_t value) { return static_cast<int>(std::min<std::uint64_t>(value, INT_MAX)); }
};

static_assert(DriverOccupancyBackend<cuda>);

}  // namespace streamexecutor
