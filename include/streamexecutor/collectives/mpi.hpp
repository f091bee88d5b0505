// The MPI transport: a communicator made from an MPI_Comm, across processes
// and machines, with whatever MPI brings (shared memory, TCP, UCX,
// InfiniBand). Only the MPI standard's API is used, so MPICH and Open MPI
// both work.
//
//   int provided = 0;
//   MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
//   se::Communicator<se::host> comm = se::MpiCommunicator(executor, MPI_COMM_WORLD);
//   stream.ThenAllReduce(comm, gradient.cref(), &sum, se::ReduceOp::kSum);
//
// One progress thread per communicator makes every MPI call on the
// communicator's own duplicate of the MPI_Comm (MPI_Comm_dup: its messages
// never meet the program's). It posts each operation as a nonblocking MPI
// call (MPI_Iallreduce, MPI_Ibcast, ...) in the order the rank issued them,
// as MPI requires of collectives, and completes it when MPI_Test says so. So
// no thread of the backend's pool waits on MPI, and MPI must allow calls from
// several threads (MPI_THREAD_MULTIPLE).
//
// Before each collective the ranks compare what they called (kind, element
// type, count, reduction, root) with an MPI_Iallreduce of 24 bytes: a
// mismatch is an INVALID_ARGUMENT on every rank, not a hang or a corrupted
// buffer. MPI has no timeout of its own: an operation that has not completed
// after the communicator's timeout (STREAMEXECUTOR_COLLECTIVE_TIMEOUT, in
// seconds, default 300) fails with DEADLINE_EXCEEDED, and the communicator
// with it (MPI cannot cancel a collective, so its buffers stay MPI's).
#pragma once

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/collectives/communicator.hpp"

namespace streamexecutor {

namespace collectives_detail {

inline std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

inline MPI_Datatype MpiType(ElementType type) {
  switch (type) {
    case ElementType::kInt8: return MPI_INT8_T;
    case ElementType::kUint8: return MPI_UINT8_T;
    case ElementType::kInt32: return MPI_INT32_T;
    case ElementType::kUint32: return MPI_UINT32_T;
    case ElementType::kInt64: return MPI_INT64_T;
    case ElementType::kUint64: return MPI_UINT64_T;
    case ElementType::kFloat: return MPI_FLOAT;
    default: return MPI_DOUBLE;
  }
}

inline MPI_Op MpiOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    default: return MPI_MAX;
  }
}

// MPI is initialized with MPI_THREAD_MULTIPLE and not finalized.
inline Status MpiReady() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "an MPI communicator needs MPI initialized (MPI_Init_thread) and not yet finalized");
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "an MPI communicator needs MPI_THREAD_MULTIPLE (its progress thread calls MPI beside the "
                     "program's threads); MPI was initialized with thread level {}: call MPI_Init_thread(&argc, "
                     "&argv, MPI_THREAD_MULTIPLE, &provided)",
                     provided);
  }
  return Status();
}

// A duplicate of the program's `comm`, whose messages never meet the
// program's, with errors returned rather than fatal.
inline Status MpiDuplicate(MPI_Comm comm, MPI_Comm* own) {
  STREAMEXECUTOR_RETURN_IF_ERROR(MpiReady());
  if (const int r = MPI_Comm_dup(comm, own); r != MPI_SUCCESS) {
    return MakeError(ErrorCode::kInternal, "MPI_Comm_dup failed: {}", MpiErrorText(r));
  }
  MPI_Comm_set_errhandler(*own, MPI_ERRORS_RETURN);
  return Status();
}

class MpiTransport final : public Transport {
 public:
  // `comm` is the program's; ours is a duplicate of it.
  static StatusOr<std::shared_ptr<MpiTransport>> Make(MPI_Comm comm) {
    MPI_Comm own = MPI_COMM_NULL;
    STREAMEXECUTOR_RETURN_IF_ERROR(MpiDuplicate(comm, &own));
    int rank = 0, size = 0;
    MPI_Comm_rank(own, &rank);
    MPI_Comm_size(own, &size);
    const std::chrono::milliseconds timeout = CollectiveTimeout();
    const bool checked = CollectiveCheckEnabled();
    try {
      return std::make_shared<MpiTransport>(own, rank, size, timeout, checked);
    } catch (...) {
      MPI_Comm_free(&own);
      return MakeError(ErrorCode::kResourceExhausted, "an MPI communicator: out of memory or threads");
    }
  }

  MpiTransport(MPI_Comm own, int rank, int size, std::chrono::milliseconds timeout, bool checked)
      : comm_(own), rank_(rank), size_(size), timeout_(timeout), checked_(checked), thread_([this] { Progress(); }) {}
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;
  ~MpiTransport() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && abandoned_.empty()) MPI_Comm_free(&comm_);  // a request still in MPI's hands keeps it
  }

  void Start(std::shared_ptr<Task> task) override { Ready(std::move(task), std::numeric_limits<std::uint32_t>::max()); }
  void StartPiece(std::shared_ptr<Task> task, std::uint32_t piece) override { Ready(std::move(task), piece); }
  int size() const override { return size_; }
  int rank() const { return rank_; }
  std::string_view name() const override { return "MPI"; }

 private:
  // A task some of whose pieces are in place, by sequence.
  struct Entry {
    std::shared_ptr<Task> task;
    std::uint32_t ready = 0;  // its first `ready` pieces
  };

  // One operation in MPI's hands: first the check of what every rank
  // called, then one request per piece, posted in order as they are ready.
  struct Active {
    std::shared_ptr<Task> task;
    MPI_Request check = MPI_REQUEST_NULL;
    bool checking = false;
    bool agreed = false;   // checked (or not to be): its pieces may be posted
    bool probing = false;  // a receive waiting for its message (MPI_Improbe)
    std::vector<MPI_Request> requests;
    std::uint32_t ready = 0, posted = 0, done = 0;
    // This rank's CallSignature s as (s, -s, poisoned), and the maximum over the ranks.
    std::int64_t signature[3] = {0, 0, 0};
    std::int64_t agreed_words[3] = {0, 0, 0};
    std::chrono::steady_clock::time_point deadline;
  };

  // Called from a marker's notification (noexcept): a failure to record the
  // task fails it here, and the other ranks wait for their timeout.
  void Ready(std::shared_ptr<Task> task, std::uint32_t piece) noexcept {
    try {
      const std::lock_guard<std::mutex> lock(mutex_);
      const std::uint64_t sequence = task->sequence;
      const std::uint32_t pieces = task->pieces;
      if (sequence < next_) return;  // a piece of a task that already ended (it failed)
      Entry& entry = ready_[sequence];
      if (entry.task == nullptr) entry.task = task;
      entry.ready = std::max(entry.ready, piece >= pieces ? pieces : piece + 1);
    } catch (const std::bad_alloc&) {
      task->Complete(MakeError(ErrorCode::kResourceExhausted, "{} on rank {} of {} (MPI): out of host memory",
                               task->Describe(), rank_, size_));
      return;
    }
    wake_.notify_one();
  }

  // Posts piece `piece` of `a` (the whole operation where it has one piece).
  Status Post(Active& a, std::uint32_t piece) {
    Task& t = *a.task;
    const MPI_Datatype type = MpiType(t.type);
    const std::uint64_t offset = t.PieceOffset(piece), elements = t.PieceElements(piece);
    if (elements > std::uint64_t{0x7fffffff}) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on rank {} of {} (MPI): more than 2^31-1 elements per call",
                       t.Describe(), rank_, size_);
    }
    const int n = static_cast<int>(elements);
    const std::uint64_t skip = offset * ElementSize(t.type);
    const bool in_place = t.send == t.recv;
    const void* send = t.send != nullptr ? static_cast<const std::byte*>(t.send) + skip : nullptr;
    void* recv = t.recv != nullptr ? static_cast<std::byte*>(t.recv) + skip : nullptr;
    MPI_Request* request = &a.requests[piece];
    int r = MPI_SUCCESS;
    const char* call = "";
    switch (t.kind) {
      case Kind::kAllReduce:
        call = "MPI_Iallreduce";
        r = MPI_Iallreduce(in_place ? MPI_IN_PLACE : send, recv, n, type, MpiOp(t.op), comm_, request);
        break;
      case Kind::kBroadcast:
        call = "MPI_Ibcast";
        r = MPI_Ibcast(recv, n, type, t.peer, comm_, request);
        break;
      case Kind::kReduce: {
        call = "MPI_Ireduce";
        const bool root = t.peer == rank_;
        r = MPI_Ireduce(root && in_place ? MPI_IN_PLACE : send, recv, n, type, MpiOp(t.op), t.peer, comm_, request);
        break;
      }
      case Kind::kAllGather:
        call = "MPI_Iallgather";
        r = MPI_Iallgather(send, n, type, recv, n, type, comm_, request);
        break;
      case Kind::kReduceScatter:
        call = "MPI_Ireduce_scatter_block";
        r = MPI_Ireduce_scatter_block(send, recv, n, type, MpiOp(t.op), comm_, request);
        break;
      case Kind::kSend:
        call = "MPI_Isend";
        r = MPI_Isend(send, n, type, t.peer, kTag, comm_, request);
        break;
      case Kind::kRecv:
        // Matched first (Receive), so that a message of another size is
        // reported, not truncated: MPICH aborts the process on a truncated
        // receive whatever the communicator's error handler.
        a.probing = true;
        break;
    }
    if (r != MPI_SUCCESS) {
      return MakeError(ErrorCode::kInternal, "{} failed for {} on rank {} of {}: {}", call, t.Describe(), rank_, size_,
                       MpiErrorText(r));
    }
    return Status();
  }

  Status PostCheck(Active& a) {
    a.checking = true;
    const std::int64_t s = CallSignature(*a.task);
    a.signature[0] = s;
    a.signature[1] = -s;
    a.signature[2] = a.task->poisoned ? 1 : 0;
    if (const int r = MPI_Iallreduce(a.signature, a.agreed_words, 3, MPI_INT64_T, MPI_MAX, comm_, &a.check);
        r != MPI_SUCCESS) {
      return MakeError(ErrorCode::kInternal, "MPI_Iallreduce (the ranks' check of {}) failed on rank {} of {}: {}",
                       a.task->Describe(), rank_, size_, MpiErrorText(r));
    }
    return Status();
  }

  // A receive's message, once it has come: into the buffer when its size is
  // the receive's, else drained into scratch memory and reported. Returns
  // true when the task is done.
  bool Receive(Active& a, Status& result) {
    Task& t = *a.task;
    int flag = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status{};
    if (const int r = MPI_Improbe(t.peer, kTag, comm_, &flag, &message, &status); r != MPI_SUCCESS) {
      result = MakeError(ErrorCode::kInternal, "MPI_Improbe for {} on rank {} of {}: {}", t.Describe(), rank_, size_,
                         MpiErrorText(r));
      return true;
    }
    if (!flag) return false;
    a.probing = false;
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    const MPI_Datatype type = MpiType(t.type);
    if (static_cast<std::uint64_t>(bytes) != t.SendBytes()) {
      std::vector<std::byte> scratch(static_cast<std::size_t>(bytes));
      MPI_Mrecv(scratch.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      result = MakeError(ErrorCode::kInvalidArgument, "{} on rank {} of {}: rank {} sent {} elements", t.Describe(),
                         rank_, size_, t.peer, static_cast<std::uint64_t>(bytes) / ElementSize(t.type));
      return true;
    }
    if (const int r = MPI_Imrecv(t.recv, static_cast<int>(t.count), type, &message, &a.requests[0]); r != MPI_SUCCESS) {
      result = MakeError(ErrorCode::kInternal, "MPI_Imrecv for {} on rank {} of {}: {}", t.Describe(), rank_, size_,
                         MpiErrorText(r));
      return true;
    }
    return false;
  }

  // Moves `a` on as far as MPI lets it; true when it is done (`result` then
  // says how).
  bool Advance(Active& a, Status& result) {
    if (a.checking) {
      int flag = 0;
      if (const int r = MPI_Test(&a.check, &flag, MPI_STATUS_IGNORE); r != MPI_SUCCESS) {
        result = MakeError(ErrorCode::kInternal, "MPI_Test for the ranks' check of {} on rank {} of {}: {}",
                           a.task->Describe(), rank_, size_, MpiErrorText(r));
        return true;
      }
      if (!flag) return false;
      a.checking = false;
      result = CompareCalls(*a.task, a.signature, a.agreed_words, rank_, size_, "MPI");
      if (!result.ok()) return true;
      a.agreed = true;
    }
    if (a.probing) {
      if (Receive(a, result)) return true;
      if (a.probing) return false;  // its message has not come yet
    }
    for (std::uint32_t piece = a.done; piece < a.posted; ++piece) {
      int flag = 0;
      if (const int r = MPI_Test(&a.requests[piece], &flag, MPI_STATUS_IGNORE); r != MPI_SUCCESS) {
        result = MakeError(ErrorCode::kInternal, "MPI_Test for {} on rank {} of {}: {}", a.task->Describe(), rank_,
                           size_, MpiErrorText(r));
        return true;
      }
      if (!flag) break;  // MPI completes them in order
      ++a.done;
      // Its copy back may start; the last piece's wait is lifted with the
      // task's Status (Complete), which the stream reads after it.
      if (a.done < a.task->pieces) a.task->Deliver(piece);
    }
    return a.agreed && a.done == a.task->pieces;
  }

  void Progress() {
    // Owned one by one: MPI writes into each, wherever the vector moves.
    std::vector<std::unique_ptr<Active>> active;
    Active* posting = nullptr;  // the task at next_, while its pieces are posted
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (active.empty()) {
        wake_.wait(lock, [&] { return stop_ || ready_.count(next_) != 0; });
        if (stop_ && ready_.count(next_) == 0) break;
      }
      // What is ready, in the rank's order: a new task at `next`, or more
      // pieces of the one being posted.
      std::shared_ptr<Task> taken;
      std::uint32_t ready = 0;
      if (auto it = ready_.find(next_); it != ready_.end()) {
        ready = it->second.ready;
        if (posting == nullptr) taken = it->second.task;
      }
      const bool stopping = stop_;
      lock.unlock();
      std::vector<std::pair<std::shared_ptr<Task>, Status>> finished;
      bool advanced = false;  // the task at next_ is fully posted, or finished
      if (taken != nullptr) {
        const bool collective = taken->kind != Kind::kSend && taken->kind != Kind::kRecv;
        Status refused;
        if (!broken_.ok()) {
          refused = broken_;
        } else if (taken->poisoned && !(collective && checked_)) {
          // Nothing to tell the other ranks with: they wait for their timeout.
          refused = MakeError(ErrorCode::kFailedPrecondition, "this rank could not take part");
        }
        auto a = std::make_unique<Active>();
        a->task = taken;
        a->requests.assign(taken->pieces, MPI_REQUEST_NULL);
        a->deadline = std::chrono::steady_clock::now() + timeout_;
        if (refused.ok() && collective && checked_) {
          refused = PostCheck(*a);
        } else if (refused.ok()) {
          a->agreed = true;
        }
        if (!refused.ok()) {
          finished.emplace_back(std::move(taken), std::move(refused));
          advanced = true;
        } else {
          posting = a.get();
          active.push_back(std::move(a));
        }
      }
      if (posting != nullptr) {
        posting->ready = std::max(posting->ready, ready);
        while (posting->agreed && posting->posted < posting->ready) {
          if (Status s = Post(*posting, posting->posted); !s.ok()) {
            // Pieces already posted stay MPI's, and the ranks no longer
            // post alike: the communicator cannot go on.
            broken_ = MakeError(ErrorCode::kFailedPrecondition,
                                "the MPI communicator (rank {} of {}) failed earlier: {}", rank_, size_, s.message());
            posting->posted = posting->task->pieces;
            posting->done = posting->task->pieces;
            posting->agreed = true;
            posting->task->status = s;
            break;
          }
          ++posting->posted;
        }
        if (posting->agreed && posting->posted == posting->task->pieces) {
          posting = nullptr;
          advanced = true;
        }
      }
      for (std::size_t i = 0; i < active.size();) {
        Active& a = *active[i];
        Status result = a.task->status;  // a failure of Post above
        bool done = !result.ok() || Advance(a, result);
        if (!done && std::chrono::steady_clock::now() > a.deadline) {
          result = MakeError(ErrorCode::kDeadlineExceeded,
                             "{} on rank {} of {} (MPI): not complete after {} s (a rank exited or is stuck, or the "
                             "ranks issued different operations; STREAMEXECUTOR_COLLECTIVE_TIMEOUT sets the limit)",
                             a.task->Describe(), rank_, size_, static_cast<double>(timeout_.count()) / 1000.0);
          broken_ = MakeError(ErrorCode::kFailedPrecondition, "the MPI communicator (rank {} of {}) failed earlier: {}",
                              rank_, size_, result.message());
          done = true;
        }
        if (!done) {
          ++i;
          continue;
        }
        if (posting == &a) {  // failed before all its pieces were posted
          posting = nullptr;
          advanced = true;
        }
        finished.emplace_back(a.task, std::move(result));
        // A request MPI still holds (a timed-out or failed operation) keeps
        // its words and buffers: never freed.
        bool held = a.check != MPI_REQUEST_NULL;
        for (MPI_Request request : a.requests) held = held || request != MPI_REQUEST_NULL;
        if (held) abandoned_.push_back(std::move(active[i]));
        active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
      }
      for (auto& [task, status] : finished) task->Complete(std::move(status));
      if (!active.empty()) std::this_thread::yield();
      lock.lock();
      if (advanced) {
        ready_.erase(next_);
        ++next_;
      }
      if (stopping && active.empty() && ready_.count(next_) == 0) break;
    }
  }

  static constexpr int kTag = 0x5e;
  MPI_Comm comm_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const bool checked_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::uint64_t, Entry> ready_;  // by sequence
  std::uint64_t next_ = 0;                // the sequence to post next
  bool stop_ = false;
  // The progress thread's own.
  Status broken_;
  std::vector<std::unique_ptr<Active>> abandoned_;  // timed out: never freed, MPI may still use them
  std::thread thread_;                              // last: starts once everything above is built
};

// A backend whose device library has collectives of its own, bootstrapped
// over MPI, specialises this (nccl_mpi.hpp: NCCL on CUDA) with
//   static Status Usable(StreamExecutor<B>*);
//   static Communicator<B> Make(StreamExecutor<B>*, MPI_Comm);
template <Backend B>
struct NativeCollectives {};

}  // namespace collectives_detail

// Rank MPI_Comm_rank(comm) of a communicator over `comm`, on `executor`.
template <Backend B>
Communicator<B> MpiCommunicator(StreamExecutor<B>* executor, MPI_Comm comm) {
  if (executor == nullptr)
    return Communicator<B>(MakeError(ErrorCode::kInvalidArgument, "MpiCommunicator: no executor"));
  StatusOr<std::shared_ptr<collectives_detail::MpiTransport>> transport = collectives_detail::MpiTransport::Make(comm);
  if (!transport.ok()) return Communicator<B>(transport.status());
  const int rank = transport.value()->rank();
  return Communicator<B>(executor, rank, std::move(transport).value());
}

// The communicator a program wants on `executor`: the device library's own
// collectives where every rank of `comm` can use them (NCCL, where every rank
// is a CUDA executor and NCCL loads), else MPI, through pinned staging where
// device memory is not host memory. Every rank of `comm` calls it.
template <Backend B>
Communicator<B> MakeCommunicator(StreamExecutor<B>* executor, MPI_Comm comm) {
  if (Status s = collectives_detail::MpiReady(); !s.ok()) return Communicator<B>(std::move(s));
  constexpr bool kNative = requires(StreamExecutor<B>* e) { collectives_detail::NativeCollectives<B>::Usable(e); };
  int mine = 0;
  if constexpr (kNative) mine = executor != nullptr && collectives_detail::NativeCollectives<B>::Usable(executor).ok();
  int all = 0;
  if (const int r = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm); r != MPI_SUCCESS) {
    return Communicator<B>(MakeError(ErrorCode::kInternal, "MakeCommunicator: MPI_Allreduce failed: {}",
                                     collectives_detail::MpiErrorText(r)));
  }
  if constexpr (kNative) {
    if (all != 0) return collectives_detail::NativeCollectives<B>::Make(executor, comm);
  }
  return MpiCommunicator(executor, comm);
}

}  // namespace streamexecutor
