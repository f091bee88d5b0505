// Pair 1, instructions: the OpenCL launch path under callgrind (launch_count.hpp).
//   opencl_launch_count [launches]
#include <cstdlib>

#include "launch_count.hpp"
#include "opencl_launch_cases.hpp"

namespace {

// raw_profiling: the raw path on a queue with profiling on, as every library
// stream's queue is, to tell the queue's cost from the library's.
// *_runtime_sizes: both paths with sizes the compiler cannot see (RuntimeSizes).
template <int N>
void CountAll(bench::Ours& ours, bench::Raw& raw, bench::Raw& raw_profiling, bench::EmptySide& empty, int launches) {
  bench::CountLaunches<N>(empty, "empty", launches);
  bench::CountLaunches<N>(raw, "raw", launches);
  bench::CountLaunches<N>(raw_profiling, "raw_profiling", launches);
  bench::CountLaunches<N>(ours, "ours", launches);
  bench::RuntimeSizes<bench::Raw> raw_runtime{raw};
  bench::RuntimeSizes<bench::Ours> ours_runtime{ours};
  bench::CountLaunches<N>(raw_runtime, "raw_runtime_sizes", launches);
  bench::CountLaunches<N>(ours_runtime, "ours_runtime_sizes", launches);
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 1024;
  if (!bench::ValidLaunchCount(launches)) bench::Die("launches must be a positive multiple of 64");
  bench::Ours ours;
  bench::Raw raw;
  bench::Raw raw_profiling(/*profiling=*/true);
  bench::EmptySide empty;
  CountAll<1>(ours, raw, raw_profiling, empty, launches);
  CountAll<3>(ours, raw, raw_profiling, empty, launches);
  CountAll<8>(ours, raw, raw_profiling, empty, launches);
  std::printf("launches %d\n", launches);
}
