// detail::FreeBlocks<B>: the free blocks of one of the library's memory pools
// (core/memory_pool.hpp) and the rule that hands a block out again only when
// that is safe without luck:
//   - to the stream that freed it, at once: the stream's later work runs after
//     the free, so after every use queued before it;
//   - to any stream, once the freeing stream has run the free: it is gone (its
//     destructor waited) or idle (StreamIdleQueryBackend), or a marker
//     recorded on it after the free has completed (polled, never waited for
//     on the host).
// A free records nothing. A marker is recorded only when another stream asks
// for a block and the backend cannot tell an idle stream (OpenCL); one marker
// covers every block its stream freed before it. So a stream that reuses its
// own blocks, the common loop, costs no event.
//
// The pool calls every member under its lock (the executor's registry lock).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/synchronous.hpp"

namespace streamexecutor::detail {

template <Backend B>
class FreeBlocks {
 public:
  FreeBlocks() = default;
  FreeBlocks(const FreeBlocks&) = delete;
  FreeBlocks& operator=(const FreeBlocks&) = delete;

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t largest() const {
    for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
      if (!it->second.empty()) return it->first;
    }
    return 0;
  }

  // Keeps a block of `size` freed in the order of `stream` (null: anyone's
  // at once, as a reserve is); false when the host is out of memory to track
  // it, and the caller releases it.
  bool Put(std::uint64_t size, void* opaque, LiveStream<B>* stream) {
    try {
      free_[size].push_back(FreeBlock{opaque, stream, kNoMarker});
    } catch (...) {
      return false;
    }
    bytes_ += size;
    return true;
  }

  // A free block of `size` that `stream` may use now, or null. The stream's
  // own come first, newest first: they need no driver query, and a stream
  // that takes its own leaves none of them waiting behind its device.
  // `visit_stream(stream, visit)` calls visit(handle) with the freeing stream
  // pinned, false if it is gone (SynchronousOperations::VisitLinkedStream).
  template <typename VisitStream>
  void* Take(typename B::ExecutorState& executor, LiveStream<B>* stream, std::uint64_t size,
             VisitStream&& visit_stream) {
    auto found = free_.find(size);
    if (found == free_.end() || found->second.empty()) return nullptr;
    std::vector<FreeBlock>& blocks = found->second;
    for (std::size_t i = blocks.size(); i-- > 0;) {
      if (blocks[i].freed_on == stream) return TakeAt(blocks, i, size);
    }
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (Passed(blocks[i])) return TakeAt(blocks, i, size);
    }
    AskFreeingStreams(executor, blocks, visit_stream);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].freed_on == nullptr) return TakeAt(blocks, i, size);
    }
    return nullptr;
  }

  // Hands blocks to `release(opaque, size)`, largest first (they free the
  // most with the fewest driver calls), until at most `keep_bytes` stay free.
  template <typename Release>
  void ReleaseAbove(std::uint64_t keep_bytes, Release&& release) {
    for (auto it = free_.rbegin(); it != free_.rend() && bytes_ > keep_bytes; ++it) {
      std::vector<FreeBlock>& blocks = it->second;
      while (!blocks.empty() && bytes_ > keep_bytes) {
        release(blocks.back().opaque, it->first);
        DropMarker(blocks.back().marker);
        blocks.pop_back();
        bytes_ -= it->first;
      }
    }
  }

  // For the pool's destructor, once every block was released.
  void DestroyMarkers(typename B::ExecutorState& executor) {
    for (Marker& marker : markers_) B::DestroyEvent(executor, marker.event);
    markers_.clear();
  }

 private:
  static constexpr std::uint32_t kNoMarker = std::numeric_limits<std::uint32_t>::max();

  struct FreeBlock {
    void* opaque;
    LiveStream<B>* freed_on;  // null once the free has run (or for a reserve)
    std::uint32_t marker;     // in markers_, or kNoMarker
  };
  struct Marker {
    typename B::EventHandle event;
    std::uint32_t blocks;  // the free blocks it covers; 0: a spare event
  };

  void* TakeAt(std::vector<FreeBlock>& blocks, std::size_t i, std::uint64_t size) {
    const FreeBlock block = blocks[i];
    blocks[i] = blocks.back();
    blocks.pop_back();
    DropMarker(block.marker);
    bytes_ -= size;
    return block.opaque;
  }

  // Whether the free of `block` has run, as far as known without asking its
  // stream; a marker seen complete makes the block anyone's.
  bool Passed(FreeBlock& block) {
    if (block.freed_on == nullptr) return true;
    if (block.marker == kNoMarker) return false;
    StatusOr<bool> done = B::QueryEvent(markers_[block.marker].event);
    if (!done.ok() || !done.value()) return false;
    DropMarker(block.marker);
    block.marker = kNoMarker;
    block.freed_on = nullptr;
    return true;
  }

  // For each stream with blocks of `blocks` it freed and no marker covers:
  // a stream gone or idle has run its frees; on a backend that cannot tell
  // an idle stream, a marker recorded on it now tells later requests.
  template <typename VisitStream>
  void AskFreeingStreams(typename B::ExecutorState& executor, std::vector<FreeBlock>& blocks,
                         VisitStream& visit_stream) {
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      LiveStream<B>* stream = blocks[i].freed_on;
      if (stream == nullptr || blocks[i].marker != kNoMarker) continue;
      bool passed = false;
      std::uint32_t marker = kNoMarker;
      const bool linked = visit_stream(stream, [&](typename B::StreamHandle& handle) {
        if constexpr (StreamIdleQueryBackend<B>) {
          passed = B::StreamIsIdle(handle);
        } else {
          marker = RecordMarker(executor, handle);
        }
      });
      if (!linked) passed = true;
      for (std::size_t j = i; j < blocks.size(); ++j) {
        if (blocks[j].freed_on != stream || blocks[j].marker != kNoMarker) continue;
        if (passed) {
          blocks[j].freed_on = nullptr;
        } else if (marker != kNoMarker) {
          blocks[j].marker = marker;
          markers_[marker].blocks += 1;
        }
      }
    }
  }

  // Records a marker on `stream` (a spare event, or a new one); kNoMarker
  // if the driver refused. Enqueuing a marker never blocks on the backends
  // that need one (no idle query: OpenCL).
  std::uint32_t RecordMarker(typename B::ExecutorState& executor, typename B::StreamHandle& stream) {
    std::size_t slot = 0;
    while (slot < markers_.size() && markers_[slot].blocks != 0) ++slot;
    if (slot == markers_.size()) {
      typename B::EventHandle event{};
      if (!B::CreateEvent(executor, event).ok()) return kNoMarker;
      try {
        markers_.push_back(Marker{event, 0});
      } catch (...) {
        B::DestroyEvent(executor, event);
        return kNoMarker;
      }
    }
    if (!B::Submit(stream, op::RecordEvent<typename B::EventHandle>{&markers_[slot].event}).ok()) return kNoMarker;
    return static_cast<std::uint32_t>(slot);
  }
  void DropMarker(std::uint32_t marker) {
    if (marker != kNoMarker) markers_[marker].blocks -= 1;
  }

  std::map<std::uint64_t, std::vector<FreeBlock>> free_;  // by block size
  std::uint64_t bytes_ = 0;
  std::vector<Marker> markers_;
};

}  // namespace streamexecutor::detail
