// Launch attributes on CUDA against the counting driver double: a launch
// with attributes is one cuLaunchKernelEx carrying exactly the attributes
// asked (recorded by the double), one without is cuLaunchKernel as before;
// the cluster's shape and the device's support are checked before the
// driver is called; the driver's refusals (a cooperative grid too large to
// be resident) are Statuses naming the call, the kernel, the sizes and the
// attributes. Run twice: on the double's compute capability 9.0 device, and
// ('[older-device]', a hidden case) on one of 8.0 without cooperative launch.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Calls;
using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

constexpr const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry grid_sync(.param .u64 grid_sync_param_0, .param .u32 grid_sync_param_1)
{
  ret;
}
)";

using GridKernel = se::TypedKernel<se::DeviceMemory<float>*, std::uint32_t>;

GridKernel Load() {
  GridKernel kernel(Executor());
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaPtxInMemory(kPtx, "grid_sync");
  REQUIRE(Executor()->GetKernel(spec, &kernel).ok());
  return kernel;
}

}  // namespace

TEST_CASE("each attribute reaches cuLaunchKernelEx; a launch without any is cuLaunchKernel",
          "[cuda][launch-attributes]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const GridKernel kernel = Load();
  auto data = executor->AllocateOwnedArray<float>(1024);
  se::Stream stream(executor);
  stream.Init();
  SeCountingDoubleLaunch launch{};
  const long plain = Calls("cuLaunchKernel"), extended = Calls("cuLaunchKernelEx");

  REQUIRE(stream.ThenLaunch(se::LaunchAttributes(), se::ThreadDim(128), se::BlockDim(8), kernel, data.ptr(), 7u).ok());
  CHECK(Calls("cuLaunchKernel") == plain + 1);
  CHECK(Calls("cuLaunchKernelEx") == extended);

  REQUIRE(
      stream
          .ThenLaunch(se::LaunchAttributes().Cooperative(), se::ThreadDim(128), se::BlockDim(8), kernel, data.ptr(), 7u)
          .ok());
  CHECK(Calls("cuLaunchKernelEx") == extended + 1);
  REQUIRE(Double().last_launch(&launch));
  CHECK(launch.cooperative == 1);
  CHECK(launch.programmatic == 0);
  CHECK(launch.cluster[0] == 0);
  CHECK(launch.grid[0] == 8);
  CHECK(launch.block[0] == 128);
  std::uint32_t second = 0;
  std::memcpy(&second, launch.param_bytes[1], sizeof second);
  CHECK(second == 7u);

  REQUIRE(stream
              .ThenLaunch(se::LaunchAttributes().Clusters(se::ClusterDim(2, 2)), se::ThreadDim(32), se::BlockDim(4, 2),
                          kernel, data.ptr(), 1u)
              .ok());
  REQUIRE(Double().last_launch(&launch));
  CHECK(launch.cluster[0] == 2);
  CHECK(launch.cluster[1] == 2);
  CHECK(launch.cluster[2] == 1);
  CHECK(launch.cooperative == 0);

  REQUIRE(stream
              .ThenLaunch(se::LaunchAttributes().ProgrammaticDependent().Cooperative(), se::ThreadDim(32),
                          se::BlockDim(2), kernel, data.ptr(), 1u)
              .BlockHostUntilDone()
              .ok());
  REQUIRE(Double().last_launch(&launch));
  CHECK(launch.programmatic == 1);
  CHECK(launch.cooperative == 1);
  CHECK(launch.stream == stream.native_handle()->stream);
  CHECK(Calls("cuLaunchKernelEx") == extended + 3);
}

TEST_CASE("a cluster that does not divide the grid, or is too large, is refused before the driver",
          "[cuda][launch-attributes]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const GridKernel kernel = Load();
  auto data = executor->AllocateOwnedArray<float>(16);
  const long extended = Calls("cuLaunchKernelEx");
  se::Stream uneven(executor);
  uneven.Init().ThenLaunch(se::LaunchAttributes().Clusters(se::ClusterDim(2)), se::ThreadDim(32), se::BlockDim(3),
                           kernel, data.ptr(), 1u);
  CHECK(uneven.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(uneven.status(), "kernel 'grid_sync' on cuda:0"));
  CHECK(Mentions(uneven.status(), "a grid of 3x1x1 blocks does not divide into clusters of 2x1x1 blocks"));
  se::Stream large(executor);
  large.Init().ThenLaunch(se::LaunchAttributes().Clusters(se::ClusterDim(4, 4)), se::ThreadDim(32), se::BlockDim(8, 8),
                          kernel, data.ptr(), 1u);
  CHECK(large.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(large.status(), "holds 16 blocks, more than the 8"));
  CHECK(Calls("cuLaunchKernelEx") == extended);
}

TEST_CASE("the driver's refusal of a cooperative grid too large to be resident is a Status naming it",
          "[cuda][launch-attributes]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const GridKernel kernel = Load();
  auto data = executor->AllocateOwnedArray<float>(16);
  se::Stream stream(executor);
  // The double's 4 multiprocessors hold 4 x 2 blocks of 1024 threads at once.
  stream.Init().ThenLaunch(se::LaunchAttributes().Cooperative(), se::ThreadDim(1024), se::BlockDim(9), kernel,
                           data.ptr(), 1u);
  const se::Status status = stream.status();
  INFO(status.ToString());
  CHECK(Mentions(status, "cuLaunchKernelEx failed with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"));
  CHECK(Mentions(status, "kernel 'grid_sync' on cuda:0 with 9x1x1 blocks of 1024x1x1 threads"));
  CHECK(Mentions(status, "cooperative"));
  // The same launch with a grid that fits.
  se::Stream fits(executor);
  CHECK(fits.Init()
            .ThenLaunch(se::LaunchAttributes().Cooperative(), se::ThreadDim(1024), se::BlockDim(8), kernel, data.ptr(),
                        1u)
            .ok());
}

TEST_CASE("launch attributes are checked like any launch, and refused while capturing", "[cuda][launch-attributes]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const GridKernel kernel = Load();
  auto data = executor->AllocateOwnedArray<float>(16);
  const long extended = Calls("cuLaunchKernelEx");
  se::Stream too_many_threads(executor);
  too_many_threads.Init().ThenLaunch(se::LaunchAttributes().Cooperative(), se::ThreadDim(4096), se::BlockDim(1), kernel,
                                     data.ptr(), 1u);
  CHECK(too_many_threads.status().code() == se::ErrorCode::kInvalidArgument);
  se::Stream uninitialized(executor);
  uninitialized.ThenLaunch(se::LaunchAttributes().Cooperative(), se::ThreadDim(32), se::BlockDim(1), kernel, data.ptr(),
                           1u);
  CHECK(uninitialized.status().code() == se::ErrorCode::kFailedPrecondition);
  se::Stream capturing(executor);
  se::CommandBuffer buffer(executor);
  buffer.Init();
  REQUIRE(capturing.Init().BeginCapture(&buffer).ok());
  capturing.ThenLaunch(se::LaunchAttributes().Cooperative(), se::ThreadDim(32), se::BlockDim(1), kernel, data.ptr(),
                       1u);
  const se::Status captured = capturing.EndCapture(&buffer);
  CHECK(!captured.ok());
  CHECK(Mentions(captured, "ThenLaunch with launch attributes"));
  CHECK(Calls("cuLaunchKernelEx") == extended);
}

// Hidden: its own run makes the double's device older (SE_COUNTING_DOUBLE_COMPUTE_CAPABILITY=80,
// SE_COUNTING_DOUBLE_NO_COOPERATIVE).
TEST_CASE("a device without the feature refuses each attribute before the driver", "[cuda][.][older-device]") {
  REQUIRE(std::getenv("SE_COUNTING_DOUBLE_COMPUTE_CAPABILITY") != nullptr);
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const GridKernel kernel = Load();
  auto data = executor->AllocateOwnedArray<float>(16);
  const long extended = Calls("cuLaunchKernelEx");
  auto refused = [&](const se::LaunchAttributes& attributes) {
    se::Stream stream(executor);
    stream.Init().ThenLaunch(attributes, se::ThreadDim(32), se::BlockDim(2), kernel, data.ptr(), 1u);
    return stream.status();
  };
  const se::Status cooperative = refused(se::LaunchAttributes().Cooperative());
  CHECK(cooperative.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(cooperative, "a cooperative launch needs a device with CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH"));
  const se::Status clusters = refused(se::LaunchAttributes().Clusters(se::ClusterDim(2)));
  CHECK(clusters.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(clusters, "a launch in clusters needs compute capability 9.0; this device is 8.0"));
  const se::Status programmatic = refused(se::LaunchAttributes().ProgrammaticDependent());
  CHECK(programmatic.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(programmatic, "a programmatic dependent launch needs compute capability 9.0"));
  CHECK(Calls("cuLaunchKernelEx") == extended);
  // Without attributes the same kernel launches.
  se::Stream plain(executor);
  CHECK(
      plain.Init().ThenLaunch(se::LaunchAttributes(), se::ThreadDim(32), se::BlockDim(2), kernel, data.ptr(), 1u).ok());
}
