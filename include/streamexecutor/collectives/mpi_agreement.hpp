// MpiAgreement: the ranks' comparison of their calls over MPI, beside a
// transport whose own library cannot report a mismatch (NCCL over MPI:
// nccl_mpi.hpp).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/collectives/mpi.hpp"

namespace streamexecutor::collectives_detail {

// The ranks' comparison of their calls over MPI, for a transport whose own
// library cannot report a mismatch (NCCL). A collective compares the ranks'
// CallSignature with an all-reduce of 24 bytes; a send and its receive
// exchange what each side called. It blocks until the ranks involved have
// called, at most the timeout; a timed-out MPI request can never be
// completed, so its words are kept and the agreement fails from then on.
class MpiAgreement final : public Agreement {
 public:
  // Takes `own` (a duplicate: MpiDuplicate).
  MpiAgreement(MPI_Comm own, std::chrono::milliseconds timeout) : comm_(own), timeout_(timeout) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  MpiAgreement(const MpiAgreement&) = delete;
  MpiAgreement& operator=(const MpiAgreement&) = delete;
  ~MpiAgreement() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && abandoned_.empty()) MPI_Comm_free(&comm_);
  }

  Status Agree(const Task& t) override {
    if (!broken_.ok()) return broken_;
    const bool pair = t.kind == Kind::kSend || t.kind == Kind::kRecv;
    auto words = std::make_unique<Words>();
    const std::int64_t s = CallSignature(t);
    words->mine[0] = s;
    words->mine[1] = pair ? 0 : -s;
    words->mine[2] = t.poisoned ? 1 : 0;
    int posted = 0;
    int r = MPI_SUCCESS;
    if (!pair) {
      r = MPI_Iallreduce(words->mine, words->theirs, 3, MPI_INT64_T, MPI_MAX, comm_, &words->requests[posted++]);
    } else {
      r = MPI_Irecv(words->theirs, 3, MPI_INT64_T, t.peer, kTag, comm_, &words->requests[posted++]);
      if (r == MPI_SUCCESS) r = MPI_Isend(words->mine, 3, MPI_INT64_T, t.peer, kTag, comm_, &words->requests[posted++]);
    }
    if (r != MPI_SUCCESS) {
      // A request already posted still owns the words.
      if (posted > 1 || (posted == 1 && words->requests[0] != MPI_REQUEST_NULL)) abandoned_.push_back(std::move(words));
      return MakeError(ErrorCode::kInternal, "the ranks' check of {} (MPI) failed on rank {} of {}: {}", t.Describe(),
                       rank_, size_, MpiErrorText(r));
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      int done = 0;
      if (const int t_r = MPI_Testall(posted, words->requests, &done, MPI_STATUSES_IGNORE); t_r != MPI_SUCCESS) {
        broken_ = MakeError(ErrorCode::kInternal, "the ranks' check of {} (MPI) failed on rank {} of {}: {}",
                            t.Describe(), rank_, size_, MpiErrorText(t_r));
        abandoned_.push_back(std::move(words));
        return broken_;
      }
      if (done) break;
      if (std::chrono::steady_clock::now() > deadline) {
        const Status late = MakeError(
            ErrorCode::kDeadlineExceeded,
            "{} on rank {} of {}: the other {} did not call within {} s (a rank exited or is stuck; "
            "STREAMEXECUTOR_COLLECTIVE_TIMEOUT sets the limit)",
            t.Describe(), rank_, size_, pair ? "rank" : "ranks", static_cast<double>(timeout_.count()) / 1000.0);
        broken_ = MakeError(ErrorCode::kFailedPrecondition, "the communicator (rank {} of {}) failed earlier: {}",
                            rank_, size_, late.message());
        abandoned_.push_back(std::move(words));
        return late;
      }
      std::this_thread::yield();
    }
    if (!pair) return CompareCalls(t, words->mine, words->theirs, rank_, size_, "NCCL");
    return ComparePair(t, words->theirs);
  }

 private:
  struct Words {
    std::int64_t mine[3] = {0, 0, 0};
    std::int64_t theirs[3] = {0, 0, 0};
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  };

  Status ComparePair(const Task& t, const std::int64_t (&theirs)[3]) const {
    if (t.poisoned || theirs[2] != 0) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on rank {} of {}: {} could not take part (its stream had failed, or its call was "
                       "refused): that rank's Status says why",
                       t.Describe(), rank_, size_,
                       t.poisoned ? "this rank" : ::streamexecutor::detail::Format("rank {}", t.peer));
    }
    Task other;
    other.kind = static_cast<Kind>((theirs[0] >> 40) & 0xf);
    other.type = static_cast<ElementType>((theirs[0] >> 44) & 0xf);
    other.count = static_cast<std::uint64_t>(theirs[0]) & 0xffffffffffULL;
    other.peer = rank_;
    const bool matches = other.kind != t.kind && other.type == t.type && other.count == t.count;
    if (matches) return Status();
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on rank {} of {}: rank {} called {} (NCCL needs a {} of the same "
                     "type and count)",
                     t.Describe(), rank_, size_, t.peer, other.Describe(),
                     t.kind == Kind::kSend ? "ThenRecv" : "ThenSend");
  }

  static constexpr int kTag = 0x5f;
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 0;
  const std::chrono::milliseconds timeout_;
  Status broken_;
  std::vector<std::unique_ptr<Words>> abandoned_;  // MPI may still write them
};

}  // namespace streamexecutor::collectives_detail
