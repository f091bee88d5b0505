// The members of CommandBuffer<B> that change or copy what was recorded:
// Update* (new values for a recorded launch, copy or fill, without recording
// again) and Clone(). A base of CommandBuffer (CRTP), which keeps the
// recording itself (core/command_buffer.hpp); docs/api.md, "Updates" and
// "Clones and nesting".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/kernel.hpp"
#include "streamexecutor/core/launch_check.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

namespace detail {
template <typename Buffer, typename B>
class CommandUpdates;
}  // namespace detail

// A recorded operation of one CommandBuffer (LastCommand), for its Update*
// calls. Copyable; it names nothing once its buffer is gone.
class CommandId {
 public:
  CommandId() = default;
  bool valid() const { return buffer_ != nullptr; }
  std::uint32_t index() const { return index_; }

 private:
  template <Backend>
  friend class CommandBuffer;
  template <typename Buffer, typename B>
  friend class detail::CommandUpdates;
  CommandId(const void* buffer, std::uint32_t index) : buffer_(buffer), index_(index) {}
  const void* buffer_ = nullptr;
  std::uint32_t index_ = 0;
};

namespace detail {
// One address per kernel signature: an update must keep the recorded one.
template <typename... Params>
inline constexpr char kSignatureTag = 0;

// What an update of a recorded operation must keep.
struct RecordedCommand {
  enum class Kind : std::uint8_t { kOther, kLaunch, kMemcpyH2D, kMemcpyD2H, kMemcpyD2D, kMemset8, kMemset32 };
  Kind kind = Kind::kOther;
  std::uint64_t bytes = 0;          // copies and fills
  const void* signature = nullptr;  // launches: detail::kSignatureTag<Params...>
  const std::string* kernel_name = nullptr;
};
template <typename Operation>
constexpr RecordedCommand::Kind KindOf() {
  using Kind = RecordedCommand::Kind;
  if constexpr (std::is_same_v<Operation, op::MemcpyH2D>) return Kind::kMemcpyH2D;
  if constexpr (std::is_same_v<Operation, op::MemcpyD2H>) return Kind::kMemcpyD2H;
  if constexpr (std::is_same_v<Operation, op::MemcpyD2D>) return Kind::kMemcpyD2D;
  if constexpr (std::is_same_v<Operation, op::Memset8>) return Kind::kMemset8;
  if constexpr (std::is_same_v<Operation, op::Memset32>) return Kind::kMemset32;
  return Kind::kOther;
}

// A base of CommandBuffer<B> (CRTP): `Buffer` is the derived class.
template <typename Buffer, typename B>
class CommandUpdates {
 public:
  // A new buffer of this executor holding a copy of every operation recorded
  // so far, with its current values: not finalized, so more may be recorded,
  // and updated on its own (Command(i) names the i-th operation in it). The
  // recorded host callables are shared, not copied. The clone's status()
  // says why it is not usable, if it is not.
  std::unique_ptr<Buffer> Clone() const {
    const Buffer& self = Self();
    static_assert(CommandBufferCloneBackend<B>, "CommandBuffer::Clone: this backend cannot clone command buffers");
    auto clone = std::make_unique<Buffer>(self.parent_);
    constexpr std::string_view caller = "CommandBuffer::Clone";
    auto failed = [&clone](Status status) {
      clone->Fail(std::move(status));
      return std::move(clone);
    };
    if (!self.initialized_) return failed(self.NotInitialized(caller));
    if (!self.status_.ok()) {
      return failed(MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the command buffer failed while recording: {}",
                              caller, self.Label(), self.status_.ToString()));
    }
    if (self.conditional_) {
      return failed(MakeError(ErrorCode::kUnimplemented,
                              "{} on {}: the command buffer holds ThenIf or ThenWhile, which are not cloned; record "
                              "it again",
                              caller, self.Label()));
    }
    if (Status s = B::CloneCommandBuffer(self.parent_->native_state(), self.handle_, clone->handle_); !s.ok()) {
      return failed(std::move(s));
    }
    clone->initialized_ = true;
    try {
      clone->used_ = self.used_;
      clone->recorded_ = self.recorded_;
      clone->recorded_events_ = self.recorded_events_;
      clone->kept_ = self.kept_;
    } catch (...) {
      return failed(MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory", caller, self.Label()));
    }
    clone->commands_ = self.commands_;
    clone->host_work_ = self.host_work_;
    return clone;
  }

  // Before or after Finalize, without recording again: later submissions run
  // the new values, submissions already queued keep theirs. Each update
  // makes the recording call's checks; the operation's kind stays, a launch
  // keeps its kernel (the TypedKernel's types check the arguments at
  // compile time, as ThenLaunch's do), and a fill keeps its size. A failed
  // update returns its Status and leaves the operation as it was. Updates
  // and submissions of one buffer must not run on two threads at once.
  template <typename... Params, typename... Args>
  Status UpdateLaunch(CommandId command, ThreadDim thread_dims, BlockDim block_dims,
                      const TypedKernel<Params...>& kernel, Args&&... args) {
    Buffer& self = Self();
    static_assert(CommandBufferUpdateBackend<B>, "UpdateLaunch: this backend cannot update command buffers");
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "UpdateLaunch: the number of arguments differs from the TypedKernel's parameter count");
    if constexpr (sizeof...(Params) == sizeof...(Args)) {
      static_assert(
          detail::CheckArguments<std::tuple<Params...>, std::tuple<Args&&...>>(std::index_sequence_for<Params...>{}) ||
          true);
      constexpr std::string_view caller = "UpdateLaunch";
      STREAMEXECUTOR_RETURN_IF_ERROR(CheckUpdate(caller, command, RecordedCommand::Kind::kLaunch));
      const RecordedCommand& recorded = self.recorded_[command.index()];
      if (recorded.signature != &detail::kSignatureTag<Params...> || recorded.kernel_name != kernel.interned_name()) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "{} on {}: operation {} launches kernel '{}'; an update keeps the recorded kernel, not '{}'",
                         caller, self.Label(), command.index(), Name(recorded.kernel_name),
                         Name(kernel.interned_name()));
      }
      STREAMEXECUTOR_RETURN_IF_ERROR(detail::CheckLaunch(*self.parent_, thread_dims, block_dims, kernel, args...));
      const PackedArgs<Params...> packed{detail::PackOne<Params>(static_cast<Args&&>(args))...};
      const op::Launch<typename B::KernelHandle, Params...> launch{
          kernel.template handle<typename B::KernelHandle>(), thread_dims, block_dims, packed, kernel.interned_name()};
      const std::array<const DeviceMemoryBase*, sizeof...(Params)> views{detail::MemoryView<Params>(args)...};
      return Rebind(
          caller, command, views.size(),
          [&](auto&& remember) {
            for (std::size_t i = 0; i < views.size(); ++i) {
              if (views[i] != nullptr) remember(*views[i], static_cast<int>(i));
            }
          },
          [&] { return B::Update(self.handle_, command.index(), launch); });
    }
    return Status();
  }
  template <typename T>
  Status UpdateMemcpyH2D(CommandId command, std::span<const std::type_identity_t<T>> host_src,
                         DeviceMemory<T>* device_dst) {
    Buffer& self = Self();
    constexpr std::string_view caller = "UpdateMemcpyH2D";
    if (device_dst == nullptr) return self.Null(caller, "destination");
    STREAMEXECUTOR_RETURN_IF_ERROR(self.parent_->template CheckElementCounts<T>(caller, host_src.size(), *device_dst));
    return UpdateOperation(caller, command, op::MemcpyH2D{*device_dst, host_src.data(), host_src.size_bytes()},
                           {device_dst});
  }
  template <typename T>
  Status UpdateMemcpyD2H(CommandId command, const DeviceMemory<T>& device_src,
                         std::span<std::type_identity_t<T>> host_dst) {
    Buffer& self = Self();
    constexpr std::string_view caller = "UpdateMemcpyD2H";
    STREAMEXECUTOR_RETURN_IF_ERROR(self.parent_->template CheckElementCounts<T>(caller, device_src, host_dst.size()));
    return UpdateOperation(caller, command, op::MemcpyD2H{host_dst.data(), device_src, device_src.size()},
                           {&device_src});
  }
  template <typename T>
  Status UpdateMemcpyD2D(CommandId command, DeviceMemory<T>* device_dst, const DeviceMemory<T>& device_src) {
    Buffer& self = Self();
    constexpr std::string_view caller = "UpdateMemcpyD2D";
    if (device_dst == nullptr) return self.Null(caller, "destination");
    STREAMEXECUTOR_RETURN_IF_ERROR(self.parent_->template CheckElementCounts<T>(caller, device_src, *device_dst));
    return UpdateOperation(caller, command, op::MemcpyD2D{*device_dst, device_src, device_src.size()},
                           {device_dst, &device_src});
  }
  Status UpdateMemcpy(CommandId command, DeviceMemoryBase* device_dst, const void* host_src, std::uint64_t size) {
    Buffer& self = Self();
    if (device_dst == nullptr) return self.Null("UpdateMemcpy (H2D)", "destination");
    return UpdateOperation("UpdateMemcpy (H2D)", command, op::MemcpyH2D{*device_dst, host_src, size}, {device_dst});
  }
  Status UpdateMemcpy(CommandId command, void* host_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return UpdateOperation("UpdateMemcpy (D2H)", command, op::MemcpyD2H{host_dst, device_src, size}, {&device_src});
  }
  Status UpdateMemcpy(CommandId command, DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src,
                      std::uint64_t size) {
    Buffer& self = Self();
    if (device_dst == nullptr) return self.Null("UpdateMemcpy (D2D)", "destination");
    return UpdateOperation("UpdateMemcpy (D2D)", command, op::MemcpyD2D{*device_dst, device_src, size},
                           {device_dst, &device_src});
  }
  Status UpdateMemZero(CommandId command, DeviceMemoryBase* location, std::uint64_t size) {
    Buffer& self = Self();
    if (location == nullptr) return self.Null("UpdateMemZero", "destination");
    return UpdateOperation("UpdateMemZero", command, op::Memset8{*location, 0, size}, {location});
  }
  Status UpdateMemset32(CommandId command, DeviceMemoryBase* location, std::uint32_t pattern, std::uint64_t size) {
    Buffer& self = Self();
    if (location == nullptr) return self.Null("UpdateMemset32", "destination");
    return UpdateOperation("UpdateMemset32", command, op::Memset32{*location, pattern, size}, {location});
  }

 private:
  Buffer& Self() { return static_cast<Buffer&>(*this); }
  const Buffer& Self() const { return static_cast<const Buffer&>(*this); }

  // Why `command` may not be updated as an operation of `kind`, if it may not.
  Status CheckUpdate(std::string_view caller, CommandId command, RecordedCommand::Kind kind) const {
    const Buffer& self = Self();
    if (!self.initialized_) return self.NotInitialized(caller);
    if (!self.status_.ok()) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the command buffer failed while recording: {}",
                       caller, self.Label(), self.status_.ToString());
    }
    if (!command.valid() || command.buffer_ != static_cast<const void*>(&self) ||
        command.index() >= self.recorded_.size()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: the CommandId does not name an operation of this command buffer (take it from "
                       "LastCommand() after recording)",
                       caller, self.Label());
    }
    if (self.recorded_[command.index()].kind != kind) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: operation {} is another kind of operation; an update keeps the recorded kind", caller,
                       self.Label(), command.index());
    }
    return Status();
  }
  template <typename Operation>
  Status UpdateOperation(std::string_view caller, CommandId command, const Operation& operation,
                         std::initializer_list<const DeviceMemoryBase*> views) {
    Buffer& self = Self();
    static_assert(CommandBufferUpdateBackend<B>, "Update*: this backend cannot update command buffers");
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckUpdate(caller, command, KindOf<Operation>()));
    STREAMEXECUTOR_RETURN_IF_ERROR(op::Validate(*self.parent_, caller, operation));
    RecordedCommand& recorded = self.recorded_[command.index()];
    constexpr bool kFill = std::is_same_v<Operation, op::Memset8> || std::is_same_v<Operation, op::Memset32>;
    // CUDA records no node for an empty copy or fill, and rejects a fill of
    // another size in an instantiated graph.
    if ((kFill && operation.bytes != recorded.bytes) || (operation.bytes == 0) != (recorded.bytes == 0)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: operation {} was recorded with {} bytes; an update {} ({} bytes asked)", caller,
                       self.Label(), command.index(), recorded.bytes,
                       kFill ? "keeps a fill's size" : "cannot make a copy empty or non-empty", operation.bytes);
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(Rebind(
        caller, command, views.size(),
        [&](auto&& remember) {
          for (const DeviceMemoryBase* view : views) remember(*view, -1);
        },
        [&] { return B::Update(self.handle_, command.index(), operation); }));
    recorded.bytes = operation.bytes;
    return Status();
  }
  // Runs the backend's update, then makes the memory the operation now uses
  // the memory checked at each submission (room is made first, so that
  // nothing can fail after the backend changed the operation).
  template <typename Each, typename Update>
  Status Rebind(std::string_view caller, CommandId command, std::size_t views, Each&& each, Update&& update) {
    Buffer& self = Self();
    try {
      self.used_.reserve(self.used_.size() + views);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory", caller, self.Label());
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(update());
    std::erase_if(self.used_, [&](const typename Buffer::UsedMemory& used) { return used.command == command.index(); });
    each([&](const DeviceMemoryBase& view, int argument) {
      self.used_.push_back(typename Buffer::UsedMemory{view, caller, command.index(), argument});
    });
    return Status();
  }
  static std::string_view Name(const std::string* name) { return name != nullptr ? std::string_view(*name) : "?"; }
};

}  // namespace detail
}  // namespace streamexecutor
