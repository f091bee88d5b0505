// MemoryPool<B>: stream-ordered allocation. Stream::ThenAllocate takes memory
// from a pool and Stream::ThenDeallocate gives it back in stream order, as
// cuMemAllocAsync / cuMemFreeAsync do, on every backend.
//
// The pool keeps the blocks it got from the driver (B::Allocate) and hands a
// freed block out again only when that is safe without luck: at once to the
// stream that freed it, to others once the free has run (core/free_blocks.hpp).
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
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "streamexecutor/core/allocation_registry.hpp"
#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/free_blocks.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/core/synchronous.hpp"

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
  // The driver's own pool (NativeMemoryPoolBackend: CUDA): bytes_reserved and
  // bytes_free are the driver's counts; largest_free_block, reused and the
  // driver_* counts are not known and stay 0.
  bool native = false;
};

namespace detail {
template <Backend B>
class MemoryPools;
// The driver pool a MemoryPool<B> holds where B has native pools.
template <typename B>
struct NativePoolHandle {
  using type = bool;  // none: never used
};
template <NativeMemoryPoolBackend B>
struct NativePoolHandle<B> {
  using type = typename B::PoolHandle;
};
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
    std::unique_lock<std::mutex> lock = Lock();
    if constexpr (NativeMemoryPoolBackend<B>) {
      if (native_) {
        std::vector<DeviceMemoryBase> outstanding;
        executor_->registry_.RetireAllOfLocked(
            this, [&](void* opaque, std::uint64_t bytes) { outstanding.emplace_back(opaque, bytes); });
        // The backend waits for the device before it frees what is still
        // out; not under the registry's lock, which a host callback still
        // queued may need.
        lock.unlock();
        B::DestroyPool(executor_->native_state(), native_pool_, std::span<const DeviceMemoryBase>(outstanding));
        return;
      }
    }
    std::uint64_t released_bytes = 0;
    executor_->registry_.RetireAllOfLocked(this, [&](void* opaque, std::uint64_t bytes) {
      B::Deallocate(executor_->native_state(), DeviceMemoryBase(opaque, BlockSize(bytes))).IgnoreError();
      released_bytes += BlockSize(bytes);
      statistics_.driver_releases += 1;
    });
    executor_->registry_.SubtractPoolReserveLocked(released_bytes);
    statistics_.bytes_reserved -= released_bytes;
    ReleaseFreeAbove(0);
    free_.DestroyMarkers(executor_->native_state());
  }

  StreamExecutor<B>* executor() const { return executor_; }
  // Why the constructor failed (the driver's pool, the reserve), if it did.
  const Status& init_status() const { return init_status_; }
  // Whether this is the driver's own pool (NativeMemoryPoolBackend).
  bool native() const { return native_; }

  // Allocates `bytes` (rounded up to the pool's block size) from the driver
  // and keeps it free, ready for any stream. A native pool keeps it up to its
  // release threshold.
  Status Reserve(std::uint64_t bytes) {
    if (Status s = CheckUsable("MemoryPool::Reserve"); !s.ok()) return s;
    if (bytes == 0) return Status();
    if constexpr (NativeMemoryPoolBackend<B>) {
      if (native_) return B::ReservePool(executor_->native_state(), native_pool_, bytes);
    }
    std::unique_lock<std::mutex> lock = Lock();
    const std::uint64_t size = BlockSize(bytes);
    StatusOr<void*> block = DriverAllocate(lock, "MemoryPool::Reserve", size);
    if (!block.ok()) return block.status();
    PutFree(size, block.value(), nullptr);
    return Status();
  }

  // Returns free blocks to the driver until at most `keep_bytes` stay free.
  Status Trim(std::uint64_t keep_bytes = 0) {
    if (Status s = CheckUsable("MemoryPool::Trim"); !s.ok()) return s;
    if constexpr (NativeMemoryPoolBackend<B>) {
      if (native_) return B::TrimPool(executor_->native_state(), native_pool_, keep_bytes);
    }
    std::unique_lock<std::mutex> lock = Lock();
    ReleaseFreeAbove(keep_bytes);
    return Status();
  }

  // Free bytes beyond `bytes` go back to the driver: at once here, at the
  // next synchronization in a native pool (as CUDA's pools do).
  Status SetReleaseThreshold(std::uint64_t bytes) {
    if (Status s = CheckUsable("MemoryPool::SetReleaseThreshold"); !s.ok()) return s;
    std::unique_lock<std::mutex> lock = Lock();
    threshold_ = bytes;
    if constexpr (NativeMemoryPoolBackend<B>) {
      if (native_) return B::SetPoolReleaseThreshold(executor_->native_state(), native_pool_, bytes);
    }
    ReleaseFreeAbove(threshold_);
    return Status();
  }
  std::uint64_t release_threshold() const {
    std::unique_lock<std::mutex> lock = Lock();
    return threshold_;
  }

  // A native pool asks the driver for its counts (a failed query leaves them 0).
  MemoryPoolStatistics GetStatistics() const {
    std::unique_lock<std::mutex> lock = Lock();
    MemoryPoolStatistics statistics = statistics_;
    if constexpr (NativeMemoryPoolBackend<B>) {
      if (native_) {
        lock.unlock();
        auto& self = const_cast<MemoryPool&>(*this);  // the driver's query takes the handle as it is
        StatusOr<NativePoolUsage> usage = B::PoolUsage(self.executor_->native_state(), self.native_pool_);
        statistics.native = true;
        if (usage.ok()) {
          statistics.bytes_reserved = usage.value().reserved;
          statistics.bytes_free = usage.value().reserved - std::min(usage.value().used, usage.value().reserved);
        }
        return statistics;
      }
    }
    statistics.bytes_free = free_.bytes();
    statistics.largest_free_block = free_.largest();
    return statistics;
  }

  // ---- For Stream::ThenAllocate and ThenDeallocate ---------------------------
  // `stream` is the stream's entry in its executor (core/synchronous.hpp),
  // which tells streams apart for as long as their work may run.

  StatusOr<DeviceMemoryBase> Allocate(std::string_view caller, detail::LiveStream<B>* stream, std::uint64_t bytes) {
    if (Status s = CheckUsable(caller); !s.ok()) return s;
    if constexpr (NativeMemoryPoolBackend<B>) {
      if (native_) return AllocateNative(caller, stream, bytes);
    }
    const std::uint64_t size = BlockSize(bytes);
    std::unique_lock<std::mutex> lock = Lock();
    void* opaque =
        free_.Take(executor_->native_state(), stream, size, [this](detail::LiveStream<B>* freed_on, auto&& visit) {
          return executor_->VisitLinkedStream(freed_on, visit);
        });
    const bool reused = opaque != nullptr;
    if (!reused) {
      StatusOr<void*> block = DriverAllocate(lock, caller, size);
      if (!block.ok()) return block.status();
      opaque = block.value();
    }
    StatusOr<DeviceMemoryBase> view = executor_->registry_.RegisterLocked(
        executor_->DeviceLabel(), opaque, bytes, detail::RecordKind::kPooled, static_cast<const void*>(this));
    if (!view.ok()) {
      PutFree(size, opaque, stream);  // still safe for this stream
      return view.status();
    }
    statistics_.allocations += 1;
    statistics_.reused += reused ? 1 : 0;
    statistics_.allocations_in_use += 1;
    statistics_.bytes_in_use += bytes;
    statistics_.peak_bytes_in_use = std::max(statistics_.peak_bytes_in_use, statistics_.bytes_in_use);
    return view;
  }

  // Returns `*memory` (a whole, live allocation of a pool of `executor`) to
  // its pool in the order of `stream`, and nulls it. With `stream_failed`,
  // nothing more runs on the stream: the block goes back to the driver,
  // which frees it after the work already queued.
  static Status Deallocate(std::string_view caller, StreamExecutor<B>& executor, detail::LiveStream<B>* stream,
                           bool stream_failed, DeviceMemoryBase* memory) {
    std::unique_lock<std::mutex> lock(executor.registry_.mutex());
    const void* owner = executor.registry_.PoolOfLocked(*memory);
    if (owner == nullptr) {
      lock.unlock();
      STREAMEXECUTOR_RETURN_IF_ERROR(executor.CheckDeviceRange(caller, "given", *memory, 0));
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on {}: the DeviceMemory was not allocated by ThenAllocate (memory from Allocate goes back "
                       "with Deallocate)",
                       caller, executor.DeviceLabel());
    }
    // Only a MemoryPool<B> registers pooled memory of a StreamExecutor<B>,
    // and its destructor retires that memory before the pool goes.
    auto* pool = static_cast<MemoryPool*>(const_cast<void*>(owner));
    Status freed = pool->RecycleLocked(caller, stream, stream_failed, *memory);
    lock.unlock();
    *memory = DeviceMemoryBase();
    return freed;
  }

 private:
  friend class detail::MemoryPools<B>;

  MemoryPool(StreamExecutor<B>* executor, MemoryPoolOptions options, bool is_default)
      : executor_(executor), threshold_(options.release_threshold) {
    if (executor_ == nullptr) {
      init_status_ = Status(ErrorCode::kInvalidArgument, "MemoryPool: constructed with a null StreamExecutor");
      return;
    }
    if constexpr (NativeMemoryPoolBackend<B>) {
      typename B::ExecutorState& state = executor_->native_state();
      if (B::HasNativePools(state)) {
        if (Status created = B::CreatePool(state, native_pool_); !created.ok()) {
          init_status_ = created;
          unusable_ = std::move(created);
          return;
        }
        native_ = true;
        init_status_ = B::SetPoolReleaseThreshold(state, native_pool_, threshold_);
      }
    }
    if (!is_default && init_status_.ok()) {
      init_status_ = detail::MemoryPools<B>::List(*executor_, this);
      listed_ = init_status_.ok();
    }
    if (init_status_.ok() && options.reserve > 0) init_status_ = Reserve(options.reserve);
  }

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
    if (!unusable_.ok()) [[unlikely]] {
      return MakeError(unusable_.code(), "{} on {}: the memory pool could not be made: {}", caller,
                       executor_->DeviceLabel(), unusable_.message());
    }
    return Status();
  }

  // The driver allocates on the stream; the registry lock is taken only to
  // register the memory.
  StatusOr<DeviceMemoryBase> AllocateNative(std::string_view caller, detail::LiveStream<B>* stream,
                                            std::uint64_t bytes) {
    const std::uint64_t limit = executor_->GetDeviceDescription().max_allocation_size;
    StatusOr<DeviceMemoryBase> memory =
        bytes > limit ? StatusOr<DeviceMemoryBase>(MakeError(ErrorCode::kResourceExhausted,
                                                             "{} bytes exceed the device's largest allocation of {} "
                                                             "bytes",
                                                             bytes, limit))
                      : B::AllocateFromPool(*stream->handle, native_pool_, bytes);
    if (!memory.ok()) {
      Status described = executor_->DescribeExhaustion(memory.status(), caller, bytes);
      if (described.code() != ErrorCode::kResourceExhausted) return described;
      const MemoryPoolStatistics statistics = GetStatistics();
      return MakeError(ErrorCode::kResourceExhausted,
                       "{}; this pool (the driver's): {} in use by {} allocations, {} "
                       "reserved",
                       described.message(), detail::FormatBytes(statistics.bytes_in_use), statistics.allocations_in_use,
                       detail::FormatBytes(statistics.bytes_reserved));
    }
    std::unique_lock<std::mutex> lock = Lock();
    StatusOr<DeviceMemoryBase> view =
        executor_->registry_.RegisterLocked(executor_->DeviceLabel(), memory.value().opaque(), bytes,
                                            detail::RecordKind::kPooled, static_cast<const void*>(this));
    if (!view.ok()) {
      B::FreeToPool(*stream->handle, memory.value()).IgnoreError();
      return view.status();
    }
    statistics_.allocations += 1;
    statistics_.allocations_in_use += 1;
    statistics_.bytes_in_use += bytes;
    statistics_.peak_bytes_in_use = std::max(statistics_.peak_bytes_in_use, statistics_.bytes_in_use);
    return view;
  }

  // The executor's registry is locked (Lock), as for every member below.
  std::unique_lock<std::mutex> Lock() const {
    if (executor_ == nullptr) return std::unique_lock<std::mutex>();
    return std::unique_lock<std::mutex>(executor_->registry_.mutex());
  }

  Status RecycleLocked(std::string_view caller, detail::LiveStream<B>* stream, bool stream_failed,
                       const DeviceMemoryBase& memory) {
    STREAMEXECUTOR_RETURN_IF_ERROR(
        executor_->registry_.RetireLocked(caller, executor_->DeviceLabel(), memory, detail::RecordKind::kPooled));
    statistics_.bytes_in_use -= memory.size();
    statistics_.allocations_in_use -= 1;
    if constexpr (NativeMemoryPoolBackend<B>) {
      // On a failed stream too: the driver's stream runs it after the work
      // already queued, as it runs every free.
      if (native_) return B::FreeToPool(*stream->handle, memory);
    }
    const std::uint64_t size = BlockSize(memory.size());
    if (stream_failed) {
      ReleaseBlock(memory.opaque(), size);
      return Status();
    }
    PutFree(size, memory.opaque(), stream);
    if (free_.bytes() > threshold_) ReleaseFreeAbove(threshold_);
    return Status();
  }

  // Keeps a block for reuse; if the host is out of memory to track it, the
  // driver has it back.
  void PutFree(std::uint64_t size, void* opaque, detail::LiveStream<B>* stream) {
    if (!free_.Put(size, opaque, stream)) ReleaseBlock(opaque, size);
  }

  // From the driver, with `lock` released meanwhile; when it is out of
  // memory, the free blocks go back and the allocation is tried once more.
  StatusOr<void*> DriverAllocate(std::unique_lock<std::mutex>& lock, std::string_view caller, std::uint64_t size) {
    const std::uint64_t limit = executor_->GetDeviceDescription().max_allocation_size;
    if (size > limit) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "{} on {}: {} bytes exceed the device's largest allocation of {} bytes", caller,
                       executor_->DeviceLabel(), size, limit);
    }
    lock.unlock();
    StatusOr<DeviceMemoryBase> memory = B::Allocate(executor_->native_state(), size);
    lock.lock();
    if (!memory.ok() && memory.status().code() == ErrorCode::kResourceExhausted && free_.bytes() > 0) {
      ReleaseFreeAbove(0);
      lock.unlock();
      memory = B::Allocate(executor_->native_state(), size);
      lock.lock();
    }
    if (!memory.ok()) {
      lock.unlock();
      Status described = executor_->DescribeExhaustion(memory.status(), caller, size);
      lock.lock();
      if (described.code() != ErrorCode::kResourceExhausted) return described;
      return MakeError(ErrorCode::kResourceExhausted,
                       "{}; this pool: {} in use by {} allocations, largest free block {}", described.message(),
                       detail::FormatBytes(statistics_.bytes_in_use), statistics_.allocations_in_use,
                       detail::FormatBytes(free_.largest()));
    }
    executor_->registry_.AddPoolReserveLocked(size);
    statistics_.bytes_reserved += size;
    statistics_.driver_allocations += 1;
    return memory.value().opaque();
  }

  void ReleaseBlock(void* opaque, std::uint64_t size) {
    B::Deallocate(executor_->native_state(), DeviceMemoryBase(opaque, size)).IgnoreError();
    executor_->registry_.SubtractPoolReserveLocked(size);
    statistics_.bytes_reserved -= size;
    statistics_.driver_releases += 1;
  }

  // The driver defers each release until the work queued on it has run.
  void ReleaseFreeAbove(std::uint64_t keep_bytes) {
    free_.ReleaseAbove(keep_bytes, [this](void* opaque, std::uint64_t size) { ReleaseBlock(opaque, size); });
  }

  StreamExecutor<B>* executor_;
  std::uint64_t threshold_;
  Status init_status_;
  Status unusable_;  // why no allocation can be made, when the pool could not be
  bool listed_ = false;
  bool native_ = false;
  typename detail::NativePoolHandle<B>::type native_pool_{};
  detail::FreeBlocks<B> free_;
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
                                                 LiveStream<B>* stream, std::uint64_t count, std::size_t element_size,
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
  return pool->Allocate(caller, stream, count * element_size);
}

// Stream::ThenDeallocate's: gives `*memory` back to the pool it came from,
// in the order of `stream`; nulls `*memory` once a pool took it.
template <Backend B>
Status DeallocateInStreamOrder(StreamExecutor<B>* executor, LiveStream<B>* stream, bool stream_failed,
                               DeviceMemoryBase* memory) {
  constexpr std::string_view caller = "ThenDeallocate";
  if (memory == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the DeviceMemory pointer is null", caller,
                     executor->DeviceLabel());
  }
  if (memory->IsNull()) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the DeviceMemory is {}", caller, executor->DeviceLabel(),
                     DescribeNullMemory(*memory));
  }
  return MemoryPool<B>::Deallocate(caller, *executor, stream, stream_failed, memory);
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
      const MemoryPoolStatistics of_pool = pool.GetStatistics();
      statistics.largest_free_block = std::max(statistics.largest_free_block, of_pool.largest_free_block);
      if (of_pool.native) statistics.bytes_reserved_in_pools += of_pool.bytes_reserved;  // the driver's, not counted
    });
  }
  return statistics;
}

}  // namespace streamexecutor
