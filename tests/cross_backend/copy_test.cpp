// ThenCopyBetween: copies between executors and backends, on the host
// backend and PoCL. The staged route needs two OpenCL devices, so its cases
// are tagged [two-devices] and run with POCL_DEVICES="pthread pthread".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;

namespace {

se::StreamExecutor<se::host>* HostExecutor() { return se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(); }
se::StreamExecutor<se::opencl>* OpenCLExecutor(int ordinal = 0) {
  return se::Platform<se::opencl>::Get().ExecutorForDevice(ordinal).ValueOrDie();
}
bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

std::vector<std::uint32_t> Pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::uint32_t>(i) * 2654435761u + seed;
  return values;
}

// Fills `src` on `from`, copies to `dst`, then overwrites the source on
// `from` and reads the destination back on `to`: the result must be the
// original data, whatever the route.
template <typename Src, typename Dst>
se::CopyRoute CheckCopy(se::StreamExecutor<Src>* a, se::StreamExecutor<Dst>* b, std::size_t n,
                        bool same_stream = false) {
  auto src = a->template AllocateOwnedArray<std::uint32_t>(n);
  auto dst = b->template AllocateOwnedArray<std::uint32_t>(n);
  REQUIRE(src.ok());
  REQUIRE(dst.ok());
  const std::vector<std::uint32_t> expected = Pattern(n, 7);
  std::vector<std::uint32_t> result(n, 0);
  se::Stream from(a);
  se::Stream to(b);
  REQUIRE(from.Init().ok());
  REQUIRE(to.Init().ok());
  REQUIRE(to.ThenMemZero(dst.ptr(), n * 4).BlockHostUntilDone().ok());
  from.template ThenMemcpyH2D<std::uint32_t>(expected, src.ptr());
  se::StatusOr<se::CopyRoute> route = [&] {
    if constexpr (std::is_same_v<Src, Dst>) {
      if (same_stream) return se::ThenCopyBetween(&from, src.cref(), &from, dst.ptr());
    }
    return se::ThenCopyBetween(&from, src.cref(), &to, dst.ptr());
  }();
  INFO(route.status().ToString());
  REQUIRE(route.ok());
  from.ThenMemset32(src.ptr(), 0xdeadbeef, n * 4);  // may run once the copy has read the source
  if (same_stream) to.ThenWaitFor(&from);           // the copy ran on `from`: `to` did not take part
  to.template ThenMemcpyD2H<std::uint32_t>(dst.cref(), result);
  REQUIRE(to.BlockHostUntilDone().ok());
  REQUIRE(from.BlockHostUntilDone().ok());
  CHECK(result == expected);
  return route.value();
}

}  // namespace

TEST_CASE("one call picks the route: host and OpenCL", "[cross-backend][copy]") {
  auto* host = HostExecutor();
  auto* cl = OpenCLExecutor();
  CHECK(CheckCopy(host, cl, 1000) == se::CopyRoute::kFromHostMemory);
  CHECK(CheckCopy(cl, host, 1000) == se::CopyRoute::kIntoHostMemory);
  CHECK(CheckCopy(cl, cl, 1000) == se::CopyRoute::kSameExecutor);
  CHECK(CheckCopy(cl, cl, 1000, true) == se::CopyRoute::kSameExecutor);
  CHECK(CheckCopy(host, host, 1000) == se::CopyRoute::kSameExecutor);
  // Larger than a staging chunk: the direct routes do not chunk.
  CHECK(CheckCopy(host, cl, (5u << 20) / 4 + 3) == se::CopyRoute::kFromHostMemory);
  CHECK(CheckCopy(cl, host, (5u << 20) / 4 + 3) == se::CopyRoute::kIntoHostMemory);
}

TEST_CASE("two OpenCL devices copy through pinned host memory in chunks", "[cross-backend][copy][two-devices]") {
  REQUIRE(se::Platform<se::opencl>::Get().VisibleDeviceCount() >= 2);
  auto* dev0 = OpenCLExecutor(0);
  auto* dev1 = OpenCLExecutor(1);
  // One chunk, two chunks, and five with a ragged end; each checks the
  // buffers' reuse (chunk i waits for chunk i-2 to leave its buffer).
  for (std::size_t n : {std::size_t{1000}, std::size_t{(6u << 20) / 4}, std::size_t{(18u << 20) / 4 + 5}}) {
    INFO(n << " words");
    CHECK(CheckCopy(dev0, dev1, n) == se::CopyRoute::kStaged);
    CHECK(CheckCopy(dev1, dev0, n) == se::CopyRoute::kStaged);
  }
}

TEST_CASE("staged copies in a row reuse the staging buffers", "[cross-backend][copy][two-devices]") {
  REQUIRE(se::Platform<se::opencl>::Get().VisibleDeviceCount() >= 2);
  auto* dev0 = OpenCLExecutor(0);
  auto* dev1 = OpenCLExecutor(1);
  constexpr std::size_t n = (9u << 20) / 4;
  auto src = dev0->AllocateOwnedArray<std::uint32_t>(n);
  auto dst = dev1->AllocateOwnedArray<std::uint32_t>(n);
  se::Stream from(dev0);
  se::Stream to(dev1);
  REQUIRE(from.Init().ok());
  REQUIRE(to.Init().ok());
  std::vector<std::uint32_t> result(n);
  for (std::uint32_t round = 0; round < 4; ++round) {
    from.ThenMemset32(src.ptr(), round * 0x01010101u, n * 4);
    REQUIRE(se::ThenCopyBetween(&from, src.cref(), &to, dst.ptr()).ok());
    to.ThenMemcpyD2H<std::uint32_t>(dst.cref(), result);
    REQUIRE(to.BlockHostUntilDone().ok());
    CHECK(std::all_of(result.begin(), result.end(), [&](std::uint32_t v) { return v == round * 0x01010101u; }));
  }
  // Each copy took two pinned buffers of the source executor and gave them
  // back: a pool of two serves every round once the previous one is done.
  REQUIRE(from.BlockHostUntilDone().ok());
}

TEST_CASE("ThenCopyBetween rejects bad input before queueing anything", "[cross-backend][copy][errors]") {
  auto* host = HostExecutor();
  auto* cl = OpenCLExecutor();
  auto src = cl->AllocateOwnedArray<float>(16);
  auto small = host->AllocateOwnedArray<float>(8);
  auto dst = host->AllocateOwnedArray<float>(16);
  se::Stream from(cl);
  se::Stream to(host);
  REQUIRE(from.Init().ok());
  REQUIRE(to.Init().ok());

  SECTION("a destination too small") {
    auto status = se::ThenCopyBetween(&from, src.cref(), &to, small.ptr()).status();
    CHECK(status.code() == se::ErrorCode::kOutOfRange);
    CHECK(Mentions(status, "16 elements of float but the destination only 8"));
    CHECK(from.ok());  // nothing was queued
  }
  SECTION("memory of the wrong executor: both streams fail") {
    auto status = se::ThenCopyBetween(&from, dst.cref(), &to, dst.ptr()).status();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "ThenCopyBetween on opencl:0"));
    CHECK(Mentions(status, "source DeviceMemory is not live memory of this executor"));
    CHECK(from.BlockHostUntilDone() == status);
    CHECK(to.BlockHostUntilDone() == status);
  }
  SECTION("freed source") {
    se::DeviceMemory<float> freed = cl->AllocateArray<float>(16);
    REQUIRE(cl->Deallocate(&freed).ok());
    auto status = se::ThenCopyBetween(&from, freed, &to, dst.ptr()).status();
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "source"));
  }
  SECTION("null and uninitialized streams") {
    CHECK(se::ThenCopyBetween(static_cast<se::Stream<se::opencl>*>(nullptr), src.cref(), &to, dst.ptr())
              .status()
              .code() == se::ErrorCode::kInvalidArgument);
    se::Stream idle(host);
    auto status = se::ThenCopyBetween(&from, src.cref(), &idle, dst.ptr()).status();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "not initialized"));
  }
  SECTION("a failed stream queues nothing and returns its error") {
    to.ThenMemZero(nullptr, 4);
    const se::Status first = to.status();
    REQUIRE_FALSE(first.ok());
    CHECK(se::ThenCopyBetween(&from, src.cref(), &to, dst.ptr()).status() == first);
  }
}
