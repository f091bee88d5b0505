// The collectives over MPI, between processes started by mpiexec (Meson
// starts 2 and 4 ranks, and a rank on the host beside a rank on OpenCL):
//
//   mpiexec -n 4 tests/collectives/collectives_mpi_test host
//   mpiexec -n 1 tests/collectives/collectives_mpi_test host : -n 1 tests/collectives/collectives_mpi_test opencl
//
// Every rank knows every rank's input, so each compares its results bit for
// bit with a reference it computes alone. The first argument is the rank's
// backend; the rest goes to Catch2.
#define CATCH_CONFIG_RUNNER
#include <dlfcn.h>
#include <mpi.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <streamexecutor/collectives.hpp>
#include <string>
#include <vector>

namespace se = streamexecutor;

namespace {

std::string g_backend = "host";

// The counting driver double (no GPU here) runs each stream operation when
// it is enqueued: a stream does not hold at a wait for another thread, so the
// staging pipeline's copy back runs before MPI has delivered. Its data is
// checked on a GPU only (tools/gpu_check.sh).
template <typename B>
bool StreamsHoldAtWaits(se::StreamExecutor<B>* executor) {
  return executor->GetDeviceDescription().name.find("double") == std::string::npos;
}

template <typename T>
std::vector<T> Input(int rank, std::size_t count) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<T>((static_cast<int>(i) % 7) + rank + 1);
  return values;
}

bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

template <typename B, typename T>
std::vector<T> Read(se::StreamExecutor<B>* executor, const se::DeviceMemory<T>& memory) {
  std::vector<T> out(memory.ElementCount());
  REQUIRE(executor->template SynchronousMemcpyD2H<T>(memory, out).ok());
  return out;
}

template <typename B, typename T>
void AllReduceEverywhere(std::size_t count) {
  auto* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::Communicator<B> comm = se::MpiCommunicator(executor, MPI_COMM_WORLD);
  INFO(comm.status().ToString());
  REQUIRE(comm.ok());
  CHECK(comm.transport_name() == "MPI");
  const int rank = comm.rank(), size = comm.size();
  for (const se::ReduceOp op : {se::ReduceOp::kSum, se::ReduceOp::kProduct, se::ReduceOp::kMin, se::ReduceOp::kMax}) {
    auto send = executor->template AllocateOwnedArray<T>(count), recv = executor->template AllocateOwnedArray<T>(count);
    REQUIRE(executor->template SynchronousMemcpyH2D<T>(Input<T>(rank, count), send.ptr()).ok());
    se::Stream<B> stream(executor);
    stream.Init().ThenAllReduce(comm, send.cref(), recv.ptr(), op);
    // In place, too: the same memory sent and received.
    stream.ThenAllReduce(comm, send.cref(), send.ptr(), op);
    const se::Status done = stream.BlockHostUntilDone();
    INFO(done.ToString());
    REQUIRE(done.ok());
    std::vector<T> expected = Input<T>(0, count);
    for (int r = 1; r < size; ++r)
      se::collectives_detail::ReduceInto(expected.data(), Input<T>(r, count).data(), count, op);
    CHECK(Read(executor, recv.cref()) == expected);
    CHECK(Read(executor, send.cref()) == expected);
  }
}

template <typename B>
void EveryOperation() {
  auto* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::Communicator<B> comm = se::MpiCommunicator(executor, MPI_COMM_WORLD);
  REQUIRE(comm.ok());
  const int rank = comm.rank(), size = comm.size();
  const auto n = static_cast<std::size_t>(size);
  constexpr std::size_t kCount = 8;
  auto mine = executor->template AllocateOwnedArray<double>(kCount * n);
  auto broadcast = executor->template AllocateOwnedArray<double>(kCount);
  auto reduced = executor->template AllocateOwnedArray<double>(kCount);
  auto gathered = executor->template AllocateOwnedArray<double>(kCount * n);
  auto scattered = executor->template AllocateOwnedArray<double>(kCount);
  auto message = executor->template AllocateOwnedArray<double>(kCount);
  REQUIRE(executor->template SynchronousMemcpyH2D<double>(Input<double>(rank, kCount * n), mine.ptr()).ok());
  const se::DeviceMemory<double> head = mine.cref().GetSlice(0, kCount);
  const int root = size - 1;
  se::Stream<B> stream(executor);
  stream.Init()
      .ThenMemcpyD2D(broadcast.ptr(), head)
      .ThenBroadcast(comm, broadcast.ptr(), root)
      .ThenReduce(comm, head, rank == 0 ? reduced.ptr() : nullptr, se::ReduceOp::kMax, 0)
      .ThenAllGather(comm, head, gathered.ptr())
      .ThenReduceScatter(comm, mine.cref(), scattered.ptr(), se::ReduceOp::kSum);
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  if (size > 1) stream.ThenSend(comm, head, next).ThenRecv(comm, message.ptr(), previous);
  const se::Status done = stream.BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  CHECK(Read(executor, broadcast.cref()) == Input<double>(root, kCount));
  if (rank == 0) CHECK(Read(executor, reduced.cref()) == Input<double>(size - 1, kCount));
  std::vector<double> all, sum = Input<double>(0, kCount * n);
  for (int from = 0; from < size; ++from) {
    const std::vector<double> part = Input<double>(from, kCount);
    all.insert(all.end(), part.begin(), part.end());
    if (from > 0) {
      se::collectives_detail::ReduceInto(sum.data(), Input<double>(from, kCount * n).data(), kCount * n,
                                         se::ReduceOp::kSum);
    }
  }
  CHECK(Read(executor, gathered.cref()) == all);
  const auto first = sum.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank) * kCount);
  CHECK(Read(executor, scattered.cref()) == std::vector<double>(first, first + static_cast<std::ptrdiff_t>(kCount)));
  if (size > 1) CHECK(Read(executor, message.cref()) == Input<double>(previous, kCount));
}

// More than kPieceBytes: three pieces, the last short, each exchanged (and,
// off the host, staged) on its own.
template <typename B>
void Pieces() {
  auto* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::Communicator<B> comm = se::MpiCommunicator(executor, MPI_COMM_WORLD);
  REQUIRE(comm.ok());
  const int rank = comm.rank(), size = comm.size();
  constexpr std::size_t kCount = (std::size_t{9} << 20) / sizeof(float) + 3;
  auto send = executor->template AllocateOwnedArray<float>(kCount);
  auto sum = executor->template AllocateOwnedArray<float>(kCount);
  auto shared = executor->template AllocateOwnedArray<float>(kCount);
  auto largest = executor->template AllocateOwnedArray<float>(kCount);
  REQUIRE(executor->template SynchronousMemcpyH2D<float>(Input<float>(rank, kCount), send.ptr()).ok());
  REQUIRE(executor->template SynchronousMemcpyH2D<float>(Input<float>(rank, kCount), shared.ptr()).ok());
  se::Stream<B> stream(executor);
  stream.Init()
      .ThenAllReduce(comm, send.cref(), sum.ptr(), se::ReduceOp::kSum)
      .ThenBroadcast(comm, shared.ptr(), size - 1)
      .ThenReduce(comm, send.cref(), rank == 0 ? largest.ptr() : nullptr, se::ReduceOp::kMax, 0)
      .ThenAllReduce(comm, send.cref(), send.ptr(), se::ReduceOp::kMin);  // in place
  const se::Status done = stream.BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  std::vector<float> expected = Input<float>(0, kCount);
  for (int r = 1; r < size; ++r)
    se::collectives_detail::ReduceInto(expected.data(), Input<float>(r, kCount).data(), kCount, se::ReduceOp::kSum);
  CHECK(Read(executor, sum.cref()) == expected);
  CHECK(Read(executor, shared.cref()) == Input<float>(size - 1, kCount));
  if (rank == 0) CHECK(Read(executor, largest.cref()) == Input<float>(size - 1, kCount));
  CHECK(Read(executor, send.cref()) == Input<float>(0, kCount));
}

template <typename B>
void Mismatch() {
  auto* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::Communicator<B> comm = se::MpiCommunicator(executor, MPI_COMM_WORLD);
  REQUIRE(comm.ok());
  if (comm.size() < 2) return;
  auto memory = executor->template AllocateOwnedArray<float>(8);
  REQUIRE(executor->SynchronousMemZero(memory.ptr(), 8 * sizeof(float)).ok());
  se::DeviceMemory<float> part = memory.cref().GetSlice(0, comm.rank() == 0 ? 4 : 8);
  se::Stream<B> stream(executor);
  stream.Init().ThenAllReduce(comm, part, &part, se::ReduceOp::kSum);
  const se::Status failed = stream.BlockHostUntilDone();
  CHECK(failed.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(failed, "mismatched collective operations"));
  // Nothing was exchanged: the communicator goes on.
  se::Stream<B> again(executor);
  again.Init().ThenAllReduce(comm, memory.cref(), memory.ptr(), se::ReduceOp::kSum);
  CHECK(again.BlockHostUntilDone().ok());
  // A call refused on rank 0 (its receive buffer is too small) still takes its
  // turn: the other ranks fail at once, and the communicator goes on.
  se::Stream<B> refused(executor);
  if (comm.rank() == 0) {
    se::DeviceMemory<float> tiny = memory.cref().GetSlice(0, 2);
    refused.Init().ThenAllReduce(comm, memory.cref(), &tiny, se::ReduceOp::kSum);
    CHECK(refused.status().code() == se::ErrorCode::kInvalidArgument);
  } else {
    refused.Init().ThenAllReduce(comm, memory.cref(), memory.ptr(), se::ReduceOp::kSum);
    const se::Status others = refused.BlockHostUntilDone();
    CHECK(others.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(others, "another rank could not take part"));
  }
  se::Stream<B> after(executor);
  after.Init().ThenAllReduce(comm, memory.cref(), memory.ptr(), se::ReduceOp::kSum);
  CHECK(after.BlockHostUntilDone().ok());
  // Rank 0 sends 4 elements and then 8; rank 1 receives 8 and then 4.
  se::Stream<B> pair(executor);
  pair.Init();
  const se::DeviceMemory<float> four = memory.cref().GetSlice(0, 4);
  se::DeviceMemory<float> four_in = memory.cref().GetSlice(0, 4), eight_in = memory.cref();
  if (comm.rank() == 0) {
    pair.ThenSend(comm, four, 1);
    CHECK(pair.BlockHostUntilDone().ok());
    pair.ThenSend(comm, memory.cref(), 1);
    CHECK(pair.BlockHostUntilDone().ok());
  } else if (comm.rank() == 1) {
    pair.ThenRecv(comm, &eight_in, 0);
    const se::Status fewer = pair.BlockHostUntilDone();
    CHECK(fewer.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(fewer, "rank 0 sent 4 elements"));
    se::Stream<B> more(executor);
    more.Init().ThenRecv(comm, &four_in, 0);
    const se::Status larger = more.BlockHostUntilDone();
    CHECK(larger.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(larger, "rank 0 sent 8 elements"));
  }
}

// A receive whose message never comes: DEADLINE_EXCEEDED after the
// communicator's timeout, then FAILED_PRECONDITION for what follows. (A
// receive waits for its message without a request in MPI's hands, so the job
// still finalizes cleanly.)
template <typename B>
void Timeout() {
  auto* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  setenv("STREAMEXECUTOR_COLLECTIVE_TIMEOUT", "0.5", 1);
  se::Communicator<B> comm = se::MpiCommunicator(executor, MPI_COMM_WORLD);
  unsetenv("STREAMEXECUTOR_COLLECTIVE_TIMEOUT");
  REQUIRE(comm.ok());
  if (comm.size() < 2 || comm.rank() != 0) return;
  auto memory = executor->template AllocateOwnedArray<float>(4);
  se::Stream<B> stream(executor);
  stream.Init().ThenRecv(comm, memory.ptr(), 1);
  const se::Status late = stream.BlockHostUntilDone();
  CHECK(late.code() == se::ErrorCode::kDeadlineExceeded);
  CHECK(Mentions(late, "not complete after 0.5 s"));
  se::Stream<B> after(executor);
  after.Init().ThenRecv(comm, memory.ptr(), 1);
  const se::Status broken = after.BlockHostUntilDone();
  CHECK(broken.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(broken, "failed earlier"));
}

template <typename B>
void Run() {
  SECTION("all-reduce of each reduction, int32, bit for bit") { AllReduceEverywhere<B, std::int32_t>(1000); }
  SECTION("all-reduce of 1 MiB of float") { AllReduceEverywhere<B, float>(1u << 18); }
  SECTION("all-reduce of uint8 and int64") {
    AllReduceEverywhere<B, std::uint8_t>(17);
    AllReduceEverywhere<B, std::int64_t>(17);
  }
  SECTION("broadcast, reduce, all-gather, reduce-scatter, send and receive") { EveryOperation<B>(); }
  SECTION("9 MiB: all-reduce, broadcast and reduce go in pieces (staged one by one off the host)") { Pieces<B>(); }
  SECTION("ranks that call different operations fail alike, and go on") { Mismatch<B>(); }
  SECTION("a message that never comes times out") { Timeout<B>(); }
}

// Every rank asks for the communicator it should have: NCCL where every rank
// is on CUDA and NCCL loads, MPI otherwise, and an all-reduce over the MPI
// one (a CUDA rank's goes through staging, on the counting driver double).
template <typename B>
void Choose() {
  auto* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  const int on_cuda = g_backend == "cuda" ? 1 : 0;
  int all_cuda = 0;
  MPI_Allreduce(&on_cuda, &all_cuda, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  se::Communicator<B> comm = se::MakeCommunicator(executor, MPI_COMM_WORLD);
  INFO(comm.status().ToString());
  REQUIRE(comm.ok());
  CHECK(comm.transport_name() == (all_cuda != 0 ? "NCCL" : "MPI"));
  if (all_cuda != 0) return;  // the NCCL double's ranks are threads of one process
  auto memory = executor->template AllocateOwnedArray<std::int32_t>(64);
  REQUIRE(
      executor->template SynchronousMemcpyH2D<std::int32_t>(Input<std::int32_t>(comm.rank(), 64), memory.ptr()).ok());
  se::Stream<B> stream(executor);
  stream.Init().ThenAllReduce(comm, memory.cref(), memory.ptr(), se::ReduceOp::kSum);
  REQUIRE(stream.BlockHostUntilDone().ok());
  if (!StreamsHoldAtWaits(executor)) return;  // its input still reached the other ranks
  std::vector<std::int32_t> expected = Input<std::int32_t>(0, 64);
  for (int r = 1; r < comm.size(); ++r)
    se::collectives_detail::ReduceInto(expected.data(), Input<std::int32_t>(r, 64).data(), 64, se::ReduceOp::kSum);
  CHECK(Read(executor, memory.cref()) == expected);
}

#if defined(STREAMEXECUTOR_WITH_CUDA) && __has_include(<nccl.h>)
// NCCL bootstrapped over MPI, against the NCCL double (each process holds
// one rank of it, so no data moves here: nccl_double_test.cpp moves it).
// What MPI adds is checked for real: one id on every rank, and the ranks'
// comparison of their calls before NCCL is called.
void NcclOverMpi() {
  auto* executor = se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie();
  se::Communicator<se::cuda> comm = se::NcclCommunicator(executor, MPI_COMM_WORLD);
  INFO(comm.status().ToString());
  REQUIRE(comm.ok());
  CHECK(comm.transport_name() == "NCCL");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(comm.rank() == rank);
  CHECK(comm.size() == size);
  // The double's record of ncclCommInitRank: the same id on every rank.
  using StateFn = void (*)(void*);
  void* library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library != nullptr);
  auto state = reinterpret_cast<StateFn>(dlsym(library, "se_nccl_double_state"));
  auto calls = reinterpret_cast<long (*)(const char*)>(dlsym(library, "se_nccl_double_calls"));
  REQUIRE(state != nullptr);
  REQUIRE(calls != nullptr);
  struct {
    int live_comms, aborts, last_init_rank, last_init_size;
    unsigned long long last_init_id;
    char rest[128];
  } seen{};
  state(&seen);
  CHECK(seen.last_init_rank == rank);
  CHECK(seen.last_init_size == size);
  unsigned long long lowest = 0, highest = 0;
  MPI_Allreduce(&seen.last_init_id, &lowest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&seen.last_init_id, &highest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lowest == highest);
  if (size < 2) return;

  auto memory = executor->AllocateOwnedArray<float>(8);
  const long reductions = calls("ncclAllReduce");
  se::DeviceMemory<float> part = memory.cref().GetSlice(0, rank == 0 ? 4 : 8);
  se::Stream<se::cuda> stream(executor);
  stream.Init().ThenAllReduce(comm, part, &part, se::ReduceOp::kSum);
  const se::Status mismatched = stream.BlockHostUntilDone();
  CHECK(mismatched.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(mismatched, "mismatched collective operations (NCCL"));
  CHECK(calls("ncclAllReduce") == reductions);  // refused before NCCL

  // A refused call still takes its turn: the other ranks fail at once.
  se::Stream<se::cuda> refused(executor);
  if (rank == 0) {
    se::DeviceMemory<float> tiny = memory.cref().GetSlice(0, 2);
    refused.Init().ThenAllReduce(comm, memory.cref(), &tiny, se::ReduceOp::kSum);
    CHECK(refused.status().code() == se::ErrorCode::kInvalidArgument);
  } else {
    refused.Init().ThenAllReduce(comm, memory.cref(), memory.ptr(), se::ReduceOp::kSum);
    CHECK(Mentions(refused.BlockHostUntilDone(), "another rank could not take part"));
  }

  // Ranks 0 and 1 both send to each other first: NCCL would wait for ever.
  if (rank < 2) {
    const long sends = calls("ncclSend");
    se::Stream<se::cuda> pair(executor);
    pair.Init().ThenSend(comm, memory.cref(), 1 - rank);
    const se::Status both_send = pair.BlockHostUntilDone();
    CHECK(both_send.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(both_send, "called ThenSend of 8 float"));
    CHECK(calls("ncclSend") == sends);
  }
}
#endif

}  // namespace

TEST_CASE("a communicator for every rank: NCCL where all can use it, else MPI", "[collectives][mpi][choose]") {
#if defined(STREAMEXECUTOR_WITH_HOST)
  if (g_backend == "host") return Choose<se::host>();
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  if (g_backend == "opencl") return Choose<se::opencl>();
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
  if (g_backend == "cuda") return Choose<se::cuda>();
#endif
  FAIL("backend " << g_backend << " is not in this build");
}

#if defined(STREAMEXECUTOR_WITH_CUDA) && __has_include(<nccl.h>)
TEST_CASE("NCCL bootstrapped over MPI compares the ranks' calls", "[collectives][mpi][nccl]") {
  if (g_backend != "cuda") return;
  NcclOverMpi();
}
#endif

TEST_CASE("collectives over MPI", "[collectives][mpi]") {
#if defined(STREAMEXECUTOR_WITH_HOST)
  if (g_backend == "host") return Run<se::host>();
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  if (g_backend == "opencl") return Run<se::opencl>();
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
  if (g_backend == "cuda") {
    auto* executor = se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie();
    if (StreamsHoldAtWaits(executor)) return Run<se::cuda>();
    WARN("CUDA through MPI staging: checked on a GPU only (the driver double runs each operation at once)");
    return;
  }
#endif
  FAIL("backend " << g_backend << " is not in this build");
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (argc > 1 && argv[1][0] != '-' && argv[1][0] != '[' && argv[1][0] != '~') {
    g_backend = argv[1];
    for (int i = 1; i + 1 < argc; ++i) argv[i] = argv[i + 1];
    --argc;
  }
  const int result = Catch::Session().run(argc, argv);
  // Every rank ends the same way: a failure anywhere fails the run.
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
