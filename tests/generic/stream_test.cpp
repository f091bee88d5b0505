// Stream: fluent Then* API, ordering, sticky errors.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "generic/test_backend.hpp"

TEST_CASE("Then* copies run in order and BlockHostUntilDone waits for them", "[stream]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(256);
  std::vector<int> in(256);
  std::iota(in.begin(), in.end(), 1);
  std::vector<int> out(256, 0);
  se::Stream stream(executor);
  se::Status status = stream.Init()
                          .ThenMemcpyH2D<int>(in, device.ptr())
                          .ThenMemset32(device.ptr(), 9, 16)
                          .ThenMemcpyD2H<int>(device.cref(), out)
                          .BlockHostUntilDone();
  REQUIRE(status.ok());
  CHECK(out[0] == 9);
  CHECK(out[3] == 9);
  CHECK(out[4] == 5);
  CHECK(out[255] == 256);
}

TEST_CASE("device-to-device and zeroing on a stream", "[stream]") {
  auto* executor = TestExecutor();
  auto a = executor->AllocateOwnedArray<float>(32);
  auto b = executor->AllocateOwnedArray<float>(32);
  std::vector<float> ones(32, 1.0f), out(32, -1.0f);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(ones, a.ptr())
              .ThenMemcpyD2D(b.ptr(), a.cref())
              .ThenMemZero(a.ptr(), 16 * sizeof(float))
              .ThenMemcpyD2H<float>(b.cref(), out)
              .BlockHostUntilDone()
              .ok());
  CHECK(out == ones);
  REQUIRE(stream.ThenMemcpy(out.data(), a.cref(), a.cref().size()).BlockHostUntilDone().ok());
  CHECK(out[15] == 0.0f);
  CHECK(out[16] == 1.0f);
}

TEST_CASE("host callbacks run in stream order", "[stream]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedScalar<int>();
  int value = 41;
  int seen_by_callback = 0;
  std::vector<int> order;
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenDoHostCallback([&] { order.push_back(1); })
              .ThenMemcpy(device.ptr(), &value, sizeof(int))
              .ThenMemcpy(&seen_by_callback, device.cref(), sizeof(int))
              .ThenDoHostCallback([&] {
                order.push_back(2);
                seen_by_callback += 1;
              })
              .BlockHostUntilDone()
              .ok());
  CHECK(order == std::vector<int>{1, 2});
  CHECK(seen_by_callback == 42);
}

TEST_CASE("a large host callback is kept alive until it runs", "[stream]") {
  auto* executor = TestExecutor();
  std::vector<int> payload(1000, 3);
  std::array<char, 512> ballast{};
  int sum = 0;
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenDoHostCallback(
                  [payload, ballast, &sum] { sum = std::accumulate(payload.begin(), payload.end(), 0) + ballast[0]; })
              .BlockHostUntilDone()
              .ok());
  CHECK(sum == 3000);
}

TEST_CASE("a stream waits for another stream", "[stream]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(1 << 16);
  std::vector<int> in(1 << 16, 7), out(1 << 16, 0);
  se::Stream producer(executor), consumer(executor);
  producer.Init().ThenMemcpyH2D<int>(in, device.ptr());
  consumer.Init().ThenWaitFor(&producer).ThenMemcpyD2H<int>(device.cref(), out);
  REQUIRE(consumer.BlockHostUntilDone().ok());
  CHECK(out == in);
  REQUIRE(producer.BlockHostUntilDone().ok());
}

TEST_CASE("Init twice is an error that sticks", "[stream][errors]") {
  se::Stream stream(TestExecutor());
  stream.Init();
  REQUIRE(stream.ok());
  stream.Init();
  CHECK_FALSE(stream.ok());
  CHECK(Mentions(stream.status(), "already initialized"));
  CHECK(stream.BlockHostUntilDone().code() == se::ErrorCode::kFailedPrecondition);
}

TEST_CASE("a stream is not ok() before Init", "[stream][errors]") {
  se::Stream stream(TestExecutor());
  CHECK_FALSE(stream.ok());
  CHECK_FALSE(stream.initialized());
  CHECK(stream.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(stream.status(), "not initialized"));
  REQUIRE(stream.Init().ok());
  CHECK(stream.status().ok());
  // A failed Init keeps its own reason.
  se::Stream<TestBackend> orphan(nullptr);
  CHECK_FALSE(orphan.ok());
  orphan.Init();
  CHECK_FALSE(orphan.ok());
  CHECK(Mentions(orphan.status(), "null StreamExecutor"));
}

TEST_CASE("using a stream before Init is an error", "[stream][errors]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedScalar<int>();
  int value = 1;
  se::Stream stream(executor);
  stream.ThenMemcpy(device.ptr(), &value, sizeof(value));
  CHECK(Mentions(stream.status(), "not initialized"));
  se::Stream never(executor);
  CHECK(Mentions(never.BlockHostUntilDone(), "not initialized"));
}

TEST_CASE("the first error sticks and later work is skipped", "[stream][errors]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(4);
  std::vector<int> too_big(8, 1);
  int marker = 0;
  se::Stream stream(executor);
  stream.Init().ThenMemcpyH2D<int>(too_big, device.ptr()).ThenDoHostCallback([&] { marker = 1; });
  CHECK_FALSE(stream.ok());
  se::Status first = stream.BlockHostUntilDone();
  CHECK(first.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(first, "ThenMemcpyH2D"));
  // A second failure does not replace the first, and BlockHostUntilDone keeps returning it.
  stream.ThenMemcpy(device.ptr(), nullptr, 4);
  CHECK(stream.BlockHostUntilDone() == first);
  CHECK(marker == 0);
}

TEST_CASE("Then* with null arguments fail the stream with a message", "[stream][errors]") {
  auto* executor = TestExecutor();
  SECTION("null destination") {
    se::Stream stream(executor);
    stream.Init().ThenMemZero(nullptr, 4);
    CHECK(Mentions(stream.status(), "destination pointer is null"));
  }
  SECTION("null event") {
    se::Stream stream(executor);
    stream.Init().ThenRecordEvent(nullptr);
    CHECK(Mentions(stream.status(), "event pointer is null"));
  }
  SECTION("uninitialized event") {
    se::Event event(executor);
    se::Stream stream(executor);
    stream.Init().ThenWaitFor(&event);
    CHECK(Mentions(stream.status(), "Event was not initialized"));
  }
  SECTION("uninitialized other stream") {
    se::Stream other(executor);
    se::Stream stream(executor);
    stream.Init().ThenWaitFor(&other);
    CHECK(Mentions(stream.status(), "other stream is not initialized"));
  }
}

TEST_CASE("a host callback that returns an error Status fails its stream with it", "[stream][errors]") {
  auto* executor = TestExecutor();
  int later = 0;
  se::Stream stream(executor), other(executor);
  REQUIRE(stream.Init().ThenDoHostCallback([]() -> se::Status { return se::Status(); }).BlockHostUntilDone().ok());
  stream.ThenDoHostCallback([]() -> se::Status { return se::Status(se::ErrorCode::kDataLoss, "checksum mismatch"); })
      .ThenDoHostCallback([&] { later = 1; });
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kDataLoss);
  CHECK(Mentions(status, "checksum mismatch"));
  CHECK(Mentions(status, std::string("host callback on ") + std::string(TestBackend::kName) + ":0"));
  CHECK(later == 0);
  CHECK(stream.BlockHostUntilDone() == status);  // it sticks
  // The failure is the stream's own: another stream of the executor goes on.
  CHECK(other.Init().ThenDoHostCallback([&] { later = 2; }).BlockHostUntilDone().ok());
  CHECK(later == 2);
}

TEST_CASE("a refused typed copy names the call the user made", "[stream][errors]") {
  auto* executor = TestExecutor();
  se::DeviceMemory<int> stale;
  {
    auto owned = executor->AllocateOwnedArray<int>(8);
    stale = owned.cref();
  }  // freed: the view is no longer live
  std::vector<int> host(8);
  se::Stream stream(executor);
  const se::Status d2h = stream.Init().ThenMemcpyD2H<int>(stale, host).BlockHostUntilDone();
  CHECK(Mentions(d2h, "ThenMemcpyD2H on " + executor->DeviceLabel()));
  se::Stream other(executor);
  const se::Status h2d = other.Init().ThenMemcpyH2D<int>(host, &stale).BlockHostUntilDone();
  CHECK(Mentions(h2d, "ThenMemcpyH2D on " + executor->DeviceLabel()));
}

TEST_CASE("a stream moves with its queued work, and the moved-from one is like a new one", "[stream]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(1024);
  std::vector<int> in(1024, 3), out(1024, 0);
  se::Stream stream(executor);
  stream.Init().ThenMemcpyH2D<int>(in, device.ptr()).ThenMemcpyD2H<int>(device.cref(), out);
  se::Stream moved(std::move(stream));
  CHECK(moved.ok());
  CHECK(moved.initialized());
  CHECK_FALSE(stream.ok());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  CHECK_FALSE(stream.initialized());
  CHECK(Mentions(stream.status(), "not initialized"));
  stream.ThenMemZero(device.ptr(), 4);
  CHECK(Mentions(stream.BlockHostUntilDone(), "not initialized"));
  REQUIRE(moved.BlockHostUntilDone().ok());
  CHECK(out == in);
  // More work after the move, and a synchronous operation ordered after it.
  std::vector<int> fives(1024, 5);
  moved.ThenMemcpyH2D<int>(fives, device.ptr());
  REQUIRE(executor->SynchronousMemcpyD2H<int>(device.cref(), out).ok());
  CHECK(out == fives);
  // Move assignment: the target's own work is waited for and its queue
  // released; the source's queue and error move over.
  se::Stream target(executor);
  target.Init().ThenMemcpyH2D<int>(in, device.ptr());
  target = std::move(moved);
  CHECK(target.ok());
  CHECK_FALSE(moved.ok());  // NOLINT(bugprone-use-after-move)
  REQUIRE(target.ThenMemcpyD2H<int>(device.cref(), out).BlockHostUntilDone().ok());
  CHECK(out == in);
  // A moved-from stream can be initialized again, as a new queue (one that
  // was given work meanwhile keeps that error, as a never-initialized one does).
  REQUIRE(moved.Init().ThenMemcpyH2D<int>(fives, device.ptr()).BlockHostUntilDone().ok());  // NOLINT
  CHECK(Mentions(stream.Init().status(), "not initialized"));
  // Errors move too.
  se::Stream failing(executor);
  failing.Init().ThenMemZero(nullptr, 4);
  se::Stream failed(std::move(failing));
  CHECK(failed.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(failed.BlockHostUntilDone().code() == se::ErrorCode::kInvalidArgument);
  // Self-move-assignment leaves the stream as it was.
  se::Stream<TestBackend>& same = target;
  target = std::move(same);
  CHECK(target.ok());
}

TEST_CASE("a stream moved while its work waits keeps that work in order", "[stream][async-callbacks]") {
  auto* executor = TestExecutor();
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  se::Stream stream(executor);
  stream.Init().ThenDoHostCallback([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ran.fetch_add(1);
  });
  se::Stream moved(std::move(stream));
  moved.ThenDoHostCallback([&] { ran.fetch_add(10); });
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release = true;
  });
  // Ordered after the moved stream's work, which the executor still sees.
  REQUIRE(executor->SynchronizeAllActivity().ok());
  CHECK(ran.load() == 11);
  releaser.join();
  REQUIRE(moved.BlockHostUntilDone().ok());
}

// Stream priorities (core/stream_priority.hpp): every backend runs work at
// kNormal; kLow and kHigh need se::StreamPriorityBackend, and a backend that
// has it may still refuse them for a device that lacks what they need.
TEST_CASE("streams at each priority run their work, or say why a priority is refused", "[stream][priority]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(64);
  for (se::StreamPriority priority :
       {se::StreamPriority::kLow, se::StreamPriority::kNormal, se::StreamPriority::kHigh}) {
    INFO("priority " << se::StreamPriorityName(priority));
    se::Stream stream(executor);
    stream.Init(priority);
    if (priority != se::StreamPriority::kNormal) {
      if constexpr (!se::StreamPriorityBackend<TestBackend>) {
        CHECK(stream.status().code() == se::ErrorCode::kUnimplemented);
        CHECK(Mentions(stream.status(), "StreamPriorityBackend"));
        CHECK(Mentions(stream.status(), TestBackend::kName));
        CHECK(Mentions(stream.status(), se::StreamPriorityName(priority)));
        CHECK_FALSE(stream.initialized());
        continue;
      } else if (stream.status().code() == se::ErrorCode::kUnimplemented) {
        // The device lacks it (OpenCL without cl_khr_priority_hints): said, and nothing made.
        CHECK(Mentions(stream.status(), "priorit"));
        CHECK(Mentions(stream.status(), executor->DeviceLabel()));
        CHECK_FALSE(stream.initialized());
        continue;
      }
    }
    REQUIRE(stream.ok());
    CHECK(stream.priority() == priority);
    std::vector<int> in(64), out(64, 0);
    std::iota(in.begin(), in.end(), static_cast<int>(priority) * 100);
    int callbacks = 0;
    REQUIRE(stream.ThenMemcpyH2D<int>(in, device.ptr())
                .ThenMemset32(device.ptr(), 5, 8)
                .ThenMemcpyD2H<int>(device.cref(), out)
                .ThenDoHostCallback([&] { ++callbacks; })
                .BlockHostUntilDone()
                .ok());
    CHECK(out[0] == 5);
    CHECK(out[1] == 5);
    CHECK(out[2] == in[2]);
    CHECK(out[63] == in[63]);
    CHECK(callbacks == 1);
  }
}

TEST_CASE("a stream's priority moves with it and a failed Init says why", "[stream][priority][errors]") {
  auto* executor = TestExecutor();
  // The priority every backend has.
  se::Stream stream(executor);
  CHECK(stream.priority() == se::StreamPriority::kNormal);
  REQUIRE(stream.Init(se::StreamPriority::kNormal).ok());
  stream.Init(se::StreamPriority::kHigh);
  CHECK(Mentions(stream.status(), "already initialized"));

  // Where kHigh is made, a move carries it; the moved-from stream is as new.
  se::Stream high(executor);
  high.Init(se::StreamPriority::kHigh);
  if (high.ok()) {
    se::Stream moved(std::move(high));
    CHECK(moved.priority() == se::StreamPriority::kHigh);
    CHECK(high.priority() == se::StreamPriority::kNormal);  // NOLINT(bugprone-use-after-move)
    REQUIRE(moved.BlockHostUntilDone().ok());
  } else {
    CHECK(high.status().code() == se::ErrorCode::kUnimplemented);
  }

  // A value that is not a priority.
  se::Stream bad(executor);
  bad.Init(static_cast<se::StreamPriority>(7));
  CHECK(bad.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(bad.status(), "7 is not a StreamPriority"));
  CHECK(Mentions(bad.status(), executor->DeviceLabel()));
  CHECK_FALSE(bad.initialized());
}

TEST_CASE("InitWithTimer takes a priority", "[stream][priority][timer]") {
  auto* executor = TestExecutor();
  se::Timer timer(executor);
  se::Stream stream(executor);
  const se::StreamPriority priority =
      se::StreamPriorityBackend<TestBackend> ? se::StreamPriority::kLow : se::StreamPriority::kNormal;
  stream.InitWithTimer(&timer, priority);
  if (stream.status().code() == se::ErrorCode::kUnimplemented) {
    CHECK(Mentions(stream.status(), "priorit"));  // the device lacks it
    return;
  }
  REQUIRE(stream.ok());
  CHECK(stream.priority() == priority);
  auto device = executor->AllocateOwnedArray<int>(16);
  REQUIRE(stream.ThenStartTimer(&timer).ThenMemZero(device.ptr(), 64).ThenStopTimer(&timer).BlockHostUntilDone().ok());
  CHECK(timer.ElapsedNanoseconds().ok());
}
