// Stream memory operations on CUDA against the counting driver double: each
// ThenWaitValue and ThenWriteValue is one cuStreamWaitValue32/64 or
// cuStreamWriteValue32/64 on the stream, with the word's address (the view's
// offset included), the value and the condition's flag exactly as CUDA
// defines them; the driver's refusals are Statuses naming the call, the
// error and the device attribute the device lacks. The double does not model
// stream order (a wait passes at once; it notes whether the condition held):
// what a wait holds is tested by the generic suite on a GPU.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

SeCountingDoubleMemoryOperation Last() {
  SeCountingDoubleMemoryOperation operation{};
  REQUIRE(Double().last_memory_operation(&operation));
  return operation;
}

template <typename T>
unsigned long long AddressOf(const se::DeviceMemory<T>& memory) {
  return static_cast<unsigned long long>(memory.start_address());
}

}  // namespace

TEST_CASE("each operation is one driver call with the word's address, the value and the condition's flag",
          "[stream-memory]") {
  REQUIRE(Double().loaded());
  auto* executor = Executor();
  auto words = executor->AllocateOwnedArray<std::uint32_t>(4);
  auto wide = executor->AllocateOwnedArray<std::uint64_t>(2);
  se::Stream stream(executor);
  stream.Init();

  const long writes32 = Double().calls("cuStreamWriteValue32");
  auto third = words.cref().GetSlice(2, 1);
  REQUIRE(stream.ThenWriteValue(&third, 0xabcdu).ok());
  CHECK(Double().calls("cuStreamWriteValue32") == writes32 + 1);
  SeCountingDoubleMemoryOperation op = Last();
  CHECK(std::string_view(op.entry_point) == "cuStreamWriteValue32");
  CHECK(op.address == AddressOf(words.cref()) + 8);
  CHECK(op.value == 0xabcdu);
  CHECK(op.flags == CU_STREAM_WRITE_VALUE_DEFAULT);

  auto second = wide.cref().GetSlice(1, 1);
  REQUIRE(stream.ThenWriteValue(&second, std::uint64_t{1} << 40).ok());
  op = Last();
  CHECK(std::string_view(op.entry_point) == "cuStreamWriteValue64");
  CHECK(op.address == AddressOf(wide.cref()) + 8);
  CHECK(op.value == std::uint64_t{1} << 40);

  // The double stores what was written: the words hold the values.
  std::vector<std::uint32_t> narrow_out(4, 0);
  std::vector<std::uint64_t> wide_out(2, 0);
  REQUIRE(stream.ThenMemcpyD2H<std::uint32_t>(words.cref(), narrow_out)
              .ThenMemcpyD2H<std::uint64_t>(wide.cref(), wide_out)
              .BlockHostUntilDone()
              .ok());
  CHECK(narrow_out[2] == 0xabcdu);
  CHECK(wide_out[1] == std::uint64_t{1} << 40);

  struct Case {
    se::WaitCondition condition;
    unsigned flag;
  };
  for (const Case& c : {Case{se::WaitCondition::kGreaterOrEqual, CU_STREAM_WAIT_VALUE_GEQ},
                        Case{se::WaitCondition::kEqual, CU_STREAM_WAIT_VALUE_EQ},
                        Case{se::WaitCondition::kAnd, CU_STREAM_WAIT_VALUE_AND},
                        Case{se::WaitCondition::kNor, CU_STREAM_WAIT_VALUE_NOR}}) {
    INFO(se::WaitConditionName(c.condition));
    REQUIRE(stream.ThenWaitValue(third, 0xabcdu, c.condition).ok());
    op = Last();
    CHECK(std::string_view(op.entry_point) == "cuStreamWaitValue32");
    CHECK(op.address == AddressOf(words.cref()) + 8);
    CHECK(op.value == 0xabcdu);
    CHECK(op.flags == c.flag);
    REQUIRE(stream.ThenWaitValue(second, std::uint64_t{1} << 40, c.condition).ok());
    op = Last();
    CHECK(std::string_view(op.entry_point) == "cuStreamWaitValue64");
    CHECK(op.flags == c.flag);
  }
  // The double evaluates the condition as CUDA defines it: these held.
  REQUIRE(stream.ThenWaitValue(third, 0xabcdu, se::WaitCondition::kEqual).ok());
  CHECK(Last().condition_held);
  REQUIRE(stream.ThenWaitValue(third, 0xabceu, se::WaitCondition::kEqual).ok());
  CHECK_FALSE(Last().condition_held);
  // A signed word: the value's bits, as the kernel would write them.
  auto signed_word = executor->AllocateOwnedArray<std::int32_t>(1);
  REQUIRE(stream.ThenWriteValue(signed_word.ptr(), -1).ok());
  CHECK(Last().value == 0xffffffffu);
  REQUIRE(stream.BlockHostUntilDone().ok());
}

TEST_CASE("the driver's refusals name the call, the error and what the device lacks", "[stream-memory][errors]") {
  REQUIRE(Double().loaded());
  auto* executor = Executor();
  auto word = executor->AllocateOwnedArray<std::uint32_t>(1);
  auto wide = executor->AllocateOwnedArray<std::uint64_t>(1);
  se::Stream stream(executor);
  stream.Init();

  SECTION("64-bit operations") {
    Double().fail_next("cuStreamWaitValue64", CUDA_ERROR_NOT_SUPPORTED);
    const se::Status status = stream.ThenWaitValue(wide.cref(), std::uint64_t{1}).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(status, "cuStreamWaitValue64 failed with CUDA_ERROR_NOT_SUPPORTED"));
    CHECK(Mentions(status, "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS"));
    CHECK(Mentions(status, "cuda:0"));
  }
  SECTION("the nor condition") {
    Double().fail_next("cuStreamWaitValue32", CUDA_ERROR_NOT_SUPPORTED);
    const se::Status status = stream.ThenWaitValue(word.cref(), 1u, se::WaitCondition::kNor).BlockHostUntilDone();
    CHECK(Mentions(status, "cuStreamWaitValue32 failed with CUDA_ERROR_NOT_SUPPORTED"));
    CHECK(Mentions(status, "CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR"));
    CHECK(Mentions(status, "waiting until nor 1"));
  }
  SECTION("any other error") {
    Double().fail_next("cuStreamWriteValue32", CUDA_ERROR_ILLEGAL_ADDRESS);
    const se::Status status = stream.ThenWriteValue(word.ptr(), 5u).BlockHostUntilDone();
    CHECK(Mentions(status, "cuStreamWriteValue32 failed with CUDA_ERROR_ILLEGAL_ADDRESS"));
    CHECK(Mentions(status, "writing 5"));
    CHECK_FALSE(Mentions(status, "CU_DEVICE_ATTRIBUTE"));
  }
}

TEST_CASE("a write is queued on a stream whose host callback failed, so that its waiters do not hang",
          "[stream-memory]") {
  REQUIRE(Double().loaded());
  auto* executor = Executor();
  auto word = executor->AllocateOwnedArray<std::uint32_t>(1);
  se::Stream stream(executor);
  const long writes = Double().calls("cuStreamWriteValue32");
  const long copies = Double().calls("cuMemcpyHtoDAsync");
  const std::vector<std::uint32_t> nine{9};
  stream.Init()
      .ThenDoHostCallback([] { throw std::runtime_error("callback failed"); })
      .ThenMemcpyH2D<std::uint32_t>(nine, word.ptr())  // skipped, as work after a failure is
      .ThenWriteValue(word.ptr(), 1u);
  CHECK(Mentions(stream.BlockHostUntilDone(), "callback failed"));
  CHECK(Double().calls("cuMemcpyHtoDAsync") == copies);
  CHECK(Double().calls("cuStreamWriteValue32") == writes + 1);
  std::vector<std::uint32_t> out(1, 0);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(word.cref(), out).ok());
  CHECK(out[0] == 1u);
}
