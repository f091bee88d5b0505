// Stream memory operations (ThenWaitValue, ThenWriteValue): a wait holds its
// stream, and only its stream, until the word meets the condition, whoever
// writes it; each condition as CUDA defines it, on 32- and 64-bit words. A
// backend without them (StreamMemoryOperationBackend) refuses each call with
// UNIMPLEMENTED after the same checks of the word. [device-order]: the cases
// need a device that really holds a stream (not the CUDA driver double).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "generic/test_backend.hpp"

namespace {

constexpr bool kHasStreamMemory = se::StreamMemoryOperationBackend<TestBackend>;
using Pending = se::Event<TestBackend>::State;

// Writes `value` to the word on a stream of its own and waits for it.
template <typename T>
void Store(se::DeviceMemory<T>* word, T value) {
  se::Stream writer(TestExecutor());
  REQUIRE(writer.Init().ThenWriteValue(word, value).BlockHostUntilDone().ok());
}

// Whether a wait for (value, condition) on the word as it is lets its stream
// go on by itself (within 10 s). If not, `release` (which meets the
// condition) is written, so that a wrong answer fails instead of hanging.
template <typename T>
bool Passes(se::DeviceMemory<T>* word, T value, se::WaitCondition condition, T release) {
  auto* executor = TestExecutor();
  se::Event after(executor);
  REQUIRE(after.Init());
  se::Stream waiter(executor);
  waiter.Init().ThenWaitValue(*word, value, condition).ThenRecordEvent(&after);
  REQUIRE(waiter.ok());
  bool passed = false;
  for (int ms = 0; ms < 10000 && !passed; ++ms) {
    passed = after.PollForStatus() == Pending::kComplete;
    if (!passed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!passed) Store(word, release);
  REQUIRE(waiter.BlockHostUntilDone().ok());
  return passed;
}
// Whether such a wait holds its stream until `release` is written.
template <typename T>
bool Holds(se::DeviceMemory<T>* word, T value, se::WaitCondition condition, T release) {
  auto* executor = TestExecutor();
  se::Event after(executor);
  REQUIRE(after.Init());
  se::Stream waiter(executor);
  waiter.Init().ThenWaitValue(*word, value, condition).ThenRecordEvent(&after);
  REQUIRE(waiter.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // time to pass, were it wrong
  const bool held = after.PollForStatus() == Pending::kPending;
  Store(word, release);
  REQUIRE(waiter.BlockHostUntilDone().ok());
  CHECK(after.PollForStatus() == Pending::kComplete);
  return held;
}

}  // namespace

TEST_CASE("a stream waits for a value another stream writes, and sees the writer's earlier work",
          "[stream-memory][device-order]") {
  auto* executor = TestExecutor();
  auto flag = executor->AllocateOwnedArray<std::uint32_t>(1);
  auto data = executor->AllocateOwnedArray<int>(1024);
  std::vector<int> in(1024, 7), out(1024, 0);
  if constexpr (!kHasStreamMemory) {
    se::Stream stream(executor);
    stream.Init().ThenWaitValue(flag.cref(), 1u);
    CHECK(stream.status().code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(stream.status(), "ThenWaitValue"));
    CHECK(Mentions(stream.status(), "StreamMemoryOperationBackend"));
    se::Stream writer(executor);
    writer.Init().ThenWriteValue(flag.ptr(), 1u);
    CHECK(writer.status().code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(writer.status(), "ThenWriteValue"));
    return;
  } else {
    Store(flag.ptr(), 0u);
    se::Event read(executor);
    REQUIRE(read.Init());
    se::Stream consumer(executor), producer(executor);
    consumer.Init().ThenWaitValue(flag.cref(), 1u).ThenMemcpyD2H<int>(data.cref(), out).ThenRecordEvent(&read);
    REQUIRE(consumer.ok());
    CHECK(read.PollForStatus() == Pending::kPending);  // nothing has written the flag
    producer.Init().ThenMemcpyH2D<int>(in, data.ptr()).ThenWriteValue(flag.ptr(), 1u);
    REQUIRE(consumer.BlockHostUntilDone().ok());
    REQUIRE(producer.BlockHostUntilDone().ok());
    CHECK(out == in);
  }
}

TEST_CASE("a value wait holds only its own stream", "[stream-memory][device-order]") {
  if constexpr (kHasStreamMemory) {
    auto* executor = TestExecutor();
    auto flag = executor->AllocateOwnedArray<std::uint64_t>(1);
    Store<std::uint64_t>(flag.ptr(), 0);
    se::Event after(executor);
    REQUIRE(after.Init());
    se::Stream waiter(executor), other(executor);
    waiter.Init().ThenWaitValue(flag.cref(), 3).ThenRecordEvent(&after);
    // Another stream's work runs to completion meanwhile.
    auto data = executor->AllocateOwnedArray<int>(256);
    std::vector<int> in(256, 5), out(256, 0);
    REQUIRE(
        other.Init().ThenMemcpyH2D<int>(in, data.ptr()).ThenMemcpyD2H<int>(data.cref(), out).BlockHostUntilDone().ok());
    CHECK(out == in);
    CHECK(after.PollForStatus() == Pending::kPending);
    REQUIRE(other.ThenWriteValue(flag.ptr(), 3).BlockHostUntilDone().ok());
    REQUIRE(waiter.BlockHostUntilDone().ok());
    CHECK(after.PollForStatus() == Pending::kComplete);
  }
}

TEST_CASE("each wait condition, as CUDA defines it, on 32- and 64-bit words", "[stream-memory][device-order]") {
  if constexpr (kHasStreamMemory) {
    using se::WaitCondition;
    auto* executor = TestExecutor();
    auto word = executor->AllocateOwnedArray<std::uint32_t>(1);
    auto wide = executor->AllocateOwnedArray<std::uint64_t>(1);
    auto* w = word.ptr();
    auto* w64 = wide.ptr();

    SECTION("greater-or-equal, compared cyclically") {
      Store(w, 5u);
      CHECK(Passes(w, 5u, WaitCondition::kGreaterOrEqual, 5u));
      CHECK(Passes(w, 4u, WaitCondition::kGreaterOrEqual, 5u));
      CHECK(Holds(w, 6u, WaitCondition::kGreaterOrEqual, 6u));
      Store(w, 2u);  // a counter that wrapped around has passed 0xfffffff0
      CHECK(Passes(w, 0xfffffff0u, WaitCondition::kGreaterOrEqual, 0xfffffff0u));
      Store(w64, std::uint64_t{1} << 40);
      CHECK(Passes(w64, std::uint64_t{1} << 40, WaitCondition::kGreaterOrEqual, std::uint64_t{1} << 40));
      CHECK(Holds(w64, (std::uint64_t{1} << 40) + 1, WaitCondition::kGreaterOrEqual, std::uint64_t{1} << 41));
    }
    SECTION("equal") {
      Store(w, 7u);
      CHECK(Passes(w, 7u, WaitCondition::kEqual, 7u));
      CHECK(Holds(w, 8u, WaitCondition::kEqual, 8u));
      Store(w64, ~std::uint64_t{0});
      CHECK(Passes(w64, ~std::uint64_t{0}, WaitCondition::kEqual, ~std::uint64_t{0}));
      CHECK(Holds(w64, std::uint64_t{0x100000000}, WaitCondition::kEqual, std::uint64_t{0x100000000}));
    }
    SECTION("and: any bit of the value set") {
      Store(w, 0b0100u);
      CHECK(Passes(w, 0b0110u, WaitCondition::kAnd, 0b0110u));
      CHECK(Holds(w, 0b1000u, WaitCondition::kAnd, 0b1000u));
      Store(w64, std::uint64_t{1} << 50);
      CHECK(Holds(w64, std::uint64_t{1} << 60, WaitCondition::kAnd, std::uint64_t{1} << 60));
    }
    SECTION("nor: some bit clear in both") {
      Store(w, 0xfffffffeu);
      CHECK(Passes(w, 0u, WaitCondition::kNor, 0u));
      CHECK(Holds(w, 1u, WaitCondition::kNor, 0xfffffffdu));
    }
    SECTION("signed words") {
      auto signed_word = executor->AllocateOwnedArray<std::int32_t>(1);
      Store<std::int32_t>(signed_word.ptr(), -2);
      CHECK(Passes<std::int32_t>(signed_word.ptr(), -2, WaitCondition::kEqual, -2));
      CHECK(Passes<std::int32_t>(signed_word.ptr(), -3, WaitCondition::kGreaterOrEqual, -2));
      CHECK(Holds<std::int32_t>(signed_word.ptr(), 1, WaitCondition::kGreaterOrEqual, 1));
    }
  }
}

TEST_CASE("a value written from another thread releases a waiting stream", "[stream-memory][device-order]") {
  if constexpr (kHasStreamMemory) {
    auto* executor = TestExecutor();
    auto flag = executor->AllocateOwnedArray<std::uint32_t>(4);
    Store(flag.ptr(), 0u);
    auto second = flag.cref().GetSlice(2, 1);  // the word is the view's first element
    Store(&second, 0u);
    se::Stream waiter(executor);
    waiter.Init().ThenWaitValue(second, 9u, se::WaitCondition::kEqual);
    // The thread makes no Catch2 assertion (they are not thread-safe): it
    // hands its Status back.
    se::Status written;
    std::thread writer([&] {
      se::Stream stream(executor);
      written = stream.Init().ThenWriteValue(&second, 9u).BlockHostUntilDone();
    });
    CHECK(waiter.BlockHostUntilDone().ok());
    writer.join();
    CHECK(written.ok());
  }
}

TEST_CASE("stream memory operations check their word", "[stream-memory][errors]") {
  auto* executor = TestExecutor();
  se::Stream stream(executor);
  stream.Init();

  SECTION("a null or freed word") {
    se::DeviceMemory<std::uint32_t> none;
    stream.ThenWaitValue(none, 1u);
    CHECK(stream.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(stream.status(), "ThenWaitValue"));
    CHECK(Mentions(stream.status(), "word"));
  }
  SECTION("a null DeviceMemory pointer") {
    stream.ThenWriteValue<std::uint32_t>(nullptr, 1u);
    CHECK(stream.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(stream.status(), "ThenWriteValue"));
  }
  SECTION("a 64-bit word not aligned to 8 bytes") {
    auto words = executor->AllocateOwnedArray<std::uint32_t>(4);
    se::DeviceMemory<std::uint64_t> odd(words.cref().GetSlice(1, 2));
    stream.ThenWriteValue(&odd, std::uint64_t{1});
    CHECK(stream.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(stream.status(), "offset 4"));
    CHECK(Mentions(stream.status(), "64-bit"));
  }
  SECTION("a capture refuses them") {
    auto word = executor->AllocateOwnedArray<std::uint32_t>(1);
    se::CommandBuffer buffer(executor);
    REQUIRE(buffer.Init().ok());
    REQUIRE(stream.BeginCapture(&buffer).ok());
    stream.ThenWaitValue(word.cref(), 1u);
    const se::Status captured = stream.EndCapture(&buffer);
    CHECK_FALSE(captured.ok());
    CHECK(Mentions(captured, "ThenWaitValue"));
    CHECK(stream.ok());
  }
}
