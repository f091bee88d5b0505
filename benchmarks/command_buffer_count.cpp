// Instructions of the calling thread: one submission of a CommandBuffer of
// 100 recorded launches against 100 ThenLaunch calls, on the CUDA backend
// against the counting driver double (callgrind.py; run.sh puts the double on
// LD_LIBRARY_PATH). The double's cuGraphLaunch and cuLaunchKernel record and
// return, so the counts are the library's side of each path plus the
// double's bookkeeping, the same on both sides. callgrind.py reports them per
// "launch", which here is one submission or one batch of 100 ThenLaunch.
//   LD_LIBRARY_PATH=<double's folder> command_buffer_count [submissions]
#include <cstdio>
#include <cstdlib>

#include <streamexecutor/cuda.hpp>

#include "bench_common.hpp"
#include "launch_count.hpp"

namespace se = streamexecutor;

namespace {

constexpr int kLaunches = 100;

struct Recorded {
  Recorded()
      : executor(se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie()),
        kernel(executor),
        memory(executor->AllocateOwnedArray<int>(1)),
        stream(executor),
        buffer(executor) {
    se::MultiKernelLoaderSpec spec(1);
    spec.AddCudaPtxInMemory(bench::kEmptyPtx, "empty");
    if (!executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel");
    stream.Init();
    buffer.Init();
    for (int i = 0; i < kLaunches; ++i) buffer.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, memory.ptr());
    if (!buffer.Finalize().ok()) bench::Die(buffer.status().ToString());
  }
  void Finish() {
    if (!stream.BlockHostUntilDone().ok()) bench::Die(stream.status().ToString());
  }
  se::StreamExecutor<se::cuda>* executor;
  se::TypedKernel<se::DeviceMemory<int>*> kernel;
  se::ScopedDeviceMemory<int> memory;
  se::Stream<se::cuda> stream;
  se::CommandBuffer<se::cuda> buffer;
};

struct BufferSide {
  Recorded& r;
  template <int N>
  void Launch() {
    r.stream.ThenSubmit(&r.buffer);
  }
  void Finish() { r.Finish(); }
};
struct LaunchesSide {
  Recorded& r;
  template <int N>
  void Launch() {
    for (int i = 0; i < kLaunches; ++i)
      r.stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), r.kernel, r.memory.ptr());
  }
  void Finish() { r.Finish(); }
};

}  // namespace

int main(int argc, char** argv) {
  const int submissions = argc > 1 ? std::atoi(argv[1]) : 256;
  if (!bench::ValidLaunchCount(submissions)) bench::Die("submissions must be a positive multiple of 64");
  if (se::Platform<se::cuda>::Get().VisibleDeviceCount() == 0)
    bench::Die("no CUDA device (put the double on LD_LIBRARY_PATH)");
  Recorded recorded;
  BufferSide buffer{recorded};
  LaunchesSide launches{recorded};
  bench::EmptySide empty;
  bench::CountLaunches<1>(empty, "empty", submissions);
  bench::CountLaunches<1>(buffer, "buffer", submissions);
  bench::CountLaunches<1>(launches, "launches", submissions);
  std::printf("launches %d\n", submissions);
}
