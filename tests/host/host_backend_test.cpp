// What is specific to the host backend: how kernels are written, that work is
// really asynchronous and parallel, and that a throwing kernel is contained.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <initializer_list>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <streamexecutor/host.hpp>

namespace se = streamexecutor;

namespace {

se::StreamExecutor<se::host>* Executor() { return se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(); }

bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

void scale(const se::host::KernelContext& ctx, float factor, float* data) {
  data[ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x] *= factor;
}

void two_params(const se::host::KernelContext&, float, const int*) {}

void throw_in_block_3(const se::host::KernelContext& ctx, int*) {
  if (ctx.blockIdx.x == 3) throw std::runtime_error("bad pixel at block 3");
}

// Per block: records which block ran, and sums its threads' values through
// the block's scratch, looping twice as a kernel with a barrier would.
void block_sum(const se::host::BlockContext& ctx, const int* in, int* out, std::span<int> scratch) {
  const std::uint64_t block = (ctx.blockIdx.z * ctx.gridDim.y + ctx.blockIdx.y) * ctx.gridDim.x + ctx.blockIdx.x;
  const std::uint64_t threads = ctx.blockDim.x * ctx.blockDim.y * ctx.blockDim.z;
  for (std::uint64_t t = 0; t < threads; ++t) scratch[t] = in[block * threads + t];
  int sum = 0;
  for (std::uint64_t t = 0; t < threads; ++t) sum += scratch[t];
  out[block] = sum;
}

void block_saxpy(const se::host::BlockContext& ctx, float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t first = ctx.blockIdx.x * ctx.blockDim.x;
  const std::uint64_t end = std::min<std::uint64_t>(first + ctx.blockDim.x, n);
  for (std::uint64_t i = first; i < end; ++i) y[i] = a * x[i] + y[i];
}

void block_throws(const se::host::BlockContext& ctx, int*) {
  if (ctx.blockIdx.x == 2) throw std::runtime_error("block 2 gave up");
}

void sync_once(const se::host::CooperativeContext& ctx, int* out) {
  ctx.SyncThreads();
  if (ctx.threadIdx.x == 0) out[ctx.blockIdx.x] = 1;
}

}  // namespace

TEST_CASE("host kernels: NTTP functions, runtime function pointers, stateless lambdas", "[host]") {
  auto* executor = Executor();
  using ScaleKernel = se::TypedKernel<float, se::DeviceMemory<float>*>;
  auto data = executor->AllocateOwnedArray<float>(64);
  std::vector<float> host(64, 1.0f);

  se::MultiKernelLoaderSpec compile_time(2), run_time(2), lambda(2);
  compile_time.AddHostKernel<&scale>("scale");
  run_time.AddHostKernel("scale", &scale);
  lambda.AddHostKernel("scale", [](const se::host::KernelContext& ctx, float factor, float* d) {
    d[ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x] *= factor;
  });

  ScaleKernel a(executor), b(executor), c(executor);
  REQUIRE(executor->GetKernel(compile_time, &a).ok());
  REQUIRE(executor->GetKernel(run_time, &b).ok());
  REQUIRE(executor->GetKernel(lambda, &c).ok());

  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(host, data.ptr())
              .ThenLaunch(se::ThreadDim(8), se::BlockDim(8), a, 2.0f, data.ptr())
              .ThenLaunch(se::ThreadDim(8), se::BlockDim(8), b, 3.0f, data.ptr())
              .ThenLaunch(se::ThreadDim(8), se::BlockDim(8), c, 5.0f, data.ptr())
              .ThenMemcpyD2H<float>(data.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host == std::vector<float>(64, 30.0f));
}

TEST_CASE("a host kernel whose parameters differ from the TypedKernel is refused at load", "[host][errors]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddHostKernel<&scale>("scale");
  se::TypedKernel<int, se::DeviceMemory<float>*> wrong(executor);
  se::Status status = executor->GetKernel(spec, &wrong);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "host kernel 'scale'"));
  CHECK(Mentions(status, "(float, float*)"));
  CHECK(Mentions(status, "(int, float*)"));
}

TEST_CASE("ThenLaunch returns before the kernel has run", "[host]") {
  auto* executor = Executor();
  static std::atomic<bool> release{false};
  static std::atomic<int> ran{0};
  release = false;
  ran = 0;
  se::MultiKernelLoaderSpec spec(0);
  spec.AddHostKernel("wait", [](const se::host::KernelContext&) {
    while (!release.load()) std::this_thread::yield();
    ran.fetch_add(1);
  });
  se::TypedKernel<> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  se::Stream stream(executor);
  stream.Init().ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel);
  CHECK(ran.load() == 0);  // the kernel is blocked, yet ThenLaunch came back
  release = true;
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(ran.load() == 1);
}

TEST_CASE("blocks of one launch spread over the worker threads", "[host]") {
  auto* executor = Executor();
  if (executor->GetDeviceDescription().compute_units < 2) return;  // single-core machine: nothing to spread
  static std::mutex mutex;
  static std::set<std::thread::id> threads;
  threads.clear();
  se::MultiKernelLoaderSpec spec(0);
  spec.AddHostKernel("record_thread", [](const se::host::KernelContext&) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  se::TypedKernel<> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenLaunch(se::ThreadDim(1), se::BlockDim(256), kernel).BlockHostUntilDone().ok());
  CHECK(threads.size() >= 2);
}

TEST_CASE("two streams run concurrently", "[host]") {
  auto* executor = Executor();
  if (executor->GetDeviceDescription().compute_units < 2) return;
  // Each stream's callback waits for the other's: this only finishes if both run at once.
  std::atomic<int> arrived{0};
  auto rendezvous = [&arrived] {
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  };
  se::Stream a(executor), b(executor);
  a.Init().ThenDoHostCallback(rendezvous);
  b.Init().ThenDoHostCallback(rendezvous);
  REQUIRE(a.BlockHostUntilDone().ok());
  REQUIRE(b.BlockHostUntilDone().ok());
  CHECK(arrived.load() == 2);
}

TEST_CASE("a kernel that throws fails its stream, and only its stream", "[host][errors]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&throw_in_block_3>("throw_in_block_3");
  se::TypedKernel<se::DeviceMemory<int>*> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto memory = executor->AllocateOwnedArray<int>(1);

  bool later_work_ran = false;
  se::Event after(executor);
  REQUIRE(after.Init());
  se::Stream failing(executor), healthy(executor);
  failing.Init()
      .ThenLaunch(se::ThreadDim(4), se::BlockDim(16), kernel, memory.ptr())
      .ThenDoHostCallback([&] { later_work_ran = true; })
      .ThenRecordEvent(&after);
  // A stream waiting on the failed stream's event still finishes.
  healthy.Init().ThenWaitFor(&after);
  se::Status status = failing.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(Mentions(status, "kernel 'throw_in_block_3' threw an exception: bad pixel at block 3"));
  CHECK_FALSE(later_work_ran);
  CHECK(failing.BlockHostUntilDone() == status);
  CHECK(healthy.BlockHostUntilDone().ok());

  // The pool is still healthy afterwards.
  se::Stream next(executor);
  CHECK(next.Init().ThenDoHostCallback([] {}).BlockHostUntilDone().ok());
}

TEST_CASE("a host callback that throws fails the stream", "[host][errors]") {
  se::Stream stream(Executor());
  se::Status status =
      stream.Init().ThenDoHostCallback([] { throw std::logic_error("callback broke"); }).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(Mentions(status, "host callback on host:0 threw: callback broke"));
}

TEST_CASE("more work than the command ring holds is accepted", "[host]") {
  auto* executor = Executor();
  int count = 0;
  se::Stream stream(executor);
  stream.Init();
  for (int i = 0; i < 5000; ++i) stream.ThenDoHostCallback([&count] { ++count; });
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(count == 5000);
}

TEST_CASE("host memory is 64-byte aligned and unified", "[host]") {
  auto* executor = Executor();
  auto memory = executor->AllocateOwnedArray<char>(3);
  CHECK(reinterpret_cast<std::uintptr_t>(memory.cref().opaque()) % 64 == 0);
  CHECK(executor->GetDeviceDescription().unified_memory);
  STATIC_REQUIRE(se::UnifiedMemoryBackend<se::host>);
  STATIC_REQUIRE_FALSE(se::PeerAccessBackend<se::host>);
}

TEST_CASE("synchronous copies and fills run on the calling thread", "[host]") {
  // The capability the core's synchronous path asks for: no worker hand-off.
  STATIC_REQUIRE(se::InlineExecutionBackend<se::host, se::op::MemcpyH2D>);
  STATIC_REQUIRE(se::InlineExecutionBackend<se::host, se::op::MemcpyD2H>);
  STATIC_REQUIRE(se::InlineExecutionBackend<se::host, se::op::MemcpyD2D>);
  STATIC_REQUIRE(se::InlineExecutionBackend<se::host, se::op::Memset8>);
  STATIC_REQUIRE(se::InlineExecutionBackend<se::host, se::op::Memset32>);
  auto* executor = Executor();
  auto memory = executor->AllocateOwnedArray<std::uint32_t>(4);
  REQUIRE(executor->SynchronousMemset32(memory.ptr(), 0xabcdef01u, 16).ok());
  std::vector<std::uint32_t> host(4);
  REQUIRE(executor->SynchronousMemcpyD2H<std::uint32_t>(memory.cref(), host).ok());
  CHECK(host == std::vector<std::uint32_t>(4, 0xabcdef01u));
}

TEST_CASE("a host kernel entry spells its normalised parameter list", "[kernel_spec]") {
  se::MultiKernelLoaderSpec spec(2);
  spec.AddHostKernel<&two_params>("two_params");
  REQUIRE(spec.host_kernel());
  CHECK(spec.host_kernel()->entry.signature() == "(float, int*)");
  CHECK(se::host_detail::HostSignature<float, se::DeviceMemory<int>*>() == "(float, int*)");
  CHECK(se::host_detail::HostSignature<float, se::SharedDeviceMemory<int>>() == "(float, std::span<int>)");
}

TEST_CASE("per-block kernels run once per block, in every grid shape and form", "[host]") {
  auto* executor = Executor();
  // 3 x 2 x 2 blocks of 4 x 2 x 1 threads.
  const se::BlockDim blocks(3, 2, 2);
  const se::ThreadDim threads(4, 2, 1);
  constexpr std::uint64_t kBlocks = 12, kThreads = 8;
  std::vector<int> in(kBlocks * kThreads);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i);
  auto input = executor->AllocateOwnedArray<int>(in.size());
  using SumKernel = se::TypedKernel<se::DeviceMemory<int>*, se::DeviceMemory<int>*, se::SharedDeviceMemory<int>>;

  se::MultiKernelLoaderSpec compile_time(3), run_time(3), lambda(3);
  compile_time.AddHostKernel<&block_sum>("block_sum");
  run_time.AddHostKernel("block_sum", &block_sum);
  lambda.AddHostKernel("block_sum", [](const se::host::BlockContext& ctx, const int* i, int* o, std::span<int> s) {
    block_sum(ctx, i, o, s);
  });
  for (const se::MultiKernelLoaderSpec* spec : {&compile_time, &run_time, &lambda}) {
    SumKernel kernel(executor);
    REQUIRE(executor->GetKernel(*spec, &kernel).ok());
    auto output = executor->AllocateOwnedArray<int>(kBlocks);
    std::vector<int> out(kBlocks, -1);
    se::Stream stream(executor);
    REQUIRE(stream.Init()
                .ThenMemcpyH2D<int>(in, input.ptr())
                .ThenLaunch(threads, blocks, kernel, input.ptr(), output.ptr(), se::SharedDeviceMemory<int>(kThreads))
                .ThenMemcpyD2H<int>(output.cref(), out)
                .BlockHostUntilDone()
                .ok());
    for (std::uint64_t b = 0; b < kBlocks; ++b) {
      int expected = 0;
      for (std::uint64_t t = 0; t < kThreads; ++t) expected += in[b * kThreads + t];
      CHECK(out[b] == expected);
    }
  }
}

TEST_CASE("a per-block saxpy covers a size that is not a multiple of the block", "[host]") {
  auto* executor = Executor();
  constexpr std::uint32_t n = 1000;
  se::MultiKernelLoaderSpec spec(4);
  spec.AddHostKernel<&block_saxpy>("saxpy");
  se::TypedKernel<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  std::vector<float> x(n), y(n, 1.0f);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  // One element past n is a sentinel the kernel must not touch.
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n + 1);
  std::vector<float> y_with_sentinel(y);
  y_with_sentinel.push_back(-7.0f);
  std::vector<float> result(n + 1);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(x, dx.ptr())
              .ThenMemcpyH2D<float>(y_with_sentinel, dy.ptr())
              .ThenLaunch(se::ThreadDim(64), se::BlockDim((n + 63) / 64 + 1), kernel, 2.0f, dx.ptr(), dy.ptr(), n)
              .ThenMemcpyD2H<float>(dy.cref(), result)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t i = 0; i < n; ++i) CHECK(result[i] == 2.0f * x[i] + 1.0f);
  CHECK(result[n] == -7.0f);
}

TEST_CASE("a per-block kernel is checked against the TypedKernel and contained when it throws", "[host][errors]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&block_throws>("block_throws");
  se::TypedKernel<se::DeviceMemory<float>*> wrong(executor);
  se::Status refused = executor->GetKernel(spec, &wrong);
  CHECK(refused.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(refused, "(int*)"));
  CHECK(Mentions(refused, "(float*)"));

  se::TypedKernel<se::DeviceMemory<int>*> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto memory = executor->AllocateOwnedArray<int>(1);
  se::Stream stream(executor);
  se::Status status =
      stream.Init().ThenLaunch(se::ThreadDim(4), se::BlockDim(8), kernel, memory.ptr()).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(Mentions(status, "kernel 'block_throws' threw an exception: block 2 gave up"));
}

TEST_CASE("a thread waiting on an event helps with the launch it waits for", "[host]") {
  auto* executor = Executor();
  // Blocks that record which threads ran them: the waiter must be among them
  // at least once over many launches, or it only slept.
  static std::mutex mutex;
  static std::set<std::thread::id> runners;
  se::MultiKernelLoaderSpec spec(0);
  spec.AddHostKernel("record", [](const se::host::BlockContext&) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    std::lock_guard<std::mutex> lock(mutex);
    runners.insert(std::this_thread::get_id());
  });
  se::TypedKernel<> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  se::Stream stream(executor);
  se::Event done(executor);
  REQUIRE(stream.Init().ok());
  REQUIRE(done.Init());
  for (int round = 0; round < 20; ++round) {
    REQUIRE(stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(64), kernel).ThenRecordEvent(&done).ok());
    REQUIRE(done.Synchronize().ok());
    CHECK(done.PollForStatus() == se::Event<se::host>::State::kComplete);
  }
  std::lock_guard<std::mutex> lock(mutex);
  CHECK(runners.count(std::this_thread::get_id()) == 1);
}

// A worker that has drained a stream keeps watching its tail for a moment
// (Pool::PollForMore), and a synchronising caller or another worker may take
// the stream from it. Launches enqueued at every distance from that moment,
// with synchronisations and short-lived streams in between, must each run
// once, in order.
TEST_CASE("launches enqueued while a worker watches the drained stream run once each, in order", "[host]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel(
      "append", [](const se::host::KernelContext&, int* log, int* length, int value) { log[(*length)++] = value; });
  se::TypedKernel<se::DeviceMemory<int>*, se::DeviceMemory<int>*, int> append(executor);
  REQUIRE(executor->GetKernel(spec, &append).ok());
  constexpr int kLaunches = 20000;
  auto log = executor->AllocateOwnedArray<int>(kLaunches);
  auto length = executor->AllocateOwnedArray<int>(1);
  auto scratch = executor->AllocateOwnedArray<int>(1);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenMemset32(length.ptr(), 0, 4).ThenMemset32(scratch.ptr(), 0, 4).ok());
  for (int i = 0; i < kLaunches; ++i) {
    stream.ThenLaunch(se::ThreadDim(), se::BlockDim(), append, log.ptr(), length.ptr(), i);
    // Gaps from none to a few microseconds: before, during and after the poll.
    const auto gap = std::chrono::nanoseconds((i % 7) * 400);
    for (const auto start = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - start < gap;) {
    }
    if (i % 13 == 0) REQUIRE(stream.BlockHostUntilDone().ok());
    if (i % 97 == 0) {
      // Its own log and length: a second stream writing the first's would race.
      se::Stream brief(executor);
      REQUIRE(brief.Init().ThenLaunch(se::ThreadDim(), se::BlockDim(), append, scratch.ptr(), scratch.ptr(), 0).ok());
    }
  }
  std::vector<int> logged(kLaunches, -1);
  int logged_length = -1;
  REQUIRE(stream.ThenMemcpyD2H<int>(log.cref(), logged)
              .ThenMemcpyD2H<int>(length.cref(), std::span<int>(&logged_length, 1))
              .BlockHostUntilDone()
              .ok());
  REQUIRE(logged_length == kLaunches);
  int out_of_place = 0;
  for (int i = 0; i < kLaunches; ++i) out_of_place += logged[static_cast<std::size_t>(i)] != i;
  CHECK(out_of_place == 0);
}

// While one thread enqueues back to back on a stream (so a worker keeps
// polling it), another stream's work must still be picked up by the pool: the
// main thread waits on an event, which does not drain streams itself.
TEST_CASE("a stream fed back to back does not keep the pool from other streams", "[host]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel("count", [](const se::host::KernelContext&, long* counter) { ++*counter; });
  se::TypedKernel<se::DeviceMemory<long>*> count(executor);
  REQUIRE(executor->GetKernel(spec, &count).ok());
  auto fed = executor->AllocateOwnedArray<long>(1);
  auto ran = executor->AllocateOwnedArray<long>(1);
  std::atomic<bool> stop{false};
  std::atomic<long> enqueued{0};
  long fed_count = -1;
  std::thread feeder([&] {
    se::Stream busy(executor);
    if (!busy.Init().ThenMemset32(fed.ptr(), 0, sizeof(long)).ok()) return;
    while (!stop.load()) {
      busy.ThenLaunch(se::ThreadDim(), se::BlockDim(), count, fed.ptr());
      enqueued.fetch_add(1);
    }
    busy.ThenMemcpyD2H<long>(fed.cref(), std::span<long>(&fed_count, 1)).BlockHostUntilDone().IgnoreError();
  });
  while (enqueued.load() < 1000) std::this_thread::yield();
  se::Stream other(executor);
  se::Event done(executor);
  REQUIRE(other.Init().ThenMemset32(ran.ptr(), 0, sizeof(long)).ok());
  REQUIRE(done.Init());
  for (int round = 0; round < 200; ++round) {
    REQUIRE(other.ThenLaunch(se::ThreadDim(), se::BlockDim(), count, ran.ptr()).ThenRecordEvent(&done).ok());
    REQUIRE(done.Synchronize().ok());
  }
  stop = true;
  feeder.join();
  long ran_count = -1;
  REQUIRE(other.ThenMemcpyD2H<long>(ran.cref(), std::span<long>(&ran_count, 1)).BlockHostUntilDone().ok());
  CHECK(ran_count == 200);
  CHECK(fed_count == enqueued.load());
}

TEST_CASE("kernel attributes follow the kind of host kernel; a worker runs one block", "[host][occupancy]") {
  auto* executor = Executor();
  const se::DeviceDescription& d = executor->GetDeviceDescription();
  CHECK(d.threads_per_multiprocessor == d.max_threads_per_block);
  CHECK(d.blocks_per_multiprocessor == 1);
  CHECK(d.shared_memory_per_multiprocessor == se::host::kSharedMemoryPerBlock);
  CHECK(d.concurrent_kernels);
  CHECK(d.integrated);
  CHECK(d.extra.empty());  // the worker count is compute_units

  se::MultiKernelLoaderSpec per_thread(2), per_block(1), cooperative(1);
  per_thread.AddHostKernel<&scale>("scale");
  per_block.AddHostKernel<&block_throws>("block_throws");
  cooperative.AddHostKernel<&sync_once>("sync_once");
  se::TypedKernel<float, se::DeviceMemory<float>*> thread_kernel(executor);
  se::TypedKernel<se::DeviceMemory<int>*> block_kernel(executor), cooperative_kernel(executor);
  REQUIRE(executor->GetKernel(per_thread, &thread_kernel).ok());
  REQUIRE(executor->GetKernel(per_block, &block_kernel).ok());
  REQUIRE(executor->GetKernel(cooperative, &cooperative_kernel).ok());

  for (const se::KernelBase* kernel : std::initializer_list<const se::KernelBase*>{&thread_kernel, &block_kernel}) {
    auto a = executor->GetKernelAttributes(*kernel);
    REQUIRE(a.ok());
    CHECK(a.value().max_threads_per_block == d.max_threads_per_block);
    CHECK(a.value().stack_bytes_per_thread == 0);  // the worker's own stack
    CHECK(a.value().static_shared_memory_bytes == 0);
    CHECK(a.value().max_dynamic_shared_memory_bytes == se::host::kSharedMemoryPerBlock);
    CHECK(a.value().preferred_block_size_multiple == 1);
  }
  auto fibers = executor->GetKernelAttributes(cooperative_kernel);
  REQUIRE(fibers.ok());
  CHECK(fibers.value().max_threads_per_block == 1024);
  CHECK(fibers.value().stack_bytes_per_thread == 64 * 1024);
  CHECK(fibers.value().ToString().find("stack per thread 65536 bytes") != std::string::npos);

  // One block per worker, whatever its size or shared memory; suggestions
  // stop at 1024 threads, so that small grids still reach every worker.
  for (std::uint64_t shared : {std::uint64_t{0}, se::host::kSharedMemoryPerBlock}) {
    auto active = executor->MaxActiveBlocksPerMultiprocessor(thread_kernel, 1 << 20, shared);
    REQUIRE(active.ok());
    CHECK(active.value() == 1);
  }
  auto best = executor->SuggestBlockSize(thread_kernel);
  REQUIRE(best.ok());
  CHECK(best.value().threads_per_block == 1024);
  CHECK(best.value().min_blocks_for_full_occupancy == static_cast<std::uint64_t>(d.compute_units));
  CHECK(executor->SuggestBlockSize(thread_kernel, 0, 100).value().threads_per_block == 100);
  CHECK(executor->SuggestBlockSize(cooperative_kernel).value().threads_per_block == 1024);
  auto too_many = executor->MaxActiveBlocksPerMultiprocessor(cooperative_kernel, 1025);
  REQUIRE_FALSE(too_many.ok());
  CHECK(Mentions(too_many.status(), "1025 threads per block; the kernel runs at most 1024"));
}
