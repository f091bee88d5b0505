// The CUDA backend against the counting driver double (counting_double/), the
// test double that stands in for libcuda.so.1 on machines without an NVIDIA
// driver. Meson runs this with the double's folder on LD_LIBRARY_PATH. What it
// proves without a GPU: the backend's driver calls receive exactly the grid,
// block, shared-memory size and argument bytes the caller gave; a launch is
// one cuLaunchKernel and nothing else; driver failures become a Status that
// names the call, the error and the context; the launch path allocates nothing.
// What a kernel computes is the GPU suite's business (gpu_test.cpp).
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "counting_new.hpp"
#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

// Hand-written PTX: the double parses the .entry parameter lists, and the
// backend's load-time signature check reads the same text.
constexpr const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry scale(.param .u64 scale_param_0, .param .f32 scale_param_1, .param .u32 scale_param_2)
{ ret; }

.visible .entry with_scratch(.param .u64 with_scratch_param_0, .param .align 4 .b8 with_scratch_param_1[12])
{ ret; }
)";

struct Triple {
  std::int32_t a, b, c;
};

template <typename T>
T ParamAs(const SeCountingDoubleLaunch& launch, std::size_t index) {
  REQUIRE(launch.param_sizes[index] == sizeof(T));
  T value;
  std::memcpy(&value, launch.param_bytes[index], sizeof(T));
  return value;
}

// The PTX's `scale` kernel, which most cases below launch.
using ScaleKernel = se::TypedKernel<se::DeviceMemory<float>*, float, std::uint32_t>;
se::MultiKernelLoaderSpec ScaleSpec() {
  se::MultiKernelLoaderSpec spec(3);
  spec.AddCudaPtxInMemory(kPtx, "scale");
  return spec;
}

}  // namespace

// Not the double: say so and stop, rather than test a real driver's behaviour
// against the double's answers.
int SeTestPreflight() {
  auto& platform = se::Platform<se::cuda>::Get();
  if (!platform.InitStatus().ok() || !Double().loaded()) {
    fmt::print("SKIPPED: libcuda.so.1 is not the counting driver double ({})\n", platform.InitStatus().ToString());
    return 77;
  }
  return -1;
}

TEST_CASE("the platform sees the double's one device", "[cuda][double]") {
  auto& platform = se::Platform<se::cuda>::Get();
  CHECK(platform.VisibleDeviceCount() == 1);
  const se::DeviceDescription& d = Executor()->GetDeviceDescription();
  CHECK(d.name == "counting driver double (no GPU)");
  CHECK(d.max_threads_per_block == 1024);
  CHECK(d.compute_capability_major == 9);
  CHECK(d.shared_memory_per_block == 48 * 1024);
  auto missing = platform.ExecutorForDevice(1);
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == se::ErrorCode::kOutOfRange);
}

TEST_CASE("copies and fills move the bytes through the driver calls", "[cuda][double]") {
  auto* executor = Executor();
  auto memory = executor->AllocateOwnedArray<float>(8);
  REQUIRE(memory.ok());
  const std::vector<float> in{1, 2, 3, 4, 5, 6, 7, 8};
  REQUIRE(executor->SynchronousMemcpyH2D(std::span<const float>(in), memory.ptr()).ok());
  std::vector<float> out(8, 0.0f);
  REQUIRE(executor->SynchronousMemcpyD2H(memory.cref(), std::span<float>(out)).ok());
  CHECK(out == in);

  se::Stream stream(executor);
  std::vector<float> back(8, -1.0f);
  REQUIRE(stream.Init()
              .ThenMemZero(memory.ptr(), 4 * sizeof(float))
              .ThenMemcpyD2H(memory.cref(), std::span<float>(back))
              .BlockHostUntilDone()
              .ok());
  CHECK(back == std::vector<float>{0, 0, 0, 0, 5, 6, 7, 8});
}

TEST_CASE("a launch reaches cuLaunchKernel with exactly the caller's sizes and arguments", "[cuda][double]") {
  auto* executor = Executor();
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(256);
  se::Stream stream(executor);
  stream.Init();

  // A caller that made the executor's context current (as CUDA runtime code
  // does): the launch switches nothing.
  const auto* api = executor->native_state().api;
  REQUIRE(api->cuCtxSetCurrent(executor->native_state().context) == CUDA_SUCCESS);
  const long launches_before = Double().calls("cuLaunchKernel");
  const long set_current_before = Double().calls("cuCtxSetCurrent");
  stream.ThenLaunch(se::ThreadDim(32, 2, 1), se::BlockDim(4, 3, 2), kernel, x.ptr(), 2.5f, 256u);
  CHECK(Double().calls("cuLaunchKernel") == launches_before + 1);
  CHECK(Double().calls("cuCtxSetCurrent") == set_current_before);
  REQUIRE(stream.BlockHostUntilDone().ok());

  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CHECK(std::string(launch.kernel_name) == "scale");
  CHECK(std::array{launch.grid[0], launch.grid[1], launch.grid[2]} == std::array{4u, 3u, 2u});
  CHECK(std::array{launch.block[0], launch.block[1], launch.block[2]} == std::array{32u, 2u, 1u});
  CHECK(launch.shared_bytes == 0);
  REQUIRE(launch.param_count == 3);
  CHECK(ParamAs<std::uint64_t>(launch, 0) == reinterpret_cast<std::uintptr_t>(x.ptr()->opaque()));
  CHECK(ParamAs<float>(launch, 1) == 2.5f);
  CHECK(ParamAs<std::uint32_t>(launch, 2) == 256u);

  // A slice passes its own address, not its allocation's.
  se::DeviceMemory<float> tail = x.ptr()->GetSlice(100, 10);
  stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, &tail, 1.0f, 10u);
  REQUIRE(stream.BlockHostUntilDone().ok());
  REQUIRE(Double().last_launch(&launch));
  CHECK(ParamAs<std::uint64_t>(launch, 0) == reinterpret_cast<std::uintptr_t>(x.ptr()->opaque()) + 100 * sizeof(float));
}

TEST_CASE("shared memory becomes the launch's dynamic shared bytes, structs pass by value", "[cuda][double]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(3);
  spec.AddCudaPtxInMemory(kPtx, "with_scratch");
  se::TypedKernel<se::DeviceMemory<float>*, se::SharedDeviceMemory<double>, Triple> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(16);
  se::Stream stream(executor);
  stream.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, x.ptr(), se::SharedDeviceMemory<double>(100),
                           Triple{7, -8, 9});
  REQUIRE(stream.BlockHostUntilDone().ok());
  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CHECK(launch.shared_bytes == 800);
  REQUIRE(launch.param_count == 2);
  const Triple t = ParamAs<Triple>(launch, 1);
  CHECK((t.a == 7 && t.b == -8 && t.c == 9));
}

TEST_CASE("driver failures name the call, the error and the launch", "[cuda][double][errors]") {
  auto* executor = Executor();
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(4);

  SECTION("cuLaunchKernel") {
    se::Stream stream(executor);
    Double().fail_next("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    const long before = Double().calls("cuLaunchKernel");
    stream.Init().ThenLaunch(se::ThreadDim(128), se::BlockDim(3), kernel, x.ptr(), 1.0f, 4u);
    const se::Status failed = stream.BlockHostUntilDone();
    INFO(failed.ToString());
    CHECK(Mentions(failed,
                   "cuLaunchKernel failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701: too many resources requested "
                   "for launch)"));
    CHECK(Mentions(failed, "launching kernel 'scale' on cuda:0 with 3x1x1 blocks of 128x1x1 threads"));
    // The first error sticks: a later launch does not reach the driver.
    stream.ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, x.ptr(), 1.0f, 4u);
    CHECK(stream.BlockHostUntilDone().message() == failed.message());
    CHECK(Double().calls("cuLaunchKernel") == before + 1);
  }
  SECTION("cuMemAlloc") {
    Double().fail_next("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
    auto failed = executor->TryAllocateArray<float>(1000);
    REQUIRE(!failed.ok());
    INFO(failed.status().ToString());
    CHECK(failed.status().code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(failed.status(), "cuMemAlloc failed with CUDA_ERROR_OUT_OF_MEMORY (2: out of memory)"));
    CHECK(Mentions(failed.status(), "4000 bytes on cuda:0"));
  }
  SECTION("cuModuleGetFunction") {
    // A PTX that declares the kernel passes the signature check; the driver
    // then fails the lookup, and the Status says which kernel and file kind.
    se::MultiKernelLoaderSpec other(3);
    other.AddCudaPtxInMemory(std::string(kPtx) + "\n// variant\n", "scale");
    ScaleKernel again(executor);
    Double().fail_next("cuModuleGetFunction", CUDA_ERROR_NOT_FOUND);
    const se::Status failed = executor->GetKernel(other, &again);
    INFO(failed.ToString());
    CHECK(Mentions(failed, "cuModuleGetFunction failed with CUDA_ERROR_NOT_FOUND"));
    CHECK(Mentions(failed, "looking up kernel 'scale' in the PTX on cuda:0"));
    CHECK(!again.IsLoaded());
  }
}

TEST_CASE("the JIT's error log reaches the Status", "[cuda][double][errors]") {
  auto* executor = Executor();
  se::MultiKernelLoaderSpec spec(1);
  // The signature check passes; the double's "JIT" rejects PTX for a newer
  // GPU than its sm_90, as the real one does.
  spec.AddCudaPtxInMemory(
      ".version 8.0\n.target sm_100\n.address_size 64\n.visible .entry newer(.param .u64 p) { ret; }\n", "newer");
  se::TypedKernel<se::DeviceMemory<float>*> kernel(executor);
  const se::Status status = executor->GetKernel(spec, &kernel);
  INFO(status.ToString());
  REQUIRE(!status.ok());
  CHECK(Mentions(status, "cuModuleLoadDataEx failed with CUDA_ERROR_INVALID_PTX"));
  CHECK(Mentions(
      status,
      "JIT error log:\ncounting driver double: SM version specified by .target is higher than the device's (sm_90)"));
}

TEST_CASE("PTX per compute capability: the device's best entry is loaded", "[cuda][double]") {
  // The double is an sm_90 device: the 10.0 entry would fail its JIT, the
  // 8.0 entry is not PTX at all, so only choosing the 9.0 entry loads.
  auto* executor = Executor();
  const std::string newer = std::string(kPtx).replace(std::string(kPtx).find("sm_90"), 5, "sm_100");
  se::MultiKernelLoaderSpec spec(3);
  spec.AddCudaPtxInMemory({10, 0}, newer, "scale")
      .AddCudaPtxInMemory({8, 0}, "not PTX", "scale")
      .AddCudaPtxInMemory({9, 0}, kPtx, "scale");
  ScaleKernel kernel(executor);
  CHECK(executor->GetKernel(spec, &kernel).ok());

  se::MultiKernelLoaderSpec only_newer(3);
  only_newer.AddCudaPtxInMemory({10, 0}, newer, "scale");
  ScaleKernel refused(executor);
  const se::Status status = executor->GetKernel(only_newer, &refused);
  CHECK(status.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(status, "kernel 'scale' has PTX only for newer devices than this one, of compute capability 9.0"));
  CHECK(Mentions(status, "CUDA PTX (compute capability 10.0)"));
}

TEST_CASE("1000 CUDA launches allocate nothing", "[cuda][double][allocation]") {
  auto* executor = Executor();
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(64);
  se::Stream stream(executor);
  stream.Init();
  stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, x.ptr(), 1.0f, 64u);  // warm-up
  REQUIRE(stream.BlockHostUntilDone().ok());
  const long before = GlobalNewCalls();
  for (int i = 0; i < 1000; ++i) stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, x.ptr(), 1.0f, 64u);
  const long after = GlobalNewCalls();
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(after - before == 0);
}

TEST_CASE("1000 prepared and 1000 run-time typed CUDA launches allocate nothing", "[cuda][double][allocation]") {
  auto* executor = Executor();
  ScaleKernel kernel(executor);
  se::UntypedKernel untyped(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  REQUIRE(executor->GetUntypedKernel(ScaleSpec(), &untyped).ok());
  auto x = executor->AllocateOwnedArray<float>(64);
  se::Stream stream(executor);
  stream.Init();
  se::PreparedLaunch prepared(kernel, se::ThreadDim(64), se::BlockDim(1), x.ptr(), 1.0f, 64u);
  se::KernelArgsArray<3> args;
  args.Add(x.ptr()).Add(1.0f).Add(std::uint32_t{64});
  stream.ThenLaunch(prepared).ThenLaunch(se::ThreadDim(64), se::BlockDim(1), untyped, args);  // warm-up
  REQUIRE(stream.BlockHostUntilDone().ok());
  const long before = GlobalNewCalls();
  for (int i = 0; i < 1000; ++i) {
    prepared.Set<1>(static_cast<float>(i));
    stream.ThenLaunch(prepared).ThenLaunch(se::ThreadDim(64), se::BlockDim(1), untyped, args);
  }
  const long after = GlobalNewCalls();
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(after - before == 0);
  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CHECK(std::string(launch.kernel_name) == "scale");
}

TEST_CASE("a run-time typed launch passes the caller's arguments to cuLaunchKernel", "[cuda][double]") {
  auto* executor = Executor();
  se::UntypedKernel kernel(executor);
  REQUIRE(executor->GetUntypedKernel(ScaleSpec(), &kernel).ok());
  REQUIRE(kernel.params().size() == 3);
  CHECK_FALSE(kernel.shared_is_parameter());
  auto x = executor->AllocateOwnedArray<float>(256);
  se::DeviceMemory<float> tail = x.ptr()->GetSlice(100, 10);
  se::KernelArgsArray<4> args;
  args.Add(&tail).Add(2.5f).AddSharedBytes(96).Add(std::uint32_t{10});  // shared memory is not a parameter
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(2), kernel, args).BlockHostUntilDone().ok());
  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CHECK(launch.shared_bytes == 96);
  REQUIRE(launch.param_count == 3);
  CHECK(ParamAs<std::uint64_t>(launch, 0) == reinterpret_cast<std::uintptr_t>(x.ptr()->opaque()) + 100 * sizeof(float));
  CHECK(ParamAs<float>(launch, 1) == 2.5f);
  CHECK(ParamAs<std::uint32_t>(launch, 2) == 10u);
}

TEST_CASE("host callbacks and timers run through the double", "[cuda][double]") {
  auto* executor = Executor();
  se::Stream stream(executor);
  se::Timer timer(executor);
  REQUIRE(timer.Init().ok());
  int calls = 0;
  REQUIRE(stream.Init()
              .ThenStartTimer(&timer)
              .ThenDoHostCallback([&] { ++calls; })
              .ThenStopTimer(&timer)
              .BlockHostUntilDone()
              .ok());
  CHECK(calls == 1);
  auto elapsed = timer.ElapsedNanoseconds();
  REQUIRE(elapsed.ok());
  CHECK(elapsed.value() < 10'000'000'000ull);
}

TEST_CASE("plain events are made without timing, a Timer's with it", "[cuda][double]") {
  auto* executor = Executor();
  const auto* api = executor->native_state().api;
  se::Stream stream(executor);
  se::Event first(executor), second(executor);
  REQUIRE(first.Init());
  REQUIRE(second.Init());
  se::Timer timer(executor);
  REQUIRE(timer.Init().ok());
  REQUIRE(stream.Init()
              .ThenRecordEvent(&first)
              .ThenStartTimer(&timer)
              .ThenStopTimer(&timer)
              .ThenRecordEvent(&second)
              .BlockHostUntilDone()
              .ok());
  // The double answers as the driver does for CU_EVENT_DISABLE_TIMING events.
  float milliseconds = 0;
  CHECK(api->cuEventElapsedTime(&milliseconds, se::NativeEvent(first), se::NativeEvent(second)) ==
        CUDA_ERROR_INVALID_HANDLE);
  CHECK(timer.ElapsedNanoseconds().ok());
}

TEST_CASE("every call runs in the executor's context and gives the caller's back", "[cuda][double]") {
  auto* executor = Executor();
  const auto* api = executor->native_state().api;
  const CUcontext ours = executor->native_state().context;
  const CUcontext foreign = Double().foreign_context();
  // The double refuses context-bound calls unless the primary context is
  // current, so each call below only works if the backend made it current.
  auto current = [&] {
    CUcontext context = nullptr;
    REQUIRE(api->cuCtxGetCurrent(&context) == CUDA_SUCCESS);
    return context;
  };
  // Another library's context is current: it is given back after each call.
  REQUIRE(api->cuCtxSetCurrent(foreign) == CUDA_SUCCESS);
  auto memory = executor->AllocateOwnedArray<int>(16);
  REQUIRE(memory.ok());
  CHECK(current() == foreign);
  std::vector<int> in(16, 7), out(16, 0);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(in, memory.ptr()).ok());
  CHECK(current() == foreign);
  // Ours current, then switched away behind the backend's back between two
  // calls: a cache of "what we made current last" would skip the switch now.
  REQUIRE(api->cuCtxSetCurrent(ours) == CUDA_SUCCESS);
  REQUIRE(executor->SynchronousMemZero(memory.ptr(), 4 * sizeof(int)).ok());
  CHECK(current() == ours);
  REQUIRE(api->cuCtxSetCurrent(foreign) == CUDA_SUCCESS);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(memory.cref(), out).ok());
  CHECK(current() == foreign);
  CHECK(out[0] == 0);
  CHECK(out[15] == 7);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenMemset32(memory.ptr(), 3u, 16 * sizeof(int)).BlockHostUntilDone().ok());
  CHECK(current() == foreign);
  // No context current: ours is left current, as the CUDA runtime does.
  REQUIRE(api->cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  REQUIRE(executor->SynchronousMemZero(memory.ptr(), 4 * sizeof(int)).ok());
  CHECK(current() == ours);

  // Launches the same way: the launch path switches out of line when ours is
  // not current (launch.hpp, LaunchSwitchingContext).
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(4);
  const long launches = Double().calls("cuLaunchKernel");
  const long switches = Double().calls("cuCtxSetCurrent");
  stream.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u);  // ours current
  CHECK(Double().calls("cuCtxSetCurrent") == switches);
  REQUIRE(api->cuCtxSetCurrent(foreign) == CUDA_SUCCESS);
  stream.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u);
  CHECK(current() == foreign);
  REQUIRE(api->cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  stream.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u);
  CHECK(current() == ours);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(Double().calls("cuLaunchKernel") == launches + 3);

  // A failed query of the current context is named in the launch's Status.
  se::Stream failing(executor);
  REQUIRE(failing.Init().ok());
  Double().fail_next("cuCtxGetCurrent", CUDA_ERROR_NOT_INITIALIZED);
  failing.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u);
  const se::Status failed = failing.BlockHostUntilDone();
  INFO(failed.ToString());
  CHECK(Mentions(failed, "cuCtxGetCurrent failed with CUDA_ERROR_NOT_INITIALIZED"));
  CHECK(Double().calls("cuLaunchKernel") == launches + 3);
}

TEST_CASE("synchronous copies run on the executor's stream and wait for it", "[cuda][double]") {
  // A pageable cuMemcpyHtoD may return before the data reached the device,
  // and the legacy default stream does not order non-blocking streams: the
  // synchronous forms queue on the executor's own stream and synchronize it.
  auto* executor = Executor();
  auto memory = executor->AllocateOwnedArray<float>(8);
  std::vector<float> in(8, 1.5f), out(8, 0.0f);
  const long sync_copies = Double().calls("cuMemcpyHtoD") + Double().calls("cuMemcpyDtoH") +
                           Double().calls("cuMemcpyDtoD") + Double().calls("cuMemsetD8") +
                           Double().calls("cuMemsetD32") + Double().calls("cuCtxSynchronize");
  const long async_h2d = Double().calls("cuMemcpyHtoDAsync");
  const long async_d2h = Double().calls("cuMemcpyDtoHAsync");
  const long stream_syncs = Double().calls("cuStreamSynchronize");
  REQUIRE(executor->SynchronousMemcpyH2D<float>(in, memory.ptr()).ok());
  REQUIRE(executor->SynchronousMemcpyD2H<float>(memory.cref(), out).ok());
  REQUIRE(executor->SynchronousMemZero(memory.ptr(), sizeof(float)).ok());
  CHECK(out == in);
  CHECK(Double().calls("cuMemcpyHtoDAsync") == async_h2d + 1);
  CHECK(Double().calls("cuMemcpyDtoHAsync") == async_d2h + 1);
  CHECK(Double().calls("cuStreamSynchronize") == stream_syncs + 3);
  CHECK(Double().calls("cuMemcpyHtoD") + Double().calls("cuMemcpyDtoH") + Double().calls("cuMemcpyDtoD") +
            Double().calls("cuMemsetD8") + Double().calls("cuMemsetD32") + Double().calls("cuCtxSynchronize") ==
        sync_copies);
}

TEST_CASE("a synchronous operation waits on the device for the executor's busy streams", "[cuda][double][sync-order]") {
  // As cudaMemcpy comes after earlier launches: each busy stream records an
  // event, the executor's synchronous stream waits on it, and only then is
  // the operation queued there. The double finishes everything at once, so
  // CUDA_ERROR_NOT_READY from cuStreamQuery stands for a GPU still running
  // the launch; by default a stream is idle and costs one cuStreamQuery.
  auto* executor = Executor();
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(4);
  auto y = executor->AllocateOwnedArray<float>(4);
  std::vector<float> host(4, 1.0f);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());
  const CUstream user_stream = stream.native_handle()->stream;
  const std::vector<std::pair<const char*, std::function<se::Status()>>> operations = {
      {"cuMemcpyDtoHAsync", [&] { return executor->SynchronousMemcpyD2H<float>(x.cref(), host); }},
      {"cuMemcpyHtoDAsync", [&] { return executor->SynchronousMemcpyH2D<float>(host, x.ptr()); }},
      {"cuMemcpyDtoDAsync", [&] { return executor->SynchronousMemcpyD2D<float>(x.cref(), y.ptr()); }},
      {"cuMemsetD8Async", [&] { return executor->SynchronousMemZero(x.ptr(), 16); }},
      {"cuMemsetD32Async", [&] { return executor->SynchronousMemset32(x.ptr(), 7, 16); }},
  };
  auto latest = [](const char* entry) {
    SeCountingDoubleCall call{};
    REQUIRE(Double().latest_call(entry, &call));
    return call;
  };
  for (const auto& [entry, run] : operations) {
    INFO(entry);
    stream.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u);
    const long records = Double().calls("cuEventRecord");
    const long waits = Double().calls("cuStreamWaitEvent");
    Double().fail_next("cuStreamQuery", CUDA_ERROR_NOT_READY);
    REQUIRE(run().ok());
    CHECK(Double().calls("cuEventRecord") == records + 1);
    CHECK(Double().calls("cuStreamWaitEvent") == waits + 1);
    const SeCountingDoubleCall record = latest("cuEventRecord");
    const SeCountingDoubleCall wait = latest("cuStreamWaitEvent");
    const SeCountingDoubleCall operation = latest(entry);
    const SeCountingDoubleCall synced = latest("cuStreamSynchronize");
    CHECK(record.stream == user_stream);
    CHECK(wait.event == record.event);
    CHECK(wait.stream != user_stream);
    CHECK(operation.stream == wait.stream);
    CHECK(synced.stream == wait.stream);
    CHECK(record.sequence < wait.sequence);
    CHECK(wait.sequence < operation.sequence);
    CHECK(operation.sequence < synced.sequence);
  }
  const long records = Double().calls("cuEventRecord");
  const long queries = Double().calls("cuStreamQuery");
  REQUIRE(executor->SynchronousMemcpyD2H<float>(x.cref(), host).ok());
  CHECK(Double().calls("cuStreamQuery") == queries + 1);
  CHECK(Double().calls("cuEventRecord") == records);

  // SynchronizeAllActivity waits on the host for the same events.
  Double().fail_next("cuStreamQuery", CUDA_ERROR_NOT_READY);
  REQUIRE(executor->SynchronizeAllActivity().ok());
  const SeCountingDoubleCall record = latest("cuEventRecord");
  const SeCountingDoubleCall waited = latest("cuEventSynchronize");
  CHECK(record.stream == user_stream);
  CHECK(waited.event == record.event);
  CHECK(record.sequence < waited.sequence);
  CHECK(Double().calls("cuEventRecord") == records + 1);
}

TEST_CASE("after a callback failed, later launches and copies are skipped", "[cuda][double][errors]") {
  // The double runs a host function as soon as it is queued (everything
  // before it is done), so the failure is known when the next call comes.
  auto* executor = Executor();
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(4);
  const std::vector<float> ones(4, 1.0f);
  se::Stream stream(executor);
  stream.Init().ThenDoHostCallback([] { throw std::runtime_error("callback failed"); });
  const long launches = Double().calls("cuLaunchKernel");
  const long copies = Double().calls("cuMemcpyHtoDAsync");
  stream.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u).ThenMemcpyH2D<float>(ones, x.ptr());
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(status.message().find("callback failed") != std::string::npos);
  CHECK(Double().calls("cuLaunchKernel") == launches);
  CHECK(Double().calls("cuMemcpyHtoDAsync") == copies);
}

TEST_CASE("a host callback's error Status fails the stream and skips later work", "[cuda][double][errors]") {
  auto* executor = Executor();
  auto x = executor->AllocateOwnedArray<float>(4);
  const std::vector<float> ones(4, 1.0f);
  se::Stream stream(executor);
  stream.Init().ThenDoHostCallback([]() -> se::Status { return se::Status(se::ErrorCode::kDataLoss, "bad frame"); });
  const long copies = Double().calls("cuMemcpyHtoDAsync");
  stream.ThenMemcpyH2D<float>(ones, x.ptr());
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kDataLoss);
  CHECK(status.message().find("host callback on cuda:0 failed: bad frame") != std::string::npos);
  CHECK(Double().calls("cuMemcpyHtoDAsync") == copies);
}

TEST_CASE("a host callback that calls CUDA is refused before the driver sees it", "[cuda][double][errors]") {
  // CUDA forbids CUDA calls inside a host function; on a GPU they may deadlock
  // (a wait for the stream that runs the callback) or fail. The double counts
  // and refuses any such call, so zero new ones proves none reached it.
  auto* executor = Executor();
  auto x = executor->AllocateOwnedArray<float>(4);
  const std::vector<float> ones(4, 1.0f);
  se::Stream stream(executor);
  se::Stream other(executor);
  REQUIRE(other.Init().ok());
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(ScaleSpec(), &kernel).ok());
  se::Stream launched(executor);
  se::Stream from_thread(executor);
  REQUIRE(launched.Init().ok());
  REQUIRE(from_thread.Init().ok());
  se::Status wait_other, sync_copy;
  const long before = Double().calls_from_host_functions();
  const long launches = Double().calls("cuLaunchKernel");
  stream.Init().ThenDoHostCallback([&] {
    wait_other = other.BlockHostUntilDone();
    sync_copy = executor->SynchronousMemcpyH2D<float>(ones, x.ptr());
    stream.ThenMemcpyH2D<float>(ones, x.ptr());  // into its own stream
    launched.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u);
    // Another thread is not inside the host function while it runs: its
    // launch goes through (the launch path's test sees a host function
    // running somewhere, then this thread's own flag).
    std::thread([&] { from_thread.ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, x.ptr(), 2.0f, 4u); }).join();
  });
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(Double().calls_from_host_functions() == before);
  CHECK(Double().calls("cuLaunchKernel") == launches + 1);
  CHECK(from_thread.BlockHostUntilDone().ok());
  const se::Status launch_inside = launched.BlockHostUntilDone();
  CHECK(launch_inside.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(launch_inside, "may not call the CUDA driver"));
  CHECK(wait_other.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(wait_other, "may not call the CUDA driver"));
  CHECK(sync_copy.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "host callback (ThenDoHostCallback) may not call the CUDA driver"));
  // Outside the callback the driver is usable again.
  se::Stream after(executor);
  CHECK(after.Init().ThenMemcpyH2D<float>(ones, x.ptr()).BlockHostUntilDone().ok());
}
