// Communicator<B>: one rank of a group, bound to one executor. Its
// transport (loopback.hpp, mpi.hpp) carries the data between ranks; the
// stream operations (operations.hpp) order it with the stream's work. A
// communicator is a handle: copies share the rank's state, and the state
// lives while a copy or a queued operation uses it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

namespace collectives_detail {

// The communicator's pinned staging buffers, reused: a collective on a
// backend whose device memory is not host memory (DeviceMemoryIsHostMemoryBackend) copies its input into one
// and its result out of one, in stream order.
template <Backend B>
class StagingPool {
 public:
  explicit StagingPool(StreamExecutor<B>* executor) : executor_(executor) {}
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // A block of at least `bytes`, returned to the pool when the last holder
  // of the result lets go (a queued operation holds it until it is done).
  static StatusOr<std::shared_ptr<void>> Take(const std::shared_ptr<StagingPool>& pool, std::uint64_t bytes,
                                              std::byte** address) {
    std::unique_ptr<Block> block;
    {
      const std::lock_guard<std::mutex> lock(pool->mutex_);
      for (auto it = pool->free_.begin(); it != pool->free_.end(); ++it) {
        if ((*it)->bytes >= bytes) {
          block = std::move(*it);
          pool->free_.erase(it);
          break;
        }
      }
    }
    if (block == nullptr) {
      // Rounded up to 64 KiB, so that sizes close to each other share blocks.
      const std::uint64_t rounded = (bytes + 0xffff) & ~std::uint64_t{0xffff};
      PinnedHostMemory<std::byte> memory = pool->executor_->template HostAllocate<std::byte>(rounded);
      if (!memory.ok()) return memory.status();
      block = std::make_unique<Block>(Block{std::move(memory), rounded});
    }
    *address = block->memory.data();
    Block* raw = block.release();
    return std::shared_ptr<void>(raw, [pool](void* returned) {
      std::unique_ptr<Block> back(static_cast<Block*>(returned));
      const std::lock_guard<std::mutex> lock(pool->mutex_);
      pool->free_.push_back(std::move(back));  // no driver call here: any thread may return a block
    });
  }

 private:
  struct Block {
    PinnedHostMemory<std::byte> memory;
    std::uint64_t bytes;
  };
  StreamExecutor<B>* executor_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> free_;
};

// What became of an operation a StreamTransport queued, for the host
// callback that follows it on the stream: set at most once, by the thread
// that watches the transport, before the operation's work on the stream ends
// (the watcher aborts the operation after setting it).
class Outcome {
 public:
  void Fail(Status status) {
    if (claimed_.exchange(true, std::memory_order_acq_rel)) return;
    status_ = std::move(status);
    failed_.store(true, std::memory_order_release);
  }
  Status Get() const { return failed_.load(std::memory_order_acquire) ? status_ : Status(); }

 private:
  std::atomic<bool> claimed_{false};
  std::atomic<bool> failed_{false};
  Status status_;
};

// A transport that queues its operations on the stream itself (NCCL on a
// CUDA stream): no staging, no marker, no host hand-off before the data
// moves. Start() still serves a turn taken without data (TakePartFailed).
template <Backend B>
class StreamTransport : public Transport {
 public:
  // Queues `task` on `stream`, after the stream's earlier work and before its
  // later work. `send` and `recv` are the rank's buffers, checked already
  // (either may be null where the operation does not use it on this rank).
  virtual Status Enqueue(typename B::StreamHandle& stream, const Task& task, const DeviceMemoryBase* send,
                         DeviceMemoryBase* recv, std::shared_ptr<Outcome>* outcome) = 0;
};

}  // namespace collectives_detail

template <Backend B>
class Communicator {
 public:
  // An invalid communicator: operations on it fail with `status`.
  explicit Communicator(Status status = MakeError(ErrorCode::kFailedPrecondition, "an empty communicator"))
      : status_(std::move(status)) {}
  Communicator(StreamExecutor<B>* executor, int rank, std::shared_ptr<collectives_detail::Transport> transport)
      : state_(std::make_shared<State>(executor, rank, std::move(transport))) {}
  Communicator(StreamExecutor<B>* executor, int rank, std::shared_ptr<collectives_detail::StreamTransport<B>> transport)
      : state_(std::make_shared<State>(executor, rank, transport)) {
    state_->on_stream = transport.get();
  }

  bool ok() const { return state_ != nullptr; }
  const Status& status() const { return status_; }
  int rank() const { return state_ != nullptr ? state_->rank : -1; }
  int size() const { return state_ != nullptr ? state_->transport->size() : 0; }
  StreamExecutor<B>* executor() const { return state_ != nullptr ? state_->executor : nullptr; }
  // "loopback", "MPI", "NCCL".
  std::string_view transport_name() const { return state_ != nullptr ? state_->transport->name() : "none"; }

  // For the stream operations (operations.hpp).
  collectives_detail::Transport& transport() const { return *state_->transport; }
  const std::shared_ptr<collectives_detail::Transport>& shared_transport() const { return state_->transport; }
  std::uint64_t NextSequence() const { return state_->sequence.fetch_add(1, std::memory_order_relaxed); }
  const std::shared_ptr<collectives_detail::StagingPool<B>>& staging() const { return state_->staging; }
  // The transport, where it queues its operations on the stream itself; null otherwise.
  collectives_detail::StreamTransport<B>* stream_transport() const { return state_->on_stream; }

 private:
  struct State {
    State(StreamExecutor<B>* e, int r, std::shared_ptr<collectives_detail::Transport> t)
        : executor(e),
          rank(r),
          transport(std::move(t)),
          staging(std::make_shared<collectives_detail::StagingPool<B>>(e)) {}
    StreamExecutor<B>* executor;
    int rank;
    std::shared_ptr<collectives_detail::Transport> transport;
    std::shared_ptr<collectives_detail::StagingPool<B>> staging;
    collectives_detail::StreamTransport<B>* on_stream = nullptr;  // the same object as `transport`, where it is one
    std::atomic<std::uint64_t> sequence{0};
  };
  std::shared_ptr<State> state_;
  Status status_;
};

}  // namespace streamexecutor
