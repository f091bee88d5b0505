// The "consumer" side of the CUDA instruction count: the launch calls live in
// cuda_launch_consumer.cpp, a translation unit of its own.
#pragma once

#include "cuda_launch_cases.hpp"

namespace bench {

void ConsumerLaunch(se::Stream<se::cuda>& stream, const Kernel1& kernel, Mem* a);
void ConsumerLaunch(se::Stream<se::cuda>& stream, const Kernel3& kernel, Mem* a, float e, int g);
void ConsumerLaunch(se::Stream<se::cuda>& stream, const Kernel8& kernel, Mem* a, Mem* b, Mem* c, Mem* d, float e,
                    float f, int g, int h);

void RawConsumerLaunch(CudaRaw& raw, CUfunction kernel, CUdeviceptr a);
void RawConsumerLaunch(CudaRaw& raw, CUfunction kernel, CUdeviceptr a, float e, int g);
void RawConsumerLaunch(CudaRaw& raw, CUfunction kernel, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr d,
                       float e, float f, int g, int h);

// Launches through ConsumerLaunch with the library side's stream, kernels and memory.
struct CudaConsumer {
  CudaOurs& ours;

  template <int N>
  void Launch() {
    if constexpr (N == 1) ConsumerLaunch(ours.stream, ours.k1, ours.a.ptr());
    if constexpr (N == 3) ConsumerLaunch(ours.stream, ours.k3, ours.a.ptr(), ours.e, ours.g);
    if constexpr (N == 8) {
      ConsumerLaunch(ours.stream, ours.k8, ours.a.ptr(), ours.b.ptr(), ours.c.ptr(), ours.d.ptr(), ours.e, ours.f,
                     ours.g, ours.h);
    }
  }
  void Finish() { ours.Finish(); }
};

// The raw program's launches through RawConsumerLaunch.
struct CudaRawConsumer {
  CudaRaw& raw;

  template <int N>
  void Launch() {
    if constexpr (N == 1) RawConsumerLaunch(raw, raw.k1, raw.a);
    if constexpr (N == 3) RawConsumerLaunch(raw, raw.k3, raw.a, raw.e, raw.g);
    if constexpr (N == 8) RawConsumerLaunch(raw, raw.k8, raw.a, raw.b, raw.c, raw.d, raw.e, raw.f, raw.g, raw.h);
  }
  void Finish() { raw.Finish(); }
};

}  // namespace bench
