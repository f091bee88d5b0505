// The trace recorder (core/trace.hpp, docs/tracing.md) on every backend: the
// JSON it writes is read back and checked for the operations, their order on
// each stream, their device times, the flows from a record to its wait, the
// counters, and the errors of Start and Stop.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "generic/gate.hpp"
#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"
#include "json_reader.hpp"

namespace tk = test_kernels;
using test_gate::Gate;

namespace {

namespace json = se_test::json;

std::string TracePath(std::string_view what) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("se_trace_{}_{}_{}.json", TestBackend::kName, what, static_cast<long>(::getpid())))
      .string();
}

json::Value ReadTrace(const std::string& path) {
  std::ifstream file(path);
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  std::filesystem::remove(path);
  return json::Parse(text.str());
}

std::string Text(const json::Value& value, std::string_view key) {
  const json::Value* member = value.find(key);
  return member != nullptr && member->is_string() ? member->string : std::string();
}
double Number(const json::Value& value, std::string_view key) {
  const json::Value* member = value.find(key);
  return member != nullptr && member->is_number() ? member->number : -1.0;
}
// A time in microseconds, written with three decimals, as whole nanoseconds:
// compared as doubles, one operation's ts + dur can exceed the next one's ts
// by a rounding step when the two are the same nanosecond.
std::int64_t Nanoseconds(const json::Value& value, std::string_view key) {
  return std::llround(Number(value, key) * 1000.0);
}

struct Lane {
  double pid = -1, tid = -1;
};

// The lane whose thread_name is `name`.
Lane FindLane(const json::Value& trace, std::string_view name) {
  for (const json::Value& event : trace.find("traceEvents")->array) {
    if (Text(event, "ph") == "M" && Text(event, "name") == "thread_name" &&
        Text(*event.find("args"), "name").find(name) != std::string::npos) {
      return {Number(event, "pid"), Number(event, "tid")};
    }
  }
  FAIL("no lane named " << name);
  return {};
}

// The operations (complete or instant events) of a lane, in enqueue order.
std::vector<const json::Value*> Operations(const json::Value& trace, Lane lane) {
  std::vector<const json::Value*> ops;
  for (const json::Value& event : trace.find("traceEvents")->array) {
    const std::string ph = Text(event, "ph");
    if ((ph == "X" || ph == "i") && Number(event, "pid") == lane.pid && Number(event, "tid") == lane.tid) {
      ops.push_back(&event);
    }
  }
  std::sort(ops.begin(), ops.end(), [](const json::Value* a, const json::Value* b) {
    return Number(*a->find("args"), "op") < Number(*b->find("args"), "op");
  });
  return ops;
}

std::vector<std::string> Kinds(const std::vector<const json::Value*>& ops) {
  std::vector<std::string> kinds;
  for (const json::Value* op : ops) kinds.push_back(Text(*op, "cat"));
  return kinds;
}

const json::Value& CountersOf(const json::Value& trace, Lane lane) {
  for (const json::Value& c : trace.find("otherData")->find("counters")->array) {
    if (Number(c, "pid") == lane.pid && Number(c, "tid") == lane.tid) return c;
  }
  FAIL("no counters for the lane");
  return trace;
}

}  // namespace

TEST_CASE("a trace records each operation with its kind, order, device times and flows", "[trace]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel saxpy(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &saxpy).ok());
  constexpr std::uint32_t n = 1024;
  std::vector<float> x(n, 1.0f), y(n, 2.0f), out(n, 0.0f);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  auto dz = executor->AllocateOwnedArray<float>(n);
  se::Event done(executor);
  REQUIRE(done.Init());
  se::Stream producer(executor), consumer(executor);
  producer.SetName("producer");
  REQUIRE(producer.Init().ok());
  REQUIRE(consumer.Init().ok());

  const std::string path = TracePath("ops");
  REQUIRE(se::trace::Start(path).ok());
  CHECK(se::trace::Recording());
  CHECK(se::trace::Path() == path);
  const se::Status again = se::trace::Start(TracePath("again"));
  CHECK(again.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(again, "already recording to '" + path + "'"));
  consumer.SetName("consumer");  // after Init and the trace's start: the lane gets it all the same

  std::atomic<int> callbacks{0};
  producer.ThenMemcpyH2D<float>(x, dx.ptr())
      .ThenMemcpyH2D<float>(y, dy.ptr())
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), saxpy, 3.0f, dx.ptr(), dy.ptr(), n)
      .ThenRecordEvent(&done);
  consumer.ThenWaitFor(&done)
      .ThenMemcpyD2H<float>(dy.cref(), out)
      .ThenDoHostCallback([&] { ++callbacks; })
      .ThenMemZero(dz.ptr(), n * sizeof(float))
      .ThenMemcpyD2D(dz.ptr(), dy.cref());
  REQUIRE(producer.BlockHostUntilDone().ok());
  REQUIRE(consumer.BlockHostUntilDone().ok());
  CHECK(callbacks == 1);
  REQUIRE(se::trace::Stop().ok());
  CHECK_FALSE(se::trace::Recording());
  CHECK(se::trace::Path().empty());
  CHECK(se::trace::Stop().code() == se::ErrorCode::kFailedPrecondition);

  // What the streams and the executor counted, readable after the stop.
  const se::TraceCounters produced = producer.trace_counters();
  CHECK(produced.enqueued == 4);
  CHECK(produced.completed == 4);
  CHECK(produced.failed == 0);
  CHECK(produced.bytes_h2d == 2 * n * sizeof(float));
  CHECK(produced.bytes_d2h == 0);
  const se::TraceCounters consumed = consumer.trace_counters();
  CHECK(consumed.enqueued == 5);
  CHECK(consumed.bytes_d2h == n * sizeof(float));
  CHECK(consumed.bytes_d2d == n * sizeof(float));
  const se::TraceCounters all = executor->trace_counters();
  CHECK(all.enqueued == 9);
  CHECK(all.bytes_h2d == produced.bytes_h2d);

  const json::Value trace = ReadTrace(path);
  REQUIRE(trace.is_object());
  CHECK(Text(*trace.find("otherData"), "streamexecutor") == fmt::format("{}.{}.{}", STREAMEXECUTOR_VERSION_MAJOR,
                                                                        STREAMEXECUTOR_VERSION_MINOR,
                                                                        STREAMEXECUTOR_VERSION_PATCH));
  const Lane p = FindLane(trace, "'producer'");
  const Lane c = FindLane(trace, "'consumer'");
  CHECK(p.pid == c.pid);
  CHECK(p.tid != c.tid);
  // The executor's process carries its label.
  bool labelled = false;
  for (const json::Value& event : trace.find("traceEvents")->array) {
    if (Text(event, "ph") == "M" && Text(event, "name") == "process_name" && Number(event, "pid") == p.pid) {
      labelled = Text(*event.find("args"), "name") == executor->DeviceLabel();
    }
  }
  CHECK(labelled);

  const auto produced_ops = Operations(trace, p);
  const auto consumed_ops = Operations(trace, c);
  CHECK(Kinds(produced_ops) == std::vector<std::string>{"memcpy_h2d", "memcpy_h2d", "launch", "record_event"});
  CHECK(Kinds(consumed_ops) == std::vector<std::string>{"wait", "memcpy_d2h", "host_callback", "memset", "memcpy_d2d"});
  REQUIRE(produced_ops.size() == 4);
  REQUIRE(consumed_ops.size() == 5);
  const json::Value& launch = *produced_ops[2];
  CHECK(Text(launch, "name") == "saxpy");
  const json::Value& launch_args = *launch.find("args");
  REQUIRE(launch_args.find("grid") != nullptr);
  CHECK(launch_args.find("grid")->array.at(0).number == n / 64);
  CHECK(launch_args.find("block")->array.at(0).number == 64);
  CHECK(Number(*produced_ops[0]->find("args"), "bytes") == n * sizeof(float));

  // Every operation has device times, in stream order on its lane, none
  // starting before it was enqueued.
  for (const auto* ops : {&produced_ops, &consumed_ops}) {
    std::int64_t previous_end = 0;
    for (const json::Value* op : *ops) {
      INFO(Text(*op, "name") << " on " << TestBackend::kName);
      REQUIRE(Text(*op, "ph") == "X");
      CHECK(Nanoseconds(*op, "dur") >= 0);
      CHECK(Nanoseconds(*op, "ts") >= previous_end);
      CHECK(Nanoseconds(*op, "ts") >= Nanoseconds(*op->find("args"), "enqueue_us"));
      previous_end = Nanoseconds(*op, "ts") + Nanoseconds(*op, "dur");
    }
  }
  // The wait ends after the record it waited for.
  const std::int64_t record_end_ns = Nanoseconds(*produced_ops[3], "ts") + Nanoseconds(*produced_ops[3], "dur");
  const std::int64_t wait_end_ns = Nanoseconds(*consumed_ops[0], "ts") + Nanoseconds(*consumed_ops[0], "dur");
  CHECK(wait_end_ns >= record_end_ns);
  const double record_end = static_cast<double>(record_end_ns) / 1000.0;
  const double wait_end = static_cast<double>(wait_end_ns) / 1000.0;

  // The flow: from the record, on the producer's lane, to the wait.
  const json::Value* start = nullptr;
  const json::Value* finish = nullptr;
  for (const json::Value& event : trace.find("traceEvents")->array) {
    if (Text(event, "ph") == "s") start = &event;
    if (Text(event, "ph") == "f") finish = &event;
  }
  REQUIRE(start != nullptr);
  REQUIRE(finish != nullptr);
  CHECK(Number(*start, "id") == Number(*finish, "id"));
  CHECK(Number(*start, "tid") == p.tid);
  CHECK(Number(*finish, "tid") == c.tid);
  CHECK(Text(*finish, "bp") == "e");
  CHECK(Number(*start, "ts") == Approx(record_end).margin(0.0015));
  CHECK(Number(*finish, "ts") == Approx(wait_end).margin(0.0015));

  const json::Value& counted = CountersOf(trace, p);
  CHECK(Number(counted, "enqueued") == 4);
  CHECK(Number(counted, "completed") == 4);
  CHECK(Number(counted, "bytes_h2d") == 2 * n * sizeof(float));
}

TEST_CASE("a wait on another stream links to that stream's last operation", "[trace]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<int>(256);
  std::vector<int> host(256, 7);
  se::Stream first(executor), second(executor);
  REQUIRE(first.Init().SetName("first").ok());
  REQUIRE(second.Init().SetName("second").ok());
  const std::string path = TracePath("join");
  REQUIRE(se::trace::Start(path).ok());
  first.ThenMemcpyH2D<int>(host, device.ptr());
  second.ThenWaitFor(&first).ThenMemcpyD2H<int>(device.cref(), host);
  REQUIRE(second.BlockHostUntilDone().ok());
  REQUIRE(first.BlockHostUntilDone().ok());
  REQUIRE(se::trace::Stop().ok());
  const json::Value trace = ReadTrace(path);
  const Lane a = FindLane(trace, "'first'");
  const Lane b = FindLane(trace, "'second'");
  // The join is a record on the other stream and a wait on this one.
  CHECK(Kinds(Operations(trace, a)) == std::vector<std::string>{"memcpy_h2d", "record_event"});
  CHECK(Kinds(Operations(trace, b)) == std::vector<std::string>{"wait", "memcpy_d2h"});
  int flows = 0;
  for (const json::Value& event : trace.find("traceEvents")->array) {
    if (Text(event, "ph") == "s") {
      ++flows;
      CHECK(Number(event, "tid") == a.tid);
    }
  }
  CHECK(flows == 1);
}

TEST_CASE("trace::Range records the calling thread's named range", "[trace]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());
  {
    se::trace::Range unrecorded("before the trace");  // nothing observes: nothing recorded
  }
  const std::string path = TracePath("range");
  REQUIRE(se::trace::Start(path).ok());
  {
    se::trace::Range range("decode frame");
    stream.ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
    REQUIRE(stream.BlockHostUntilDone().ok());
  }
  REQUIRE(se::trace::Stop().ok());
  const json::Value trace = ReadTrace(path);
  int ranges = 0;
  for (const json::Value& event : trace.find("traceEvents")->array) {
    if (Text(event, "cat") != "range") continue;
    ++ranges;
    CHECK(Text(event, "name") == "decode frame");
    CHECK(Text(event, "ph") == "X");
    CHECK(Number(event, "dur") >= 2000);
  }
  CHECK(ranges == 1);
  const Lane lane = FindLane(trace, "thread ");
  CHECK(lane.pid >= 1);
}

TEST_CASE("trace::Start refuses an unwritable or empty path; Stop without a trace is refused", "[trace][errors]") {
  const se::Status unwritable = se::trace::Start("/nonexistent-directory/trace.json");
  CHECK(unwritable.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(unwritable, "/nonexistent-directory/trace.json"));
  CHECK(Mentions(unwritable, "cannot open the file for writing"));
  CHECK_FALSE(se::trace::Recording());
  CHECK(se::trace::Start("").code() == se::ErrorCode::kInvalidArgument);
  const se::Status stop = se::trace::Stop();
  CHECK(stop.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(stop, "no trace is recording"));
}

TEST_CASE("two threads starting a trace get one trace, and both threads' work is in it", "[trace]") {
  auto* executor = TestExecutor();
  const std::string path = TracePath("threads");
  std::atomic<int> started{0}, refused{0}, finished{0};
  std::atomic<bool> go{false};
  auto work = [&](const char* name) {
    auto device = executor->AllocateOwnedArray<std::uint32_t>(64);  // each its own: no race between the fills
    se::Stream stream(executor);
    stream.Init().SetName(name);
    while (!go.load()) std::this_thread::yield();
    const se::Status s = se::trace::Start(path);
    if (s.ok()) ++started;
    if (s.code() == se::ErrorCode::kFailedPrecondition) ++refused;
    // Both threads enqueue only once one of them has started the trace.
    while (!se::trace::Recording()) std::this_thread::yield();
    for (int i = 0; i < 50; ++i) stream.ThenMemset32(device.ptr(), static_cast<std::uint32_t>(i), 64 * 4);
    // Counted, not CHECKed: Catch's assertions are not thread-safe (TSan saw both threads in them).
    if (stream.BlockHostUntilDone().ok()) ++finished;
  };
  std::thread a(work, "thread a"), b(work, "thread b");
  go = true;
  a.join();
  b.join();
  CHECK(started == 1);
  CHECK(refused == 1);
  CHECK(finished == 2);
  REQUIRE(se::trace::Stop().ok());
  const json::Value trace = ReadTrace(path);
  CHECK(Kinds(Operations(trace, FindLane(trace, "'thread a'"))) == std::vector<std::string>(50, "memset"));
  CHECK(Kinds(Operations(trace, FindLane(trace, "'thread b'"))) == std::vector<std::string>(50, "memset"));
}

TEST_CASE("work not finished when the trace stops is written without device times", "[trace][async-callbacks]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  REQUIRE(stream.Init().SetName("held").ok());
  const std::string path = TracePath("held");
  REQUIRE(se::trace::Start(path).ok());
  Gate gate;
  gate.Close(stream);
  // Stop must not wait for the held stream: the callback waits for this thread.
  REQUIRE(se::trace::Stop().ok());
  gate.Open();
  REQUIRE(stream.BlockHostUntilDone().ok());
  const json::Value trace = ReadTrace(path);
  const auto ops = Operations(trace, FindLane(trace, "'held'"));
  REQUIRE(ops.size() == 1);
  CHECK(Text(*ops[0], "ph") == "i");
  CHECK(Text(*ops[0]->find("args"), "device_time") == "not finished when the trace stopped");

  // The stream records again, on a new lane, in the next trace; counters start from zero.
  const std::string next = TracePath("next");
  REQUIRE(se::trace::Start(next).ok());
  CHECK(stream.trace_counters().enqueued == 0);
  stream.ThenDoHostCallback([] {});
  REQUIRE(stream.BlockHostUntilDone().ok());
  REQUIRE(se::trace::Stop().ok());
  CHECK(stream.trace_counters().enqueued == 1);
  CHECK(stream.trace_counters().completed == 1);
  const json::Value second = ReadTrace(next);
  const auto again = Operations(second, FindLane(second, "'held'"));
  REQUIRE(again.size() == 1);
  CHECK(Text(*again[0], "ph") == "X");
}

TEST_CASE("a trace records the executor's allocations on its memory lane", "[trace]") {
  auto* executor = TestExecutor();
  const std::string path = TracePath("memory");
  REQUIRE(se::trace::Start(path).ok());
  {
    auto memory = executor->AllocateOwnedArray<std::uint32_t>(256);
    REQUIRE(memory.ok());
  }
  REQUIRE(se::trace::Stop().ok());
  const json::Value trace = ReadTrace(path);
  const auto ops = Operations(trace, FindLane(trace, "memory "));
  REQUIRE(ops.size() == 2);
  CHECK(Kinds(ops) == std::vector<std::string>{"allocation", "allocation"});
  CHECK(Text(*ops[0], "name") == "Allocate");
  CHECK(Text(*ops[1], "name") == "Deallocate");
  CHECK(Number(*ops[0]->find("args"), "bytes") == 1024);
  CHECK(Text(*ops[0], "ph") == "i");
}

TEST_CASE("a trace records the executor's synchronous operations on their lane", "[trace]") {
  auto* executor = TestExecutor();
  auto device = executor->AllocateOwnedArray<std::uint32_t>(256);
  std::vector<std::uint32_t> host(256, 5), back(256, 0);
  se::Stream stream(executor);
  REQUIRE(stream.Init().SetName("busy").ok());
  const std::string path = TracePath("synchronous");
  REQUIRE(se::trace::Start(path).ok());
  // Work queued on a stream, which the first synchronous call runs after
  // (the 5s read back below show it did).
  stream.ThenMemZero(device.ptr(), 256 * 4);
  REQUIRE(executor->SynchronousMemcpyH2D<std::uint32_t>(host, device.ptr()).ok());
  REQUIRE(executor->SynchronousMemset32(device.ptr(), 9u, 128 * 4).ok());
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(device.cref(), back).ok());
  // Refused before it runs: not an operation of the trace, as on a stream.
  CHECK_FALSE(executor->SynchronousMemZero(nullptr, 4).ok());
  REQUIRE(stream.BlockHostUntilDone().ok());
  const se::TraceCounters counters = executor->trace_counters();
  REQUIRE(se::trace::Stop().ok());
  CHECK(back[0] == 9);
  CHECK(back[200] == 5);

  const json::Value trace = ReadTrace(path);
  const Lane lane = FindLane(trace, "synchronous ");
  CHECK(lane.pid == FindLane(trace, "busy").pid);  // the executor's process
  const auto ops = Operations(trace, lane);
  REQUIRE(ops.size() == 3);
  CHECK(Kinds(ops) == std::vector<std::string>{"memcpy_h2d", "memset", "memcpy_d2h"});
  CHECK(Text(*ops[0], "name") == "SynchronousMemcpyH2D");
  CHECK(Text(*ops[2], "name") == "SynchronousMemcpyD2H");
  CHECK(Number(*ops[0]->find("args"), "bytes") == 1024);
  CHECK(Number(*ops[1]->find("args"), "bytes") == 512);
  // Spans from the call to its return, one after the other on the lane.
  std::int64_t previous_end = 0;
  for (const json::Value* op : ops) {
    INFO(Text(*op, "name") << " on " << TestBackend::kName);
    REQUIRE(Text(*op, "ph") == "X");
    CHECK(Nanoseconds(*op, "ts") >= Nanoseconds(*op->find("args"), "enqueue_us"));
    CHECK(Nanoseconds(*op, "ts") >= previous_end);
    previous_end = Nanoseconds(*op, "ts") + Nanoseconds(*op, "dur");
  }
  const json::Value& lane_counters = CountersOf(trace, lane);
  CHECK(Number(lane_counters, "enqueued") == 3);
  CHECK(Number(lane_counters, "completed") == 3);
  CHECK(Number(lane_counters, "bytes_h2d") == 1024);
  // The executor's counters add the synchronous copies to its streams' (none here).
  CHECK(counters.bytes_h2d == 1024);
  CHECK(counters.bytes_d2h == 1024);
}

TEST_CASE("a command buffer's submission is one operation of the trace", "[trace][command-buffer]") {
  if constexpr (se::CommandBufferBackend<TestBackend>) {
    auto* executor = TestExecutor();
    auto device = executor->AllocateOwnedArray<std::uint32_t>(256);
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemset32(device.ptr(), 7u, 256 * 4).ThenMemZero(device.ptr(), 128 * 4);
    REQUIRE(buffer.ok());
    se::Stream stream(executor);
    REQUIRE(stream.Init().SetName("replay").ok());
    const std::string path = TracePath("buffer");
    REQUIRE(se::trace::Start(path).ok());
    stream.ThenSubmit(&buffer).ThenSubmit(&buffer);
    REQUIRE(stream.BlockHostUntilDone().ok());
    REQUIRE(se::trace::Stop().ok());
    const json::Value trace = ReadTrace(path);
    const auto ops = Operations(trace, FindLane(trace, "'replay'"));
    CHECK(Kinds(ops) == std::vector<std::string>{"command_buffer", "command_buffer"});
    for (const json::Value* op : ops) CHECK(Text(*op, "ph") == "X");
  }
}
