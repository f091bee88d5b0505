// Kernel attributes and the occupancy calculator, on every backend:
//
//   se::StatusOr<se::KernelAttributes> attributes = executor->GetKernelAttributes(kernel);
//   se::StatusOr<std::uint64_t> active = executor->MaxActiveBlocksPerMultiprocessor(kernel, 256, shared_bytes);
//   se::StatusOr<se::BlockSizeSuggestion> best = executor->SuggestBlockSize(kernel, shared_bytes);
//
// What a driver knows about a kernel is read by the backend (Occupancy<B>,
// specialized in <backend>/occupancy.hpp as Interop<B> is: CUDA
// cuFuncGetAttribute, OpenCL clGetKernelWorkGroupInfo, host the kernel's
// runner). Where the driver has a calculator of its own (CUDA
// cuOccupancy*), it answers; elsewhere the core computes the answer from the
// kernel's attributes and the DeviceDescription with one rule, written out in
// docs/api.md ("Kernel attributes and occupancy") and in ActiveBlocksByRule.
// The core checks every query before any driver sees it.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_description.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/fmt.hpp"

namespace streamexecutor {

template <Backend B>
class StreamExecutor;

// One loaded kernel on one device. 0 means "not reported by this backend"
// where a field's comment allows it.
struct KernelAttributes {
  // The most threads per block a launch of this kernel may have: CUDA's
  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (registers and __launch_bounds__
  // lower it), OpenCL's CL_KERNEL_WORK_GROUP_SIZE (or the product of a
  // declared reqd_work_group_size), host the runner's (1024 for a kernel
  // taking CooperativeContext). Never above the device's max_threads_per_block.
  std::uint64_t max_threads_per_block = 0;
  // Block-shared memory the kernel's code declares: CUDA static __shared__,
  // OpenCL __local arrays in the kernel body. Host kernels declare none.
  std::uint64_t static_shared_memory_bytes = 0;
  // The most dynamic shared memory (SharedDeviceMemory arguments) one block
  // may have: CUDA CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, OpenCL the
  // device's local memory less the kernel's static, host the block's scratch.
  std::uint64_t max_dynamic_shared_memory_bytes = 0;
  // Memory private to each thread that the compiler placed outside registers:
  // CUDA local memory (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES), OpenCL private
  // memory (CL_KERNEL_PRIVATE_MEM_SIZE); 0 on the host.
  std::uint64_t local_memory_per_thread_bytes = 0;
  // The stack each thread of a block has to itself: a cooperative host
  // kernel's fiber stack (64 KiB). 0 where threads have no stack of their own
  // (other host kernels run on their worker's stack) or it is not reported.
  std::uint64_t stack_bytes_per_thread = 0;
  // CUDA only (CU_FUNC_ATTRIBUTE_NUM_REGS); 0 elsewhere.
  int registers_per_thread = 0;
  // Block sizes that are a multiple of this use the hardware best: CUDA the
  // warp size, OpenCL CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, host 1.
  std::uint64_t preferred_block_size_multiple = 1;
  // CUDA only: __constant__ memory the kernel uses, and the PTX and binary
  // (SASS) versions it was compiled for, as major * 10 + minor (CUDA's form).
  std::uint64_t constant_memory_bytes = 0;
  int ptx_version = 0;
  int binary_version = 0;
  // OpenCL only: reqd_work_group_size(x, y, z) when the kernel declares it
  // (CL_KERNEL_COMPILE_WORK_GROUP_SIZE); every launch must use exactly it.
  // All zero when not declared.
  Dim3 required_block_dims{0, 0, 0};

  bool HasRequiredBlockDims() const { return required_block_dims.Count() != 0; }

  std::string ToString() const {
    std::string out = ::streamexecutor::detail::Format(
        "max threads per block {}, preferred multiple {}, static shared {} bytes, dynamic shared up to {} bytes, "
        "local per thread {} bytes",
        max_threads_per_block, preferred_block_size_multiple, static_shared_memory_bytes,
        max_dynamic_shared_memory_bytes, local_memory_per_thread_bytes);
    if (stack_bytes_per_thread != 0)
      out += ::streamexecutor::detail::Format(", stack per thread {} bytes", stack_bytes_per_thread);
    if (registers_per_thread != 0)
      out += ::streamexecutor::detail::Format(", {} registers per thread", registers_per_thread);
    if (constant_memory_bytes != 0)
      out += ::streamexecutor::detail::Format(", constant {} bytes", constant_memory_bytes);
    if (ptx_version != 0 || binary_version != 0) {
      out += ::streamexecutor::detail::Format(", PTX {}.{}, binary sm_{}", ptx_version / 10, ptx_version % 10,
                                              binary_version);
    }
    if (HasRequiredBlockDims()) {
      out += ::streamexecutor::detail::Format(", required block {}x{}x{}", required_block_dims.x, required_block_dims.y,
                                              required_block_dims.z);
    }
    return out;
  }
};

// What SuggestBlockSize returns (CUDA's cuOccupancyMaxPotentialBlockSize).
struct BlockSizeSuggestion {
  std::uint64_t threads_per_block = 0;
  // Blocks of that size resident at once on one multiprocessor.
  std::uint64_t active_blocks_per_multiprocessor = 0;
  // Blocks that fill every multiprocessor to that occupancy (CUDA's
  // minGridSize): active_blocks_per_multiprocessor x compute units.
  std::uint64_t min_blocks_for_full_occupancy = 0;
};

// Specialized by each backend in <backend>/occupancy.hpp; the primary
// template has no members, so a backend without one lacks the capability.
template <typename B>
struct Occupancy {};

// Reads a loaded kernel's attributes. `device` is the executor's description
// (the core raised its zero launch limits). kKernelsDeclareSharedMemory: the
// backend's kernel language declares block-shared arrays (CUDA __shared__,
// OpenCL __local), which static_shared_memory_bytes reports.
template <typename B>
concept KernelAttributesBackend =
    Backend<B> && requires(const typename B::ExecutorState& executor, const typename B::KernelHandle& kernel,
                           const DeviceDescription& device) {
      { Occupancy<B>::Attributes(executor, kernel, device) } -> std::same_as<StatusOr<KernelAttributes>>;
      { Occupancy<B>::kKernelsDeclareSharedMemory } -> std::convertible_to<bool>;
    };

// A driver with an occupancy calculator of its own (CUDA). The core has
// checked the block size and shared memory; SuggestBlockSize fills
// threads_per_block and min_blocks_for_full_occupancy (limit: the largest
// block to consider, at most the kernel's).
template <typename B>
concept DriverOccupancyBackend =
    KernelAttributesBackend<B> &&
    requires(const typename B::ExecutorState& executor, const typename B::KernelHandle& kernel, std::uint64_t n) {
      { Occupancy<B>::MaxActiveBlocks(executor, kernel, n, n) } -> std::same_as<StatusOr<std::uint64_t>>;
      { Occupancy<B>::SuggestBlockSize(executor, kernel, n, n) } -> std::same_as<StatusOr<BlockSizeSuggestion>>;
    };

namespace detail {

inline constexpr std::uint64_t kUnbounded = std::numeric_limits<std::uint64_t>::max();

// The largest block SuggestBlockSize proposes unless the caller's limit is
// lower: the backend's kLargestSuggestedBlock where it names one (host: a
// worker runs one block at a time, so every block size keeps it equally
// busy, and blocks beyond CUDA's 1024 threads only leave the other workers
// idle on small grids), else the kernel's own limit.
template <typename B>
constexpr std::uint64_t LargestSuggestedBlock() {
  if constexpr (requires { Occupancy<B>::kLargestSuggestedBlock; })
    return Occupancy<B>::kLargestSuggestedBlock;
  else
    return kUnbounded;
}

// Threads one multiprocessor holds at once, as the rule counts them: the
// description's where known, else one block of the device's largest size
// (a compute unit runs at least that).
inline std::uint64_t RuleThreadsPerMultiprocessor(const DeviceDescription& device) {
  return device.threads_per_multiprocessor != 0 ? device.threads_per_multiprocessor : device.max_threads_per_block;
}

// The occupancy rule of backends whose driver has no calculator (host,
// OpenCL), from docs/api.md: the least of
//   threads:       T / (threads_per_block rounded up to the preferred multiple),
//                  T = threads_per_multiprocessor (else max_threads_per_block);
//   blocks:        blocks_per_multiprocessor, where known;
//   shared memory: S / (static + dynamic shared bytes), where the kernel uses
//                  any; S = shared_memory_per_multiprocessor (else per block).
// The query has been checked (CheckOccupancyQuery): threads_per_block >= 1.
inline std::uint64_t ActiveBlocksByRule(const KernelAttributes& kernel, const DeviceDescription& device,
                                        std::uint64_t threads_per_block, std::uint64_t dynamic_shared_bytes) {
  const std::uint64_t multiple = std::max<std::uint64_t>(kernel.preferred_block_size_multiple, 1);
  const std::uint64_t rounded = threads_per_block > kUnbounded - (multiple - 1)
                                    ? threads_per_block
                                    : (threads_per_block + multiple - 1) / multiple * multiple;
  std::uint64_t active = RuleThreadsPerMultiprocessor(device) / rounded;
  if (device.blocks_per_multiprocessor != 0) active = std::min(active, device.blocks_per_multiprocessor);
  const std::uint64_t shared = kernel.static_shared_memory_bytes > kUnbounded - dynamic_shared_bytes
                                   ? kUnbounded
                                   : kernel.static_shared_memory_bytes + dynamic_shared_bytes;
  if (shared != 0) {
    const std::uint64_t per_multiprocessor = device.shared_memory_per_multiprocessor != 0
                                                 ? device.shared_memory_per_multiprocessor
                                                 : device.shared_memory_per_block;
    active = std::min(active, per_multiprocessor / shared);
  }
  return active;
}

// The checks every occupancy query gets before a driver sees it.
inline Status CheckOccupancyQuery(std::string_view caller, std::string_view label, std::string_view name,
                                  const KernelAttributes& kernel, std::uint64_t threads_per_block,
                                  std::uint64_t dynamic_shared_bytes) {
  if (threads_per_block == 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} of kernel '{}' on {}: 0 threads per block; a block has at least one thread", caller, name,
                     label);
  }
  if (kernel.HasRequiredBlockDims() && threads_per_block != kernel.required_block_dims.Count()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} of kernel '{}' on {}: {} threads per block, but the kernel declares "
                     "reqd_work_group_size({}, {}, {}): every launch has exactly {} threads per block",
                     caller, name, label, threads_per_block, kernel.required_block_dims.x, kernel.required_block_dims.y,
                     kernel.required_block_dims.z, kernel.required_block_dims.Count());
  }
  if (threads_per_block > kernel.max_threads_per_block) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} of kernel '{}' on {}: {} threads per block; the kernel runs at most {} (its "
                     "max_threads_per_block)",
                     caller, name, label, threads_per_block, kernel.max_threads_per_block);
  }
  if (dynamic_shared_bytes > kernel.max_dynamic_shared_memory_bytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} of kernel '{}' on {}: {} bytes of dynamic shared memory per block; the kernel may have at "
                     "most {} (its max_dynamic_shared_memory_bytes; its static shared memory is {} bytes)",
                     caller, name, label, dynamic_shared_bytes, kernel.max_dynamic_shared_memory_bytes,
                     kernel.static_shared_memory_bytes);
  }
  return Status();
}

// The block size with the highest occupancy in threads (active blocks x block
// size), the largest on a tie, as CUDA's cuOccupancyMaxPotentialBlockSize
// picks it: from `largest` down, the largest first and then every multiple of
// the preferred multiple below it, stopping early once a candidate fills
// `full_threads` (0: never). `shared_for(b)` is the dynamic shared memory a
// block of b threads needs; block sizes that need more than the kernel may
// have are skipped. `active(b, shared)` -> StatusOr<std::uint64_t>.
template <typename SharedFor, typename Active>
StatusOr<BlockSizeSuggestion> SearchBlockSize(std::string_view label, std::string_view name,
                                              const KernelAttributes& kernel, std::uint64_t largest,
                                              std::uint64_t full_threads, SharedFor&& shared_for, Active&& active) {
  const std::uint64_t multiple = std::max<std::uint64_t>(kernel.preferred_block_size_multiple, 1);
  BlockSizeSuggestion best;
  std::uint64_t best_threads = 0;
  std::uint64_t refused_size = 0, refused_bytes = 0;  // for the message when nothing fits
  auto consider = [&](std::uint64_t size) -> Status {
    const std::uint64_t shared = static_cast<std::uint64_t>(shared_for(size));
    if (shared > kernel.max_dynamic_shared_memory_bytes) {
      refused_size = size;
      refused_bytes = shared;
      return Status();
    }
    StatusOr<std::uint64_t> blocks = active(size, shared);
    if (!blocks.ok()) return blocks.status();
    const std::uint64_t threads = blocks.value() > kUnbounded / size ? kUnbounded : blocks.value() * size;
    if (blocks.value() != 0 && threads > best_threads) {
      best_threads = threads;
      best.threads_per_block = size;
      best.active_blocks_per_multiprocessor = blocks.value();
    }
    return Status();
  };
  if (kernel.HasRequiredBlockDims()) {
    STREAMEXECUTOR_RETURN_IF_ERROR(consider(kernel.required_block_dims.Count()));
  } else {
    STREAMEXECUTOR_RETURN_IF_ERROR(consider(largest));
    for (std::uint64_t size = (largest - 1) / multiple * multiple; size > 0; size -= multiple) {
      if (full_threads != 0 && best_threads >= full_threads) break;
      STREAMEXECUTOR_RETURN_IF_ERROR(consider(size));
    }
  }
  if (best.threads_per_block == 0) {
    if (refused_size != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "SuggestBlockSize of kernel '{}' on {}: no block size fits: the shared memory asked for a "
                       "block of {} threads is {} bytes, and the kernel may have at most {}",
                       name, label, refused_size, refused_bytes, kernel.max_dynamic_shared_memory_bytes);
    }
    return MakeError(ErrorCode::kResourceExhausted,
                     "SuggestBlockSize of kernel '{}' on {}: no block size up to {} threads can be resident on a "
                     "multiprocessor",
                     name, label, largest);
  }
  return best;
}

// StreamExecutor's occupancy calls (a base class, so that executor.hpp only
// names it).
template <typename B>
class OccupancyApi {
 public:
  // The attributes of `kernel` (a TypedKernel or UntypedKernel loaded by this
  // executor) on this device.
  StatusOr<KernelAttributes> GetKernelAttributes(const KernelBase& kernel) const
    requires KernelAttributesBackend<B>
  {
    return Attributes("GetKernelAttributes", kernel);
  }

  // Blocks of `threads_per_block` threads, each with `dynamic_shared_bytes` of
  // dynamic shared memory, resident at once on one multiprocessor (CUDA
  // cuOccupancyMaxActiveBlocksPerMultiprocessor; host and OpenCL: the rule in
  // docs/api.md). 0: such a block cannot be resident.
  StatusOr<std::uint64_t> MaxActiveBlocksPerMultiprocessor(const KernelBase& kernel, std::uint64_t threads_per_block,
                                                           std::uint64_t dynamic_shared_bytes = 0) const
    requires KernelAttributesBackend<B>
  {
    constexpr std::string_view caller = "MaxActiveBlocksPerMultiprocessor";
    StatusOr<KernelAttributes> attributes = Attributes(caller, kernel);
    if (!attributes.ok()) return attributes.status();
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckOccupancyQuery(caller, Self().DeviceLabel(), kernel.name(), attributes.value(),
                                                       threads_per_block, dynamic_shared_bytes));
    return Active(caller, kernel, attributes.value(), threads_per_block, dynamic_shared_bytes);
  }

  // The block size that gives `kernel` the highest occupancy with a fixed
  // amount of dynamic shared memory per block (CUDA
  // cuOccupancyMaxPotentialBlockSize), considering blocks of at most
  // `block_size_limit` threads (0: the kernel's limit).
  StatusOr<BlockSizeSuggestion> SuggestBlockSize(const KernelBase& kernel, std::uint64_t dynamic_shared_bytes = 0,
                                                 std::uint64_t block_size_limit = 0) const
    requires KernelAttributesBackend<B>
  {
    constexpr std::string_view caller = "SuggestBlockSize";
    StatusOr<KernelAttributes> attributes = Attributes(caller, kernel);
    if (!attributes.ok()) return attributes.status();
    const KernelAttributes& a = attributes.value();
    const std::uint64_t largest = Largest(a, block_size_limit);
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckOccupancyQuery(caller, Self().DeviceLabel(), kernel.name(), a,
                                                       a.HasRequiredBlockDims() ? a.required_block_dims.Count() : 1,
                                                       dynamic_shared_bytes));
    if constexpr (DriverOccupancyBackend<B>) {
      StatusOr<BlockSizeSuggestion> suggestion =
          Occupancy<B>::SuggestBlockSize(Self().native_state(), Handle(kernel), dynamic_shared_bytes, largest);
      if (!suggestion.ok()) return Context(caller, kernel, suggestion.status());
      BlockSizeSuggestion best = suggestion.value();
      StatusOr<std::uint64_t> active = Active(caller, kernel, a, best.threads_per_block, dynamic_shared_bytes);
      if (!active.ok()) return active.status();
      best.active_blocks_per_multiprocessor = active.value();
      return best;
    } else {
      return Search(kernel, a, largest, [&](std::uint64_t) { return dynamic_shared_bytes; });
    }
  }

  // The same with dynamic shared memory that depends on the block size:
  // `shared_for_block_size(threads)` returns the bytes a block of that many
  // threads needs (CUDA's blockSizeToDynamicSMemSize). Evaluated here on every
  // backend, one active-blocks query per candidate block size.
  template <typename SharedFor>
    requires KernelAttributesBackend<B> && std::invocable<SharedFor&, std::uint64_t> &&
             std::convertible_to<std::invoke_result_t<SharedFor&, std::uint64_t>, std::uint64_t>
  StatusOr<BlockSizeSuggestion> SuggestBlockSize(const KernelBase& kernel, SharedFor&& shared_for_block_size,
                                                 std::uint64_t block_size_limit = 0) const {
    StatusOr<KernelAttributes> attributes = Attributes("SuggestBlockSize", kernel);
    if (!attributes.ok()) return attributes.status();
    return Search(kernel, attributes.value(), Largest(attributes.value(), block_size_limit), shared_for_block_size);
  }

 private:
  const StreamExecutor<B>& Self() const { return static_cast<const StreamExecutor<B>&>(*this); }
  static const typename B::KernelHandle& Handle(const KernelBase& kernel) {
    return kernel.template handle<typename B::KernelHandle>();
  }
  Status Context(std::string_view caller, const KernelBase& kernel, const Status& status) const {
    return Status(status.code(), ::streamexecutor::detail::Format("{} of kernel '{}' on {}: {}", caller, kernel.name(),
                                                                  Self().DeviceLabel(), status.message()));
  }

  StatusOr<KernelAttributes> Attributes(std::string_view caller, const KernelBase& kernel) const {
    const StreamExecutor<B>& self = Self();
    if (!kernel.IsLoaded()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on {}: the kernel is not loaded (GetKernel failed or was not called)", caller,
                       self.DeviceLabel());
    }
    if (!kernel.IsLoadedOn(&self)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: kernel '{}' was loaded by {}, another StreamExecutor: ask that executor", caller,
                       self.DeviceLabel(), kernel.name(), kernel.loaded_on_label());
    }
    StatusOr<KernelAttributes> attributes =
        Occupancy<B>::Attributes(self.native_state(), Handle(kernel), self.GetDeviceDescription());
    if (!attributes.ok()) return Context(caller, kernel, attributes.status());
    return attributes;
  }

  std::uint64_t Largest(const KernelAttributes& a, std::uint64_t block_size_limit) const {
    std::uint64_t largest = std::min(a.max_threads_per_block, LargestSuggestedBlock<B>());
    if (block_size_limit != 0) largest = std::min(largest, block_size_limit);
    return std::max<std::uint64_t>(largest, 1);
  }

  StatusOr<std::uint64_t> Active(std::string_view caller, const KernelBase& kernel, const KernelAttributes& a,
                                 std::uint64_t threads_per_block, std::uint64_t dynamic_shared_bytes) const {
    if constexpr (DriverOccupancyBackend<B>) {
      StatusOr<std::uint64_t> active =
          Occupancy<B>::MaxActiveBlocks(Self().native_state(), Handle(kernel), threads_per_block, dynamic_shared_bytes);
      if (!active.ok()) return Context(caller, kernel, active.status());
      return active;
    } else {
      return ActiveBlocksByRule(a, Self().GetDeviceDescription(), threads_per_block, dynamic_shared_bytes);
    }
  }

  template <typename SharedFor>
  StatusOr<BlockSizeSuggestion> Search(const KernelBase& kernel, const KernelAttributes& a, std::uint64_t largest,
                                       SharedFor&& shared_for) const {
    const DeviceDescription& device = Self().GetDeviceDescription();
    const std::uint64_t full_threads =
        DriverOccupancyBackend<B> ? device.threads_per_multiprocessor : RuleThreadsPerMultiprocessor(device);
    StatusOr<BlockSizeSuggestion> best = SearchBlockSize(
        Self().DeviceLabel(), kernel.name(), a, largest, full_threads, shared_for,
        [&](std::uint64_t size, std::uint64_t shared) { return Active("SuggestBlockSize", kernel, a, size, shared); });
    if (!best.ok()) return best;
    const auto units = static_cast<std::uint64_t>(std::max(device.compute_units, 1));
    best.value().min_blocks_for_full_occupancy = best.value().active_blocks_per_multiprocessor * units;
    return best;
  }
};

}  // namespace detail
}  // namespace streamexecutor
