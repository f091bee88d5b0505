// TypedKernel<Params...>: a handle to a loaded kernel whose parameter list is
// part of its type, so that ThenLaunch checks arguments at compile time.
//
// The handle is backend-neutral (the seed spells it TypedKernel<float,
// DeviceMemory<float>*> with no platform), so the backend's trivially
// copyable KernelHandle is kept in inline storage; the Stream<B> that launches
// it knows B at compile time and reads it back without any dispatch.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/kernel_params.hpp"

namespace streamexecutor {

template <Backend B>
class StreamExecutor;

class KernelBase {
 public:
  static constexpr std::size_t kHandleCapacity = 32;

  KernelBase(const KernelBase&) = delete;
  KernelBase& operator=(const KernelBase&) = delete;
  KernelBase(KernelBase&& other) noexcept { MoveFrom(other); }
  KernelBase& operator=(KernelBase&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  ~KernelBase() { Reset(); }

  // The name lives in the executor, not in the kernel, so that messages of a
  // launch still queued when the TypedKernel is destroyed never dangle.
  const std::string& name() const { return name_ != nullptr ? *name_ : NoName(); }
  // The interned name, null before loading: what launch operations carry for
  // their messages, without name()'s branch on the launch path.
  const std::string* interned_name() const { return name_; }
  bool IsLoaded() const { return release_ != nullptr; }
  // Loaded, and by `executor`: one compare for the launch path.
  bool IsLoadedOn(const void* executor) const { return loaded_on_ == executor; }
  // The StreamExecutor this kernel was created for (type-erased only here,
  // where nothing runs per launch).
  const void* executor() const { return executor_; }
  // The device label ("opencl:0") of the executor that loaded it, for the
  // message of a launch on another executor's stream; empty before loading.
  const std::string& loaded_on_label() const { return label_ != nullptr ? *label_ : NoName(); }

  template <typename Handle>
  const Handle& handle() const {
    return *std::launder(reinterpret_cast<const Handle*>(handle_));
  }

 protected:
  explicit KernelBase(const void* executor) : executor_(executor) {}

 private:
  template <Backend B>
  friend class StreamExecutor;

  using Release = void (*)(const void* executor, std::byte* handle);

  template <typename Handle>
  void Bind(const Handle& handle, Release release, const std::string* name, const std::string* label) {
    static_assert(std::is_trivially_copyable_v<Handle> && sizeof(Handle) <= kHandleCapacity &&
                  alignof(Handle) <= alignof(std::max_align_t));
    Reset();
    ::new (static_cast<void*>(handle_)) Handle(handle);
    release_ = release;
    name_ = name;
    label_ = label;
    loaded_on_ = executor_;
  }
  void Reset() {
    if (release_) release_(executor_, handle_);
    release_ = nullptr;
    loaded_on_ = nullptr;
  }
  void MoveFrom(KernelBase& other) {
    executor_ = other.executor_;
    std::memcpy(handle_, other.handle_, kHandleCapacity);
    release_ = std::exchange(other.release_, nullptr);
    loaded_on_ = std::exchange(other.loaded_on_, nullptr);
    name_ = other.name_;
    label_ = other.label_;
  }
  static const std::string& NoName() {
    static const std::string empty;
    return empty;
  }

  const void* executor_ = nullptr;
  const void* loaded_on_ = nullptr;  // executor_ once loaded, null before
  alignas(std::max_align_t) std::byte handle_[kHandleCapacity] = {};
  Release release_ = nullptr;
  const std::string* name_ = nullptr;
  const std::string* label_ = nullptr;  // the loading executor's, which outlives its kernels
};

template <typename... Params>
class TypedKernel : public KernelBase {
  static_assert((detail::CheckParamType<Params>() && ...));

 public:
  static constexpr std::size_t kArity = sizeof...(Params);

  template <Backend B>
  explicit TypedKernel(StreamExecutor<B>* executor) : KernelBase(executor) {}

  static constexpr std::span<const KernelParamInfo> ParamInfos() { return detail::kParamInfos<Params...>; }
};

}  // namespace streamexecutor
