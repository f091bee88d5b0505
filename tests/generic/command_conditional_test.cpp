// CommandBuffer conditionals: ThenIf and ThenWhile driven by an int32 in
// device memory, with bodies recorded, nested or captured; and what they
// refuse (host work in a body, a small or freed condition, clones).
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

namespace {

struct Loop {
  explicit Loop(se::StreamExecutor<TestBackend>* e) : executor(e), kernel(e) {
    REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
    REQUIRE(executor->SynchronousMemZero(condition.ptr(), 4).ok());
    REQUIRE(executor->SynchronousMemZero(counter.ptr(), 4).ok());
  }
  // One iteration: counter += 1, condition -= 1.
  void RecordCountdown(se::CommandBuffer<TestBackend>& body) {
    body.Init()
        .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, counter.ptr(), 1)
        .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, condition.ptr(), -1);
    INFO(body.status().ToString());
    REQUIRE(body.ok());
  }
  std::int32_t Read(const se::DeviceMemory<std::int32_t>& memory) {
    std::vector<std::int32_t> out(1);
    REQUIRE(executor->SynchronousMemcpyD2H<std::int32_t>(memory, out).ok());
    return out[0];
  }
  void Write(se::DeviceMemory<std::int32_t>* memory, std::int32_t value) {
    std::vector<std::int32_t> in{value};
    REQUIRE(executor->SynchronousMemcpyH2D<std::int32_t>(in, memory).ok());
  }

  se::StreamExecutor<TestBackend>* executor;
  tk::AddKernel kernel;
  se::ScopedDeviceMemory<std::int32_t> condition = executor->AllocateOwnedArray<std::int32_t>(1);
  se::ScopedDeviceMemory<std::int32_t> counter = executor->AllocateOwnedArray<std::int32_t>(1);
};

}  // namespace

TEST_CASE("ThenWhile runs its body until the body sets the condition to zero",
          "[command-conditional][kernel-results]") {
  Loop loop(TestExecutor());
  se::CommandBuffer body(loop.executor);
  loop.RecordCountdown(body);
  std::vector<std::int32_t> start{5};
  se::CommandBuffer buffer(loop.executor);
  buffer.Init().ThenMemcpyH2D<std::int32_t>(start, loop.condition.ptr()).ThenWhile(loop.condition.cref(), &body);
  INFO(buffer.status().ToString());
  REQUIRE(buffer.ok());
  CHECK(buffer.size() == 2);
  se::Stream stream(loop.executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 5);
  CHECK(loop.Read(loop.condition.cref()) == 0);
  // Each submission loops again, from the value the buffer writes.
  start[0] = 3;
  REQUIRE(stream.ThenSubmit(&buffer).ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 11);
}

TEST_CASE("a While whose condition is zero runs nothing; work after it still runs",
          "[command-conditional][kernel-results]") {
  Loop loop(TestExecutor());
  se::CommandBuffer body(loop.executor);
  loop.RecordCountdown(body);
  se::CommandBuffer buffer(loop.executor);
  buffer.Init()
      .ThenWhile(loop.condition.cref(), &body)
      .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), loop.kernel, loop.counter.ptr(), 100);
  se::Stream stream(loop.executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 100);
  CHECK(loop.Read(loop.condition.cref()) == 0);
}

TEST_CASE("ThenIf runs its body once when the condition is non-zero, never when zero",
          "[command-conditional][kernel-results]") {
  Loop loop(TestExecutor());
  se::CommandBuffer body(loop.executor);
  body.Init().ThenLaunch(se::ThreadDim(1), se::BlockDim(1), loop.kernel, loop.counter.ptr(), 7);
  se::CommandBuffer buffer(loop.executor);
  buffer.Init().ThenIf(loop.condition.cref(), &body);
  INFO(buffer.status().ToString());
  REQUIRE(buffer.ok());
  se::Stream stream(loop.executor);
  stream.Init();
  loop.Write(loop.condition.ptr(), 0);
  REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 0);
  loop.Write(loop.condition.ptr(), -2);  // any non-zero value is true
  REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 7);
  CHECK(loop.Read(loop.condition.cref()) == -2);  // an If does not change it
}

TEST_CASE("conditionals nest: an If inside a While, bodies holding nested buffers and fills",
          "[command-conditional][kernel-results]") {
  Loop loop(TestExecutor());
  auto flag = loop.executor->AllocateOwnedArray<std::int32_t>(1);
  auto hits = loop.executor->AllocateOwnedArray<std::int32_t>(1);
  REQUIRE(loop.executor->SynchronousMemZero(hits.ptr(), 4).ok());
  // inner: hits += 10 when flag != 0
  se::CommandBuffer add_hits(loop.executor);
  add_hits.Init().ThenLaunch(se::ThreadDim(1), se::BlockDim(1), loop.kernel, hits.ptr(), 10);
  se::CommandBuffer countdown(loop.executor);
  loop.RecordCountdown(countdown);
  // The While's body: flag = 1, if (flag) hits += 10, then the countdown as a nested buffer.
  se::CommandBuffer body(loop.executor);
  body.Init().ThenMemset32(flag.ptr(), 1u, 4).ThenIf(flag.cref(), &add_hits).ThenSubmit(&countdown);
  INFO(body.status().ToString());
  REQUIRE(body.ok());
  std::vector<std::int32_t> start{4};
  se::CommandBuffer buffer(loop.executor);
  buffer.Init().ThenMemcpyH2D<std::int32_t>(start, loop.condition.ptr()).ThenWhile(loop.condition.cref(), &body);
  INFO(buffer.status().ToString());
  REQUIRE(buffer.ok());
  se::Stream stream(loop.executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 4);
  CHECK(loop.Read(hits.cref()) == 40);
  // A buffer holding a conditional nests like any other.
  se::CommandBuffer outer(loop.executor);
  outer.Init().ThenSubmit(&buffer);
  REQUIRE(stream.ThenSubmit(&outer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 8);
}

TEST_CASE("a While body captured from a stream", "[command-conditional][kernel-results][capture]") {
  Loop loop(TestExecutor());
  se::CommandBuffer body(loop.executor);
  body.Init();
  se::Stream stream(loop.executor);
  stream.Init();
  REQUIRE(stream.BeginCapture(&body).ok());
  stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), loop.kernel, loop.counter.ptr(), 2)
      .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), loop.kernel, loop.condition.ptr(), -1);
  REQUIRE(stream.EndCapture(&body).ok());
  se::CommandBuffer buffer(loop.executor);
  buffer.Init().ThenWhile(loop.condition.cref(), &body);
  loop.Write(loop.condition.ptr(), 3);
  REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 6);
}

TEST_CASE("a conditional body holds device work only", "[command-conditional][errors]") {
  Loop loop(TestExecutor());
  std::vector<std::int32_t> host(1, 1);
  SECTION("a host-to-device copy") {
    se::CommandBuffer body(loop.executor);
    body.Init().ThenMemcpyH2D<std::int32_t>(host, loop.counter.ptr());
    se::CommandBuffer buffer(loop.executor);
    buffer.Init().ThenWhile(loop.condition.cref(), &body);
    CHECK(buffer.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK_THAT(buffer.status().message(), Catch::Contains("host work (ThenMemcpyH2D)"));
  }
  SECTION("a host callback, even nested one level down") {
    se::CommandBuffer inner(loop.executor);
    inner.Init().ThenDoHostCallback([] {});
    se::CommandBuffer body(loop.executor);
    body.Init().ThenSubmit(&inner);
    se::CommandBuffer buffer(loop.executor);
    buffer.Init().ThenIf(loop.condition.cref(), &body);
    CHECK_THAT(buffer.status().message(), Catch::Contains("host work (ThenDoHostCallback)"));
  }
  SECTION("an event record") {
    se::Event event(loop.executor);
    REQUIRE(event.Init());
    se::CommandBuffer body(loop.executor);
    body.Init().ThenRecordEvent(&event);
    se::CommandBuffer buffer(loop.executor);
    buffer.Init().ThenIf(loop.condition.cref(), &body);
    CHECK_THAT(buffer.status().message(), Catch::Contains("host work (ThenRecordEvent)"));
  }
}

TEST_CASE("conditionals refuse bad bodies and conditions, and clones", "[command-conditional][errors]") {
  Loop loop(TestExecutor());
  se::CommandBuffer body(loop.executor);
  loop.RecordCountdown(body);
  SECTION("a null, uninitialized or self body") {
    se::CommandBuffer buffer(loop.executor);
    buffer.Init().ThenWhile(loop.condition.cref(), nullptr);
    CHECK(buffer.status().code() == se::ErrorCode::kInvalidArgument);
    se::CommandBuffer blank(loop.executor);
    se::CommandBuffer other(loop.executor);
    other.Init().ThenIf(loop.condition.cref(), &blank);
    CHECK(other.status().code() == se::ErrorCode::kFailedPrecondition);
    se::CommandBuffer self(loop.executor);
    self.Init().ThenWhile(loop.condition.cref(), &self);
    CHECK_THAT(self.status().message(), Catch::Contains("cannot hold itself"));
  }
  SECTION("a condition smaller than an int32") {
    auto whole = loop.executor->AllocateOwnedArray<std::int32_t>(2);
    se::DeviceMemory<std::int32_t> empty = whole.cref().GetSlice(0, 0);
    se::CommandBuffer buffer(loop.executor);
    buffer.Init().ThenWhile(empty, &body);
    CHECK(!buffer.ok());
  }
  SECTION("a condition freed before the submission") {
    auto condition = loop.executor->AllocateArray<std::int32_t>(1);
    se::CommandBuffer buffer(loop.executor);
    buffer.Init().ThenWhile(condition, &body);
    INFO(buffer.status().ToString());
    REQUIRE(buffer.ok());
    REQUIRE(loop.executor->Deallocate(&condition).ok());
    se::Stream stream(loop.executor);
    stream.Init().ThenSubmit(&buffer);
    CHECK(stream.status().code() != se::ErrorCode::kOk);
    CHECK_THAT(stream.status().message(), Catch::Contains("no longer valid"));
  }
  SECTION("a clone of a buffer holding a conditional") {
    se::CommandBuffer buffer(loop.executor);
    buffer.Init().ThenWhile(loop.condition.cref(), &body);
    auto clone = buffer.Clone();
    CHECK(clone->status().code() == se::ErrorCode::kUnimplemented);
    CHECK_THAT(clone->status().message(), Catch::Contains("ThenIf or ThenWhile"));
  }
}

TEST_CASE("a conditional's buffers may be destroyed while its submission is queued",
          "[command-conditional][kernel-results][lifetime]") {
  Loop loop(TestExecutor());
  se::Stream stream(loop.executor);
  stream.Init();
  {
    auto body = std::make_unique<se::CommandBuffer<TestBackend>>(loop.executor);
    loop.RecordCountdown(*body);
    auto buffer = std::make_unique<se::CommandBuffer<TestBackend>>(loop.executor);
    buffer->Init().ThenMemset32(loop.condition.ptr(), 6u, 4).ThenWhile(loop.condition.cref(), body.get());
    body.reset();  // the buffer recorded the body as it was
    stream.ThenSubmit(buffer.get());
    buffer.reset();  // while its submission may still be queued
  }
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(loop.Read(loop.counter.cref()) == 6);
}
