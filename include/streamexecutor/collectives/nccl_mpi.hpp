// NCCL bootstrapped over MPI: rank 0 makes the NCCL id and broadcasts it,
// and the MPI communicator then compares the ranks' calls before each NCCL
// operation (MpiAgreement), which NCCL itself cannot: a mismatch is an
// INVALID_ARGUMENT on every rank, not kernels that wait for ever.
//
//   se::Communicator<se::cuda> comm = se::NcclCommunicator(executor, MPI_COMM_WORLD);
//
// STREAMEXECUTOR_COLLECTIVE_CHECK=0 leaves the comparison out: each
// operation is then queued without waiting for the other ranks' calls.
#pragma once

#include <mpi.h>

#include <memory>
#include <utility>

#include "streamexecutor/collectives/cuda.hpp"
#include "streamexecutor/collectives/mpi.hpp"
#include "streamexecutor/collectives/mpi_agreement.hpp"

namespace streamexecutor {

// Every rank of `comm` calls it, each on its own CUDA executor.
inline Communicator<cuda> NcclCommunicator(StreamExecutor<cuda>* executor, MPI_Comm comm) {
  namespace cd = collectives_detail;
  MPI_Comm own = MPI_COMM_NULL;
  if (Status s = cd::MpiDuplicate(comm, &own); !s.ok()) return Communicator<cuda>(std::move(s));
  const auto fail = [&](Status s) {
    MPI_Comm_free(&own);
    return Communicator<cuda>(std::move(s));
  };
  int rank = 0, size = 0;
  MPI_Comm_rank(own, &rank);
  MPI_Comm_size(own, &size);
  // Every rank says first whether it can take part, so that none waits in
  // ncclCommInitRank for a rank that never comes.
  const Status usable =
      executor == nullptr ? MakeError(ErrorCode::kInvalidArgument, "NcclCommunicator: no executor") : cd::Nccl().status;
  int mine = usable.ok() ? 1 : 0;
  int all = 0;
  if (const int r = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, own); r != MPI_SUCCESS) {
    return fail(MakeError(ErrorCode::kInternal, "NcclCommunicator: MPI_Allreduce failed: {}", cd::MpiErrorText(r)));
  }
  if (!usable.ok()) return fail(usable);
  if (all == 0) {
    return fail(MakeError(ErrorCode::kUnavailable,
                          "NcclCommunicator (rank {} of {}): another rank cannot use NCCL (its Status says why)", rank,
                          size));
  }
  // Rank 0's id, and whether it could make one, to every rank.
  struct Packet {
    ncclUniqueId id;
    int ok;
  } packet{};
  Status made;
  if (rank == 0) {
    StatusOr<ncclUniqueId> id = NcclUniqueId();
    packet.ok = id.ok() ? 1 : 0;
    if (id.ok()) packet.id = id.value();
    made = id.status();
  }
  if (const int r = MPI_Bcast(&packet, sizeof(Packet), MPI_BYTE, 0, own); r != MPI_SUCCESS) {
    return fail(
        MakeError(ErrorCode::kInternal, "NcclCommunicator: MPI_Bcast of the NCCL id failed: {}", cd::MpiErrorText(r)));
  }
  if (packet.ok == 0) {
    return fail(rank == 0
                    ? made
                    : MakeError(ErrorCode::kUnavailable,
                                "NcclCommunicator (rank {} of {}): rank 0 could not make an NCCL id", rank, size));
  }
  std::shared_ptr<cd::Agreement> agreement;
  if (cd::CollectiveCheckEnabled()) {
    try {
      agreement = std::make_shared<cd::MpiAgreement>(own, cd::CollectiveTimeout());
    } catch (...) {
      return fail(MakeError(ErrorCode::kResourceExhausted, "NcclCommunicator: out of memory"));
    }
  } else {
    MPI_Comm_free(&own);
  }
  StatusOr<std::shared_ptr<cd::NcclTransport>> transport =
      cd::NcclTransport::Make(executor, packet.id, rank, size, std::move(agreement));
  if (!transport.ok()) return Communicator<cuda>(transport.status());
  return Communicator<cuda>(executor, rank, std::shared_ptr<cd::StreamTransport<cuda>>(std::move(transport).value()));
}

namespace collectives_detail {

template <>
struct NativeCollectives<cuda> {
  static Status Usable(StreamExecutor<cuda>*) { return Nccl().status; }
  static Communicator<cuda> Make(StreamExecutor<cuda>* executor, MPI_Comm comm) {
    return NcclCommunicator(executor, comm);
  }
};

}  // namespace collectives_detail
}  // namespace streamexecutor
