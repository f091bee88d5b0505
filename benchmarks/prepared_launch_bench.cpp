// Prepared launches and launches typed at run time against ThenLaunch and the
// raw driver, on OpenCL, in one process, with the 8-argument kernel:
//   relaunch/args:8/then_launch         ThenLaunch: check, pack, 8 clSetKernelArg, enqueue
//   relaunch/args:8/prepared            PreparedLaunch, nothing changed: check, 0 clSetKernelArg, enqueue
//   relaunch/args:8/prepared_set1       PreparedLaunch after Set<4>: check, 1 clSetKernelArg, enqueue
//   relaunch/args:8/untyped             UntypedKernel + KernelArgsArray<8>: check against the parameters, 8 sets
//   relaunch/args:8/raw                 clSetKernelArg x 8 + clEnqueueNDRangeKernel
//   relaunch/args:8/raw_set1            clSetKernelArg x 1 + clEnqueueNDRangeKernel (what prepared_set1 does)
// Enqueue only, timed per batch of 64; the queue is drained between batches.
#include <functional>

#include "opencl_launch_cases.hpp"

namespace {

using bench::Name;
constexpr int kBatch = 64;

void Batches(benchmark::State& state, const std::function<void()>& launch, const std::function<void()>& finish) {
  finish();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) launch();
    state.SetIterationTime(bench::Seconds(start));
    finish();
  }
  bench::PerBatch(state, kBatch);
}

void Register(const char* side, std::function<void()> launch, std::function<void()> finish) {
  benchmark::RegisterBenchmark(Name("relaunch", "args:8", side).c_str(), [=](benchmark::State& s) {
    Batches(s, launch, finish);
  })->UseManualTime();
}

}  // namespace

namespace se = streamexecutor;

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  bench::Ours ours;
  bench::Raw raw;
  const se::ThreadDim threads(bench::kLaunchThreads);
  se::PreparedLaunch prepared(ours.k8, threads, se::BlockDim(1), ours.a.ptr(), ours.b.ptr(), ours.c.ptr(), ours.d.ptr(),
                              ours.e, ours.f, ours.g, ours.h);
  se::UntypedKernel untyped(ours.executor);
  se::MultiKernelLoaderSpec spec(8);
  bench::AddOpenCLLaunchCode(spec, "args8");
  if (se::Status s = ours.executor->GetUntypedKernel(spec, &untyped); !s.ok()) bench::Die(s.ToString());
  se::KernelArgsArray<8> args;
  args.Add(ours.a.ptr())
      .Add(ours.b.ptr())
      .Add(ours.c.ptr())
      .Add(ours.d.ptr())
      .Add(ours.e)
      .Add(ours.f)
      .Add(ours.g)
      .Add(ours.h);
  float value = 0.5f;

  auto ours_finish = [&] { ours.Finish(); };
  auto raw_finish = [&] { raw.Finish(); };
  Register("then_launch", [&] { ours.Launch<8>(); }, ours_finish);
  Register("prepared", [&] { ours.stream.ThenLaunch(prepared); }, ours_finish);
  Register("prepared_set1", [&] { ours.stream.ThenLaunch(prepared.Set<4>(value)); }, ours_finish);
  Register("untyped", [&] { ours.stream.ThenLaunch(threads, se::BlockDim(1), untyped, args); }, ours_finish);
  Register("raw", [&] { raw.Launch<8>(); }, raw_finish);
  Register(
      "raw_set1",
      [&] {
        if (clSetKernelArg(raw.k8, 4, sizeof(value), &value) != CL_SUCCESS) bench::Die("clSetKernelArg");
        const std::size_t global = bench::kLaunchThreads, local = bench::kLaunchThreads;
        if (clEnqueueNDRangeKernel(raw.cl.queue, raw.k8, 1, nullptr, &global, &local, 0, nullptr, nullptr) !=
            CL_SUCCESS) {
          bench::Die("clEnqueueNDRangeKernel");
        }
      },
      raw_finish);
  benchmark::RunSpecifiedBenchmarks();
  if (!ours.stream.ok()) bench::Die(ours.stream.status().ToString());
  benchmark::Shutdown();
}
