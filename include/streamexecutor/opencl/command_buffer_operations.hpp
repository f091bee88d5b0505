// The OpenCL backend's command-buffer functions (CommandBufferBackend and its
// optional capabilities in core/backend.hpp): struct opencl derives from
// CommandBufferOperations<opencl>. cl_khr_command_buffer holds runs of
// launches, device copies and fills; the rest is replayed through the
// backend's Submit overloads (command_buffer.hpp: RecordedBuffer).
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/opencl/command_buffer.hpp"
#include "streamexecutor/opencl/runtime.hpp"

namespace streamexecutor::opencl_detail {

// `Opencl` is the backend (CRTP): the replayed operations submit through it.
template <typename Opencl>
struct CommandBufferOperations {
  using CommandBufferHandle = RecordedBuffer*;
  template <typename Executor>
  static Status CreateCommandBuffer(Executor& executor, CommandBufferHandle& buffer) {
    buffer = new (std::nothrow) RecordedBuffer(*executor.impl);
    if (buffer == nullptr)
      return MakeError(ErrorCode::kResourceExhausted, "CommandBuffer on {}: out of memory", executor.impl->label);
    return Status();
  }
  template <typename Executor>
  static void DestroyCommandBuffer(Executor&, CommandBufferHandle& buffer) {
    delete std::exchange(buffer, nullptr);
  }
  template <typename Operation>
  static Status Record(CommandBufferHandle& buffer, const Operation& operation) {
    return buffer->AddNew([&] { return MakeRecorded<Opencl>(operation); });
  }
  // An update replaces the recorded operation; a native run holding it is
  // recorded again at the next submission (no mutable-dispatch extension).
  template <typename Operation>
    requires std::is_same_v<Operation, op::MemcpyH2D> || std::is_same_v<Operation, op::MemcpyD2H> ||
             std::is_same_v<Operation, op::MemcpyD2D> || std::is_same_v<Operation, op::Memset8> ||
             std::is_same_v<Operation, op::Memset32> || op::IsLaunch<Operation>
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const Operation& operation) {
    return buffer->Replace(index, [&] { return MakeRecorded<Opencl>(operation); });
  }
  // A nested buffer's operations are copied and replayed (not recorded into
  // the parent's cl_command_buffer_khr runs).
  static Status Record(CommandBufferHandle& buffer, const op::Nested<CommandBufferHandle>& nested) {
    return buffer->AddNew([&] {
      auto op = std::make_unique<RecordedNested>();
      op->ops = (*nested.buffer)->CopyOps();
      return op;
    });
  }
  static Status Record(CommandBufferHandle& buffer, const op::Conditional<CommandBufferHandle>& branch) {
    return buffer->AddNew([&] {
      auto op =
          std::make_unique<RecordedConditional<Opencl>>(branch.condition, branch.kind == op::ConditionalKind::kWhile);
      op->ops = (*branch.body)->CopyOps();
      return op;
    });
  }
  template <typename Executor>
  static Status CloneCommandBuffer(Executor& executor, const CommandBufferHandle& source, CommandBufferHandle& clone) {
    STREAMEXECUTOR_RETURN_IF_ERROR(CreateCommandBuffer(executor, clone));
    try {
      clone->TakeOps(source->CopyOps());
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

}  // namespace streamexecutor::opencl_detail
