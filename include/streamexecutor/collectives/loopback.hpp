// The loopback transport: N ranks inside one process, for tests and for
// programs that want the collective API on one machine without MPI. Each
// rank's n-th collective meets the other ranks' n-th in a round; the rank
// that completes the round performs it on the host (the buffers are host
// memory or staging buffers) and completes every rank's operation. Sends and
// receives between two ranks pair up in the order they were issued.
//
//   se::LoopbackGroup group(2);
//   se::Communicator<se::host> zero = group.Join(host_executor, 0);
//   se::Communicator<se::opencl> one = group.Join(opencl_executor, 1);  // backends may differ
//
// A rank that never joins a round leaves the others waiting, as a missing
// MPI rank does: Abort(status) completes every waiting operation with it.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/collectives/communicator.hpp"

namespace streamexecutor {

namespace collectives_detail {

class LoopbackState {
 public:
  explicit LoopbackState(int size) : size_(size) {}

  void Start(std::shared_ptr<Task> task) {
    std::vector<std::shared_ptr<Task>> done;
    Status result;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!aborted_.ok()) {
        result = aborted_;
        done.push_back(std::move(task));
      } else if (task->kind == Kind::kSend || task->kind == Kind::kRecv) {
        Pair(std::move(task), done, result);
      } else {
        Round& round = rounds_[task->sequence];
        if (round.tasks.empty()) round.tasks.resize(static_cast<std::size_t>(size_));
        const auto rank = static_cast<std::size_t>(task->rank);
        round.tasks[rank] = std::move(task);
        if (++round.arrived == size_) {
          done = std::move(round.tasks);
          rounds_.erase(done.front()->sequence);
          result = Perform(done);
        }
      }
    }
    for (const std::shared_ptr<Task>& t : done) t->Complete(result);
  }

  void Abort(Status status) {
    std::vector<std::shared_ptr<Task>> waiting;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      aborted_ = status;
      for (auto& [sequence, round] : rounds_) {
        for (std::shared_ptr<Task>& t : round.tasks)
          if (t != nullptr) waiting.push_back(std::move(t));
      }
      rounds_.clear();
      for (auto& [ranks, queue] : pending_) {
        for (std::shared_ptr<Task>& t : queue) waiting.push_back(std::move(t));
      }
      pending_.clear();
    }
    for (const std::shared_ptr<Task>& t : waiting) t->Complete(status);
  }

  int size() const { return size_; }

 private:
  struct Round {
    std::vector<std::shared_ptr<Task>> tasks;  // by rank
    int arrived = 0;
  };

  // A send meets the receive of the same pair issued in the same order.
  void Pair(std::shared_ptr<Task> task, std::vector<std::shared_ptr<Task>>& done, Status& result) {
    const bool sending = task->kind == Kind::kSend;
    const std::pair<int, int> from_to = sending ? std::pair{task->rank, task->peer} : std::pair{task->peer, task->rank};
    std::vector<std::shared_ptr<Task>>& sends = pending_[{from_to.first, from_to.second * 2}];
    std::vector<std::shared_ptr<Task>>& receives = pending_[{from_to.first, from_to.second * 2 + 1}];
    std::vector<std::shared_ptr<Task>>& other = sending ? receives : sends;
    if (other.empty()) {
      (sending ? sends : receives).push_back(std::move(task));
      return;
    }
    std::shared_ptr<Task> match = std::move(other.front());
    other.erase(other.begin());
    const Task& send = sending ? *task : *match;
    const Task& recv = sending ? *match : *task;
    if (send.poisoned || recv.poisoned) {
      result = MakeError(ErrorCode::kFailedPrecondition,
                         "a send from rank {} to rank {} (loopback): rank {} could not take part (its stream had "
                         "failed, or its call was refused)",
                         send.rank, recv.rank, send.poisoned ? send.rank : recv.rank);
    } else if (send.type != recv.type || send.count != recv.count) {
      result = MakeError(ErrorCode::kInvalidArgument,
                         "mismatched send and receive (loopback): rank {} sends {} {} and rank {} receives {} {}",
                         send.rank, send.count, ElementName(send.type), recv.rank, recv.count, ElementName(recv.type));
    } else if (send.count != 0) {
      std::memcpy(recv.recv, send.send, send.SendBytes());
    }
    done.push_back(std::move(task));
    done.push_back(std::move(match));
  }

  // Every rank's n-th operation, by rank: the same kind, type, count,
  // reduction and root on every rank, else an error on every rank.
  Status Perform(const std::vector<std::shared_ptr<Task>>& tasks) {
    const Task& first = *tasks.front();
    for (const std::shared_ptr<Task>& t : tasks) {
      if (t->poisoned) {
        return MakeError(ErrorCode::kFailedPrecondition,
                         "{} (loopback, call {} on each rank): rank {} could not take part (its stream had failed, or "
                         "its call was refused)",
                         t->Describe(), t->sequence, t->rank);
      }
    }
    for (const std::shared_ptr<Task>& t : tasks) {
      if (t->kind != first.kind || t->type != first.type || t->count != first.count || t->op != first.op ||
          t->peer != first.peer) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "mismatched collective operations (loopback, call {} on each rank): rank {} called {}, "
                         "rank {} called {}",
                         first.sequence, first.rank, first.Describe(), t->rank, t->Describe());
      }
    }
    const std::uint64_t bytes = first.count * ElementSize(first.type);
    const std::size_t n = tasks.size();
    try {
      switch (first.kind) {
        case Kind::kAllReduce:
        case Kind::kReduce: {
          // Rank order, as a single-process reference computes it.
          std::vector<std::byte> sum(bytes);
          if (bytes != 0) std::memcpy(sum.data(), tasks[0]->send, bytes);
          for (std::size_t r = 1; r < n; ++r) ReduceInto(first.type, sum.data(), tasks[r]->send, first.count, first.op);
          for (const std::shared_ptr<Task>& t : tasks) {
            if (t->recv != nullptr && bytes != 0) std::memcpy(t->recv, sum.data(), bytes);
          }
          break;
        }
        case Kind::kBroadcast: {
          const Task& root = *tasks[static_cast<std::size_t>(first.peer)];
          for (const std::shared_ptr<Task>& t : tasks) {
            if (t.get() != &root && bytes != 0) std::memcpy(t->recv, root.send, bytes);
          }
          break;
        }
        case Kind::kAllGather: {
          std::vector<std::byte> all(bytes * n);
          for (std::size_t r = 0; r < n && bytes != 0; ++r) std::memcpy(all.data() + r * bytes, tasks[r]->send, bytes);
          for (const std::shared_ptr<Task>& t : tasks) {
            if (!all.empty()) std::memcpy(t->recv, all.data(), all.size());
          }
          break;
        }
        case Kind::kReduceScatter: {
          std::vector<std::byte> sum(bytes * n);
          if (!sum.empty()) std::memcpy(sum.data(), tasks[0]->send, sum.size());
          for (std::size_t r = 1; r < n; ++r) {
            ReduceInto(first.type, sum.data(), tasks[r]->send, first.count * n, first.op);
          }
          for (std::size_t r = 0; r < n && bytes != 0; ++r) std::memcpy(tasks[r]->recv, sum.data() + r * bytes, bytes);
          break;
        }
        case Kind::kSend:
        case Kind::kRecv: break;  // paired, never in a round
      }
    } catch (const std::bad_alloc&) {
      return MakeError(ErrorCode::kResourceExhausted, "{} (loopback): out of host memory", first.Describe());
    }
    return Status();
  }

  const int size_;
  std::mutex mutex_;
  std::map<std::uint64_t, Round> rounds_;
  std::map<std::pair<int, int>, std::vector<std::shared_ptr<Task>>> pending_;  // (from, to * 2 + receive)
  Status aborted_;
};

class LoopbackTransport final : public Transport {
 public:
  explicit LoopbackTransport(std::shared_ptr<LoopbackState> state) : state_(std::move(state)) {}
  void Start(std::shared_ptr<Task> task) override { state_->Start(std::move(task)); }
  int size() const override { return state_->size(); }
  std::string_view name() const override { return "loopback"; }

 private:
  std::shared_ptr<LoopbackState> state_;
};

}  // namespace collectives_detail

class LoopbackGroup {
 public:
  explicit LoopbackGroup(int size)
      : state_(std::make_shared<collectives_detail::LoopbackState>(size > 0 ? size : 1)), requested_(size) {}

  int size() const { return state_->size(); }

  // Rank `rank` of the group, on `executor`. Each rank is joined once.
  template <Backend B>
  Communicator<B> Join(StreamExecutor<B>* executor, int rank) {
    if (requested_ <= 0) {
      return Communicator<B>(
          MakeError(ErrorCode::kInvalidArgument, "a loopback group of {} ranks: at least one is needed", requested_));
    }
    if (executor == nullptr) {
      return Communicator<B>(
          MakeError(ErrorCode::kInvalidArgument, "joining rank {} of a loopback group: no executor", rank));
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    if (rank < 0 || rank >= size()) {
      return Communicator<B>(
          MakeError(ErrorCode::kInvalidArgument, "joining rank {} of a loopback group of {} ranks", rank, size()));
    }
    if (joined_.size() < static_cast<std::size_t>(size())) joined_.resize(static_cast<std::size_t>(size()), false);
    if (joined_[static_cast<std::size_t>(rank)]) {
      return Communicator<B>(
          MakeError(ErrorCode::kAlreadyExists, "rank {} of a loopback group has joined already", rank));
    }
    joined_[static_cast<std::size_t>(rank)] = true;
    return Communicator<B>(executor, rank, std::make_shared<collectives_detail::LoopbackTransport>(state_));
  }

  // Completes every operation still waiting for another rank with `status`,
  // and every later one.
  void Abort(Status status) { state_->Abort(std::move(status)); }

 private:
  std::shared_ptr<collectives_detail::LoopbackState> state_;
  int requested_;
  std::mutex mutex_;
  std::vector<bool> joined_;
};

}  // namespace streamexecutor
