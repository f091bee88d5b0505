// The library's CUDA launch as an application's own translation unit holds
// it: a plain call in a function of the user's, compiled at -O2 apart from
// the counting loop, so the compiler decides what to inline on its own (issue
// 12 asks for the same budget "in any unit"). cuda_launch_count.cpp counts it
// as the "consumer" side next to "ours", which is compiled with the loop.
// RawConsumerLaunch is the raw program's launch in the same shape (a call
// into this unit with the same arguments), the "raw_consumer" side: what the
// call itself costs, whoever launches.
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

namespace {
void RawLaunch(CudaRaw& raw, CUfunction kernel, void** params) {
  const CUresult r = raw.launch(kernel, 1, 1, 1, kLaunchThreads, 1, 1, 0, raw.stream, params, nullptr);
  if (r != CUDA_SUCCESS) [[unlikely]]
    Die("cuLaunchKernel");
}
}  // namespace

void RawConsumerLaunch(CudaRaw& raw, CUfunction kernel, CUdeviceptr a) {
  void* params[] = {&a};
  RawLaunch(raw, kernel, params);
}

void RawConsumerLaunch(CudaRaw& raw, CUfunction kernel, CUdeviceptr a, float e, int g) {
  void* params[] = {&a, &e, &g};
  RawLaunch(raw, kernel, params);
}

void RawConsumerLaunch(CudaRaw& raw, CUfunction kernel, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr d,
                       float e, float f, int g, int h) {
  void* params[] = {&a, &b, &c, &d, &e, &f, &g, &h};
  RawLaunch(raw, kernel, params);
}

}  // namespace bench
