// The library's CUDA launch as an application's own translation unit holds
// it: a plain call in a function of the user's, compiled at -O2 apart from
// the counting loop, so the compiler decides what to inline on its own (issue
// 12 asks for the same budget "in any unit"). cuda_launch_count.cpp counts it
// as the "consumer" side next to "ours", which is compiled with the loop.
#include "cuda_launch_consumer.hpp"

namespace bench {

void ConsumerLaunch(se::Stream<se::cuda>& stream, const Kernel1& kernel, Mem* a) {
  stream.ThenLaunch(se::ThreadDim(kLaunchThreads), se::BlockDim(1), kernel, a);
}

void ConsumerLaunch(se::Stream<se::cuda>& stream, const Kernel3& kernel, Mem* a, float e, int g) {
  stream.ThenLaunch(se::ThreadDim(kLaunchThreads), se::BlockDim(1), kernel, a, e, g);
}

void ConsumerLaunch(se::Stream<se::cuda>& stream, const Kernel8& kernel, Mem* a, Mem* b, Mem* c, Mem* d, float e,
                    float f, int g, int h) {
  stream.ThenLaunch(se::ThreadDim(kLaunchThreads), se::BlockDim(1), kernel, a, b, c, d, e, f, g, h);
}

}  // namespace bench
