// The launch path allocates nothing: 1000 host launches after warm-up make
// zero calls to the global operator new, on any thread.
#include <catch2/catch.hpp>

#include "counting_new.hpp"

#include <streamexecutor/host.hpp>

namespace se = streamexecutor;

namespace {
void touch(const se::host::KernelContext& ctx, float a, float* x, std::span<float> scratch, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  scratch[ctx.threadIdx.x] = a;
  if (i < n) x[i] += scratch[ctx.threadIdx.x];
}

// With a block barrier: each block's threads are fibers on stacks each thread
// mapped at its first such block, and reuses.
void block_total(const se::host::CooperativeContext& ctx, float* x, std::span<float> sh) {
  const std::uint64_t t = ctx.threadIdx.x;
  sh[t] = 1.0f;
  ctx.SyncThreads();
  for (std::uint64_t stride = ctx.blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) sh[t] += sh[t + stride];
    ctx.SyncThreads();
  }
  if (t == 0) x[ctx.blockIdx.x] += sh[0];
}
}  // namespace

TEST_CASE("1000 host launches allocate nothing", "[host][allocation]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddHostKernel<&touch>("touch");
  se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(1024);
  REQUIRE(executor->SynchronousMemZero(x.ptr(), 1024 * sizeof(float)).ok());
  se::Stream stream(executor);
  stream.Init();
  // Every other launch passes a const view (&x.cref()): the same path.
  auto launch = [&](int i) {
    if (i % 2 == 0) {
      stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(16), kernel, 1.0f, x.ptr(), se::SharedDeviceMemory<float>(64),
                        1024u);
    } else {
      stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(16), kernel, 1.0f, &x.cref(), se::SharedDeviceMemory<float>(64),
                        1024u);
    }
  };
  for (int i = 0; i < 100; ++i) launch(i);  // warm-up: worker scratch, thread-locals
  REQUIRE(stream.BlockHostUntilDone().ok());

  const long before = GlobalNewCalls();
  for (int i = 0; i < 1000; ++i) launch(i);
  se::Status done = stream.BlockHostUntilDone();
  const long after = GlobalNewCalls();
  REQUIRE(done.ok());
  CHECK(after - before == 0);

  std::vector<float> host(1024);
  REQUIRE(executor->SynchronousMemcpyD2H<float>(x.cref(), host).ok());
  CHECK(host[0] == 1100.0f);
  CHECK(host[1023] == 1100.0f);
}

TEST_CASE("1000 prepared and 1000 run-time typed host launches allocate nothing", "[host][allocation]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddHostKernel<&touch>("touch");
  se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t> kernel(executor);
  se::UntypedKernel untyped(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  REQUIRE(executor->GetUntypedKernel(spec, &untyped).ok());
  auto x = executor->AllocateOwnedArray<float>(1024);
  REQUIRE(executor->SynchronousMemZero(x.ptr(), 1024 * sizeof(float)).ok());
  se::PreparedLaunch prepared(kernel, se::ThreadDim(64), se::BlockDim(16), 1.0f, x.ptr(),
                              se::SharedDeviceMemory<float>(64), 1024u);
  se::KernelArgsArray<4> args;
  args.Add(2.0f).Add(x.ptr()).Add(se::SharedDeviceMemory<float>(64)).Add(1024u);
  se::Stream stream(executor);
  stream.Init();
  auto launch = [&] {
    prepared.Set<0>(1.0f);
    stream.ThenLaunch(prepared).ThenLaunch(se::ThreadDim(64), se::BlockDim(16), untyped, args);
  };
  for (int i = 0; i < 100; ++i) launch();  // warm-up
  REQUIRE(stream.BlockHostUntilDone().ok());

  const long before = GlobalNewCalls();
  for (int i = 0; i < 1000; ++i) launch();
  se::Status done = stream.BlockHostUntilDone();
  const long after = GlobalNewCalls();
  REQUIRE(done.ok());
  CHECK(after - before == 0);

  std::vector<float> host(1024);
  REQUIRE(executor->SynchronousMemcpyD2H<float>(x.cref(), host).ok());
  CHECK(host[0] == 3300.0f);
  CHECK(host[1023] == 3300.0f);
}

TEST_CASE("1000 launches of a kernel with a barrier allocate nothing", "[host][allocation][barrier]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddHostKernel<&block_total>("block_total");
  se::TypedKernel<se::DeviceMemory<float>*, se::SharedDeviceMemory<float>> kernel(executor);
  se::UntypedKernel untyped(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  REQUIRE(executor->GetUntypedKernel(spec, &untyped).ok());
  auto x = executor->AllocateOwnedArray<float>(16);
  REQUIRE(executor->SynchronousMemZero(x.ptr(), 16 * sizeof(float)).ok());
  se::KernelArgsArray<2> args;
  args.Add(x.ptr()).Add(se::SharedDeviceMemory<float>(128));
  se::Stream stream(executor);
  stream.Init();
  auto launch = [&] {
    stream.ThenLaunch(se::ThreadDim(128), se::BlockDim(16), kernel, x.ptr(), se::SharedDeviceMemory<float>(128))
        .ThenLaunch(se::ThreadDim(128), se::BlockDim(16), untyped, args);
  };
  for (int i = 0; i < 100; ++i) launch();  // warm-up: each thread's fiber stacks
  REQUIRE(stream.BlockHostUntilDone().ok());

  const long before = GlobalNewCalls();
  for (int i = 0; i < 1000; ++i) launch();
  se::Status done = stream.BlockHostUntilDone();
  const long after = GlobalNewCalls();
  REQUIRE(done.ok());
  CHECK(after - before == 0);

  std::vector<float> host(16);
  REQUIRE(executor->SynchronousMemcpyD2H<float>(x.cref(), host).ok());
  CHECK(host[0] == 2200.0f * 128.0f);
  CHECK(host[15] == 2200.0f * 128.0f);
}
