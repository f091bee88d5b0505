// Pair: 100 empty launches submitted as one recorded CommandBuffer against
// the same 100 launches through Stream::ThenLaunch, each side timed from the
// first enqueue to BlockHostUntilDone, on the host backend and on OpenCL.
//   submit_100/<backend>/{buffer,launches}   enqueue + BlockHostUntilDone
//   enqueue_100/<backend>/{buffer,launches}  the enqueue alone (the wait is outside the timed region)
// The buffer side skips, per launch, the argument checks and packing (done
// once at record time); on OpenCL with cl_khr_command_buffer it is also one
// driver call instead of 100 clSetKernelArg + clEnqueueNDRangeKernel.
// After the run, the ratio launches/buffer per backend is printed.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <streamexecutor/streamexecutor.hpp>

#include "bench_common.hpp"

namespace se = streamexecutor;

namespace {

using bench::Name;

constexpr int kLaunches = 100;

void empty_host(const se::host::KernelContext&, int*) {}
constexpr const char* kEmptyOpenCL = "__kernel void empty(__global int* p) {}\n";
using EmptyKernel = se::TypedKernel<se::DeviceMemory<int>*>;

template <typename B>
struct Fixture {
  explicit Fixture(se::StreamExecutor<B>* e)
      : executor(e), kernel(e), memory(e->template AllocateOwnedArray<int>(1)), stream(e), buffer(e) {
    se::MultiKernelLoaderSpec spec(1);
    spec.AddHostKernel<&empty_host>("empty");
    spec.AddOpenCLTextInMemory(kEmptyOpenCL, "empty");
    if (!executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel");
    stream.Init();
    buffer.Init();
    for (int i = 0; i < kLaunches; ++i) buffer.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, memory.ptr());
    if (!buffer.Finalize().ok() || !stream.ok()) bench::Die(buffer.status().ToString());
  }
  se::StreamExecutor<B>* executor;
  EmptyKernel kernel;
  se::ScopedDeviceMemory<int> memory;
  se::Stream<B> stream;
  se::CommandBuffer<B> buffer;
};

template <typename B>
void Register(const std::string& backend, Fixture<B>& f) {
  benchmark::RegisterBenchmark(Name("submit_100", backend, "buffer").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      if (!f.stream.ThenSubmit(&f.buffer).BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("submit_100", backend, "launches").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      for (int i = 0; i < kLaunches; ++i)
        f.stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), f.kernel, f.memory.ptr());
      if (!f.stream.BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("enqueue_100", backend, "buffer").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      f.stream.ThenSubmit(&f.buffer);
      state.SetIterationTime(bench::Seconds(start));
      if (!f.stream.BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseManualTime();
  benchmark::RegisterBenchmark(Name("enqueue_100", backend, "launches").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kLaunches; ++i)
        f.stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), f.kernel, f.memory.ptr());
      state.SetIterationTime(bench::Seconds(start));
      if (!f.stream.BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseManualTime();
}

// Prints launches/buffer for each backend as the runs come in.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
      const std::string name = run.run_name.function_name;
      const auto slash = name.rfind('/');
      times_[name.substr(0, slash)][name.substr(slash + 1)] = run.GetAdjustedRealTime();
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const auto& [pair, sides] : times_) {
      if (sides.count("buffer") && sides.count("launches")) {
        std::printf("%s: ThenLaunch x%d / ThenSubmit(buffer) = %.2f\n", pair.c_str(), kLaunches,
                    sides.at("launches") / sides.at("buffer"));
      }
    }
  }

 private:
  std::map<std::string, std::map<std::string, double>> times_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
#ifdef STREAMEXECUTOR_WITH_HOST
  auto* host_executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  Fixture<se::host> host(host_executor);
  Register("host", host);
#endif
#ifdef STREAMEXECUTOR_WITH_OPENCL
  auto opencl_executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0);
  std::unique_ptr<Fixture<se::opencl>> opencl;
  if (opencl_executor.ok()) {
    opencl = std::make_unique<Fixture<se::opencl>>(opencl_executor.value());
    Register("opencl", *opencl);
  }
#endif
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
}
