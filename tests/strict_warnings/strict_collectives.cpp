// strict_warnings.cpp's companion for <streamexecutor/collectives.hpp>: every
// operation of every element type on every enabled backend, over a loopback
// group, (where MPI is found) an MPI communicator and (on CUDA where nccl.h
// is) an NCCL one, compiled (never run) by
// check.py under -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror.
#include <cstdint>
#include <streamexecutor/collectives.hpp>
#include <streamexecutor/streamexecutor.hpp>
#include <type_traits>

namespace se = streamexecutor;

namespace {

template <typename B, typename T>
se::Status ExerciseType(se::StreamExecutor<B>* executor, se::Communicator<B>& comm) {
  se::ScopedDeviceMemory<T> a = executor->template AllocateOwnedArray<T>(64);
  se::ScopedDeviceMemory<T> b = executor->template AllocateOwnedArray<T>(64);
  se::Stream<B> stream(executor);
  return stream.Init()
      .ThenAllReduce(comm, a.cref(), b.ptr(), se::ReduceOp::kSum)
      .ThenBroadcast(comm, a.ptr(), 0)
      .ThenReduce(comm, a.cref(), b.ptr(), se::ReduceOp::kMax, 0)
      .ThenAllGather(comm, a.cref().GetSlice(0, 32), b.ptr())
      .ThenReduceScatter(comm, a.cref(), b.ptr(), se::ReduceOp::kMin)
      .ThenSend(comm, a.cref(), 1)
      .ThenRecv(comm, b.ptr(), 1)
      .BlockHostUntilDone();
}

template <typename B>
se::Status Exercise(se::StreamExecutor<B>* executor) {
  se::LoopbackGroup group(2);
  se::Communicator<B> comm = group.Join(executor, 0);
  se::Status s = ExerciseType<B, std::int8_t>(executor, comm);
  s = ExerciseType<B, std::uint8_t>(executor, comm);
  s = ExerciseType<B, std::int32_t>(executor, comm);
  s = ExerciseType<B, std::uint32_t>(executor, comm);
  s = ExerciseType<B, std::int64_t>(executor, comm);
  s = ExerciseType<B, std::uint64_t>(executor, comm);
  s = ExerciseType<B, float>(executor, comm);
#if defined(STREAMEXECUTOR_COLLECTIVES_WITH_MPI)
  se::Communicator<B> world = se::MpiCommunicator(executor, MPI_COMM_WORLD);
  s = ExerciseType<B, double>(executor, world);
  se::Communicator<B> chosen = se::MakeCommunicator(executor, MPI_COMM_WORLD);  // NCCL on CUDA where it loads
  s = ExerciseType<B, float>(executor, chosen);
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA) && __has_include(<nccl.h>)
  if constexpr (std::is_same_v<B, se::cuda>) {
    se::StatusOr<ncclUniqueId> id = se::NcclUniqueId();
    if (id.ok()) {
      se::Communicator<se::cuda> nccl = se::NcclCommunicator(executor, id.value(), 0, 1);
      s = ExerciseType<B, std::int64_t>(executor, nccl);
    }
  }
#endif
  return s;
}

}  // namespace

int StrictCollectivesEntry() {
  int result = 0;
  se::EnabledBackends::ForEach([&result]<typename B>() {
    if constexpr (se::CollectiveBackend<B>) {
      se::StatusOr<se::StreamExecutor<B>*> executor = se::Platform<B>::Get().ExecutorForDevice(0);
      if (!executor.ok() || !Exercise(executor.value()).ok()) ++result;
    }
  });
  return result;
}
