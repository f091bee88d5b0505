// Launches typed at run time: UntypedKernel and KernelArgs, checked at each
// launch against the parameter list the backend read at load time
// (core/kernel_args.hpp, core/untyped_launch.hpp).
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

namespace {

using tk::saxpy_grid::kBlocks;
using tk::saxpy_grid::kN;
using tk::saxpy_grid::kThreads;

struct Fixture {
  se::StreamExecutor<TestBackend>* executor = TestExecutor();
  se::UntypedKernel kernel{executor};
  se::ScopedDeviceMemory<float> x = executor->AllocateOwnedArray<float>(kN);
  se::ScopedDeviceMemory<float> y = executor->AllocateOwnedArray<float>(kN);
  se::Stream<TestBackend> stream{executor};

  Fixture() {
    const se::Status loaded = executor->GetUntypedKernel(tk::SaxpySpec(), &kernel);
    INFO(loaded.ToString());
    REQUIRE(loaded.ok());
    stream.Init();
  }
  se::Status Launch(const se::KernelArgs& args) {
    return stream.ThenLaunch(se::ThreadDim(kThreads), kBlocks, kernel, args).BlockHostUntilDone();
  }
};

}  // namespace

TEST_CASE("an untyped kernel knows the device code's parameters", "[kernel][untyped]") {
  Fixture f;
  CHECK(f.kernel.IsLoaded());
  CHECK(f.kernel.name() == "saxpy");
  REQUIRE(f.kernel.params().size() == 4);
  CHECK(f.kernel.params()[0].takes_scalar);
  CHECK_FALSE(f.kernel.params()[0].takes_memory);
  CHECK(f.kernel.params()[0].size == 4);
  CHECK(f.kernel.params()[1].takes_memory);
  CHECK(f.kernel.params()[2].takes_memory);
  CHECK(f.kernel.params()[3].size == 4);
}

TEST_CASE("a launch typed at run time runs the kernel", "[kernel][untyped][kernel-results]") {
  Fixture f;
  std::vector<float> host(kN);
  std::iota(host.begin(), host.end(), 0.0f);
  std::vector<float> ones(kN, 1.0f);
  REQUIRE(
      f.stream.ThenMemcpyH2D<float>(host, f.x.ptr()).ThenMemcpyH2D<float>(ones, f.y.ptr()).BlockHostUntilDone().ok());
  se::KernelArgsArray<4> args;
  args.Add(2.0f).Add(f.x.ptr()).Add(f.y.ptr()).Add(kN);
  REQUIRE(f.Launch(args).ok());
  args.Clear();
  args.Add(10.0f).Add(f.x.ptr()).Add(f.y.ptr()).Add(kN);
  REQUIRE(f.Launch(args).ok());  // y = 12x + 1
  REQUIRE(f.executor->SynchronousMemcpyD2H<float>(f.y.cref(), host).ok());
  for (std::uint32_t i : {0u, 1u, 500u, kN - 1}) CHECK(host[i] == 12.0f * static_cast<float>(i) + 1.0f);
}

TEST_CASE("run-time typed shared memory and interleaved typed launches", "[kernel][untyped][kernel-results]") {
  auto* executor = TestExecutor();
  se::UntypedKernel untyped(executor);
  tk::ReverseKernel typed(executor);
  REQUIRE(executor->GetUntypedKernel(tk::ReverseSpec(), &untyped).ok());
  REQUIRE(executor->GetKernel(tk::ReverseSpec(), &typed).ok());
  constexpr std::uint32_t width = 10, blocks = 4;
  std::vector<int> data(width * blocks);
  std::iota(data.begin(), data.end(), 0);
  auto device = executor->AllocateOwnedArray<int>(data.size());
  auto other = executor->AllocateOwnedArray<int>(data.size());
  se::KernelArgsArray<3> args;
  args.Add(device.ptr()).Add(se::SharedDeviceMemory<int>(width)).Add(width);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(data, device.ptr())
              .ThenMemcpyH2D<int>(data, other.ptr())
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(blocks), untyped, args)
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(blocks), typed, other.ptr(),
                          se::SharedDeviceMemory<int>(width), width)
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(blocks), untyped, args)  // reversed back
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(blocks), untyped, args)
              .ThenMemcpyD2H<int>(device.cref(), data)
              .BlockHostUntilDone()
              .ok());
  CHECK(data[0] == 9);
  CHECK(data[9] == 0);
  CHECK(data[10] == 19);
  std::vector<int> reversed(width * blocks);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(other.cref(), reversed).ok());
  CHECK(reversed == data);
}

TEST_CASE("run-time arguments are checked against the kernel's parameters", "[kernel][untyped][errors]") {
  Fixture f;
  se::KernelArgsArray<8> args;

  SECTION("a missing argument") {
    args.Add(2.0f).Add(f.x.ptr()).Add(f.y.ptr());
    const se::Status status = f.Launch(args);
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "kernel 'saxpy'"));
    CHECK(Mentions(status, "takes 4 parameter(s)"));
    CHECK(Mentions(status, "3 argument(s) were given"));
  }
  SECTION("an argument too many") {
    args.Add(2.0f).Add(f.x.ptr()).Add(f.y.ptr()).Add(kN).Add(kN);
    const se::Status status = f.Launch(args);
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "5 argument(s) were given"));
  }
  SECTION("a scalar of the wrong size") {
    args.Add(2.0).Add(f.x.ptr()).Add(f.y.ptr()).Add(kN);
    const se::Status status = f.Launch(args);
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "argument 0 is double"));
    CHECK(Mentions(status, "parameter 0 is"));
    CHECK(Mentions(status, "8 bytes given, the kernel's parameter is 4 bytes"));
  }
  SECTION("memory where the kernel takes a scalar") {
    args.Add(f.x.ptr()).Add(f.x.ptr()).Add(f.y.ptr()).Add(kN);
    const se::Status status = f.Launch(args);
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "argument 0 is streamexecutor::DeviceMemory<float>*"));
    CHECK(Mentions(status, "device memory was given, the kernel takes a scalar"));
  }
  SECTION("a scalar where the kernel takes memory") {
    args.Add(2.0f).Add(2.0f).Add(f.y.ptr()).Add(kN);
    const se::Status status = f.Launch(args);
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "argument 1 is float (a scalar) but the kernel's parameter 1 is"));
  }
  SECTION("memory of the wrong element size") {
    auto doubles = f.executor->AllocateOwnedArray<double>(kN);
    args.Add(2.0f).Add(doubles.ptr()).Add(f.y.ptr()).Add(kN);
    const se::Status status = f.Launch(args);
    if (f.kernel.params()[1].element_size == 0) {
      CHECK(status.ok());  // the kernel's code has no element types to compare (extern "C" PTX)
    } else {
      CHECK(status.code() == se::ErrorCode::kInvalidArgument);
      CHECK(Mentions(status, "the elements are 8 bytes, the kernel's are 4"));
    }
  }
  SECTION("freed memory") {
    se::DeviceMemory<float> freed = f.executor->AllocateArray<float>(kN);
    se::DeviceMemory<float> stale = freed;  // Deallocate nulls the view it is given, not its copies
    REQUIRE(f.executor->Deallocate(&freed).ok());
    args.Add(2.0f).Add(f.x.ptr()).Add(&stale).Add(kN);
    const se::Status status = f.Launch(args);
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "argument 2 is not live memory"));
  }
  SECTION("more arguments than the array holds") {
    se::KernelArgsArray<2> small;
    small.Add(2.0f).Add(f.x.ptr()).Add(f.y.ptr());
    const se::Status status = f.Launch(small);
    CHECK(status.code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(status, "argument 2"));
    CHECK(Mentions(status, "holds 2 argument(s)"));
  }
  SECTION("a kernel that was never loaded") {
    se::UntypedKernel unloaded(f.executor);
    args.Add(2.0f).Add(f.x.ptr()).Add(f.y.ptr()).Add(kN);
    const se::Status status =
        f.stream.ThenLaunch(se::ThreadDim(kThreads), kBlocks, unloaded, args).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "not loaded"));
  }
}

TEST_CASE("GetUntypedKernel reports a spec without code for the backend", "[kernel][untyped][errors]") {
  auto* executor = TestExecutor();
  se::UntypedKernel kernel(executor);
  se::MultiKernelLoaderSpec empty(1);
  const se::Status status = executor->GetUntypedKernel(empty, &kernel);
  CHECK(status.code() == se::ErrorCode::kNotFound);
  CHECK_FALSE(kernel.IsLoaded());
  CHECK(executor->GetUntypedKernel(tk::SaxpySpec(), nullptr).code() == se::ErrorCode::kInvalidArgument);
}

TEST_CASE("KernelArgs takes a const view of memory", "[kernel][untyped][kernel-results]") {
  Fixture f;
  std::vector<float> host(kN);
  std::iota(host.begin(), host.end(), 0.0f);
  std::vector<float> ones(kN, 1.0f);
  REQUIRE(
      f.stream.ThenMemcpyH2D<float>(host, f.x.ptr()).ThenMemcpyH2D<float>(ones, f.y.ptr()).BlockHostUntilDone().ok());
  const se::ScopedDeviceMemory<float>& read_only = f.x;
  se::KernelArgsArray<4> args;
  args.Add(3.0f).Add(read_only.ptr()).Add(f.y.ptr()).Add(kN);
  REQUIRE(f.Launch(args).ok());
  REQUIRE(f.executor->SynchronousMemcpyD2H<float>(f.y.cref(), host).ok());
  for (std::uint32_t i : {0u, 1u, 500u, kN - 1}) CHECK(host[i] == 3.0f * static_cast<float>(i) + 1.0f);
  // Still checked for liveness at the launch.
  const se::DeviceMemoryBase stale = f.x.cref();
  REQUIRE(f.x.Reset().ok());
  args.Clear();
  args.Add(3.0f).Add(&stale).Add(f.y.ptr()).Add(kN);
  CHECK(f.Launch(args).code() == se::ErrorCode::kFailedPrecondition);
}
