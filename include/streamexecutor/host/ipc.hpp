// The host backend's memory shared between processes (core/ipc.hpp): an
// exported allocation is moved, in place, into a memory file that an
// importing process maps (detail/shared_pages.hpp). Allocations are whole
// pages (host/memory.hpp), so that each can be moved alone.
//
// The files of exported allocations are kept process-wide, so that a second
// export of the same allocation gives the same file, and so that freeing an
// exported allocation first gives it private pages again: an importer that
// still maps the file then keeps the last contents, and never sees the
// memory this process allocates next at those addresses.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <span>
#include <vector>

#include "streamexecutor/core/ipc.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/detail/shared_pages.hpp"
#include "streamexecutor/host/memory.hpp"

namespace streamexecutor::host_detail {

class STREAMEXECUTOR_EXPORT SharedAllocations {
 public:
  static SharedAllocations& Get() {
    static SharedAllocations* allocations = new SharedAllocations();  // outlives static destruction
    return *allocations;
  }

  // The file holding the allocation at `base`, made on its first export.
  StatusOr<streamexecutor::detail::SharedPages> Share(void* base, std::uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& entry : entries_) {
      if (entry.base == base) return entry.pages;
    }
    StatusOr<streamexecutor::detail::SharedPages> pages =
        streamexecutor::detail::SharePagesInPlace(base, RoundToPages(bytes), "streamexecutor-host");
    if (!pages.ok()) return pages;
    try {
      entries_.push_back(Entry{base, pages.value()});
    } catch (...) {
      streamexecutor::detail::UnsharePages(base, pages.value().bytes, pages.value().fd);
      return Status(ErrorCode::kResourceExhausted, "out of host memory to track an exported allocation");
    }
    exported_.store(true, std::memory_order_release);
    return pages;
  }

  // Frees host device memory, giving an exported allocation private pages first.
  void Free(void* base) {
    if (exported_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i].base != base) continue;
        streamexecutor::detail::UnsharePages(base, entries_[i].pages.bytes, entries_[i].pages.fd);
        entries_[i] = entries_.back();
        entries_.pop_back();
        break;
      }
    }
    PageAllocations::Get().Free(base);
  }

 private:
  struct Entry {
    void* base;
    streamexecutor::detail::SharedPages pages;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::atomic<bool> exported_{false};  // once any allocation was: frees look it up
};

inline void FreeAllocation(void* base) { SharedAllocations::Get().Free(base); }

using IpcPayload = std::span<std::byte, streamexecutor::detail::kIpcPayloadBytes>;
using ConstIpcPayload = std::span<const std::byte, streamexecutor::detail::kIpcPayloadBytes>;

inline Status ExportAllocation(const DeviceMemoryBase& allocation, IpcPayload payload) {
  StatusOr<streamexecutor::detail::SharedPages> pages =
      SharedAllocations::Get().Share(allocation.opaque(), allocation.size());
  if (!pages.ok()) return pages.status();
  static_assert(sizeof(streamexecutor::detail::SharedPages) <= streamexecutor::detail::kIpcPayloadBytes);
  std::memcpy(payload.data(), &pages.value(), sizeof(streamexecutor::detail::SharedPages));
  return Status();
}

inline StatusOr<DeviceMemoryBase> ImportAllocation(ConstIpcPayload payload, std::uint64_t bytes) {
  streamexecutor::detail::SharedPages pages;
  std::memcpy(&pages, payload.data(), sizeof pages);
  if (pages.bytes < bytes) {
    return MakeError(ErrorCode::kInvalidArgument, "the handle names {} shared bytes for a {}-byte allocation",
                     pages.bytes, bytes);
  }
  StatusOr<void*> mapped = streamexecutor::detail::MapSharedPages(pages);
  if (!mapped.ok()) return mapped.status();
  return DeviceMemoryBase(mapped.value(), bytes);
}

inline Status CloseImportedAllocation(const DeviceMemoryBase& allocation) {
  streamexecutor::detail::UnmapSharedPages(allocation.opaque(), RoundToPages(allocation.size()));
  return Status();
}

}  // namespace streamexecutor::host_detail
