// Zero copy and peer access on CUDA, against the counting driver double with
// two devices (SE_COUNTING_DOUBLE_DEVICES=2, set by tests/cuda/meson.build).
// The double runs no kernel, so what is checked is what the driver receives:
// the flags pinned memory is allocated and registered with (DEVICEMAP), the
// CUdeviceptr cuMemHostGetDevicePointer handed out as the kernel's parameter
// (the double maps pinned memory away from its host address, so passing the
// host pointer would show), and for peers the cuCtxEnablePeerAccess the
// executor makes and the peer's own address in the launch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

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

.visible .entry fill(.param .u64 fill_param_0, .param .u32 fill_param_1)
{ ret; }

.visible .entry reverse(.param .u64 reverse_param_0, .param .u32 reverse_param_1)
{ ret; }
)";
using FillKernel = se::TypedKernel<se::DeviceMemory<int>*, std::uint32_t>;

void Load(se::StreamExecutor<se::cuda>* executor, FillKernel& kernel) {
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaPtxInMemory(kPtx, "fill");
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
}

// The first parameter of the latest launch, as the kernel receives it.
CUdeviceptr LaunchedAddress() {
  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CUdeviceptr passed = 0;
  std::memcpy(&passed, launch.param_bytes[0], sizeof(passed));
  return passed;
}

// What the driver maps `host` at, asked as another library would.
CUdeviceptr DevicePointerOf(se::StreamExecutor<se::cuda>* executor, void* host) {
  const se::cuda_detail::DriverApi& api = *executor->native_state().api;
  REQUIRE(api.cuCtxSetCurrent(se::NativeContext(*executor)) == CUDA_SUCCESS);
  CUdeviceptr device = 0;
  REQUIRE(api.cuMemHostGetDevicePointer(&device, host, 0) == CUDA_SUCCESS);
  return device;
}

}  // namespace

TEST_CASE("the double has two devices", "[cuda]") {
  REQUIRE(Double().loaded());
  REQUIRE(se::Platform<se::cuda>::Get().VisibleDeviceCount() == 2);
  CHECK(Executor(0)->native_state().context != Executor(1)->native_state().context);
}

TEST_CASE("pinned memory is allocated and registered mapped, and kernels get its device pointer", "[cuda][zero-copy]") {
  auto* executor = Executor(0);
  FillKernel kernel(executor);
  Load(executor, kernel);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());

  se::PinnedHostMemory<int> pinned = executor->HostAllocate<int>(64);
  REQUIRE(pinned.ok());
  CHECK(Double().host_flags(pinned.data()) == (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
  std::fill(pinned.span().begin(), pinned.span().end(), -1);
  const long maps = Calls("cuMemHostGetDevicePointer");
  se::DeviceMemory<int> view = executor->HostMemoryDeviceView(pinned.data() + 4, 8).value();
  se::DeviceMemory<int> again = executor->HostMemoryDeviceView(pinned).value();
  CHECK(Calls("cuMemHostGetDevicePointer") == maps + 1);  // once per pinned range
  const CUdeviceptr mapped = DevicePointerOf(executor, pinned.data());
  CHECK(mapped != reinterpret_cast<CUdeviceptr>(pinned.data()));  // the double maps it elsewhere
  CHECK(se::NativeMemory(*executor, view).value() == mapped + 4 * sizeof(int));

  const long launches = Calls("cuLaunchKernel");
  REQUIRE(stream.ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &view, 8u).BlockHostUntilDone().ok());
  CHECK(Calls("cuLaunchKernel") == launches + 1);
  CHECK(LaunchedAddress() == mapped + 4 * sizeof(int));
  REQUIRE(stream.ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &again, 8u).BlockHostUntilDone().ok());
  CHECK(LaunchedAddress() == mapped);

  // Copies through the view reach the pinned memory (at the mapped address).
  std::vector<int> values(8, 42);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(values, &view).ok());
  CHECK(pinned[4] == 42);
  CHECK(pinned[11] == 42);
  CHECK(pinned[12] == -1);

  // Released: the view is refused before the driver sees it.
  REQUIRE(pinned.Reset().ok());
  se::Status stale = stream.ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &view, 8u).BlockHostUntilDone();
  CHECK(stale.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Calls("cuLaunchKernel") == launches + 2);

  std::vector<int> mine(256);
  REQUIRE(executor->HostMemoryRegister(mine.data(), mine.size() * sizeof(int)).ok());
  CHECK(Double().host_flags(mine.data()) == (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
  se::DeviceMemory<int> registered = executor->HostMemoryDeviceView(mine.data() + 128, 128).value();
  se::Stream other(executor);
  REQUIRE(
      other.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &registered, 8u).BlockHostUntilDone().ok());
  CHECK(LaunchedAddress() == DevicePointerOf(executor, mine.data()) + 128 * sizeof(int));
  REQUIRE(executor->HostMemoryUnregister(mine.data()).ok());
}

TEST_CASE("a failed cuMemHostGetDevicePointer is a Status, and leaves nothing half made", "[cuda][zero-copy][errors]") {
  auto* executor = Executor(0);
  se::PinnedHostMemory<int> pinned = executor->HostAllocate<int>(16);
  REQUIRE(pinned.ok());
  Double().fail_next("cuMemHostGetDevicePointer", CUDA_ERROR_NOT_SUPPORTED);
  se::StatusOr<se::DeviceMemory<int>> refused = executor->HostMemoryDeviceView(pinned);
  REQUIRE_FALSE(refused.ok());
  CHECK(Mentions(refused.status(), "cuMemHostGetDevicePointer failed with CUDA_ERROR_NOT_SUPPORTED"));
  CHECK(Mentions(refused.status(), "for kernels on cuda:0"));
  se::StatusOr<se::DeviceMemory<int>> retried = executor->HostMemoryDeviceView(pinned);
  REQUIRE(retried.ok());
  FillKernel kernel(executor);
  Load(executor, kernel);
  se::Stream stream(executor);
  CHECK(stream.Init()
            .ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, &retried.value(), 4u)
            .BlockHostUntilDone()
            .ok());
}

TEST_CASE("a launch on cuda:0 with cuda:1's memory runs only after EnablePeerAccessTo, with the peer's address",
          "[cuda][peer]") {
  auto* first = Executor(0);
  auto* second = Executor(1);
  FillKernel kernel(first);
  Load(first, kernel);
  auto theirs = second->AllocateOwnedArray<int>(64);
  se::DeviceMemory<int> slice = theirs.ptr()->GetSlice(16, 16);
  se::Stream stream(first);
  REQUIRE(stream.Init().ok());

  CHECK(first->CanEnablePeerAccessTo(second));
  const long launches = Calls("cuLaunchKernel");
  se::Stream refused(first);
  se::Status before =
      refused.Init().ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, &slice, 16u).BlockHostUntilDone();
  CHECK(before.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(before,
                 "it is memory of cuda:1, another executor; kernels on cuda:0 take it once "
                 "EnablePeerAccessTo(cuda:1) succeeded"));
  CHECK(Calls("cuLaunchKernel") == launches);
  CHECK_FALSE(Double().peer_enabled(0, 1));

  // The driver's refusal is the executor's, and is not recorded as enabled.
  Double().fail_next("cuCtxEnablePeerAccess", CUDA_ERROR_TOO_MANY_PEERS);
  se::Status failed = first->EnablePeerAccessTo(second);
  CHECK(Mentions(failed, "cuCtxEnablePeerAccess failed with"));
  CHECK(Mentions(failed, "from cuda:0 to cuda:1"));
  Double().fail_next("cuDeviceCanAccessPeer", CUDA_ERROR_INVALID_DEVICE);
  se::Status cannot = first->EnablePeerAccessTo(second);
  CHECK(cannot.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(cannot, "cannot access memory of cuda:1"));
  CHECK(Mentions(cannot, "ThenCopyBetween"));

  const long enables = Calls("cuCtxEnablePeerAccess");
  REQUIRE(first->EnablePeerAccessTo(second).ok());
  REQUIRE(first->EnablePeerAccessTo(second).ok());
  CHECK(Calls("cuCtxEnablePeerAccess") == enables + 1);  // the second call finds it recorded
  CHECK(Double().peer_enabled(0, 1));
  CHECK_FALSE(Double().peer_enabled(1, 0));

  REQUIRE(stream.ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, &slice, 16u).BlockHostUntilDone().ok());
  CHECK(Calls("cuLaunchKernel") == launches + 1);
  CHECK(LaunchedAddress() == se::NativeMemory(*second, slice).value());

  // The other launch forms take the peer's memory too.
  se::PreparedLaunch prepared(kernel, se::ThreadDim(16), se::BlockDim(1), theirs.ptr(), 64u);
  REQUIRE(stream.ThenLaunch(prepared).BlockHostUntilDone().ok());
  CHECK(LaunchedAddress() == se::NativeMemory(*second, *theirs.ptr()).value());
  se::UntypedKernel untyped(first);
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaPtxInMemory(kPtx, "fill");
  REQUIRE(first->GetUntypedKernel(spec, &untyped).ok());
  se::KernelArgsArray<2> args;
  args.Add(&slice).Add(std::uint32_t{16});
  REQUIRE(stream.ThenLaunch(se::ThreadDim(16), se::BlockDim(1), untyped, args).BlockHostUntilDone().ok());
  CHECK(LaunchedAddress() == se::NativeMemory(*second, slice).value());
  // The checks after the memory's still run for a launch with peer memory.
  se::TypedKernel<se::DeviceMemory<int>*, se::SharedDeviceMemory<int>, std::uint32_t> reverse(first);
  se::MultiKernelLoaderSpec reverse_spec(3);
  reverse_spec.AddCudaPtxInMemory(kPtx, "reverse");
  REQUIRE(first->GetKernel(reverse_spec, &reverse).ok());
  se::Stream shared(first);
  se::Status too_much =
      shared.Init()
          .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), reverse, &slice, se::SharedDeviceMemory<int>(1 << 20), 16u)
          .BlockHostUntilDone();
  CHECK(too_much.code() == se::ErrorCode::kResourceExhausted);
  CHECK(Mentions(too_much, "bytes of shared memory requested"));
  se::KernelArgsArray<3> reverse_args;
  reverse_args.Add(&slice).Add(se::SharedDeviceMemory<int>(1 << 20)).Add(std::uint32_t{16});
  se::UntypedKernel untyped_reverse(first);
  REQUIRE(first->GetUntypedKernel(reverse_spec, &untyped_reverse).ok());
  se::Stream shared_untyped(first);
  CHECK(shared_untyped.Init()
            .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), untyped_reverse, reverse_args)
            .BlockHostUntilDone()
            .code() == se::ErrorCode::kResourceExhausted);
  se::CommandBuffer buffer(first);
  REQUIRE(buffer.Init().ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, &slice, 16u).Finalize().ok());
  CHECK(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());

  // ThenCopyBetween copies between the two as a peer copy.
  auto mine = first->AllocateOwnedArray<int>(64);
  std::vector<int> values(64, 3);
  REQUIRE(second->SynchronousMemcpyH2D<int>(values, theirs.ptr()).ok());
  se::Stream from(second);
  REQUIRE(from.Init().ok());
  const long peer_copies = Calls("cuMemcpyPeerAsync");
  se::StatusOr<se::CopyRoute> route = se::ThenCopyBetween(&from, theirs.cref(), &stream, mine.ptr());
  REQUIRE(route.ok());
  CHECK(route.value() == se::CopyRoute::kPeer);
  CHECK(Calls("cuMemcpyPeerAsync") == peer_copies + 1);
  REQUIRE(stream.BlockHostUntilDone().ok());
  std::vector<int> back(64);
  REQUIRE(first->SynchronousMemcpyD2H<int>(mine.cref(), back).ok());
  CHECK(back[63] == 3);

  // Freed on its own executor: refused, peer or not.
  se::DeviceMemory<int> stale = slice;
  REQUIRE(theirs.Reset().ok());
  const long before_stale = Calls("cuLaunchKernel");
  se::Status after_free =
      stream.ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, &stale, 16u).BlockHostUntilDone();
  CHECK(after_free.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Calls("cuLaunchKernel") == before_stale);
}
