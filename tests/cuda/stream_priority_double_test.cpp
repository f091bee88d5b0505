// Stream priorities on CUDA against the counting driver double: Init(kHigh)
// asks cuCtxGetStreamPriorityRange and creates the stream with the greatest
// priority, Init(kLow) with the least, Init() and Init(kNormal) with plain
// cuStreamCreate (priority 0); the driver's refusals are Statuses naming the
// call, the error, the priority and the device. Whether the GPU really
// schedules the high stream's blocks first is the driver's, not shown here.
#include <catch2/catch.hpp>

#include <string_view>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

// The priority the double saw the stream created with.
int DriverPriority(se::Stream<se::cuda>& stream) {
  int priority = 12345;
  REQUIRE(Double().stream_priority(stream.native_handle()->stream, &priority));
  return priority;
}

// Restores the double's default range when a case ends.
struct PriorityRange {
  PriorityRange(int least, int greatest) { Double().set_priority_range(least, greatest); }
  ~PriorityRange() { Double().set_priority_range(0, -5); }
};

}  // namespace

TEST_CASE("kHigh is the context's greatest priority, kLow its least, kNormal cuStreamCreate's", "[priority]") {
  REQUIRE(Double().loaded());
  auto* executor = Executor();
  const PriorityRange range(0, -5);  // an H100's

  const long ranges = Double().calls("cuCtxGetStreamPriorityRange");
  const long prioritized = Double().calls("cuStreamCreateWithPriority");
  const long plain = Double().calls("cuStreamCreate");
  se::Stream high(executor), low(executor), normal(executor), unspecified(executor);
  REQUIRE(high.Init(se::StreamPriority::kHigh).ok());
  REQUIRE(low.Init(se::StreamPriority::kLow).ok());
  REQUIRE(normal.Init(se::StreamPriority::kNormal).ok());
  REQUIRE(unspecified.Init().ok());
  CHECK(Double().calls("cuCtxGetStreamPriorityRange") == ranges + 2);
  CHECK(Double().calls("cuStreamCreateWithPriority") == prioritized + 2);
  CHECK(Double().calls("cuStreamCreate") == plain + 2);
  CHECK(DriverPriority(high) == -5);
  CHECK(DriverPriority(low) == 0);
  CHECK(DriverPriority(normal) == 0);
  CHECK(DriverPriority(unspecified) == 0);
  CHECK(high.priority() == se::StreamPriority::kHigh);
  CHECK(low.priority() == se::StreamPriority::kLow);
  CHECK(unspecified.priority() == se::StreamPriority::kNormal);

  // Work on a high-priority stream goes through as on any other.
  auto device = executor->AllocateOwnedArray<int>(8);
  std::vector<int> in{1, 2, 3, 4, 5, 6, 7, 8}, out(8, 0);
  REQUIRE(high.ThenMemcpyH2D<int>(in, device.ptr()).ThenMemcpyD2H<int>(device.cref(), out).BlockHostUntilDone().ok());
  CHECK(out == in);
}

TEST_CASE("the range is read from the driver at each creation, not assumed", "[priority]") {
  REQUIRE(Double().loaded());
  auto* executor = Executor();
  const PriorityRange range(3, -2);  // a range whose least is not 0
  se::Stream high(executor), low(executor), normal(executor);
  REQUIRE(high.Init(se::StreamPriority::kHigh).ok());
  REQUIRE(low.Init(se::StreamPriority::kLow).ok());
  REQUIRE(normal.Init(se::StreamPriority::kNormal).ok());
  CHECK(DriverPriority(high) == -2);
  CHECK(DriverPriority(low) == 3);
  CHECK(DriverPriority(normal) == 0);
  // A device without priorities answers 0 and 0: every stream gets 0.
  Double().set_priority_range(0, 0);
  se::Stream flat(executor);
  REQUIRE(flat.Init(se::StreamPriority::kHigh).ok());
  CHECK(DriverPriority(flat) == 0);
}

TEST_CASE("a refused priority query or creation is a Status naming the call, the priority and the device",
          "[priority][errors]") {
  REQUIRE(Double().loaded());
  auto* executor = Executor();
  se::Stream queried(executor);
  Double().fail_next("cuCtxGetStreamPriorityRange", CUDA_ERROR_INVALID_CONTEXT);
  queried.Init(se::StreamPriority::kHigh);
  CHECK_FALSE(queried.initialized());
  CHECK(Mentions(queried.status(), "cuCtxGetStreamPriorityRange failed with CUDA_ERROR_INVALID_CONTEXT"));
  CHECK(Mentions(queried.status(), "StreamPriority::kHigh"));
  CHECK(Mentions(queried.status(), "cuda:0"));

  se::Stream created(executor);
  const long destroyed = Double().calls("cuStreamDestroy");
  Double().fail_next("cuStreamCreateWithPriority", CUDA_ERROR_OUT_OF_MEMORY);
  created.Init(se::StreamPriority::kLow);
  CHECK_FALSE(created.initialized());
  CHECK(created.status().code() == se::ErrorCode::kResourceExhausted);
  CHECK(Mentions(created.status(), "cuStreamCreateWithPriority failed with CUDA_ERROR_OUT_OF_MEMORY"));
  CHECK(Mentions(created.status(), "StreamPriority::kLow"));
  CHECK(Mentions(created.status(), "priority 0"));
  CHECK(Double().calls("cuStreamDestroy") == destroyed);  // nothing was made, nothing to destroy

  // The stream's event failing after the stream was made destroys the stream.
  se::Stream evented(executor);
  const long destroyed_before = Double().calls("cuStreamDestroy");
  Double().fail_next("cuEventCreate", CUDA_ERROR_OUT_OF_MEMORY);
  evented.Init(se::StreamPriority::kHigh);
  CHECK_FALSE(evented.initialized());
  CHECK(Mentions(evented.status(), "cuEventCreate"));
  CHECK(Double().calls("cuStreamDestroy") == destroyed_before + 1);
}
