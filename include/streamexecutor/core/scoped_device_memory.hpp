// ScopedDeviceMemory<T>: owns one allocation and frees it on destruction.
// Move-only; a moved-from or failed one holds a null DeviceMemory, which every
// operation rejects with a message instead of touching memory.
#pragma once

#include <utility>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

template <typename T>
class ScopedDeviceMemory {
 public:
  using Free = Status (*)(void* owner, DeviceMemoryBase* memory);

  ScopedDeviceMemory() = default;
  ScopedDeviceMemory(void* owner, Free free, DeviceMemory<T> memory) : owner_(owner), free_(free), memory_(memory) {}
  // A failed allocation: null memory plus the reason.
  explicit ScopedDeviceMemory(Status failure) : status_(std::move(failure)) {}

  ScopedDeviceMemory(const ScopedDeviceMemory&) = delete;
  ScopedDeviceMemory& operator=(const ScopedDeviceMemory&) = delete;
  ScopedDeviceMemory(ScopedDeviceMemory&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)),
        free_(std::exchange(other.free_, nullptr)),
        memory_(std::exchange(other.memory_, DeviceMemory<T>())),
        status_(std::exchange(other.status_, MovedFrom())) {}
  ScopedDeviceMemory& operator=(ScopedDeviceMemory&& other) noexcept {
    if (this != &other) {
      Reset().IgnoreError();
      owner_ = std::exchange(other.owner_, nullptr);
      free_ = std::exchange(other.free_, nullptr);
      memory_ = std::exchange(other.memory_, DeviceMemory<T>());
      status_ = std::exchange(other.status_, MovedFrom());
    }
    return *this;
  }
  ~ScopedDeviceMemory() { Reset().IgnoreError(); }

  // Seed names: a pointer for kernel arguments and Then* destinations, a
  // const reference for sources.
  DeviceMemory<T>* ptr() { return &memory_; }
  const DeviceMemory<T>* ptr() const { return &memory_; }
  const DeviceMemory<T>& cref() const { return memory_; }
  DeviceMemory<T>& operator*() { return memory_; }

  bool ok() const { return !memory_.IsNull(); }
  // Why this holds no memory (failed allocation, moved-from, reset).
  const Status& status() const { return status_; }

  // Frees now; a second Reset is a no-op.
  Status Reset() {
    if (memory_.IsNull() || free_ == nullptr) return Status();
    Status freed = free_(owner_, &memory_);
    memory_ = DeviceMemory<T>();
    status_ = Status(ErrorCode::kFailedPrecondition, "ScopedDeviceMemory was reset");
    return freed;
  }

 private:
  static Status MovedFrom() { return Status(ErrorCode::kFailedPrecondition, "ScopedDeviceMemory was moved from"); }

  void* owner_ = nullptr;
  Free free_ = nullptr;
  DeviceMemory<T> memory_;
  Status status_;
};

}  // namespace streamexecutor
