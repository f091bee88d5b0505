// Vulkan launch path in instructions: ThenLaunch against the raw Vulkan calls
// of one launch, on the same queue, under callgrind (launch_count.hpp).
//   vulkan_launch_count [launches]
#include <cstdlib>

#include "launch_count.hpp"
#include "vulkan_launch_cases.hpp"

namespace {

template <int N>
void CountAll(bench::Ours& ours, bench::Raw& raw, bench::EmptySide& empty, int launches) {
  bench::CountLaunches<N>(empty, "empty", launches);
  bench::CountLaunches<N>(raw, "raw", launches);
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
  bench::EmptySide empty;
  CountAll<1>(ours, raw, empty, launches);
  CountAll<3>(ours, raw, empty, launches);
  CountAll<8>(ours, raw, empty, launches);
  std::printf("launches %d\n", launches);
}
