// All-reduce through the library against MPI_Allreduce itself on the same
// host buffers, 4 KiB to 64 MiB of float, in one run (docs/performance.md):
//
//   mpiexec -n 2 build-bench/benchmarks/collectives_bench
//
//   allreduce/BYTES/ours        ThenAllReduce (sum, in place) + BlockHostUntilDone, host backend
//   allreduce/BYTES/raw         MPI_Allreduce(MPI_IN_PLACE, ...) on the same memory, same ranks
//   allreduce/BYTES/opencl      ThenAllReduce of an OpenCL buffer: the same plus its staging copies
//
// Every rank runs every benchmark with the same fixed iteration count, in the
// same order (MPI collectives must match across ranks: no random
// interleaving); rank 0 reports, with the ratios
// raw / ours (the goal: at least 0.95 from 1 MiB) and ours / opencl (the
// share of an OpenCL all-reduce that is not staging).
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>
#include <map>
#include <memory>
#include <streamexecutor/collectives.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "bench_common.hpp"

namespace se = streamexecutor;

namespace {

// 4 KiB .. 64 MiB, times 4.
std::vector<std::uint64_t> Sizes() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t bytes = 4096; bytes <= (std::uint64_t{64} << 20); bytes *= 4) sizes.push_back(bytes);
  return sizes;
}
int IterationsFor(std::uint64_t bytes) {
  return bytes <= (std::uint64_t{64} << 10) ? 400 : bytes <= (std::uint64_t{4} << 20) ? 60 : 8;
}

template <typename B>
struct Side {
  explicit Side(se::StreamExecutor<B>* e) : executor(e), comm(se::MpiCommunicator(e, MPI_COMM_WORLD)), stream(e) {
    if (!comm.ok()) bench::Die(comm.status().ToString());
    stream.Init();
  }
  void Register(const std::string& side) {
    for (const std::uint64_t bytes : Sizes()) {
      auto memory = std::make_shared<se::ScopedDeviceMemory<float>>(
          executor->template AllocateOwnedArray<float>(bytes / sizeof(float)));
      if (!executor->SynchronousMemZero(memory->ptr(), bytes).ok()) bench::Die("MemZero");
      benchmark::RegisterBenchmark(bench::Name("allreduce", std::to_string(bytes), side).c_str(),
                                   [this, memory, bytes](benchmark::State& state) {
                                     for (auto _ : state) {
                                       stream.ThenAllReduce(comm, memory->cref(), memory->ptr(), se::ReduceOp::kSum);
                                       if (!stream.BlockHostUntilDone().ok()) bench::Die(stream.status().ToString());
                                     }
                                     state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
                                   })
          ->Iterations(IterationsFor(bytes))
          ->UseRealTime();
    }
  }
  se::StreamExecutor<B>* executor;
  se::Communicator<B> comm;
  se::Stream<B> stream;
};

void RegisterRaw() {
  for (const std::uint64_t bytes : Sizes()) {
    auto memory = std::make_shared<std::vector<float>>(bytes / sizeof(float), 0.0f);
    benchmark::RegisterBenchmark(bench::Name("allreduce", std::to_string(bytes), "raw").c_str(),
                                 [memory, bytes](benchmark::State& state) {
                                   for (auto _ : state) {
                                     MPI_Allreduce(MPI_IN_PLACE, memory->data(), static_cast<int>(memory->size()),
                                                   MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                                   }
                                   state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
                                 })
        ->Iterations(IterationsFor(bytes))
        ->UseRealTime();
  }
}

class Reporter : public bench::PairReporter {
 public:
  void Finalize() override {
    ConsoleReporter::Finalize();
    for (const auto& [pair, sides] : times_) {
      if (sides.count("ours") && sides.count("raw")) {
        std::printf("%s: raw MPI_Allreduce / ThenAllReduce = %.3f", pair.c_str(), sides.at("raw") / sides.at("ours"));
        if (sides.count("opencl"))
          std::printf(", host / OpenCL (staged) = %.3f", sides.at("ours") / sides.at("opencl"));
        std::printf("\n");
      }
    }
  }
};

class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // One rank writes --benchmark_out's file; the others would write the same file.
  if (rank != 0) {
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]).rfind("--benchmark_out", 0) != 0) argv[kept++] = argv[i];
    }
    argc = kept;
  }
  benchmark::Initialize(&argc, argv);
  {
    std::unique_ptr<Side<se::host>> host;
    host = std::make_unique<Side<se::host>>(se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie());
    host->Register("ours");
    RegisterRaw();
#if defined(STREAMEXECUTOR_WITH_OPENCL)
    std::unique_ptr<Side<se::opencl>> opencl;
    // Every rank must register the same benchmarks: OpenCL on all or none.
    int have = se::Platform<se::opencl>::Get().VisibleDeviceCount() > 0 ? 1 : 0, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all == 1) {
      opencl = std::make_unique<Side<se::opencl>>(se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie());
      opencl->Register("opencl");
    }
#endif
    if (rank == 0) {
      Reporter reporter;
      benchmark::RunSpecifiedBenchmarks(&reporter);
    } else {
      Silent silent;
      benchmark::RunSpecifiedBenchmarks(&silent);
    }
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
