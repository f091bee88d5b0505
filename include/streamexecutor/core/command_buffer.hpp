// CommandBuffer<B>: stream work recorded once and submitted many times.
//
//   se::CommandBuffer buffer(executor);
//   buffer.Init().ThenMemcpy(&x, host.data(), bytes).ThenLaunch(threads, blocks, kernel, x.ptr());
//   for (int i = 0; i < 100; ++i) stream.ThenSubmit(&buffer);
//
// The recording calls are spelled like Stream's and check exactly what
// Stream's check (the operations' Validate, detail::CheckLaunch), once, at
// record time. A submission checks only what may have changed since: that the
// stream belongs to the buffer's executor and that every DeviceMemory the
// buffer uses is still live (a freed buffer is an error, not a fault). The
// first error while recording sticks, as on a Stream: the buffer then refuses
// to be submitted and says why.
//
// How a backend records is its CommandBufferBackend functions (core/backend.hpp):
// a CUDA graph, an OpenCL cl_command_buffer_khr (or a replay of the recorded
// operations), the host's array of packed commands.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/command_updates.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/launch_check.hpp"

namespace streamexecutor {

template <Backend B>
class CommandBuffer : public detail::CommandUpdates<CommandBuffer<B>, B> {
  friend class detail::CommandUpdates<CommandBuffer<B>, B>;
  using RecordedCommand = detail::RecordedCommand;
  static_assert(CommandBufferBackend<B>, "CommandBuffer: this backend has no command buffers (CommandBufferBackend)");

 public:
  explicit CommandBuffer(StreamExecutor<B>* parent) : parent_(parent) {}
  CommandBuffer(const CommandBuffer&) = delete;
  CommandBuffer& operator=(const CommandBuffer&) = delete;
  // Work already submitted keeps what it needs (each backend's
  // DestroyCommandBuffer defers the release past queued submissions).
  ~CommandBuffer() {
    if (capturer_.abandon != nullptr) capturer_.abandon(capturer_.stream);  // the stream stops capturing
    if (initialized_) B::DestroyCommandBuffer(parent_->native_state(), handle_);
  }

  CommandBuffer& Init() {
    if (parent_ == nullptr) {
      return Fail(Status(ErrorCode::kInvalidArgument,
                         "CommandBuffer::Init: the command buffer was constructed with a null StreamExecutor"));
    }
    if (initialized_) {
      return Fail(MakeError(ErrorCode::kFailedPrecondition, "CommandBuffer::Init on {}: already initialized", Label()));
    }
    if (Status s = B::CreateCommandBuffer(parent_->native_state(), handle_); !s.ok()) return Fail(std::move(s));
    initialized_ = true;
    return *this;
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  StreamExecutor<B>* parent() const { return parent_; }
  bool initialized() const { return initialized_; }
  bool finalized() const { return finalized_; }
  // How many operations were recorded.
  std::size_t size() const { return commands_; }
  // The operation recorded last, for Update*; invalid before the first.
  CommandId LastCommand() const {
    return commands_ == 0 ? CommandId() : CommandId(this, static_cast<std::uint32_t>(commands_ - 1));
  }
  // The index-th operation (a clone's operations have the original's indices).
  CommandId Command(std::size_t index) const {
    return index < commands_ ? CommandId(this, static_cast<std::uint32_t>(index)) : CommandId();
  }

  // Dependencies: the next operation recorded depends on `commands` only,
  // not on everything recorded before it, so that independent branches may
  // run at once where the backend can (CUDA: a graph node with those
  // dependencies; host and OpenCL run the recording order, which keeps any
  // dependencies). After({}) makes the next operation depend on nothing.
  // An operation recorded without After depends on everything before it,
  // as on a stream.
  CommandBuffer& After(std::initializer_list<CommandId> commands) {
    return After(std::span<const CommandId>(commands.begin(), commands.size()));
  }
  CommandBuffer& After(std::span<const CommandId> commands) {
    constexpr std::string_view caller = "CommandBuffer::After";
    if (!Ready(caller)) return *this;
    try {
      next_dependencies_.clear();
      for (const CommandId& command : commands) {
        if (!command.valid() || command.buffer_ != this || command.index() >= commands_) {
          return Fail(MakeError(ErrorCode::kInvalidArgument,
                                "{} on {}: a CommandId does not name an operation recorded in this command buffer",
                                caller, Label()));
        }
        next_dependencies_.push_back(command.index());
      }
    } catch (...) {
      return Fail(MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory", caller, Label()));
    }
    has_next_dependencies_ = true;
    return *this;
  }

  // Nesting: records `child`'s operations as they are now into this buffer,
  // as one operation (CUDA: a child graph node). Later updates of the child
  // do not reach this buffer, and the nested operations cannot be updated
  // here; the child's memory is checked at each submission of this buffer.
  CommandBuffer& ThenSubmit(CommandBuffer* child) {
    static_assert(CommandBufferNestingBackend<B>, "CommandBuffer::ThenSubmit: this backend cannot nest buffers");
    constexpr std::string_view caller = "CommandBuffer::ThenSubmit";
    if (!Ready(caller)) return *this;
    if (Status s = CheckChild(caller, child, "nested"); !s.ok()) return Fail(std::move(s));
    if (child->commands_ == 0) return *this;  // nothing to hold
    try {
      recorded_events_.insert(recorded_events_.end(), child->recorded_events_.begin(), child->recorded_events_.end());
    } catch (...) {
      return Fail(MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory", caller, Label()));
    }
    if (!RememberChild(caller, *child)) return *this;
    return Check(RecordOp(op::Nested<typename B::CommandBufferHandle>{&child->handle_}));
  }

  // Conditionals: `body`'s operations, as they are now (as for ThenSubmit),
  // run once if (ThenIf), or again and again while (ThenWhile), the int32 at
  // condition[0] is non-zero when read on the device. A While reads it before
  // the first iteration and after each; the body must change it, or the loop
  // does not end. The body holds device work only: launches, device-to-device
  // copies, fills, canned operations, nested buffers and conditionals (CUDA's
  // conditional nodes allow no more). Where it runs is the backend's
  // (docs/api.md, "Conditionals"): CUDA conditional nodes, the host's worker,
  // OpenCL's replay loop, which reads the value back on each iteration and
  // blocks the submitting thread until the loop ends.
  CommandBuffer& ThenIf(const DeviceMemory<std::int32_t>& condition, CommandBuffer* body) {
    return Branch("ThenIf", op::ConditionalKind::kIf, condition, body);
  }
  CommandBuffer& ThenWhile(const DeviceMemory<std::int32_t>& condition, CommandBuffer* body) {
    return Branch("ThenWhile", op::ConditionalKind::kWhile, condition, body);
  }
  typename B::CommandBufferHandle& native_handle() { return handle_; }

  // ---- Recording: Stream's spellings -----------------------------------------

  template <typename... Params, typename... Args>
  CommandBuffer& ThenLaunch(ThreadDim thread_dims, BlockDim block_dims, const TypedKernel<Params...>& kernel,
                            Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "ThenLaunch: the number of arguments differs from the TypedKernel's parameter count");
    if constexpr (sizeof...(Params) == sizeof...(Args)) {
      static_assert(
          detail::CheckArguments<std::tuple<Params...>, std::tuple<Args&&...>>(std::index_sequence_for<Params...>{}) ||
          true);
      constexpr std::string_view caller = "ThenLaunch";
      if (!Ready(caller)) return *this;
      if (Status s = detail::CheckLaunch(*parent_, thread_dims, block_dims, kernel, args...); !s.ok()) {
        return Fail(std::move(s));
      }
      const PackedArgs<Params...> packed{detail::PackOne<Params>(static_cast<Args&&>(args))...};
      const op::Launch<typename B::KernelHandle, Params...> launch{
          kernel.template handle<typename B::KernelHandle>(), thread_dims, block_dims, packed, kernel.interned_name()};
      const std::array<const DeviceMemoryBase*, sizeof...(Params)> views{detail::MemoryView<Params>(args)...};
      for (std::size_t i = 0; i < views.size(); ++i) {
        if (views[i] != nullptr && !Remember(*views[i], caller, static_cast<int>(i))) return *this;
      }
      return Check(RecordOp(launch), RecordedCommand{RecordedCommand::Kind::kLaunch, 0,
                                                     &detail::kSignatureTag<Params...>, kernel.interned_name()});
    }
    return *this;
  }

  template <typename T>
  CommandBuffer& ThenMemcpyH2D(std::span<const std::type_identity_t<T>> host_src, DeviceMemory<T>* device_dst) {
    if (!Ready("ThenMemcpyH2D")) return *this;
    if (device_dst == nullptr) return Fail(Null("ThenMemcpyH2D", "destination"));
    if (Status s = parent_->template CheckElementCounts<T>("ThenMemcpyH2D", host_src.size(), *device_dst); !s.ok()) {
      return Fail(std::move(s));
    }
    return CopyH2D("ThenMemcpyH2D", device_dst, host_src.data(), host_src.size_bytes());
  }
  template <typename T>
  CommandBuffer& ThenMemcpyD2H(const DeviceMemory<T>& device_src, std::span<std::type_identity_t<T>> host_dst) {
    if (!Ready("ThenMemcpyD2H")) return *this;
    if (Status s = parent_->template CheckElementCounts<T>("ThenMemcpyD2H", device_src, host_dst.size()); !s.ok()) {
      return Fail(std::move(s));
    }
    return CopyD2H("ThenMemcpyD2H", host_dst.data(), device_src, device_src.size());
  }
  template <typename T>
  CommandBuffer& ThenMemcpyD2D(DeviceMemory<T>* device_dst, const DeviceMemory<T>& device_src) {
    if (!Ready("ThenMemcpyD2D")) return *this;
    if (device_dst == nullptr) return Fail(Null("ThenMemcpyD2D", "destination"));
    if (Status s = parent_->template CheckElementCounts<T>("ThenMemcpyD2D", device_src, *device_dst); !s.ok()) {
      return Fail(std::move(s));
    }
    return CopyD2D("ThenMemcpyD2D", device_dst, device_src, device_src.size());
  }

  // Byte forms: H2D, D2H, D2D. Host memory is read or written at each
  // submission's turn, so it must stay valid while the buffer is in use.
  CommandBuffer& ThenMemcpy(DeviceMemoryBase* device_dst, const void* host_src, std::uint64_t size) {
    return CopyH2D("ThenMemcpy (H2D)", device_dst, host_src, size);
  }
  CommandBuffer& ThenMemcpy(void* host_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return CopyD2H("ThenMemcpy (D2H)", host_dst, device_src, size);
  }
  CommandBuffer& ThenMemcpy(DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return CopyD2D("ThenMemcpy (D2D)", device_dst, device_src, size);
  }

  CommandBuffer& ThenMemZero(DeviceMemoryBase* location, std::uint64_t size) {
    constexpr std::string_view caller = "ThenMemZero";
    if (!Ready(caller)) return *this;
    if (location == nullptr) return Fail(Null(caller, "destination"));
    return Then(caller, op::Memset8{*location, 0, size}, {location});
  }
  CommandBuffer& ThenMemset32(DeviceMemoryBase* location, std::uint32_t pattern, std::uint64_t size) {
    constexpr std::string_view caller = "ThenMemset32";
    if (!Ready(caller)) return *this;
    if (location == nullptr) return Fail(Null(caller, "destination"));
    return Then(caller, op::Memset32{*location, pattern, size}, {location});
  }

  // The buffer keeps its own copy of `callback`, run once per submission.
  // As on a stream, it returns void or a Status that fails the stream.
  template <typename Callback>
  CommandBuffer& ThenDoHostCallback(Callback&& callback) {
    static_assert(detail::CheckHostCallback<Callback>());
    static_assert(std::is_copy_constructible_v<std::decay_t<Callback>>,
                  "CommandBuffer::ThenDoHostCallback: the callable must be copyable (replays may copy it)");
    if (!Ready("ThenDoHostCallback")) return *this;
    MarkHostWork("ThenDoHostCallback");
    return Check(op::SubmitHostCall(std::forward<Callback>(callback),
                                    [this](const auto& call) { return this->RecordOp(call); }));
  }

  // The events must outlive the buffer: a submission records or waits on the
  // event's native handle.
  CommandBuffer& ThenRecordEvent(Event<B>* event) {
    constexpr std::string_view caller = "ThenRecordEvent";
    typename B::EventHandle* handle = CheckedEvent(caller, event, detail::EventUse::kRecord);
    if (handle == nullptr) return *this;
    MarkHostWork(caller);
    try {
      recorded_events_.push_back(event);  // marked recorded at each submission (timers read them)
    } catch (const std::bad_alloc&) {
      return Fail(MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory", caller, Label()));
    }
    return Check(RecordOp(op::RecordEvent<typename B::EventHandle>{handle}));
  }
  CommandBuffer& ThenWaitFor(Event<B>* event) {
    constexpr std::string_view caller = "ThenWaitFor(Event)";
    typename B::EventHandle* handle = CheckedEvent(caller, event, detail::EventUse::kWait);
    if (handle == nullptr) return *this;
    MarkHostWork(caller);
    return Check(RecordOp(op::WaitEvent<typename B::EventHandle>{handle}));
  }

  // Turns the recording into the backend's native object. Called by the
  // first submission if not before; nothing may be recorded after it.
  Status Finalize() {
    if (!initialized_) return Fail(NotInitialized("CommandBuffer::Finalize")).status_;
    if (!status_.ok() || finalized_) return status_;
    // The native object may take the memory's driver handles: never freed ones.
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckMemory("CommandBuffer::Finalize"));
    if (Status s = B::FinalizeCommandBuffer(handle_); !s.ok()) return Fail(std::move(s)).status_;
    finalized_ = true;
    return status_;
  }

  // ---- For Stream::BeginCapture / EndCapture -------------------------------------
  // The stream capturing into this buffer, told to stop by the buffer's
  // destructor (a stream may outlive the buffer it captures into).
  struct Capturer {
    void* stream = nullptr;
    void (*abandon)(void* stream) = nullptr;
  };
  const Capturer& capturer() const { return capturer_; }
  // Why a stream of `stream_executor` (named `stream_label`) may not begin
  // capturing into this buffer, if it may not.
  Status CheckCaptureStart(std::string_view caller, const StreamExecutor<B>* stream_executor,
                           std::string_view stream_label) const {
    if (!initialized_) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the command buffer was not initialized (call Init())",
                       caller, stream_label);
    }
    if (parent_ != stream_executor) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the command buffer was made for {}", caller,
                       stream_label, Label());
    }
    if (capturer_.stream != nullptr) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: another stream is capturing into this command buffer",
                       caller, stream_label);
    }
    if (!status_.ok()) return status_;
    if (finalized_) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on {}: the command buffer is finalized (Finalize or a submission); capture into a new one",
                       caller, stream_label);
    }
    return Status();
  }
  void SetCapturer(Capturer capturer) { capturer_ = capturer; }
  // Records an operation a capturing stream was given, with the checks the
  // recording calls make; one a buffer cannot hold fails the capture.
  template <typename Operation>
  CommandBuffer& Capture(std::string_view caller, const Operation& operation) {
    if (!Ready(caller)) return *this;
    if constexpr (std::is_same_v<Operation, op::MemcpyH2D>) {
      MarkHostWork(caller);
      return Then(caller, operation, {&operation.dst});
    } else if constexpr (std::is_same_v<Operation, op::Memset8> || std::is_same_v<Operation, op::Memset32>) {
      return Then(caller, operation, {&operation.dst});
    } else if constexpr (std::is_same_v<Operation, op::MemcpyD2H>) {
      MarkHostWork(caller);
      return Then(caller, operation, {&operation.src});
    } else if constexpr (std::is_same_v<Operation, op::MemcpyD2D>) {
      return Then(caller, operation, {&operation.dst, &operation.src});
    } else {
      return Fail(NotCapturable(caller));
    }
  }
  // A canned operation's work (Stream::EnqueueCanned): a host call, or an
  // op::LibraryCall that the backend records (OpenCL: replayed at each
  // submission; CUDA: captured from a stream into a child graph, once).
  template <typename Operation>
  void CaptureCanned(std::string_view caller, std::span<const DeviceMemoryBase> buffers, const Operation& operation,
                     std::shared_ptr<const void> keep) {
    if (!Ready(caller)) return;
    if constexpr (op::IsHostCall<Operation>) {
      if constexpr (!std::is_copy_constructible_v<std::decay_t<typename Operation::Callable>>) {
        Fail(NotCapturable(caller));
        return;
      }
    }
    for (const DeviceMemoryBase& buffer : buffers) {
      if (!Remember(buffer, caller, -1)) return;
    }
    if (keep != nullptr) {
      try {
        kept_.push_back(std::move(keep));
      } catch (...) {
        Fail(MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory while recording", caller, Label()));
        return;
      }
    }
    Check(RecordOp(operation));
  }
  // The capture's first error (the stream's checks, an operation it cannot
  // hold) sticks to the buffer, as a recording error does.
  void FailCapture(Status status) { Fail(std::move(status)); }
  Status NotCapturable(std::string_view caller) const {
    return MakeError(ErrorCode::kUnimplemented,
                     "{} on {}: cannot be captured into a command buffer (docs/api.md, \"Capture\"); enqueue it "
                     "before BeginCapture or after EndCapture",
                     caller, Label());
  }

  // Stream::ThenSubmit's half: the checks of a submission, then the backend.
  Status SubmitOn(StreamExecutor<B>* stream_executor, typename B::StreamHandle& stream) {
    if (!initialized_) return NotInitialized("ThenSubmit");
    if (!status_.ok()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "ThenSubmit on {}: the command buffer failed while recording: {}", Label(), status_.ToString());
    }
    if (stream_executor != parent_) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "ThenSubmit on {}: the command buffer was recorded for {}; submit it to a stream of that "
                       "executor",
                       stream_executor->DeviceLabel(), Label());
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckMemory("ThenSubmit"));
    if (!finalized_) STREAMEXECUTOR_RETURN_IF_ERROR(Finalize());
    STREAMEXECUTOR_RETURN_IF_ERROR(B::SubmitCommandBuffer(stream, handle_));
    for (Event<B>* event : recorded_events_) event->recorded_.store(true, std::memory_order_release);
    return Status();
  }

 private:
  // The copies, under the name the caller used (for messages).
  CommandBuffer& CopyD2D(std::string_view caller, DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src,
                         std::uint64_t size) {
    if (!Ready(caller)) return *this;
    if (device_dst == nullptr) return Fail(Null(caller, "destination"));
    return Then(caller, op::MemcpyD2D{*device_dst, device_src, size}, {device_dst, &device_src});
  }
  CommandBuffer& CopyD2H(std::string_view caller, void* host_dst, const DeviceMemoryBase& device_src,
                         std::uint64_t size) {
    if (!Ready(caller)) return *this;
    MarkHostWork(caller);
    return Then(caller, op::MemcpyD2H{host_dst, device_src, size}, {&device_src});
  }
  CommandBuffer& CopyH2D(std::string_view caller, DeviceMemoryBase* device_dst, const void* host_src,
                         std::uint64_t size) {
    if (!Ready(caller)) return *this;
    if (device_dst == nullptr) return Fail(Null(caller, "destination"));
    MarkHostWork(caller);
    return Then(caller, op::MemcpyH2D{*device_dst, host_src, size}, {device_dst});
  }
  // Why `child` may not be held by this buffer (ThenSubmit, ThenIf, ThenWhile).
  Status CheckChild(std::string_view caller, const CommandBuffer* child, std::string_view what) const {
    if (child == nullptr) return Null(caller, "command buffer");
    if (child == this) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: a command buffer cannot hold itself", caller, Label());
    }
    if (!child->initialized_) return child->NotInitialized(caller);
    if (child->parent_ != parent_) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} command buffer was recorded for {}", caller,
                       Label(), what, child->Label());
    }
    if (!child->status_.ok()) {
      return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the {} command buffer failed: {}", caller, Label(),
                       what, child->status_.ToString());
    }
    return Status();
  }
  // The child's memory, checked at this buffer's submissions as the next
  // operation's; what it holds that limits this buffer, too.
  bool RememberChild(std::string_view caller, const CommandBuffer& child) {
    try {
      used_.reserve(used_.size() + child.used_.size());
      kept_.insert(kept_.end(), child.kept_.begin(), child.kept_.end());
    } catch (...) {
      Fail(MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory", caller, Label()));
      return false;
    }
    const auto index = static_cast<std::uint32_t>(commands_);
    for (const UsedMemory& used : child.used_) used_.push_back(UsedMemory{used.view, caller, index, used.argument});
    if (host_work_.empty()) host_work_ = child.host_work_;
    conditional_ |= child.conditional_;
    return true;
  }
  CommandBuffer& Branch(std::string_view caller, op::ConditionalKind kind, const DeviceMemory<std::int32_t>& condition,
                        CommandBuffer* body) {
    static_assert(CommandBufferConditionalBackend<B>, "ThenIf/ThenWhile: this backend has no conditionals");
    if (!Ready(caller)) return *this;
    if (Status s = CheckChild(caller, body, "body"); !s.ok()) return Fail(std::move(s));
    if (Status s = parent_->CheckDeviceRange(caller, "condition", condition, 0); !s.ok()) return Fail(std::move(s));
    if (condition.size() < sizeof(std::int32_t)) {
      return Fail(MakeError(ErrorCode::kInvalidArgument, "{} on {}: the condition holds {} bytes; it needs one int32",
                            caller, Label(), condition.size()));
    }
    if (!body->host_work_.empty()) {
      return Fail(MakeError(ErrorCode::kInvalidArgument,
                            "{} on {}: the body holds host work ({}); a conditional body runs device work only: "
                            "launches, device-to-device copies, fills, canned operations, nested buffers and "
                            "conditionals",
                            caller, Label(), body->host_work_));
    }
    if (!Remember(condition, caller, -1) || !RememberChild(caller, *body)) return *this;
    conditional_ = true;
    return Check(RecordOp(op::Conditional<typename B::CommandBufferHandle>{kind, condition, &body->handle_}));
  }
  // Every DeviceMemory the recorded work touches, checked at each submission.
  struct UsedMemory {
    DeviceMemoryBase view;
    std::string_view caller;  // static strings: the recording call
    std::uint32_t command;    // index of the recorded operation
    int argument;             // launch argument index, or -1 for a copy or fill
  };
  template <typename Operation>
  CommandBuffer& Then(std::string_view caller, const Operation& operation,
                      std::initializer_list<const DeviceMemoryBase*> views) {
    if (Status s = op::Validate(*parent_, caller, operation); !s.ok()) [[unlikely]]
      return Fail(std::move(s));
    for (const DeviceMemoryBase* view : views) {
      if (!Remember(*view, caller, -1)) return *this;
    }
    return Check(RecordOp(operation), RecordedCommand{detail::KindOf<Operation>(), operation.bytes});
  }

  // Records through the backend, with the dependencies After gave, if any.
  template <typename Operation>
  Status RecordOp(const Operation& operation) {
    if (has_next_dependencies_) {
      has_next_dependencies_ = false;
      if constexpr (CommandBufferDependencyBackend<B>) {
        STREAMEXECUTOR_RETURN_IF_ERROR(
            B::SetNextDependencies(handle_, std::span<const std::size_t>(next_dependencies_)));
      }
    }
    return B::Record(handle_, operation);
  }

  // Work a conditional body may not hold: the first such recording call.
  void MarkHostWork(std::string_view caller) {
    if (host_work_.empty()) host_work_ = caller;
  }

  bool Remember(const DeviceMemoryBase& view, std::string_view caller, int argument) {
    try {
      used_.push_back(UsedMemory{view, caller, static_cast<std::uint32_t>(commands_), argument});
    } catch (...) {
      Fail(MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of host memory while recording", caller, Label()));
      return false;
    }
    return true;
  }

  // The event's native handle, or null (and the buffer failed) when it may
  // not be used here.
  typename B::EventHandle* CheckedEvent(std::string_view caller, Event<B>* event, detail::EventUse use) {
    if (!Ready(caller)) return nullptr;
    if (Status s = detail::CheckEventUse(caller, "command buffer", *parent_, event, use); !s.ok()) {
      Fail(std::move(s));
      return nullptr;
    }
    return &event->native_handle();
  }

  Status CheckMemory(std::string_view caller) const {
    for (const UsedMemory& used : used_) {
      if (!parent_->IsLiveView(used.view) && !parent_->IsEnabledPeerView(used.view)) [[unlikely]] {
        return NotLive(caller, used);
      }
    }
    return Status();
  }
  [[gnu::cold]] Status NotLive(std::string_view caller, const UsedMemory& used) const {
    const std::string what = used.argument < 0
                                 ? ::streamexecutor::detail::Format("operation {} ({})", used.command, used.caller)
                                 : ::streamexecutor::detail::Format("operation {} ({}, argument {})", used.command,
                                                                    used.caller, used.argument);
    const Status live = parent_->CheckDeviceRange(caller, "recorded", used.view, 0);
    return MakeError(live.ok() ? ErrorCode::kFailedPrecondition : live.code(),
                     "{} of a command buffer on {}: {} uses memory that is no longer valid: {}", caller, Label(), what,
                     live.message());
  }

  bool Ready(std::string_view caller) {
    if (!status_.ok()) return false;
    if (!initialized_) {
      Fail(NotInitialized(caller));
      return false;
    }
    if (finalized_) {
      Fail(MakeError(ErrorCode::kFailedPrecondition,
                     "{} on {}: the command buffer is finalized (Finalize or a submission); record into a new one",
                     caller, Label()));
      return false;
    }
    return true;
  }
  std::string_view Label() const {
    return parent_ != nullptr ? std::string_view(parent_->DeviceLabel()) : "<no executor>";
  }
  Status NotInitialized(std::string_view caller) const {
    return MakeError(ErrorCode::kFailedPrecondition, "{} on {}: the command buffer was not initialized (call Init())",
                     caller, Label());
  }
  Status Null(std::string_view caller, std::string_view what) const {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} pointer is null", caller, Label(), what);
  }
  CommandBuffer& Check(Status status, RecordedCommand recorded = {}) {
    if (!status.ok()) [[unlikely]]
      return Fail(std::move(status));
    try {
      recorded_.push_back(recorded);
    } catch (...) {
      return Fail(MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on {}: out of host memory",
                            Label()));
    }
    ++commands_;
    return *this;
  }
  CommandBuffer& Fail(Status status) {
    if (status_.ok()) status_ = std::move(status);
    return *this;
  }

  StreamExecutor<B>* parent_;
  typename B::CommandBufferHandle handle_{};
  bool initialized_ = false;
  bool finalized_ = false;
  std::size_t commands_ = 0;
  std::vector<UsedMemory> used_;
  std::vector<RecordedCommand> recorded_;       // one per operation: what an update must match
  std::vector<std::size_t> next_dependencies_;  // After's, for the next operation
  bool has_next_dependencies_ = false;
  std::vector<Event<B>*> recorded_events_;
  std::vector<std::shared_ptr<const void>> kept_;  // what captured canned work uses (FFT plans)
  std::string_view host_work_;  // the first host copy, callback or event (a static name): no conditional body
  bool conditional_ = false;    // holds ThenIf/ThenWhile: not cloned
  Status status_;
  Capturer capturer_;
};

template <Backend B>
CommandBuffer(StreamExecutor<B>*) -> CommandBuffer<B>;

}  // namespace streamexecutor
