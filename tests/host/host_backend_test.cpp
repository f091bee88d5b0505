// What is specific to the host backend: how kernels are written, that work is
// really asynchronous and parallel, and that a throwing kernel is contained.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
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
  se::Status status = stream.Init().ThenDoHostCallback([] { throw std::logic_error("callback broke"); })
                          .BlockHostUntilDone();
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
