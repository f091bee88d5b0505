// Stream priorities on the host backend: the order in which free workers take
// ready streams (host/thread_pool.hpp). Every worker is held in a kernel,
// work is queued on streams of each priority, and one worker is let go: it
// takes the queued streams one after another, in the order their priorities
// say, which the test reads back. Nothing here depends on timing.
//
// An executable of its own: the pool's spare workers (started for blocking
// host callbacks) would be free threads this test does not hold.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <streamexecutor/host.hpp>

namespace se = streamexecutor;

namespace {

constexpr int kMaxWorkers = 1024;
std::atomic<bool> g_release[kMaxWorkers];
std::atomic<int> g_started{0};
std::atomic<int> g_recorded{0};
int g_order[64];

// Holds the worker that runs it until the test releases `slot`.
void hold(const se::host::KernelContext&, int slot) {
  g_started.fetch_add(1);
  while (!g_release[slot].load()) std::this_thread::yield();
}
// Appends `tag` to the order in which work ran.
void record(const se::host::KernelContext&, int tag) { g_order[g_recorded.fetch_add(1)] = tag; }

using IntKernel = se::TypedKernel<int>;

bool WaitFor(const std::atomic<int>& counter, int value) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (counter.load() < value) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Every worker of the pool held in a `hold` kernel on a stream of its own;
// released, and the streams drained, when it goes (also when a check fails).
class HeldPool {
 public:
  explicit HeldPool(se::StreamExecutor<se::host>* executor) : workers_(executor->native_state().pool->size()) {
    REQUIRE(workers_ <= kMaxWorkers);
    se::MultiKernelLoaderSpec spec(1);
    spec.AddHostKernel<&hold>("hold");
    hold_ = std::make_unique<IntKernel>(executor);
    REQUIRE(executor->GetKernel(spec, hold_.get()).ok());
    g_started = 0;
    for (int i = 0; i < workers_; ++i) {
      g_release[i] = false;
      streams_.push_back(std::make_unique<se::Stream<se::host>>(executor));
      REQUIRE(streams_.back()->Init().ThenLaunch(se::ThreadDim(1), se::BlockDim(1), *hold_, i).ok());
    }
    REQUIRE(WaitFor(g_started, workers_));
  }
  ~HeldPool() {
    for (int i = 0; i < workers_; ++i) g_release[i] = true;
    for (auto& stream : streams_) CHECK(stream->BlockHostUntilDone().ok());
  }
  void ReleaseOne() { g_release[0] = true; }

 private:
  int workers_;
  std::unique_ptr<IntKernel> hold_;
  std::vector<std::unique_ptr<se::Stream<se::host>>> streams_;
};

IntKernel RecordKernel(se::StreamExecutor<se::host>* executor) {
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&record>("record");
  IntKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  return kernel;
}

}  // namespace

TEST_CASE("a free worker takes queued high-priority work first, low-priority work last", "[host][priority]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  IntKernel record_kernel = RecordKernel(executor);
  se::Stream low(executor), normal(executor), high(executor);
  REQUIRE(low.Init(se::StreamPriority::kLow).ok());
  REQUIRE(normal.Init(se::StreamPriority::kNormal).ok());
  REQUIRE(high.Init(se::StreamPriority::kHigh).ok());
  g_recorded = 0;
  {
    HeldPool held(executor);
    // Queued in the reverse of the order they should run in.
    REQUIRE(low.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 3).ok());
    REQUIRE(normal.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 2).ok());
    REQUIRE(high.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 1).ok());
    CHECK(g_recorded.load() == 0);  // every worker is held
    held.ReleaseOne();
    REQUIRE(WaitFor(g_recorded, 3));
  }
  CHECK(std::vector<int>(g_order, g_order + 3) == std::vector<int>{1, 2, 3});
  REQUIRE(low.BlockHostUntilDone().ok());
  REQUIRE(normal.BlockHostUntilDone().ok());
  REQUIRE(high.BlockHostUntilDone().ok());
}

TEST_CASE("streams of one priority are taken in the order they became ready", "[host][priority]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  IntKernel record_kernel = RecordKernel(executor);
  se::Stream low_a(executor), low_b(executor), high_a(executor), high_b(executor);
  for (auto* stream : {&low_a, &low_b}) REQUIRE(stream->Init(se::StreamPriority::kLow).ok());
  for (auto* stream : {&high_a, &high_b}) REQUIRE(stream->Init(se::StreamPriority::kHigh).ok());
  g_recorded = 0;
  {
    HeldPool held(executor);
    REQUIRE(low_a.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 30).ok());
    REQUIRE(high_a.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 10).ok());
    REQUIRE(low_b.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 40).ok());
    REQUIRE(high_b.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 20).ok());
    held.ReleaseOne();
    REQUIRE(WaitFor(g_recorded, 4));
  }
  CHECK(std::vector<int>(g_order, g_order + 4) == std::vector<int>{10, 20, 30, 40});
}

TEST_CASE("a high-priority stream's batch goes before queued lower work; its own order is kept", "[host][priority]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  IntKernel record_kernel = RecordKernel(executor);
  se::Stream low(executor), high(executor);
  REQUIRE(low.Init(se::StreamPriority::kLow).ok());
  REQUIRE(high.Init(se::StreamPriority::kHigh).ok());
  g_recorded = 0;
  {
    HeldPool held(executor);
    for (int i = 0; i < 4; ++i) REQUIRE(low.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, 10 + i).ok());
    for (int i = 0; i < 4; ++i) REQUIRE(high.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), record_kernel, i).ok());
    held.ReleaseOne();
    REQUIRE(WaitFor(g_recorded, 8));
  }
  CHECK(std::vector<int>(g_order, g_order + 8) == std::vector<int>{0, 1, 2, 3, 10, 11, 12, 13});
}
