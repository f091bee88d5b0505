// The CUDA backend's command-buffer functions (CommandBufferBackend and its
// optional capabilities in core/backend.hpp): struct cuda derives from
// CommandBufferOperations. Each turns a recorded operation into a node of the
// buffer's CUDA graph (command_buffer.hpp: RecordedGraph); the templates
// take the backend's executor, event and kernel types, declared inside it.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/command_buffer.hpp"
#include "streamexecutor/cuda/kernel_params.hpp"
#include "streamexecutor/cuda/state.hpp"

namespace streamexecutor::cuda_detail {

struct CommandBufferOperations {
  using CommandBufferHandle = RecordedGraph*;
  template <typename Executor>
  static Status CreateCommandBuffer(Executor& executor, CommandBufferHandle& buffer) {
    buffer = new (std::nothrow) RecordedGraph(*executor.api, executor.context, executor.ordinal, executor.modules);
    if (buffer == nullptr)
      return MakeError(ErrorCode::kResourceExhausted, "CommandBuffer on cuda:{}: out of memory", executor.ordinal);
    if (Status s = buffer->Create(); !s.ok()) {
      std::exchange(buffer, nullptr)->Release();
      return s;
    }
    return Status();
  }
  template <typename Executor>
  static void DestroyCommandBuffer(Executor&, CommandBufferHandle& buffer) {
    if (buffer) std::exchange(buffer, nullptr)->Release();
  }
  static Status Record(CommandBufferHandle& buffer, const op::MemcpyH2D& copy) { return buffer->AddCopy(Copy(copy)); }
  static Status Record(CommandBufferHandle& buffer, const op::MemcpyD2H& copy) { return buffer->AddCopy(Copy(copy)); }
  static Status Record(CommandBufferHandle& buffer, const op::MemcpyD2D& copy) { return buffer->AddCopy(Copy(copy)); }
  static Status Record(CommandBufferHandle& buffer, const op::Memset8& fill) { return buffer->AddFill(Fill(fill)); }
  static Status Record(CommandBufferHandle& buffer, const op::Memset32& fill) { return buffer->AddFill(Fill(fill)); }
  template <typename Callback>
  static Status Record(CommandBufferHandle& buffer, const op::HostCall<Callback>& call) {
    return buffer->AddHostCall(static_cast<Callback&&>(call.callable));
  }
  template <typename Event>
  static Status Record(CommandBufferHandle& buffer, const op::RecordEvent<Event>& record) {
    return buffer->AddEvent(true, record.event->event);
  }
  template <typename Event>
  static Status Record(CommandBufferHandle& buffer, const op::WaitEvent<Event>& wait) {
    return buffer->AddEvent(false, wait.event->event);
  }
  template <typename Kernel, typename... Params>
  static Status Record(CommandBufferHandle& buffer, const op::Launch<Kernel, Params...>& launch) {
    return WithNodeParams(launch, [&](const CUDA_KERNEL_NODE_PARAMS& params) { return buffer->AddKernel(params); });
  }
  // Updates (CommandBufferUpdateBackend): cuGraph*NodeSetParams and
  // cuGraphExec*NodeSetParams on the operation's node.
  template <typename CopyOperation>
    requires std::is_same_v<CopyOperation, op::MemcpyH2D> || std::is_same_v<CopyOperation, op::MemcpyD2H> ||
             std::is_same_v<CopyOperation, op::MemcpyD2D>
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const CopyOperation& copy) {
    if (copy.bytes == 0) return Status();  // an empty node, and it stays empty (the core checks)
    return buffer->SetCopy(index, Copy(copy));
  }
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::Memset8& fill) {
    if (fill.bytes == 0) return Status();
    return buffer->SetFill(index, Fill(fill));
  }
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::Memset32& fill) {
    if (fill.bytes < 4) return Status();
    return buffer->SetFill(index, Fill(fill));
  }
  static Status SetNextDependencies(CommandBufferHandle& buffer, std::span<const std::size_t> operations) {
    return buffer->SetNextDependencies(operations);
  }
  template <typename Kernel, typename... Params>
  static Status Update(CommandBufferHandle& buffer, std::size_t index, const op::Launch<Kernel, Params...>& launch) {
    return WithNodeParams(launch,
                          [&](const CUDA_KERNEL_NODE_PARAMS& params) { return buffer->SetKernel(index, params); });
  }
  static Status Record(CommandBufferHandle& buffer, const op::Nested<CommandBufferHandle>& nested) {
    return buffer->AddNested(**nested.buffer);
  }
  // Captured: the library's work on a stream in capture mode, as a child graph.
  template <typename F>
  static Status Record(CommandBufferHandle& buffer, const op::LibraryCall<F>& call) {
    return buffer->AddCaptured(call.caller, call.call);
  }
  static Status Record(CommandBufferHandle& buffer, const op::Conditional<CommandBufferHandle>& branch) {
    return buffer->AddConditional(**branch.body, DeviceAddress(branch.condition),
                                  branch.kind == op::ConditionalKind::kWhile);
  }
  template <typename Executor>
  static Status CloneCommandBuffer(Executor& executor, const CommandBufferHandle& source, CommandBufferHandle& clone) {
    clone = new (std::nothrow) RecordedGraph(*executor.api, executor.context, executor.ordinal, executor.modules);
    if (clone == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "cloning a command buffer on cuda:{}: out of memory",
                       executor.ordinal);
    }
    if (Status s = source->CloneInto(*clone); !s.ok()) {
      std::exchange(clone, nullptr)->Release();
      return s;
    }
    return Status();
  }
  static Status FinalizeCommandBuffer(CommandBufferHandle& buffer) { return buffer->Finalize(); }
  static Status SubmitCommandBuffer(StreamState*& stream, CommandBufferHandle& buffer) {
    return buffer->SubmitTo(*stream);
  }
  // A recorded operation as the driver's node parameters.
  static CUDA_MEMCPY3D Copy(const op::MemcpyH2D& copy) {
    return RecordedGraph::CopyParams(CU_MEMORYTYPE_HOST, 0, copy.src, CU_MEMORYTYPE_DEVICE, DeviceAddress(copy.dst),
                                     nullptr, copy.bytes);
  }
  static CUDA_MEMCPY3D Copy(const op::MemcpyD2H& copy) {
    return RecordedGraph::CopyParams(CU_MEMORYTYPE_DEVICE, DeviceAddress(copy.src), nullptr, CU_MEMORYTYPE_HOST, 0,
                                     copy.dst, copy.bytes);
  }
  static CUDA_MEMCPY3D Copy(const op::MemcpyD2D& copy) {
    return RecordedGraph::CopyParams(CU_MEMORYTYPE_DEVICE, DeviceAddress(copy.src), nullptr, CU_MEMORYTYPE_DEVICE,
                                     DeviceAddress(copy.dst), nullptr, copy.bytes);
  }
  static CUDA_MEMSET_NODE_PARAMS Fill(const op::Memset8& fill) {
    return RecordedGraph::FillParams(DeviceAddress(fill.dst), fill.value & 0xff, 1, fill.bytes);
  }
  static CUDA_MEMSET_NODE_PARAMS Fill(const op::Memset32& fill) {
    return RecordedGraph::FillParams(DeviceAddress(fill.dst), fill.pattern, 4, fill.bytes / 4);
  }
  // The kernel node's parameters; the driver copies the argument values.
  template <typename Kernel, typename... Params, typename Use>
  static Status WithNodeParams(const op::Launch<Kernel, Params...>& launch, Use&& use) {
    return WithKernelParams<Params...>(launch.args, [&](void** params, std::uint64_t shared_bytes) {
      CUDA_KERNEL_NODE_PARAMS node_params{};
      node_params.func = launch.kernel.function;
      node_params.gridDimX = static_cast<unsigned>(launch.blocks.x);
      node_params.gridDimY = static_cast<unsigned>(launch.blocks.y);
      node_params.gridDimZ = static_cast<unsigned>(launch.blocks.z);
      node_params.blockDimX = static_cast<unsigned>(launch.threads.x);
      node_params.blockDimY = static_cast<unsigned>(launch.threads.y);
      node_params.blockDimZ = static_cast<unsigned>(launch.threads.z);
      node_params.sharedMemBytes = static_cast<unsigned>(shared_bytes);
      node_params.kernelParams = params;
      return Status(use(static_cast<const CUDA_KERNEL_NODE_PARAMS&>(node_params)));
    });
  }
};

}  // namespace streamexecutor::cuda_detail
