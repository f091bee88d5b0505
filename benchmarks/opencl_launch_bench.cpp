// Pair 1: the OpenCL launch path, library against raw clSetKernelArg x n +
// clEnqueueNDRangeKernel, with 1, 3 and 8 arguments.
//   launch_enqueue/args:N/{ours,raw,raw_profiling}  enqueue only, per launch
//   launch_finish/args:N/{ours,raw,raw_profiling}   enqueue + wait, per launch
// raw_profiling is the raw path on a queue with CL_QUEUE_PROFILING_ENABLE,
// which every library stream has (for timers): it shows how much of a
// difference is the queue property rather than the library code.
#include <memory>

#include "opencl_launch_cases.hpp"

namespace {

using bench::Name;

// Launches timed per batch; the queue is drained between batches, outside
// the timed region, so that it never grows without bound.
constexpr int kBatch = 64;

template <typename Side, int N>
void Enqueue(benchmark::State& state, Side& side) {
  side.Finish();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) side.template Launch<N>();
    state.SetIterationTime(bench::Seconds(start));
    side.Finish();
  }
  bench::PerBatch(state, kBatch);
}

template <typename Side, int N>
void EnqueueFinish(benchmark::State& state, Side& side) {
  side.Finish();
  for (auto _ : state) {
    side.template Launch<N>();
    side.Finish();
  }
}

template <int N>
void Register(bench::Ours& ours, bench::Raw& raw, bench::Raw& raw_profiling) {
  const std::string what = "args:" + std::to_string(N);
  benchmark::RegisterBenchmark(Name("launch_enqueue", what, "ours").c_str(), [&](benchmark::State& s) {
    Enqueue<bench::Ours, N>(s, ours);
  })->UseManualTime();
  benchmark::RegisterBenchmark(Name("launch_enqueue", what, "raw").c_str(), [&](benchmark::State& s) {
    Enqueue<bench::Raw, N>(s, raw);
  })->UseManualTime();
  benchmark::RegisterBenchmark(Name("launch_enqueue", what, "raw_profiling").c_str(), [&](benchmark::State& s) {
    Enqueue<bench::Raw, N>(s, raw_profiling);
  })->UseManualTime();
  benchmark::RegisterBenchmark(Name("launch_finish", what, "ours").c_str(), [&](benchmark::State& s) {
    EnqueueFinish<bench::Ours, N>(s, ours);
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("launch_finish", what, "raw").c_str(), [&](benchmark::State& s) {
    EnqueueFinish<bench::Raw, N>(s, raw);
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("launch_finish", what, "raw_profiling").c_str(), [&](benchmark::State& s) {
    EnqueueFinish<bench::Raw, N>(s, raw_profiling);
  })->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // Both sides live for the whole run: a benchmark only launches.
  bench::Ours ours;
  bench::Raw raw;
  bench::Raw raw_profiling(/*profiling=*/true);
  Register<1>(ours, raw, raw_profiling);
  Register<3>(ours, raw, raw_profiling);
  Register<8>(ours, raw, raw_profiling);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
