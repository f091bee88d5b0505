// The library's side of the launch-path pairs (1 OpenCL, 4 CUDA), the same for
// every backend: three TypedKernels taking 1, 3 and 8 arguments (device
// memory, float, int), launched as one block of kLaunchThreads on one stream.
// Each backend's cases header supplies the kernels' code (AddCode) and its
// raw side; the timing and instruction-counting programs share both.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "bench_common.hpp"

namespace bench {

namespace se = streamexecutor;

using Mem = se::DeviceMemory<float>;
using Kernel1 = se::TypedKernel<Mem*>;
using Kernel3 = se::TypedKernel<Mem*, float, int>;
using Kernel8 = se::TypedKernel<Mem*, Mem*, Mem*, Mem*, float, float, int, int>;

// One block of 64: the smallest launch that still looks like real work to a
// driver; the same sizes on both sides of every pair.
inline constexpr unsigned kLaunchThreads = 64;

// Nothing on the launch path is polymorphic, so no call on it can be virtual.
static_assert(!std::is_polymorphic_v<Kernel8> && !std::is_polymorphic_v<Mem>);

// AddCode(spec, kernel_name) adds the backend's code for kernel args1, args3 or args8.
template <typename B, void (*AddCode)(se::MultiKernelLoaderSpec&, const char*)>
struct OursLaunch {
  static_assert(!std::is_polymorphic_v<se::Stream<B>> && !std::is_polymorphic_v<se::StreamExecutor<B>> &&
                !std::is_polymorphic_v<B>);

  se::StreamExecutor<B>* executor = Executor();
  se::ScopedDeviceMemory<float> a = executor->template AllocateOwnedArray<float>(16);
  se::ScopedDeviceMemory<float> b = executor->template AllocateOwnedArray<float>(16);
  se::ScopedDeviceMemory<float> c = executor->template AllocateOwnedArray<float>(16);
  se::ScopedDeviceMemory<float> d = executor->template AllocateOwnedArray<float>(16);
  Kernel1 k1 = Load<Kernel1>("args1", 1);
  Kernel3 k3 = Load<Kernel3>("args3", 3);
  Kernel8 k8 = Load<Kernel8>("args8", 8);
  se::Stream<B> stream{executor};
  float e = 0.5f, f = 0.25f;
  int g = 3, h = 4;

  OursLaunch() {
    if (!stream.Init().ok()) Die(stream.status().ToString());
    for (Mem* m : {a.ptr(), b.ptr(), c.ptr(), d.ptr()}) {
      if (!executor->SynchronousMemZero(m, m->size()).ok()) Die("SynchronousMemZero");
    }
  }

  // Inlined into the counting loop, as the raw sides are, so that neither
  // side pays a call the other does not.
  template <int N>
  [[gnu::always_inline]] void Launch() {
    LaunchSized<N>(kLaunchThreads, 1);
  }
  template <int N>
  [[gnu::always_inline]] void LaunchSized(std::uint64_t threads_per_block, std::uint64_t blocks) {
    static_assert(N == 1 || N == 3 || N == 8);
    const se::ThreadDim threads(threads_per_block);
    const se::BlockDim grid(blocks);
    if constexpr (N == 1) stream.ThenLaunch(threads, grid, k1, a.ptr());
    if constexpr (N == 3) stream.ThenLaunch(threads, grid, k3, a.ptr(), e, g);
    if constexpr (N == 8) stream.ThenLaunch(threads, grid, k8, a.ptr(), b.ptr(), c.ptr(), d.ptr(), e, f, g, h);
  }
  void Finish() {
    if (se::Status s = stream.BlockHostUntilDone(); !s.ok()) Die(s.ToString());
  }

 private:
  static se::StreamExecutor<B>* Executor() {
    auto executor = se::Platform<B>::Get().ExecutorForDevice(0);
    if (!executor.ok()) Die("no " + std::string(B::kName) + " device: " + executor.status().ToString());
    return executor.ValueOrDie();
  }
  template <typename K>
  K Load(const char* name, std::size_t arity) {
    se::MultiKernelLoaderSpec spec(arity);
    AddCode(spec, name);
    K kernel(executor);
    if (se::Status s = executor->GetKernel(spec, &kernel); !s.ok()) Die(s.ToString());
    return kernel;
  }
};

// A side's launches with the sizes known only at run time, as an
// application's usually are: the compiler cannot fold them into the checks
// (or, on the raw side, into the driver call's arguments). The empty asm
// costs no instruction.
template <typename Side>
struct RuntimeSizes {
  Side& side;

  template <int N>
  [[gnu::always_inline]] void Launch() {
    std::uint64_t threads = kLaunchThreads, blocks = 1;
    asm volatile("" : "+r"(threads), "+r"(blocks));
    side.template LaunchSized<N>(threads, blocks);
  }
  void Finish() { side.Finish(); }
};

}  // namespace bench
