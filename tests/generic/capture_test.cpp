// Stream capture: what a stream is given between BeginCapture and EndCapture
// is recorded into a CommandBuffer instead of run, checked as the stream
// checks it; what a buffer cannot hold fails the capture with a clear
// Status, and the stream stays usable.
#include <catch2/catch.hpp>

#include <atomic>
#include <numeric>
#include <vector>

#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

TEST_CASE("captured work runs at each submission, not while capturing", "[capture][kernel-results]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  constexpr std::uint32_t n = 256;
  std::vector<float> x(n), y(n, 1.0f), out(n, -1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  REQUIRE(executor->SynchronousMemcpyH2D<float>(x, dx.ptr()).ok());
  std::atomic<int> callbacks{0};

  se::CommandBuffer buffer(executor);
  REQUIRE(buffer.Init().ok());
  se::Stream stream(executor);
  stream.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  CHECK(stream.capturing());
  stream.ThenMemcpyH2D<float>(y, dy.ptr())
      .ThenLaunch(se::ThreadDim(n), se::BlockDim(1), kernel, 2.0f, dx.ptr(), dy.ptr(), n)
      .ThenMemcpyD2H<float>(dy.cref(), out)
      .ThenDoHostCallback([&callbacks] { callbacks.fetch_add(1); });
  CHECK(stream.ok());
  REQUIRE(stream.EndCapture(&buffer).ok());
  CHECK_FALSE(stream.capturing());
  CHECK(buffer.size() == 4);
  CHECK(callbacks.load() == 0);  // recorded, not run
  CHECK(out[1] == -1.0f);

  for (int submission = 1; submission <= 3; ++submission) {
    std::fill(out.begin(), out.end(), -1.0f);
    REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
    CHECK(callbacks.load() == submission);
    for (std::uint32_t i = 0; i < n; i += 17) CHECK(out[i] == 1.0f + 2.0f * static_cast<float>(i));
  }
  // After the capture the stream runs its work again.
  std::vector<float> again(n, 0.0f);
  REQUIRE(
      stream.ThenMemZero(dy.ptr(), n * sizeof(float)).ThenMemcpyD2H<float>(dy.cref(), again).BlockHostUntilDone().ok());
  CHECK(again[5] == 0.0f);
}

TEST_CASE("captured fills and events, submitted to another stream", "[capture]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<std::uint32_t>(64);
  std::vector<std::uint32_t> out(64, 0);
  se::Event event(executor);
  REQUIRE(event.Init());
  se::CommandBuffer buffer(executor);
  buffer.Init();
  se::Stream capturing(executor), running(executor);
  capturing.Init();
  running.Init();
  REQUIRE(capturing.BeginCapture(&buffer).ok());
  capturing.ThenMemset32(memory.ptr(), 0xabcdu, 256)
      .ThenRecordEvent(&event)
      .ThenWaitFor(&event)
      .ThenMemcpy(out.data(), memory.cref(), 256);
  REQUIRE(capturing.EndCapture(&buffer).ok());
  REQUIRE(running.ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(out == std::vector<std::uint32_t>(64, 0xabcdu));
  CHECK(event.PollForStatus() == se::Event<TestBackend>::State::kComplete);
}

TEST_CASE("what a buffer cannot hold fails the capture, not the stream", "[capture][errors]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(16);
  se::CommandBuffer buffer(executor);
  buffer.Init();
  se::Stream stream(executor), other(executor);
  stream.Init();
  other.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  std::string expected;
  SECTION("stream-ordered allocation") {
    se::DeviceMemory<int> pooled;
    stream.ThenAllocate(16, &pooled);
    CHECK(pooled.IsNull());
    expected = "ThenAllocate on";
  }
  SECTION("a wait on another stream") {
    stream.ThenWaitFor(&other);
    expected = "ThenWaitFor(Stream) on";
  }
  SECTION("a prefetch") {
    stream.ThenPrefetch(memory.cref());
    expected = "ThenPrefetch on";
  }
  SECTION("a timer") {
    se::Timer timer(executor);
    REQUIRE(timer.Init().ok());
    stream.ThenStartTimer(&timer);
    expected = "ThenStartTimer on";
  }
  SECTION("a wait for the captured work") {
    const se::Status waited = stream.BlockHostUntilDone();
    CHECK(waited.code() == se::ErrorCode::kUnimplemented);
    expected = "BlockHostUntilDone on";
  }
  CHECK(stream.ok());                    // the stream stays usable
  stream.ThenMemZero(memory.ptr(), 64);  // after the first error, nothing more is recorded
  const se::Status ended = stream.EndCapture(&buffer);
  CHECK(ended.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(ended, expected));
  CHECK(Mentions(ended, "cannot be captured into a command buffer"));
  CHECK_FALSE(stream.capturing());
  stream.ThenSubmit(&buffer);
  CHECK(Mentions(stream.status(), "the command buffer failed while recording"));
  CHECK(other.ThenMemZero(memory.ptr(), 64).BlockHostUntilDone().ok());
}

TEST_CASE("the stream's checks fail the capture with their own Status", "[capture][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  auto memory = executor->AllocateOwnedArray<int>(16);
  se::CommandBuffer buffer(executor);
  buffer.Init();
  se::Stream stream(executor);
  stream.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  SECTION("a copy past the end") {
    std::vector<int> host(32);
    stream.ThenMemcpy(memory.ptr(), host.data(), 128);
    const se::Status ended = stream.EndCapture(&buffer);
    CHECK(ended.code() == se::ErrorCode::kOutOfRange);
    CHECK(Mentions(ended, "ThenMemcpy (H2D)"));
  }
  SECTION("a launch with freed memory") {
    se::DeviceMemory<int> allocated = executor->AllocateArray<int>(16);
    se::DeviceMemory<int> freed = allocated;
    REQUIRE(executor->Deallocate(&allocated).ok());
    stream.ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, &freed, 1);
    const se::Status ended = stream.EndCapture(&buffer);
    CHECK(ended.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(ended, "argument 0"));
  }
  CHECK(stream.ok());
}

TEST_CASE("BeginCapture and EndCapture refuse what they cannot do", "[capture][errors]") {
  auto* executor = TestExecutor();
  se::CommandBuffer buffer(executor), second(executor);
  buffer.Init();
  second.Init();
  se::Stream stream(executor), other(executor);
  stream.Init();
  other.Init();
  CHECK(stream.BeginCapture(nullptr).code() == se::ErrorCode::kInvalidArgument);
  se::CommandBuffer uninitialized(executor);
  CHECK(Mentions(stream.BeginCapture(&uninitialized), "not initialized"));
  CHECK(Mentions(stream.EndCapture(&buffer), "this stream is not capturing into the command buffer"));

  REQUIRE(stream.BeginCapture(&buffer).ok());
  CHECK(Mentions(stream.BeginCapture(&second), "already capturing"));
  CHECK(Mentions(other.BeginCapture(&buffer), "another stream is capturing into this command buffer"));
  // Begun on one stream, ended on another: refused, and the capture goes on.
  const se::Status wrong = other.EndCapture(&buffer);
  CHECK(wrong.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(wrong, "begun on another stream; end it there"));
  CHECK(stream.capturing());
  // Synchronous operations wait for nothing captured: refused meanwhile.
  auto memory = executor->AllocateOwnedArray<int>(4);
  const se::Status synchronous = executor->SynchronousMemZero(memory.ptr(), 16);
  CHECK(synchronous.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(synchronous, "SynchronousMemZero on"));
  CHECK(Mentions(synchronous, "is capturing into a command buffer"));
  CHECK(Mentions(executor->SynchronizeAllActivity(), "SynchronizeAllActivity on"));
  REQUIRE(stream.EndCapture(&buffer).ok());
  CHECK(executor->SynchronousMemZero(memory.ptr(), 16).ok());

  REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());  // an empty capture
  CHECK(Mentions(stream.BeginCapture(&buffer), "finalized"));
  if (auto* second_executor = SecondExecutor(); second_executor != nullptr) {
    se::CommandBuffer foreign(second_executor);
    foreign.Init();
    CHECK(Mentions(stream.BeginCapture(&foreign), "the command buffer was made for"));
  }
}

TEST_CASE("a capture outlived by its stream or its buffer ends cleanly", "[capture][lifetime]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(8);
  SECTION("the buffer goes first: the stream runs its work again") {
    se::Stream stream(executor);
    stream.Init();
    {
      se::CommandBuffer buffer(executor);
      buffer.Init();
      REQUIRE(stream.BeginCapture(&buffer).ok());
      stream.ThenMemZero(memory.ptr(), 32);
    }
    CHECK_FALSE(stream.capturing());
    std::vector<int> out(8, -1);
    REQUIRE(
        stream.ThenMemset32(memory.ptr(), 3, 32).ThenMemcpy(out.data(), memory.cref(), 32).BlockHostUntilDone().ok());
    CHECK(out == std::vector<int>(8, 3));
    CHECK(executor->SynchronousMemZero(memory.ptr(), 32).ok());  // no capture left on the executor
  }
  SECTION("the stream goes first: the buffer says why it failed") {
    se::CommandBuffer buffer(executor);
    buffer.Init();
    {
      se::Stream stream(executor);
      stream.Init();
      REQUIRE(stream.BeginCapture(&buffer).ok());
      stream.ThenMemZero(memory.ptr(), 32);
    }
    CHECK(Mentions(buffer.status(), "the capturing stream was destroyed before EndCapture"));
    CHECK(executor->SynchronousMemZero(memory.ptr(), 32).ok());
  }
  SECTION("a moved stream keeps capturing") {
    se::CommandBuffer buffer(executor);
    buffer.Init();
    se::Stream first(executor);
    first.Init();
    REQUIRE(first.BeginCapture(&buffer).ok());
    se::Stream moved(std::move(first));
    CHECK(moved.capturing());
    moved.ThenMemset32(memory.ptr(), 9, 32);
    REQUIRE(moved.EndCapture(&buffer).ok());
    std::vector<int> out(8, -1);
    REQUIRE(moved.ThenSubmit(&buffer).ThenMemcpy(out.data(), memory.cref(), 32).BlockHostUntilDone().ok());
    CHECK(out == std::vector<int>(8, 9));
  }
}
