// Host kernels with a block barrier (se::host::CooperativeContext,
// ctx.SyncThreads()): the same kernel logic as on CUDA and OpenCL gives the
// same results, a thread that throws between barriers fails the stream without
// a hang, and every launch form reaches the cooperative runner.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include <streamexecutor/host.hpp>

namespace se = streamexecutor;

namespace {

se::StreamExecutor<se::host>* Executor() { return se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(); }

bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

// The reduction: every thread writes sh[t], then the stride halves.
// Without a barrier a thread would read its partner's slot before it is written.
void block_sum(const se::host::CooperativeContext& ctx, const float* in, float* out, std::span<float> sh) {
  const std::uint64_t t = ctx.threadIdx.x;
  sh[t] = in[ctx.blockIdx.x * ctx.blockDim.x + t];
  ctx.SyncThreads();
  for (std::uint64_t stride = ctx.blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) sh[t] += sh[t + stride];
    ctx.SyncThreads();
  }
  if (t == 0) out[ctx.blockIdx.x] = sh[0];
}
using BlockSumKernel =
    se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>>;

BlockSumKernel LoadBlockSum(se::StreamExecutor<se::host>* executor) {
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<&block_sum>("block_sum");
  BlockSumKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  return kernel;
}

// Sums `blocks` blocks of `threads` ones (block b's inputs are b + 1).
std::vector<float> RunBlockSum(se::Stream<se::host>& stream, const BlockSumKernel& kernel, std::uint64_t threads,
                               std::uint64_t blocks) {
  auto* executor = Executor();
  std::vector<float> in(threads * blocks), out(blocks, -1.0f);
  for (std::uint64_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i / threads + 1);
  auto device_in = executor->AllocateOwnedArray<float>(in.size());
  auto device_out = executor->AllocateOwnedArray<float>(blocks);
  REQUIRE(stream.ThenMemcpyH2D<float>(in, device_in.ptr())
              .ThenLaunch(se::ThreadDim(threads), se::BlockDim(blocks), kernel, device_in.ptr(), device_out.ptr(),
                          se::SharedDeviceMemory<float>(threads))
              .ThenMemcpyD2H<float>(device_out.cref(), out)
              .BlockHostUntilDone()
              .ok());
  return out;
}

constexpr std::uint64_t kTile = 16;

// C (m x n) = A (m x k) * B (k x n), row-major, through kTile x kTile tiles of
// A and B in shared memory; the edges load zeros, as a CUDA tiled gemm does.
void tiled_matmul(const se::host::CooperativeContext& ctx, const float* a, const float* b, float* c, std::uint32_t m,
                  std::uint32_t n, std::uint32_t k, std::span<float> tile_a, std::span<float> tile_b) {
  const std::uint64_t tx = ctx.threadIdx.x, ty = ctx.threadIdx.y;
  const std::uint64_t row = ctx.blockIdx.y * kTile + ty, col = ctx.blockIdx.x * kTile + tx;
  float sum = 0.0f;
  for (std::uint64_t t0 = 0; t0 < k; t0 += kTile) {
    tile_a[ty * kTile + tx] = row < m && t0 + tx < k ? a[row * k + t0 + tx] : 0.0f;
    tile_b[ty * kTile + tx] = t0 + ty < k && col < n ? b[(t0 + ty) * n + col] : 0.0f;
    ctx.SyncThreads();
    for (std::uint64_t i = 0; i < kTile; ++i) sum += tile_a[ty * kTile + i] * tile_b[i * kTile + tx];
    ctx.SyncThreads();
  }
  if (row < m && col < n) c[row * n + col] = sum;
}

// Each round, every thread takes its right neighbour's value: after `rounds`
// rounds, slot t holds what slot (t + rounds) % n held. Two barriers a round.
void rotate(const se::host::CooperativeContext& ctx, int* data, std::uint32_t rounds, std::span<int> sh) {
  const std::uint64_t t = ctx.threadIdx.x, n = ctx.blockDim.x;
  int* block = data + ctx.blockIdx.x * n;
  sh[t] = block[t];
  ctx.SyncThreads();
  for (std::uint32_t r = 0; r < rounds; ++r) {
    const int next = sh[(t + 1) % n];
    ctx.SyncThreads();
    sh[t] = next;
    ctx.SyncThreads();
  }
  block[t] = sh[t];
}

// Counts live objects, so a test can see that unwound threads ran their destructors.
std::atomic<int> live_guards{0};
struct Guard {
  Guard() { live_guards.fetch_add(1); }
  ~Guard() { live_guards.fetch_sub(1); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
};

// Thread 5 of block 3 throws between the first and second barrier, while the
// block's other threads wait at the second one.
void throws_between_barriers(const se::host::CooperativeContext& ctx, int* out) {
  const Guard guard;
  out[ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x] = 1;
  ctx.SyncThreads();
  if (ctx.blockIdx.x == 3 && ctx.threadIdx.x == 5) throw std::runtime_error("thread 5 of block 3 gave up");
  ctx.SyncThreads();
  out[ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x] = 2;
}

// Threads at or past `active` return before the barrier the others still
// reach twice: the barrier waits for the threads still running only.
void uneven_exit(const se::host::CooperativeContext& ctx, int* out, std::uint32_t active, std::span<int> sh) {
  const std::uint64_t t = ctx.threadIdx.x;
  if (t >= active) return;
  sh[t] = static_cast<int>(t);
  ctx.SyncThreads();
  const int mirrored = sh[active - 1 - t];
  ctx.SyncThreads();
  out[t] = mirrored;
}

}  // namespace

TEST_CASE("a block reduction over shared memory gives the exact sum", "[host][barrier]") {
  auto* executor = Executor();
  const BlockSumKernel kernel = LoadBlockSum(executor);
  se::Stream stream(executor);
  stream.Init();
  CHECK(RunBlockSum(stream, kernel, 256, 1) == std::vector<float>{256.0f});
  const std::vector<float> sums = RunBlockSum(stream, kernel, 64, 5);
  CHECK(sums == std::vector<float>{64.0f, 128.0f, 192.0f, 256.0f, 320.0f});
}

TEST_CASE("1024 threads per block, in one, two and three dimensions", "[host][barrier]") {
  auto* executor = Executor();
  const BlockSumKernel kernel = LoadBlockSum(executor);
  se::Stream stream(executor);
  stream.Init();
  CHECK(RunBlockSum(stream, kernel, 1024, 3) == std::vector<float>{1024.0f, 2048.0f, 3072.0f});

  // Every thread of an 8 x 8 x 16 block records its threadIdx, after a barrier
  // that all 1024 must reach.
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel("ids", [](const se::host::CooperativeContext& ctx, std::uint32_t* ids) {
    ctx.SyncThreads();
    const std::uint64_t linear =
        (ctx.threadIdx.z * ctx.blockDim.y + ctx.threadIdx.y) * ctx.blockDim.x + ctx.threadIdx.x;
    ids[linear] = static_cast<std::uint32_t>(linear);
  });
  se::TypedKernel<se::DeviceMemory<std::uint32_t>*> ids_kernel(executor);
  REQUIRE(executor->GetKernel(spec, &ids_kernel).ok());
  auto ids = executor->AllocateOwnedArray<std::uint32_t>(1024);
  std::vector<std::uint32_t> host(1024), expected(1024);
  std::iota(expected.begin(), expected.end(), 0u);
  REQUIRE(stream.ThenLaunch(se::ThreadDim(8, 8, 16), se::BlockDim(1), ids_kernel, ids.ptr())
              .ThenMemcpyD2H<std::uint32_t>(ids.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host == expected);
}

TEST_CASE("more than 1024 threads per block are refused for a cooperative kernel", "[host][barrier][errors]") {
  auto* executor = Executor();
  const BlockSumKernel kernel = LoadBlockSum(executor);
  auto in = executor->AllocateOwnedArray<float>(2048);
  auto out = executor->AllocateOwnedArray<float>(1);
  se::Stream stream(executor);
  stream.Init().ThenLaunch(se::ThreadDim(2048), se::BlockDim(1), kernel, in.ptr(), out.ptr(),
                           se::SharedDeviceMemory<float>(2048));
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "kernel 'block_sum' on host:0: 2048 threads per block"));
  CHECK(Mentions(status, "runs at most 1024"));
}

TEST_CASE("a tiled matrix multiply matches the reference", "[host][barrier]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(8);
  spec.AddHostKernel<&tiled_matmul>("tiled_matmul");
  se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t,
                  std::uint32_t, std::uint32_t, se::SharedDeviceMemory<float>, se::SharedDeviceMemory<float>>
      kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  // Sizes that are no multiple of the tile, so the edges' zero padding is used.
  constexpr std::uint32_t m = 45, n = 70, k = 37;
  std::vector<float> a(m * k), b(k * n), c(m * n, -1.0f), expected(m * n, 0.0f);
  for (std::uint32_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
  for (std::uint32_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) - 2.0f;
  for (std::uint32_t r = 0; r < m; ++r) {
    for (std::uint32_t col = 0; col < n; ++col) {
      for (std::uint32_t i = 0; i < k; ++i) expected[r * n + col] += a[r * k + i] * b[i * n + col];
    }
  }
  auto da = executor->AllocateOwnedArray<float>(a.size());
  auto db = executor->AllocateOwnedArray<float>(b.size());
  auto dc = executor->AllocateOwnedArray<float>(c.size());
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(a, da.ptr())
              .ThenMemcpyH2D<float>(b, db.ptr())
              .ThenLaunch(se::ThreadDim(kTile, kTile), se::BlockDim((n + kTile - 1) / kTile, (m + kTile - 1) / kTile),
                          kernel, da.ptr(), db.ptr(), dc.ptr(), m, n, k, se::SharedDeviceMemory<float>(kTile * kTile),
                          se::SharedDeviceMemory<float>(kTile * kTile))
              .ThenMemcpyD2H<float>(dc.cref(), c)
              .BlockHostUntilDone()
              .ok());
  CHECK(c == expected);  // small integers: every sum is exact
}

TEST_CASE("barriers in a loop", "[host][barrier]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<&rotate>("rotate");
  se::TypedKernel<se::DeviceMemory<int>*, std::uint32_t, se::SharedDeviceMemory<int>> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  constexpr std::uint32_t threads = 100, blocks = 3, rounds = 1234;
  std::vector<int> data(threads * blocks);
  std::iota(data.begin(), data.end(), 0);
  auto device = executor->AllocateOwnedArray<int>(data.size());
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(data, device.ptr())
              .ThenLaunch(se::ThreadDim(threads), se::BlockDim(blocks), kernel, device.ptr(), rounds,
                          se::SharedDeviceMemory<int>(threads))
              .ThenMemcpyD2H<int>(device.cref(), data)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t b = 0; b < blocks; ++b) {
    for (std::uint32_t t = 0; t < threads; ++t) {
      INFO("block " << b << " thread " << t);
      CHECK(data[b * threads + t] == static_cast<int>(b * threads + (t + rounds) % threads));
    }
  }
}

TEST_CASE("blocks run at once on several workers, and on two streams", "[host][barrier]") {
  auto* executor = Executor();
  const BlockSumKernel kernel = LoadBlockSum(executor);
  // Many blocks: every worker (and the waiting caller) runs some, each thread
  // with its own fibers; each block's sum needs its own barriers to be right.
  std::vector<float> expected(200);
  for (std::uint64_t b = 0; b < expected.size(); ++b) expected[b] = 128.0f * static_cast<float>(b + 1);
  se::Stream first(executor);
  first.Init();
  CHECK(RunBlockSum(first, kernel, 128, expected.size()) == expected);

  std::atomic<int> wrong{0};
  auto run = [&](std::uint64_t threads) {
    se::Stream stream(executor);
    stream.Init();
    for (int i = 0; i < 20; ++i) {
      const std::vector<float> sums = RunBlockSum(stream, kernel, threads, 7);
      for (std::uint64_t b = 0; b < sums.size(); ++b) {
        if (sums[b] != static_cast<float>(threads * (b + 1))) wrong.fetch_add(1);
      }
    }
  };
  std::thread other([&] { run(512); });
  run(32);
  other.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("a thread that throws between barriers fails the stream; the block is unwound", "[host][barrier][errors]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&throws_between_barriers>("throws_between_barriers");
  se::TypedKernel<se::DeviceMemory<int>*> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  constexpr std::uint32_t threads = 64, blocks = 64;
  auto out = executor->AllocateOwnedArray<int>(threads * blocks);
  REQUIRE(executor->SynchronousMemZero(out.ptr(), threads * blocks * sizeof(int)).ok());
  {
    se::Stream stream(executor);
    stream.Init().ThenLaunch(se::ThreadDim(threads), se::BlockDim(blocks), kernel, out.ptr());
    const se::Status status = stream.BlockHostUntilDone();
    CHECK(status.code() == se::ErrorCode::kAborted);
    CHECK(Mentions(status, "kernel 'throws_between_barriers' threw an exception: thread 5 of block 3 gave up"));
    CHECK(stream.BlockHostUntilDone().code() == se::ErrorCode::kAborted);  // sticky
  }
  // Block 3's other threads were waiting at the second barrier: unwound, their guards destroyed.
  CHECK(live_guards.load() == 0);
  std::vector<int> host(threads * blocks);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(out.cref(), host).ok());
  for (std::uint32_t t = 0; t < threads; ++t) CHECK(host[3 * threads + t] == 1);  // never past the barrier

  // The pool and later streams are unaffected.
  const BlockSumKernel sum = LoadBlockSum(executor);
  se::Stream later(executor);
  later.Init();
  CHECK(RunBlockSum(later, sum, 256, 4) == std::vector<float>{256.0f, 512.0f, 768.0f, 1024.0f});
}

TEST_CASE("threads that return early leave the barrier to the others", "[host][barrier]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<&uneven_exit>("uneven_exit");
  se::TypedKernel<se::DeviceMemory<int>*, std::uint32_t, se::SharedDeviceMemory<int>> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  constexpr std::uint32_t threads = 128, active = 100;
  std::vector<int> host(threads, -1);
  auto out = executor->AllocateOwnedArray<int>(threads);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(host, out.ptr())
              .ThenLaunch(se::ThreadDim(threads), se::BlockDim(1), kernel, out.ptr(), active,
                          se::SharedDeviceMemory<int>(threads))
              .ThenMemcpyD2H<int>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t t = 0; t < threads; ++t) CHECK(host[t] == (t < active ? static_cast<int>(active - 1 - t) : -1));
}

TEST_CASE("cooperative kernels launched typed at run time and from a command buffer", "[host][barrier]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<&block_sum>("block_sum");
  se::UntypedKernel untyped(executor);
  REQUIRE(executor->GetUntypedKernel(spec, &untyped).ok());
  const BlockSumKernel typed = LoadBlockSum(executor);
  constexpr std::uint64_t threads = 256, blocks = 3;
  std::vector<float> in(threads * blocks, 1.0f), out(blocks, 0.0f);
  auto device_in = executor->AllocateOwnedArray<float>(in.size());
  auto device_out = executor->AllocateOwnedArray<float>(blocks);
  REQUIRE(executor->SynchronousMemcpyH2D<float>(in, device_in.ptr()).ok());

  se::KernelArgsArray<3> args;
  args.Add(device_in.ptr()).Add(device_out.ptr()).Add(se::SharedDeviceMemory<float>(threads));
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(threads), se::BlockDim(blocks), untyped, args)
              .ThenMemcpyD2H<float>(device_out.cref(), out)
              .BlockHostUntilDone()
              .ok());
  CHECK(out == std::vector<float>(blocks, 256.0f));
  // The limit holds for run-time typed launches too.
  se::KernelArgsArray<3> too_many;
  too_many.Add(device_in.ptr()).Add(device_out.ptr()).Add(se::SharedDeviceMemory<float>(2048));
  se::Stream refused(executor);
  refused.Init().ThenLaunch(se::ThreadDim(2048), se::BlockDim(1), untyped, too_many);
  CHECK(refused.BlockHostUntilDone().code() == se::ErrorCode::kInvalidArgument);

  se::CommandBuffer buffer(executor);
  buffer.Init()
      .ThenMemZero(device_out.ptr(), blocks * sizeof(float))
      .ThenLaunch(se::ThreadDim(threads), se::BlockDim(blocks), typed, device_in.ptr(), device_out.ptr(),
                  se::SharedDeviceMemory<float>(threads))
      .ThenMemcpyD2H<float>(device_out.cref(), out);
  REQUIRE(buffer.Finalize().ok());
  for (int round = 0; round < 3; ++round) {
    std::fill(out.begin(), out.end(), 0.0f);
    REQUIRE(stream.ThenSubmit(&buffer).BlockHostUntilDone().ok());
    CHECK(out == std::vector<float>(blocks, 256.0f));
  }
}
