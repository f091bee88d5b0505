// Issue 25: an allocate + free pair through a memory pool against the raw
// call doing the same job, 256 B to 64 MiB, in batches of 100 pairs.
//   pool_host/SIZE/{ours,executor,aligned_alloc}
//       ThenAllocate + ThenDeallocate on one host stream (the pool reuses the
//       stream's own block), StreamExecutor::Allocate + Deallocate, and
//       std::aligned_alloc + std::free
//   pool_opencl/SIZE/{ours,raw}
//       the same pair on an OpenCL stream, and clCreateBuffer +
//       clReleaseMemObject on a raw context
//   pool_cuda_double/SIZE/{ours,raw}
//       with the counting driver double as libcuda.so.1 (run.sh puts it on
//       LD_LIBRARY_PATH; skipped without a CUDA device): the driver's pool
//       through ThenAllocate + ThenDeallocate (cuMemAllocFromPoolAsync +
//       cuMemFreeAsync) against cuMemAlloc + cuMemFree. The double's memory is
//       host memory, so this measures the library's cost around the driver
//       calls, not a device allocator.
//   pool_rss/BACKEND/two_streams
//       allocate / fill / free cycles alternating between two streams (sizes
//       256 B .. 64 KiB), two runs of 10^6: the process's resident set (KiB)
//       after 10^4 cycles, after 10^6 and after 2*10^6, and the blocks the
//       pool took from the driver. Both must stay flat (the driver's own
//       caches may grow in the first run).
// Every batch ends when the stream has run its frees. Ratio: raw time / our
// time (higher is better).
#include <streamexecutor/streamexecutor.hpp>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace se = streamexecutor;
using bench::Name;

constexpr int kBatch = 100;
const std::vector<std::size_t> kSizes = {256, 64 << 10, 1 << 20, 64 << 20};

std::string SizeName(std::size_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + "MiB";
  if (bytes >= (1 << 10)) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

void Ok(const se::Status& status) {
  if (!status.ok()) bench::Die(status.ToString());
}

template <typename B>
struct OursPool {
  se::StreamExecutor<B>* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MemoryPool<B> pool{executor};
  se::Stream<B> stream{executor};
  OursPool() { Ok(stream.Init().status()); }

  void Batch(std::size_t bytes) {
    for (int i = 0; i < kBatch; ++i) {
      se::DeviceMemory<std::byte> memory;
      stream.ThenAllocate(bytes, &memory, &pool).ThenDeallocate(&memory);
    }
    Ok(stream.BlockHostUntilDone());
  }
};

template <typename B>
struct OursExecutor {
  se::StreamExecutor<B>* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  void Batch(std::size_t bytes) {
    for (int i = 0; i < kBatch; ++i) {
      se::DeviceMemory<std::byte> memory = executor->template AllocateArray<std::byte>(bytes);
      Ok(executor->Deallocate(&memory));
    }
  }
};

struct AlignedAlloc {
  void Batch(std::size_t bytes) {
    for (int i = 0; i < kBatch; ++i) {
      void* memory = std::aligned_alloc(64, bytes);
      if (memory == nullptr) bench::Die("aligned_alloc");
      benchmark::DoNotOptimize(memory);
      std::free(memory);
    }
  }
};

#if defined(STREAMEXECUTOR_WITH_CUDA)
struct RawCudaAllocations {
  const se::cuda_detail::DriverApi* api;
  explicit RawCudaAllocations(se::StreamExecutor<se::cuda>* executor) : api(executor->native_state().api) {
    if (api->cuCtxSetCurrent(executor->native_state().context) != CUDA_SUCCESS) bench::Die("cuCtxSetCurrent");
  }
  void Batch(std::size_t bytes) {
    for (int i = 0; i < kBatch; ++i) {
      CUdeviceptr memory = 0;
      if (api->cuMemAlloc(&memory, bytes) != CUDA_SUCCESS) bench::Die("cuMemAlloc");
      if (api->cuMemFree(memory) != CUDA_SUCCESS) bench::Die("cuMemFree");
    }
  }
};
#endif

#if defined(STREAMEXECUTOR_WITH_OPENCL)
struct RawBuffers {
  bench::RawOpenCL cl;
  void Batch(std::size_t bytes) {
    for (int i = 0; i < kBatch; ++i) {
      cl_mem buffer = cl.Buffer(bytes);
      bench::Check(clReleaseMemObject(buffer), "clReleaseMemObject");
    }
  }
};
#endif

// The resident set of this process in KiB (/proc/self/status VmRSS).
double ResidentKiB() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 10, '\n');
  }
  return 0;
}

template <typename B>
void TwoStreamCycles(benchmark::State& state) {
  constexpr int kCycles = 1'000'000;
  constexpr int kWarm = 10'000;
  se::StreamExecutor<B>* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MemoryPool<B> pool(executor);
  se::Stream<B> first(executor), second(executor);
  Ok(first.Init().status());
  Ok(second.Init().status());
  double warm_kib = 0;
  std::vector<double> after_runs;
  for (auto _ : state) {
    for (int i = 0; i < kCycles; ++i) {
      se::Stream<B>& stream = i % 2 == 0 ? first : second;
      const std::uint64_t bytes = std::uint64_t{256} << (i % 9);  // 256 B .. 64 KiB
      se::DeviceMemory<std::byte> memory;
      stream.ThenAllocate(bytes, &memory, &pool).ThenMemZero(&memory, 256).ThenDeallocate(&memory);
      if (i % 4096 == 4095) {  // keeps the queues short, as a real program's waits do
        Ok(first.BlockHostUntilDone());
        Ok(second.BlockHostUntilDone());
      }
      if (i == kWarm && after_runs.empty()) warm_kib = ResidentKiB();
    }
    Ok(first.BlockHostUntilDone());
    Ok(second.BlockHostUntilDone());
    after_runs.push_back(ResidentKiB());
  }
  if (after_runs.size() != 2) bench::Die("pool_rss runs exactly two iterations");
  const se::MemoryPoolStatistics statistics = pool.GetStatistics();
  state.counters["rss_after_1e4_kib"] = warm_kib;
  state.counters["rss_after_1e6_kib"] = after_runs[0];
  state.counters["rss_after_2e6_kib"] = after_runs[1];
  state.counters["driver_allocations"] = static_cast<double>(statistics.driver_allocations);
  state.counters["reused"] = static_cast<double>(statistics.reused);
}

template <typename Side>
void Register(const std::string& pair, const std::string& side_name, Side& side) {
  for (std::size_t bytes : kSizes) {
    benchmark::RegisterBenchmark(Name(pair, SizeName(bytes), side_name).c_str(), [&side,
                                                                                  bytes](benchmark::State& state) {
      for (auto _ : state) side.Batch(bytes);
      bench::PerBatch(state, kBatch);
    })->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
#if defined(STREAMEXECUTOR_WITH_HOST)
  OursPool<se::host> host_pool;
  OursExecutor<se::host> host_executor;
  AlignedAlloc aligned;
  Register("pool_host", "ours", host_pool);
  Register("pool_host", "executor", host_executor);
  Register("pool_host", "aligned_alloc", aligned);
  benchmark::RegisterBenchmark("pool_rss/host/two_streams", TwoStreamCycles<se::host>)->Iterations(2)->UseRealTime();
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  OursPool<se::opencl> opencl_pool;
  RawBuffers opencl_raw;
  Register("pool_opencl", "ours", opencl_pool);
  Register("pool_opencl", "raw", opencl_raw);
  benchmark::RegisterBenchmark("pool_rss/opencl/two_streams", TwoStreamCycles<se::opencl>)
      ->Iterations(2)
      ->UseRealTime();
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
  std::unique_ptr<OursPool<se::cuda>> cuda_pool;
  std::unique_ptr<RawCudaAllocations> cuda_raw;
  if (se::Platform<se::cuda>::Get().VisibleDeviceCount() > 0) {
    cuda_pool = std::make_unique<OursPool<se::cuda>>();
    cuda_raw = std::make_unique<RawCudaAllocations>(cuda_pool->executor);
    Register("pool_cuda_double", "ours", *cuda_pool);
    Register("pool_cuda_double", "raw", *cuda_raw);
  }
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
