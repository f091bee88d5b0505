// CommandBuffer updates: new arguments, memory and values for a recorded
// launch, copy or fill, before and after Finalize, without recording again;
// the checks an update makes and what it refuses.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace tk = test_kernels;

TEST_CASE("an updated launch runs with its new arguments from the next submission on",
          "[command-update][kernel-results]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  std::vector<int> zeros(4, 0), out_a(4), out_b(4);
  auto a = executor->AllocateOwnedArray<int>(4);
  auto b = executor->AllocateOwnedArray<int>(4);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(zeros, a.ptr()).ok());
  REQUIRE(executor->SynchronousMemcpyH2D<int>(zeros, b.ptr()).ok());

  se::CommandBuffer buffer(executor);
  buffer.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, a.ptr(), 1);
  const se::CommandId launch = buffer.LastCommand();
  REQUIRE(launch.valid());
  REQUIRE(buffer.Finalize().ok());
  se::Stream stream(executor);
  stream.Init().ThenSubmit(&buffer);  // a += 1
  REQUIRE(buffer.UpdateLaunch(launch, se::ThreadDim(4), se::BlockDim(1), kernel, b.ptr(), 10).ok());
  stream.ThenSubmit(&buffer).ThenSubmit(&buffer);  // b += 20
  REQUIRE(buffer.UpdateLaunch(launch, se::ThreadDim(2), se::BlockDim(1), kernel, a.ptr(), 100).ok());
  stream.ThenSubmit(&buffer);  // a[0..1] += 100
  REQUIRE(stream.ThenMemcpyD2H<int>(a.cref(), out_a).ThenMemcpyD2H<int>(b.cref(), out_b).BlockHostUntilDone().ok());
  CHECK(out_a == std::vector<int>{101, 101, 1, 1});
  CHECK(out_b == std::vector<int>{20, 20, 20, 20});
  CHECK(buffer.size() == 1);
}

TEST_CASE("updated copies and fills move the new memory, before and after Finalize", "[command-update]") {
  auto* executor = TestExecutor();
  constexpr std::size_t n = 16;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  auto b = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> first(n, 1), second(n, 2), out(n), other_out(n);

  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemset32(a.ptr(), 7u, n * 4);
  const se::CommandId fill = buffer.LastCommand();
  buffer.ThenMemcpyH2D<std::uint32_t>(first, b.ptr());
  const se::CommandId upload = buffer.LastCommand();
  buffer.ThenMemcpyD2H<std::uint32_t>(a.cref(), out);
  const se::CommandId download = buffer.LastCommand();
  REQUIRE(buffer.ok());
  // Before Finalize: the fill gets another pattern and the upload another source.
  REQUIRE(buffer.UpdateMemset32(fill, a.ptr(), 9u, n * 4).ok());
  REQUIRE(buffer.UpdateMemcpyH2D<std::uint32_t>(upload, second, b.ptr()).ok());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(out == std::vector<std::uint32_t>(n, 9u));
  std::vector<std::uint32_t> b_out(n);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(b.cref(), b_out).ok());
  CHECK(b_out == second);

  // After Finalize: the fill targets b, the download reads b into another host buffer.
  REQUIRE(buffer.UpdateMemset32(fill, b.ptr(), 5u, n * 4).ok());
  REQUIRE(buffer.UpdateMemcpyD2H<std::uint32_t>(download, b.cref(), other_out).ok());
  REQUIRE(buffer.UpdateMemcpy(upload, a.ptr(), first.data(), n * 4).ok());
  REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(other_out == std::vector<std::uint32_t>(n, 5u));  // b filled, then read back; the upload wrote a
  std::vector<std::uint32_t> a_out(n);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(a.cref(), a_out).ok());
  CHECK(a_out == first);
}

TEST_CASE("an update is checked like the recording call, and a refused one changes nothing",
          "[command-update][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel add(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &add).ok());
  tk::SaxpyKernel saxpy(executor);
  REQUIRE(executor->GetKernel(tk::SaxpySpec(), &saxpy).ok());
  auto memory = executor->AllocateOwnedArray<int>(4);
  auto floats = executor->AllocateOwnedArray<float>(4);
  std::vector<int> host(4, 3);

  se::CommandBuffer buffer(executor);
  buffer.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(1), add, memory.ptr(), 1);
  const se::CommandId launch = buffer.LastCommand();
  buffer.ThenMemZero(memory.ptr(), 16);
  const se::CommandId fill = buffer.LastCommand();
  buffer.ThenMemcpyH2D<int>(host, memory.ptr());
  const se::CommandId upload = buffer.LastCommand();
  REQUIRE(buffer.Finalize().ok());

  SECTION("another kernel") {
    const se::Status s =
        buffer.UpdateLaunch(launch, se::ThreadDim(4), se::BlockDim(1), saxpy, 1.0f, floats.ptr(), floats.ptr(), 4u);
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "keeps the recorded kernel"));
  }
  SECTION("another kind of operation") {
    const se::Status s = buffer.UpdateMemZero(launch, memory.ptr(), 16);
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "another kind of operation"));
    CHECK(buffer.UpdateMemset32(fill, memory.ptr(), 1u, 16).code() == se::ErrorCode::kInvalidArgument);
  }
  SECTION("a fill of another size, an empty copy") {
    const se::Status s = buffer.UpdateMemZero(fill, memory.ptr(), 8);
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "keeps a fill's size"));
    CHECK(Mentions(buffer.UpdateMemcpy(upload, memory.ptr(), host.data(), 0), "cannot make a copy empty"));
  }
  SECTION("a CommandId of another buffer, or none") {
    se::CommandBuffer other(executor);
    other.Init().ThenMemZero(memory.ptr(), 16);
    CHECK(Mentions(buffer.UpdateMemZero(other.LastCommand(), memory.ptr(), 16), "does not name an operation"));
    CHECK(Mentions(buffer.UpdateMemZero(se::CommandId(), memory.ptr(), 16), "does not name an operation"));
  }
  SECTION("grid over the device's limits, an argument out of range") {
    const std::uint64_t too_many = executor->GetDeviceDescription().max_threads_per_block + 1;
    CHECK_FALSE(buffer.UpdateLaunch(launch, se::ThreadDim(too_many), se::BlockDim(1), add, memory.ptr(), 1).ok());
    CHECK_FALSE(buffer.UpdateMemcpy(upload, memory.ptr(), host.data(), 1024).ok());  // beyond the allocation
  }
  SECTION("freed memory") {
    se::DeviceMemory<int> freed = executor->AllocateArray<int>(4);
    REQUIRE(executor->Deallocate(&freed).ok());
    const se::Status s = buffer.UpdateLaunch(launch, se::ThreadDim(4), se::BlockDim(1), add, &freed, 1);
    CHECK_FALSE(s.ok());
  }
  // Whatever was refused, the buffer still runs what it recorded.
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  std::vector<int> out(4);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(memory.cref(), out).ok());
  CHECK(out == host);
}

TEST_CASE("memory given in an update is checked at each submission", "[command-update][errors]") {
  auto* executor = TestExecutor();
  auto kept = executor->AllocateOwnedArray<std::uint32_t>(8);
  se::DeviceMemory<std::uint32_t> later = executor->AllocateArray<std::uint32_t>(8);
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemZero(kept.ptr(), 32);
  const se::CommandId fill = buffer.LastCommand();
  REQUIRE(buffer.UpdateMemZero(fill, &later, 32).ok());
  REQUIRE(executor->Deallocate(&later).ok());
  se::Stream stream(executor);
  const se::Status status = stream.Init().ThenSubmit(&buffer).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "operation 0 (UpdateMemZero)"));
  // Pointing it back at live memory makes the buffer usable again.
  REQUIRE(buffer.UpdateMemZero(fill, kept.ptr(), 32).ok());
  se::Stream fresh(executor);
  CHECK(fresh.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
}

TEST_CASE("a buffer that failed while recording refuses updates", "[command-update][errors]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(4);
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemZero(memory.ptr(), 16);
  const se::CommandId fill = buffer.LastCommand();
  buffer.ThenMemZero(nullptr, 16);
  REQUIRE_FALSE(buffer.ok());
  const se::Status s = buffer.UpdateMemZero(fill, memory.ptr(), 16);
  CHECK(s.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(s, "failed while recording"));
  se::CommandBuffer uninitialized(executor);
  CHECK(uninitialized.UpdateMemZero(fill, memory.ptr(), 16).code() == se::ErrorCode::kFailedPrecondition);
}
