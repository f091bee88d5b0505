// The collectives over the loopback transport: N ranks in this process, each
// driven from a thread of its own, as ranks of MPI processes are. Results are
// compared bit for bit with a single-process reference. The same operations
// over MPI between processes: tests/collectives/mpi_test.cpp. Tagged
// [async-callbacks]: a collective holds its stream in a wait that another
// thread lifts, which the CUDA driver double (whose streams run everything at
// once) cannot model.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <numeric>
#include <streamexecutor/collectives.hpp>
#include <thread>
#include <vector>

#include "test_backend.hpp"

namespace {

// Runs body(rank) on `size` threads at once, one per rank.
void OnEveryRank(int size, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(body, rank);
  for (std::thread& t : threads) t.join();
}

template <typename T>
std::vector<T> Read(se::StreamExecutor<TestBackend>* executor, const se::DeviceMemory<T>& memory) {
  std::vector<T> out(memory.ElementCount());
  REQUIRE(executor->SynchronousMemcpyD2H<T>(memory, out).ok());
  return out;
}

// Rank r's input: values that every reduction keeps exact.
template <typename T>
std::vector<T> Input(int rank, std::size_t count) {
  std::vector<T> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<T>((static_cast<int>(i) % 7) + rank + 1);
  return values;
}

}  // namespace

TEMPLATE_TEST_CASE("all-reduce over a loopback group matches the single-process reference",
                   "[collectives][loopback][async-callbacks]", std::int32_t, float, double, std::uint8_t) {
  using T = TestType;
  auto* executor = TestExecutor();
  for (const int size : {1, 2, 4}) {
    const se::ReduceOp op =
        GENERATE(se::ReduceOp::kSum, se::ReduceOp::kProduct, se::ReduceOp::kMin, se::ReduceOp::kMax);
    constexpr std::size_t kCount = 33;
    se::LoopbackGroup group(size);
    std::vector<se::Communicator<TestBackend>> comms;
    for (int rank = 0; rank < size; ++rank) comms.push_back(group.Join(executor, rank));
    std::vector<se::ScopedDeviceMemory<T>> send, recv;
    for (int rank = 0; rank < size; ++rank) {
      send.push_back(executor->AllocateOwnedArray<T>(kCount));
      recv.push_back(executor->AllocateOwnedArray<T>(kCount));
      REQUIRE(executor->SynchronousMemcpyH2D<T>(Input<T>(rank, kCount), send.back().ptr()).ok());
    }
    std::vector<se::Status> statuses(static_cast<std::size_t>(size));
    OnEveryRank(size, [&](int rank) {
      const auto r = static_cast<std::size_t>(rank);
      se::Stream<TestBackend> stream(executor);
      stream.Init().ThenAllReduce(comms[r], send[r].cref(), recv[r].ptr(), op);
      statuses[r] = stream.BlockHostUntilDone();
    });
    std::vector<T> expected = Input<T>(0, kCount);
    for (int rank = 1; rank < size; ++rank) {
      se::collectives_detail::ReduceInto(expected.data(), Input<T>(rank, kCount).data(), kCount, op);
    }
    for (int rank = 0; rank < size; ++rank) {
      INFO("rank " << rank << " of " << size << ": " << statuses[static_cast<std::size_t>(rank)].ToString());
      REQUIRE(statuses[static_cast<std::size_t>(rank)].ok());
      CHECK(Read(executor, recv[static_cast<std::size_t>(rank)].cref()) == expected);
    }
  }
}

// More than kPieceBytes: where staged (OpenCL, CUDA) each piece is copied in,
// handed over and copied back on its own; the loopback transport starts the
// operation once every piece is in place.
TEST_CASE("a 9 MiB all-reduce and broadcast over a loopback group, staged in pieces",
          "[collectives][loopback][async-callbacks]") {
  auto* executor = TestExecutor();
  constexpr int kSize = 2;
  constexpr std::size_t kCount = (std::size_t{9} << 20) / sizeof(float) + 5;
  se::LoopbackGroup group(kSize);
  std::vector<se::Communicator<TestBackend>> comms;
  std::vector<se::ScopedDeviceMemory<float>> send, recv, shared;
  for (int rank = 0; rank < kSize; ++rank) {
    comms.push_back(group.Join(executor, rank));
    send.push_back(executor->AllocateOwnedArray<float>(kCount));
    recv.push_back(executor->AllocateOwnedArray<float>(kCount));
    shared.push_back(executor->AllocateOwnedArray<float>(kCount));
    REQUIRE(executor->SynchronousMemcpyH2D<float>(Input<float>(rank, kCount), send.back().ptr()).ok());
    REQUIRE(executor->SynchronousMemcpyH2D<float>(Input<float>(rank, kCount), shared.back().ptr()).ok());
  }
  std::vector<se::Status> statuses(kSize);
  OnEveryRank(kSize, [&](int rank) {
    const auto r = static_cast<std::size_t>(rank);
    se::Stream<TestBackend> stream(executor);
    stream.Init()
        .ThenAllReduce(comms[r], send[r].cref(), recv[r].ptr(), se::ReduceOp::kSum)
        .ThenBroadcast(comms[r], shared[r].ptr(), 0);
    statuses[r] = stream.BlockHostUntilDone();
  });
  std::vector<float> expected = Input<float>(0, kCount);
  se::collectives_detail::ReduceInto(expected.data(), Input<float>(1, kCount).data(), kCount, se::ReduceOp::kSum);
  for (std::size_t r = 0; r < kSize; ++r) {
    INFO("rank " << r << ": " << statuses[r].ToString());
    REQUIRE(statuses[r].ok());
    CHECK(Read(executor, recv[r].cref()) == expected);
    CHECK(Read(executor, shared[r].cref()) == Input<float>(0, kCount));
  }
}

TEST_CASE("broadcast, reduce, all-gather, reduce-scatter and send/receive over a loopback group",
          "[collectives][loopback][async-callbacks]") {
  auto* executor = TestExecutor();
  constexpr int kSize = 3;
  constexpr std::size_t kCount = 8;
  se::LoopbackGroup group(kSize);
  std::vector<se::Communicator<TestBackend>> comms;
  for (int rank = 0; rank < kSize; ++rank) comms.push_back(group.Join(executor, rank));
  REQUIRE(comms[1].size() == kSize);
  CHECK(comms[2].rank() == 2);
  CHECK(comms[0].transport_name() == "loopback");
  std::vector<se::ScopedDeviceMemory<float>> mine, gathered, scattered, reduced, message;
  for (int rank = 0; rank < kSize; ++rank) {
    mine.push_back(executor->AllocateOwnedArray<float>(kCount * kSize));
    gathered.push_back(executor->AllocateOwnedArray<float>(kCount * kSize));
    scattered.push_back(executor->AllocateOwnedArray<float>(kCount));
    reduced.push_back(executor->AllocateOwnedArray<float>(kCount));
    message.push_back(executor->AllocateOwnedArray<float>(kCount));
    REQUIRE(executor->SynchronousMemcpyH2D<float>(Input<float>(rank, kCount * kSize), mine.back().ptr()).ok());
    REQUIRE(executor->SynchronousMemZero(message.back().ptr(), kCount * sizeof(float)).ok());
  }
  std::vector<se::Status> statuses(kSize);
  std::vector<std::vector<float>> broadcasts(kSize, std::vector<float>(kCount));
  OnEveryRank(kSize, [&](int rank) {  // no Catch2 assertion in these threads: it is not thread-safe
    const auto r = static_cast<std::size_t>(rank);
    se::Stream<TestBackend> stream(executor);
    se::DeviceMemory<float> head = mine[r].cref().GetSlice(0, kCount);
    se::DeviceMemory<float> broadcast = executor->AllocateArray<float>(kCount);
    stream.Init()
        .ThenMemcpyD2D(&broadcast, head)
        .ThenBroadcast(comms[r], &broadcast, 2)  // rank 2's first eight values everywhere
        .ThenReduce(comms[r], head, rank == 1 ? reduced[r].ptr() : nullptr, se::ReduceOp::kMax, 1)
        .ThenAllGather(comms[r], head, gathered[r].ptr())
        .ThenReduceScatter(comms[r], mine[r].cref(), scattered[r].ptr(), se::ReduceOp::kSum);
    // A ring: rank r sends to r + 1, receives from r - 1 (the sends first on even ranks).
    const int next = (rank + 1) % kSize, previous = (rank + kSize - 1) % kSize;
    if (rank % 2 == 0) {
      stream.ThenSend(comms[r], head, next).ThenRecv(comms[r], message[r].ptr(), previous);
    } else {
      stream.ThenRecv(comms[r], message[r].ptr(), previous).ThenSend(comms[r], head, next);
    }
    statuses[r] = stream.BlockHostUntilDone();
    if (statuses[r].ok()) statuses[r] = executor->SynchronousMemcpyD2H<float>(broadcast, broadcasts[r]);
    if (se::Status freed = executor->Deallocate(&broadcast); statuses[r].ok()) statuses[r] = freed;
  });
  for (int rank = 0; rank < kSize; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    INFO("rank " << rank << ": " << statuses[r].ToString());
    REQUIRE(statuses[r].ok());
    CHECK(broadcasts[r] == Input<float>(2, kCount));
    std::vector<float> all;
    for (int from = 0; from < kSize; ++from) {
      const std::vector<float> part = Input<float>(from, kCount);
      all.insert(all.end(), part.begin(), part.end());
    }
    CHECK(Read(executor, gathered[r].cref()) == all);
    std::vector<float> sum = Input<float>(0, kCount * kSize);
    for (int from = 1; from < kSize; ++from) {
      se::collectives_detail::ReduceInto(sum.data(), Input<float>(from, kCount * kSize).data(), kCount * kSize,
                                         se::ReduceOp::kSum);
    }
    CHECK(Read(executor, scattered[r].cref()) ==
          std::vector<float>(sum.begin() + rank * static_cast<int>(kCount),
                             sum.begin() + (rank + 1) * static_cast<int>(kCount)));
    CHECK(Read(executor, message[r].cref()) == Input<float>((rank + kSize - 1) % kSize, kCount));
  }
  CHECK(Read(executor, reduced[1].cref()) == Input<float>(kSize - 1, kCount));  // the max of each element
}

TEST_CASE("collectives refuse bad input, and a mismatch fails every rank instead of hanging",
          "[collectives][loopback][async-callbacks]") {
  auto* executor = TestExecutor();
  se::LoopbackGroup group(2);
  se::Communicator<TestBackend> zero = group.Join(executor, 0), one = group.Join(executor, 1);
  CHECK(group.Join(executor, 1).status().code() == se::ErrorCode::kAlreadyExists);
  CHECK(group.Join(executor, 2).status().code() == se::ErrorCode::kInvalidArgument);
  auto small = executor->AllocateOwnedArray<float>(4), large = executor->AllocateOwnedArray<float>(8);

  SECTION("a receive buffer too small, a root that does not exist, a send to itself, an empty communicator") {
    se::Stream<TestBackend> stream(executor);
    stream.Init().ThenAllReduce(zero, large.cref(), small.ptr(), se::ReduceOp::kSum);
    CHECK(stream.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(stream.status(), "the receive buffer holds 16 bytes, 32 are needed"));
    se::Stream<TestBackend> root(executor);
    root.Init().ThenBroadcast(zero, small.ptr(), 5);
    CHECK(Mentions(root.status(), "rank 5 does not exist"));
    se::Stream<TestBackend> self(executor);
    self.Init().ThenSend(one, small.cref(), 1);
    CHECK(Mentions(self.status(), "does not send to itself"));
    se::Communicator<TestBackend> empty;
    se::Stream<TestBackend> none(executor);
    none.Init().ThenAllReduce(empty, small.cref(), small.ptr(), se::ReduceOp::kSum);
    CHECK(none.status().code() == se::ErrorCode::kInvalidArgument);
  }
  SECTION("ranks that call different operations both fail, naming both calls") {
    std::vector<se::Status> statuses(2);
    OnEveryRank(2, [&](int rank) {
      se::Stream<TestBackend> stream(executor);
      if (rank == 0) {
        stream.Init().ThenAllReduce(zero, small.cref(), small.ptr(), se::ReduceOp::kSum);
      } else {
        stream.Init().ThenAllReduce(one, large.cref(), large.ptr(), se::ReduceOp::kSum);
      }
      statuses[static_cast<std::size_t>(rank)] = stream.BlockHostUntilDone();
    });
    for (const se::Status& s : statuses) {
      CHECK(s.code() == se::ErrorCode::kInvalidArgument);
      CHECK(Mentions(s, "mismatched collective operations"));
      CHECK(Mentions(s, "ThenAllReduce of 4 float (sum)"));
      CHECK(Mentions(s, "ThenAllReduce of 8 float (sum)"));
    }
  }
  SECTION("a rank whose stream failed, or whose call was refused, still takes its turn: the others fail at once") {
    std::vector<se::Status> statuses(2);
    OnEveryRank(2, [&](int rank) {
      se::Stream<TestBackend> stream(executor);
      stream.Init();
      if (rank == 0) {
        stream.ThenMemZero(nullptr, 4);  // fails the stream as it is enqueued
        stream.ThenAllReduce(zero, small.cref(), small.ptr(), se::ReduceOp::kSum);
        // A refused call: the receive buffer is too small.
        se::Stream<TestBackend> refused(executor);
        refused.Init().ThenAllReduce(zero, large.cref(), small.ptr(), se::ReduceOp::kSum);
        stream.BlockHostUntilDone().IgnoreError();
        refused.BlockHostUntilDone().IgnoreError();
      } else {
        stream.ThenAllReduce(one, small.cref(), small.ptr(), se::ReduceOp::kSum);
        const se::Status first = stream.BlockHostUntilDone();
        se::Stream<TestBackend> second(executor);
        second.Init().ThenAllReduce(one, large.cref(), large.ptr(), se::ReduceOp::kSum);
        statuses[0] = first;
        statuses[1] = second.BlockHostUntilDone();
      }
    });
    for (const se::Status& s : statuses) {
      INFO(s.ToString());
      CHECK(s.code() == se::ErrorCode::kFailedPrecondition);
      CHECK(Mentions(s, "rank 0 could not take part"));
    }
  }
  SECTION("a rank that never comes: Abort completes the waiting rank with the reason") {
    se::Stream<TestBackend> stream(executor);
    std::thread aborting([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      group.Abort(se::MakeError(se::ErrorCode::kAborted, "rank 1 exited"));
    });
    stream.Init().ThenAllReduce(zero, small.cref(), small.ptr(), se::ReduceOp::kSum);
    const se::Status waited = stream.BlockHostUntilDone();
    aborting.join();
    CHECK(waited.code() == se::ErrorCode::kAborted);
    CHECK(Mentions(waited, "rank 1 exited"));
  }
}
