// Zero copy: pinned or registered host memory as DeviceMemory through
// executor->HostMemoryDeviceView. Kernels write it and the host reads the
// pinned memory itself after BlockHostUntilDone (and the reverse); copies and
// fills take the view; a view of released memory is refused like freed
// memory, and the executor's other calls refuse it with messages that say
// how it goes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

TEST_CASE("a kernel writes pinned memory through its device view, the host reads it directly",
          "[zero-copy][kernel-results]") {
  STATIC_REQUIRE(se::ZeroCopyBackend<TestBackend>);
  auto* executor = TestExecutor();
  tk::AddKernel add(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &add).ok());
  // Two ranges of 4 KiB, so that the slice below starts where a sub-buffer may
  // (CL_DEVICE_MEM_BASE_ADDR_ALIGN is at most 4 KiB on the devices we know).
  se::PinnedHostMemory<int> pinned = executor->HostAllocate<int>(2048);
  REQUIRE(pinned.ok());
  std::iota(pinned.span().begin(), pinned.span().end(), 0);

  se::StatusOr<se::DeviceMemory<int>> whole = executor->HostMemoryDeviceView(pinned);
  REQUIRE(whole.ok());
  CHECK(whole.value().ElementCount() == 2048);
  se::StatusOr<se::DeviceMemory<int>> upper = executor->HostMemoryDeviceView(pinned.data() + 1024, 1024);
  REQUIRE(upper.ok());
  CHECK(upper.value().allocation_id() == whole.value().allocation_id());  // one record per pinned range

  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(256), se::BlockDim(8), add, &whole.value(), 1000)
              .ThenLaunch(se::ThreadDim(256), se::BlockDim(4), add, &upper.value(), 1)
              .BlockHostUntilDone()
              .ok());
  CHECK(pinned[0] == 1000);
  CHECK(pinned[1023] == 1023 + 1000);
  CHECK(pinned[1024] == 1024 + 1001);
  CHECK(pinned[2047] == 2047 + 1001);
}

TEST_CASE("kernels read host-written registered and pinned memory through views", "[zero-copy][kernel-results]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel saxpy(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &saxpy).ok());
  constexpr std::uint32_t n = 1024;
  std::vector<float> x(n);  // the caller's memory, registered
  REQUIRE(executor->HostMemoryRegister(x.data(), n * sizeof(float)).ok());
  se::PinnedHostMemory<float> y = executor->HostAllocate<float>(n);
  REQUIRE(y.ok());
  se::DeviceMemory<float> x_view = executor->HostMemoryDeviceView(x.data(), n).value();
  se::DeviceMemory<float> y_view = executor->HostMemoryDeviceView(y).value();

  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());
  for (int round = 1; round <= 2; ++round) {
    // The host writes between rounds, once the stream is idle: the next
    // launch must see these bytes, not a copy taken earlier.
    for (std::uint32_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i * round);
      y[i] = 1.0f;
    }
    REQUIRE(stream.ThenLaunch(se::ThreadDim(128), se::BlockDim(n / 128), saxpy, 2.0f, &x_view, &y_view, n)
                .BlockHostUntilDone()
                .ok());
    CHECK(y[0] == 1.0f);
    CHECK(y[5] == 2.0f * 5 * round + 1.0f);
    CHECK(y[n - 1] == 2.0f * (n - 1) * round + 1.0f);
  }
  REQUIRE(executor->HostMemoryUnregister(x.data()).ok());
}

TEST_CASE("copies and fills take a device view of pinned memory", "[zero-copy]") {
  auto* executor = TestExecutor();
  se::PinnedHostMemory<std::uint32_t> pinned = executor->HostAllocate<std::uint32_t>(64);
  REQUIRE(pinned.ok());
  se::DeviceMemory<std::uint32_t> view = executor->HostMemoryDeviceView(pinned).value();
  auto device = executor->AllocateOwnedArray<std::uint32_t>(64);
  std::vector<std::uint32_t> source(64);
  std::iota(source.begin(), source.end(), 7u);
  std::vector<std::uint32_t> back(64);

  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<std::uint32_t>(source, &view)  // into the pinned memory
              .ThenMemcpyD2D(device.ptr(), view, 64 * sizeof(std::uint32_t))
              .ThenMemset32(&view, 0xabcdu, 8 * sizeof(std::uint32_t))
              .BlockHostUntilDone()
              .ok());
  CHECK(pinned[0] == 0xabcdu);
  CHECK(pinned[7] == 0xabcdu);
  CHECK(pinned[8] == 15u);
  CHECK(pinned[63] == 70u);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(device.cref(), back).ok());
  CHECK(back[0] == 7u);
  REQUIRE(executor->SynchronousMemZero(&view, 4).ok());
  CHECK(pinned[0] == 0u);
  CHECK(se::NativeMemory(*executor, view).ok());
}

TEST_CASE("HostMemoryDeviceView refuses memory that is not pinned, empty and oversized requests",
          "[zero-copy][errors]") {
  auto* executor = TestExecutor();
  std::vector<int> plain(64);
  se::StatusOr<se::DeviceMemory<int>> unpinned = executor->HostMemoryDeviceView(plain.data(), 64);
  CHECK(unpinned.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(unpinned.status(), "is not pinned host memory of this executor"));
  CHECK(Mentions(unpinned.status(), "HostMemoryAllocate"));
  CHECK(Mentions(unpinned.status(), "HostMemoryRegister"));
  CHECK(executor->HostMemoryDeviceView(static_cast<int*>(nullptr), 4).status().code() ==
        se::ErrorCode::kInvalidArgument);

  se::PinnedHostMemory<int> pinned = executor->HostAllocate<int>(64);
  REQUIRE(pinned.ok());
  se::StatusOr<se::DeviceMemory<int>> empty = executor->HostMemoryDeviceView(pinned.data(), 0);
  CHECK(empty.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(empty.status(), "zero elements"));
  CHECK(Mentions(executor->HostMemoryDeviceView(pinned.data(), ~std::uint64_t{0}).status(), "overflow"));
  se::StatusOr<se::DeviceMemory<int>> past = executor->HostMemoryDeviceView(pinned.data() + 60, 5);
  CHECK(past.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(past.status(), "20 bytes from"));
  CHECK(Mentions(past.status(), "run past the pinned range of 256 bytes"));
  CHECK(executor->HostMemoryDeviceView(pinned.data() + 60, 4).ok());

  se::PinnedHostMemory<int> moved = std::move(pinned);
  se::StatusOr<se::DeviceMemory<int>> from_moved = executor->HostMemoryDeviceView(pinned);
  CHECK(from_moved.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(from_moved.status(), "holds no memory (PinnedHostMemory was moved from)"));
  CHECK(executor->HostMemoryDeviceView(moved).ok());
}

TEST_CASE("a device view goes with its pinned memory: Deallocate refuses it, release retires it",
          "[zero-copy][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel add(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &add).ok());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());

  se::PinnedHostMemory<int> pinned = executor->HostAllocate<int>(256);
  REQUIRE(pinned.ok());
  se::DeviceMemory<int> view = executor->HostMemoryDeviceView(pinned).value();
  se::DeviceMemory<int> copy = view;
  se::Status freed = executor->Deallocate(&copy);
  CHECK(freed.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(freed, "device view of pinned host memory (HostMemoryDeviceView)"));
  CHECK(Mentions(freed, "released by HostMemoryDeallocate, HostMemoryUnregister or PinnedHostMemory::Reset"));
  se::Status forgotten = executor->ForgetDeviceMemory(&copy);
  CHECK(forgotten.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(forgotten, "device view of pinned host memory"));
  REQUIRE(stream.ThenLaunch(se::ThreadDim(256), se::BlockDim(1), add, &view, 1).BlockHostUntilDone().ok());

  REQUIRE(pinned.Reset().ok());
  auto expect_stale = [&](const se::DeviceMemory<int>& stale) {
    se::Stream use(executor);
    se::Status launch = use.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), add, &stale, 1).BlockHostUntilDone();
    CHECK(launch.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(launch, "argument 0 is not live memory of this executor"));
    std::vector<int> host(4);
    se::Status read = executor->SynchronousMemcpyD2H(stale, 16, host.data());
    CHECK(read.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(read, "not live memory of this executor"));
    se::DeviceMemory<int> again = stale;
    CHECK(Mentions(executor->Deallocate(&again), "or was already freed"));
  };
  expect_stale(view);

  // Registered memory: unregistering retires the view; registering the same
  // memory again makes a new view, and the old one stays refused.
  std::vector<int> mine(256);
  REQUIRE(executor->HostMemoryRegister(mine.data(), 256 * sizeof(int)).ok());
  se::DeviceMemory<int> first = executor->HostMemoryDeviceView(mine.data(), 256).value();
  REQUIRE(executor->HostMemoryUnregister(mine.data()).ok());
  expect_stale(first);
  REQUIRE(executor->HostMemoryRegister(mine.data(), 256 * sizeof(int)).ok());
  se::DeviceMemory<int> second = executor->HostMemoryDeviceView(mine.data(), 256).value();
  CHECK(second.allocation_id() != first.allocation_id());
  expect_stale(first);
  REQUIRE(stream.ThenLaunch(se::ThreadDim(256), se::BlockDim(1), add, &second, 1).BlockHostUntilDone().ok());
  REQUIRE(executor->HostMemoryUnregister(mine.data()).ok());

  // The seed's raw pair likewise.
  void* raw = executor->HostMemoryAllocate(64);
  REQUIRE(raw != nullptr);
  se::DeviceMemory<int> raw_view = executor->HostMemoryDeviceView(static_cast<int*>(raw), 16).value();
  REQUIRE(executor->HostMemoryDeallocate(raw).ok());
  expect_stale(raw_view);
}
