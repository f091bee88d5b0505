// sgemm through the canned BLAS plugin against the same library called
// directly, in one process (docs/blas.md):
//   sgemm_host/N/{ours,openblas}    Stream::ThenBlasGemm + BlockHostUntilDone vs cblas_sgemm
//   sgemm_opencl/N/{ours,clblast}   the same on PoCL vs clblast::Gemm + clFinish on a raw queue
// Square column-major n x n, C = A B. Each iteration is one gemm, timed by
// hand (UseManualTime); the GFLOP/s counter is 2 n^3 / time. At exit the
// program prints, per size, the best iteration of each side and their ratio
// (direct time / ours: 1.00 means no overhead), then runs paired rounds (one
// gemm of each side back to back, alternating which goes first) and prints
// the median of the rounds' ratios: on a shared machine, the figure least
// moved by other load, and the one the docs quote.
//
//   SE_BLAS_BENCH_MAX_N=4096 SE_BLAS_BENCH_MAX_N_OPENCL=2048 SE_BLAS_BENCH_ROUNDS=7 build-blas/benchmarks/blas_bench
#include <streamexecutor/blas.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"

#if defined(STREAMEXECUTOR_BLAS_WITH_OPENBLAS)
#include <cblas.h>
#endif
#if defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST)
#include <clblast.h>
#endif

namespace se = streamexecutor;
using se::blas::Transpose;

namespace {

// Best seconds per gemm of each (pair, n, side), for the summary.
std::map<std::pair<std::string, int>, std::map<std::string, double>>& Best() {
  static std::map<std::pair<std::string, int>, std::map<std::string, double>> best;
  return best;
}

// Runs `gemm()` once per iteration, timing it, and records the best time.
template <typename Gemm>
void Measure(benchmark::State& state, const std::string& pair, const std::string& side, int n, Gemm&& gemm) {
  gemm();  // warm-up: first-use costs (library state, kernel compilation) are not what is measured
  double best = 1e30;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    gemm();
    const double seconds = bench::Seconds(start);
    state.SetIterationTime(seconds);
    best = std::min(best, seconds);
  }
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  double& recorded = Best()[{pair, n}].try_emplace(side, 1e30).first->second;
  recorded = std::min(recorded, best);
}

std::vector<float> Matrix(int n, int seed) {
  std::vector<float> m(static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < m.size(); ++i) {
    m[i] = static_cast<float>((i * 7 + static_cast<std::size_t>(seed)) % 11) / 11.0f;
  }
  return m;
}

// Fewer iterations for the big sizes: a 4096 sgemm takes seconds on two cores.
void Shape(benchmark::internal::Benchmark* b, int n) {
  b->UseManualTime()->Unit(benchmark::kMillisecond);
  if (n >= 2048) b->Iterations(n >= 4096 ? 2 : 4);
}

// Paired rounds: each round times one gemm of each side back to back, in
// alternating order, so that a burst of other load hits both sides of the
// round; the ratio is the median of the rounds' ratios.
struct Rounds {
  double ours;    // median seconds
  double direct;  // median seconds
  double ratio;   // median of direct / ours per round
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename OursSide, typename DirectSide>
Rounds RunRounds(int rounds, OursSide& ours, DirectSide& direct) {
  ours();  // warm-up of both
  direct();
  std::vector<double> ours_times, direct_times, ratios;
  for (int round = 0; round < rounds; ++round) {
    double t_ours = 0, t_direct = 0;
    for (int side = 0; side < 2; ++side) {
      const bool ours_now = (side == 0) == (round % 2 == 0);
      const auto start = std::chrono::steady_clock::now();
      if (ours_now) {
        ours();
        t_ours = bench::Seconds(start);
      } else {
        direct();
        t_direct = bench::Seconds(start);
      }
    }
    ours_times.push_back(t_ours);
    direct_times.push_back(t_direct);
    ratios.push_back(t_direct / t_ours);
  }
  return Rounds{Median(ours_times), Median(direct_times), Median(ratios)};
}

struct PairedCase {
  std::string pair;
  int n;
  std::function<Rounds()> run;
};

std::vector<PairedCase>& Paired() {
  static std::vector<PairedCase> cases;
  return cases;
}

std::uint64_t Elements(int n) { return static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n); }

template <typename B>
struct Ours {
  se::StreamExecutor<B>* executor;
  se::ScopedDeviceMemory<float> a, b, c;
  se::Stream<B> stream;
  int n;

  explicit Ours(int size)
      : executor(se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie()),
        a(executor->template AllocateOwnedArray<float>(Elements(size))),
        b(executor->template AllocateOwnedArray<float>(Elements(size))),
        c(executor->template AllocateOwnedArray<float>(Elements(size))),
        stream(executor),
        n(size) {
    if (!a.ok() || !b.ok() || !c.ok()) bench::Die("allocating the gemm operands");
    std::vector<float> ha = Matrix(n, 1), hb = Matrix(n, 2);
    if (!executor->SynchronousMemcpyH2D(std::span<const float>(ha), a.ptr()).ok() ||
        !executor->SynchronousMemcpyH2D(std::span<const float>(hb), b.ptr()).ok()) {
      bench::Die("uploading the gemm operands");
    }
    stream.Init();
  }
  void operator()() {
    se::Status s = stream
                       .ThenBlasGemm(Transpose::kNoTranspose, Transpose::kNoTranspose, n, n, n, 1.0f, a.cref(), n,
                                     b.cref(), n, 0.0f, c.ptr(), n)
                       .BlockHostUntilDone();
    if (!s.ok()) bench::Die(s.ToString());
  }
};

#if defined(STREAMEXECUTOR_WITH_HOST) && defined(STREAMEXECUTOR_BLAS_WITH_OPENBLAS)
struct OpenBlasDirect {
  int n;
  std::vector<float> a, b, c;

  explicit OpenBlasDirect(int size) : n(size), a(Matrix(n, 1)), b(Matrix(n, 2)), c(a.size()) {}
  void operator()() {
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  }
};
#endif

#if defined(STREAMEXECUTOR_WITH_OPENCL) && defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST)
// CLBlast on a context and queue of its own, as a program without this
// library would use it.
struct ClBlastDirect {
  int n;
  bench::RawOpenCL raw;
  cl_mem a = nullptr, b = nullptr, c = nullptr;

  explicit ClBlastDirect(int size) : n(size) {
    const std::size_t bytes = Size() * Size() * sizeof(float);
    a = raw.Buffer(bytes);
    b = raw.Buffer(bytes);
    c = raw.Buffer(bytes);
    std::vector<float> ha = Matrix(n, 1), hb = Matrix(n, 2);
    bench::Check(clEnqueueWriteBuffer(raw.queue, a, CL_TRUE, 0, bytes, ha.data(), 0, nullptr, nullptr),
                 "clEnqueueWriteBuffer");
    bench::Check(clEnqueueWriteBuffer(raw.queue, b, CL_TRUE, 0, bytes, hb.data(), 0, nullptr, nullptr),
                 "clEnqueueWriteBuffer");
  }
  ClBlastDirect(const ClBlastDirect&) = delete;
  ClBlastDirect& operator=(const ClBlastDirect&) = delete;
  ~ClBlastDirect() {
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
  }
  std::size_t Size() const { return static_cast<std::size_t>(n); }
  void operator()() {
    const clblast::StatusCode code =
        clblast::Gemm<float>(clblast::Layout::kColMajor, clblast::Transpose::kNo, clblast::Transpose::kNo, Size(),
                             Size(), Size(), 1.0f, a, 0, Size(), b, 0, Size(), 0.0f, c, 0, Size(), &raw.queue, nullptr);
    if (code != clblast::StatusCode::kSuccess) bench::Die("clblast::Gemm " + std::to_string(static_cast<int>(code)));
    bench::Check(clFinish(raw.queue), "clFinish");
  }
};
#endif

int EnvInt(const char* variable, int fallback) {
  const char* value = std::getenv(variable);
  return value != nullptr ? std::atoi(value) : fallback;
}

// Registers the pair for every n, and remembers how to build both sides for
// the paired rounds of the summary.
template <typename OursSide, typename DirectSide>
void RegisterPair(const std::string& pair, const std::string& direct_name, int max_n) {
  for (int n = 256; n <= max_n; n *= 2) {
    Shape(benchmark::RegisterBenchmark(bench::Name(pair, std::to_string(n), "ours").c_str(),
                                       [pair, n](benchmark::State& state) {
                                         OursSide ours(n);
                                         Measure(state, pair, "ours", n, ours);
                                       }),
          n);
    Shape(benchmark::RegisterBenchmark(bench::Name(pair, std::to_string(n), direct_name).c_str(),
                                       [pair, direct_name, n](benchmark::State& state) {
                                         DirectSide direct(n);
                                         Measure(state, pair, direct_name, n, direct);
                                       }),
          n);
    Paired().push_back({pair, n, [n] {
                          OursSide ours(n);
                          DirectSide direct(n);
                          return RunRounds(std::max(1, EnvInt("SE_BLAS_BENCH_ROUNDS", 7)), ours, direct);
                        }});
  }
}

void RegisterAll() {
#if defined(STREAMEXECUTOR_WITH_HOST) && defined(STREAMEXECUTOR_BLAS_WITH_OPENBLAS)
  RegisterPair<Ours<se::host>, OpenBlasDirect>("sgemm_host", "openblas", EnvInt("SE_BLAS_BENCH_MAX_N", 4096));
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL) && defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST)
  RegisterPair<Ours<se::opencl>, ClBlastDirect>("sgemm_opencl", "clblast", EnvInt("SE_BLAS_BENCH_MAX_N_OPENCL", 2048));
#endif
}

void PrintSummary() {
  std::printf("\nbest iteration of each side (Google Benchmark runs above):\n");
  std::printf("%-14s %6s %12s %12s %14s %14s %7s\n", "pair", "n", "ours (ms)", "direct (ms)", "ours GFLOP/s",
              "direct GFLOP/s", "ratio");
  for (const auto& [key, sides] : Best()) {
    const auto ours = sides.find("ours");
    const auto direct = std::find_if(sides.begin(), sides.end(), [](const auto& side) { return side.first != "ours"; });
    if (ours == sides.end() || direct == sides.end()) continue;
    const double flops = 2.0 * key.second * static_cast<double>(key.second) * key.second;
    std::printf("%-14s %6d %12.3f %12.3f %14.1f %14.1f %7.3f\n", key.first.c_str(), key.second, ours->second * 1e3,
                direct->second * 1e3, flops / ours->second * 1e-9, flops / direct->second * 1e-9,
                direct->second / ours->second);
  }
  const int rounds = EnvInt("SE_BLAS_BENCH_ROUNDS", 7);
  if (rounds <= 0) return;
  std::printf("\npaired rounds (one gemm of each side per round, order alternating; medians of %d rounds):\n", rounds);
  std::printf("%-14s %6s %12s %12s %14s %7s\n", "pair", "n", "ours (ms)", "direct (ms)", "ours GFLOP/s", "ratio");
  for (const PairedCase& paired : Paired()) {
    const Rounds r = paired.run();
    const double flops = 2.0 * paired.n * static_cast<double>(paired.n) * paired.n;
    std::printf("%-14s %6d %12.3f %12.3f %14.1f %7.3f\n", paired.pair.c_str(), paired.n, r.ours * 1e3, r.direct * 1e3,
                flops / r.ours * 1e-9, r.ratio);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintSummary();
  return 0;
}
