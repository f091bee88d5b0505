// Device memory shared between processes, as CUDA's cuIpcGetMemHandle and
// cuIpcOpenMemHandle share it:
//
//   // process A
//   se::IpcMemoryHandle handle = executor->ExportMemory(data).ValueOrDie();
//   write(pipe, &handle, sizeof handle);              // any channel: plain bytes
//   // process B
//   se::DeviceMemory<float> shared = executor->ImportMemory<float>(handle).ValueOrDie();
//   stream.ThenLaunch(..., &shared);  ... executor->CloseImportedMemory(&shared);
//
// A handle names the view exported (its offset and size within the
// allocation), the backend and the exporting process. The importer gets a
// view of the same bytes, registered with its executor like its own memory
// (copies, fills and launches take it), until CloseImportedMemory or the
// executor's destruction unmaps it; it is never freed by the importer. The
// exporter keeps the memory until every importer has closed it (as on CUDA,
// freeing it earlier leaves the importers' view undefined; on host they keep
// reading the last contents, never the exporter's later allocations).
//
// Ordering between processes is the program's: an event, a stream memory
// operation on shared memory, or the program's own messages.
#pragma once

#include <unistd.h>

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "streamexecutor/core/allocation_registry.hpp"
#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

template <Backend B>
class StreamExecutor;

// Plain bytes, to send by any means (a pipe, a socket, MPI, a file).
struct IpcMemoryHandle {
  std::array<std::byte, 128> bytes{};
};
// An event's (Event::Export, Event::InitImported).
struct IpcEventHandle {
  std::array<std::byte, 128> bytes{};
};

namespace detail {

// What a handle holds before the backend's own bytes (CUipcMemHandle is 64).
inline constexpr std::size_t kIpcPayloadBytes = 64;
struct IpcHeader {
  char magic[8];         // kIpcMagic
  char backend[16];      // B::kName
  std::int32_t pid;      // the exporting process
  std::int32_t device;   // its device ordinal
  std::uint64_t offset;  // the view within the allocation
  std::uint64_t size;    // the view's bytes
  std::uint64_t allocation_bytes;
};
static_assert(sizeof(IpcHeader) + kIpcPayloadBytes <= sizeof(IpcMemoryHandle));
inline constexpr char kIpcMagic[8] = {'s', 'e', '-', 'i', 'p', 'c', '1', '\0'};

// A handle's bytes, with the header written.
inline void WriteIpcHeader(std::span<std::byte, 128> bytes, std::string_view backend, int device, std::uint64_t offset,
                           std::uint64_t size, std::uint64_t allocation_bytes) {
  IpcHeader header{};
  std::memcpy(header.magic, kIpcMagic, sizeof kIpcMagic);
  backend.copy(header.backend, sizeof header.backend - 1);
  header.pid = static_cast<std::int32_t>(getpid());
  header.device = device;
  header.offset = offset;
  header.size = size;
  header.allocation_bytes = allocation_bytes;
  std::memcpy(bytes.data(), &header, sizeof header);
}
// The header of a handle `what` ("memory", "event") for this backend,
// refused if it is no handle, another backend's, or this process's own.
inline StatusOr<IpcHeader> ReadIpcHeader(std::span<const std::byte, 128> bytes, std::string_view backend,
                                         std::string_view caller, std::string_view label, std::string_view what) {
  IpcHeader header;
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.magic, kIpcMagic, sizeof kIpcMagic) != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the bytes are not a handle that an export made ({} handle "
                     "expected)",
                     caller, label, what);
  }
  header.backend[sizeof header.backend - 1] = '\0';
  if (std::string_view(header.backend) != backend) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the handle was exported by the {} backend; import it with a {} executor", caller, label,
                     header.backend, header.backend);
  }
  if (header.pid == static_cast<std::int32_t>(getpid())) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the handle was exported by this process ({}); use the {} itself (CUDA does not open "
                     "a handle in the process that made it)",
                     caller, label, header.pid, what);
  }
  return header;
}
// What a backend without inter-process sharing of `what` ("memory", "events") answers.
[[gnu::cold]] inline Status IpcUnimplemented(std::string_view caller, std::string_view label, std::string_view backend,
                                             std::string_view what, std::string_view capability) {
  return MakeError(ErrorCode::kUnimplemented,
                   "{} on {}: the {} backend cannot share {} between processes; see {} in docs/api.md", caller, label,
                   backend, what, capability);
}
template <typename Handle>
std::span<std::byte, kIpcPayloadBytes> IpcPayload(Handle& handle) {
  return std::span<std::byte, kIpcPayloadBytes>(handle.bytes.data() + sizeof(IpcHeader), kIpcPayloadBytes);
}
template <typename Handle>
std::span<const std::byte, kIpcPayloadBytes> ConstIpcPayload(const Handle& handle) {
  return std::span<const std::byte, kIpcPayloadBytes>(handle.bytes.data() + sizeof(IpcHeader), kIpcPayloadBytes);
}

}  // namespace detail

// A backend that shares device memory between processes:
//   B::ExportMemory(ExecutorState&, const DeviceMemoryBase& allocation, std::span<std::byte, 64> payload)
//     fills the payload for the whole allocation;
//   B::ImportMemory(ExecutorState&, std::span<const std::byte, 64> payload, std::uint64_t bytes)
//     maps it, giving the whole allocation;
//   B::CloseImportedMemory(ExecutorState&, const DeviceMemoryBase& allocation) unmaps it.
template <typename B>
concept IpcMemoryBackend =
    Backend<B> && requires(typename B::ExecutorState& executor, const DeviceMemoryBase& memory,
                           std::span<std::byte, detail::kIpcPayloadBytes> out,
                           std::span<const std::byte, detail::kIpcPayloadBytes> in, std::uint64_t bytes) {
      { B::ExportMemory(executor, memory, out) } -> std::same_as<Status>;
      { B::ImportMemory(executor, in, bytes) } -> std::same_as<StatusOr<DeviceMemoryBase>>;
      { B::CloseImportedMemory(executor, memory) } -> std::same_as<Status>;
    };

// A backend whose events other processes can wait on and record:
//   B::CreateInterprocessEvent(ExecutorState&, EventHandle&) an event that can be exported (not timed);
//   B::ExportEvent(EventHandle&, std::span<std::byte, 64> payload);
//   B::ImportEvent(ExecutorState&, std::span<const std::byte, 64> payload, EventHandle&) opens one,
//     destroyed by B::DestroyEvent like any event.
template <typename B>
concept IpcEventBackend = Backend<B> && requires(typename B::ExecutorState& executor, typename B::EventHandle& event,
                                                 std::span<std::byte, detail::kIpcPayloadBytes> out,
                                                 std::span<const std::byte, detail::kIpcPayloadBytes> in) {
  { B::CreateInterprocessEvent(executor, event) } -> std::same_as<Status>;
  { B::ExportEvent(event, out) } -> std::same_as<Status>;
  { B::ImportEvent(executor, in, event) } -> std::same_as<Status>;
};

namespace detail {

// StreamExecutor's inter-process calls (a base class, as the adoption calls are).
template <typename B>
class IpcApi {
 public:
  // A handle to the memory `memory` views, for another process. The memory
  // must be an allocation of this executor (not pooled, adopted or imported).
  StatusOr<IpcMemoryHandle> ExportMemory(const DeviceMemoryBase& memory) {
    constexpr std::string_view caller = "ExportMemory";
    StreamExecutor<B>& self = Self();
    if (Status s = self.CheckDeviceRange(caller, "exported", memory, memory.size()); !s.ok()) return s;
    const AllocationRecord& record = *memory.allocation_record();
    if (const RecordKind kind = record.kind.load(std::memory_order_relaxed); kind != RecordKind::kAllocated) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on {}: only memory this executor allocated can be exported, and {}", caller,
                       self.DeviceLabel(), RegisteredBy(kind));
    }
    if constexpr (!IpcMemoryBackend<B>) {
      return IpcUnimplemented(caller, self.DeviceLabel(), B::kName, "memory", "IpcMemoryBackend");
    } else {
      // A backend that moves the memory to share it (host) has it first left alone.
      if constexpr (requires { requires B::kExportWaitsForQueuedWork; }) {
        if (Status s = self.AwaitStreams(self.native_state()); !s.ok()) {
          return MakeError(s.code(), "{} on {}: waiting for the queued work first: {}", caller, self.DeviceLabel(),
                           s.message());
        }
      }
      const std::uint64_t allocation_bytes = record.bytes.load(std::memory_order_relaxed);
      IpcMemoryHandle handle;
      WriteIpcHeader(handle.bytes, B::kName, self.device_ordinal(), memory.offset(), memory.size(), allocation_bytes);
      const DeviceMemoryBase allocation(memory.opaque(), allocation_bytes);
      if (Status s = B::ExportMemory(self.native_state(), allocation, IpcPayload(handle)); !s.ok()) {
        return MakeError(s.code(), "{} on {} ({} bytes): {}", caller, self.DeviceLabel(), allocation_bytes,
                         s.message());
      }
      return handle;
    }
  }

  // The memory another process exported, as a view of `T` of this executor.
  template <typename T>
  StatusOr<DeviceMemory<T>> ImportMemory(const IpcMemoryHandle& handle) {
    constexpr std::string_view caller = "ImportMemory";
    StreamExecutor<B>& self = Self();
    StatusOr<IpcHeader> read = ReadIpcHeader(handle.bytes, B::kName, caller, self.DeviceLabel(), "DeviceMemory");
    if (!read.ok()) return read.status();
    const IpcHeader& header = read.value();
    if (header.offset > header.allocation_bytes || header.size > header.allocation_bytes - header.offset) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: the handle's view [{}, +{}) lies outside its {}-byte "
                       "allocation",
                       caller, self.DeviceLabel(), header.offset, header.size, header.allocation_bytes);
    }
    if constexpr (!IpcMemoryBackend<B>) {
      return IpcUnimplemented(caller, self.DeviceLabel(), B::kName, "memory", "IpcMemoryBackend");
    } else {
      StatusOr<DeviceMemoryBase> mapped =
          B::ImportMemory(self.native_state(), ConstIpcPayload(handle), header.allocation_bytes);
      if (!mapped.ok()) {
        return MakeError(mapped.status().code(), "{} on {} (exported by process {} from device {}): {}", caller,
                         self.DeviceLabel(), header.pid, header.device, mapped.status().message());
      }
      close_.store(&B::CloseImportedMemory, std::memory_order_release);
      StatusOr<DeviceMemoryBase> registered =
          self.RegisterAllocation(mapped.value().opaque(), header.allocation_bytes, RecordKind::kImported);
      if (!registered.ok()) {
        B::CloseImportedMemory(self.native_state(), mapped.value()).IgnoreError();
        return registered.status();
      }
      return DeviceMemory<T>(DeviceMemory<std::byte>(registered.value()).GetSlice(header.offset, header.size));
    }
  }

  // Unmaps imported memory (any view of it) and nulls the view. Work queued
  // on it must be done first, as for any memory the program lets go.
  Status CloseImportedMemory(DeviceMemoryBase* memory) {
    constexpr std::string_view caller = "CloseImportedMemory";
    StreamExecutor<B>& self = Self();
    if (memory == nullptr || memory->IsNull()) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the DeviceMemory is {}", caller, self.DeviceLabel(),
                       memory == nullptr ? "a null pointer" : DescribeNullMemory(*memory));
    }
    const AllocationRecord* record = memory->allocation_record();
    const DeviceMemoryBase whole(memory->opaque(), record->bytes.load(std::memory_order_relaxed), 0,
                                 memory->allocation_id(), record);
    STREAMEXECUTOR_RETURN_IF_ERROR(self.RetireRecord(caller, whole, RecordKind::kImported));
    *memory = DeviceMemoryBase();
    return close_.load(std::memory_order_acquire)(self.native_state(), DeviceMemoryBase(whole.opaque(), whole.size()));
  }

 protected:
  // For the executor's destructor.
  void CloseAllImported() {
    const Close close = close_.load(std::memory_order_acquire);
    if (close == nullptr) return;
    StreamExecutor<B>& self = Self();
    for (const DeviceMemoryBase& left : self.RetireAll(RecordKind::kImported)) {
      close(self.native_state(), left).IgnoreError();
    }
  }

 private:
  StreamExecutor<B>& Self() { return static_cast<StreamExecutor<B>&>(*this); }
  // Set by the first import; a pointer, so that the destructor closes
  // without naming B's import calls (never instantiated for executors that
  // imported nothing, nor on backends without them).
  using Close = Status (*)(typename B::ExecutorState&, const DeviceMemoryBase&);
  std::atomic<Close> close_{nullptr};
};

}  // namespace detail
}  // namespace streamexecutor
