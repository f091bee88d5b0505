// Pinned (page-locked) host memory, allocated or registered through a
// StreamExecutor: executor->HostAllocate<T>(n) returns an owning
// PinnedHostMemory<T>; HostMemoryAllocate/HostMemoryDeallocate are the seed's
// raw pair; HostMemoryRegister/HostMemoryUnregister pin memory the caller
// allocated. Copies from and to it are the ordinary ThenMemcpy calls.
//
// The executor keeps a record of every pinned range, so that a double free,
// an unknown or interior pointer, an overlapping or empty registration is a
// Status instead of undefined behaviour in the driver, and so that what is
// left when the executor is destroyed is released before its context goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <span>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/interop.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/type_name.hpp"

namespace streamexecutor {

// Owns `size()` elements of pinned host memory and releases them through the
// executor that allocated them. Move-only; a failed, moved-from or reset one
// holds no memory (data() is null, span() empty) and status() says why, so a
// copy from it fails with a Status rather than reading freed memory.
template <typename T>
class PinnedHostMemory {
  static_assert(std::is_trivially_copyable_v<T>, "PinnedHostMemory<T> holds trivially copyable elements only");

 public:
  using Free = Status (*)(void* owner, void* data);

  PinnedHostMemory() = default;
  PinnedHostMemory(void* owner, Free free, T* data, std::uint64_t count)
      : owner_(owner), free_(free), data_(data), count_(count) {}
  explicit PinnedHostMemory(Status failure) : status_(std::move(failure)) {}

  PinnedHostMemory(const PinnedHostMemory&) = delete;
  PinnedHostMemory& operator=(const PinnedHostMemory&) = delete;
  PinnedHostMemory(PinnedHostMemory&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)),
        free_(std::exchange(other.free_, nullptr)),
        data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        status_(std::exchange(other.status_, MovedFrom())) {}
  PinnedHostMemory& operator=(PinnedHostMemory&& other) noexcept {
    if (this != &other) {
      Reset().IgnoreError();
      owner_ = std::exchange(other.owner_, nullptr);
      free_ = std::exchange(other.free_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
      status_ = std::exchange(other.status_, MovedFrom());
    }
    return *this;
  }
  ~PinnedHostMemory() { Reset().IgnoreError(); }

  T* data() const { return data_; }
  std::uint64_t size() const { return count_; }
  std::uint64_t size_bytes() const { return count_ * sizeof(T); }
  std::span<T> span() const { return std::span<T>(data_, static_cast<std::size_t>(count_)); }
  T& operator[](std::uint64_t i) const { return data_[i]; }

  bool ok() const { return data_ != nullptr; }
  // Why this holds no memory (failed allocation, moved-from, reset).
  const Status& status() const { return status_; }

  // Releases now; a second Reset is a no-op.
  Status Reset() {
    if (data_ == nullptr || free_ == nullptr) return Status();
    Status freed = free_(owner_, data_);
    data_ = nullptr;
    count_ = 0;
    status_ = Status(ErrorCode::kFailedPrecondition, "PinnedHostMemory was reset");
    return freed;
  }

 private:
  static Status MovedFrom() { return Status(ErrorCode::kFailedPrecondition, "PinnedHostMemory was moved from"); }

  void* owner_ = nullptr;
  Free free_ = nullptr;
  T* data_ = nullptr;
  std::uint64_t count_ = 0;
  Status status_;
};

namespace detail {

// StreamExecutor's pinned-memory calls (a base class: executor.hpp only calls
// ReleaseAllHostMemory from its destructor). The registry's mutex is held
// across the driver calls, so that a range is never visible as pinned before
// the driver pinned it, nor reused while the driver still unpins it.
template <typename B>
class PinnedHostMemoryApi {
 public:
  PinnedHostMemoryApi() = default;
  PinnedHostMemoryApi(const PinnedHostMemoryApi&) = delete;
  PinnedHostMemoryApi& operator=(const PinnedHostMemoryApi&) = delete;

  // `bytes` of pinned host memory (CUDA cuMemHostAlloc, OpenCL a mapped
  // CL_MEM_ALLOC_HOST_PTR buffer, host aligned memory).
  StatusOr<void*> TryHostMemoryAllocate(std::uint64_t bytes)
    requires PinnedMemoryBackend<B>
  {
    StreamExecutor<B>& self = Self();
    if (bytes == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "HostMemoryAllocate on {}: zero bytes requested",
                       self.DeviceLabel());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    StatusOr<void*> allocated = B::HostAllocate(self.native_state(), bytes);
    if (!allocated.ok()) return allocated.status();
    void* ptr = allocated.value();
    // The driver reuses addresses: overlap here means memory registered with
    // HostMemoryRegister was freed by its owner without being unregistered.
    Status recorded = Overlaps("HostMemoryAllocate", ptr, bytes, "the driver returned memory that");
    if (recorded.ok()) recorded = Record(ptr, {bytes, Kind::kAllocated, &B::HostDeallocate});
    if (!recorded.ok()) {
      B::HostDeallocate(self.native_state(), ptr).IgnoreError();
      return recorded;
    }
    return ptr;
  }
  // Seed form: null on failure (TryHostMemoryAllocate says why).
  void* HostMemoryAllocate(std::uint64_t bytes)
    requires PinnedMemoryBackend<B>
  {
    return TryHostMemoryAllocate(bytes).value_or(nullptr);
  }
  Status HostMemoryDeallocate(void* ptr) { return Release("HostMemoryDeallocate", ptr, Kind::kAllocated); }

  // Owning, typed form: `count` elements, released by the returned object.
  template <typename T>
    requires PinnedMemoryBackend<B>
  PinnedHostMemory<T> HostAllocate(std::uint64_t count) {
    if (count > ~std::uint64_t{0} / sizeof(T)) {
      return PinnedHostMemory<T>(MakeError(ErrorCode::kInvalidArgument,
                                           "HostAllocate on {}: {} elements of {} overflow 64 bits",
                                           Self().DeviceLabel(), count, detail::TypeName<T>()));
    }
    StatusOr<void*> raw = TryHostMemoryAllocate(count * sizeof(T));
    if (!raw.ok()) return PinnedHostMemory<T>(raw.status());
    return PinnedHostMemory<T>(this, &FreeOwned, static_cast<T*>(raw.value()), count);
  }

  // Pins [ptr, ptr+bytes) of memory the caller allocated and keeps owning
  // (CUDA cuMemHostRegister; OpenCL a CL_MEM_USE_HOST_PTR buffer mapped while
  // registered; host: recorded only, its memory needs no pinning). The memory
  // must stay allocated until HostMemoryUnregister.
  Status HostMemoryRegister(void* ptr, std::uint64_t bytes)
    requires HostRegistrationBackend<B>
  {
    StreamExecutor<B>& self = Self();
    if (ptr == nullptr || bytes == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "HostMemoryRegister on {}: {}", self.DeviceLabel(),
                       ptr == nullptr ? "the pointer is null" : "zero bytes requested");
    }
    if (reinterpret_cast<std::uintptr_t>(ptr) > ~std::uintptr_t{0} - bytes) {
      return MakeError(ErrorCode::kInvalidArgument, "HostMemoryRegister on {}: {} bytes at {} wrap the address space",
                       self.DeviceLabel(), bytes, ptr);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    STREAMEXECUTOR_RETURN_IF_ERROR(Overlaps("HostMemoryRegister", ptr, bytes, "the range"));
    STREAMEXECUTOR_RETURN_IF_ERROR(Interop<B>::HostRegister(self.native_state(), ptr, bytes));
    Status recorded = Record(ptr, {bytes, Kind::kRegistered, &Interop<B>::HostUnregister});
    if (!recorded.ok()) Interop<B>::HostUnregister(self.native_state(), ptr).IgnoreError();
    return recorded;
  }
  Status HostMemoryUnregister(void* ptr) { return Release("HostMemoryUnregister", ptr, Kind::kRegistered); }

  // Whether [ptr, ptr+bytes) lies inside one pinned range of this executor.
  bool IsPinnedHostMemory(const void* ptr, std::uint64_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = Containing(ptr);
    return it != ranges_.end() && bytes <= it->second.bytes - Distance(it->first, ptr);
  }

 protected:
  // For the executor's destructor, before its context is closed.
  void ReleaseAllHostMemory() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [address, range] : ranges_) {
      range.release(Self().native_state(), reinterpret_cast<void*>(address)).IgnoreError();
    }
    ranges_.clear();
  }

 private:
  enum class Kind { kAllocated, kRegistered };
  struct Range {
    std::uint64_t bytes;
    Kind kind;
    // How the driver lets go of it, chosen when it was pinned.
    Status (*release)(typename B::ExecutorState&, void*);
  };
  using Ranges = std::map<std::uintptr_t, Range>;

  StreamExecutor<B>& Self() { return static_cast<StreamExecutor<B>&>(*this); }
  const StreamExecutor<B>& Self() const { return static_cast<const StreamExecutor<B>&>(*this); }

  static std::uint64_t Distance(std::uintptr_t base, const void* ptr) {
    return reinterpret_cast<std::uintptr_t>(ptr) - base;
  }
  // The range that holds `ptr`, or end().
  typename Ranges::const_iterator Containing(const void* ptr) const {
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin()) return ranges_.end();
    --it;
    return address - it->first < it->second.bytes ? it : ranges_.end();
  }

  // mutex_ is held.
  Status Overlaps(std::string_view caller, void* ptr, std::uint64_t bytes, std::string_view what) const {
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    auto next = ranges_.lower_bound(begin);
    auto hit = ranges_.end();
    if (next != ranges_.end() && next->first - begin < bytes) hit = next;
    if (next != ranges_.begin() && begin - std::prev(next)->first < std::prev(next)->second.bytes) hit = std::prev(next);
    if (hit == ranges_.end()) return Status();
    return MakeError(ErrorCode::kAlreadyExists,
                     "{} on {}: {} ({} bytes at {}) overlaps {} bytes at {:#x} that are already {} on this executor",
                     caller, Self().DeviceLabel(), what, bytes, ptr, hit->second.bytes, hit->first,
                     hit->second.kind == Kind::kAllocated ? "allocated pinned" : "registered");
  }
  Status Record(void* ptr, Range range) {
    try {
      ranges_.emplace(reinterpret_cast<std::uintptr_t>(ptr), range);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "pinned host memory on {}: out of host memory to record {} bytes",
                       Self().DeviceLabel(), range.bytes);
    }
    return Status();
  }

  Status Release(std::string_view caller, void* ptr, Kind kind) {
    StreamExecutor<B>& self = Self();
    if (ptr == nullptr) return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the pointer is null", caller, self.DeviceLabel());
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = ranges_.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == ranges_.end()) {
      auto inside = Containing(ptr);
      if (inside != ranges_.end()) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "{} on {}: {} points {} bytes into the pinned range at {:#x}; pass the pointer it started at",
                         caller, self.DeviceLabel(), ptr, Distance(inside->first, ptr), inside->first);
      }
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: {} is not {} on this executor, or was already {}",
                       caller, self.DeviceLabel(), ptr,
                       kind == Kind::kAllocated ? "pinned memory allocated" : "memory registered",
                       kind == Kind::kAllocated ? "freed" : "unregistered");
    }
    if (it->second.kind != kind) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: {} was {}; use {}", caller, self.DeviceLabel(), ptr,
                       kind == Kind::kAllocated ? "registered with HostMemoryRegister, not allocated"
                                                : "allocated with HostMemoryAllocate/HostAllocate, not registered",
                       kind == Kind::kAllocated ? "HostMemoryUnregister" : "HostMemoryDeallocate");
    }
    const Range range = it->second;
    ranges_.erase(it);
    return range.release(self.native_state(), ptr);
  }

  static Status FreeOwned(void* owner, void* data) {
    return static_cast<PinnedHostMemoryApi*>(owner)->HostMemoryDeallocate(data);
  }

  mutable std::mutex mutex_;
  Ranges ranges_;
};

}  // namespace detail
}  // namespace streamexecutor
