// Collectives on CUDA streams through NCCL (nccl_loader.hpp: loaded at run
// time). The operation is queued on the stream's CUstream itself, on the
// device buffers: no staging, no host hand-off, and later work on the stream
// sees the result as it sees a kernel's.
//
//   ncclUniqueId id = ...;  // se::NcclUniqueId() on one rank, given to the others
//   se::Communicator<se::cuda> comm = se::NcclCommunicator(executor, id, rank, size);
//   stream.ThenAllReduce(comm, gradient.cref(), &sum, se::ReduceOp::kSum);
//
// or, bootstrapped over MPI, se::NcclCommunicator(executor, MPI_COMM_WORLD)
// (nccl_mpi.hpp), which also compares the ranks' calls before each one.
//
// NCCL reports a failure that happens on the device (a peer gone, a
// network error) only when asked (ncclCommGetAsyncError), and an operation
// whose peers never come never ends. So each communicator has a watcher
// thread: it records an event after each operation, polls the events and
// NCCL's asynchronous error while operations are in flight, and on an error
// or after the timeout (STREAMEXECUTOR_COLLECTIVE_TIMEOUT, 300 s) sets the
// operations' Status and aborts the communicator (ncclCommAbort), which ends
// the kernels. The host callback queued after each operation returns that
// Status, so the stream fails instead of going on with a wrong result.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/collectives/communicator.hpp"
#include "streamexecutor/collectives/nccl_loader.hpp"
#include "streamexecutor/cuda/backend.hpp"

namespace streamexecutor {

namespace collectives_detail {

class NcclTransport final : public StreamTransport<cuda> {
 public:
  // Rank `rank` of `size` of the NCCL communicator `id` names, on `executor`'s
  // device. Blocks until every rank has called it (ncclCommInitRank).
  static StatusOr<std::shared_ptr<NcclTransport>> Make(StreamExecutor<cuda>* executor, const ncclUniqueId& id, int rank,
                                                       int size, std::shared_ptr<Agreement> agreement) {
    const canned_detail::Loaded<NcclApi>& nccl = Nccl();
    if (!nccl.status.ok()) return nccl.status;
    if (size < 1 || rank < 0 || rank >= size) {
      return MakeError(ErrorCode::kInvalidArgument, "NcclCommunicator: rank {} of {} does not exist", rank, size);
    }
    const cuda::ExecutorState& state = executor->native_state();
    const cuda_detail::ContextScope scope(*state.api, state.context);
    if (!scope.ok()) return scope.status();
    ncclComm_t comm = nullptr;
    if (const ncclResult_t r = nccl.api.ncclCommInitRank(&comm, size, id, rank); r != ncclSuccess) {
      return NcclError(nccl.api, r, "ncclCommInitRank", nullptr,
                       ::streamexecutor::detail::Format("rank {} of {} on {}", rank, size, executor->DeviceLabel()));
    }
    try {
      return std::make_shared<NcclTransport>(nccl.api, executor, comm, rank, size, std::move(agreement));
    } catch (...) {
      nccl.api.ncclCommDestroy(comm);
      return MakeError(ErrorCode::kResourceExhausted, "NcclCommunicator: out of memory or threads");
    }
  }

  NcclTransport(const NcclApi& api, StreamExecutor<cuda>* executor, ncclComm_t comm, int rank, int size,
                std::shared_ptr<Agreement> agreement)
      : api_(api),
        driver_(*executor->native_state().api),
        context_(executor->native_state().context),
        device_(executor->DeviceLabel()),
        comm_(comm),
        rank_(rank),
        size_(size),
        timeout_(CollectiveTimeout()),
        agreement_(std::move(agreement)),
        watcher_([this] { Watch(); }) {}
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  // Waits for the operations in flight (at most the timeout: then they are
  // aborted), then destroys the NCCL communicator.
  ~NcclTransport() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    watcher_.join();
    const cuda_detail::ContextScope scope(driver_, context_);
    if (!aborted_) api_.ncclCommDestroy(comm_);
    for (CUevent event : free_events_) driver_.cuEventDestroy(event);
    for (const InFlight& f : abandoned_) driver_.cuEventDestroy(f.done);  // left by an abort
  }

  // A turn without data (TakePartFailed): the agreement tells the other
  // ranks; without one there is nobody to tell, and their operation ends at
  // the timeout.
  void Start(std::shared_ptr<Task> task) override {
    const std::lock_guard<std::mutex> order(order_);
    Status status = agreement_ != nullptr ? agreement_->Agree(*task) : Status();
    if (status.ok()) status = MakeError(ErrorCode::kFailedPrecondition, "this rank could not take part");
    task->Complete(std::move(status));
  }

  Status Enqueue(cuda::StreamHandle& stream, const Task& task, const DeviceMemoryBase* send, DeviceMemoryBase* recv,
                 std::shared_ptr<Outcome>* outcome) override {
    // The ranks' order is the order of these calls: the agreement and the
    // NCCL call of one operation are not interleaved with another's.
    const std::lock_guard<std::mutex> order(order_);
    if (agreement_ != nullptr) STREAMEXECUTOR_RETURN_IF_ERROR(agreement_->Agree(task));
    auto made = std::make_shared<Outcome>();
    const std::lock_guard<std::mutex> lock(mutex_);  // the watcher may abort comm_: not during a call on it
    if (!broken_.ok()) return broken_;
    const cuda_detail::ContextScope scope(driver_, context_);
    if (!scope.ok()) return scope.status();
    const auto address = [](const DeviceMemoryBase* memory) -> void* {
      return memory != nullptr ? reinterpret_cast<void*>(static_cast<std::uintptr_t>(cuda::Address(*memory))) : nullptr;
    };
    void* const in = address(send);
    void* const out = address(recv);
    const auto count = static_cast<std::size_t>(task.count);
    const ncclDataType_t type = NcclType(task.type);
    const ncclRedOp_t op = NcclOp(task.op);
    CUstream const queue = stream->stream;
    ncclResult_t r = ncclSuccess;
    const char* call = "";
    switch (task.kind) {
      case Kind::kAllReduce:
        call = "ncclAllReduce";
        r = api_.ncclAllReduce(in, out, count, type, op, comm_, queue);
        break;
      case Kind::kBroadcast:
        call = "ncclBroadcast";
        r = api_.ncclBroadcast(out, out, count, type, task.peer, comm_, queue);
        break;
      case Kind::kReduce:
        call = "ncclReduce";
        r = api_.ncclReduce(in, task.peer == rank_ ? out : nullptr, count, type, op, task.peer, comm_, queue);
        break;
      case Kind::kAllGather:
        call = "ncclAllGather";
        r = api_.ncclAllGather(in, out, count, type, comm_, queue);
        break;
      case Kind::kReduceScatter:
        call = "ncclReduceScatter";
        r = api_.ncclReduceScatter(in, out, count, type, op, comm_, queue);
        break;
      case Kind::kSend:
        call = "ncclSend";
        r = api_.ncclSend(in, count, type, task.peer, comm_, queue);
        break;
      case Kind::kRecv:
        call = "ncclRecv";
        r = api_.ncclRecv(out, count, type, task.peer, comm_, queue);
        break;
    }
    if (r != ncclSuccess) return NcclError(api_, r, call, comm_, Where(task));
    CUevent done = nullptr;
    if (!free_events_.empty()) {
      done = free_events_.back();
      free_events_.pop_back();
    } else if (const CUresult e = driver_.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING); e != CUDA_SUCCESS) {
      return driver_.Error(e, "cuEventCreate", "to watch {} (it was queued)", Where(task));
    }
    if (const CUresult e = driver_.cuEventRecord(done, queue); e != CUDA_SUCCESS) {
      free_events_.push_back(done);
      return driver_.Error(e, "cuEventRecord", "to watch {} (it was queued)", Where(task));
    }
    in_flight_.push_back(InFlight{done, made, Where(task), std::chrono::steady_clock::now() + timeout_});
    wake_.notify_one();
    *outcome = std::move(made);
    return Status();
  }

  int size() const override { return size_; }
  std::string_view name() const override { return "NCCL"; }

 private:
  struct InFlight {
    CUevent done;
    std::shared_ptr<Outcome> outcome;
    std::string what;
    std::chrono::steady_clock::time_point deadline;
  };

  std::string Where(const Task& task) const {
    return ::streamexecutor::detail::Format("{} on rank {} of {} (NCCL, {})", task.Describe(), rank_, size_, device_);
  }

  void Watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !in_flight_.empty(); });
      if (in_flight_.empty()) break;  // stopping, nothing left to watch
      Poll();
      if (in_flight_.empty()) continue;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      lock.lock();
    }
  }

  // Under mutex_: retires the operations that are done; on NCCL's
  // asynchronous error, a failed event or an operation past its deadline,
  // fails every operation in flight and aborts the communicator.
  void Poll() {
    const cuda_detail::ContextScope scope(driver_, context_);
    Status failure = scope.ok() ? Status() : scope.status();
    const auto now = std::chrono::steady_clock::now();
    // First NCCL's own word: an operation that ended after its peer failed
    // may have ended without its data.
    if (failure.ok()) {
      ncclResult_t async = ncclSuccess;
      const ncclResult_t r = api_.ncclCommGetAsyncError(comm_, &async);
      if (r != ncclSuccess) {
        failure = NcclError(api_, r, "ncclCommGetAsyncError", comm_, in_flight_.front().what);
      } else if (async != ncclSuccess && async != ncclInProgress) {
        failure =
            NcclError(api_, async, "an operation in flight (ncclCommGetAsyncError)", comm_, in_flight_.front().what);
      }
    }
    for (std::size_t i = 0; i < in_flight_.size() && failure.ok();) {
      const CUresult r = driver_.cuEventQuery(in_flight_[i].done);
      if (r == CUDA_SUCCESS) {
        free_events_.push_back(in_flight_[i].done);
        in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (r != CUDA_ERROR_NOT_READY) {
        failure = driver_.Error(r, "cuEventQuery", "watching {}", in_flight_[i].what);
      } else if (now > in_flight_[i].deadline) {
        failure = MakeError(ErrorCode::kDeadlineExceeded,
                            "{}: not complete after {} s (a rank exited or is stuck, or the ranks issued different "
                            "operations; STREAMEXECUTOR_COLLECTIVE_TIMEOUT sets the limit); the communicator was "
                            "aborted (ncclCommAbort)",
                            in_flight_[i].what, static_cast<double>(timeout_.count()) / 1000.0);
      }
      ++i;
    }
    if (failure.ok()) return;
    broken_ = MakeError(ErrorCode::kFailedPrecondition, "the NCCL communicator (rank {} of {}) failed earlier: {}",
                        rank_, size_, failure.message());
    for (const InFlight& f : in_flight_) f.outcome->Fail(failure);
    // Its kernels end; the events stay until the destructor (they may still be pending).
    api_.ncclCommAbort(comm_);
    aborted_ = true;
    abandoned_.insert(abandoned_.end(), in_flight_.begin(), in_flight_.end());
    in_flight_.clear();
  }

  const NcclApi& api_;
  const cuda_detail::DriverApi& driver_;
  CUcontext context_;
  std::string device_;
  ncclComm_t comm_;
  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<Agreement> agreement_;
  std::mutex order_;  // one operation's agreement and NCCL call at a time
  std::mutex mutex_;  // what follows, shared with the watcher
  std::condition_variable wake_;
  std::vector<InFlight> in_flight_;
  std::vector<InFlight> abandoned_;
  std::vector<CUevent> free_events_;
  Status broken_;
  bool aborted_ = false;
  bool stop_ = false;
  std::thread watcher_;  // last: starts once everything above is built
};

}  // namespace collectives_detail

// A new NCCL unique id (ncclGetUniqueId), made on one rank and given to the
// others (by MPI, a file, a socket) before they call NcclCommunicator.
inline StatusOr<ncclUniqueId> NcclUniqueId() {
  const canned_detail::Loaded<collectives_detail::NcclApi>& nccl = collectives_detail::Nccl();
  if (!nccl.status.ok()) return nccl.status;
  ncclUniqueId id{};
  if (const ncclResult_t r = nccl.api.ncclGetUniqueId(&id); r != ncclSuccess) {
    return collectives_detail::NcclError(nccl.api, r, "ncclGetUniqueId", nullptr, "a new communicator");
  }
  return id;
}

// Rank `rank` of the `size` ranks of the NCCL communicator `id`, on
// `executor`'s device; every rank calls it (it blocks until all have).
// Without an MPI bootstrap nothing compares the ranks' calls: a mismatch
// ends at the timeout (DEADLINE_EXCEEDED) where NCCL cannot tell.
inline Communicator<cuda> NcclCommunicator(StreamExecutor<cuda>* executor, const ncclUniqueId& id, int rank, int size) {
  if (executor == nullptr) {
    return Communicator<cuda>(MakeError(ErrorCode::kInvalidArgument, "NcclCommunicator: no executor"));
  }
  StatusOr<std::shared_ptr<collectives_detail::NcclTransport>> transport =
      collectives_detail::NcclTransport::Make(executor, id, rank, size, nullptr);
  if (!transport.ok()) return Communicator<cuda>(transport.status());
  return Communicator<cuda>(executor, rank,
                            std::shared_ptr<collectives_detail::StreamTransport<cuda>>(std::move(transport).value()));
}

}  // namespace streamexecutor
