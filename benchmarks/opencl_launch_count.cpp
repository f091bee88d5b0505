// Pair 1, instructions: run under
//   valgrind --tool=callgrind --collect-atstart=no --separate-threads=yes
// (callgrind.py does). For each side and argument count it runs `launches`
// launches with collection switched on only around the enqueue loop of this
// thread, and dumps the counts under a name such as "ours-3". The driver's
// worker threads and every clFinish stay outside the counts.
//   opencl_launch_count [launches]
#include <valgrind/callgrind.h>

#include <cstdlib>
#include <string>

#include "opencl_launch_cases.hpp"

namespace {

constexpr int kBatch = 64;

// The loop itself with nothing in it, so that its cost can be subtracted.
struct Empty {
  template <int N>
  void Launch() {
    asm volatile("" ::: "memory");
  }
  void Finish() {}
};

template <int N, typename Side>
void Count(Side& side, const char* name, int launches) {
  for (int i = 0; i < kBatch; ++i) side.template Launch<N>();  // warm-up: first-use paths stay out
  side.Finish();
  CALLGRIND_ZERO_STATS;
  for (int done = 0; done < launches; done += kBatch) {
    CALLGRIND_TOGGLE_COLLECT;
    for (int i = 0; i < kBatch; ++i) side.template Launch<N>();
    CALLGRIND_TOGGLE_COLLECT;
    side.Finish();
  }
  const std::string dump = std::string(name) + "-" + std::to_string(N);
  CALLGRIND_DUMP_STATS_AT(dump.c_str());
}

// raw_profiling: the raw path on a queue with profiling on, as every library
// stream's queue is, to tell the queue's cost from the library's.
template <int N>
void CountAll(bench::Ours& ours, bench::Raw& raw, bench::Raw& raw_profiling, Empty& empty, int launches) {
  Count<N>(empty, "empty", launches);
  Count<N>(raw, "raw", launches);
  Count<N>(raw_profiling, "raw_profiling", launches);
  Count<N>(ours, "ours", launches);
}

}  // namespace

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 1024;
  if (launches <= 0 || launches % kBatch != 0) bench::Die("launches must be a positive multiple of 64");
  bench::Ours ours;
  bench::Raw raw;
  bench::Raw raw_profiling(/*profiling=*/true);
  Empty empty;
  CountAll<1>(ours, raw, raw_profiling, empty, launches);
  CountAll<3>(ours, raw, raw_profiling, empty, launches);
  CountAll<8>(ours, raw, raw_profiling, empty, launches);
  std::printf("launches %d\n", launches);
}
