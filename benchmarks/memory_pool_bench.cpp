// Issue 25: an allocate + free pair through a memory pool against the raw
// call doing the same job, 256 B to 64 MiB, in batches of 100 pairs.
//   pool_host/SIZE/{ours,executor,aligned_alloc}
//       ThenAllocate + ThenDeallocate on one host stream (the pool reuses the
//       stream's own block), StreamExecutor::Allocate + Deallocate, and
//       std::aligned_alloc + std::free
//   pool_opencl/SIZE/{ours,raw}
//       the same pair on an OpenCL stream, and clCreateBuffer +
//       clReleaseMemObject on a raw context
// Every batch ends when the stream has run its frees, so that ours pays for
// the event each free records. Ratio: raw time / our time (higher is better).
#include <streamexecutor/streamexecutor.hpp>

#include <cstdlib>
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
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  OursPool<se::opencl> opencl_pool;
  RawBuffers opencl_raw;
  Register("pool_opencl", "ours", opencl_pool);
  Register("pool_opencl", "raw", opencl_raw);
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
