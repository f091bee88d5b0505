// Peer access through the executor: CanEnablePeerAccessTo and
// EnablePeerAccessTo on one and on two executors, and what a launch with
// another executor's memory does before and after. Where the backend has no
// peer access (host, OpenCL) every refusal names ThenCopyBetween; on CUDA
// (PeerAccessBackend) such a launch runs once EnablePeerAccessTo succeeded.
// Two devices: OpenCL with POCL_DEVICES="pthread pthread", CUDA against the
// counting double with SE_COUNTING_DOUBLE_DEVICES=2 (tests/meson.build).
#include <catch2/catch.hpp>

#include <optional>
#include <utility>
#include <vector>

#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

namespace {
std::optional<std::pair<se::StreamExecutor<TestBackend>*, se::StreamExecutor<TestBackend>*>> TwoExecutors() {
  auto& platform = se::Platform<TestBackend>::Get();
  if (platform.VisibleDeviceCount() < 2) return std::nullopt;
  return std::pair{platform.ExecutorForDevice(0).ValueOrDie(), platform.ExecutorForDevice(1).ValueOrDie()};
}
}  // namespace

TEST_CASE("peer access is between two executors: itself and null are refused", "[peer][errors]") {
  auto* executor = TestExecutor();
  CHECK_FALSE(executor->CanEnablePeerAccessTo(executor));
  CHECK_FALSE(executor->CanEnablePeerAccessTo(nullptr));
  se::Status self = executor->EnablePeerAccessTo(executor);
  CHECK(self.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(self, "that is this executor, whose kernels always take its own memory"));
  se::Status null = executor->EnablePeerAccessTo(nullptr);
  CHECK(null.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(null, "the other StreamExecutor is null"));
}

TEST_CASE("a launch with another executor's memory: refused, or run once peer access is enabled", "[peer]") {
  auto two = TwoExecutors();
  if (!two) {
    SUCCEED("one device: no other executor (run with two devices, see tests/meson.build)");
    return;
  }
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  se::StreamExecutor<TestBackend>* first = two->first;
  se::StreamExecutor<TestBackend>* second = two->second;
  tk::AddKernel add(first);
  REQUIRE(first->GetKernel(tk::AddSpec(), &add).ok());
  auto theirs = second->AllocateOwnedArray<int>(64);
  auto launch_on_first = [&](se::DeviceMemory<int>* memory) {
    se::Stream stream(first);
    return stream.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), add, memory, 1).BlockHostUntilDone();
  };

  if constexpr (se::PeerAccessBackend<TestBackend>) {
    if (!first->CanEnablePeerAccessTo(second)) {
      SUCCEED("these two devices cannot reach each other's memory");
      return;
    }
    se::Status before = launch_on_first(theirs.ptr());
    CHECK(before.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(before, "argument 0 is not live memory of this executor: it is memory of " + second->DeviceLabel() +
                               ", another executor"));
    CHECK(Mentions(before, "EnablePeerAccessTo(" + second->DeviceLabel() + ")"));
    CHECK(Mentions(before, "ThenCopyBetween"));

    REQUIRE(first->EnablePeerAccessTo(second).ok());
    REQUIRE(first->EnablePeerAccessTo(second).ok());  // again: nothing to do
    CHECK(launch_on_first(theirs.ptr()).ok());
    // One way: the second executor's kernels still take only their own memory.
    auto mine = first->AllocateOwnedArray<int>(64);
    tk::AddKernel add_there(second);
    REQUIRE(second->GetKernel(tk::AddSpec(), &add_there).ok());
    se::Stream there(second);
    se::Status other_way =
        there.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), add_there, mine.ptr(), 1).BlockHostUntilDone();
    CHECK(other_way.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(other_way, "EnablePeerAccessTo"));
  } else {
    CHECK_FALSE(first->CanEnablePeerAccessTo(second));
    CHECK_FALSE(second->CanEnablePeerAccessTo(first));
    se::Status enable = first->EnablePeerAccessTo(second);
    CHECK(enable.code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(enable, "has no peer access"));
    CHECK(Mentions(enable, "ThenCopyBetween copies memory of " + second->DeviceLabel()));
    se::Status launch = launch_on_first(theirs.ptr());
    CHECK(launch.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(launch, "argument 0 is not live memory of this executor: it is memory of " + second->DeviceLabel() +
                               ", another executor"));
    CHECK(Mentions(launch, "no peer access"));
    CHECK(Mentions(launch, "ThenCopyBetween copies it here"));
  }

  // Copies on one stream take only its executor's memory, peer or not.
  auto mine = first->AllocateOwnedArray<int>(64);
  se::Stream copier(first);
  se::Status copy = copier.Init().ThenMemcpyD2D(mine.ptr(), theirs.cref(), 64 * sizeof(int)).BlockHostUntilDone();
  CHECK(copy.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(copy, "ThenCopyBetween"));
  // So do device views of pinned memory: a view is made by the executor that pinned it.
  se::PinnedHostMemory<int> pinned = second->HostAllocate<int>(16);
  REQUIRE(pinned.ok());
  CHECK(first->HostMemoryDeviceView(pinned).status().code() == se::ErrorCode::kFailedPrecondition);
  // Memory freed on its executor is refused like any freed memory, peer or not.
  se::DeviceMemory<int> stale = *theirs.ptr();
  REQUIRE(theirs.Reset().ok());
  se::Status freed = launch_on_first(&stale);
  CHECK(freed.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(freed, "not live memory of this executor"));
}

TEST_CASE("a kernel adds to a peer's memory", "[peer][kernel-results]") {
  auto two = TwoExecutors();
  if constexpr (!se::PeerAccessBackend<TestBackend>) {
    SUCCEED("this backend has no peer access (checked by the test above)");
    return;
  }
  if (!two || !two->first->CanEnablePeerAccessTo(two->second)) {
    SUCCEED("no two devices that reach each other's memory");
    return;
  }
  se::StreamExecutor<TestBackend>* first = two->first;
  se::StreamExecutor<TestBackend>* second = two->second;
  tk::AddKernel add(first);
  REQUIRE(first->GetKernel(tk::AddSpec(), &add).ok());
  auto theirs = second->AllocateOwnedArray<int>(256);
  std::vector<int> values(256, 5);
  REQUIRE(second->SynchronousMemcpyH2D<int>(values, theirs.ptr()).ok());
  REQUIRE(first->EnablePeerAccessTo(second).ok());
  se::Stream stream(first);
  REQUIRE(
      stream.Init().ThenLaunch(se::ThreadDim(256), se::BlockDim(1), add, theirs.ptr(), 2).BlockHostUntilDone().ok());
  REQUIRE(second->SynchronousMemcpyD2H<int>(theirs.cref(), values).ok());
  CHECK(values[0] == 7);
  CHECK(values[255] == 7);
}
