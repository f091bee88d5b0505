// Issue 24: host kernels with a block barrier (host/cooperative.hpp), against
// the same kernels written with OpenMP, in one process (docs/performance.md,
// "Issue 24: host block barrier").
//   fiber_switch/round_trip/{ours,ucontext}  into a suspended fiber and back:
//       Boost.Context's fiber (what cooperative.hpp uses) against glibc's
//       swapcontext, which also saves and restores the signal mask (a system
//       call each way)
//   barrier/<T>/{ours,omp_barrier}  one block of T threads doing K barriers
//       and nothing else; reported per thread and barrier (time / (T*K)).
//       omp_barrier: a parallel region of T OpenMP threads doing K
//       `#pragma omp barrier`: the kernel's threads as OS threads
//   barrier/<T>/omp_cores  K barriers of one OpenMP thread per core: what an
//       OpenMP barrier costs where OpenMP is at home
//   block_reduction/<case>/...  the reduction of docs/host.md: each block of 256
//       threads sums its 256 floats through shared memory, halving the stride
//       with a barrier after each step (9 barriers)
//   tiled_matmul/<n>/...  C = A * B, n x n, through 16 x 16 tiles in shared
//       memory, two barriers per tile step
//   Sides of the kernel pairs: ours (a cooperative kernel: ctx.SyncThreads());
//   omp_barrier (per block, `#pragma omp parallel num_threads(block size)`
//   with `#pragma omp barrier`: the same kernel, line for line; blocks one
//   after another, as OpenMP has no cheaper way to run 256 threads that
//   wait for each other); omp_loops (`#pragma omp parallel for` over blocks,
//   each barrier a loop boundary: the form an OpenMP programmer writes, and
//   what a per-block kernel (BlockContext) does); ours_block (that per-block
//   form as a host kernel). omp_barrier runs on fewer blocks (its own case
//   name): at about a millisecond per barrier it would take minutes.
#include <streamexecutor/host.hpp>

#include <ucontext.h>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <boost/context/fiber.hpp>

#include "bench_common.hpp"

namespace {

namespace se = streamexecutor;
using bench::Name;

se::StreamExecutor<se::host>* Executor() {
  static auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  return executor;
}

int Cores() {
  static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores;
}

void Sync(se::Stream<se::host>& stream) {
  if (!stream.BlockHostUntilDone().ok()) bench::Die("BlockHostUntilDone");
}

// ---- Fiber switches ----------------------------------------------------------

void SwitchBoost(benchmark::State& state) {
  bool stop = false;
  boost::context::fiber fiber{[&stop](boost::context::fiber&& caller) {
    while (!stop) caller = std::move(caller).resume();
    return std::move(caller);
  }};
  for (auto _ : state) fiber = std::move(fiber).resume();
  stop = true;
  fiber = std::move(fiber).resume();
}

ucontext_t main_context, fiber_context;
void UcontextLoop() {
  for (;;) swapcontext(&fiber_context, &main_context);
}
void SwitchUcontext(benchmark::State& state) {
  std::vector<char> stack(64 << 10);
  getcontext(&fiber_context);
  fiber_context.uc_stack.ss_sp = stack.data();
  fiber_context.uc_stack.ss_size = stack.size();
  fiber_context.uc_link = nullptr;
  makecontext(&fiber_context, &UcontextLoop, 0);
  for (auto _ : state) swapcontext(&main_context, &fiber_context);
}

// ---- K barriers and nothing else ---------------------------------------------

void barriers_only(const se::host::CooperativeContext& ctx, std::uint32_t k) {
  for (std::uint32_t i = 0; i < k; ++i) ctx.SyncThreads();
}

void BarrierOurs(benchmark::State& state, std::uint32_t threads, std::uint32_t k) {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&barriers_only>("barriers_only");
  se::TypedKernel<std::uint32_t> kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel(barriers_only)");
  se::Stream stream(executor);
  stream.Init();
  for (auto _ : state) {
    stream.ThenLaunch(se::ThreadDim(threads), se::BlockDim(1), kernel, k);
    Sync(stream);
  }
  bench::PerBatch(state, static_cast<int>(threads * k));
}

void BarrierOpenMP(benchmark::State& state, int threads, std::uint32_t k) {
  for (auto _ : state) {
#pragma omp parallel num_threads(threads)
    for (std::uint32_t i = 0; i < k; ++i) {
#pragma omp barrier
    }
  }
  bench::PerBatch(state, static_cast<int>(static_cast<std::uint32_t>(threads) * k));
}

// ---- Block reduction -----------------------------------------------------------

constexpr std::uint32_t kReduceThreads = 256;

void reduce_ours(const se::host::CooperativeContext& ctx, const float* in, float* out, std::span<float> sh) {
  const std::uint64_t t = ctx.threadIdx.x;
  sh[t] = in[ctx.blockIdx.x * ctx.blockDim.x + t];
  ctx.SyncThreads();
  for (std::uint64_t stride = ctx.blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) sh[t] += sh[t + stride];
    ctx.SyncThreads();
  }
  if (t == 0) out[ctx.blockIdx.x] = sh[0];
}

// The same steps, the block's threads as loops between the barriers.
inline void ReduceBlockLoops(const float* in, float* out, std::uint64_t block, std::uint64_t threads, float* sh) {
  for (std::uint64_t t = 0; t < threads; ++t) sh[t] = in[block * threads + t];
  for (std::uint64_t stride = threads / 2; stride > 0; stride /= 2) {
    for (std::uint64_t t = 0; t < stride; ++t) sh[t] += sh[t + stride];
  }
  out[block] = sh[0];
}

void reduce_block(const se::host::BlockContext& ctx, const float* in, float* out, std::span<float> sh) {
  ReduceBlockLoops(in, out, ctx.blockIdx.x, ctx.blockDim.x, sh.data());
}

struct ReduceData {
  explicit ReduceData(std::uint32_t blocks)
      : blocks(blocks),
        host_in(std::size_t{blocks} * kReduceThreads, 1.0f),
        host_out(blocks),
        in(Executor()->AllocateOwnedArray<float>(host_in.size())),
        out(Executor()->AllocateOwnedArray<float>(blocks)) {
    if (!Executor()->SynchronousMemcpyH2D<float>(host_in, in.ptr()).ok()) bench::Die("reduce upload");
  }
  void Check(const float* result) const {
    for (std::uint32_t b = 0; b < blocks; ++b) {
      if (result[b] != static_cast<float>(kReduceThreads)) bench::Die("block reduction gave a wrong sum");
    }
  }
  std::uint32_t blocks;
  std::vector<float> host_in, host_out;
  se::ScopedDeviceMemory<float> in, out;
};

template <auto Kernel>
void ReduceOurs(benchmark::State& state, std::uint32_t blocks) {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<Kernel>("reduce");
  se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>> kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel(reduce)");
  ReduceData data(blocks);
  se::Stream stream(executor);
  stream.Init();
  for (auto _ : state) {
    stream.ThenLaunch(se::ThreadDim(kReduceThreads), se::BlockDim(blocks), kernel, data.in.ptr(), data.out.ptr(),
                      se::SharedDeviceMemory<float>(kReduceThreads));
    Sync(stream);
  }
  if (!executor->SynchronousMemcpyD2H<float>(data.out.cref(), data.host_out).ok()) bench::Die("reduce download");
  data.Check(data.host_out.data());
}

void ReduceOpenMPBarrier(benchmark::State& state, std::uint32_t blocks) {
  ReduceData data(blocks);
  const float* in = data.host_in.data();
  float* out = data.host_out.data();
  std::vector<float> shared(kReduceThreads);
  float* sh = shared.data();
  for (auto _ : state) {
    for (std::uint32_t b = 0; b < blocks; ++b) {
#pragma omp parallel num_threads(kReduceThreads)
      {
        const auto t = static_cast<std::uint32_t>(omp_get_thread_num());
        sh[t] = in[b * kReduceThreads + t];
#pragma omp barrier
        for (std::uint32_t stride = kReduceThreads / 2; stride > 0; stride /= 2) {
          if (t < stride) sh[t] += sh[t + stride];
#pragma omp barrier
        }
        if (t == 0) out[b] = sh[0];
      }
    }
  }
  data.Check(out);
}

void ReduceOpenMPLoops(benchmark::State& state, std::uint32_t blocks) {
  ReduceData data(blocks);
  const float* in = data.host_in.data();
  float* out = data.host_out.data();
  const int cores = Cores();
  for (auto _ : state) {
#pragma omp parallel for num_threads(cores)
    for (std::uint32_t b = 0; b < blocks; ++b) {
      float sh[kReduceThreads];
      ReduceBlockLoops(in, out, b, kReduceThreads, sh);
    }
  }
  data.Check(out);
}

// ---- Tiled matrix multiply -----------------------------------------------------

constexpr std::uint32_t kTile = 16;

void matmul_ours(const se::host::CooperativeContext& ctx, const float* a, const float* b, float* c, std::uint32_t n,
                 std::span<float> tile_a, std::span<float> tile_b) {
  const std::uint64_t tx = ctx.threadIdx.x, ty = ctx.threadIdx.y;
  const std::uint64_t row = ctx.blockIdx.y * kTile + ty, col = ctx.blockIdx.x * kTile + tx;
  float sum = 0.0f;
  for (std::uint64_t t0 = 0; t0 < n; t0 += kTile) {
    tile_a[ty * kTile + tx] = a[row * n + t0 + tx];
    tile_b[ty * kTile + tx] = b[(t0 + ty) * n + col];
    ctx.SyncThreads();
    for (std::uint64_t i = 0; i < kTile; ++i) sum += tile_a[ty * kTile + i] * tile_b[i * kTile + tx];
    ctx.SyncThreads();
  }
  c[row * n + col] = sum;
}

// One tile of C, the tile's threads as loops between the barriers.
inline void MatmulTileLoops(const float* a, const float* b, float* c, std::uint32_t n, std::uint64_t bx,
                            std::uint64_t by) {
  float tile_a[kTile * kTile], tile_b[kTile * kTile], sum[kTile * kTile] = {};
  for (std::uint64_t t0 = 0; t0 < n; t0 += kTile) {
    for (std::uint64_t ty = 0; ty < kTile; ++ty) {
      for (std::uint64_t tx = 0; tx < kTile; ++tx) {
        tile_a[ty * kTile + tx] = a[(by * kTile + ty) * n + t0 + tx];
        tile_b[ty * kTile + tx] = b[(t0 + ty) * n + bx * kTile + tx];
      }
    }
    for (std::uint64_t ty = 0; ty < kTile; ++ty) {
      for (std::uint64_t tx = 0; tx < kTile; ++tx) {
        for (std::uint64_t i = 0; i < kTile; ++i)
          sum[ty * kTile + tx] += tile_a[ty * kTile + i] * tile_b[i * kTile + tx];
      }
    }
  }
  for (std::uint64_t ty = 0; ty < kTile; ++ty) {
    for (std::uint64_t tx = 0; tx < kTile; ++tx) c[(by * kTile + ty) * n + bx * kTile + tx] = sum[ty * kTile + tx];
  }
}

void matmul_block(const se::host::BlockContext& ctx, const float* a, const float* b, float* c, std::uint32_t n,
                  std::span<float>, std::span<float>) {
  MatmulTileLoops(a, b, c, n, ctx.blockIdx.x, ctx.blockIdx.y);
}

struct MatmulData {
  explicit MatmulData(std::uint32_t size)
      : n(size),
        ha(std::size_t{n} * n),
        hb(ha.size()),
        hc(ha.size()),
        expected(ha.size(), 0.0f),
        a(Executor()->AllocateOwnedArray<float>(ha.size())),
        b(Executor()->AllocateOwnedArray<float>(ha.size())),
        c(Executor()->AllocateOwnedArray<float>(ha.size())) {
    for (std::size_t i = 0; i < ha.size(); ++i) {
      ha[i] = static_cast<float>(i % 7) - 3.0f;
      hb[i] = static_cast<float>(i % 5) - 2.0f;
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      for (std::uint32_t k = 0; k < n; ++k) {
        for (std::uint32_t col = 0; col < n; ++col) expected[r * n + col] += ha[r * n + k] * hb[k * n + col];
      }
    }
    if (!Executor()->SynchronousMemcpyH2D<float>(ha, a.ptr()).ok() ||
        !Executor()->SynchronousMemcpyH2D<float>(hb, b.ptr()).ok()) {
      bench::Die("matmul upload");
    }
  }
  // Small integers: every sum is exact whatever the order.
  void Check(const std::vector<float>& result) const {
    if (result != expected) bench::Die("tiled matmul gave a wrong product");
  }
  std::uint32_t n;
  std::vector<float> ha, hb, hc, expected;
  se::ScopedDeviceMemory<float> a, b, c;
};

template <auto Kernel>
void MatmulOurs(benchmark::State& state, std::uint32_t n) {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(6);
  spec.AddHostKernel<Kernel>("matmul");
  se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t,
                  se::SharedDeviceMemory<float>, se::SharedDeviceMemory<float>>
      kernel(executor);
  if (!executor->GetKernel(spec, &kernel).ok()) bench::Die("GetKernel(matmul)");
  MatmulData data(n);
  se::Stream stream(executor);
  stream.Init();
  for (auto _ : state) {
    stream.ThenLaunch(se::ThreadDim(kTile, kTile), se::BlockDim(n / kTile, n / kTile), kernel, data.a.ptr(),
                      data.b.ptr(), data.c.ptr(), n, se::SharedDeviceMemory<float>(kTile * kTile),
                      se::SharedDeviceMemory<float>(kTile * kTile));
    Sync(stream);
  }
  if (!executor->SynchronousMemcpyD2H<float>(data.c.cref(), data.hc).ok()) bench::Die("matmul download");
  data.Check(data.hc);
}

void MatmulOpenMPBarrier(benchmark::State& state, std::uint32_t n) {
  MatmulData data(n);
  const float* a = data.ha.data();
  const float* b = data.hb.data();
  float* c = data.hc.data();
  float tile_a[kTile * kTile], tile_b[kTile * kTile];
  for (auto _ : state) {
    for (std::uint32_t by = 0; by < n / kTile; ++by) {
      for (std::uint32_t bx = 0; bx < n / kTile; ++bx) {
#pragma omp parallel num_threads(kTile* kTile)
        {
          const auto t = static_cast<std::uint32_t>(omp_get_thread_num());
          const std::uint32_t tx = t % kTile, ty = t / kTile;
          const std::uint32_t row = by * kTile + ty, col = bx * kTile + tx;
          float sum = 0.0f;
          for (std::uint32_t t0 = 0; t0 < n; t0 += kTile) {
            tile_a[ty * kTile + tx] = a[row * n + t0 + tx];
            tile_b[ty * kTile + tx] = b[(t0 + ty) * n + col];
#pragma omp barrier
            for (std::uint32_t i = 0; i < kTile; ++i) sum += tile_a[ty * kTile + i] * tile_b[i * kTile + tx];
#pragma omp barrier
          }
          c[row * n + col] = sum;
        }
      }
    }
  }
  data.Check(data.hc);
}

void MatmulOpenMPLoops(benchmark::State& state, std::uint32_t n) {
  MatmulData data(n);
  const float* a = data.ha.data();
  const float* b = data.hb.data();
  float* c = data.hc.data();
  const int cores = Cores();
  const std::uint32_t tiles = n / kTile;
  for (auto _ : state) {
#pragma omp parallel for num_threads(cores)
    for (std::uint32_t tile = 0; tile < tiles * tiles; ++tile) MatmulTileLoops(a, b, c, n, tile % tiles, tile / tiles);
  }
  data.Check(data.hc);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RegisterBenchmark(Name("fiber_switch", "round_trip", "ours").c_str(), SwitchBoost);
  benchmark::RegisterBenchmark(Name("fiber_switch", "round_trip", "ucontext").c_str(), SwitchUcontext);

  for (std::uint32_t threads : {256u, 1024u}) {
    const std::string name = std::to_string(threads);
    benchmark::RegisterBenchmark(Name("barrier", name, "ours").c_str(), BarrierOurs, threads, 1000u)->UseRealTime();
    // K = 20: each of these barriers takes the OS about a millisecond.
    benchmark::RegisterBenchmark(Name("barrier", name, "omp_barrier").c_str(), BarrierOpenMP, static_cast<int>(threads),
                                 20u)
        ->UseRealTime();
    benchmark::RegisterBenchmark(Name("barrier", name, "omp_cores").c_str(), BarrierOpenMP, Cores(), 1000u)
        ->UseRealTime();
  }

  constexpr std::uint32_t kBlocks = 1024, kFewBlocks = 16;
  const std::string many = "1024x256", few = "16x256";
  benchmark::RegisterBenchmark(Name("block_reduction", many, "ours").c_str(), ReduceOurs<&reduce_ours>, kBlocks)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("block_reduction", many, "ours_block").c_str(), ReduceOurs<&reduce_block>, kBlocks)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("block_reduction", many, "omp_loops").c_str(), ReduceOpenMPLoops, kBlocks)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("block_reduction", few, "ours").c_str(), ReduceOurs<&reduce_ours>, kFewBlocks)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("block_reduction", few, "omp_barrier").c_str(), ReduceOpenMPBarrier, kFewBlocks)
      ->UseRealTime();

  benchmark::RegisterBenchmark(Name("tiled_matmul", "256", "ours").c_str(), MatmulOurs<&matmul_ours>, 256u)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("tiled_matmul", "256", "ours_block").c_str(), MatmulOurs<&matmul_block>, 256u)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("tiled_matmul", "256", "omp_loops").c_str(), MatmulOpenMPLoops, 256u)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("tiled_matmul", "32", "ours").c_str(), MatmulOurs<&matmul_ours>, 32u)
      ->UseRealTime();
  benchmark::RegisterBenchmark(Name("tiled_matmul", "32", "omp_barrier").c_str(), MatmulOpenMPBarrier, 32u)
      ->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
