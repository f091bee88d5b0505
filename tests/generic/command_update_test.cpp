// CommandBuffer updates, clones and nesting: new arguments, memory and values
// for a recorded launch, copy or fill, before and after Finalize, without
// recording again; copies of a buffer; a buffer recorded into another; the
// checks each makes and what it refuses.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
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

TEST_CASE("a clone runs what the original recorded and is updated on its own", "[command-update][clone]") {
  auto* executor = TestExecutor();
  constexpr std::size_t n = 8;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  auto b = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> out(n);
  std::atomic<int> callbacks{0};
  se::CommandBuffer original(executor);
  original.Init().ThenMemset32(a.ptr(), 1u, n * 4);
  const se::CommandId fill = original.LastCommand();
  original.ThenDoHostCallback([&] { callbacks.fetch_add(1); }).ThenMemcpyD2H<std::uint32_t>(a.cref(), out);
  REQUIRE(original.Finalize().ok());

  std::unique_ptr<se::CommandBuffer<TestBackend>> clone = original.Clone();
  REQUIRE(clone->ok());
  CHECK_FALSE(clone->finalized());
  CHECK(clone->size() == original.size());
  // The clone is updated alone, and may record more.
  REQUIRE(clone->UpdateMemset32(clone->Command(fill.index()), a.ptr(), 2u, n * 4).ok());
  clone->ThenMemset32(b.ptr(), 3u, n * 4);
  CHECK_FALSE(clone->UpdateMemset32(fill, a.ptr(), 2u, n * 4).ok());  // the original's CommandId

  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&original).BlockHostUntilDone().ok());
  CHECK(out == std::vector<std::uint32_t>(n, 1u));
  REQUIRE(stream.ThenSubmit(clone.get()).BlockHostUntilDone().ok());
  CHECK(out == std::vector<std::uint32_t>(n, 2u));
  std::vector<std::uint32_t> b_out(n);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(b.cref(), b_out).ok());
  CHECK(b_out == std::vector<std::uint32_t>(n, 3u));
  CHECK(callbacks.load() == 2);  // the callable is shared: one run per submission of either

  // The clone outlives the original, and a clone of a clone works too.
  std::unique_ptr<se::CommandBuffer<TestBackend>> second;
  {
    se::CommandBuffer scoped(executor);
    scoped.Init().ThenDoHostCallback([&] { callbacks.fetch_add(10); });
    second = scoped.Clone();
  }
  std::unique_ptr<se::CommandBuffer<TestBackend>> third = second->Clone();
  REQUIRE(stream.ThenSubmit(second.get()).ThenSubmit(third.get()).BlockHostUntilDone().ok());
  CHECK(callbacks.load() == 22);
}

TEST_CASE("a clone of a buffer that cannot be used says why", "[command-update][clone][errors]") {
  auto* executor = TestExecutor();
  se::CommandBuffer uninitialized(executor);
  std::unique_ptr<se::CommandBuffer<TestBackend>> clone = uninitialized.Clone();
  CHECK(clone->status().code() == se::ErrorCode::kFailedPrecondition);
  se::CommandBuffer failed(executor);
  failed.Init().ThenMemZero(nullptr, 4);
  clone = failed.Clone();
  CHECK(Mentions(clone->status(), "failed while recording"));
  se::Stream stream(executor);
  stream.Init().ThenSubmit(clone.get());
  CHECK_FALSE(stream.ok());
}

TEST_CASE("a nested buffer runs where it was recorded, as it was then", "[command-update][nested]") {
  auto* executor = TestExecutor();
  constexpr std::size_t n = 8;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> before(n), after(n);
  std::atomic<int> callbacks{0};
  se::CommandBuffer child(executor);
  child.Init().ThenMemset32(a.ptr(), 4u, n * 4).ThenDoHostCallback([&] { callbacks.fetch_add(1); });
  const se::CommandId child_fill = child.LastCommand();  // the callback; the fill is operation 0
  se::CommandBuffer parent(executor);
  parent.Init().ThenMemset32(a.ptr(), 1u, n * 4).ThenMemcpyD2H<std::uint32_t>(a.cref(), before);
  parent.ThenSubmit(&child);
  const se::CommandId nested = parent.LastCommand();
  parent.ThenMemcpyD2H<std::uint32_t>(a.cref(), after);
  REQUIRE(parent.ok());
  CHECK(parent.size() == 4);  // the nested buffer is one operation
  // Updating the child afterwards does not reach the parent.
  REQUIRE(child.UpdateMemset32(child.Command(0), a.ptr(), 9u, n * 4).ok());
  CHECK(child_fill.index() == 1);
  // A nested operation cannot be updated in the parent.
  CHECK(parent.UpdateMemset32(nested, a.ptr(), 1u, n * 4).code() == se::ErrorCode::kInvalidArgument);

  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&parent).ThenSubmit(&parent).BlockHostUntilDone().ok());
  CHECK(before == std::vector<std::uint32_t>(n, 1u));
  CHECK(after == std::vector<std::uint32_t>(n, 4u));
  CHECK(callbacks.load() == 2);
  REQUIRE(stream.ThenSubmit(&child).ThenMemcpyD2H<std::uint32_t>(a.cref(), after).BlockHostUntilDone().ok());
  CHECK(after == std::vector<std::uint32_t>(n, 9u));
}

TEST_CASE("nesting refuses itself, other executors' buffers and failed buffers; freed memory is caught",
          "[command-update][nested][errors]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(4);
  SECTION("itself") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenSubmit(&buffer);
    CHECK(Mentions(buffer.status(), "cannot hold itself"));
  }
  SECTION("a failed child") {
    se::CommandBuffer child(executor);
    child.Init().ThenMemZero(nullptr, 4);
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenSubmit(&child);
    CHECK(Mentions(buffer.status(), "the nested command buffer failed"));
  }
  SECTION("an uninitialized child, a null one") {
    se::CommandBuffer child(executor);
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenSubmit(&child);
    CHECK(buffer.status().code() == se::ErrorCode::kFailedPrecondition);
    se::CommandBuffer other(executor);
    other.Init().ThenSubmit(static_cast<se::CommandBuffer<TestBackend>*>(nullptr));
    CHECK(other.status().code() == se::ErrorCode::kInvalidArgument);
  }
  SECTION("memory of the child freed before the parent's submission") {
    se::DeviceMemory<int> freed = executor->AllocateArray<int>(4);
    se::CommandBuffer child(executor);
    child.Init().ThenMemZero(&freed, 16);
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemZero(memory.ptr(), 16).ThenSubmit(&child);
    REQUIRE(buffer.ok());
    REQUIRE(executor->Deallocate(&freed).ok());
    se::Stream stream(executor);
    const se::Status status = stream.Init().ThenSubmit(&buffer).BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "operation 1 (CommandBuffer::ThenSubmit)"));
  }
  SECTION("another executor's buffer") {
    auto* second = SecondExecutor();
    if (second == nullptr) {
      WARN("one device: the cross-executor case runs with two");
      return;
    }
    se::CommandBuffer child(second);
    child.Init();
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenSubmit(&child);
    CHECK(Mentions(buffer.status(), "was recorded for"));
  }
}

TEST_CASE("a capturing stream nests a submitted buffer", "[command-update][nested][capture]") {
  auto* executor = TestExecutor();
  constexpr std::size_t n = 4;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> out(n);
  se::CommandBuffer child(executor);
  child.Init().ThenMemset32(a.ptr(), 6u, n * 4);
  se::CommandBuffer captured(executor);
  captured.Init();
  se::Stream stream(executor);
  stream.Init();
  REQUIRE(stream.BeginCapture(&captured).ok());
  stream.ThenSubmit(&child).ThenMemcpyD2H<std::uint32_t>(a.cref(), out);
  REQUIRE(stream.EndCapture(&captured).ok());
  CHECK(captured.size() == 2);
  CHECK(out == std::vector<std::uint32_t>(n, 0u));  // nothing ran yet
  REQUIRE(stream.ThenSubmit(&captured).BlockHostUntilDone().ok());
  CHECK(out == std::vector<std::uint32_t>(n, 6u));
}

TEST_CASE("operations with named dependencies run after them, and the rest in stream order",
          "[command-update][dependencies]") {
  auto* executor = TestExecutor();
  constexpr std::size_t n = 8;
  auto a = executor->AllocateOwnedArray<std::uint32_t>(n);
  auto b = executor->AllocateOwnedArray<std::uint32_t>(n);
  auto c = executor->AllocateOwnedArray<std::uint32_t>(n);
  std::vector<std::uint32_t> out_a(n), out_b(n), out_c(n);
  se::CommandBuffer buffer(executor);
  // Two independent branches (fill a, fill b), then a copy that needs only
  // the first, then a read-back of everything in stream order.
  buffer.Init().After({}).ThenMemset32(a.ptr(), 1u, n * 4);
  const se::CommandId fill_a = buffer.LastCommand();
  buffer.After({}).ThenMemset32(b.ptr(), 2u, n * 4);
  const se::CommandId fill_b = buffer.LastCommand();
  buffer.After({fill_a}).ThenMemcpyD2D(c.ptr(), a.cref());
  const se::CommandId copy = buffer.LastCommand();
  buffer.After({copy, fill_b, copy})
      .ThenMemcpyD2H<std::uint32_t>(c.cref(), out_c)
      .ThenMemcpyD2H<std::uint32_t>(a.cref(), out_a)
      .ThenMemcpyD2H<std::uint32_t>(b.cref(), out_b);
  REQUIRE(buffer.ok());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(out_a == std::vector<std::uint32_t>(n, 1u));
  CHECK(out_b == std::vector<std::uint32_t>(n, 2u));
  CHECK(out_c == std::vector<std::uint32_t>(n, 1u));
  // A clone keeps the graph's shape and its leaves.
  auto clone = buffer.Clone();
  clone->ThenMemZero(c.ptr(), n * 4).ThenMemcpyD2H<std::uint32_t>(c.cref(), out_c);
  REQUIRE(stream.ThenSubmit(clone.get()).BlockHostUntilDone().ok());
  CHECK(out_c == std::vector<std::uint32_t>(n, 0u));
}

TEST_CASE("After refuses operations of other buffers and ones not recorded yet",
          "[command-update][dependencies][errors]") {
  auto* executor = TestExecutor();
  auto memory = executor->AllocateOwnedArray<int>(4);
  se::CommandBuffer other(executor);
  other.Init().ThenMemZero(memory.ptr(), 16);
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemZero(memory.ptr(), 16).After({other.LastCommand()});
  CHECK(buffer.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(buffer.status(), "does not name an operation recorded in this command buffer"));
  se::CommandBuffer finalized(executor);
  finalized.Init().ThenMemZero(memory.ptr(), 16);
  REQUIRE(finalized.Finalize().ok());
  finalized.After({});
  CHECK(finalized.status().code() == se::ErrorCode::kFailedPrecondition);
}
