// MemoryPool<B>: stream-ordered allocation. Stream::ThenAllocate takes memory
// from a pool and Stream::ThenDeallocate gives it back in stream order, as
// cuMemAllocAsync / cuMemFreeAsync do, on every backend.
//
// The pool keeps the blocks it got from the driver (B::Allocate) and hands a
// freed block out again only when that is safe without luck:
//   - to the stream that freed it, at once: the stream's later work runs after
//     the free, so after every use queued before it;
//   - to any stream, once an event recorded by the free has completed (polled,
//     never waited for on the host).
// A block handed out gets a new allocation record and id (core/
// allocation_registry.hpp), so views of its previous life are refused like
// views of freed memory, although the bytes are the same.
//
// Blocks go back to the driver (B::Deallocate, which every backend defers
// until queued work on the memory is done) when the free ones exceed the
// release threshold, on Trim, when a driver allocation fails (then the
// allocation is tried once more), and when the pool is destroyed.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "streamexecutor/core/allocation_registry.hpp"
#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

struct MemoryPoolOptions {
  // Free bytes the pool keeps for reuse; a free that leaves more returns
  // blocks to the driver. The default keeps everything until Trim (CUDA's
  // default pool releases at synchronisations instead; docs/api.md).
  std::uint64_t release_threshold = std::numeric_limits<std::uint64_t>::max();
  // Bytes allocated up front, ready for the first allocations.
  std::uint64_t reserve = 0;
};

struct MemoryPoolStatistics {
  std::uint64_t bytes_in_use = 0;        // asked for by live allocations
  std::uint64_t peak_bytes_in_use = 0;   // the most bytes_in_use has been
  std::uint64_t bytes_reserved = 0;      // held from the driver: blocks in use and free
  std::uint64_t bytes_free = 0;          // in free blocks
  std::uint64_t largest_free_block = 0;  // bytes
  std::uint64_t allocations_in_use = 0;
  std::uint64_t allocations = 0;         // handed out since the pool was made
  std::uint64_t reused = 0;              // of those, served from a free block
  std::uint64_t driver_allocations = 0;  // blocks obtained from the driver
  std::uint64_t driver_releases = 0;     // blocks returned to the driver
};

namespace detail {
template <Backend B>
class MemoryPools;
}  // namespace detail

template <Backend B>
class MemoryPool {
 public:
  // A pool of the executor's memory besides its default one
  // (DefaultMemoryPool); ThenDeallocate finds it from the memory.
  explicit MemoryPool(StreamExecutor<B>* executor, MemoryPoolOptions options = {})
      : MemoryPool(executor, options, /*is_default=*/false) {}
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;
  // Every block goes back to the driver. Allocations still live are retired
  // first: their views are refused from then on, like views of freed memory,
  // and work already queued on them still runs (the backend defers the
  // release).
  ~MemoryPool() {
    if (executor_ == nullptr) return;
    if (listed_) detail::MemoryPools<B>::Unlist(*executor_, this);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [opaque, block] : in_use_) {
      executor_->registry_.RetireAny(block.view);
      ReleaseBlock(opaque, block.capacity);
    }
    in_use_.clear();
    for (auto& [capacity, block] : free_) {
      if (block.has_event) B::DestroyEvent(executor_->native_state(), block.event);
      ReleaseBlock(block.opaque, capacity);
    }
    free_.clear();
    for (typename B::EventHandle& event : spare_events_) B::DestroyEvent(executor_->native_state(), event);
  }

  StreamExecutor<B>* executor() const { return executor_; }
  // Why the constructor's reserve failed, if it did.
  const Status& init_status() const { return init_status_; }

  // Allocates `bytes` (rounded up to the pool's block size) from the driver
  // and keeps it free, ready for any stream.
  Status Reserve(std::uint64_t bytes) {
    if (Status s = CheckUsable("MemoryPool::Reserve"); !s.ok()) return s;
    if (bytes == 0) return Status();
    std::lock_guard<std::mutex> lock(mutex_);
    StatusOr<void*> block = DriverAllocate("MemoryPool::Reserve", BlockSize(bytes));
    if (!block.ok()) return block.status();
    free_.emplace(BlockSize(bytes), FreeBlock{block.value(), nullptr, {}, false});
    return Status();
  }

  // Returns free blocks to the driver until at most `keep_bytes` stay free.
  Status Trim(std::uint64_t keep_bytes = 0) {
    if (Status s = CheckUsable("MemoryPool::Trim"); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mutex_);
    ReleaseFreeAbove(keep_bytes);
    return Status();
  }

  void SetReleaseThreshold(std::uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    threshold_ = bytes;
    if (executor_ != nullptr) ReleaseFreeAbove(threshold_);
  }
  std::uint64_t release_threshold() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threshold_;
  }

  MemoryPoolStatistics GetStatistics() const {
    std::lock_guard<std::mutex> lock(mutex_);
    MemoryPoolStatistics statistics = statistics_;
    statistics.allocations_in_use = in_use_.size();
    statistics.bytes_free = 0;
    statistics.largest_free_block = free_.empty() ? 0 : free_.rbegin()->first;
    for (const auto& entry : free_) statistics.bytes_free += entry.first;
    return statistics;
  }

  // ---- For Stream::ThenAllocate and ThenDeallocate ---------------------------
  // `stream` is the stream's handle; `stream_key` tells streams apart for the
  // lifetime of their queued work (the stream's entry in its executor).

  StatusOr<DeviceMemoryBase> Allocate(std::string_view caller, const void* stream_key, std::uint64_t bytes) {
    if (Status s = CheckUsable(caller); !s.ok()) return s;
    const std::uint64_t size = BlockSize(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    void* opaque = TakeFree(stream_key, size);
    const bool reused = opaque != nullptr;
    if (!reused) {
      StatusOr<void*> block = DriverAllocate(caller, size);
      if (!block.ok()) return block.status();
      opaque = block.value();
    }
    StatusOr<DeviceMemoryBase> view = executor_->RegisterAllocation(opaque, bytes, detail::RecordKind::kPooled);
    if (!view.ok()) {
      free_.emplace(size, FreeBlock{opaque, nullptr, {}, false});
      return view.status();
    }
    try {
      in_use_.emplace(opaque, InUse{view.value(), size});
    } catch (...) {
      executor_->registry_.RetireAny(view.value());
      free_.emplace(size, FreeBlock{opaque, nullptr, {}, false});
      return MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory to track the allocation", caller,
                       executor_->DeviceLabel());
    }
    statistics_.allocations += 1;
    statistics_.reused += reused ? 1 : 0;
    statistics_.bytes_in_use += bytes;
    statistics_.peak_bytes_in_use = std::max(statistics_.peak_bytes_in_use, statistics_.bytes_in_use);
    return view;
  }

  // Whether `memory` is a live allocation of this pool.
  bool Owns(const DeviceMemoryBase& memory) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_use_.count(memory.opaque()) != 0;
  }

  // Retires `memory` (a whole, live allocation of this pool) and keeps its
  // block for reuse behind an event recorded on `stream`. With
  // `stream_failed`, nothing more runs on the stream: the block goes back to
  // the driver, which frees it after the work already queued.
  Status Free(std::string_view caller, typename B::StreamHandle& stream, const void* stream_key, bool stream_failed,
              const DeviceMemoryBase& memory) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = in_use_.find(memory.opaque());
    if (found == in_use_.end()) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: {} is not a live allocation of this memory pool",
                       caller, executor_->DeviceLabel(), memory.opaque());
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(executor_->RetireRecord(caller, memory, detail::RecordKind::kPooled));
    const std::uint64_t size = found->second.capacity;
    statistics_.bytes_in_use -= memory.size();
    in_use_.erase(found);
    if (stream_failed) {
      ReleaseBlock(memory.opaque(), size);
      return Status();
    }
    typename B::EventHandle event{};
    if (!spare_events_.empty()) {
      event = spare_events_.back();
      spare_events_.pop_back();
    } else if (Status s = B::CreateEvent(executor_->native_state(), event); !s.ok()) {
      ReleaseBlock(memory.opaque(), size);
      return s;
    }
    if (Status s = B::Submit(stream, op::RecordEvent<typename B::EventHandle>{&event}); !s.ok()) {
      B::DestroyEvent(executor_->native_state(), event);
      ReleaseBlock(memory.opaque(), size);
      return s;
    }
    try {
      free_.emplace(size, FreeBlock{memory.opaque(), stream_key, event, true});
    } catch (...) {
      B::DestroyEvent(executor_->native_state(), event);
      ReleaseBlock(memory.opaque(), size);
      return Status();
    }
    ReleaseFreeAbove(threshold_);
    return Status();
  }

 private:
  friend class detail::MemoryPools<B>;

  MemoryPool(StreamExecutor<B>* executor, MemoryPoolOptions options, bool is_default)
      : executor_(executor), threshold_(options.release_threshold) {
    if (executor_ == nullptr) {
      init_status_ = Status(ErrorCode::kInvalidArgument, "MemoryPool: constructed with a null StreamExecutor");
      return;
    }
    if (!is_default) {
      init_status_ = detail::MemoryPools<B>::List(*executor_, this);
      listed_ = init_status_.ok();
    }
    if (init_status_.ok() && options.reserve > 0) init_status_ = Reserve(options.reserve);
  }

  struct FreeBlock {
    void* opaque;
    const void* freed_on;  // the stream whose later work may reuse it at once
    typename B::EventHandle event;
    bool has_event;  // false once the free has run (or for a reserve)
  };
  struct InUse {
    DeviceMemoryBase view;
    std::uint64_t capacity;
  };

  // Blocks come in sizes that recur: powers of two from 256 B to 1 MiB, then
  // multiples of 1 MiB, so that a freed block fits the next request of about
  // its size.
  static std::uint64_t BlockSize(std::uint64_t bytes) {
    constexpr std::uint64_t kSmallest = 256;
    constexpr std::uint64_t kLarge = std::uint64_t{1} << 20;
    if (bytes <= kSmallest) return kSmallest;
    if (bytes <= kLarge) return std::uint64_t{1} << (64 - std::countl_zero(bytes - 1));
    if (bytes > std::numeric_limits<std::uint64_t>::max() - kLarge) return bytes;
    return (bytes + kLarge - 1) / kLarge * kLarge;
  }

  Status CheckUsable(std::string_view caller) const {
    if (executor_ == nullptr) {
      return MakeError(ErrorCode::kFailedPrecondition, "{}: the memory pool was constructed with a null StreamExecutor",
                       caller);
    }
    return Status();
  }

  // Whether the free of `block` has run; a completed event goes back to the
  // spare list.
  bool Passed(FreeBlock& block) {
    if (!block.has_event) return true;
    StatusOr<bool> done = B::QueryEvent(block.event);
    if (!done.ok() || !done.value()) return false;
    spare_events_.push_back(block.event);
    block.has_event = false;
    return true;
  }

  // A free block of `size` that `stream_key` may use now, or null. Blocks
  // the stream freed itself come first: they need no driver query, and a
  // stream that takes its own keeps at most one of them waiting, however far
  // its device lags behind (another stream's would leave its own behind).
  void* TakeFree(const void* stream_key, std::uint64_t size) {
    auto [first, last] = free_.equal_range(size);
    auto take = [&](auto it) {
      if (it->second.has_event) spare_events_.push_back(it->second.event);  // stream order covers it
      void* opaque = it->second.opaque;
      free_.erase(it);
      return opaque;
    };
    for (auto it = first; it != last; ++it) {
      if (it->second.freed_on == stream_key) return take(it);
    }
    for (auto it = first; it != last; ++it) {
      if (Passed(it->second)) return take(it);
    }
    return nullptr;
  }

  // From the driver; when it is out of memory, the free blocks go back and
  // the allocation is tried once more.
  StatusOr<void*> DriverAllocate(std::string_view caller, std::uint64_t size) {
    const std::uint64_t limit = executor_->GetDeviceDescription().max_allocation_size;
    if (size > limit) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "{} on {}: {} bytes exceed the device's largest allocation of {} bytes", caller,
                       executor_->DeviceLabel(), size, limit);
    }
    StatusOr<DeviceMemoryBase> memory = B::Allocate(executor_->native_state(), size);
    if (!memory.ok() && memory.status().code() == ErrorCode::kResourceExhausted && !free_.empty()) {
      ReleaseFreeAbove(0);
      memory = B::Allocate(executor_->native_state(), size);
    }
    if (!memory.ok()) {
      const std::uint64_t largest = free_.empty() ? 0 : free_.rbegin()->first;
      Status described = executor_->DescribeExhaustion(memory.status(), caller, size);
      if (described.code() != ErrorCode::kResourceExhausted) return described;
      return MakeError(ErrorCode::kResourceExhausted,
                       "{}; this pool: {} in use by {} allocations, largest free block {}", described.message(),
                       detail::FormatBytes(statistics_.bytes_in_use), in_use_.size(), detail::FormatBytes(largest));
    }
    executor_->registry_.AddPoolReserve(size);
    statistics_.bytes_reserved += size;
    statistics_.driver_allocations += 1;
    return memory.value().opaque();
  }

  void ReleaseBlock(void* opaque, std::uint64_t size) {
    B::Deallocate(executor_->native_state(), DeviceMemoryBase(opaque, size)).IgnoreError();
    executor_->registry_.SubtractPoolReserve(size);
    statistics_.bytes_reserved -= size;
    statistics_.driver_releases += 1;
  }

  // Largest blocks first: they free the most with the fewest driver calls.
  void ReleaseFreeAbove(std::uint64_t keep_bytes) {
    std::uint64_t free_bytes = 0;
    for (const auto& entry : free_) free_bytes += entry.first;
    while (free_bytes > keep_bytes && !free_.empty()) {
      auto largest = std::prev(free_.end());
      if (largest->second.has_event) B::DestroyEvent(executor_->native_state(), largest->second.event);
      ReleaseBlock(largest->second.opaque, largest->first);
      free_bytes -= largest->first;
      free_.erase(largest);
    }
  }

  StreamExecutor<B>* executor_;
  std::uint64_t threshold_;
  Status init_status_;
  bool listed_ = false;
  mutable std::mutex mutex_;
  std::multimap<std::uint64_t, FreeBlock> free_;  // by size
  std::unordered_map<void*, InUse> in_use_;
  std::vector<typename B::EventHandle> spare_events_;
  MemoryPoolStatistics statistics_;
};

template <Backend B>
MemoryPool(StreamExecutor<B>*) -> MemoryPool<B>;

namespace detail {

// Per executor (an extension, core/extensions.hpp): its default pool, and
// the other pools of its memory, which ThenDeallocate asks for the owner.
template <Backend B>
class MemoryPools {
 public:
  explicit MemoryPools(StreamExecutor<B>* executor) : default_pool_(executor, MemoryPoolOptions{}, true) {}

  static StatusOr<MemoryPools*> Of(StreamExecutor<B>& executor) {
    return executor.template GetOrCreateExtension<MemoryPools>([&]() -> StatusOr<std::unique_ptr<MemoryPools>> {
      std::unique_ptr<MemoryPools> made(new (std::nothrow) MemoryPools(&executor));
      if (made == nullptr) {
        return MakeError(ErrorCode::kResourceExhausted, "memory pools of {}: out of host memory",
                         executor.DeviceLabel());
      }
      return made;
    });
  }

  MemoryPool<B>& default_pool() { return default_pool_; }

  // The pool `memory` is a live allocation of, or null.
  MemoryPool<B>* OwnerOf(const DeviceMemoryBase& memory) {
    if (default_pool_.Owns(memory)) return &default_pool_;
    std::lock_guard<std::mutex> lock(mutex_);
    for (MemoryPool<B>* pool : pools_) {
      if (pool->Owns(memory)) return pool;
    }
    return nullptr;
  }

  // Every pool of the executor, the default one first.
  template <typename Visit>
  void ForEach(Visit&& visit) {
    visit(default_pool_);
    std::lock_guard<std::mutex> lock(mutex_);
    for (MemoryPool<B>* pool : pools_) visit(*pool);
  }

  static Status List(StreamExecutor<B>& executor, MemoryPool<B>* pool) {
    StatusOr<MemoryPools*> pools = Of(executor);
    if (!pools.ok()) return pools.status();
    std::lock_guard<std::mutex> lock(pools.value()->mutex_);
    try {
      pools.value()->pools_.push_back(pool);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "MemoryPool on {}: out of host memory", executor.DeviceLabel());
    }
    return Status();
  }
  static void Unlist(StreamExecutor<B>& executor, MemoryPool<B>* pool) {
    MemoryPools* pools = executor.template FindExtension<MemoryPools>();
    if (pools == nullptr) return;
    std::lock_guard<std::mutex> lock(pools->mutex_);
    std::erase(pools->pools_, pool);
  }

 private:
  std::mutex mutex_;
  std::vector<MemoryPool<B>*> pools_;
  MemoryPool<B> default_pool_;
};

}  // namespace detail

// The executor's default pool, which ThenAllocate uses when given none. It
// lives as long as the executor.
template <Backend B>
StatusOr<MemoryPool<B>*> DefaultMemoryPool(StreamExecutor<B>* executor) {
  if (executor == nullptr) {
    return Status(ErrorCode::kInvalidArgument, "DefaultMemoryPool: the StreamExecutor is null");
  }
  StatusOr<detail::MemoryPools<B>*> pools = detail::MemoryPools<B>::Of(*executor);
  if (!pools.ok()) return pools.status();
  return &pools.value()->default_pool();
}

namespace detail {

// Stream::ThenAllocate's work: the request's checks, the pool (the
// executor's default one when null), the allocation.
template <Backend B>
StatusOr<DeviceMemoryBase> AllocateInStreamOrder(StreamExecutor<B>* executor, MemoryPool<B>* pool,
                                                 const void* stream_key, std::uint64_t count, std::size_t element_size,
                                                 std::string_view element_type) {
  constexpr std::string_view caller = "ThenAllocate";
  const std::string_view label = executor->DeviceLabel();
  if (count == 0) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: zero elements of {} requested", caller, label,
                     element_type);
  }
  if (count > std::numeric_limits<std::uint64_t>::max() / element_size) {
    return MakeError(ErrorCode::kResourceExhausted, "{} on {}: {} elements of {} overflow a 64-bit size", caller, label,
                     count, element_type);
  }
  if (pool == nullptr) {
    StatusOr<MemoryPool<B>*> fallback = DefaultMemoryPool(executor);
    if (!fallback.ok()) return fallback.status();
    pool = fallback.value();
  }
  if (pool->executor() != executor) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the memory pool belongs to {}", caller, label,
                     pool->executor() != nullptr ? std::string_view(pool->executor()->DeviceLabel())
                                                 : std::string_view("no executor"));
  }
  return pool->Allocate(caller, stream_key, count * element_size);
}

// Stream::ThenDeallocate's: finds the pool `*memory` came from and gives it
// back in the order of `stream`; nulls `*memory` once a pool took it.
template <Backend B>
Status DeallocateInStreamOrder(StreamExecutor<B>* executor, typename B::StreamHandle& stream, const void* stream_key,
                               bool stream_failed, DeviceMemoryBase* memory) {
  constexpr std::string_view caller = "ThenDeallocate";
  const std::string_view label = executor->DeviceLabel();
  if (memory == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the DeviceMemory pointer is null", caller, label);
  }
  if (memory->IsNull()) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the DeviceMemory is {}", caller, label,
                     DescribeNullMemory(*memory));
  }
  MemoryPool<B>* pool = nullptr;
  if (auto* pools = executor->template FindExtension<MemoryPools<B>>()) pool = pools->OwnerOf(*memory);
  if (pool == nullptr) {
    STREAMEXECUTOR_RETURN_IF_ERROR(executor->CheckDeviceRange(caller, "given", *memory, 0));
    return MakeError(ErrorCode::kFailedPrecondition,
                     "{} on {}: the DeviceMemory was not allocated by ThenAllocate (memory from Allocate goes back "
                     "with Deallocate)",
                     caller, label);
  }
  Status freed = pool->Free(caller, stream, stream_key, stream_failed, *memory);
  *memory = DeviceMemoryBase();
  return freed;
}

}  // namespace detail

// What the executor's memory is used for: every live allocation (Allocate
// and the pools'), and what its pools hold.
struct MemoryStatistics {
  std::uint64_t bytes_in_use = 0;
  std::uint64_t peak_bytes_in_use = 0;
  std::uint64_t allocations_in_use = 0;
  std::uint64_t bytes_reserved_in_pools = 0;
  std::uint64_t largest_free_block = 0;  // in any pool
};

template <Backend B>
MemoryStatistics GetMemoryStatistics(StreamExecutor<B>* executor) {
  MemoryStatistics statistics;
  if (executor == nullptr) return statistics;
  const detail::AllocationCounts counts = executor->AllocationCounts();
  statistics.bytes_in_use = counts.bytes_in_use;
  statistics.peak_bytes_in_use = counts.peak_bytes_in_use;
  statistics.allocations_in_use = counts.allocations_in_use;
  statistics.bytes_reserved_in_pools = counts.bytes_reserved_in_pools;
  if (auto* pools = executor->template FindExtension<detail::MemoryPools<B>>()) {
    pools->ForEach([&](MemoryPool<B>& pool) {
      statistics.largest_free_block = std::max(statistics.largest_free_block, pool.GetStatistics().largest_free_block);
    });
  }
  return statistics;
}

}  // namespace streamexecutor
