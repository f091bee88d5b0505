// CommandBuffer: record once, submit many times; the checks at record and at
// submit time; lifetimes of the buffer and of what it uses.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

TEST_CASE("a recorded launch submitted N times runs N times", "[command-buffer][kernel-results]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  constexpr std::uint32_t n = 1000;
  std::vector<float> x(n), y(n, 1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  REQUIRE(executor->SynchronousMemcpyH2D<float>(x, dx.ptr()).ok());
  REQUIRE(executor->SynchronousMemcpyH2D<float>(y, dy.ptr()).ok());

  se::CommandBuffer buffer(executor);
  buffer.Init().ThenLaunch(se::ThreadDim(100), se::BlockDim(10), kernel, 2.0f, dx.ptr(), dy.ptr(), n);
  REQUIRE(buffer.ok());
  CHECK(buffer.size() == 1);
  se::Stream stream(executor);
  stream.Init();
  constexpr int kSubmissions = 5;
  for (int i = 0; i < kSubmissions; ++i) stream.ThenSubmit(&buffer);
  REQUIRE(stream.ThenMemcpyD2H<float>(dy.cref(), y).BlockHostUntilDone().ok());
  CHECK(buffer.finalized());
  for (std::uint32_t i = 0; i < n; i += 37) CHECK(y[i] == 1.0f + kSubmissions * 2.0f * static_cast<float>(i));
}

TEST_CASE("copies, fills and host callbacks run in recorded order at every submission", "[command-buffer]") {
  auto* executor = TestExecutor();
  constexpr std::size_t n = 64;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  auto b = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> source(n), after_fill(n), result(n);
  std::atomic<int> callbacks{0};
  std::atomic<bool> order_ok{true};

  se::CommandBuffer buffer(executor);
  buffer.Init()
      .ThenMemset32(a.ptr(), 0xabcd0123u, n * 4)
      .ThenMemcpyD2H<std::uint32_t>(a.cref(), after_fill)
      .ThenDoHostCallback([&] {
        // The fill and the read-back before it have run; the copy of
        // `source` after it has not (it is checked after the submission).
        for (std::uint32_t v : after_fill) order_ok = order_ok && v == 0xabcd0123u;
        callbacks.fetch_add(1);
      })
      .ThenMemcpyH2D<std::uint32_t>(source, a.ptr())
      .ThenMemcpyD2D(b.ptr(), a.cref())
      .ThenMemZero(a.ptr(), n * 4)
      .ThenMemcpyD2H<std::uint32_t>(b.cref(), result);
  REQUIRE(buffer.ok());
  CHECK(buffer.size() == 7);
  REQUIRE(buffer.Finalize().ok());

  se::Stream stream(executor);
  stream.Init();
  for (std::uint32_t round = 1; round <= 3; ++round) {
    // Host memory is read at each submission's turn: new contents each round.
    std::fill(source.begin(), source.end(), round);
    std::fill(after_fill.begin(), after_fill.end(), 0u);
    REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
    CHECK(callbacks.load() == static_cast<int>(round));
    CHECK(order_ok.load());
    CHECK(result == std::vector<std::uint32_t>(n, round));
  }
  std::vector<std::uint32_t> zeroed(n, 1);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(a.cref(), zeroed).ok());
  CHECK(zeroed == std::vector<std::uint32_t>(n, 0u));
}

TEST_CASE("a recorded host callback that returns an error Status fails the submitting stream",
          "[command-buffer][errors]") {
  auto* executor = TestExecutor();
  std::atomic<int> runs{0};
  std::atomic<bool> fail{false};
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenDoHostCallback([&]() -> se::Status {
    runs.fetch_add(1);
    return fail.load() ? se::Status(se::ErrorCode::kOutOfRange, "input exhausted") : se::Status();
  });
  REQUIRE(buffer.Finalize().ok());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  fail = true;
  const se::Status status = stream.ThenSubmit(&buffer).ThenSubmit(&buffer).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(status, "input exhausted"));
  CHECK(runs.load() == 2);  // the second submission after the failure is skipped
}

TEST_CASE("one buffer submitted to two streams, and events recorded and waited on by buffers", "[command-buffer]") {
  auto* executor = TestExecutor();
  constexpr std::size_t n = 16;
  auto memory = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> host(n, 0);
  se::Event event(executor);
  REQUIRE(event.Init());

  se::CommandBuffer producer(executor);
  producer.Init().ThenMemset32(memory.ptr(), 7u, n * 4).ThenRecordEvent(&event);
  se::CommandBuffer consumer(executor);
  consumer.Init().ThenWaitFor(&event).ThenMemcpyD2H<std::uint32_t>(memory.cref(), host);
  REQUIRE(producer.ok());
  REQUIRE(consumer.ok());
  CHECK_FALSE(event.recorded());  // recording into a buffer records nothing yet

  se::Stream first(executor), second(executor);
  first.Init().ThenSubmit(&producer);
  CHECK(event.recorded());  // a submission records it, as ThenRecordEvent would
  second.Init().ThenSubmit(&consumer);
  REQUIRE(second.BlockHostUntilDone().ok());
  REQUIRE(first.BlockHostUntilDone().ok());
  CHECK(host == std::vector<std::uint32_t>(n, 7u));
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kComplete);

  // The same buffer on another stream.
  std::fill(host.begin(), host.end(), 0u);
  REQUIRE(first.ThenSubmit(&producer).ThenSubmit(&consumer).BlockHostUntilDone().ok());
  CHECK(host == std::vector<std::uint32_t>(n, 7u));
}

TEST_CASE("memory freed after recording fails the submission, not the process", "[command-buffer][errors]") {
  auto* executor = TestExecutor();
  auto kept = executor->AllocateOwnedArray<float>(8);
  se::DeviceMemory<float> freed = executor->AllocateArray<float>(8);
  REQUIRE(!freed.IsNull());
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemZero(kept.ptr(), 32).ThenMemcpyD2D(kept.ptr(), freed);
  REQUIRE(buffer.ok());
  REQUIRE(executor->Deallocate(&freed).ok());

  se::Stream stream(executor);
  stream.Init().ThenSubmit(&buffer);
  CHECK(stream.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(stream.status(), "ThenSubmit"));
  CHECK(Mentions(stream.status(), "operation 1 (ThenMemcpyD2D)"));
  CHECK(Mentions(stream.status(), "no longer valid"));
}

TEST_CASE("a launch argument freed after recording fails the submission", "[command-buffer][errors]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(4);
  se::DeviceMemory<float> y = executor->AllocateArray<float>(4);
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, 1.0f, x.ptr(), &y, 4u);
  REQUIRE(buffer.ok());
  REQUIRE(executor->Deallocate(&y).ok());
  se::Stream stream(executor);
  stream.Init().ThenSubmit(&buffer);
  CHECK(stream.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(stream.status(), "argument 2"));
}

TEST_CASE("recording checks what a stream checks, and the first error sticks", "[command-buffer][errors]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(4);

  SECTION("dimensions over the device's limits") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenLaunch(se::ThreadDim(0), se::BlockDim(1), kernel, 1.0f, x.ptr(), x.ptr(), 4u);
    CHECK(buffer.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(buffer.status(), "ThenLaunch of kernel 'saxpy'"));
  }
  SECTION("a copy past the end of the memory") {
    std::vector<float> big(16);
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemcpy(x.ptr(), big.data(), big.size() * sizeof(float));
    CHECK(buffer.status().code() == se::ErrorCode::kOutOfRange);
    CHECK(buffer.size() == 0);
  }
  SECTION("a null destination, then a submission of the failed buffer") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemZero(nullptr, 4).ThenMemZero(x.ptr(), 16);
    CHECK(buffer.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(buffer.size() == 0);  // the second call was skipped
    se::Stream stream(executor);
    stream.Init().ThenSubmit(&buffer);
    CHECK(stream.status().code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(stream.status(), "failed while recording"));
  }
  SECTION("recording into a finalized buffer") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemZero(x.ptr(), 16);
    REQUIRE(buffer.Finalize().ok());
    buffer.ThenMemZero(x.ptr(), 16);
    CHECK(buffer.status().code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(buffer.status(), "finalized"));
  }
  SECTION("recording or submitting without Init") {
    se::CommandBuffer buffer(executor);
    se::Stream stream(executor);
    stream.Init().ThenSubmit(&buffer);
    CHECK(stream.status().code() == se::ErrorCode::kFailedPrecondition);
    buffer.ThenMemZero(x.ptr(), 16);
    CHECK(Mentions(buffer.status(), "not initialized"));
  }
  SECTION("a null buffer and a null event") {
    se::Stream stream(executor);
    stream.Init().ThenSubmit(static_cast<se::CommandBuffer<TestBackend>*>(nullptr));
    CHECK(stream.status().code() == se::ErrorCode::kInvalidArgument);
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenWaitFor(static_cast<se::Event<TestBackend>*>(nullptr));
    CHECK(buffer.status().code() == se::ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("an empty buffer submits as a no-op", "[command-buffer]") {
  auto* executor = TestExecutor();
  se::CommandBuffer buffer(executor);
  REQUIRE(buffer.Init().ok());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(buffer.size() == 0);
}

TEST_CASE("a buffer destroyed while its submissions are queued", "[command-buffer][lifetime]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<std::uint32_t>(4);
  std::atomic<int> runs{0};
  se::Stream stream(executor);
  stream.Init();
  {
    se::CommandBuffer buffer(executor);
    buffer.Init()
        .ThenDoHostCallback([&runs] {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          runs.fetch_add(1);
        })
        .ThenMemset32(memory.ptr(), 3u, 16);
    for (int i = 0; i < 10; ++i) stream.ThenSubmit(&buffer);
  }
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(runs.load() == 10);
}

TEST_CASE("a buffer runs only on streams of its own executor", "[command-buffer][lifetime][errors]") {
  auto* first = TestExecutor();
  auto* second = SecondExecutor();
  if (second == nullptr) {
    WARN("one device: the cross-executor case runs with two");
    return;
  }
  auto memory = first->AllocateOwnedArray<std::uint32_t>(4);
  se::CommandBuffer buffer(first);
  buffer.Init().ThenMemZero(memory.ptr(), 16);
  se::Stream stream(second);
  stream.Init().ThenSubmit(&buffer);
  CHECK(stream.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(stream.status(), "recorded for " + first->DeviceLabel()));
  // Memory of another executor is refused while recording.
  se::CommandBuffer other(second);
  other.Init().ThenMemZero(memory.ptr(), 16);
  CHECK(other.status().code() == se::ErrorCode::kFailedPrecondition);
}

TEST_CASE("a finalized buffer submitted from streams on several threads at once", "[command-buffer][threads]") {
  auto* executor = TestExecutor();
  constexpr int kThreads = 4;
  constexpr int kSubmissions = 50;
  auto memory = executor->AllocateOwnedArray<std::uint32_t>(64);
  std::atomic<int> callbacks{0};
  se::Event event(executor);
  REQUIRE(event.Init());
  // Nothing that writes memory: submissions on different streams are not
  // ordered, so a write would race in the program, not in the library. The
  // empty fill is a native command where the backend has them (OpenCL's
  // cl_khr_command_buffer run, a CUDA empty node).
  se::CommandBuffer buffer(executor);
  buffer.Init()
      .ThenMemZero(memory.ptr(), 0)
      .ThenDoHostCallback([&] { callbacks.fetch_add(1); })
      .ThenRecordEvent(&event);
  REQUIRE(buffer.Finalize().ok());
  std::vector<se::Status> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      se::Stream stream(executor);
      stream.Init();
      for (int i = 0; i < kSubmissions; ++i) stream.ThenSubmit(&buffer);
      results[static_cast<std::size_t>(t)] = stream.BlockHostUntilDone();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const se::Status& status : results) CHECK(status.ok());
  CHECK(callbacks.load() == kThreads * kSubmissions);
  CHECK(event.Synchronize().ok());
}
