// The host backend's device memory: host memory in whole pages, so that any
// allocation can be shared with another process alone (host/ipc.hpp moves an
// exported allocation's pages into a memory file).
//
// Below kLargeAllocation the pages come from aligned_alloc, which glibc's heap
// serves quickly. From there up aligned_alloc would take glibc's mmap path on
// every call: memalign asks for more than the chunk it later frees, so the
// dynamic mmap threshold that a free raises never admits the next request to
// the heap, and an allocate + free pair of 1 MiB cost 7-9 us (mmap, munmap,
// page faults) against 0.13 us for malloc. Those are cut from a malloc of one
// page more, which the heap reuses, and the pointer malloc gave is kept in a
// table for the free.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/detail/shared_pages.hpp"

namespace streamexecutor::host_detail {

inline std::uint64_t RoundToPages(std::uint64_t bytes) {
  const std::uint64_t page = streamexecutor::detail::PageSize();
  return (bytes + page - 1) / page * page;
}

class STREAMEXECUTOR_EXPORT PageAllocations {
 public:
  static constexpr std::uint64_t kLargeAllocation = std::uint64_t{64} << 10;

  static PageAllocations& Get() {
    static PageAllocations* allocations = new PageAllocations();  // outlives static destruction
    return *allocations;
  }

  // `bytes` rounded up to whole pages, page-aligned; null when out of memory.
  void* Allocate(std::uint64_t bytes) {
    const std::uint64_t page = streamexecutor::detail::PageSize();
    const std::uint64_t rounded = RoundToPages(bytes);
    if (rounded < kLargeAllocation) return std::aligned_alloc(page, rounded);
    void* given = std::malloc(rounded + page);
    if (given == nullptr) return nullptr;
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(given) + page - 1) / page * page);
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      large_.emplace(aligned, given);
    } catch (...) {
      std::free(given);
      return nullptr;
    }
    large_count_.fetch_add(1, std::memory_order_relaxed);
    return aligned;
  }

  void Free(void* base) {
    if (large_count_.load(std::memory_order_relaxed) != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = large_.find(base); it != large_.end()) {
        void* given = it->second;
        large_.erase(it);
        large_count_.fetch_sub(1, std::memory_order_relaxed);
        std::free(given);
        return;
      }
    }
    std::free(base);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, void*> large_;  // aligned pointer -> what malloc gave
  std::atomic<std::uint64_t> large_count_{0};
};

}  // namespace streamexecutor::host_detail
