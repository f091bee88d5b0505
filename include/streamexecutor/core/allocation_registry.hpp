// AllocationRegistry: one executor's records of the memory it answers for
// (allocations, adopted memory, device views of pinned host memory), which
// decide whether a DeviceMemory view is still live.
//
// Every registration gets a record and a process-unique id; the view carries
// both (core/device_memory.hpp). Retiring a record zeroes its id, so every
// view of that memory, copies included, stops being live at once, and the
// record goes to a free list for the next registration, which gives it a new
// id: addresses and records are reused, ids never are. Records are never
// freed while the registry lives (a deque, so they never move either), so a
// view can read its record long after its memory was released.
//
// The registry knows no backend: it stores handles and sizes, never
// dereferences them, and names its owner only as the pointer every record
// carries, which launches compare with their executor.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::detail {

// Process-wide, so that ids never repeat across executors or backends; exported
// so that two shared libraries including these headers share one counter.
// Registries take ids in batches (kAllocationIdBatch), so that registering
// costs no atomic operation of its own.
inline constexpr std::uint64_t kAllocationIdBatch = 256;
STREAMEXECUTOR_EXPORT inline std::uint64_t NextAllocationIds(std::uint64_t count) {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(count, std::memory_order_relaxed);
}

// For messages: the call that registers memory of a kind, who registered
// it, and how it is let go.
constexpr std::string_view RegisteringCall(RecordKind kind) {
  return kind == RecordKind::kAdopted    ? "AdoptDeviceMemory"
         : kind == RecordKind::kHostView ? "HostMemoryDeviceView"
         : kind == RecordKind::kPooled   ? "ThenAllocate"
         : kind == RecordKind::kImported ? "ImportMemory"
                                         : "allocation";
}
constexpr std::string_view RegisteredBy(RecordKind kind) {
  return kind == RecordKind::kAdopted    ? "an earlier AdoptDeviceMemory registered it"
         : kind == RecordKind::kHostView ? "it is the device view of pinned host memory"
         : kind == RecordKind::kPooled   ? "a memory pool handed it out"
         : kind == RecordKind::kImported ? "ImportMemory mapped it from another process"
                                         : "it allocated it";
}
constexpr std::string_view LetGoBy(RecordKind kind) {
  switch (kind) {
    case RecordKind::kAllocated: return "allocated by this executor, not adopted: Deallocate it";
    case RecordKind::kAdopted:
      return "adopted (AdoptDeviceMemory), not allocated: this executor never frees it; ForgetDeviceMemory "
             "unregisters it";
    case RecordKind::kHostView:
      return "the device view of pinned host memory (HostMemoryDeviceView), not an allocation: it goes with that "
             "memory, released by HostMemoryDeallocate, HostMemoryUnregister or PinnedHostMemory::Reset";
    case RecordKind::kImported:
      return "imported from another process (ImportMemory), not allocated: CloseImportedMemory unmaps it";
    case RecordKind::kPooled: break;
  }
  return "allocated from a memory pool (ThenAllocate): free it in stream order with ThenDeallocate";
}

// What the allocations of one executor hold (Deallocate-able and pooled
// records; adopted memory and host views are not the executor's to count).
struct AllocationCounts {
  std::uint64_t bytes_in_use = 0;
  std::uint64_t peak_bytes_in_use = 0;
  std::uint64_t allocations_in_use = 0;
  std::uint64_t bytes_reserved_in_pools = 0;  // what the pools took from the driver, in use or free
};

// "512 B", "1.5 KiB", "3.2 GiB": sizes in messages.
inline std::string FormatBytes(std::uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return ::streamexecutor::detail::Format("{} B", bytes);
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return ::streamexecutor::detail::Format("{:.1f} {}", value, kUnits[unit]);
}

class AllocationRegistry {
 public:
  // `owner` is what every record of this registry names: the StreamExecutor
  // that holds it, which launches compare a view's record with.
  explicit AllocationRegistry(const void* owner) noexcept : owner_(owner) {}
  AllocationRegistry(const AllocationRegistry&) = delete;
  AllocationRegistry& operator=(const AllocationRegistry&) = delete;

  const void* owner() const noexcept { return owner_; }

  // The launch path's check: two loads and two compares, no lock, no
  // Status. Static and given the owner, so that an executor compares with
  // its own `this` rather than loading the registry's copy of it. The
  // view's handle and range were checked when it was made (DeviceMemoryBase's
  // constructor); CheckLive says why one is refused.
  [[gnu::always_inline]] static bool IsLiveView(const void* owner, const DeviceMemoryBase& memory) noexcept {
    const AllocationRecord* record = memory.allocation_record();  // never null
    return record->owner == owner && record->id.load(std::memory_order_acquire) == memory.allocation_id();
  }
  bool IsLiveView(const DeviceMemoryBase& memory) const noexcept { return IsLiveView(owner_, memory); }

  // Gives memory a record and a fresh id: what makes views of it live.
  // Adopted memory and device views of pinned host memory are refused if a
  // live record already names the same handle. `label` names the device in
  // messages ("host:0"); `pool`, the memory pool that hands pooled memory out.
  StatusOr<DeviceMemoryBase> Register(std::string_view label, void* opaque, std::uint64_t bytes,
                                      RecordKind kind = RecordKind::kAllocated) {
    std::lock_guard<std::mutex> lock(mutex_);
    return RegisterLocked(label, opaque, bytes, kind);
  }
  // Memory pools (core/memory_pool.hpp) keep their own state under this
  // registry's lock, so that a pooled allocation or free takes one lock; they
  // call the ...Locked forms with it held.
  std::mutex& mutex() const noexcept { return mutex_; }
  StatusOr<DeviceMemoryBase> RegisterLocked(std::string_view label, void* opaque, std::uint64_t bytes,
                                            RecordKind kind = RecordKind::kAllocated, const void* pool = nullptr) {
    const std::string_view caller = RegisteringCall(kind);
    AllocationRecord* record = nullptr;
    try {
      if (kind == RecordKind::kAdopted || kind == RecordKind::kHostView) {  // memory not ours: once only
        for (const AllocationRecord& live : records_) {
          if (live.id.load(std::memory_order_acquire) != 0 && live.opaque.load(std::memory_order_relaxed) == opaque) {
            return MakeError(ErrorCode::kAlreadyExists, "{} on {}: {} is already registered with this executor ({})",
                             caller, label, opaque, RegisteredBy(live.kind.load(std::memory_order_relaxed)));
          }
        }
      }
      if (free_records_.empty()) {
        // Room for every record in the free list, so Retire never throws.
        free_records_.reserve(records_.size() + 1);
        record = &records_.emplace_back();
        record->owner = owner_;
      } else {
        record = free_records_.back();
        free_records_.pop_back();
      }
      if (Counted(kind)) {
        counts_.bytes_in_use += bytes;
        counts_.allocations_in_use += 1;
        if (counts_.bytes_in_use > counts_.peak_bytes_in_use) counts_.peak_bytes_in_use = counts_.bytes_in_use;
      }
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory to track {} bytes", caller, label,
                       bytes);
    }
    if (next_id_ == id_limit_) {
      next_id_ = NextAllocationIds(kAllocationIdBatch);
      id_limit_ = next_id_ + kAllocationIdBatch;
    }
    const std::uint64_t id = next_id_++;
    record->opaque.store(opaque, std::memory_order_relaxed);
    record->bytes.store(bytes, std::memory_order_relaxed);
    record->kind.store(kind, std::memory_order_relaxed);
    record->pool.store(pool, std::memory_order_relaxed);
    record->id.store(id, std::memory_order_release);  // publishes opaque, bytes, kind and pool
    return DeviceMemoryBase(opaque, bytes, 0, id, record);
  }

  // Unregisters the whole allocation `memory` views, if it is live, whole,
  // and of the `kind` the caller lets go. The caller frees the memory after.
  Status Retire(std::string_view caller, std::string_view label, const DeviceMemoryBase& memory, RecordKind kind) {
    std::lock_guard<std::mutex> lock(mutex_);
    return RetireLocked(caller, label, memory, kind);
  }
  Status RetireLocked(std::string_view caller, std::string_view label, const DeviceMemoryBase& memory,
                      RecordKind kind) {
    AllocationRecord* record = Find(memory);
    if (record == nullptr) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: {} was not {} this executor or was already {}",
                       caller, label, memory.opaque(),
                       kind == RecordKind::kAdopted    ? "adopted by"
                       : kind == RecordKind::kImported ? "imported by"
                                                       : "allocated by",
                       kind == RecordKind::kAdopted    ? "forgotten"
                       : kind == RecordKind::kImported ? "closed"
                                                       : "freed");
    }
    if (const RecordKind was = record->kind.load(std::memory_order_relaxed); was != kind) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: {} was {}", caller, label, memory.opaque(),
                       LetGoBy(was));
    }
    const std::uint64_t bytes = record->bytes.load(std::memory_order_relaxed);
    if (memory.offset() != 0 || memory.size() != bytes) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: this view is a slice ({} bytes at offset {}) of a {}-byte allocation; pass the "
                       "whole allocation",
                       caller, label, memory.size(), memory.offset(), bytes);
    }
    // Retired before the driver frees, so that no check passes for memory
    // on its way out. Cannot throw: the list has room for every record.
    record->id.store(0, std::memory_order_release);
    free_records_.push_back(record);
    if (Counted(kind)) {
      counts_.bytes_in_use -= bytes;
      counts_.allocations_in_use -= 1;
    }
    return Status();
  }

  // The memory pool that handed out `memory`, if it is a live pooled
  // allocation of this registry; else null.
  const void* PoolOfLocked(const DeviceMemoryBase& memory) const noexcept {
    const AllocationRecord* record = Find(memory);
    if (record == nullptr || record->kind.load(std::memory_order_relaxed) != RecordKind::kPooled) return nullptr;
    return record->pool.load(std::memory_order_relaxed);
  }

  // Retires every live allocation `pool` handed out (the pool's destructor)
  // and calls `released(opaque, bytes)` for each.
  template <typename Released>
  void RetireAllOfLocked(const void* pool, Released&& released) noexcept {
    for (AllocationRecord& record : records_) {
      if (record.id.load(std::memory_order_acquire) == 0) continue;
      if (record.kind.load(std::memory_order_relaxed) != RecordKind::kPooled) continue;
      if (record.pool.load(std::memory_order_relaxed) != pool) continue;
      const std::uint64_t bytes = record.bytes.load(std::memory_order_relaxed);
      record.id.store(0, std::memory_order_release);
      free_records_.push_back(&record);  // cannot throw: the list has room for every record
      counts_.bytes_in_use -= bytes;
      counts_.allocations_in_use -= 1;
      released(record.opaque.load(std::memory_order_relaxed), bytes);
    }
  }

  AllocationCounts Counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }
  const AllocationCounts& CountsLocked() const noexcept { return counts_; }
  // Memory pools report what they hold from the driver.
  void AddPoolReserveLocked(std::uint64_t bytes) noexcept { counts_.bytes_reserved_in_pools += bytes; }
  void SubtractPoolReserveLocked(std::uint64_t bytes) noexcept { counts_.bytes_reserved_in_pools -= bytes; }

  // Retires every adopted or imported record (the executor's destructor)
  // and returns their memory, for the backend to forget or unmap. Their
  // records are not reused.
  std::vector<DeviceMemoryBase> RetireAll(RecordKind kind) {
    std::vector<DeviceMemoryBase> left;
    std::lock_guard<std::mutex> lock(mutex_);
    for (AllocationRecord& record : records_) {
      if (record.id.load(std::memory_order_acquire) == 0) continue;
      if (record.kind.load(std::memory_order_relaxed) != kind) continue;
      left.emplace_back(record.opaque.load(std::memory_order_relaxed), record.bytes.load(std::memory_order_relaxed));
      record.id.store(0, std::memory_order_release);
    }
    return left;
  }

  // The full check of copies, fills and refused launches: `fail(code, why)`
  // builds the caller's Status, only when `memory` is null, not live memory
  // of this registry, or runs past its allocation.
  template <typename MakeStatus>
  Status CheckLive(const DeviceMemoryBase& memory, MakeStatus&& fail) const {
    if (memory.IsNull()) [[unlikely]] {
      return fail(ErrorCode::kInvalidArgument, DescribeNullMemory(memory));
    }
    const AllocationRecord* record = Find(memory);
    if (record == nullptr) [[unlikely]] {
      return fail(ErrorCode::kFailedPrecondition,
                  ::streamexecutor::detail::Format(
                      "not live memory of this executor ({}: freed, or memory of another executor, which "
                      "ThenCopyBetween copies from and to)",
                      memory.opaque()));
    }
    if (!FitsAllocation(memory, *record)) [[unlikely]] {
      return fail(ErrorCode::kOutOfRange,
                  ::streamexecutor::detail::Format(
                      "a view of {} bytes at offset {} that runs past its {}-byte allocation", memory.size(),
                      memory.offset(), record->bytes.load(std::memory_order_relaxed)));
    }
    return Status();
  }

  // How many records exist, and how many of them are free for reuse.
  std::size_t RecordCount() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_.size();
  }
  std::size_t FreeRecordCount() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return free_records_.size();
  }

 private:
  static constexpr bool Counted(RecordKind kind) noexcept {
    return kind == RecordKind::kAllocated || kind == RecordKind::kPooled;
  }

  // The record `memory` names if it is live memory of this registry.
  AllocationRecord* Find(const DeviceMemoryBase& memory) const noexcept {
    const AllocationRecord* record = memory.allocation_record();
    // Unvouched views are compared as they were made, so that the message
    // names what is wrong with them (their range, in CheckLive).
    const std::uint64_t id = memory.allocation_id() & ~DeviceMemoryBase::kUnvouchedBit;
    if (record == nullptr || record->owner != owner_ || id == DeviceMemoryBase::kNoAllocationId ||
        record->id.load(std::memory_order_acquire) != id ||
        record->opaque.load(std::memory_order_relaxed) != memory.opaque()) {
      return nullptr;
    }
    // Records are only ever handed out by this registry, as non-const.
    return const_cast<AllocationRecord*>(record);
  }
  // Views made by GetSlice always fit; a hand-built one could hold anything,
  // so compare without adding (offset + size could wrap).
  static bool FitsAllocation(const DeviceMemoryBase& memory, const AllocationRecord& record) noexcept {
    const std::uint64_t bytes = record.bytes.load(std::memory_order_relaxed);
    return memory.offset() <= bytes && memory.size() <= bytes - memory.offset();
  }

  const void* owner_;
  mutable std::mutex mutex_;
  std::deque<AllocationRecord> records_;
  std::vector<AllocationRecord*> free_records_;
  AllocationCounts counts_;
  std::uint64_t next_id_ = 0;  // the ids taken and not yet given: [next_id_, id_limit_)
  std::uint64_t id_limit_ = 0;
};

}  // namespace streamexecutor::detail
