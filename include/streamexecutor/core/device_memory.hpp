// Non-owning views of device memory (DeviceMemoryBase, DeviceMemory<T>) and the
// launch-time request for dynamic shared memory (SharedDeviceMemory<T>).
//
// A view is an opaque backend handle plus a byte offset and a byte size. The
// offset is what makes GetSlice work on every backend: host and CUDA add it to
// the pointer, OpenCL (whose cl_mem cannot be offset) passes it separately.
//
// A view also carries the process-unique id of the allocation it came from.
// Allocators reuse addresses, so the handle alone cannot tell a live buffer
// from a freed one now occupying the same address: the executor checks the id,
// and a stale view (or a stale ScopedDeviceMemory's Reset) is refused instead
// of touching, or freeing, the newer allocation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "streamexecutor/detail/export.hpp"

namespace streamexecutor {

namespace detail {
// The executor's record of one allocation. Records are pooled by their
// executor's AllocationRegistry (core/allocation_registry.hpp) and never
// freed while it lives (executors live as long as the process), so a view
// can always read its record, even long after the memory was released: the
// id then no longer matches. Checking a view is a few
// loads, with no lock and no lookup, which keeps the launch path cheap.
// How the memory a record names came to the executor, which decides how it
// is let go: Deallocate frees an allocation; ForgetDeviceMemory unregisters
// adopted memory (core/interop.hpp), never freeing it; the device view of
// pinned host memory (core/pinned_memory.hpp) goes with that memory; memory
// from a pool (core/memory_pool.hpp) goes back to it with ThenDeallocate.
enum class RecordKind : std::uint8_t { kAllocated, kAdopted, kHostView, kPooled, kImported };

struct AllocationRecord {
  const void* owner = nullptr;         // the StreamExecutor; set once
  std::atomic<std::uint64_t> id{0};    // 0 while the record is free
  std::atomic<void*> opaque{nullptr};  // the backend handle
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<RecordKind> kind{RecordKind::kAllocated};
  std::atomic<const void*> pool{nullptr};  // the MemoryPool that handed it out (kPooled)
};

// The record of a view that has none (default-constructed, a backend's own
// view, a failed GetSlice) instead of null: its owner is null, so it is live
// on no executor, and the launch path's liveness compare needs no null test.
// Exported: one per process, however many shared libraries include this.
STREAMEXECUTOR_EXPORT inline constinit const AllocationRecord kNoAllocationRecord{};
}  // namespace detail

class DeviceMemoryBase {
 public:
  // Ids that no allocation has: memory the executor did not allocate (a
  // backend's own view), and the null result of an out-of-range GetSlice.
  static constexpr std::uint64_t kNoAllocationId = 0;
  static constexpr std::uint64_t kOutOfRangeSliceId = ~std::uint64_t{0};

  // Set in the id of a view that its record did not vouch for when the view
  // was made (see the constructor); allocation ids stay far below it.
  static constexpr std::uint64_t kUnvouchedBit = std::uint64_t{1} << 63;

  constexpr DeviceMemoryBase() = default;
  // A view with a record is checked against it here, once, rather than at
  // every launch: the allocation's handle and size never change while its id
  // lives, so a view that fits when it is made fits for as long as its id
  // matches. One that does not (a stale id, another handle, a hand-built
  // range past the allocation) is marked unvouched, so that the launch
  // path's id compare refuses it and the full check says why.
  constexpr DeviceMemoryBase(void* opaque, std::uint64_t size_bytes, std::uint64_t offset_bytes = 0,
                             std::uint64_t allocation_id = kNoAllocationId,
                             const detail::AllocationRecord* record = nullptr)
      : opaque_(opaque),
        offset_(offset_bytes),
        size_(size_bytes),
        id_(allocation_id),
        record_(record != nullptr ? record : &detail::kNoAllocationRecord) {
    if (std::is_constant_evaluated()) {
      start_address_ = opaque == nullptr ? offset_bytes : 0;  // no address exists at compile time
      return;
    }
    start_address_ = reinterpret_cast<std::uintptr_t>(opaque) + offset_bytes;
    if (record_ != &detail::kNoAllocationRecord && !RecordVouches()) id_ |= kUnvouchedBit;
  }

  // The backend's handle for the whole allocation (host pointer, CUdeviceptr, cl_mem).
  constexpr void* opaque() const { return opaque_; }
  // Where this view starts inside the allocation, in bytes.
  constexpr std::uint64_t offset() const { return offset_; }
  // The handle plus the offset, as one 64-bit word: where the view starts on
  // backends whose handle is an address (host, CUDA); meaningless for a
  // cl_mem. Stored rather than computed so that a CUDA launch hands the
  // driver the address of this word as the kernel parameter, with no copy.
  constexpr const std::uint64_t& start_address() const { return start_address_; }
  // Size of the view in bytes (seed name).
  constexpr std::uint64_t size() const { return size_; }
  // Which allocation this view belongs to (see the comment at the top).
  constexpr std::uint64_t allocation_id() const { return id_; }
  // Never null: a view without an allocation has detail::kNoAllocationRecord.
  constexpr const detail::AllocationRecord* allocation_record() const { return record_; }
  constexpr bool IsNull() const { return opaque_ == nullptr; }
  // A null view that GetSlice returned because the range did not fit. It
  // keeps the request for the message of the operation that refuses it:
  // offset() and size() are the bytes asked for, and the word a null view
  // has no address for holds the size of the view it was cut from.
  constexpr bool IsOutOfRangeSlice() const { return opaque_ == nullptr && id_ == kOutOfRangeSliceId; }
  static constexpr DeviceMemoryBase OutOfRangeSlice(std::uint64_t offset_bytes, std::uint64_t size_bytes,
                                                    std::uint64_t parent_bytes) {
    DeviceMemoryBase slice(nullptr, size_bytes, offset_bytes, kOutOfRangeSliceId);
    slice.start_address_ = parent_bytes;
    return slice;
  }
  constexpr std::uint64_t sliced_view_size() const { return IsOutOfRangeSlice() ? start_address_ : 0; }
  constexpr bool IsSameAs(const DeviceMemoryBase& other) const {
    return opaque_ == other.opaque_ && offset_ == other.offset_ && size_ == other.size_ && id_ == other.id_ &&
           record_ == other.record_;
  }

 protected:
  bool RecordVouches() const {
    const std::uint64_t bytes = record_->bytes.load(std::memory_order_relaxed);
    return id_ != kNoAllocationId && id_ < kUnvouchedBit && record_->id.load(std::memory_order_acquire) == id_ &&
           record_->opaque.load(std::memory_order_relaxed) == opaque_ && offset_ <= bytes && size_ <= bytes - offset_;
  }

  void* opaque_ = nullptr;
  std::uint64_t offset_ = 0;
  std::uint64_t size_ = 0;
  std::uint64_t id_ = kNoAllocationId;
  const detail::AllocationRecord* record_ = &detail::kNoAllocationRecord;
  std::uint64_t start_address_ = 0;  // set by the constructor from the three above
};

namespace detail {
// count * sizeof(T), saturating where it would wrap (used in messages and checks).
template <typename T>
constexpr std::uint64_t SaturatingBytes(std::uint64_t count) {
  return count > ~std::uint64_t{0} / sizeof(T) ? ~std::uint64_t{0} : count * sizeof(T);
}

// Why a view is null, for the messages of every operation that refuses one.
inline std::string DescribeNullMemory(const DeviceMemoryBase& memory) {
  if (!memory.IsOutOfRangeSlice()) return "a null DeviceMemory (moved-from, freed, or a failed allocation)";
  const std::uint64_t end =
      memory.size() > ~std::uint64_t{0} - memory.offset() ? ~std::uint64_t{0} : memory.offset() + memory.size();
  return "null: it came from a GetSlice of bytes [" + std::to_string(memory.offset()) + ", " + std::to_string(end) +
         ") of a " + std::to_string(memory.sliced_view_size()) + "-byte view, which does not hold them";
}
}  // namespace detail

template <typename T>
class DeviceMemory : public DeviceMemoryBase {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceMemory<T> holds trivially copyable elements only");
  static_assert(!std::is_const_v<T>, "DeviceMemory<T>: use a non-const T (constness belongs to the kernel)");

 public:
  using ElementType = T;

  constexpr DeviceMemory() = default;
  // Reinterprets untyped memory; the size is truncated to whole elements.
  constexpr explicit DeviceMemory(const DeviceMemoryBase& other)
      : DeviceMemoryBase(other.IsOutOfRangeSlice()
                             ? other
                             : DeviceMemoryBase(other.opaque(), other.size() - other.size() % sizeof(T), other.offset(),
                                                other.allocation_id(), other.allocation_record())) {}

  constexpr std::uint64_t ElementCount() const { return size_ / sizeof(T); }

  // A view of `count` elements starting at element `offset`. Out-of-range
  // requests give a null view, which every operation rejects with a message
  // that says it came from an out-of-range slice.
  constexpr DeviceMemory<T> GetSlice(std::uint64_t element_offset, std::uint64_t element_count) const {
    if (IsNull() || element_offset > ElementCount() || element_count > ElementCount() - element_offset) {
      return DeviceMemory<T>(DeviceMemoryBase::OutOfRangeSlice(detail::SaturatingBytes<T>(element_offset),
                                                               detail::SaturatingBytes<T>(element_count), size_));
    }
    return DeviceMemory<T>(
        DeviceMemoryBase(opaque_, element_count * sizeof(T), offset_ + element_offset * sizeof(T), id_, record_));
  }
};

// A kernel parameter of type SharedDeviceMemory<T> is per-block scratch memory
// of ElementCount() elements, chosen at launch: CUDA dynamic shared memory,
// OpenCL __local memory, a per-block buffer on the host backend.
template <typename T>
class SharedDeviceMemory {
  static_assert(std::is_trivially_copyable_v<T>, "SharedDeviceMemory<T> holds trivially copyable elements only");

 public:
  using ElementType = T;
  constexpr explicit SharedDeviceMemory(std::uint64_t element_count = 0) : count_(element_count) {}
  constexpr std::uint64_t ElementCount() const { return count_; }
  // Saturates instead of wrapping, so that a huge count fails the launch's
  // shared-memory check rather than passing it as a small number.
  constexpr std::uint64_t size() const { return detail::SaturatingBytes<T>(count_); }

 private:
  std::uint64_t count_;
};

template <typename T>
inline constexpr bool is_device_memory_pointer_v = false;
template <typename T>
inline constexpr bool is_device_memory_pointer_v<DeviceMemory<T>*> = true;

template <typename T>
inline constexpr bool is_shared_device_memory_v = false;
template <typename T>
inline constexpr bool is_shared_device_memory_v<SharedDeviceMemory<T>> = true;

}  // namespace streamexecutor
