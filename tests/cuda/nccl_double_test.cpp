// <streamexecutor/collectives.hpp> on the CUDA backend through NCCL, without
// a GPU: the counting driver double stands in for libcuda.so.1 (four
// pretend devices whose memory is host memory) and the NCCL double for
// libnccl.so.2 (both folders on LD_LIBRARY_PATH, see meson.build). The
// ranks are threads of this process, one executor each, and the double
// does each operation when every rank has called it. What it proves: every
// operation reaches its NCCL call with the stream's CUstream, the device
// addresses, the count, type, reduction and root, and the results match a
// single-process reference bit for bit; NCCL's errors become Statuses that
// name the call; an asynchronous error and an operation past its deadline
// fail the communicator (ncclCommAbort) and every later operation; a missing
// NCCL is UNAVAILABLE naming the package. What NCCL does on a GPU is NCCL's.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <streamexecutor/collectives.hpp>
#include <streamexecutor/cuda.hpp>

#include "counting_driver_double.hpp"
#include "nccl_double.hpp"

namespace se = streamexecutor;

namespace {

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

se::StreamExecutor<se::cuda>* Executor(int ordinal) {
  return se::Platform<se::cuda>::Get().ExecutorForDevice(ordinal).ValueOrDie();
}

se_test::NcclDoubleApi Double() {
  se_test::NcclDoubleApi api = se_test::NcclDoubleApi::Find();
  REQUIRE(api.loaded());
  return api;
}
SeNcclDoubleState State() {
  SeNcclDoubleState state{};
  Double().state(&state);
  return state;
}

// What the ranks' threads saw; checked on the test's thread (Catch2's
// assertions are not thread-safe).
struct Failures {
  std::mutex mutex;
  std::vector<std::string> items;
  void Add(int rank, const std::string& what) {
    const std::lock_guard<std::mutex> lock(mutex);
    items.push_back("rank " + std::to_string(rank) + ": " + what);
  }
};

// `body` on `size` ranks, one thread and one executor each, over a new NCCL
// communicator.
void OnRanks(int size,
             const std::function<void(int rank, se::Communicator<se::cuda>& comm, se::Stream<se::cuda>& stream,
                                      Failures& failures)>& body,
             Failures& failures) {
  se::StatusOr<ncclUniqueId> id = se::NcclUniqueId();
  REQUIRE(id.ok());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      se::StreamExecutor<se::cuda>* executor = Executor(rank);
      se::Communicator<se::cuda> comm = se::NcclCommunicator(executor, id.value(), rank, size);
      if (!comm.ok()) return failures.Add(rank, "NcclCommunicator: " + comm.status().ToString());
      if (comm.transport_name() != "NCCL") failures.Add(rank, "transport " + std::string(comm.transport_name()));
      se::Stream<se::cuda> stream(executor);
      stream.Init();
      body(rank, comm, stream, failures);
    });
  }
  for (std::thread& t : threads) t.join();
}

template <typename T>
T Input(int rank, std::size_t i) {
  return static_cast<T>((rank + 1) * static_cast<int>(i % 5 + 1) + (std::is_signed_v<T> ? -3 : 1));
}

template <typename T>
T Combine(T a, T b, se::ReduceOp op) {
  switch (op) {
    case se::ReduceOp::kSum: return static_cast<T>(a + b);
    case se::ReduceOp::kProduct: return static_cast<T>(a * b);
    case se::ReduceOp::kMin: return std::min(a, b);
    default: return std::max(a, b);
  }
}

// Rank inputs reduced in rank order, elements [offset, offset + n).
template <typename T>
std::vector<T> Reference(int size, std::size_t offset, std::size_t n, se::ReduceOp op) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    T acc = Input<T>(0, offset + i);
    for (int r = 1; r < size; ++r) acc = Combine(acc, Input<T>(r, offset + i), op);
    out[i] = acc;
  }
  return out;
}

template <typename T>
std::vector<T> Inputs(int rank, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = Input<T>(rank, i);
  return v;
}

template <typename T>
void AllOperations(int size) {
  constexpr std::size_t kN = 37;
  Failures failures;
  OnRanks(
      size,
      [&](int rank, se::Communicator<se::cuda>& comm, se::Stream<se::cuda>& stream, Failures& out) {
        se::StreamExecutor<se::cuda>* executor = stream.parent();
        const auto n_all = kN * static_cast<std::size_t>(size);
        se::ScopedDeviceMemory<T> send = executor->AllocateOwnedArray<T>(n_all);
        se::ScopedDeviceMemory<T> recv = executor->AllocateOwnedArray<T>(n_all);
        const std::vector<T> mine = Inputs<T>(rank, n_all);
        std::vector<T> got(n_all);
        const auto check = [&](const char* what, const std::vector<T>& want, std::size_t n) {
          stream.ThenMemcpyD2H<T>(recv.cref().GetSlice(0, n), std::span<T>(got.data(), n));
          if (se::Status s = stream.BlockHostUntilDone(); !s.ok()) return out.Add(rank, what + (": " + s.ToString()));
          for (std::size_t i = 0; i < n; ++i) {
            if (got[i] != want[i])
              return out.Add(rank, std::string(what) + ": element " + std::to_string(i) + " differs");
          }
        };
        stream.ThenMemcpyH2D<T>(mine, send.ptr());
        for (se::ReduceOp op : {se::ReduceOp::kSum, se::ReduceOp::kProduct, se::ReduceOp::kMin, se::ReduceOp::kMax}) {
          se::DeviceMemory<T> part = send.cref().GetSlice(0, kN);
          stream.ThenAllReduce(comm, part, recv.ptr(), op);
          check("all-reduce", Reference<T>(size, 0, kN, op), kN);
        }
        const int root = size - 1;
        se::DeviceMemory<T> bcast = recv.cref().GetSlice(0, kN);
        stream.ThenMemcpyH2D<T>(std::span<const T>(mine.data(), kN), &bcast);
        stream.ThenBroadcast(comm, &bcast, root);
        check("broadcast", Inputs<T>(root, kN), kN);

        stream.ThenReduce(comm, send.cref().GetSlice(0, kN), recv.ptr(), se::ReduceOp::kMax, root);
        if (rank == root) check("reduce", Reference<T>(size, 0, kN, se::ReduceOp::kMax), kN);

        stream.ThenAllGather(comm, send.cref().GetSlice(0, kN), recv.ptr());
        std::vector<T> gathered;
        for (int r = 0; r < size; ++r) {
          const std::vector<T> theirs = Inputs<T>(r, kN);
          gathered.insert(gathered.end(), theirs.begin(), theirs.end());
        }
        check("all-gather", gathered, n_all);

        se::DeviceMemory<T> slot = recv.cref().GetSlice(0, kN);
        stream.ThenReduceScatter(comm, *send, &slot, se::ReduceOp::kSum);
        check("reduce-scatter", Reference<T>(size, static_cast<std::size_t>(rank) * kN, kN, se::ReduceOp::kSum), kN);

        // A ring: even ranks send first, odd ranks receive first.
        const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
        if (size > 1) {
          if (rank % 2 == 0) {
            stream.ThenSend(comm, send.cref().GetSlice(0, kN), next).ThenRecv(comm, &slot, previous);
          } else {
            stream.ThenRecv(comm, &slot, previous).ThenSend(comm, send.cref().GetSlice(0, kN), next);
          }
          check("send/receive", Inputs<T>(previous, kN), kN);
        }
      },
      failures);
  for (const std::string& f : failures.items) UNSCOPED_INFO(f);
  CHECK(failures.items.empty());
}

// One rank, for the failure paths (no other rank to wait for).
struct Solo {
  se::StreamExecutor<se::cuda>* executor = Executor(0);
  se::Communicator<se::cuda> comm;
  se::Stream<se::cuda> stream{executor};
  se::ScopedDeviceMemory<float> a = executor->AllocateOwnedArray<float>(16);
  se::ScopedDeviceMemory<float> b = executor->AllocateOwnedArray<float>(16);

  Solo() {
    se::StatusOr<ncclUniqueId> id = se::NcclUniqueId();
    REQUIRE(id.ok());
    comm = se::NcclCommunicator(executor, id.value(), 0, 1);
    INFO(comm.status().ToString());
    REQUIRE(comm.ok());
    stream.Init();
  }
  se::Status AllReduce() {
    se::Stream<se::cuda> fresh(executor);
    fresh.Init();
    fresh.ThenAllReduce(comm, *a, b.ptr(), se::ReduceOp::kSum);
    return fresh.BlockHostUntilDone();
  }
};

void WaitForAborts(int aborts) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (State().aborts < aborts && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(State().aborts >= aborts);
}

}  // namespace

TEST_CASE("NCCL: every operation matches the single-process reference, on 1, 2 and 4 ranks", "[collectives][nccl]") {
  REQUIRE(se::Platform<se::cuda>::Get().VisibleDeviceCount() >= 4);
  AllOperations<float>(4);
  AllOperations<std::int32_t>(2);
  AllOperations<double>(1);
  AllOperations<std::uint8_t>(2);
  AllOperations<std::int64_t>(4);
}

TEST_CASE("NCCL: the call gets the stream's CUstream, device addresses, type, reduction and root",
          "[collectives][nccl]") {
  Solo solo;
  solo.stream.ThenReduce(solo.comm, *solo.a, solo.b.ptr(), se::ReduceOp::kMin, 0);
  REQUIRE(solo.stream.BlockHostUntilDone().ok());
  SeNcclDoubleState state = State();
  CHECK(std::string(state.last_call) == "ncclReduce");
  CHECK(state.last_stream == static_cast<void*>(solo.stream.native_handle()->stream));
  CHECK(state.last_count == 16);
  CHECK(state.last_type == ncclFloat32);
  CHECK(state.last_op == ncclMin);
  CHECK(state.last_peer == 0);
  const long before = Double().calls("ncclAllReduce");
  solo.stream.ThenAllReduce(solo.comm, *solo.a, solo.b.ptr(), se::ReduceOp::kSum);
  REQUIRE(solo.stream.BlockHostUntilDone().ok());
  CHECK(Double().calls("ncclAllReduce") == before + 1);
  CHECK(std::string(State().last_call) == "ncclAllReduce");
}

TEST_CASE("NCCL: a communicator is destroyed with its last handle", "[collectives][nccl]") {
  const int live = State().live_comms;
  {
    Solo solo;
    CHECK(State().live_comms == live + 1);
    se::Communicator<se::cuda> copy = solo.comm;
    CHECK(copy.rank() == 0);
    CHECK(copy.size() == 1);
  }
  CHECK(State().live_comms == live);
}

TEST_CASE("NCCL: errors name the call, and bad input is refused before NCCL", "[collectives][nccl]") {
  SECTION("ncclCommInitRank fails") {
    se::StatusOr<ncclUniqueId> id = se::NcclUniqueId();
    REQUIRE(id.ok());
    Double().fail_next("ncclCommInitRank", ncclSystemError);
    se::Communicator<se::cuda> comm = se::NcclCommunicator(Executor(0), id.value(), 0, 1);
    REQUIRE_FALSE(comm.ok());
    CHECK(Mentions(comm.status(), "ncclCommInitRank"));
    CHECK(Mentions(comm.status(), "ncclSystemError"));
    CHECK(Mentions(comm.status(), "rank 0 of 1"));
  }
  SECTION("a rank that does not exist, no executor") {
    se::StatusOr<ncclUniqueId> id = se::NcclUniqueId();
    REQUIRE(id.ok());
    se::Communicator<se::cuda> comm = se::NcclCommunicator(Executor(0), id.value(), 2, 2);
    CHECK(comm.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(comm.status(), "rank 2 of 2"));
    CHECK(se::NcclCommunicator(nullptr, id.value(), 0, 1).status().code() == se::ErrorCode::kInvalidArgument);
  }
  SECTION("the NCCL call fails: the stream fails with its name and NCCL's message") {
    Solo solo;
    Double().fail_next("ncclAllGather", ncclInvalidArgument);
    solo.stream.ThenAllGather(solo.comm, *solo.a, solo.b.ptr());
    const se::Status s = solo.stream.BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "ncclAllGather"));
    CHECK(Mentions(s, "ThenAllGather of 16 float on rank 0 of 1"));
    CHECK(Mentions(s, "the NCCL double's last error"));
  }
  SECTION("a buffer too small and a root that does not exist never reach NCCL") {
    Solo solo;
    const long before = Double().calls("ncclBroadcast");
    se::DeviceMemory<float> part = solo.b.cref().GetSlice(0, 4);
    solo.stream.ThenAllReduce(solo.comm, *solo.a, &part, se::ReduceOp::kSum);
    CHECK(solo.stream.BlockHostUntilDone().code() == se::ErrorCode::kInvalidArgument);
    se::Stream<se::cuda> other(solo.executor);
    other.Init();
    other.ThenBroadcast(solo.comm, solo.a.ptr(), 3);
    CHECK(Mentions(other.BlockHostUntilDone(), "rank 3 does not exist"));
    CHECK(Double().calls("ncclBroadcast") == before);
  }
}

TEST_CASE("NCCL: an asynchronous error and an operation past its deadline abort the communicator",
          "[collectives][nccl]") {
  SECTION("ncclCommGetAsyncError reports a failed peer") {
    Solo solo;
    const int aborts = State().aborts;
    Double().set_async_error(ncclRemoteError);
    (void)solo.AllReduce();  // the double ends it at once; the watcher then sees the error
    WaitForAborts(aborts + 1);
    Double().set_async_error(ncclSuccess);
    const se::Status s = solo.AllReduce();
    CHECK(s.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(s, "failed earlier"));
    CHECK(Mentions(s, "ncclRemoteError"));
  }
  SECTION("an operation not complete after the timeout") {
    REQUIRE(setenv("STREAMEXECUTOR_COLLECTIVE_TIMEOUT", "0.000001", 1) == 0);
    Solo solo;  // reads the timeout: 0 ms
    REQUIRE(unsetenv("STREAMEXECUTOR_COLLECTIVE_TIMEOUT") == 0);
    const int aborts = State().aborts;
    auto* fail_next = se_test::CountingDoubleApi::Find().fail_next;
    REQUIRE(fail_next != nullptr);
    fail_next("cuEventQuery", CUDA_ERROR_NOT_READY);  // the watcher's first look: still running
    (void)solo.AllReduce();
    WaitForAborts(aborts + 1);
    const se::Status s = solo.AllReduce();
    CHECK(s.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(s, "not complete after 0 s"));
    CHECK(Mentions(s, "ncclCommAbort"));
  }
}

TEST_CASE("NCCL: a missing libnccl.so.2 is UNAVAILABLE, naming the library and the package", "[collectives][nccl]") {
  namespace cd = se::collectives_detail;
  static constexpr const char* kNowhere[] = {"libnccl-not-installed.so.2"};
  const se::canned_detail::Loaded<cd::NcclApi> load =
      se::canned_detail::Load(cd::kNcclLibrary, cd::kNcclEntryPoints, kNowhere);
  CHECK(load.status.code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(load.status, "NCCL"));
  CHECK(Mentions(load.status, "libnccl-not-installed.so.2"));
  CHECK(Mentions(load.status, "libnccl2"));
}

TEST_CASE("NCCL: a capturing stream refuses collectives", "[collectives][nccl]") {
  Solo solo;
  se::CommandBuffer<se::cuda> buffer(solo.executor);
  const long before = Double().calls("ncclAllReduce");
  REQUIRE(buffer.Init().ok());
  REQUIRE(solo.stream.BeginCapture(&buffer).ok());
  solo.stream.ThenAllReduce(solo.comm, *solo.a, solo.b.ptr(), se::ReduceOp::kSum);
  const se::Status captured = solo.stream.EndCapture(&buffer);
  CHECK(captured.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(captured, "ThenAllReduce"));
  CHECK(Double().calls("ncclAllReduce") == before);
}
