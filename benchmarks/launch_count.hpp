// The instruction-counting loop shared by the launch-count programs, which
// run under
//   valgrind --tool=callgrind --collect-atstart=no --separate-threads=yes
// (callgrind.py does). For one side and argument count it runs `launches`
// launches with collection on only around the launch loop of this thread, and
// dumps the counts under a name such as "ours-3". Driver worker threads and
// every Finish() stay outside the counts.
#pragma once

#include <valgrind/callgrind.h>

#include <string>

namespace bench {

inline constexpr int kCountBatch = 64;

// The loop itself with nothing in it, so that its cost can be subtracted.
struct EmptySide {
  template <int N>
  void Launch() {
    asm volatile("" ::: "memory");
  }
  void Finish() {}
};

template <int N, typename Side>
void CountLaunches(Side& side, const char* name, int launches) {
  for (int i = 0; i < kCountBatch; ++i) side.template Launch<N>();  // warm-up: first-use paths stay out
  side.Finish();
  CALLGRIND_ZERO_STATS;
  for (int done = 0; done < launches; done += kCountBatch) {
    CALLGRIND_TOGGLE_COLLECT;
    for (int i = 0; i < kCountBatch; ++i) side.template Launch<N>();
    CALLGRIND_TOGGLE_COLLECT;
    side.Finish();
  }
  const std::string dump = std::string(name) + "-" + std::to_string(N);
  CALLGRIND_DUMP_STATS_AT(dump.c_str());
}

inline bool ValidLaunchCount(int launches) { return launches > 0 && launches % kCountBatch == 0; }

}  // namespace bench
