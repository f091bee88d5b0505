// Synchronous operations come after the work already queued on the executor's
// streams (issue 24): a launch followed directly by SynchronousMemcpyD2H reads
// the launch's results, as with cudaMemcpy. Streams held busy by a host
// callback that another thread releases make the cases deterministic: the
// synchronous call must not return before the release, and must see the
// held work's results.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "generic/gate.hpp"
#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace tk = test_kernels;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kCount = 256;

using test_gate::Gate;

std::vector<int> Iota(int first) {
  std::vector<int> values(kCount);
  std::iota(values.begin(), values.end(), first);
  return values;
}

}  // namespace

TEST_CASE("every synchronous operation comes after the work queued on the executor's streams",
          "[sync-order][async-callbacks]") {
  auto* executor = TestExecutor();
  auto a = executor->AllocateOwnedArray<int>(kCount);
  auto b = executor->AllocateOwnedArray<int>(kCount);
  const std::vector<int> queued = Iota(1);  // what the held stream writes into `a`
  const std::vector<int> other = Iota(1000);
  std::vector<int> out(kCount, -1);
  struct Case {
    const char* name;
    std::function<se::Status()> run;
    std::function<std::vector<int>()> result;  // read once everything ran
    std::vector<int> expected;
  };
  auto read = [&](const se::ScopedDeviceMemory<int>& memory) {
    std::vector<int> values(kCount, -1);
    REQUIRE(executor->SynchronousMemcpyD2H<int>(memory.cref(), values).ok());
    return values;
  };
  const std::vector<Case> cases = {
      {"SynchronousMemcpyD2H", [&] { return executor->SynchronousMemcpyD2H<int>(a.cref(), out); }, [&] { return out; },
       queued},
      {"SynchronousMemcpyH2D", [&] { return executor->SynchronousMemcpyH2D<int>(other, a.ptr()); },
       [&] { return read(a); }, other},
      {"SynchronousMemcpyD2D", [&] { return executor->SynchronousMemcpyD2D<int>(a.cref(), b.ptr()); },
       [&] { return read(b); }, queued},
      {"SynchronousMemZero", [&] { return executor->SynchronousMemZero(a.ptr(), a.cref().size()); },
       [&] { return read(a); }, std::vector<int>(kCount, 0)},
      {"SynchronousMemset32", [&] { return executor->SynchronousMemset32(a.ptr(), 77, a.cref().size()); },
       [&] { return read(a); }, std::vector<int>(kCount, 77)},
      {"SynchronizeAllActivity", [&] { return executor->SynchronizeAllActivity(); }, [&] { return read(a); }, queued},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    REQUIRE(executor->SynchronousMemZero(a.ptr(), a.cref().size()).ok());
    REQUIRE(executor->SynchronousMemZero(b.ptr(), b.cref().size()).ok());
    se::Stream stream(executor);
    Gate gate;
    stream.Init();
    gate.Close(stream);
    stream.ThenMemcpyH2D<int>(queued, a.ptr());
    REQUIRE(stream.ok());
    gate.OpenLater(50ms);
    REQUIRE(c.run().ok());
    CHECK(gate.opened());  // it waited for the held stream
    CHECK(c.result() == c.expected);
    CHECK(stream.BlockHostUntilDone().ok());
  }
}

TEST_CASE("a launch followed directly by SynchronousMemcpyD2H reads all its results",
          "[sync-order][async-callbacks][kernel-results]") {
  auto* executor = TestExecutor();
  tk::AddKernel kernel(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
  auto data = executor->AllocateOwnedArray<int>(kCount);
  const std::vector<int> values = Iota(0);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(values, data.ptr()).ok());
  se::Stream stream(executor);
  Gate gate;
  stream.Init();
  gate.Close(stream);
  stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(kCount / 64), kernel, data.ptr(), 5);
  gate.OpenLater(50ms);
  std::vector<int> out(kCount, -1);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(data.cref(), out).ok());
  CHECK(gate.opened());
  CHECK(out == Iota(5));
  CHECK(stream.BlockHostUntilDone().ok());
}

TEST_CASE("another stream's error neither fails nor hangs a synchronous operation",
          "[sync-order][errors][async-callbacks]") {
  auto* executor = TestExecutor();
  auto a = executor->AllocateOwnedArray<int>(kCount);
  const std::vector<int> values = Iota(3);
  se::Stream failed(executor);
  Gate gate;
  failed.Init();
  gate.Close(failed);
  failed.ThenDoHostCallback([] { throw std::runtime_error("the other stream's failure"); });
  failed.ThenMemset32(a.ptr(), 9, a.cref().size());  // skipped: it comes after the failure
  gate.OpenLater(50ms);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(values, a.ptr()).ok());
  CHECK(gate.opened());
  CHECK(executor->SynchronizeAllActivity().ok());
  std::vector<int> out(kCount, -1);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(a.cref(), out).ok());
  CHECK(out == values);
  const se::Status status = failed.BlockHostUntilDone();
  CHECK(Mentions(status, "the other stream's failure"));
}

TEST_CASE("a synchronous operation inside a host callback does not wait for the callback's own stream",
          "[sync-order]") {
  // The callback runs after its stream's earlier work, and the stream's later
  // work waits for the callback: waiting for that stream would wait forever.
  auto* executor = TestExecutor();
  auto a = executor->AllocateOwnedArray<int>(kCount);
  const std::vector<int> values = Iota(7);
  std::vector<int> out(kCount, -1);
  se::Status copied, synchronized;
  se::Stream stream(executor);
  stream.Init()
      .ThenMemcpyH2D<int>(values, a.ptr())
      .ThenDoHostCallback([&] {
        copied = executor->SynchronousMemcpyD2H<int>(a.cref(), out);
        synchronized = executor->SynchronizeAllActivity();
      })
      .ThenMemset32(a.ptr(), 1, a.cref().size());
  const se::Status status = stream.BlockHostUntilDone();
  if constexpr (kCallbacksMayCallTheBackend) {
    REQUIRE(status.ok());
    CHECK(copied.ok());
    CHECK(synchronized.ok());
    CHECK(out == values);
  } else {
    // CUDA: a host function may not call the driver (docs/api.md).
    CHECK(copied.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(synchronized.code() == se::ErrorCode::kFailedPrecondition);
  }
}

TEST_CASE("a synchronous operation waits for what other threads enqueued before it was called", "[sync-order]") {
  // Producers enqueue continuously; each publishes how far it has enqueued,
  // and a callback behind each step says how far its stream has run. Every
  // synchronous call must find each stream at least as far as was published
  // before the call, and none may wait for the producers to stop.
  auto* executor = TestExecutor();
  constexpr int kProducers = 2;
  struct Producer {
    se::ScopedDeviceMemory<int> memory;
    std::atomic<int> enqueued{0};
    std::atomic<int> ran{0};
    std::thread thread;
  };
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<Producer>> producers;
  for (int p = 0; p < kProducers; ++p) {
    auto producer = std::make_unique<Producer>();
    producer->memory = executor->AllocateOwnedArray<int>(kCount);
    REQUIRE(producer->memory.ok());
    producers.push_back(std::move(producer));
  }
  for (auto& producer : producers) {
    producer->thread = std::thread([&, p = producer.get()] {
      se::Stream stream(executor);
      stream.Init();
      for (int step = 1; !stop.load() && stream.ok(); ++step) {
        stream.ThenMemset32(p->memory.ptr(), static_cast<std::uint32_t>(step), p->memory.cref().size())
            .ThenDoHostCallback([p, step] { p->ran.store(step); });
        p->enqueued.store(step);
        if (step % 64 == 0) stream.BlockHostUntilDone().IgnoreError();
      }
      stream.BlockHostUntilDone().IgnoreError();
    });
  }
  auto scratch = executor->AllocateOwnedArray<int>(kCount);
  int behind = 0, failed = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<int> published;
    for (auto& producer : producers) published.push_back(producer->enqueued.load());
    const se::Status status =
        i % 2 == 0 ? executor->SynchronousMemZero(scratch.ptr(), 4) : executor->SynchronizeAllActivity();
    failed += status.ok() ? 0 : 1;
    for (std::size_t p = 0; p < producers.size(); ++p) behind += producers[p]->ran.load() < published[p] ? 1 : 0;
  }
  stop = true;
  for (auto& producer : producers) producer->thread.join();
  CHECK(failed == 0);
  CHECK(behind == 0);
}

TEST_CASE("streams made and destroyed while synchronous operations run", "[sync-order][lifetime]") {
  // A stream unlinks itself from its executor before its handle goes, so a
  // synchronous operation on another thread never records on a dead stream.
  auto* executor = TestExecutor();
  auto a = executor->AllocateOwnedArray<int>(kCount);
  auto b = executor->AllocateOwnedArray<int>(kCount);
  std::atomic<bool> stop{false};
  std::atomic<int> stream_failures{0};
  std::vector<std::thread> makers;
  for (int t = 0; t < 2; ++t) {
    makers.emplace_back([&, t] {
      for (int i = 0; i < 100 && !stop.load(); ++i) {
        se::Stream stream(executor);
        stream.Init().ThenMemset32(t == 0 ? a.ptr() : b.ptr(), static_cast<std::uint32_t>(i), kCount * sizeof(int));
        if (!stream.ok()) stream_failures.fetch_add(1);
      }  // destroyed with its work queued
    });
  }
  auto scratch = executor->AllocateOwnedArray<int>(kCount);
  std::vector<int> out(kCount);
  int failed = 0;
  for (int i = 0; i < 200; ++i) {
    failed += executor->SynchronousMemcpyD2H<int>(scratch.cref(), out).ok() ? 0 : 1;
    failed += executor->SynchronizeAllActivity().ok() ? 0 : 1;
  }
  stop = true;
  for (std::thread& maker : makers) maker.join();
  CHECK(failed == 0);
  CHECK(stream_failures.load() == 0);
}
