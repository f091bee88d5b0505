// The Vulkan backend's command buffer. Every recorded operation is kept as a
// value that can be replayed through the backend's Submit overloads. At
// Finalize, each run of operations that are device commands alone (launches,
// device-to-device copies, fills of whole words) becomes one reusable
// VkCommandBuffer, with a memory barrier between commands, submitted with one
// vkQueueSubmit per submission. Host copies (they stage through host memory at
// each run), host callbacks, event records and waits, and conditionals are
// replayed between those runs. An update re-records its run at the next
// submission, once the run's previous submission is done.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/vulkan/launch.hpp"
#include "streamexecutor/vulkan/record.hpp"
#include "streamexecutor/vulkan/runtime.hpp"

namespace streamexecutor::vulkan_detail {

struct RecordedOp {
  virtual ~RecordedOp() = default;
  virtual Status Replay(StreamState*& stream) = 0;
  // Records the operation into `commands` (only where native()).
  virtual bool native() const { return false; }
  virtual Status Native(Executor&, VkCommandBuffer) { return Status(); }
  // A copy with the same values (CommandBuffer::Clone, nesting).
  virtual std::unique_ptr<RecordedOp> Clone() const = 0;
};

template <typename Vulkan, typename Operation>
struct ReplayedOp final : RecordedOp {
  explicit ReplayedOp(const Operation& o) : operation(o) {}
  Status Replay(StreamState*& stream) override { return Vulkan::Submit(stream, operation); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<ReplayedOp>(operation); }
  Operation operation;
};

template <typename Vulkan, typename F>
struct ReplayedCall final : RecordedOp {
  template <typename G>
  explicit ReplayedCall(G&& g) : callable(std::forward<G>(g)) {}
  // Submit copies the callable into the stream's job: the buffer may go.
  Status Replay(StreamState*& stream) override { return Vulkan::Submit(stream, op::HostCall<F&>{callable}); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<ReplayedCall>(callable); }
  F callable;
};

template <typename Vulkan>
struct RecordedCopy final : RecordedOp {
  explicit RecordedCopy(const op::MemcpyD2D& o) : operation(o) {}
  Status Replay(StreamState*& stream) override { return Vulkan::Submit(stream, operation); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<RecordedCopy>(operation); }
  bool native() const override { return operation.bytes > 0 && operation.dst.opaque() != operation.src.opaque(); }
  Status Native(Executor& e, VkCommandBuffer commands) override {
    const VkBufferCopy region{BufferOffset(operation.src), BufferOffset(operation.dst), operation.bytes};
    e.api.vkCmdCopyBuffer(commands, static_cast<const Buffer*>(operation.src.opaque())->buffer,
                          static_cast<const Buffer*>(operation.dst.opaque())->buffer, 1, &region);
    return Status();
  }
  op::MemcpyD2D operation;
};

template <typename Vulkan, typename Fill>
struct RecordedFill final : RecordedOp {
  // vkCmdFillBuffer writes whole aligned words; other fills stage their ends.
  // Decided here: the memory may be freed before an update replaces this.
  explicit RecordedFill(const Fill& o) : operation(o), whole_words(BufferOffset(o.dst) % 4 == 0 && o.bytes % 4 == 0) {}
  Status Replay(StreamState*& stream) override { return Vulkan::Submit(stream, operation); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<RecordedFill>(operation); }
  bool native() const override { return whole_words; }
  Status Native(Executor& e, VkCommandBuffer commands) override {
    if (operation.bytes == 0) return Status();
    std::uint32_t pattern = 0;
    if constexpr (std::is_same_v<Fill, op::Memset8>)
      pattern = operation.value * 0x01010101u;
    else
      pattern = operation.pattern;
    e.api.vkCmdFillBuffer(commands, static_cast<const Buffer*>(operation.dst.opaque())->buffer,
                          BufferOffset(operation.dst), operation.bytes, pattern);
    return Status();
  }
  Fill operation;
  bool whole_words;
};

// The launch's values, owned. The kernel must outlive the buffer (as the
// TypedKernel of any queued work must).
template <typename Vulkan, typename... Params>
struct RecordedLaunch final : RecordedOp {
  using Handle = typename Vulkan::KernelHandle;
  explicit RecordedLaunch(const op::Launch<Handle, Params...>& o)
      : kernel(o.kernel), threads(o.threads), blocks(o.blocks), args(o.args), name(o.kernel_name) {}
  Status Replay(StreamState*& stream) override {
    return Vulkan::Submit(stream, op::Launch<Handle, Params...>{kernel, threads, blocks, args, name});
  }
  std::unique_ptr<RecordedOp> Clone() const override {
    return std::make_unique<RecordedLaunch>(op::Launch<Handle, Params...>{kernel, threads, blocks, args, name});
  }
  bool native() const override { return true; }
  Status Native(Executor& e, VkCommandBuffer commands) override {
    LoadedKernel& loaded = *kernel.impl;
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckLocalSize(loaded, threads));
    LaunchData data;
    std::memset(data.push.data(), 0, loaded.layout.push_constant_bytes);
    data.key.local = {static_cast<std::uint32_t>(threads.x), static_cast<std::uint32_t>(threads.y),
                      static_cast<std::uint32_t>(threads.z)};
    STREAMEXECUTOR_RETURN_IF_ERROR(PackArguments<Params...>(loaded, args, data, std::index_sequence_for<Params...>{}));
    StatusOr<VkPipeline> pipeline = GetPipeline(loaded, data.key);
    if (!pipeline.ok()) return pipeline.status();
    RecordDispatch(e, commands, loaded, pipeline.value(), data, blocks);
    return Status();
  }
  Handle kernel;
  ThreadDim threads;
  BlockDim blocks;
  PackedArgs<Params...> args;
  const std::string* name;
};

// A canned library's own commands (op::LibraryCall: `call(VkCommandBuffer)`,
// VkFFT's transform): written into the run's command buffer as a launch is,
// or onto the stream when replayed.
template <typename F>
struct RecordedLibraryCall final : RecordedOp {
  explicit RecordedLibraryCall(const F& f) : call(f) {}
  Status Replay(StreamState*& stream) override {
    StatusOr<std::uint64_t> value = RecordOnStream(*stream, call);
    return value.ok() ? Status() : value.status();
  }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<RecordedLibraryCall>(call); }
  bool native() const override { return true; }
  Status Native(Executor&, VkCommandBuffer commands) override { return call(commands); }
  F call;
};

template <typename Vulkan, typename Operation>
std::unique_ptr<RecordedOp> MakeRecorded(const Operation& operation) {
  return std::make_unique<ReplayedOp<Vulkan, Operation>>(operation);
}
template <typename Vulkan>
std::unique_ptr<RecordedOp> MakeRecorded(const op::MemcpyD2D& operation) {
  return std::make_unique<RecordedCopy<Vulkan>>(operation);
}
template <typename Vulkan>
std::unique_ptr<RecordedOp> MakeRecorded(const op::Memset8& operation) {
  return std::make_unique<RecordedFill<Vulkan, op::Memset8>>(operation);
}
template <typename Vulkan>
std::unique_ptr<RecordedOp> MakeRecorded(const op::Memset32& operation) {
  return std::make_unique<RecordedFill<Vulkan, op::Memset32>>(operation);
}
template <typename Vulkan, typename F>
std::unique_ptr<RecordedOp> MakeRecorded(const op::HostCall<F>& call) {
  return std::make_unique<ReplayedCall<Vulkan, std::decay_t<F>>>(static_cast<F&&>(call.callable));
}
template <typename Vulkan, typename F>
std::unique_ptr<RecordedOp> MakeRecorded(const op::LibraryCall<F>& call) {
  return std::make_unique<RecordedLibraryCall<std::decay_t<F>>>(call.call);
}
template <typename Vulkan, typename Handle, typename... Params>
std::unique_ptr<RecordedOp> MakeRecorded(const op::Launch<Handle, Params...>& launch) {
  return std::make_unique<RecordedLaunch<Vulkan, Params...>>(launch);
}

using RecordedOps = std::vector<std::unique_ptr<RecordedOp>>;

inline RecordedOps CopyOps(const RecordedOps& ops) {
  RecordedOps copies;
  copies.reserve(ops.size());
  for (const std::unique_ptr<RecordedOp>& op : ops) copies.push_back(op->Clone());
  return copies;
}

// Another buffer's operations, copied when nested, replayed in order.
struct RecordedNested final : RecordedOp {
  Status Replay(StreamState*& stream) override {
    for (const std::unique_ptr<RecordedOp>& op : ops) STREAMEXECUTOR_RETURN_IF_ERROR(op->Replay(stream));
    return Status();
  }
  std::unique_ptr<RecordedOp> Clone() const override {
    auto clone = std::make_unique<RecordedNested>();
    clone->ops = CopyOps(ops);
    return clone;
  }
  RecordedOps ops;
};

// ThenIf/ThenWhile: a replay loop. Core Vulkan cannot branch on a device value
// between commands, so each check reads the value back and waits for the
// stream: the submitting thread blocks until the loop ends.
template <typename Vulkan>
struct RecordedConditional final : RecordedOp {
  RecordedConditional(const DeviceMemoryBase& c, bool l) : condition(c), loop(l) {}
  Status Replay(StreamState*& stream) override {
    if (stream->OnWorker()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "ThenSubmit on {}: a command buffer holding ThenIf or ThenWhile was submitted from a host "
                       "callback of the same stream; its replay would wait for that callback to return",
                       stream->executor->label);
    }
    do {
      std::int32_t value = 0;
      STREAMEXECUTOR_RETURN_IF_ERROR(Vulkan::Submit(stream, op::MemcpyD2H{&value, condition, sizeof value}));
      STREAMEXECUTOR_RETURN_IF_ERROR(Vulkan::SynchronizeStream(stream));
      if (value == 0) return Status();
      for (const std::unique_ptr<RecordedOp>& op : ops) STREAMEXECUTOR_RETURN_IF_ERROR(op->Replay(stream));
    } while (loop);
    return Status();
  }
  std::unique_ptr<RecordedOp> Clone() const override {
    auto clone = std::make_unique<RecordedConditional>(condition, loop);
    clone->ops = CopyOps(ops);
    return clone;
  }
  DeviceMemoryBase condition;
  bool loop;
  RecordedOps ops;
};

// A run of native operations as one reusable VkCommandBuffer (null: replayed).
struct Run {
  std::size_t begin = 0, end = 0;  // ops[begin, end)
  VkCommandBuffer commands = VK_NULL_HANDLE;
  bool stale = false;        // an operation was updated: record again
  Timeline* last = nullptr;  // the latest submission's timeline and value
  std::uint64_t last_value = 0;
};

class RecordedBuffer {
 public:
  explicit RecordedBuffer(Executor& executor) : executor_(&executor) {}
  RecordedBuffer(const RecordedBuffer&) = delete;
  RecordedBuffer& operator=(const RecordedBuffer&) = delete;
  // The latest submission of each run must be done before its commands go.
  ~RecordedBuffer() {
    WaitForRuns();
    if (pool_ != VK_NULL_HANDLE) executor_->api.vkDestroyCommandPool(executor_->device, pool_, nullptr);
  }

  template <typename Make>
  Status AddNew(Make&& make) {
    try {
      ops_.push_back(make());
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on {}: {}", executor_->label,
                       e.what());
    }
    return Status();
  }
  template <typename Make>
  Status Replace(std::size_t index, Make&& make) {
    if (index >= ops_.size()) {
      return MakeError(ErrorCode::kInternal, "updating a command buffer on {}: no operation {}", executor_->label,
                       index);
    }
    std::unique_ptr<RecordedOp> replacement;
    try {
      replacement = make();
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kResourceExhausted, "updating a command buffer on {}: {}", executor_->label,
                       e.what());
    }
    std::lock_guard<std::mutex> lock(submit_mutex_);
    for (Run& run : runs_) {
      if (index >= run.begin && index < run.end && run.commands != VK_NULL_HANDLE) run.stale = true;
    }
    // A native run no longer matches what it recorded: its shape may differ.
    if (ops_[index]->native() != replacement->native()) finalized_shape_changed_ = true;
    ops_[index] = std::move(replacement);
    return Status();
  }
  const RecordedOps& ops() const { return ops_; }
  void TakeOps(RecordedOps ops) { ops_ = std::move(ops); }
  Executor& executor() const { return *executor_; }
  int native_runs() const {
    int count = 0;
    for (const Run& run : runs_) count += run.commands != VK_NULL_HANDLE;
    return count;
  }

  Status Finalize() {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    return SplitRuns();
  }

  Status SubmitTo(StreamState*& stream) {
    std::lock_guard<std::mutex> lock(submit_mutex_);
    if (!split_ || finalized_shape_changed_) STREAMEXECUTOR_RETURN_IF_ERROR(SplitRuns());
    for (Run& run : runs_) {
      if (run.stale) STREAMEXECUTOR_RETURN_IF_ERROR(RecordAgain(run));
      if (run.commands == VK_NULL_HANDLE) {
        for (std::size_t i = run.begin; i < run.end; ++i) STREAMEXECUTOR_RETURN_IF_ERROR(ops_[i]->Replay(stream));
        continue;
      }
      std::uint64_t value = 0;
      STREAMEXECUTOR_RETURN_IF_ERROR(SubmitCommands(*stream, run.commands, value));
      if (value == 0) continue;  // skipped: the stream failed
      stream->timeline->Reference();
      if (run.last != nullptr) run.last->Release();
      run.last = stream->timeline;
      run.last_value = value;
    }
    return Status();
  }

 private:
  void WaitForRuns() {
    for (Run& run : runs_) {
      if (run.last != nullptr) {
        run.last->Wait(run.last_value, "destroying a command buffer").IgnoreError();
        run.last->Release();
        run.last = nullptr;
      }
    }
  }
  void FreeRuns() {
    WaitForRuns();
    for (Run& run : runs_) {
      if (run.commands != VK_NULL_HANDLE)
        executor_->api.vkFreeCommandBuffers(executor_->device, pool_, 1, &run.commands);
    }
    runs_.clear();
  }
  Status SplitRuns() {
    FreeRuns();
    finalized_shape_changed_ = false;
    split_ = true;
    std::size_t begin = 0;
    while (begin < ops_.size()) {
      std::size_t end = begin + 1;
      const bool native = ops_[begin]->native();
      while (end < ops_.size() && native && ops_[end]->native()) ++end;
      runs_.push_back(Run{begin, end});
      if (native) STREAMEXECUTOR_RETURN_IF_ERROR(Record(runs_.back()));
      begin = end;
    }
    return Status();
  }
  Status RecordAgain(Run& run) {
    if (run.last != nullptr) {
      STREAMEXECUTOR_RETURN_IF_ERROR(run.last->Wait(run.last_value, "re-recording an updated command buffer"));
      run.last->Release();
      run.last = nullptr;
    }
    run.stale = false;
    if (VkResult r = executor_->api.vkResetCommandBuffer(run.commands, 0); r != VK_SUCCESS)
      return executor_->Fail("vkResetCommandBuffer", r, "re-recording an updated command buffer");
    return Fill(run);
  }
  Status Record(Run& run) {
    Executor& e = *executor_;
    if (pool_ == VK_NULL_HANDLE) {
      VkCommandPoolCreateInfo pool{};
      pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
      pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
      pool.queueFamilyIndex = e.queue_family;
      if (VkResult r = e.api.vkCreateCommandPool(e.device, &pool, nullptr, &pool_); r != VK_SUCCESS)
        return e.Fail("vkCreateCommandPool", r, "for a command buffer");
    }
    VkCommandBufferAllocateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    info.commandPool = pool_;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    if (VkResult r = e.api.vkAllocateCommandBuffers(e.device, &info, &run.commands); r != VK_SUCCESS) {
      run.commands = VK_NULL_HANDLE;
      return e.Fail("vkAllocateCommandBuffers", r, "for a command buffer");
    }
    return Fill(run);
  }
  // Each command waits for the one before: the buffer keeps stream order.
  Status Fill(Run& run) {
    Executor& e = *executor_;
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    if (VkResult r = e.api.vkBeginCommandBuffer(run.commands, &begin); r != VK_SUCCESS)
      return e.Fail("vkBeginCommandBuffer", r, "recording a command buffer");
    for (std::size_t i = run.begin; i < run.end; ++i) {
      if (i > run.begin) Barrier(e, run.commands);
      if (Status s = ops_[i]->Native(e, run.commands); !s.ok()) {
        e.api.vkEndCommandBuffer(run.commands);
        return MakeError(s.code(), "Finalize of a command buffer on {}, operation {}: {}", e.label, i, s.message());
      }
    }
    if (VkResult r = e.api.vkEndCommandBuffer(run.commands); r != VK_SUCCESS)
      return e.Fail("vkEndCommandBuffer", r, "recording a command buffer");
    return Status();
  }
  static void Barrier(Executor& e, VkCommandBuffer commands) {
    VkMemoryBarrier barrier{};
    barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    e.api.vkCmdPipelineBarrier(commands, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  }

  Executor* executor_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  RecordedOps ops_;
  std::vector<Run> runs_;
  std::mutex submit_mutex_;
  bool finalized_shape_changed_ = false;
  bool split_ = false;
};

// The command-buffer functions of se::vulkan (CommandBufferBackend and its
// optional capabilities, core/backend.hpp); `Vulkan` is the backend (CRTP).
template <typename Vulkan>
struct CommandBufferOperations {
  using CommandBufferHandle = RecordedBuffer*;
  template <typename ExecutorState>
  static Status CreateCommandBuffer(ExecutorState& executor, CommandBufferHandle& buffer) {
    buffer = new (std::nothrow) RecordedBuffer(*executor.impl);
    if (buffer == nullptr)
      return MakeError(ErrorCode::kResourceExhausted, "CommandBuffer on {}: out of memory", executor.impl->label);
    return Status();
  }
  template <typename ExecutorState>
  static void DestroyCommandBuffer(ExecutorState&, CommandBufferHandle& buffer) {
    delete std::exchange(buffer, nullptr);
  }
  template <typename Operation>
  static Status Record(CommandBufferHandle& buffer, const Operation& operation) {
    return buffer->AddNew([&] { return MakeRecorded<Vulkan>(operation); });
  }
  template <typename Operation>
    requires std::is_same_v<Operation, op::MemcpyH2D> || std::is_same_v<Operation, op::MemcpyD2H> ||
             std::is_same_v<Operation, op::MemcpyD2D> || std::is_same_v<Operation, op::Memset8> ||
             std::is_same_v<Operation, op::Memset32> || op::IsLaunch<Operation>
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const Operation& operation) {
    return buffer->Replace(index, [&] { return MakeRecorded<Vulkan>(operation); });
  }
  static Status Record(CommandBufferHandle& buffer, const op::Nested<CommandBufferHandle>& nested) {
    return buffer->AddNew([&] {
      auto op = std::make_unique<RecordedNested>();
      op->ops = CopyOps((*nested.buffer)->ops());
      return op;
    });
  }
  static Status Record(CommandBufferHandle& buffer, const op::Conditional<CommandBufferHandle>& branch) {
    return buffer->AddNew([&] {
      auto op =
          std::make_unique<RecordedConditional<Vulkan>>(branch.condition, branch.kind == op::ConditionalKind::kWhile);
      op->ops = CopyOps((*branch.body)->ops());
      return op;
    });
  }
  template <typename ExecutorState>
  static Status CloneCommandBuffer(ExecutorState& executor, const CommandBufferHandle& source,
                                   CommandBufferHandle& clone) {
    STREAMEXECUTOR_RETURN_IF_ERROR(CreateCommandBuffer(executor, clone));
    try {
      clone->TakeOps(CopyOps(source->ops()));
    } catch (const std::exception& e) {
      DestroyCommandBuffer(executor, clone);
      return MakeError(ErrorCode::kResourceExhausted, "cloning a command buffer on {}: {}", executor.impl->label,
                       e.what());
    }
    return Status();
  }
  static Status FinalizeCommandBuffer(CommandBufferHandle& buffer) { return buffer->Finalize(); }
  static Status SubmitCommandBuffer(StreamState*& stream, CommandBufferHandle& buffer) {
    return buffer->SubmitTo(stream);
  }
};

}  // namespace streamexecutor::vulkan_detail
