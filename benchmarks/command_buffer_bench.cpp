// Pair: 100 empty launches submitted as one recorded CommandBuffer against
// the same 100 launches through Stream::ThenLaunch, each side timed from the
// first enqueue to BlockHostUntilDone, on the host backend and on OpenCL.
//   submit_100/<backend>/{buffer,launches}   enqueue + BlockHostUntilDone
//   enqueue_100/<backend>/{buffer,launches}  the enqueue alone (the wait is outside the timed region)
// The buffer side skips, per launch, the argument checks and packing (done
// once at record time); on OpenCL with cl_khr_command_buffer it is also one
// driver call instead of 100 clSetKernelArg + clEnqueueNDRangeKernel.
//   update_1/<backend>/{update,rerecord}
//       new arguments for one launch of the 100: UpdateLaunch on the
//       finalized buffer, against recording a new buffer of 100 launches
//       and finalizing it (what a program without updates does)
//   update_submit_1/<backend>/{update,rerecord}
//       the same, each followed by a submission and BlockHostUntilDone (on
//       OpenCL with the extension an update records its run again at the
//       next submission, which this includes)
//   while_100/<backend>/{while,host_loop}
//       100 iterations of a one-launch body that counts a device int down:
//       one submission of ThenWhile, against submitting the body and reading
//       the int back to the host after each (what a program without
//       conditionals does). Host, OpenCL, and CUDA on a GPU: the driver
//       double runs no kernel, so the count would never reach zero there.
// CUDA runs against the counting driver double when it is on
// LD_LIBRARY_PATH (run.sh does that): the library's cost around the driver.
// After the run, the ratio of the two sides of each pair is printed.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <span>
#include <string>

#include <streamexecutor/streamexecutor.hpp>

#include "bench_common.hpp"

namespace se = streamexecutor;

namespace {

using bench::Name;

constexpr int kLaunches = 100;

void empty_host(const se::host::KernelContext&, int*) {}
constexpr const char* kEmptyOpenCL = "__kernel void empty(__global int* p) {}\n";
using EmptyKernel = se::TypedKernel<se::DeviceMemory<int>*>;

void decrement_host(const se::host::KernelContext&, int* count) { *count -= 1; }
constexpr const char* kDecrementOpenCL = "__kernel void decrement(__global int* count) { *count -= 1; }\n";
constexpr const char* kDecrementPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry decrement(.param .u64 count) {
  .reg .u64 %rd<2>;
  .reg .s32 %r<2>;
  ld.param.u64 %rd0, [count];
  cvta.to.global.u64 %rd1, %rd0;
  ld.global.s32 %r0, [%rd1];
  sub.s32 %r1, %r0, 1;
  st.global.s32 [%rd1], %r1;
  ret;
}
)";

template <typename B>
struct Fixture {
  explicit Fixture(se::StreamExecutor<B>* e)
      : executor(e),
        kernel(e),
        memory(e->template AllocateOwnedArray<int>(1)),
        other(e->template AllocateOwnedArray<int>(1)),
        stream(e),
        buffer(e) {
    se::MultiKernelLoaderSpec spec(1);
    spec.AddHostKernel<&empty_host>("empty");
    spec.AddOpenCLTextInMemory(kEmptyOpenCL, "empty");
    spec.AddCudaPtxInMemory(bench::kEmptyPtx, "empty");
    if (!executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel");
    stream.Init();
    Record(buffer);
    middle = middle_of_last_record;
    if (!buffer.Finalize().ok() || !stream.ok()) bench::Die(buffer.status().ToString());
  }
  void Record(se::CommandBuffer<B>& into) {
    into.Init();
    for (int i = 0; i < kLaunches; ++i) {
      into.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, memory.ptr());
      if (i == kLaunches / 2) middle_of_last_record = into.LastCommand();
    }
  }
  se::StreamExecutor<B>* executor;
  EmptyKernel kernel;
  se::ScopedDeviceMemory<int> memory, other;
  se::CommandId middle, middle_of_last_record;
  se::Stream<B> stream;
  se::CommandBuffer<B> buffer;
};

template <typename B>
void Register(const std::string& backend, Fixture<B>& f) {
  benchmark::RegisterBenchmark(Name("submit_100", backend, "buffer").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      if (!f.stream.ThenSubmit(&f.buffer).BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("submit_100", backend, "launches").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      for (int i = 0; i < kLaunches; ++i)
        f.stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), f.kernel, f.memory.ptr());
      if (!f.stream.BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("enqueue_100", backend, "buffer").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      f.stream.ThenSubmit(&f.buffer);
      state.SetIterationTime(bench::Seconds(start));
      if (!f.stream.BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseManualTime();
  benchmark::RegisterBenchmark(Name("enqueue_100", backend, "launches").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kLaunches; ++i)
        f.stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), f.kernel, f.memory.ptr());
      state.SetIterationTime(bench::Seconds(start));
      if (!f.stream.BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseManualTime();
}

template <typename B>
void RegisterWhile(const std::string& backend, Fixture<B>& f) {
  struct Loop {
    explicit Loop(Fixture<B>& f)
        : kernel(f.executor),
          count(f.executor->template AllocateOwnedArray<std::int32_t>(1)),
          body(f.executor),
          loop(f.executor) {
      se::MultiKernelLoaderSpec spec(1);
      spec.AddHostKernel<&decrement_host>("decrement");
      spec.AddOpenCLTextInMemory(kDecrementOpenCL, "decrement");
      spec.AddCudaPtxInMemory(kDecrementPtx, "decrement");
      if (!f.executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel(decrement)");
      body.Init().ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, count.ptr());
      loop.Init().ThenMemset32(count.ptr(), kLaunches, 4).ThenWhile(count.cref(), &body);
      if (!body.Finalize().ok() || !loop.Finalize().ok()) bench::Die(loop.status().ToString());
    }
    se::TypedKernel<se::DeviceMemory<std::int32_t>*> kernel;
    se::ScopedDeviceMemory<std::int32_t> count;
    se::CommandBuffer<B> body, loop;
  };
  auto shared = std::make_shared<Loop>(f);
  benchmark::RegisterBenchmark(Name("while_100", backend, "while").c_str(), [&f, shared](benchmark::State& state) {
    for (auto _ : state) {
      if (!f.stream.ThenSubmit(&shared->loop).BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
    }
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("while_100", backend, "host_loop").c_str(), [&f, shared](benchmark::State& state) {
    std::int32_t value[1] = {0};
    for (auto _ : state) {
      f.stream.ThenMemset32(shared->count.ptr(), kLaunches, 4);
      do {
        f.stream.ThenSubmit(&shared->body).ThenMemcpyD2H(shared->count.cref(), std::span<std::int32_t>(value));
        if (!f.stream.BlockHostUntilDone().ok()) bench::Die(f.stream.status().ToString());
      } while (value[0] != 0);
    }
  })->UseRealTime();
}

template <typename B>
void RegisterUpdates(const std::string& backend, Fixture<B>& f) {
  // One launch of the 100 gets the other memory, then back, in turns.
  auto update = [&f](int turn) {
    se::DeviceMemory<int>* target = turn % 2 == 0 ? f.other.ptr() : f.memory.ptr();
    if (!f.buffer.UpdateLaunch(f.middle, se::ThreadDim(1), se::BlockDim(1), f.kernel, target).ok()) {
      bench::Die("UpdateLaunch");
    }
  };
  auto rerecord = [&f] {
    se::CommandBuffer<B> fresh(f.executor);
    f.Record(fresh);
    if (!fresh.Finalize().ok()) bench::Die(fresh.status().ToString());
  };
  benchmark::RegisterBenchmark(Name("update_1", backend, "update").c_str(), [update](benchmark::State& state) {
    int turn = 0;
    for (auto _ : state) update(turn++);
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("update_1", backend, "rerecord").c_str(), [rerecord](benchmark::State& state) {
    for (auto _ : state) rerecord();
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("update_submit_1", backend, "update").c_str(), [&f,
                                                                                    update](benchmark::State& state) {
    int turn = 0;
    for (auto _ : state) {
      update(turn++);
      if (!f.stream.ThenSubmit(&f.buffer).BlockHostUntilDone().ok()) bench::Die("submit");
    }
  })->UseRealTime();
  benchmark::RegisterBenchmark(Name("update_submit_1", backend, "rerecord").c_str(), [&f](benchmark::State& state) {
    for (auto _ : state) {
      se::CommandBuffer<B> fresh(f.executor);
      f.Record(fresh);
      if (!f.stream.ThenSubmit(&fresh).BlockHostUntilDone().ok()) bench::Die("submit");
    }
  })->UseRealTime();
}

// Prints the ratio of each pair's sides as the runs come in.
class RatioReporter : public bench::PairReporter {
 public:
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const auto& [pair, sides] : times_) {
      if (sides.count("buffer") && sides.count("launches")) {
        std::printf("%s: ThenLaunch x%d / ThenSubmit(buffer) = %.2f\n", pair.c_str(), kLaunches,
                    sides.at("launches") / sides.at("buffer"));
      }
      if (sides.count("while") && sides.count("host_loop")) {
        std::printf("%s: host-driven loop / ThenWhile = %.2f\n", pair.c_str(),
                    sides.at("host_loop") / sides.at("while"));
      }
      if (sides.count("update") && sides.count("rerecord")) {
        std::printf("%s: re-record %d launches / UpdateLaunch = %.1f\n", pair.c_str(), kLaunches,
                    sides.at("rerecord") / sides.at("update"));
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
#ifdef STREAMEXECUTOR_WITH_HOST
  auto* host_executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  Fixture<se::host> host(host_executor);
  Register("host", host);
  RegisterUpdates("host", host);
  RegisterWhile("host", host);
#endif
#ifdef STREAMEXECUTOR_WITH_OPENCL
  auto opencl_executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0);
  std::unique_ptr<Fixture<se::opencl>> opencl;
  if (opencl_executor.ok()) {
    opencl = std::make_unique<Fixture<se::opencl>>(opencl_executor.value());
    Register("opencl", *opencl);
    RegisterUpdates("opencl", *opencl);
    RegisterWhile("opencl", *opencl);
  }
#endif
#ifdef STREAMEXECUTOR_WITH_CUDA
  // The counting driver double on LD_LIBRARY_PATH (no GPU here), or a GPU.
  std::unique_ptr<Fixture<se::cuda>> cuda;
  if (se::Platform<se::cuda>::Get().VisibleDeviceCount() > 0) {
    cuda = std::make_unique<Fixture<se::cuda>>(se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie());
    Register("cuda", *cuda);
    RegisterUpdates("cuda", *cuda);
    // The double runs no kernel: the countdown would never end there.
    if (cuda->executor->GetDeviceDescription().name.find("double") == std::string::npos) RegisterWhile("cuda", *cuda);
  }
#endif
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
}
