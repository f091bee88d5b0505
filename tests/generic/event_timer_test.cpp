// Events across streams and across executors, and timers.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "generic/gate.hpp"
#include "generic/test_backend.hpp"

TEST_CASE("an event orders work across streams", "[event]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(1 << 16);
  std::vector<int> in(1 << 16, 3), out(1 << 16, 0);
  se::Event written(executor);
  REQUIRE(written.Init());
  se::Stream writer(executor), reader(executor);
  writer.Init().ThenMemcpyH2D<int>(in, device.ptr()).ThenRecordEvent(&written);
  reader.Init().ThenWaitFor(&written).ThenMemcpyD2H<int>(device.cref(), out);
  REQUIRE(reader.BlockHostUntilDone().ok());
  CHECK(out == in);
  REQUIRE(written.Synchronize().ok());
  CHECK(written.PollForStatus() == se::Event<TestBackend>::State::kComplete);
}

TEST_CASE("PollForStatus is pending until the recording runs", "[event][async-callbacks]") {
  auto* executor = TestExecutor();
  se::Event event(executor);
  REQUIRE(event.Init());
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kComplete);  // never recorded
  std::atomic<bool> release{false};
  se::Stream stream(executor);
  stream.Init()
      .ThenDoHostCallback([&] {
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      })
      .ThenRecordEvent(&event);
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kPending);
  release = true;
  REQUIRE(event.Synchronize().ok());
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kComplete);
  REQUIRE(stream.BlockHostUntilDone().ok());
}

TEST_CASE("an uninitialized event reports an error", "[event][errors]") {
  se::Event event(TestExecutor());
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kError);
  CHECK(Mentions(event.Synchronize(), "not initialized"));
  REQUIRE(event.Init());
  CHECK_FALSE(event.Init());
  CHECK(Mentions(event.init_status(), "already initialized"));
}

TEST_CASE("a timer measures the work between start and stop", "[timer]") {
  auto* executor = TestExecutor();
  se::Timer timer(executor);
  se::Stream stream(executor);
  REQUIRE(stream.InitWithTimer(&timer)
              .ThenStartTimer(&timer)
              .ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); })
              .ThenStopTimer(&timer)
              .BlockHostUntilDone()
              .ok());
  auto elapsed = timer.ElapsedNanoseconds();
  REQUIRE(elapsed.ok());
  CHECK(elapsed.value() >= 19'000'000);
  CHECK(timer.Microseconds() == timer.Nanoseconds() / 1000);
  CHECK(timer.Microseconds() >= 19'000);
}

TEST_CASE("a timer spans work spread over several streams when it brackets their fork and join", "[timer]") {
  // The recipe of docs/api.md ("Timing work spread over several streams").
  auto* executor = TestExecutor();
  se::Timer timer(executor);
  se::Stream main(executor), first(executor), second(executor);
  REQUIRE(main.InitWithTimer(&timer).ok());
  REQUIRE(first.Init().ok());
  REQUIRE(second.Init().ok());
  const auto nap = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  main.ThenStartTimer(&timer);
  first.ThenWaitFor(&main).ThenDoHostCallback(nap);
  second.ThenWaitFor(&main).ThenDoHostCallback(nap).ThenDoHostCallback(nap);
  REQUIRE(main.ThenWaitFor(&first).ThenWaitFor(&second).ThenStopTimer(&timer).BlockHostUntilDone().ok());
  auto elapsed = timer.ElapsedNanoseconds();
  REQUIRE(elapsed.ok());
  CHECK(elapsed.value() >= 39'000'000);  // the longer share (second's two naps) lies inside
}

TEST_CASE("a timer that never ran reports why", "[timer][errors]") {
  se::Timer timer(TestExecutor());
  REQUIRE(timer.Init().ok());
  auto elapsed = timer.ElapsedNanoseconds();
  CHECK_FALSE(elapsed.ok());
  CHECK(Mentions(elapsed.status(), "never recorded"));
  CHECK(timer.Nanoseconds() == 0);
}

TEST_CASE("Timer::Init returns a Status that says why it failed", "[timer][errors]") {
  se::Timer timer(TestExecutor());
  se::Status first = timer.Init();
  REQUIRE(first.ok());
  CHECK(timer.initialized());
  se::Status again = timer.Init();
  CHECK(again.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(again, "Timer::Init"));
  CHECK(Mentions(again, "already initialized"));
  se::Timer<TestBackend> orphan(nullptr);
  se::Status null_parent = orphan.Init();
  CHECK(null_parent.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(null_parent, "null StreamExecutor"));
  CHECK_FALSE(orphan.initialized());
  // InitWithTimer hands the timer's failure to the stream.
  se::Stream stream(TestExecutor());
  stream.InitWithTimer(&timer);
  CHECK(Mentions(stream.status(), "already initialized"));
}

TEST_CASE("an event may be destroyed while another stream still has to wait on it", "[event][async-callbacks]") {
  auto* executor = TestExecutor();
  std::atomic<bool> release{false};
  bool after_wait = false;
  se::Stream recorder(executor), waiter(executor);
  recorder.Init();
  waiter.Init().ThenDoHostCallback([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  {
    se::Event event(executor);
    REQUIRE(event.Init());
    recorder.ThenRecordEvent(&event);
    waiter.ThenWaitFor(&event).ThenDoHostCallback([&] { after_wait = true; });
  }  // destroyed before `waiter` reaches its wait
  release = true;
  REQUIRE(waiter.BlockHostUntilDone().ok());
  CHECK(after_wait);
  REQUIRE(recorder.BlockHostUntilDone().ok());
}

TEST_CASE("events and timers move with their driver objects", "[event][timer]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(256);
  std::vector<int> in(256, 4), out(256, 0);
  se::Stream producer(executor), consumer(executor);
  producer.Init();
  consumer.Init();
  se::Event event(executor);
  REQUIRE(event.Init());
  producer.ThenMemcpyH2D<int>(in, device.ptr()).ThenRecordEvent(&event);
  se::Event moved(std::move(event));
  CHECK(moved.initialized());
  CHECK(moved.recorded());
  CHECK_FALSE(event.initialized());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  CHECK_FALSE(event.recorded());
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kError);
  CHECK(Mentions(event.Synchronize(), "not initialized"));
  consumer.ThenWaitFor(&moved).ThenMemcpyD2H<int>(device.cref(), out);
  REQUIRE(consumer.BlockHostUntilDone().ok());
  CHECK(out == in);
  REQUIRE(moved.Synchronize().ok());
  CHECK(moved.PollForStatus() == se::Event<TestBackend>::State::kComplete);
  // A moved-from event initializes again; assignment releases the target's event.
  REQUIRE(event.Init());
  event = std::move(moved);
  CHECK(event.recorded());
  CHECK_FALSE(moved.initialized());  // NOLINT(bugprone-use-after-move)
  producer.ThenRecordEvent(&moved);
  CHECK(Mentions(producer.status(), "not initialized"));

  se::Timer timer(executor);
  REQUIRE(timer.Init().ok());
  se::Stream timed(executor);
  timed.Init().ThenStartTimer(&timer).ThenMemcpyD2H<int>(device.cref(), out);
  se::Timer moved_timer(std::move(timer));
  CHECK_FALSE(timer.initialized());  // NOLINT(bugprone-use-after-move)
  timed.ThenStopTimer(&moved_timer);
  REQUIRE(timed.BlockHostUntilDone().ok());
  CHECK(moved_timer.ElapsedNanoseconds().ok());
  CHECK(Mentions(timer.ElapsedNanoseconds().status(), "never recorded"));
  REQUIRE(timer.Init().ok());
}

// Waits across executors of one platform (events and streams of device 1
// waited on by streams of device 0).
namespace {
// Devices 0 and 1 where the backend waits across executors, else nothing
// (the refusal itself is checked in lifetime_test.cpp).
std::optional<std::pair<se::StreamExecutor<TestBackend>*, se::StreamExecutor<TestBackend>*>>
TwoExecutorsThatWaitOnEachOther() {
  auto& platform = se::Platform<TestBackend>::Get();
  if constexpr (!se::CrossExecutorWaitBackend<TestBackend>) {
    SUCCEED("this backend refuses waits across executors");
    return std::nullopt;
  }
  if (platform.VisibleDeviceCount() < 2) {
    SUCCEED("one device (OpenCL runs this with POCL_DEVICES='pthread pthread')");
    return std::nullopt;
  }
  return std::pair{platform.ExecutorForDevice(0).ValueOrDie(), platform.ExecutorForDevice(1).ValueOrDie()};
}
}  // namespace

TEST_CASE("waits across executors of one platform order the work", "[lifetime][cross-executor]") {
  const auto executors = TwoExecutorsThatWaitOnEachOther();
  if (!executors) return;
  auto [first, second] = *executors;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> step{0};
    int seen_by_event_waiter = -1, seen_by_stream_waiter = -1;
    se::Stream producer(second), event_waiter(first), stream_waiter(first);
    se::Event produced(second);
    REQUIRE(produced.Init());
    test_gate::Gate gate;
    producer.Init();
    gate.Close(producer);  // the producer is busy until the gate opens
    producer.ThenDoHostCallback([&] { step = 1; }).ThenRecordEvent(&produced);
    event_waiter.Init().ThenWaitFor(&produced).ThenDoHostCallback([&] { seen_by_event_waiter = step.load(); });
    stream_waiter.Init().ThenWaitFor(&producer).ThenDoHostCallback([&] { seen_by_stream_waiter = step.load(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    gate.Open();
    REQUIRE(event_waiter.BlockHostUntilDone().ok());
    REQUIRE(stream_waiter.BlockHostUntilDone().ok());
    REQUIRE(producer.BlockHostUntilDone().ok());
    CHECK(seen_by_event_waiter == 1);
    CHECK(seen_by_stream_waiter == 1);
  }
}

TEST_CASE("a wait across executors is released when the other stream fails", "[lifetime][cross-executor]") {
  const auto executors = TwoExecutorsThatWaitOnEachOther();
  if (!executors) return;
  auto [first, second] = *executors;
  se::Stream producer(second), waiter(first);
  se::Event produced(second);
  REQUIRE(produced.Init());
  producer.Init().ThenDoHostCallback([] { throw std::runtime_error("producer failed"); }).ThenRecordEvent(&produced);
  bool ran = false;
  const se::Status waited =
      waiter.Init().ThenWaitFor(&produced).ThenDoHostCallback([&] { ran = true; }).BlockHostUntilDone();
  CHECK(waited.ok());  // the failure is the producer's, not the waiter's
  CHECK(ran);
  CHECK(producer.BlockHostUntilDone().code() == se::ErrorCode::kAborted);
}
