// Copies between executors and between backends: one call that picks the
// route.
//
//   se::StatusOr<se::CopyRoute> route = se::ThenCopyBetween(&cl_stream, cl_data, &cuda_stream, &cuda_data);
//
// Ordering is that of two streams joined at the copy: the source is read
// after the work queued on `from` so far, the destination written after the
// work queued on `to` so far; later work on `to` sees the data, and later
// work on `from` may overwrite the source. The routes, best first:
//
//   kSameExecutor   one device-to-device copy on `to`
//   kFromHostMemory the source is host memory (host backend): one
//                   host-to-device copy on `to`, straight from it
//   kIntoHostMemory the destination is host memory: one device-to-host copy
//                   on `from`, straight into it
//   kPeer           two devices of one platform that copy between themselves
//                   (CUDA: cuMemcpyPeerAsync, after enabling peer access
//                   where the devices allow it)
//   kStaged         anything else (two OpenCL contexts, OpenCL and CUDA):
//                   chunks go through two pinned host buffers of the source
//                   executor, so that the read of one chunk overlaps the
//                   write of the one before
//
// Errors are returned and also stick to the streams: a copy that cannot be
// done fails both, one that fails while queued fails the stream it was on.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/stream.hpp"

namespace streamexecutor {

enum class CopyRoute { kSameExecutor, kFromHostMemory, kIntoHostMemory, kPeer, kStaged };

inline std::string_view ToString(CopyRoute route) {
  switch (route) {
    case CopyRoute::kSameExecutor: return "same executor";
    case CopyRoute::kFromHostMemory: return "from host memory";
    case CopyRoute::kIntoHostMemory: return "into host memory";
    case CopyRoute::kPeer: return "peer";
    case CopyRoute::kStaged: return "staged through pinned host memory";
  }
  return "unknown";
}

// Backends whose device memory is host memory (B::Address gives the pointer).
template <typename B>
concept DeviceMemoryIsHostMemoryBackend = Backend<B> && requires(const DeviceMemoryBase& memory) {
  requires B::kDeviceMemoryIsHostMemory;
  { B::Address(memory) } -> std::same_as<void*>;
};

// Backends that copy between two of their devices on a stream.
template <typename B>
concept PeerCopyBackend = PeerAccessBackend<B> && CrossExecutorWaitBackend<B> &&
                          requires(typename B::StreamHandle& stream, const typename B::ExecutorState& executor,
                                   DeviceMemoryBase memory, std::uint64_t bytes) {
                            {
                              B::EnqueueMemcpyPeer(stream, executor, memory, executor, memory, bytes)
                            } -> std::same_as<Status>;
                          };

namespace detail {

// Size of one staged chunk: large enough that a chunk's fixed costs (two
// driver calls, two event records and waits) are small beside its transfer.
inline constexpr std::uint64_t kStagingChunkBytes = 4u << 20;

// The pinned buffers of one source executor, kept in its extension slot and
// reused by every staged copy from it. A copy gives its buffers back with a
// test for "the copy is done" (its last event), so that nothing waits and
// no driver call is needed when it finishes; Take reclaims finished ones.
template <Backend B>
class StagingPool {
 public:
  explicit StagingPool(StreamExecutor<B>* executor) : executor_(executor) {}
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool() {
    // The executor is closing: copies still in flight are waited for.
    for (Pending& pending : pending_) {
      while (!pending.done()) std::this_thread::yield();
      for (void* buffer : pending.buffers) Free(buffer);
    }
    for (void* buffer : idle_) Free(buffer);
  }

  StatusOr<void*> Take() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ReclaimLocked();
      if (!idle_.empty()) {
        void* buffer = idle_.back();
        idle_.pop_back();
        return buffer;
      }
    }
    if constexpr (PinnedMemoryBackend<B>) {
      return executor_->TryHostMemoryAllocate(kStagingChunkBytes);
    } else {
      void* buffer = std::aligned_alloc(64, kStagingChunkBytes);
      if (buffer == nullptr) {
        return MakeError(ErrorCode::kResourceExhausted, "staging a copy from {}: out of host memory for {} bytes",
                         executor_->DeviceLabel(), kStagingChunkBytes);
      }
      return buffer;
    }
  }
  // `done` must become true once no queued work uses the buffers.
  void GiveWhenDone(std::vector<void*> buffers, std::function<bool()> done) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Reserved first: a failed push must not lose the buffers.
    idle_.reserve(idle_.size() + buffers.size());
    try {
      pending_.push_back(Pending{std::move(buffers), std::move(done)});
    } catch (...) {
      // Out of memory to remember them: wait for the copy instead.
      while (!done()) std::this_thread::yield();
      for (void* buffer : buffers) idle_.push_back(buffer);  // room was reserved
    }
  }

 private:
  struct Pending {
    std::vector<void*> buffers;
    std::function<bool()> done;
  };
  void ReclaimLocked() {
    std::size_t kept = 0;
    for (Pending& pending : pending_) {
      if (pending.done()) {
        for (void* buffer : pending.buffers) idle_.push_back(buffer);
      } else {
        pending_[kept++] = std::move(pending);
      }
    }
    pending_.resize(kept);
  }
  void Free(void* buffer) {
    if constexpr (PinnedMemoryBackend<B>) {
      executor_->HostMemoryDeallocate(buffer).IgnoreError();
    } else {
      std::free(buffer);
    }
  }

  StreamExecutor<B>* executor_;
  std::mutex mutex_;
  std::vector<void*> idle_;
  std::vector<Pending> pending_;
};

template <Backend A, Backend B>
bool SameExecutor(StreamExecutor<A>* a, StreamExecutor<B>* b) {
  if constexpr (std::same_as<A, B>)
    return a == b;
  else
    return false;
}

template <Backend Src, Backend Dst>
StatusOr<CopyRoute> Staged(Stream<Src>* from, const DeviceMemoryBase& src, Stream<Dst>* to, const DeviceMemoryBase& dst,
                           std::uint64_t bytes) {
  StatusOr<StagingPool<Src>*> pool = from->parent()->template GetOrCreateExtension<StagingPool<Src>>(
      [executor = from->parent()]() -> StatusOr<std::unique_ptr<StagingPool<Src>>> {
        return std::make_unique<StagingPool<Src>>(executor);
      });
  if (!pool.ok()) return pool.status();
  const std::uint64_t chunks = (bytes + kStagingChunkBytes - 1) / kStagingChunkBytes;
  std::vector<void*> buffers;
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(chunks, 2); ++i) {
    StatusOr<void*> buffer = pool.value()->Take();
    if (!buffer.ok()) {
      pool.value()->GiveWhenDone(std::move(buffers), [] { return true; });
      return buffer.status();
    }
    buffers.push_back(buffer.value());
  }
  // read[b]: chunk in buffer b is on the host; written[b]: it reached the
  // destination, so buffer b may take the next chunk. Events are recorded
  // again for each chunk; a wait targets the recording latest when queued.
  // `written` outlives the call: the pool polls its last recording.
  struct Written {
    explicit Written(StreamExecutor<Dst>* executor) : events{Event<Dst>(executor), Event<Dst>(executor)} {}
    Event<Dst> events[2];
  };
  Event<Src> read[2] = {Event<Src>(from->parent()), Event<Src>(from->parent())};
  std::shared_ptr<Written> written;
  try {
    written = std::make_shared<Written>(to->parent());
  } catch (const std::bad_alloc&) {
    pool.value()->GiveWhenDone(std::move(buffers), [] { return true; });
    return MakeError(ErrorCode::kResourceExhausted, "ThenCopyBetween: out of host memory");
  }
  for (std::size_t b = 0; b < 2; ++b) {
    if (!read[b].Init() || !written->events[b].Init()) {
      pool.value()->GiveWhenDone(std::move(buffers), [] { return true; });
      return !read[b].init_status().ok() ? read[b].init_status() : written->events[b].init_status();
    }
  }
  const DeviceMemory<std::byte> source(src);
  DeviceMemory<std::byte> destination(dst);
  for (std::uint64_t i = 0; i < chunks; ++i) {
    const std::size_t b = static_cast<std::size_t>(i % 2);
    const std::uint64_t offset = i * kStagingChunkBytes;
    const std::uint64_t n = std::min(kStagingChunkBytes, bytes - offset);
    Event<Dst>& free_again = written->events[b];
    if (i >= 2) from->ThenWaitFor(&free_again);
    from->ThenMemcpy(buffers[b], source.GetSlice(offset, n), n).ThenRecordEvent(&read[b]);
    DeviceMemory<std::byte> target = destination.GetSlice(offset, n);
    to->ThenWaitFor(&read[b]).ThenMemcpy(&target, buffers[b], n).ThenRecordEvent(&free_again);
  }
  // `from` may reuse the source once its last chunk is read; `to` already
  // waits for every chunk.
  from->ThenWaitFor(&read[(chunks - 1) % 2]);
  // The buffers return once the last chunk reached the destination (or the
  // stream failed: records run on failed streams too).
  const std::size_t last = static_cast<std::size_t>((chunks - 1) % 2);
  pool.value()->GiveWhenDone(std::move(buffers), [written, last] {
    return written->events[last].PollForStatus() != Event<Dst>::State::kPending;
  });
  if (!from->ok()) return from->status();
  if (!to->ok()) return to->status();
  return CopyRoute::kStaged;
}

}  // namespace detail

// Copies `bytes` from `src` (memory of from's executor) to `dst` (memory of
// to's executor). See the top of this file for the ordering and the routes.
template <Backend Src, Backend Dst>
StatusOr<CopyRoute> ThenCopyBetween(Stream<Src>* from, const DeviceMemoryBase& src, Stream<Dst>* to,
                                    DeviceMemoryBase* dst, std::uint64_t bytes) {
  constexpr std::string_view caller = "ThenCopyBetween";
  if (from == nullptr || to == nullptr || dst == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: the {} pointer is null", caller,
                     from == nullptr ? "source stream"
                     : to == nullptr ? "destination stream"
                                     : "destination");
  }
  for (const auto& [initialized, status] :
       {std::pair{from->initialized(), from->status()}, std::pair{to->initialized(), to->status()}}) {
    if (!initialized) {
      return MakeError(ErrorCode::kFailedPrecondition, "{}: a stream was not initialized (call Init())", caller);
    }
    if (!status.ok()) return status;  // sticky: nothing is queued after a failure
  }
  auto fail = [&](Status status) -> StatusOr<CopyRoute> {
    from->FailWith(status);
    to->FailWith(status);
    return status;
  };
  if (Status s = from->parent()->CheckDeviceRange(caller, "source", src, bytes); !s.ok()) return fail(std::move(s));
  if (Status s = to->parent()->CheckDeviceRange(caller, "destination", *dst, bytes); !s.ok()) {
    return fail(std::move(s));
  }
  auto result = [&](CopyRoute route) -> StatusOr<CopyRoute> {
    if (!from->ok()) return from->status();
    if (!to->ok()) return to->status();
    return route;
  };
  if (bytes == 0) return result(CopyRoute::kSameExecutor);

  if (detail::SameExecutor(from->parent(), to->parent())) {
    if constexpr (std::same_as<Src, Dst>) {
      if (from != to) to->ThenWaitFor(from);
      to->ThenMemcpy(dst, src, bytes);
      if (from != to) from->ThenWaitFor(to);
      return result(CopyRoute::kSameExecutor);
    }
  }
  if constexpr (DeviceMemoryIsHostMemoryBackend<Src>) {
    to->ThenWaitFor(from).ThenMemcpy(dst, Src::Address(src), bytes);
    from->ThenWaitFor(to);
    return result(CopyRoute::kFromHostMemory);
  } else if constexpr (DeviceMemoryIsHostMemoryBackend<Dst>) {
    from->ThenWaitFor(to).ThenMemcpy(Dst::Address(*dst), src, bytes);
    to->ThenWaitFor(from);
    return result(CopyRoute::kIntoHostMemory);
  } else {
    if constexpr (std::same_as<Src, Dst> && PeerCopyBackend<Src>) {
      auto& a = from->parent()->native_state();
      auto& b = to->parent()->native_state();
      // Through the executor, which records it: kernels on `to` may then
      // take memory of `from` as well (core/peer_access.hpp).
      if (to->parent()->CanEnablePeerAccessTo(from->parent())) {
        if (Status s = to->parent()->EnablePeerAccessTo(from->parent()); !s.ok()) return fail(std::move(s));
      }
      to->ThenWaitFor(from);
      if (to->ok()) {
        if (Status s = Src::EnqueueMemcpyPeer(to->native_handle(), b, *dst, a, src, bytes); !s.ok()) {
          to->FailWith(s);
          return s;
        }
      }
      from->ThenWaitFor(to);
      return result(CopyRoute::kPeer);
    }
    return detail::Staged(from, src, to, *dst, bytes);
  }
}

// Typed form: the whole source array, which must fit in the destination.
template <Backend Src, Backend Dst, typename T>
StatusOr<CopyRoute> ThenCopyBetween(Stream<Src>* from, const DeviceMemory<T>& src, Stream<Dst>* to,
                                    DeviceMemory<T>* dst) {
  if (dst != nullptr && !src.IsNull() && !dst->IsNull() && src.ElementCount() > dst->ElementCount()) {
    return MakeError(ErrorCode::kOutOfRange,
                     "ThenCopyBetween: the source holds {} elements of {} but the destination only {}",
                     src.ElementCount(), detail::TypeName<T>(), dst->ElementCount());
  }
  return ThenCopyBetween(from, static_cast<const DeviceMemoryBase&>(src), to, static_cast<DeviceMemoryBase*>(dst),
                         src.size());
}

}  // namespace streamexecutor
