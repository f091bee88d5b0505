// Launches typed at run time: for kernels whose parameter list is known only
// when the program runs (a kernel name from a configuration file, a plugin).
//
//   se::UntypedKernel kernel(executor);
//   executor->GetUntypedKernel(spec, &kernel);       // reads the device code's parameter list
//   se::KernelArgsArray<4> args;
//   args.Add(2.0f).Add(x.ptr()).Add(y.ptr()).Add(n);
//   stream.ThenLaunch(se::ThreadDim(256), se::BlockDim(n / 256), kernel, args);
//
// What a TypedKernel checks at compile time is checked here at each launch,
// against the parameter list the backend read when it loaded the kernel
// (OpenCL argument info, PTX .entry parameters, the host function's
// signature): the count, memory against scalar against shared memory, and
// sizes. The arguments are kept in a fixed array: nothing allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/type_name.hpp"

namespace streamexecutor {

// One argument of a launch typed at run time.
struct KernelArg {
  KernelParamKind kind = KernelParamKind::kScalar;
  std::string_view type;           // the C++ type given, for messages
  std::size_t size = 0;            // scalar: its bytes; memory and shared: one element's (0: untyped)
  std::size_t offset = 0;          // scalar: where its bytes are in KernelArgs::data()
  DeviceMemoryBase memory;         // memory
  std::uint64_t shared_bytes = 0;  // shared memory
};

// The arguments as backends receive them. Built through KernelArgsArray<N>.
class KernelArgs {
 public:
  KernelArgs(const KernelArgs&) = delete;
  KernelArgs& operator=(const KernelArgs&) = delete;

  std::span<const KernelArg> args() const { return {slots_, count_}; }
  std::size_t size() const { return count_; }
  // Where the scalars' bytes are (KernelArg::offset).
  const std::byte* data() const { return bytes_; }
  // Not ok when an Add did not fit the array; the launch reports it.
  const Status& status() const { return status_; }

  // Device memory, checked for liveness at every launch. A const view
  // (&x.cref()) is taken as well: the array keeps a copy of the view, and
  // the kernel's parameter list cannot say whether it writes.
  // (Both forms: the scalar template below would match a non-const pointer
  // better than a const one.)
  template <typename T>
  KernelArgs& Add(DeviceMemory<T>* memory) {
    return AddMemory(memory, sizeof(T), detail::TypeName<DeviceMemory<T>*>());
  }
  template <typename T>
  KernelArgs& Add(const DeviceMemory<T>* memory) {
    return AddMemory(memory, sizeof(T), detail::TypeName<DeviceMemory<T>*>());
  }
  // Untyped memory: the element type is not compared with the kernel's.
  KernelArgs& Add(DeviceMemoryBase* memory) { return AddMemory(memory, 0, "streamexecutor::DeviceMemoryBase*"); }
  KernelArgs& Add(const DeviceMemoryBase* memory) { return AddMemory(memory, 0, "streamexecutor::DeviceMemoryBase*"); }
  // Per-block scratch memory (CUDA dynamic shared, OpenCL __local, a host std::span).
  template <typename T>
  KernelArgs& Add(SharedDeviceMemory<T> shared) {
    return AddShared(shared.size(), sizeof(T), detail::TypeName<SharedDeviceMemory<T>>());
  }
  KernelArgs& AddSharedBytes(std::uint64_t bytes) { return AddShared(bytes, 0, "shared memory bytes"); }
  // A scalar, passed by value with the bytes it has: pass the exact type the
  // kernel takes (2.0f for a float, std::uint32_t{n} for a uint).
  template <typename T>
  KernelArgs& Add(const T& value) {
    constexpr bool shared_by_pointer =
        std::is_pointer_v<T> && is_shared_device_memory_v<std::remove_cv_t<std::remove_pointer_t<T>>>;
    static_assert(!shared_by_pointer,
                  "KernelArgs::Add: pass SharedDeviceMemory<T> by value, not by pointer: it is a size, not memory");
    static_assert(shared_by_pointer || (!std::is_pointer_v<T> && !std::is_null_pointer_v<T>),
                  "KernelArgs::Add: raw pointers cannot be kernel arguments; pass se::DeviceMemory<T>*");
    static_assert(!std::is_base_of_v<DeviceMemoryBase, T>,
                  "KernelArgs::Add: pass device memory by pointer (x.ptr() or &memory)");
    static_assert(std::is_trivially_copyable_v<T>, "KernelArgs::Add: scalars must be trivially copyable");
    KernelArg* arg = Next(detail::TypeName<T>());
    if (arg == nullptr) return *this;
    const std::size_t offset = (used_ + alignof(T) - 1) / alignof(T) * alignof(T);
    if (offset > byte_capacity_ || sizeof(T) > byte_capacity_ - offset) return Overflow(detail::TypeName<T>());
    std::memcpy(bytes_ + offset, &value, sizeof(T));
    used_ = offset + sizeof(T);
    arg->kind = KernelParamKind::kScalar;
    arg->size = sizeof(T);
    arg->offset = offset;
    ++count_;
    return *this;
  }
  // Empties the array for new arguments.
  void Clear() {
    count_ = used_ = 0;
    status_ = Status();
  }

 protected:
  KernelArgs(KernelArg* slots, std::size_t capacity, std::byte* bytes, std::size_t byte_capacity)
      : slots_(slots), capacity_(capacity), bytes_(bytes), byte_capacity_(byte_capacity) {}
  ~KernelArgs() = default;

 private:
  KernelArg* Next(std::string_view type) {
    if (count_ == capacity_) {
      Overflow(type);
      return nullptr;
    }
    KernelArg* arg = &slots_[count_];
    *arg = KernelArg{};
    arg->type = type;
    return arg;
  }
  KernelArgs& AddMemory(const DeviceMemoryBase* memory, std::size_t element, std::string_view type) {
    KernelArg* arg = Next(type);
    if (arg == nullptr) return *this;
    arg->kind = KernelParamKind::kDevicePointer;
    arg->size = element;
    if (memory != nullptr) arg->memory = *memory;  // null: refused at launch as a null view
    ++count_;
    return *this;
  }
  KernelArgs& AddShared(std::uint64_t bytes, std::size_t element, std::string_view type) {
    KernelArg* arg = Next(type);
    if (arg == nullptr) return *this;
    arg->kind = KernelParamKind::kSharedMemory;
    arg->size = element;
    arg->shared_bytes = bytes;
    ++count_;
    return *this;
  }
  [[gnu::cold]] KernelArgs& Overflow(std::string_view type) {
    if (status_.ok()) {
      status_ = MakeError(ErrorCode::kResourceExhausted,
                          "KernelArgs: argument {} ({}) does not fit: the array holds {} argument(s) and {} bytes of "
                          "scalars; use a larger KernelArgsArray<N, Bytes>",
                          count_, type, capacity_, byte_capacity_);
    }
    return *this;
  }

  KernelArg* slots_;
  std::size_t capacity_;
  std::byte* bytes_;
  std::size_t byte_capacity_;
  std::size_t count_ = 0;
  std::size_t used_ = 0;
  Status status_;
};

namespace detail {
// The storage of a KernelArgsArray, a base constructed before KernelArgs so
// that KernelArgs is handed live arrays.
template <std::size_t N, std::size_t Bytes>
struct KernelArgsStorage {
  std::array<KernelArg, N> slots{};
  alignas(std::max_align_t) std::array<std::byte, Bytes == 0 ? 1 : Bytes> bytes{};
};
}  // namespace detail

// Room for N arguments and Bytes bytes of scalars, inline.
template <std::size_t N, std::size_t Bytes = 8 * N>
class KernelArgsArray : private detail::KernelArgsStorage<N, Bytes>, public KernelArgs {
  static_assert(N >= 1 && N <= 64, "KernelArgsArray<N>: between 1 and 64 arguments (the backends' fixed arrays)");
  using Storage = detail::KernelArgsStorage<N, Bytes>;

 public:
  // Storage, the first base, is built first; it is left out of the list
  // because nvcc's front end reorders listed bases and then warns (-Wreorder).
  KernelArgsArray() : KernelArgs(Storage::slots.data(), N, Storage::bytes.data(), Bytes) {}
};

// One parameter of a kernel as its device code declares it, read by the
// backend when the kernel is loaded.
struct DeviceParam {
  bool takes_memory = false;     // a pointer to device memory
  bool takes_scalar = false;     // a value of `size` bytes (PTX cannot tell a 64-bit integer from a pointer: both)
  bool takes_shared = false;     // per-block scratch (OpenCL __local, a host std::span)
  std::size_t size = 0;          // a scalar's size; 0: not known
  std::size_t element_size = 0;  // memory and shared: one element's size; 0: not known (void*, PTX)
  std::string type;              // as the device code spells it
};

// A kernel handle without a compile-time parameter list: launched with
// KernelArgs, checked against params() at each launch.
class UntypedKernel : public KernelBase {
 public:
  template <Backend B>
  explicit UntypedKernel(StreamExecutor<B>* executor) : KernelBase(executor) {}

  // The device code's parameters, in order.
  std::span<const DeviceParam> params() const { return params_; }
  // False where shared memory is not a kernel parameter (CUDA's dynamic
  // shared memory): shared arguments are then not matched with params().
  bool shared_is_parameter() const { return shared_is_parameter_; }

 private:
  template <Backend B>
  friend class StreamExecutor;

  std::vector<DeviceParam> params_;
  bool shared_is_parameter_ = true;
};

namespace op {
// A launch typed at run time, already checked against the kernel's parameters.
template <typename KernelHandle>
struct UntypedLaunch {
  const KernelHandle& kernel;
  const ThreadDim& threads;
  const BlockDim& blocks;
  const KernelArgs& args;
  const std::string* kernel_name;
};
}  // namespace op

}  // namespace streamexecutor
