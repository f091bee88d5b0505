// Device memory shared between processes on CUDA (core/ipc.hpp): the
// payload of a handle is the driver's CUipcMemHandle. se::cuda derives from
// IpcOperations.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <cstring>
#include <span>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/ipc.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/kernel_params.hpp"

namespace streamexecutor::cuda_detail {

static_assert(sizeof(CUipcMemHandle) == streamexecutor::detail::kIpcPayloadBytes);

struct IpcOperations {
  template <typename Executor>
  static Status ExportMemory(Executor& executor, const DeviceMemoryBase& allocation,
                             std::span<std::byte, streamexecutor::detail::kIpcPayloadBytes> payload) {
    const ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    CUipcMemHandle handle{};
    if (const CUresult r = executor.api->cuIpcGetMemHandle(&handle, DeviceAddress(allocation)); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuIpcGetMemHandle", "(cuda:{})", executor.ordinal);
    }
    std::memcpy(payload.data(), &handle, sizeof handle);
    return Status();
  }
  template <typename Executor>
  static StatusOr<DeviceMemoryBase> ImportMemory(
      Executor& executor, std::span<const std::byte, streamexecutor::detail::kIpcPayloadBytes> payload,
      std::uint64_t bytes) {
    const ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    CUipcMemHandle handle;
    std::memcpy(&handle, payload.data(), sizeof handle);
    CUdeviceptr mapped = 0;
    // Lazily enabled peer access: the memory may be another device's.
    if (const CUresult r = executor.api->cuIpcOpenMemHandle(&mapped, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuIpcOpenMemHandle", "(cuda:{})", executor.ordinal);
    }
    return DeviceMemoryBase(reinterpret_cast<void*>(mapped), bytes);
  }
  template <typename Executor>
  static Status CloseImportedMemory(Executor& executor, const DeviceMemoryBase& allocation) {
    const ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    if (const CUresult r = executor.api->cuIpcCloseMemHandle(DeviceAddress(allocation)); r != CUDA_SUCCESS) {
      return executor.api->Error(r, "cuIpcCloseMemHandle", "(cuda:{})", executor.ordinal);
    }
    return Status();
  }

  // Events: CUDA shares only events made with CU_EVENT_INTERPROCESS, which
  // must also be made without timing.
  template <typename Executor, typename Event>
  static Status CreateInterprocessEvent(Executor& executor, Event& event) {
    const ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    event.api = executor.api;
    event.context = executor.context;
    if (const CUresult r = executor.api->cuEventCreate(&event.event, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
        r != CUDA_SUCCESS) {
      event.event = nullptr;
      return executor.api->Error(r, "cuEventCreate", "(an interprocess event on cuda:{})", executor.ordinal);
    }
    return Status();
  }
  template <typename Event>
  static Status ExportEvent(Event& event, std::span<std::byte, streamexecutor::detail::kIpcPayloadBytes> payload) {
    static_assert(sizeof(CUipcEventHandle) == streamexecutor::detail::kIpcPayloadBytes);
    const ContextScope context_scope(*event.api, event.context);
    if (!context_scope.ok()) return context_scope.status();
    CUipcEventHandle handle{};
    if (const CUresult r = event.api->cuIpcGetEventHandle(&handle, event.event); r != CUDA_SUCCESS) {
      return event.api->Error(r, "cuIpcGetEventHandle", "(an event made with CU_EVENT_INTERPROCESS)");
    }
    std::memcpy(payload.data(), &handle, sizeof handle);
    return Status();
  }
  template <typename Executor, typename Event>
  static Status ImportEvent(Executor& executor,
                            std::span<const std::byte, streamexecutor::detail::kIpcPayloadBytes> payload,
                            Event& event) {
    const ContextScope context_scope(*executor.api, executor.context);
    if (!context_scope.ok()) return context_scope.status();
    CUipcEventHandle handle;
    std::memcpy(&handle, payload.data(), sizeof handle);
    event.api = executor.api;
    event.context = executor.context;
    if (const CUresult r = executor.api->cuIpcOpenEventHandle(&event.event, handle); r != CUDA_SUCCESS) {
      event.event = nullptr;
      return executor.api->Error(r, "cuIpcOpenEventHandle", "(cuda:{})", executor.ordinal);
    }
    return Status();
  }
};

}  // namespace streamexecutor::cuda_detail
