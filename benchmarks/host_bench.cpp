// Pair 2: the host backend against the CPU's fork-join libraries.
//   fork_join/empty/{ours,tbb,openmp,spin}  launch of an empty kernel over one
//       block per worker + wait, against a parallel_for of as many empty
//       iterations (oneTBB, OpenMP) and a minimal spinning fork-join
//   fork_join/empty/tbb_handoff     the same tasks enqueued into a TBB arena the
//       caller does not join: the work really goes to another thread
//   enqueue/empty/{ours,tbb}                ThenLaunch without waiting, against
//       tbb::task_group::run; per launch
//   saxpy/2^24/{ours,tbb,openmp}            y = a*x + y over 2^24 floats, the
//       kernel of docs/host.md, on the same arrays
//   saxpy/2^24/ours_block            the same kernel written per block (BlockContext),
//       whose loop the compiler vectorises
// Diagnostic sides (no goal; they say where the time of "ours" goes):
//   fork_join/empty/ours_1block      one block: only the hand-off to a worker and back
//   */ours_event_wait                the caller waits on an event instead of in
//       BlockHostUntilDone, so it does not join the launch: the pool's workers only
//   enqueue/empty/ours_parked        the stream is parked behind an event, so no
//       worker drains it while the batch is timed: the producer's cost alone
#include <streamexecutor/host.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(SE_BENCH_HAVE_TBB)
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif
#if defined(SE_BENCH_HAVE_OPENMP)
#include <omp.h>
#endif

#include "bench_common.hpp"

namespace {

namespace se = streamexecutor;
using bench::Name;

void EmptyKernel(const se::host::KernelContext&) {}

void Saxpy(const se::host::KernelContext& ctx, float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// The same, written per block (docs/host.md, "Per-block kernels"): the bounds
// check leaves the loop, which the compiler then vectorises.
void SaxpyBlock(const se::host::BlockContext& ctx, float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t first = ctx.blockIdx.x * ctx.blockDim.x;
  const std::uint64_t end = std::min<std::uint64_t>(first + ctx.blockDim.x, n);
  for (std::uint64_t i = first; i < end; ++i) y[i] = a * x[i] + y[i];
}

using EmptyKernelType = se::TypedKernel<>;
using SaxpyKernelType = se::TypedKernel<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>;

se::StreamExecutor<se::host>* Executor() {
  static auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  return executor;
}

// Read once: glibc answers hardware_concurrency() by reading
// /sys/devices/system/cpu/online, about 6 us here, which once made every
// iteration of the event-wait side look 6 us slower than it was.
unsigned Workers() {
  static const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  return workers;
}

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// The floor for a fork-join on this machine: helpers that spin on a counter
// and never sleep, started for one benchmark and stopped after it (a helper
// that spins forever would steal a core from every other benchmark).
class SpinForkJoin {
 public:
  explicit SpinForkJoin(unsigned participants) {
    for (unsigned i = 1; i < participants; ++i) helpers_.emplace_back([this, i] { Helper(i); });
  }
  ~SpinForkJoin() {
    stop_.store(true, std::memory_order_release);
    for (auto& t : helpers_) t.join();
  }
  SpinForkJoin(const SpinForkJoin&) = delete;
  SpinForkJoin& operator=(const SpinForkJoin&) = delete;

  // Runs body(i) for every participant i; the caller is participant 0.
  template <typename Body>
  void Run(Body& body) {
    body_ = &body;
    invoke_ = [](void* b, unsigned i) { (*static_cast<Body*>(b))(i); };
    pending_.store(static_cast<int>(helpers_.size()), std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);
    body(0u);
    while (pending_.load(std::memory_order_acquire) != 0) Pause();
  }

 private:
  void Helper(unsigned index) {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t epoch;
      while ((epoch = epoch_.load(std::memory_order_acquire)) == seen) {
        if (stop_.load(std::memory_order_relaxed)) return;
        Pause();
      }
      seen = epoch;
      invoke_(body_, index);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  std::vector<std::thread> helpers_;
  alignas(64) std::atomic<std::uint64_t> epoch_{0};
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  void* body_ = nullptr;
  void (*invoke_)(void*, unsigned) = nullptr;
};

EmptyKernelType LoadEmpty() {
  se::MultiKernelLoaderSpec spec(0);
  spec.AddHostKernel<&EmptyKernel>("empty");
  EmptyKernelType kernel(Executor());
  if (!Executor()->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel(empty)");
  return kernel;
}

void Sync(se::Stream<se::host>& stream) {
  if (se::Status s = stream.BlockHostUntilDone(); !s.ok()) bench::Die(s.ToString());
}

// ---- Launch + wait of an empty kernel -----------------------------------------

void ForkJoinOurs(benchmark::State& state, std::uint64_t blocks) {
  EmptyKernelType kernel = LoadEmpty();
  se::Stream stream(Executor());
  stream.Init();
  for (auto _ : state) {
    stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(blocks), kernel);
    Sync(stream);
  }
}

void ForkJoinOursEventWait(benchmark::State& state) {
  EmptyKernelType kernel = LoadEmpty();
  se::Stream stream(Executor());
  se::Event done(Executor());
  if (!stream.Init().ok() || !done.Init()) bench::Die("stream or event Init");
  for (auto _ : state) {
    stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(Workers()), kernel).ThenRecordEvent(&done);
    if (!done.Synchronize().ok()) bench::Die("Event::Synchronize");
  }
  Sync(stream);
}

void ForkJoinSpin(benchmark::State& state) {
  SpinForkJoin pool(Workers());
  auto body = [](unsigned i) { benchmark::DoNotOptimize(i); };
  for (auto _ : state) pool.Run(body);
}

#if defined(SE_BENCH_HAVE_TBB)
void ForkJoinTbb(benchmark::State& state) {
  const std::size_t n = Workers();
  for (auto _ : state) {
    // One task per worker, as the host launch has one block per worker.
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, n, 1),
        [](const tbb::blocked_range<std::size_t>& r) { benchmark::DoNotOptimize(r.begin()); },
        tbb::simple_partitioner());
  }
}

// The work really leaves the caller: one task per worker enqueued into an
// arena that reserves no slot for the calling thread, which waits for them
// without joining (as our ours_event_wait side does). tbb::parallel_for of
// empty bodies above finishes on the caller before a worker wakes.
void ForkJoinTbbHandOff(benchmark::State& state) {
  const unsigned n = Workers();
  tbb::task_arena arena(static_cast<int>(n), /*reserved_for_masters=*/0);
  // Outlives every task: the last one may notify after the wait returned.
  std::atomic<unsigned> left{0};
  for (auto _ : state) {
    left.store(n, std::memory_order_release);
    for (unsigned i = 0; i < n; ++i) {
      arena.enqueue([&left] {
        benchmark::DoNotOptimize(left);
        if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) left.notify_one();
      });
    }
    for (unsigned seen = left.load(std::memory_order_acquire); seen != 0; seen = left.load(std::memory_order_acquire)) {
      left.wait(seen, std::memory_order_acquire);
    }
  }
}
#endif

#if defined(SE_BENCH_HAVE_OPENMP)
void ForkJoinOpenMP(benchmark::State& state) {
  const int n = static_cast<int>(Workers());
  for (auto _ : state) {
#pragma omp parallel for num_threads(n)
    for (int i = 0; i < n; ++i) benchmark::DoNotOptimize(i);
  }
}
#endif

// ---- Enqueue alone -----------------------------------------------------------------

// Launches timed per batch, waited for between batches outside the timed
// region: below the ring's 1024 slots, so the producer never waits for room.
constexpr int kBatch = 256;

void EnqueueOurs(benchmark::State& state) {
  EmptyKernelType kernel = LoadEmpty();
  se::Stream stream(Executor());
  stream.Init();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel);
    state.SetIterationTime(bench::Seconds(start));
    Sync(stream);
  }
  bench::PerBatch(state, kBatch);
}

// A gate stream holds a worker in a callback until the batch is enqueued; the
// measured stream waits on the gate's event, so it is parked and no worker
// touches it while the batch is timed.
void EnqueueOursParked(benchmark::State& state) {
  constexpr int kParkedBatch = 768;  // the ring holds 1024 commands
  EmptyKernelType kernel = LoadEmpty();
  se::Stream stream(Executor());
  se::Stream gate(Executor());
  se::Event opened(Executor());
  if (!stream.Init().ok() || !gate.Init().ok() || !opened.Init()) bench::Die("stream or event Init");
  for (auto _ : state) {
    std::atomic<bool> open{false};
    gate.ThenDoHostCallback([&open] { open.wait(false); }).ThenRecordEvent(&opened);
    stream.ThenWaitFor(&opened);
    // Time for a worker to reach the wait and park the stream.
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kParkedBatch; ++i) stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel);
    state.SetIterationTime(bench::Seconds(start));
    open.store(true);
    open.notify_all();
    Sync(gate);
    Sync(stream);
  }
  bench::PerBatch(state, kParkedBatch);
}

#if defined(SE_BENCH_HAVE_TBB)
void EnqueueTbb(benchmark::State& state) {
  tbb::task_group group;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) group.run([] {});
    state.SetIterationTime(bench::Seconds(start));
    group.wait();
  }
  bench::PerBatch(state, kBatch);
}
#endif

// ---- saxpy over 2^24 floats -----------------------------------------------------------

constexpr std::uint32_t kSaxpyN = 1u << 24;
constexpr float kA = 1.0001f;

struct SaxpyData {
  se::ScopedDeviceMemory<float> x = Executor()->AllocateOwnedArray<float>(kSaxpyN);
  se::ScopedDeviceMemory<float> y = Executor()->AllocateOwnedArray<float>(kSaxpyN);
  SaxpyData() {
    std::vector<float> ones(kSaxpyN, 1.0f);
    if (!Executor()->SynchronousMemcpyH2D<float>(ones, x.ptr()).ok() ||
        !Executor()->SynchronousMemcpyH2D<float>(ones, y.ptr()).ok()) {
      bench::Die("saxpy setup");
    }
  }
  // Device memory of the host backend is host memory: the peers work on the
  // very same arrays.
  const float* hx() { return static_cast<const float*>(x.ptr()->opaque()); }
  float* hy() { return static_cast<float*>(y.ptr()->opaque()); }
};

SaxpyData& Data() {
  static SaxpyData data;
  return data;
}

void SaxpyOurs(benchmark::State& state, bool event_wait, bool per_block) {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(4);
  if (per_block)
    spec.AddHostKernel<&SaxpyBlock>("saxpy");
  else
    spec.AddHostKernel<&Saxpy>("saxpy");
  SaxpyKernelType kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel(saxpy)");
  se::Stream stream(executor);
  se::Event done(executor);
  if (!stream.Init().ok() || !done.Init()) bench::Die("stream or event Init");
  SaxpyData& d = Data();
  constexpr std::uint64_t kThreads = 1024;
  for (auto _ : state) {
    stream.ThenLaunch(se::ThreadDim(kThreads), se::BlockDim(kSaxpyN / kThreads), kernel, kA, d.x.ptr(), d.y.ptr(),
                      kSaxpyN);
    if (event_wait) {
      if (!stream.ThenRecordEvent(&done).ok() || !done.Synchronize().ok()) bench::Die("saxpy event wait");
    } else {
      Sync(stream);
    }
  }
  Sync(stream);
  state.SetBytesProcessed(int64_t(state.iterations()) * kSaxpyN * sizeof(float) * 3);
}

#if defined(SE_BENCH_HAVE_TBB)
void SaxpyTbb(benchmark::State& state) {
  SaxpyData& d = Data();
  const float* x = d.hx();
  float* y = d.hy();
  for (auto _ : state) {
    tbb::parallel_for(tbb::blocked_range<std::uint32_t>(0, kSaxpyN), [=](const tbb::blocked_range<std::uint32_t>& r) {
      for (std::uint32_t i = r.begin(); i != r.end(); ++i) y[i] = kA * x[i] + y[i];
    });
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kSaxpyN * sizeof(float) * 3);
}
#endif

#if defined(SE_BENCH_HAVE_OPENMP)
void SaxpyOpenMP(benchmark::State& state) {
  SaxpyData& d = Data();
  const float* x = d.hx();
  float* y = d.hy();
  const int n = static_cast<int>(Workers());
  for (auto _ : state) {
#pragma omp parallel for num_threads(n)
    for (std::uint32_t i = 0; i < kSaxpyN; ++i) y[i] = kA * x[i] + y[i];
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kSaxpyN * sizeof(float) * 3);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RegisterBenchmark(Name("fork_join", "empty", "ours").c_str(), ForkJoinOurs, Workers())->UseRealTime();
#if defined(SE_BENCH_HAVE_TBB)
  benchmark::RegisterBenchmark(Name("fork_join", "empty", "tbb").c_str(), ForkJoinTbb)->UseRealTime();
  benchmark::RegisterBenchmark(Name("fork_join", "empty", "tbb_handoff").c_str(), ForkJoinTbbHandOff)->UseRealTime();
#endif
#if defined(SE_BENCH_HAVE_OPENMP)
  benchmark::RegisterBenchmark(Name("fork_join", "empty", "openmp").c_str(), ForkJoinOpenMP)->UseRealTime();
#endif
  benchmark::RegisterBenchmark(Name("fork_join", "empty", "spin").c_str(), ForkJoinSpin)->UseRealTime();
  benchmark::RegisterBenchmark(Name("fork_join", "empty", "ours_1block").c_str(), ForkJoinOurs, 1)->UseRealTime();
  benchmark::RegisterBenchmark(Name("fork_join", "empty", "ours_event_wait").c_str(), ForkJoinOursEventWait)
      ->UseRealTime();

  benchmark::RegisterBenchmark(Name("enqueue", "empty", "ours").c_str(), EnqueueOurs)->UseManualTime();
  benchmark::RegisterBenchmark(Name("enqueue", "empty", "ours_parked").c_str(), EnqueueOursParked)->UseManualTime();
#if defined(SE_BENCH_HAVE_TBB)
  benchmark::RegisterBenchmark(Name("enqueue", "empty", "tbb").c_str(), EnqueueTbb)->UseManualTime();
#endif

  benchmark::RegisterBenchmark(Name("saxpy", "2^24", "ours").c_str(), SaxpyOurs, false, false)->UseRealTime();
  benchmark::RegisterBenchmark(Name("saxpy", "2^24", "ours_block").c_str(), SaxpyOurs, false, true)->UseRealTime();
  benchmark::RegisterBenchmark(Name("saxpy", "2^24", "ours_event_wait").c_str(), SaxpyOurs, true, false)->UseRealTime();
#if defined(SE_BENCH_HAVE_TBB)
  benchmark::RegisterBenchmark(Name("saxpy", "2^24", "tbb").c_str(), SaxpyTbb)->UseRealTime();
#endif
#if defined(SE_BENCH_HAVE_OPENMP)
  benchmark::RegisterBenchmark(Name("saxpy", "2^24", "openmp").c_str(), SaxpyOpenMP)->UseRealTime();
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
