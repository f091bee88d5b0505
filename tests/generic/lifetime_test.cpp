// Lifetimes and misuse as users write them: freed, stale and foreign memory at
// launch, frees while work is queued, events re-recorded or destroyed while
// pending, kernels destroyed before their launch ran, a stream without an
// executor. Every case must give an error or the right result, never a crash.
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
#include "generic/test_kernels.hpp"

namespace tk = test_kernels;
using namespace std::chrono_literals;

namespace {

using test_gate::Gate;

}  // namespace

TEST_CASE("a launch with freed memory is an error, not a fault", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  se::DeviceMemory<int> memory = executor->AllocateArray<int>(4);
  se::DeviceMemory<int> copy = memory;  // a second view of the same allocation
  REQUIRE(executor->Deallocate(&memory).ok());
  se::Stream stream(executor);
  se::Status status =
      stream.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, &copy, 1).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "kernel 'add'"));
  CHECK(Mentions(status, "argument 0 is not live memory of this executor"));
}

TEST_CASE("a stale view never reaches a newer allocation at the same address", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  // Allocators hand a freed block straight back for a request of the same
  // size; try a few times so that the addresses really collide.
  for (int attempt = 0; attempt < 8; ++attempt) {
    se::DeviceMemory<int> old_memory = executor->AllocateArray<int>(16);
    const se::DeviceMemory<int> stale = old_memory;
    REQUIRE(executor->Deallocate(&old_memory).ok());
    auto fresh = executor->AllocateOwnedArray<int>(16);
    REQUIRE(fresh.ok());
    std::vector<int> zeros(16, 0);
    REQUIRE(executor->SynchronousMemcpyH2D<int>(zeros, fresh.ptr()).ok());

    se::DeviceMemory<int> stale_copy = stale;
    se::Stream stream(executor);
    CHECK_FALSE(stream.Init().ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, &stale_copy, 5).ok());
    CHECK_FALSE(executor->SynchronousMemZero(&stale_copy, 16).ok());
    se::Status refree = executor->Deallocate(&stale_copy);
    CHECK(refree.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(refree, "already freed"));

    std::vector<int> out(16, -1);
    REQUIRE(executor->SynchronousMemcpyD2H<int>(fresh.cref(), out).ok());
    CHECK(out == zeros);  // untouched, and still live
  }
}

TEST_CASE("a stale ScopedDeviceMemory's Reset does not free a newer allocation", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  auto owner = executor->AllocateOwnedArray<float>(8);
  se::DeviceMemory<float> alias = *owner;
  REQUIRE(executor->Deallocate(&alias).ok());  // freed behind the owner's back
  auto newer = executor->AllocateOwnedArray<float>(8);
  REQUIRE(newer.ok());
  se::Status reset = owner.Reset();
  CHECK(reset.code() == se::ErrorCode::kFailedPrecondition);
  std::vector<float> ones(8, 1.0f), out(8, 0.0f);
  REQUIRE(executor->SynchronousMemcpyH2D<float>(ones, newer.ptr()).ok());
  REQUIRE(executor->SynchronousMemcpyD2H<float>(newer.cref(), out).ok());
  CHECK(out == ones);
}

TEST_CASE("memory freed while queued work uses it stays valid until that work ran", "[lifetime][async-callbacks]") {
  auto* executor = TestExecutor();
  constexpr int kCount = 1 << 16;
  std::vector<int> in(kCount), out(kCount, 0);
  for (int i = 0; i < kCount; ++i) in[static_cast<std::size_t>(i)] = i * 3;
  Gate gate;
  se::Stream stream(executor);
  stream.Init();
  gate.Close(stream);
  {
    auto buffer = executor->AllocateOwnedArray<int>(kCount);
    stream.ThenMemcpyH2D<int>(in, buffer.ptr()).ThenMemcpyD2H<int>(buffer.cref(), out);
    // A second idle stream must not hold the release back.
    se::Stream idle(executor);
    idle.Init();
  }  // freed here, with the copies still queued behind the gate
  // New allocations in between must not receive the pending block.
  auto other = executor->AllocateOwnedArray<int>(kCount);
  std::vector<int> sevens(kCount, 7);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(sevens, other.ptr()).ok());
  gate.Open();
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(out == in);
}

// A busy stream (held by a gate), an idle one and a consumer whose waits are
// set up by `enqueue`: the consumer must not run until the gate opens.
template <typename Enqueue>
void CheckConsumerWaitsForBusyStream(Enqueue&& enqueue) {
  auto* executor = TestExecutor();
  Gate gate;
  se::Stream busy(executor), idle(executor), consumer(executor);
  busy.Init();
  idle.Init();
  consumer.Init();
  gate.Close(busy);
  std::atomic<bool> consumer_ran{false};
  enqueue(executor, busy, idle, consumer);
  consumer.ThenDoHostCallback([&] { consumer_ran = true; });
  REQUIRE(idle.BlockHostUntilDone().ok());
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(consumer_ran.load());
  gate.Open();
  REQUIRE(consumer.BlockHostUntilDone().ok());
  CHECK(consumer_ran.load());
  REQUIRE(busy.BlockHostUntilDone().ok());
}

TEST_CASE("a wait targets the recording that was latest when it was enqueued", "[lifetime][event][async-callbacks]") {
  std::optional<se::Event<TestBackend>> event;
  CheckConsumerWaitsForBusyStream([&](auto* executor, auto& busy, auto& idle, auto& consumer) {
    event.emplace(executor);
    REQUIRE(event->Init());
    busy.ThenRecordEvent(&*event);
    consumer.ThenWaitFor(&*event);
    idle.ThenRecordEvent(&*event);  // a later recording, complete at once
  });
}

TEST_CASE("waits on a busy and an idle event both hold the stream", "[lifetime][event][async-callbacks]") {
  std::optional<se::Event<TestBackend>> a, b;
  CheckConsumerWaitsForBusyStream([&](auto* executor, auto& busy, auto& idle, auto& consumer) {
    a.emplace(executor);
    b.emplace(executor);
    REQUIRE(a->Init());
    REQUIRE(b->Init());
    busy.ThenRecordEvent(&*a);
    idle.ThenRecordEvent(&*b);
    consumer.ThenWaitFor(&*a).ThenWaitFor(&*b);
  });
}

TEST_CASE("an event destroyed with its recording still queued is safe", "[lifetime][event][async-callbacks]") {
  auto* executor = TestExecutor();
  Gate gate;
  se::Stream stream(executor);
  stream.Init();
  gate.Close(stream);
  for (int i = 0; i < 4; ++i) {
    se::Event event(executor);
    REQUIRE(event.Init());
    stream.ThenRecordEvent(&event);
  }
  gate.Open();
  CHECK(stream.BlockHostUntilDone().ok());
}

TEST_CASE("a TypedKernel destroyed while its launch is queued", "[lifetime][kernel][async-callbacks]") {
  auto* executor = TestExecutor();
  auto data = executor->AllocateOwnedArray<int>(8);
  REQUIRE(executor->SynchronousMemZero(data.ptr(), 8 * sizeof(int)).ok());
  Gate gate;
  se::Stream stream(executor);
  stream.Init();
  gate.Close(stream);
  {
    tk::AddKernel kernel(executor);
    REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
    stream.ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, data.ptr(), 3);
  }
  gate.Open();
  REQUIRE(stream.BlockHostUntilDone().ok());
  std::vector<int> out(8);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(data.cref(), out).ok());
  CHECK(out == std::vector<int>(8, 3));
}

TEST_CASE("a stream or event without an executor reports it", "[lifetime][errors]") {
  se::Stream<TestBackend> stream(nullptr);
  int host_value = 0;
  se::DeviceMemory<int> nothing;
  se::Status status = stream.Init().ThenMemcpy(&nothing, &host_value, sizeof(int)).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "null StreamExecutor"));
  se::Event<TestBackend> event(nullptr);
  CHECK_FALSE(event.Init());
  CHECK(Mentions(event.init_status(), "null StreamExecutor"));
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kError);
}

TEST_CASE("an out-of-range slice says so when it is used", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(8);
  se::DeviceMemory<int> slice = memory.cref().GetSlice(6, 4);
  CHECK(slice.IsNull());
  std::vector<int> host(4);
  se::Status sync = executor->SynchronousMemcpyH2D<int>(host, &slice);
  CHECK(Mentions(sync, "GetSlice"));
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  se::Stream stream(executor);
  se::Status launch =
      stream.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, &slice, 1).BlockHostUntilDone();
  CHECK(launch.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(launch, "GetSlice"));
}

TEST_CASE("a hand-built view whose offset plus size wraps is refused", "[lifetime][errors]") {
  // offset + size overflows 64 bits: a check that adds them would pass it.
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(8);
  const se::DeviceMemoryBase& real = memory.cref();
  se::DeviceMemory<int> wrapping(
      se::DeviceMemoryBase(real.opaque(), ~std::uint64_t{0} - 3, 8, real.allocation_id(), real.allocation_record()));
  std::vector<int> host(2);
  se::Status sync = executor->SynchronousMemcpyH2D(host.data(), sizeof(int) * host.size(), &wrapping);
  CHECK(sync.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(sync, "runs past its 32-byte allocation"));
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  se::Stream stream(executor);
  se::Status launch =
      stream.Init().ThenLaunch(se::ThreadDim(2), se::BlockDim(1), kernel, &wrapping, 1).BlockHostUntilDone();
  CHECK(launch.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(launch, "runs past its 32-byte allocation"));
}

// Views are checked against their allocation when they are made
// (DeviceMemoryBase's constructor), so that a launch compares only the id.
// These are the views that check must catch, and the one it must let through.
TEST_CASE("a hand-built view is checked against its allocation when it is made", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  auto memory = executor->AllocateOwnedArray<int>(8);
  auto other = executor->AllocateOwnedArray<int>(8);
  const se::DeviceMemoryBase& real = memory.cref();
  REQUIRE(executor->SynchronousMemZero(other.ptr(), 8 * sizeof(int)).ok());

  SECTION("one with another allocation's handle is refused") {
    se::DeviceMemory<int> crossed(
        se::DeviceMemoryBase(other.cref().opaque(), real.size(), 0, real.allocation_id(), real.allocation_record()));
    se::Stream stream(executor);
    se::Status launch =
        stream.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &crossed, 3).BlockHostUntilDone();
    CHECK(launch.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(launch, "argument 0 is not live memory of this executor"));
  }
  SECTION("one with no allocation id is refused") {
    se::DeviceMemory<int> anonymous(se::DeviceMemoryBase(
        real.opaque(), real.size(), 0, se::DeviceMemoryBase::kNoAllocationId, real.allocation_record()));
    se::Stream stream(executor);
    se::Status launch =
        stream.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &anonymous, 3).BlockHostUntilDone();
    CHECK(launch.code() == se::ErrorCode::kFailedPrecondition);
  }
  SECTION("a slice made after the allocation was freed stays refused") {
    se::DeviceMemory<int> doomed = executor->AllocateArray<int>(8);
    const se::DeviceMemory<int> before = doomed;
    REQUIRE(executor->Deallocate(&doomed).ok());
    se::DeviceMemory<int> slice = before.GetSlice(0, 4);
    se::Stream stream(executor);
    se::Status launch =
        stream.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, &slice, 3).BlockHostUntilDone();
    CHECK(launch.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(launch, "not live memory of this executor"));
  }
  std::vector<int> untouched(8, -1);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(other.cref(), untouched).ok());
  CHECK(untouched == std::vector<int>(8, 0));  // no launch reached the other allocation
}

TEST_CASE("a hand-built view that matches its allocation launches", "[lifetime][kernel-results]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  auto memory = executor->AllocateOwnedArray<int>(8);
  const se::DeviceMemoryBase& real = memory.cref();
  REQUIRE(executor->SynchronousMemZero(memory.ptr(), 8 * sizeof(int)).ok());
  se::DeviceMemory<int> rebuilt(
      se::DeviceMemoryBase(real.opaque(), real.size(), 0, real.allocation_id(), real.allocation_record()));
  CHECK(rebuilt.allocation_id() == real.allocation_id());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &rebuilt, 3).BlockHostUntilDone().ok());
  std::vector<int> out(8);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(memory.cref(), out).ok());
  CHECK(out == std::vector<int>(8, 3));
}

TEST_CASE("memset32 on a view that is not word-aligned is refused", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  auto bytes = executor->AllocateOwnedArray<std::uint8_t>(64);
  se::DeviceMemory<std::uint8_t> odd = bytes.cref().GetSlice(1, 8);
  se::Status sync = executor->SynchronousMemset32(&odd, 0xdeadbeef, 8);
  CHECK(sync.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(sync, "offset 1"));
  se::Stream stream(executor);
  se::Status queued = stream.Init().ThenMemset32(&odd, 0xdeadbeef, 8).BlockHostUntilDone();
  CHECK(queued.code() == se::ErrorCode::kInvalidArgument);
  se::DeviceMemory<std::uint8_t> aligned = bytes.cref().GetSlice(4, 8);
  CHECK(executor->SynchronousMemset32(&aligned, 0x01010101, 8).ok());
}

TEST_CASE("a shared-memory request whose size wraps is refused", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  tk::ReverseKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &kernel).ok());
  auto data = executor->AllocateOwnedArray<int>(4);
  se::Stream stream(executor);
  const std::uint64_t huge = (~std::uint64_t{0}) / sizeof(int) + 2;  // huge * 4 wraps to 4
  se::Status status =
      stream.Init()
          .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, data.ptr(), se::SharedDeviceMemory<int>(huge), 4u)
          .BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kResourceExhausted);
}

TEST_CASE("events, streams and memory of another executor are refused", "[lifetime][errors]") {
  auto* first = TestExecutor();
  auto* second = SecondExecutor();
  if (second == nullptr) {
    SUCCEED("one device: nothing of another executor to misuse");
    return;
  }
  se::Stream a(first), b(second);
  a.Init();
  b.Init();
  se::Event event(second);
  REQUIRE(event.Init());
  // Recording is always the event's own executor's business.
  se::Status record = se::Stream(first).Init().ThenRecordEvent(&event).BlockHostUntilDone();
  CHECK(record.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(record, "records only events of its own executor"));
  if constexpr (!se::CrossExecutorWaitBackend<TestBackend>) {
    se::Status wait_event = se::Stream(first).Init().ThenWaitFor(&event).BlockHostUntilDone();
    CHECK(wait_event.code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(wait_event, "belongs to"));
    se::Stream waiter(first);
    se::Status wait_stream = waiter.Init().ThenWaitFor(&b).BlockHostUntilDone();
    CHECK(wait_stream.code() == se::ErrorCode::kUnimplemented);
  }

  auto foreign = second->AllocateOwnedArray<int>(4);
  tk::AddKernel kernel(first);
  REQUIRE(first->GetKernel(tk::AddSpec(), &kernel).ok());
  se::Stream launcher(first);
  se::Status launch =
      launcher.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, foreign.ptr(), 1).BlockHostUntilDone();
  CHECK(launch.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(launch, "not live memory of this executor"));
  CHECK(Mentions(launch, "ThenCopyBetween"));

  // A kernel loaded on one executor, launched on another's stream: both are named.
  auto own = second->AllocateOwnedArray<int>(4);
  se::Status other_kernel = se::Stream(second)
                                .Init()
                                .ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, own.ptr(), 1)
                                .BlockHostUntilDone();
  CHECK(other_kernel.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(other_kernel, "ThenLaunch on " + second->DeviceLabel() + ": kernel 'add' was loaded by " +
                                   first->DeviceLabel() + ", another StreamExecutor"));
}

TEST_CASE("unified memory is registered with its executor like any allocation", "[lifetime][memory]") {
  auto* executor = TestExecutor();
  se::StatusOr<se::DeviceMemory<int>> unified = executor->TryAllocateUnifiedArray<int>(16);
  if (!unified.ok()) {
    CHECK(unified.status().code() == se::ErrorCode::kUnimplemented);  // e.g. an OpenCL device without SVM
    return;
  }
  se::DeviceMemory<int> memory = unified.value();
  std::vector<int> in(16, 5), out(16, 0);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(in, &memory).ok());
  REQUIRE(executor->SynchronousMemcpyD2H<int>(memory, out).ok());
  CHECK(out == in);
  se::DeviceMemory<int> stale = memory;
  REQUIRE(executor->Deallocate(&memory).ok());
  CHECK_FALSE(executor->SynchronousMemZero(&stale, 4).ok());
}

TEST_CASE("a nullptr literal for a DeviceMemory parameter compiles and is refused", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  se::Stream stream(executor);
  se::Status status =
      stream.Init().ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, nullptr, 1).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "argument 0 is a null DeviceMemory"));
}

TEST_CASE("work enqueued after a callback failed is skipped", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(4);
  std::vector<int> zeros(4, 0), ones(4, 1), out(4, -1);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(zeros, memory.ptr()).ok());
  std::atomic<bool> threw{false};
  se::Stream stream(executor);
  stream.Init().ThenDoHostCallback([&] {
    threw = true;
    throw std::runtime_error("callback failed");
  });
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!threw.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);  // let the failure be recorded
  bool later_callback_ran = false;
  se::Event event(executor);
  REQUIRE(event.Init());
  stream.ThenMemcpyH2D<int>(ones, memory.ptr())
      .ThenDoHostCallback([&] { later_callback_ran = true; })
      .ThenRecordEvent(&event);
  se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(Mentions(status, "callback failed"));
  CHECK_FALSE(later_callback_ran);
  CHECK(event.Synchronize().ok());  // records still complete
  REQUIRE(executor->SynchronousMemcpyD2H<int>(memory.cref(), out).ok());
  CHECK(out == zeros);
}

TEST_CASE("work queued behind a failing callback is skipped, records still complete",
          "[lifetime][errors][async-callbacks]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  auto memory = executor->AllocateOwnedArray<int>(4);
  std::vector<int> zeros(4, 0), ones(4, 1), out(4, -1);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(zeros, memory.ptr()).ok());
  std::atomic<bool> go{false};
  bool later_callback_ran = false;
  std::atomic<bool> waiter_ran{false};
  se::Event event(executor);
  REQUIRE(event.Init());
  se::Stream stream(executor), waiter(executor);
  stream.Init()
      .ThenDoHostCallback([&] {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!go.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
        throw std::runtime_error("callback failed");
      })
      .ThenMemcpyH2D<int>(ones, memory.ptr())
      .ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, memory.ptr(), 5)
      .ThenDoHostCallback([&] { later_callback_ran = true; })
      .ThenRecordEvent(&event);
  waiter.Init().ThenWaitFor(&event).ThenDoHostCallback([&] { waiter_ran = true; });
  REQUIRE(stream.ok());  // everything was accepted: the failure happens later, on the stream
  go = true;
  se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(Mentions(status, "callback failed"));
  CHECK_FALSE(later_callback_ran);
  CHECK(event.Synchronize().ok());
  CHECK(waiter.BlockHostUntilDone().ok());
  CHECK(waiter_ran.load());
  REQUIRE(executor->SynchronousMemcpyD2H<int>(memory.cref(), out).ok());
  if (kCallbackFailureSkipsQueuedWork) {
    CHECK(out == zeros);  // neither the copy nor the launch ran
  } else {
    CHECK(out == std::vector<int>(4, 6));  // both were queued before the failure, and ran
  }
}

TEST_CASE("a timer around work queued behind a callback", "[lifetime][timer][async-callbacks]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(1 << 16);
  Gate gate;
  se::Timer timer(executor);
  se::Stream stream(executor);
  stream.InitWithTimer(&timer);
  gate.Close(stream);
  stream.ThenStartTimer(&timer).ThenMemZero(memory.ptr(), memory.cref().size()).ThenStopTimer(&timer);
  gate.Open();
  REQUIRE(stream.BlockHostUntilDone().ok());
  se::StatusOr<std::uint64_t> elapsed = timer.ElapsedNanoseconds();
  REQUIRE(elapsed.ok());
}

TEST_CASE("BlockHostUntilDone from a callback of the same stream is refused on every backend", "[lifetime][errors]") {
  se::Stream stream(TestExecutor());
  se::Status inner;
  stream.Init().ThenDoHostCallback([&] { inner = stream.BlockHostUntilDone(); });
  se::Status outer = stream.BlockHostUntilDone();
  CHECK(inner.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(
      inner, kCallbacksMayCallTheBackend ? "from a host callback of the same stream" : "may not call the CUDA driver"));
  CHECK(outer.code() == se::ErrorCode::kFailedPrecondition);
}

namespace {
struct ThrowingCopy {
  ThrowingCopy() = default;
  ThrowingCopy(const ThrowingCopy&) { throw std::runtime_error("no copies today"); }
  ThrowingCopy& operator=(const ThrowingCopy&) = delete;
  void operator()() const {}
};
}  // namespace

TEST_CASE("a callable whose copy throws fails the call and leaves the queue usable", "[lifetime][errors]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  const ThrowingCopy callable;
  se::Status status = stream.Init().ThenDoHostCallback(callable).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kInternal);
  CHECK(Mentions(status, "no copies today"));
  // Nothing was left half-enqueued (a locked ring, a barrier on a user event
  // nobody completes): another stream works, and this one's destructor returns.
  se::Stream other(executor);
  bool ran = false;
  CHECK(other.Init().ThenDoHostCallback([&] { ran = true; }).BlockHostUntilDone().ok());
  CHECK(ran);
}

TEST_CASE("a callback may enqueue into its own stream, and the wait includes that work", "[lifetime]") {
  se::Stream stream(TestExecutor());
  std::atomic<int> ran{0};
  stream.Init().ThenDoHostCallback([&] {
    for (int i = 0; i < 100; ++i) stream.ThenDoHostCallback([&] { ++ran; });
  });
  const se::Status status = stream.BlockHostUntilDone();
  if constexpr (kCallbacksMayCallTheBackend) {
    REQUIRE(status.ok());
    CHECK(ran == 100);
  } else {
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "may not call the CUDA driver"));
    CHECK(ran == 0);
  }
}
