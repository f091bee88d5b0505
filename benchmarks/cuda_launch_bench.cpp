// Pair 4, time: the CUDA launch path against the counting driver double in
// place of libcuda.so.1 (no GPU exists here), with 1, 3 and 8 arguments.
//   cuda_launch/args:N/{ours,raw,driver_only}   per launch, batches of 64
// The double completes each call before returning, so this is the host-side
// cost of a launch: ours minus driver_only is what the library adds.
//   LD_LIBRARY_PATH=<double's folder> cuda_launch_bench
#include "cuda_launch_cases.hpp"

namespace {

using bench::Name;

constexpr int kBatch = 64;

template <typename Side, int N>
void Launches(benchmark::State& state, Side& side) {
  side.Finish();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) side.template Launch<N>();
  }
  side.Finish();
  bench::PerBatch(state, kBatch);
}

template <int N>
void Register(bench::CudaOurs& ours, bench::CudaRaw& raw, bench::CudaDriverOnly& driver) {
  const std::string what = "args:" + std::to_string(N);
  benchmark::RegisterBenchmark(Name("cuda_launch", what, "ours").c_str(),
                               [&](benchmark::State& s) { Launches<bench::CudaOurs, N>(s, ours); });
  benchmark::RegisterBenchmark(Name("cuda_launch", what, "raw").c_str(),
                               [&](benchmark::State& s) { Launches<bench::CudaRaw, N>(s, raw); });
  benchmark::RegisterBenchmark(Name("cuda_launch", what, "driver_only").c_str(),
                               [&](benchmark::State& s) { Launches<bench::CudaDriverOnly, N>(s, driver); });
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  bench::CudaOurs ours;
  bench::CudaRaw raw;
  bench::CudaDriverOnly driver(raw);
  Register<1>(ours, raw, driver);
  Register<3>(ours, raw, driver);
  Register<8>(ours, raw, driver);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
