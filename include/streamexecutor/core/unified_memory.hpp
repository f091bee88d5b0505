// ScopedUnifiedMemory<T>: owns memory that host code and kernels both
// dereference (host memory, OpenCL fine-grained buffer SVM, CUDA managed
// memory), with one accessor for its host address on every backend.
//
//   auto shared = se::AllocateOwnedUnifiedArray<float>(executor, n);
//   std::fill_n(shared.host_ptr(), n, 1.0f);            // host writes
//   stream.ThenLaunch(threads, blocks, kernel, shared.ptr()).BlockHostUntilDone();
//   float first = shared.host_ptr()[0];                  // host reads the result
//
// The host may touch the memory only while no queued work uses it (wait for
// the streams first): CUDA managed memory without concurrent access faults
// otherwise, and no backend orders host accesses against device ones.
//
// Only for backends with UnifiedMemoryBackend: elsewhere the allocation
// function does not compile. A device of such a backend that cannot share
// memory (an OpenCL device without fine-grained buffer SVM) gives a null
// object whose status() is UNIMPLEMENTED and says why.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/scoped_device_memory.hpp"

namespace streamexecutor {

template <typename T>
class ScopedUnifiedMemory {
 public:
  ScopedUnifiedMemory() = default;
  explicit ScopedUnifiedMemory(Status failure) : memory_(std::move(failure)) {}
  ScopedUnifiedMemory(ScopedDeviceMemory<T> memory, T* host) : memory_(std::move(memory)), host_(host) {}

  ScopedUnifiedMemory(ScopedUnifiedMemory&& other) noexcept
      : memory_(std::move(other.memory_)), host_(std::exchange(other.host_, nullptr)) {}
  ScopedUnifiedMemory& operator=(ScopedUnifiedMemory&& other) noexcept {
    if (this != &other) {
      memory_ = std::move(other.memory_);
      host_ = std::exchange(other.host_, nullptr);
    }
    return *this;
  }

  // The address host code dereferences; null when ok() is false.
  T* host_ptr() const { return host_; }
  std::span<T> host_span() const { return {host_, host_ != nullptr ? ElementCount() : 0}; }

  // Device views, as ScopedDeviceMemory's: for kernel arguments and copies.
  DeviceMemory<T>* ptr() { return memory_.ptr(); }
  const DeviceMemory<T>* ptr() const { return memory_.ptr(); }
  const DeviceMemory<T>& cref() const { return memory_.cref(); }
  std::uint64_t ElementCount() const { return memory_.cref().ElementCount(); }

  bool ok() const { return memory_.ok(); }
  // Why this holds no memory (failed allocation, moved-from, reset).
  const Status& status() const { return memory_.status(); }

  // Frees now; host_ptr() is null from here on.
  Status Reset() {
    host_ = nullptr;
    return memory_.Reset();
  }

 private:
  ScopedDeviceMemory<T> memory_;
  T* host_ = nullptr;
};

// `element_count` elements of unified memory of `executor`'s device.
template <typename T, UnifiedMemoryBackend B>
ScopedUnifiedMemory<T> AllocateOwnedUnifiedArray(StreamExecutor<B>* executor, std::uint64_t element_count) {
  if (executor == nullptr) {
    return ScopedUnifiedMemory<T>(
        Status(ErrorCode::kInvalidArgument, "AllocateOwnedUnifiedArray: the StreamExecutor pointer is null"));
  }
  StatusOr<DeviceMemory<T>> memory = executor->template TryAllocateUnifiedArray<T>(element_count);
  if (!memory.ok()) return ScopedUnifiedMemory<T>(memory.status());
  void* host = B::HostAddress(memory.value());
  const auto free = [](void* owner, DeviceMemoryBase* view) {
    return static_cast<StreamExecutor<B>*>(owner)->Deallocate(view);
  };
  ScopedDeviceMemory<T> owned(executor, +free, memory.value());
  if (host == nullptr) [[unlikely]] {
    return ScopedUnifiedMemory<T>(MakeError(ErrorCode::kInternal,
                                            "AllocateOwnedUnifiedArray on {}: the backend gave no host address for "
                                            "the unified allocation (freed: {})",
                                            executor->DeviceLabel(), owned.Reset().ToString()));
  }
  return ScopedUnifiedMemory<T>(std::move(owned), static_cast<T*>(host));
}

// A usage hint for unified memory, applied when given: like cuMemAdvise, not
// in any stream's order, so give it before queueing the work it is for.
// `location` is what kSetPreferredLocation and kSetAccessedBy (and their
// unsets) name. Any live memory of the executor is accepted; where the
// backend has no hints (MemoryAdviceBackend) or the memory does not migrate
// (CUDA memory from Allocate), it has no effect.
template <Backend B>
Status MemAdvise(StreamExecutor<B>* executor, const DeviceMemoryBase& memory, MemoryAdvice advice,
                 MemoryLocation location = MemoryLocation::kDevice) {
  if (executor == nullptr) return Status(ErrorCode::kInvalidArgument, "MemAdvise: the StreamExecutor pointer is null");
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->CheckDeviceRange("MemAdvise", "given", memory, memory.size()));
  if constexpr (MemoryAdviceBackend<B>) {
    return B::Advise(executor->native_state(), memory, advice, location);
  } else {
    return Status();
  }
}

}  // namespace streamexecutor
