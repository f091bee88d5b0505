// Pinned (page-locked) host memory, allocated or registered through a
// StreamExecutor: executor->HostAllocate<T>(n) returns an owning
// PinnedHostMemory<T>; HostMemoryAllocate/HostMemoryDeallocate are the seed's
// raw pair; HostMemoryRegister/HostMemoryUnregister pin memory the caller
// allocated. Copies from and to it are the ordinary ThenMemcpy calls;
// HostMemoryDeviceView makes a DeviceMemory<T> of it that kernels read and
// write in place (zero copy).
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
#include "streamexecutor/core/device_memory.hpp"
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

  // Zero copy: a view of `count` elements of pinned host memory from `host`
  // on, which launches, copies and fills take like device memory; kernels
  // read and write the host memory in place (CUDA: the device pointer of the
  // mapped memory, OpenCL: the buffer that pins it, host: the memory
  // itself). [host, host+count) must lie inside one range that
  // HostMemoryAllocate/HostAllocate or HostMemoryRegister pinned on this
  // executor. The view goes with that range: once it is released, stale
  // copies of the view are refused like freed memory; Deallocate refuses it.
  template <typename T>
    requires ZeroCopyBackend<B>
  StatusOr<DeviceMemory<T>> HostMemoryDeviceView(T* host, std::uint64_t count) {
    StreamExecutor<B>& self = Self();
    if (host == nullptr || count == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "HostMemoryDeviceView on {}: {}", self.DeviceLabel(),
                       host == nullptr ? "the host pointer is null" : "zero elements requested");
    }
    if (count > ~std::uint64_t{0} / sizeof(T)) {
      return MakeError(ErrorCode::kInvalidArgument, "HostMemoryDeviceView on {}: {} elements of {} overflow 64 bits",
                       self.DeviceLabel(), count, detail::TypeName<T>());
    }
    const std::uint64_t bytes = count * sizeof(T);
    std::lock_guard<std::mutex> lock(mutex_);
    StatusOr<DeviceMemoryBase> whole = RangeView(host, bytes);
    if (!whole.ok()) return whole.status();
    const DeviceMemoryBase& range = whole.value();
    // Vouched for by the range's record, like a GetSlice of an allocation.
    return DeviceMemory<T>(DeviceMemoryBase(range.opaque(), bytes, Distance(RangeStart(host), host),
                                            range.allocation_id(), range.allocation_record()));
  }
  // The whole of an owning buffer of this executor.
  template <typename T>
    requires ZeroCopyBackend<B>
  StatusOr<DeviceMemory<T>> HostMemoryDeviceView(const PinnedHostMemory<T>& pinned) {
    if (!pinned.ok()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "HostMemoryDeviceView on {}: the PinnedHostMemory holds no memory "
                       "({})",
                       Self().DeviceLabel(), pinned.status().message());
    }
    return HostMemoryDeviceView(pinned.data(), pinned.size());
  }

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
      RetireView(range).IgnoreError();
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
    // The registered device view of the whole range (HostMemoryDeviceView),
    // made on first request; null until then.
    DeviceMemoryBase view{};
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

  // mutex_ is held. The registered view of the whole range that holds
  // [host, host+bytes), made on first use (only with ZeroCopyBackend).
  StatusOr<DeviceMemoryBase> RangeView(const void* host, std::uint64_t bytes) {
    StreamExecutor<B>& self = Self();
    auto it = Containing(host);
    if (it == ranges_.end()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "HostMemoryDeviceView on {}: {} is not pinned host memory of this executor; allocate it with "
                       "HostMemoryAllocate (or HostAllocate) or pin it with HostMemoryRegister first: kernels reach "
                       "only pinned memory in place",
                       self.DeviceLabel(), host);
    }
    const std::uint64_t offset = Distance(it->first, host);
    if (bytes > it->second.bytes - offset) {
      return MakeError(ErrorCode::kOutOfRange,
                       "HostMemoryDeviceView on {}: {} bytes from {} run past the pinned range of {} bytes at {:#x}, "
                       "which holds {} bytes from there on",
                       self.DeviceLabel(), bytes, host, it->second.bytes, it->first, it->second.bytes - offset);
    }
    Range& range = ranges_.find(it->first)->second;
    if (range.view.IsNull()) {
      void* base = reinterpret_cast<void*>(it->first);
      StatusOr<DeviceMemoryBase> mapped = Interop<B>::HostMemoryView(self.native_state(), base, range.bytes);
      if (!mapped.ok()) return mapped.status();
      StatusOr<DeviceMemoryBase> registered =
          self.RegisterAllocation(mapped.value().opaque(), range.bytes, RecordKind::kHostView);
      if (!registered.ok()) {
        Interop<B>::ForgetHostMemoryView(self.native_state(), mapped.value()).IgnoreError();
        return registered.status();
      }
      range.view = registered.value();
    }
    return range.view;
  }
  std::uintptr_t RangeStart(const void* host) const { return Containing(host)->first; }
  // Retires the range's device view, if it has one, before the driver lets
  // go of the memory: stale copies of the view are refused from then on.
  Status RetireView(Range& range) {
    if (range.view.IsNull()) return Status();
    const DeviceMemoryBase view = std::exchange(range.view, DeviceMemoryBase());
    if constexpr (ZeroCopyBackend<B>) {
      StreamExecutor<B>& self = Self();
      Status retired = self.RetireRecord("HostMemoryDeviceView", view, RecordKind::kHostView);
      Status forgotten = Interop<B>::ForgetHostMemoryView(self.native_state(), view);
      return retired.ok() ? forgotten : retired;
    }
    return Status();
  }

  // mutex_ is held.
  Status Overlaps(std::string_view caller, void* ptr, std::uint64_t bytes, std::string_view what) const {
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    auto next = ranges_.lower_bound(begin);
    auto hit = ranges_.end();
    if (next != ranges_.end() && next->first - begin < bytes) hit = next;
    if (next != ranges_.begin() && begin - std::prev(next)->first < std::prev(next)->second.bytes)
      hit = std::prev(next);
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
    if (ptr == nullptr)
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the pointer is null", caller, self.DeviceLabel());
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
    Range range = it->second;
    ranges_.erase(it);
    Status retired = RetireView(range);
    Status released = range.release(self.native_state(), ptr);
    return released.ok() ? retired : released;
  }

  static Status FreeOwned(void* owner, void* data) {
    return static_cast<PinnedHostMemoryApi*>(owner)->HostMemoryDeallocate(data);
  }

  mutable std::mutex mutex_;
  Ranges ranges_;
};

}  // namespace detail
}  // namespace streamexecutor
