// Streams of one backend waiting on events and streams of another
// (Stream<host>::ThenWaitFor(Event<opencl>*) and the reverse), on the real
// host backend and the PoCL driver. The producer side is held by a gate
// that the test opens only after it has seen the consumer side wait.
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include "cross_backend/ordering.hpp"

namespace se = streamexecutor;
using se_test::CheckEventOrdering;
using se_test::Gate;
using se_test::GiveTheConsumerTime;

namespace {

se::StreamExecutor<se::host>* HostExecutor() { return se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(); }
se::StreamExecutor<se::opencl>* OpenCLExecutor() {
  return se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
}

bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("a host stream waits on an OpenCL event", "[cross-backend][wait]") {
  CheckEventOrdering(OpenCLExecutor(), HostExecutor(), 20);
}

TEST_CASE("an OpenCL stream waits on a host event", "[cross-backend][wait]") {
  CheckEventOrdering(HostExecutor(), OpenCLExecutor(), 20);
}

TEST_CASE("an OpenCL copy waits for data a host stream writes", "[cross-backend][wait]") {
  // The ordering is the driver's here: the copy is gated by the user event
  // the host stream's completion opens, not by one of our callbacks.
  auto* host = HostExecutor();
  auto* cl = OpenCLExecutor();
  auto staging = host->AllocateOwnedArray<int>(256);
  auto device = cl->AllocateOwnedArray<int>(256);
  REQUIRE(staging.ok());
  REQUIRE(device.ok());
  std::vector<int> source(256);
  for (int i = 0; i < 256; ++i) source[static_cast<std::size_t>(i)] = 3 * i + 1;
  std::vector<int> result(256, 0);
  se::Stream host_stream(host);
  se::Stream cl_stream(cl);
  Gate gate;
  host_stream.Init().ThenDoHostCallback([&] { gate.Wait(); }).ThenMemcpyH2D<int>(source, staging.ptr());
  // Host "device" memory is host memory: the OpenCL stream copies from it.
  auto* staged = static_cast<const int*>(staging.cref().opaque());
  cl_stream.Init()
      .ThenWaitFor(&host_stream)
      .ThenMemcpy(device.ptr(), staged, 256 * sizeof(int))
      .ThenMemcpyD2H<int>(device.cref(), result);
  REQUIRE(cl_stream.ok());
  GiveTheConsumerTime();
  gate.Open();
  REQUIRE(cl_stream.BlockHostUntilDone().ok());
  REQUIRE(host_stream.BlockHostUntilDone().ok());
  CHECK(result == source);
}

TEST_CASE("streams of two backends wait on each other, both ways", "[cross-backend][wait]") {
  auto* host = HostExecutor();
  auto* cl = OpenCLExecutor();
  se::Stream host_stream(host);
  se::Stream cl_stream(cl);
  REQUIRE(host_stream.Init().ok());
  REQUIRE(cl_stream.Init().ok());
  std::vector<int> order;
  std::mutex mutex;
  auto step = [&](int n) {
    return [&, n] {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(n);
    };
  };
  // Ping-pong: each step waits for the other backend's previous one.
  for (int i = 0; i < 10; i += 2) {
    host_stream.ThenWaitFor(&cl_stream).ThenDoHostCallback(step(i));
    cl_stream.ThenWaitFor(&host_stream).ThenDoHostCallback(step(i + 1));
  }
  REQUIRE(host_stream.BlockHostUntilDone().ok());
  REQUIRE(cl_stream.BlockHostUntilDone().ok());
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("a wait on another backend is released when the producer fails", "[cross-backend][wait][errors]") {
  auto* host = HostExecutor();
  auto* cl = OpenCLExecutor();
  SECTION("host producer fails, OpenCL stream waits") {
    se::Stream producer(host);
    se::Stream consumer(cl);
    se::Event event(host);
    REQUIRE(event.Init());
    producer.Init().ThenDoHostCallback([] { throw std::runtime_error("producer exploded"); }).ThenRecordEvent(&event);
    bool ran = false;
    consumer.Init().ThenWaitFor(&event).ThenDoHostCallback([&] { ran = true; });
    CHECK(consumer.BlockHostUntilDone().ok());  // the error stays with the producer
    CHECK(ran);
    CHECK(Mentions(producer.BlockHostUntilDone(), "producer exploded"));
  }
  SECTION("OpenCL producer fails, host stream waits") {
    se::Stream producer(cl);
    se::Stream consumer(host);
    producer.Init().ThenDoHostCallback([] { throw std::runtime_error("producer exploded"); });
    bool ran = false;
    consumer.Init().ThenWaitFor(&producer).ThenDoHostCallback([&] { ran = true; });
    CHECK(consumer.BlockHostUntilDone().ok());
    CHECK(ran);
    CHECK(Mentions(producer.BlockHostUntilDone(), "producer exploded"));
  }
}

TEST_CASE("waits on another backend's events: never recorded, destroyed early, misuse",
          "[cross-backend][wait][errors]") {
  auto* host = HostExecutor();
  auto* cl = OpenCLExecutor();
  SECTION("an event never recorded is complete: the wait is a no-op") {
    se::Event<se::opencl> event(cl);
    REQUIRE(event.Init());
    se::Stream stream(host);
    bool ran = false;
    CHECK(stream.Init().ThenWaitFor(&event).ThenDoHostCallback([&] { ran = true; }).BlockHostUntilDone().ok());
    CHECK(ran);
  }
  SECTION("the event may be destroyed right after the wait is queued") {
    se::Stream producer(cl);
    se::Stream consumer(host);
    REQUIRE(producer.Init().ok());
    REQUIRE(consumer.Init().ok());
    Gate gate;
    std::atomic<bool> produced{false};
    std::atomic<bool> consumed_after{false};
    {
      se::Event<se::opencl> event(cl);
      REQUIRE(event.Init());
      producer
          .ThenDoHostCallback([&] {
            gate.Wait();
            produced = true;
          })
          .ThenRecordEvent(&event);
      consumer.ThenWaitFor(&event).ThenDoHostCallback([&] { consumed_after = produced.load(); });
    }
    gate.Open();
    REQUIRE(consumer.BlockHostUntilDone().ok());
    CHECK(consumed_after);
    REQUIRE(producer.BlockHostUntilDone().ok());
  }
  SECTION("an event that was not initialized") {
    se::Event<se::host> event(host);
    se::Stream stream(cl);
    se::Status status = stream.Init().ThenWaitFor(&event).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "not initialized"));
  }
  SECTION("null event and stream, uninitialized stream") {
    se::Stream stream(cl);
    se::Status status = stream.Init().ThenWaitFor(static_cast<se::Event<se::host>*>(nullptr)).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    se::Stream other(host);
    se::Stream stream2(cl);
    status = stream2.Init().ThenWaitFor(&other).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "other stream is not initialized"));
  }
  SECTION("a failed waiting stream skips the wait (sticky)") {
    se::Stream stream(host);
    se::Stream other(cl);
    REQUIRE(other.Init().ok());
    stream.Init().ThenMemcpy(static_cast<se::DeviceMemoryBase*>(nullptr), nullptr, 4);
    REQUIRE_FALSE(stream.ok());
    const se::Status first = stream.status();
    CHECK(stream.ThenWaitFor(&other).status() == first);
  }
}

TEST_CASE("many waits between backends from several threads", "[cross-backend][wait][threads]") {
  auto* host = HostExecutor();
  auto* cl = OpenCLExecutor();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      se::Stream host_stream(host);
      se::Stream cl_stream(cl);
      if (!host_stream.Init().ok() || !cl_stream.Init().ok()) {
        ++failures;
        return;
      }
      int value = 0;
      for (int i = 0; i < 50; ++i) {
        host_stream.ThenDoHostCallback([&value] { ++value; });
        cl_stream.ThenWaitFor(&host_stream).ThenDoHostCallback([&value] { ++value; });
        host_stream.ThenWaitFor(&cl_stream);
      }
      if (!host_stream.BlockHostUntilDone().ok() || !cl_stream.BlockHostUntilDone().ok() || value != 100) {
        ++failures;
      }
      (void)t;
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures.load() == 0);
}
