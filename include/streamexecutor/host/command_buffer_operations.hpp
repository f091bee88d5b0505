// The host backend's command-buffer functions (CommandBufferBackend and its
// optional capabilities in core/backend.hpp): HostBackend derives from
// CommandBufferOperations<HostBackend>. A command buffer is the ring commands
// a stream would get, packed once (command_buffer.hpp: RecordedCommands) and
// copied into a stream's ring at each submission.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/host/command_buffer.hpp"
#include "streamexecutor/host/command_queue.hpp"
#include "streamexecutor/host/ipc_events.hpp"

namespace streamexecutor::host_detail {

// `Host` is the backend (CRTP), whose private packing functions these use.
template <typename Host>
struct CommandBufferOperations {
  using CommandBufferHandle = RecordedCommands*;
  template <typename Executor>
  static Status CreateCommandBuffer(Executor& executor, CommandBufferHandle& buffer) {
    buffer = new (std::nothrow) RecordedCommands(executor.label);
    if (buffer == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "creating a command buffer on {}: out of memory", executor.label);
    }
    return Status();
  }
  // Submitted callbacks hold references: the commands go when the last has run.
  template <typename Executor>
  static void DestroyCommandBuffer(Executor&, CommandBufferHandle& buffer) {
    if (buffer) std::exchange(buffer, nullptr)->Release();
  }
  static Status Record(CommandBufferHandle& buffer, const op::MemcpyH2D& copy) {
    return buffer->Add(Host::CopyCommand(Host::Address(copy.dst), copy.src, copy.bytes));
  }
  static Status Record(CommandBufferHandle& buffer, const op::MemcpyD2H& copy) {
    return buffer->Add(Host::CopyCommand(copy.dst, Host::Address(copy.src), copy.bytes));
  }
  static Status Record(CommandBufferHandle& buffer, const op::MemcpyD2D& copy) {
    return buffer->Add(Host::CopyCommand(Host::Address(copy.dst), Host::Address(copy.src), copy.bytes));
  }
  static Status Record(CommandBufferHandle& buffer, const op::Memset8& fill) {
    return buffer->Add(Host::FillCommand(Host::Address(fill.dst), fill.value, fill.bytes, true));
  }
  static Status Record(CommandBufferHandle& buffer, const op::Memset32& fill) {
    return buffer->Add(Host::FillCommand(Host::Address(fill.dst), fill.pattern, fill.bytes, false));
  }
  template <typename Callback>
  static Status Record(CommandBufferHandle& buffer, const op::HostCall<Callback>& call) {
    return buffer->AddCallback(static_cast<Callback&&>(call.callable));
  }
  static Status Record(CommandBufferHandle& buffer, const op::RecordEvent<HostEvent*>& record) {
    if ((*record.event)->shared() != nullptr) return host_detail::NotShared("recording it in a command buffer");
    return buffer->AddEvent(true, record.event);
  }
  static Status Record(CommandBufferHandle& buffer, const op::WaitEvent<HostEvent*>& wait) {
    if ((*wait.event)->shared() != nullptr) return host_detail::NotShared("a command buffer's wait on it");
    return buffer->AddEvent(false, wait.event);
  }
  template <typename Kernel, typename... Params>
  static Status Record(CommandBufferHandle& buffer, const op::Launch<Kernel, Params...>& launch) {
    Command command{};
    STREAMEXECUTOR_RETURN_IF_ERROR(Host::PackLaunch(command, launch, buffer->label()));
    return buffer->Add(command);
  }
  // An update rewrites the packed command; submissions copied it already.
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::MemcpyH2D& copy) {
    return buffer->Replace(index, Host::CopyCommand(Host::Address(copy.dst), copy.src, copy.bytes));
  }
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::MemcpyD2H& copy) {
    return buffer->Replace(index, Host::CopyCommand(copy.dst, Host::Address(copy.src), copy.bytes));
  }
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::MemcpyD2D& copy) {
    return buffer->Replace(index, Host::CopyCommand(Host::Address(copy.dst), Host::Address(copy.src), copy.bytes));
  }
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::Memset8& fill) {
    return buffer->Replace(index, Host::FillCommand(Host::Address(fill.dst), fill.value, fill.bytes, true));
  }
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::Memset32& fill) {
    return buffer->Replace(index, Host::FillCommand(Host::Address(fill.dst), fill.pattern, fill.bytes, false));
  }
  template <typename Kernel, typename... Params>
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::Launch<Kernel, Params...>& launch) {
    Command command{};
    STREAMEXECUTOR_RETURN_IF_ERROR(Host::PackLaunch(command, launch, buffer->label()));
    return buffer->Replace(index, command);
  }
  static Status Record(CommandBufferHandle& buffer, const op::Nested<CommandBufferHandle>& nested) {
    return buffer->AddNested(*nested.buffer);
  }
  static Status Record(CommandBufferHandle& buffer, const op::Conditional<CommandBufferHandle>& branch) {
    return buffer->AddConditional(*branch.body, static_cast<const std::int32_t*>(Host::Address(branch.condition)),
                                  branch.kind == op::ConditionalKind::kWhile);
  }
  template <typename Executor>
  static Status CloneCommandBuffer(Executor& executor, const CommandBufferHandle& source, CommandBufferHandle& clone) {
    clone = source->Clone();
    if (clone == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "cloning a command buffer on {}: out of memory", executor.label);
    }
    return Status();
  }
  static Status FinalizeCommandBuffer(CommandBufferHandle&) { return Status(); }  // the array is the native form
  static Status SubmitCommandBuffer(HostStream*& stream, CommandBufferHandle& buffer) {
    return buffer->SubmitTo(stream);
  }
};

}  // namespace streamexecutor::host_detail
