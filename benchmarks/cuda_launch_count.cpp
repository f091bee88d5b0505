// Pair 4, instructions: the CUDA launch path under callgrind
// (launch_count.hpp), against the counting driver double in place of
// libcuda.so.1 (cuda_launch_cases.hpp), and the same launches from a
// translation unit of their own (cuda_launch_consumer.cpp, the "consumer" side). Also counts operator new calls
// during the library's launches; both sides' counts go to stdout, where
// callgrind.py reads the "allocations" lines.
//   LD_LIBRARY_PATH=<double's folder> cuda_launch_count [launches]
#include <cstdio>
#include <cstdlib>

#include "../tests/counting_new.hpp"
#include "cuda_launch_consumer.hpp"
#include "launch_count.hpp"

namespace {

template <int N>
void CountAll(bench::CudaOurs& ours, bench::CudaConsumer& consumer, bench::CudaRaw& raw,
              bench::CudaRawConsumer& raw_consumer, bench::CudaDriverOnly& driver, bench::EmptySide& empty,
              int launches) {
  bench::CountLaunches<N>(empty, "empty", launches);
  bench::CountLaunches<N>(driver, "driver_only", launches);
  bench::CountLaunches<N>(raw, "raw", launches);
  const long before = GlobalNewCalls();
  bench::CountLaunches<N>(ours, "ours", launches);
  // The warm-up launches are inside this window too: none may allocate.
  std::printf("allocations ours-%d: %ld in %d launches\n", N, GlobalNewCalls() - before, launches + bench::kCountBatch);
  bench::CountLaunches<N>(consumer, "consumer", launches);
  bench::CountLaunches<N>(raw_consumer, "raw_consumer", launches);
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 1024;
  if (!bench::ValidLaunchCount(launches)) bench::Die("launches must be a positive multiple of 64");
  bench::CudaOurs ours;
  bench::CudaRaw raw;
  bench::CudaDriverOnly driver(raw);
  bench::CudaConsumer consumer{ours};
  bench::CudaRawConsumer raw_consumer{raw};
  bench::EmptySide empty;
  CountAll<1>(ours, consumer, raw, raw_consumer, driver, empty, launches);
  CountAll<3>(ours, consumer, raw, raw_consumer, driver, empty, launches);
  CountAll<8>(ours, consumer, raw, raw_consumer, driver, empty, launches);
  std::printf("launches %d\n", launches);
}
