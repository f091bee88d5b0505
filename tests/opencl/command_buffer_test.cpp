// Command buffers on OpenCL: runs of launches, device copies and fills become
// cl_khr_command_buffer objects where the device has the extension (PoCL
// does); STREAMEXECUTOR_OPENCL_COMMAND_BUFFER=replay replays everything. The
// meson test runs this file both ways; SE_EXPECT_COMMAND_BUFFER says which.
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "opencl/opencl_test_util.hpp"

namespace {
constexpr const char* kIncrement = R"(
__kernel void increment(__global uint* data, uint amount) { data[get_global_id(0)] += amount; }
)";
using IncrementKernel = se::TypedKernel<se::DeviceMemory<std::uint32_t>*, std::uint32_t>;

bool ExpectNative() {
  const char* expect = std::getenv("SE_EXPECT_COMMAND_BUFFER");
  return expect == nullptr || std::string_view(expect) != "replay";
}
}  // namespace

TEST_CASE("launches, fills and copies around host transfers and callbacks", "[opencl][command-buffer]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kIncrement, "increment");
  IncrementKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  constexpr std::size_t n = 256;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  auto b = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> seen_by_callback(n), result(n), input(n, 5);
  int callbacks = 0;

  // Runs: [fill, launch, launch] H2D-free native run; D2H replayed; callback
  // replayed; [copy, launch] native; H2D replayed; [launch] native; D2H.
  se::CommandBuffer buffer(executor);
  buffer.Init()
      .ThenMemset32(a.ptr(), 1u, n * 4)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), kernel, a.ptr(), 2u)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), kernel, a.ptr(), 3u)
      .ThenMemcpyD2H<std::uint32_t>(a.cref(), seen_by_callback)
      .ThenDoHostCallback([&] { ++callbacks; })
      .ThenMemcpyD2D(b.ptr(), a.cref())
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), kernel, b.ptr(), 10u)
      .ThenMemcpyH2D<std::uint32_t>(input, a.ptr())
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), kernel, b.ptr(), 100u)
      .ThenMemcpyD2H<std::uint32_t>(b.cref(), result);
  REQUIRE(buffer.Finalize().ok());
  CHECK(buffer.native_handle()->native_runs() == (ExpectNative() ? 3 : 0));

  se::Stream stream(executor);
  stream.Init();
  for (int round = 1; round <= 4; ++round) {
    REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
    CHECK(callbacks == round);
    CHECK(seen_by_callback == std::vector<std::uint32_t>(n, 6u));
    CHECK(result == std::vector<std::uint32_t>(n, 116u));
  }
  std::vector<std::uint32_t> copied(n);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(a.cref(), copied).ok());
  CHECK(copied == input);
}

TEST_CASE("a native run queued behind a pending host callback waits for it", "[opencl][command-buffer]") {
  auto* executor = OpenCLExecutor();
  auto a = executor->AllocateOwnedArray<std::uint32_t>(16);
  std::vector<std::uint32_t> host(16, 0);
  se::CommandBuffer fill(executor);
  fill.Init().ThenMemset32(a.ptr(), 9u, 64);
  REQUIRE(fill.Finalize().ok());
  CHECK(fill.native_handle()->native_runs() == (ExpectNative() ? 1 : 0));

  se::Stream stream(executor);
  stream.Init()
      .ThenMemset32(a.ptr(), 1u, 64)
      .ThenDoHostCallback([&] {
        // The fill submitted after this callback must not have run yet.
        std::vector<std::uint32_t> now(16);
        if (!executor->SynchronousMemcpyD2H<std::uint32_t>(a.cref(), now).ok() ||
            now != std::vector<std::uint32_t>(16, 1u)) {
          throw std::runtime_error("the command buffer ran before the callback");
        }
      })
      .ThenSubmit(&fill)
      .ThenMemcpyD2H<std::uint32_t>(a.cref(), host);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(host == std::vector<std::uint32_t>(16, 9u));
}

TEST_CASE("many submissions of a native buffer in flight at once", "[opencl][command-buffer]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kIncrement, "increment");
  IncrementKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto a = executor->AllocateOwnedArray<std::uint32_t>(32);
  REQUIRE(executor->SynchronousMemZero(a.ptr(), 128).ok());
  se::Stream stream(executor);
  stream.Init();
  {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenLaunch(se::ThreadDim(32), se::BlockDim(1), kernel, a.ptr(), 1u);
    for (int i = 0; i < 200; ++i) stream.ThenSubmit(&buffer);
  }  // destroyed with submissions queued
  std::vector<std::uint32_t> host(32);
  REQUIRE(stream.ThenMemcpyD2H<std::uint32_t>(a.cref(), host).BlockHostUntilDone().ok());
  CHECK(host == std::vector<std::uint32_t>(32, 200u));
}

TEST_CASE("a buffer submitted to a stream that times its work is replayed there, in order",
          "[opencl][command-buffer][timer]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kIncrement, "increment");
  IncrementKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  constexpr std::size_t n = 128;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  se::CommandBuffer buffer(executor);
  buffer.Init()
      .ThenMemset32(a.ptr(), 4u, n * 4)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), kernel, a.ptr(), 3u)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), kernel, a.ptr(), 2u);
  REQUIRE(buffer.Finalize().ok());
  CHECK(buffer.native_handle()->native_runs() == (ExpectNative() ? 1 : 0));

  // The timer moves the stream to a profiling queue, which the extension
  // would refuse for a buffer recorded without profiling.
  se::Timer timer(executor);
  REQUIRE(timer.Init().ok());
  std::vector<std::uint32_t> result(n);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenStartTimer(&timer)
              .ThenSubmit(&buffer)
              .ThenLaunch(se::ThreadDim(64), se::BlockDim(n / 64), kernel, a.ptr(), 1u)
              .ThenStopTimer(&timer)
              .ThenMemcpyD2H<std::uint32_t>(a.cref(), result)
              .BlockHostUntilDone()
              .ok());
  CHECK(result == std::vector<std::uint32_t>(n, 10u));
  CHECK(timer.ElapsedNanoseconds().ok());

  // The same buffer still runs natively on a stream without a timer.
  se::Stream plain(executor);
  REQUIRE(plain.Init().ThenSubmit(&buffer).ThenMemcpyD2H<std::uint32_t>(a.cref(), result).BlockHostUntilDone().ok());
  CHECK(result == std::vector<std::uint32_t>(n, 9u));
}
