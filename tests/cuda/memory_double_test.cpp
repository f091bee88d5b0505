// Memory on CUDA beyond Allocate, against the counting driver double: what
// the driver receives for ThenPrefetch and MemAdvise (cuMemPrefetchAsync and
// cuMemAdvise on managed memory only, their locations, the stream), and the
// driver's errors named in the Status.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "counting_driver_double.hpp"

namespace se = streamexecutor;

namespace {

se::StreamExecutor<se::cuda>* Executor() { return se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie(); }
se_test::CountingDoubleApi& Double() {
  static se_test::CountingDoubleApi api = (Executor(), se_test::CountingDoubleApi::Find());
  return api;
}
long Calls(const char* entry_point) { return Double().calls(entry_point); }
bool Mentions(const se::Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}
SeCountingDoubleManaged Hints(const se::DeviceMemoryBase& memory) {
  SeCountingDoubleManaged hints{};
  REQUIRE(Double().managed_state(memory.start_address(), &hints));
  return hints;
}

}  // namespace

TEST_CASE("the counting double serves the memory entry points", "[cuda][memory]") {
  REQUIRE(Double().loaded());
}

TEST_CASE("ThenPrefetch moves managed memory on the stream, to the device or the host", "[cuda][memory]") {
  auto* executor = Executor();
  se::ScopedUnifiedMemory<float> shared = se::AllocateOwnedUnifiedArray<float>(executor, 1024);
  REQUIRE(shared.ok());
  se::Stream stream(executor);
  stream.Init();
  stream.ThenPrefetch(shared.cref());
  REQUIRE(stream.ok());
  SeCountingDoubleManaged hints = Hints(shared.cref());
  CHECK(hints.prefetches == 1);
  CHECK(hints.prefetched_type == CU_MEM_LOCATION_TYPE_DEVICE);
  CHECK(hints.prefetched_id == 0);
  SeCountingDoubleCall call{};
  REQUIRE(Double().latest_call("cuMemPrefetchAsync", &call));
  CHECK(call.stream == stream.native_handle()->stream);

  stream.ThenPrefetch(shared.cref().GetSlice(256, 256), se::MemoryLocation::kHost);
  REQUIRE(stream.BlockHostUntilDone().ok());
  hints = Hints(shared.cref());
  CHECK(hints.prefetches == 2);
  CHECK(hints.prefetched_type == CU_MEM_LOCATION_TYPE_HOST);
}

TEST_CASE("memory from Allocate does not migrate: its prefetches and advice reach no driver call",
          "[cuda][memory]") {
  auto* executor = Executor();
  auto plain = executor->AllocateOwnedArray<float>(64);
  REQUIRE(plain.ok());
  const long prefetches = Calls("cuMemPrefetchAsync");
  const long advice = Calls("cuMemAdvise");
  se::Stream stream(executor);
  stream.Init().ThenPrefetch(plain.cref(), se::MemoryLocation::kHost);
  CHECK(stream.BlockHostUntilDone().ok());
  CHECK(se::MemAdvise(executor, plain.cref(), se::MemoryAdvice::kSetReadMostly).ok());
  CHECK(Calls("cuMemPrefetchAsync") == prefetches);
  CHECK(Calls("cuMemAdvise") == advice);
}

TEST_CASE("MemAdvise sets and unsets each hint of managed memory", "[cuda][memory]") {
  auto* executor = Executor();
  se::ScopedUnifiedMemory<int> shared = se::AllocateOwnedUnifiedArray<int>(executor, 256);
  REQUIRE(shared.ok());
  const se::DeviceMemory<int>& memory = shared.cref();
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kSetReadMostly).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kSetPreferredLocation, se::MemoryLocation::kHost).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kSetAccessedBy).ok());
  SeCountingDoubleManaged hints = Hints(memory);
  CHECK(hints.read_mostly);
  CHECK(hints.preferred_type == CU_MEM_LOCATION_TYPE_HOST);
  CHECK(hints.accessed_by_type == CU_MEM_LOCATION_TYPE_DEVICE);
  CHECK(hints.accessed_by_id == 0);
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kUnsetReadMostly).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kUnsetPreferredLocation).ok());
  REQUIRE(se::MemAdvise(executor, memory, se::MemoryAdvice::kUnsetAccessedBy).ok());
  hints = Hints(memory);
  CHECK_FALSE(hints.read_mostly);
  CHECK(hints.preferred_type == -1);
  CHECK(hints.accessed_by_type == -1);
}

TEST_CASE("a driver that refuses a prefetch or advice is named in the Status", "[cuda][memory][errors]") {
  auto* executor = Executor();
  se::ScopedUnifiedMemory<int> shared = se::AllocateOwnedUnifiedArray<int>(executor, 64);
  REQUIRE(shared.ok());
  se::Stream stream(executor);
  stream.Init();
  Double().fail_next("cuMemPrefetchAsync", CUDA_ERROR_INVALID_VALUE);
  stream.ThenPrefetch(shared.cref());
  const se::Status prefetched = stream.BlockHostUntilDone();
  CHECK(prefetched.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(prefetched, "cuMemPrefetchAsync failed with CUDA_ERROR_INVALID_VALUE"));
  CHECK(Mentions(prefetched, "to the device on a stream of cuda:0"));

  Double().fail_next("cuMemAdvise", CUDA_ERROR_INVALID_VALUE);
  const se::Status advised = se::MemAdvise(executor, shared.cref(), se::MemoryAdvice::kSetReadMostly);
  CHECK(advised.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(advised, "cuMemAdvise failed with CUDA_ERROR_INVALID_VALUE"));

  Double().fail_next("cuPointerGetAttribute", CUDA_ERROR_INVALID_CONTEXT);
  const se::Status asked = se::MemAdvise(executor, shared.cref(), se::MemoryAdvice::kSetReadMostly);
  CHECK_FALSE(asked.ok());
  CHECK(Mentions(asked, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED) failed"));
  CHECK(Mentions(asked, "for MemAdvise on cuda:0"));
}
