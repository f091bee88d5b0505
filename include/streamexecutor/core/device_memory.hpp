// Non-owning views of device memory (DeviceMemoryBase, DeviceMemory<T>) and the
// launch-time request for dynamic shared memory (SharedDeviceMemory<T>).
//
// A view is an opaque backend handle plus a byte offset and a byte size. The
// offset is what makes GetSlice work on every backend: host and CUDA add it to
// the pointer, OpenCL (whose cl_mem cannot be offset) passes it separately.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace streamexecutor {

class DeviceMemoryBase {
 public:
  constexpr DeviceMemoryBase() = default;
  constexpr DeviceMemoryBase(void* opaque, std::uint64_t size_bytes, std::uint64_t offset_bytes = 0)
      : opaque_(opaque), offset_(offset_bytes), size_(size_bytes) {}

  // The backend's handle for the whole allocation (host pointer, CUdeviceptr, cl_mem).
  constexpr void* opaque() const { return opaque_; }
  // Where this view starts inside the allocation, in bytes.
  constexpr std::uint64_t offset() const { return offset_; }
  // Size of the view in bytes (seed name).
  constexpr std::uint64_t size() const { return size_; }
  constexpr bool IsNull() const { return opaque_ == nullptr; }
  constexpr bool IsSameAs(const DeviceMemoryBase& other) const {
    return opaque_ == other.opaque_ && offset_ == other.offset_ && size_ == other.size_;
  }

 protected:
  void* opaque_ = nullptr;
  std::uint64_t offset_ = 0;
  std::uint64_t size_ = 0;
};

template <typename T>
class DeviceMemory : public DeviceMemoryBase {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceMemory<T> holds trivially copyable elements only");
  static_assert(!std::is_const_v<T>, "DeviceMemory<T>: use a non-const T (constness belongs to the kernel)");

 public:
  using ElementType = T;

  constexpr DeviceMemory() = default;
  // Reinterprets untyped memory; the size is truncated to whole elements.
  constexpr explicit DeviceMemory(const DeviceMemoryBase& other)
      : DeviceMemoryBase(other.opaque(), other.size() - other.size() % sizeof(T), other.offset()) {}

  constexpr std::uint64_t ElementCount() const { return size_ / sizeof(T); }

  // A view of `count` elements starting at element `offset`. Out-of-range
  // requests give a null view, which every operation rejects with a message.
  constexpr DeviceMemory<T> GetSlice(std::uint64_t element_offset, std::uint64_t element_count) const {
    if (IsNull() || element_offset > ElementCount() || element_count > ElementCount() - element_offset) {
      return DeviceMemory<T>();
    }
    return DeviceMemory<T>(DeviceMemoryBase(opaque_, element_count * sizeof(T), offset_ + element_offset * sizeof(T)));
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
  constexpr std::uint64_t size() const { return count_ * sizeof(T); }

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
