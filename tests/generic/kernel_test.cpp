// Loading and launching kernels: arguments, dimensions, shared memory, slices.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

TEST_CASE("saxpy runs over many blocks", "[kernel][kernel-results]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  CHECK(kernel.IsLoaded());
  CHECK(kernel.name() == "saxpy");

  constexpr std::uint32_t n = 100'000;
  std::vector<float> x(n), y(n, 1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  se::Stream stream(executor);
  const std::uint64_t threads = 128;
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(x, dx.ptr())
              .ThenMemcpyH2D<float>(y, dy.ptr())
              .ThenLaunch(se::ThreadDim(threads), se::BlockDim((n + threads - 1) / threads), kernel, 2.0f, dx.ptr(),
                          dy.ptr(), n)
              .ThenMemcpyD2H<float>(dy.cref(), y)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t i = 0; i < n; i += 997) CHECK(y[i] == 2.0f * static_cast<float>(i) + 1.0f);
  CHECK(y[n - 1] == 2.0f * static_cast<float>(n - 1) + 1.0f);
}

TEST_CASE("three-dimensional grids and blocks reach the kernel", "[kernel][kernel-results]") {
  auto* executor = TestExecutor();
  tk::CoordinatesKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::CoordinatesSpec(), &kernel).ok());
  const se::ThreadDim threads(4, 3, 2);
  const se::BlockDim blocks(3, 2, 2);
  const std::size_t total = threads.Count() * blocks.Count();
  auto out = executor->AllocateOwnedArray<std::uint32_t>(total);
  std::vector<std::uint32_t> host(total, 0);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(threads, blocks, kernel, out.ptr())
              .ThenMemcpyD2H<std::uint32_t>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  std::size_t index = 0;
  for (std::uint32_t bz = 0; bz < 2; ++bz)
    for (std::uint32_t by = 0; by < 2; ++by)
      for (std::uint32_t bx = 0; bx < 3; ++bx)
        for (std::uint32_t tz = 0; tz < 2; ++tz)
          for (std::uint32_t ty = 0; ty < 3; ++ty)
            for (std::uint32_t tx = 0; tx < 4; ++tx) {
              const std::uint32_t expected = (bx << 24) | (by << 20) | (bz << 16) | (tx << 8) | (ty << 4) | tz;
              CHECK(host[index++] == expected);
            }
}

TEST_CASE("shared memory is sized at launch, per block", "[kernel][kernel-results]") {
  auto* executor = TestExecutor();
  tk::ReverseKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &kernel).ok());
  constexpr std::uint32_t width = 100, blocks = 16;
  std::vector<int> data(width * blocks);
  std::iota(data.begin(), data.end(), 0);
  auto device = executor->AllocateOwnedArray<int>(data.size());
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(data, device.ptr())
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(blocks), kernel, device.ptr(),
                          se::SharedDeviceMemory<int>(width), width)
              .ThenMemcpyD2H<int>(device.cref(), data)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t b = 0; b < blocks; ++b) {
    CHECK(data[b * width] == static_cast<int>(b * width + width - 1));
    CHECK(data[b * width + width - 1] == static_cast<int>(b * width));
  }
}

TEST_CASE("a slice passed to a kernel starts at its offset", "[kernel][kernel-results]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  std::vector<int> data(64, 0);
  auto device = executor->AllocateOwnedArray<int>(64);
  se::DeviceMemory<int> middle = device.cref().GetSlice(16, 32);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(data, device.ptr())
              .ThenLaunch(se::ThreadDim(32), se::BlockDim(1), kernel, &middle, 5)
              .ThenMemcpyD2H<int>(device.cref(), data)
              .BlockHostUntilDone()
              .ok());
  CHECK(data[15] == 0);
  CHECK(data[16] == 5);
  CHECK(data[47] == 5);
  CHECK(data[48] == 0);
}

TEST_CASE("launches queue up and run in order", "[kernel][kernel-results]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  auto device = executor->AllocateOwnedArray<int>(256);
  REQUIRE(executor->SynchronousMemZero(device.ptr(), 256 * sizeof(int)).ok());
  se::Stream stream(executor);
  stream.Init();
  for (int i = 0; i < 2000; ++i) stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, device.ptr(), 1);
  std::vector<int> data(256);
  REQUIRE(stream.ThenMemcpyD2H<int>(device.cref(), data).BlockHostUntilDone().ok());
  CHECK(data == std::vector<int>(256, 2000));
}

TEST_CASE("a spec whose arity differs from the TypedKernel is refused", "[kernel][errors]") {
  auto* executor = TestExecutor();
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<&tk::add_host>("add");
  spec.AddOpenCLTextInMemory(tk::kAddOpenCL, "add");
  tk::AddKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "declares arity 3, but the TypedKernel has 2 parameter(s)"));
  CHECK_FALSE(kernel.IsLoaded());
}

TEST_CASE("a spec without code for this platform is refused", "[kernel][errors]") {
  auto* executor = TestExecutor();
  se::MultiKernelLoaderSpec spec(2);
  tk::AddKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK(status.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(status, "it is empty"));
  CHECK_FALSE(kernel.IsLoaded());
}

TEST_CASE("a spec given two entries of one kind is refused at GetKernel", "[kernel][errors]") {
  auto* executor = TestExecutor();
  se::MultiKernelLoaderSpec spec = tk::AddSpec();
  spec.AddOpenCLTextInMemory(tk::kAddOpenCL, "add_again");  // a second OpenCL text: no silent replacement
  tk::AddKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK(status.code() == se::ErrorCode::kAlreadyExists);
  CHECK(Mentions(status, std::string("GetKernel on ") + std::string(TestBackend::kName) + ":0"));
  CHECK(Mentions(status, "already has OpenCL text (adding it again for kernel 'add_again')"));
  CHECK_FALSE(kernel.IsLoaded());
  se::UntypedKernel untyped(executor);
  CHECK(executor->GetUntypedKernel(spec, &untyped).code() == se::ErrorCode::kAlreadyExists);
}

TEST_CASE("launching an unloaded kernel fails the stream", "[kernel][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  auto device = executor->AllocateOwnedArray<int>(4);
  se::Stream stream(executor);
  se::Status status =
      stream.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(), kernel, device.ptr(), 1).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "kernel is not loaded"));
}

TEST_CASE("null memory and bad dimensions are launch errors naming the kernel", "[kernel][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  SECTION("null memory") {
    se::DeviceMemory<int> null;
    se::Stream stream(executor);
    se::Status status =
        stream.Init().ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, &null, 1).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "kernel 'add'"));
    CHECK(Mentions(status, "argument 0 is a null DeviceMemory"));
  }
  SECTION("zero threads") {
    auto device = executor->AllocateOwnedArray<int>(4);
    se::Stream stream(executor);
    se::Status status =
        stream.Init().ThenLaunch(se::ThreadDim(0), se::BlockDim(1), kernel, device.ptr(), 1).BlockHostUntilDone();
    CHECK(Mentions(status, "kernel 'add'"));
    CHECK(Mentions(status, "threads 0x1x1 per block"));
  }
  SECTION("too many threads per block") {
    auto device = executor->AllocateOwnedArray<int>(4);
    const std::uint64_t too_many = executor->GetDeviceDescription().max_threads_per_block + 1;
    se::Stream stream(executor);
    se::Status status = stream.Init()
                            .ThenLaunch(se::ThreadDim(too_many), se::BlockDim(1), kernel, device.ptr(), 1)
                            .BlockHostUntilDone();
    CHECK(Mentions(status, fmt::format("at most {} threads per block", too_many - 1)));
  }
  SECTION("too much shared memory") {
    tk::ReverseKernel reverse(executor);
    REQUIRE(executor->GetKernel(tk::ReverseSpec(), &reverse).ok());
    auto device = executor->AllocateOwnedArray<int>(4);
    const std::uint64_t limit = executor->GetDeviceDescription().shared_memory_per_block;
    se::Stream stream(executor);
    se::Status status = stream.Init()
                            .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), reverse, device.ptr(),
                                        se::SharedDeviceMemory<int>(limit / sizeof(int) + 1), 4u)
                            .BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(status, "shared memory"));
  }
}

TEST_CASE("a moved TypedKernel keeps the loaded handle", "[kernel]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  tk::AddKernel moved = std::move(kernel);
  CHECK(moved.IsLoaded());
  CHECK_FALSE(kernel.IsLoaded());  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("a const view is accepted for memory the kernel reads", "[kernel][kernel-results]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  constexpr std::uint32_t n = 1000;
  std::vector<float> x(n), y(n, 1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  const se::ScopedDeviceMemory<float>& read_only = dx;
  const se::DeviceMemory<float> slice = dx.cref().GetSlice(0, n);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(x, dx.ptr())
              .ThenMemcpyH2D<float>(y, dy.ptr())
              .ThenLaunch(se::ThreadDim(100), se::BlockDim(n / 100), kernel, 2.0f, &dx.cref(), dy.ptr(), n)
              .ThenLaunch(se::ThreadDim(100), se::BlockDim(n / 100), kernel, 1.0f, read_only.ptr(), dy.ptr(), n)
              .ThenLaunch(se::ThreadDim(100), se::BlockDim(n / 100), kernel, 1.0f, &slice, dy.ptr(), n)
              .ThenMemcpyD2H<float>(dy.cref(), y)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t i : {0u, 1u, 500u, n - 1}) CHECK(y[i] == 4.0f * static_cast<float>(i) + 1.0f);
}

TEST_CASE("a const view is checked for liveness at launch like any other", "[kernel][errors]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  auto dx = executor->AllocateOwnedArray<float>(100);
  auto dy = executor->AllocateOwnedArray<float>(100);
  const se::DeviceMemory<float> stale = dx.cref();
  REQUIRE(dx.Reset().ok());
  se::Stream stream(executor);
  stream.Init().ThenLaunch(se::ThreadDim(100), se::BlockDim(1), kernel, 1.0f, &stale, dy.ptr(), 100u);
  CHECK(stream.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(stream.status(), "argument 1"));
  const se::DeviceMemory<float>* null_view = nullptr;
  se::Stream second(executor);
  second.Init().ThenLaunch(se::ThreadDim(100), se::BlockDim(1), kernel, 1.0f, null_view, dy.ptr(), 100u);
  CHECK(second.status().code() == se::ErrorCode::kInvalidArgument);
}

TEST_CASE("launch attributes: none is a plain launch; a backend without them refuses, naming them",
          "[kernel][kernel-results][launch-attributes]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &kernel).ok());
  constexpr std::uint32_t n = 256;
  std::vector<float> x(n, 1.0f), y(n, 1.0f);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  se::Stream stream(executor);
  REQUIRE(
      stream.Init()
          .ThenMemcpyH2D<float>(x, dx.ptr())
          .ThenMemcpyH2D<float>(y, dy.ptr())
          .ThenLaunch(se::LaunchAttributes(), se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, dx.ptr(), dy.ptr(), n)
          .ThenMemcpyD2H<float>(dy.cref(), y)
          .BlockHostUntilDone()
          .ok());
  CHECK(y[0] == 3.0f);
  CHECK(y[n - 1] == 3.0f);

  se::Stream cooperative(executor);
  const se::Status waited = cooperative.Init()
                                .ThenLaunch(se::LaunchAttributes().Cooperative(), se::ThreadDim(64), se::BlockDim(4),
                                            kernel, 2.0f, dx.ptr(), dy.ptr(), n)
                                .ThenMemcpyD2H<float>(dy.cref(), y)
                                .BlockHostUntilDone();
  se::Stream clustered(executor);
  clustered.Init().ThenLaunch(se::LaunchAttributes().Clusters(se::ClusterDim(3)), se::ThreadDim(64), se::BlockDim(4),
                              kernel, 2.0f, dx.ptr(), dy.ptr(), n);
  INFO(cooperative.status().ToString());
  INFO(clustered.status().ToString());
  if constexpr (se::LaunchAttributeBackend<TestBackend>) {
    // A device that launches cooperatively runs it (4 blocks of 64 fit any such device).
    REQUIRE(waited.ok());
    CHECK(y[0] == 5.0f);
    CHECK(y[n - 1] == 5.0f);
    CHECK(clustered.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(clustered.status(), "does not divide into clusters of 3x1x1 blocks"));
  } else {
    CHECK(waited.code() == se::ErrorCode::kUnimplemented);
    CHECK(cooperative.status().code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(cooperative.status(), "cooperative"));
    CHECK(Mentions(cooperative.status(), "LaunchAttributeBackend"));
    CHECK(clustered.status().code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(clustered.status(), "clusters of 3x1x1 blocks"));
  }
}
