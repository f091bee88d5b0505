// PreparedLaunch: a kernel, grid and arguments bound once and relaunched with
// only the changed arguments (core/prepared_launch.hpp).
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

namespace {

using tk::saxpy_grid::kBlocks;
using tk::saxpy_grid::kN;
using tk::saxpy_grid::kThreads;

struct Saxpy {
  se::StreamExecutor<TestBackend>* executor = TestExecutor();
  tk::SaxpyKernel kernel{executor};
  se::ScopedDeviceMemory<float> x = executor->AllocateOwnedArray<float>(kN);
  se::ScopedDeviceMemory<float> y = executor->AllocateOwnedArray<float>(kN);
  se::ScopedDeviceMemory<float> z = executor->AllocateOwnedArray<float>(kN);
  se::Stream<TestBackend> stream{executor};

  Saxpy() {
    REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
    std::vector<float> host(kN);
    std::iota(host.begin(), host.end(), 0.0f);  // x[i] = i
    std::vector<float> zeros(kN, 0.0f);
    REQUIRE(stream.Init()
                .ThenMemcpyH2D<float>(host, x.ptr())
                .ThenMemcpyH2D<float>(zeros, y.ptr())
                .ThenMemcpyH2D<float>(zeros, z.ptr())
                .BlockHostUntilDone()
                .ok());
  }
  std::vector<float> Read(const se::ScopedDeviceMemory<float>& memory) {
    std::vector<float> host(kN);
    REQUIRE(executor->SynchronousMemcpyD2H<float>(memory.cref(), host).ok());
    return host;
  }
};

// y[i] == factor * i at a few indices.
void CheckMultiple(const std::vector<float>& values, float factor) {
  for (std::uint32_t i : {0u, 1u, 17u, 500u, kN - 1}) CHECK(values[i] == factor * static_cast<float>(i));
}

}  // namespace

TEST_CASE("a prepared launch relaunches with the changed arguments", "[kernel][prepared][kernel-results]") {
  Saxpy s;
  se::PreparedLaunch launch(s.kernel, se::ThreadDim(kThreads), kBlocks, 2.0f, s.x.ptr(), s.y.ptr(), kN);
  s.stream.ThenLaunch(launch).ThenLaunch(launch);  // y = 4x
  launch.Set<0>(3.0f);
  s.stream.ThenLaunch(launch);  // y = 7x
  launch.SetArg<2>(s.z.ptr()).Set<0>(0.5f);
  s.stream.ThenLaunch(launch);  // z = x / 2
  REQUIRE(s.stream.BlockHostUntilDone().ok());
  CheckMultiple(s.Read(s.y), 7.0f);
  CheckMultiple(s.Read(s.z), 0.5f);
}

TEST_CASE("a prepared launch interleaved with other launches of its kernel keeps its arguments",
          "[kernel][prepared][kernel-results]") {
  // The hazard of skipping unchanged arguments: the backend's kernel object
  // is shared by every launch of the kernel, so an ordinary launch (or
  // another prepared one) in between overwrites what this one had set.
  Saxpy s;
  se::PreparedLaunch into_y(s.kernel, se::ThreadDim(kThreads), kBlocks, 1.0f, s.x.ptr(), s.y.ptr(), kN);
  se::PreparedLaunch into_z(s.kernel, se::ThreadDim(kThreads), kBlocks, 10.0f, s.x.ptr(), s.z.ptr(), kN);
  s.stream
      .ThenLaunch(into_y)                                                                        // y = x
      .ThenLaunch(se::ThreadDim(kThreads), kBlocks, s.kernel, 100.0f, s.x.ptr(), s.z.ptr(), kN)  // z = 100x
      .ThenLaunch(into_y)                                                                        // y = 2x
      .ThenLaunch(into_z)                                                                        // z = 110x
      .ThenLaunch(into_y);                                                                       // y = 3x
  into_y.Set<0>(4.0f);
  s.stream.ThenLaunch(into_z).ThenLaunch(into_y);  // z = 120x, y = 7x
  REQUIRE(s.stream.BlockHostUntilDone().ok());
  CheckMultiple(s.Read(s.y), 7.0f);
  CheckMultiple(s.Read(s.z), 120.0f);

  // Copies carry the arguments: a copy launches what the original would.
  se::PreparedLaunch copy = into_y;
  copy.Set<0>(-7.0f);
  REQUIRE(s.stream.ThenLaunch(copy).ThenLaunch(into_y).ThenLaunch(copy).BlockHostUntilDone().ok());  // y = -3x
  CheckMultiple(s.Read(s.y), -3.0f);
}

TEST_CASE("memory freed after it was bound fails the prepared launch", "[kernel][prepared][errors]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(kN);
  se::DeviceMemory<float> y = executor->AllocateArray<float>(kN);
  se::PreparedLaunch launch(kernel, se::ThreadDim(kThreads), kBlocks, 2.0f, x.ptr(), &y, kN);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenLaunch(launch).BlockHostUntilDone().ok());
  REQUIRE(executor->Deallocate(&y).ok());
  const se::Status status = stream.ThenLaunch(launch).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "kernel 'saxpy'"));
  CHECK(Mentions(status, "argument 2 is not live memory"));
}

TEST_CASE("a prepared launch is checked at every launch", "[kernel][prepared][errors]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(kN);

  SECTION("a null pointer bound for memory") {
    se::PreparedLaunch launch(kernel, se::ThreadDim(kThreads), kBlocks, 2.0f, x.ptr(), nullptr, kN);
    se::Stream stream(executor);
    const se::Status status = stream.Init().ThenLaunch(launch).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "argument 2"));
  }
  SECTION("dimensions changed to zero threads") {
    se::PreparedLaunch launch(kernel, se::ThreadDim(kThreads), kBlocks, 2.0f, x.ptr(), x.ptr(), kN);
    launch.SetDimensions(se::ThreadDim(0), kBlocks);
    se::Stream stream(executor);
    const se::Status status = stream.Init().ThenLaunch(launch).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "threads 0x1x1"));
  }
  SECTION("a kernel that was never loaded") {
    tk::SaxpyKernel unloaded(executor);
    se::PreparedLaunch launch(unloaded, se::ThreadDim(kThreads), kBlocks, 2.0f, x.ptr(), x.ptr(), kN);
    se::Stream stream(executor);
    const se::Status status = stream.Init().ThenLaunch(launch).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "not loaded"));
  }
  SECTION("a stream that was not initialized") {
    se::PreparedLaunch launch(kernel, se::ThreadDim(kThreads), kBlocks, 2.0f, x.ptr(), x.ptr(), kN);
    se::Stream stream(executor);
    const se::Status status = stream.ThenLaunch(launch).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "not initialized"));
  }
}

TEST_CASE("a prepared launch with shared memory sizes it per launch", "[kernel][prepared][kernel-results]") {
  auto* executor = TestExecutor();
  tk::ReverseKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &kernel).ok());
  constexpr std::uint32_t width = 10, blocks = 4;
  std::vector<int> data(width * blocks);
  std::iota(data.begin(), data.end(), 0);
  auto device = executor->AllocateOwnedArray<int>(data.size());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenMemcpyH2D<int>(data, device.ptr()).BlockHostUntilDone().ok());
  se::PreparedLaunch launch(kernel, se::ThreadDim(1), se::BlockDim(blocks), device.ptr(),
                            se::SharedDeviceMemory<int>(width), width);
  stream.ThenLaunch(launch);  // each block of 10 reversed
  launch.SetDimensions(se::ThreadDim(1), se::BlockDim(blocks / 2))
      .Set<1>(se::SharedDeviceMemory<int>(2 * width))
      .Set<2>(2 * width);
  stream.ThenLaunch(launch);  // then each block of 20 reversed
  REQUIRE(stream.ThenMemcpyD2H<int>(device.cref(), data).BlockHostUntilDone().ok());
  // Block 0 of 20: [9..0, 19..10] reversed is [10..19, 0..9].
  CHECK(data[0] == 10);
  CHECK(data[9] == 19);
  CHECK(data[10] == 0);
  CHECK(data[19] == 9);
}
