// CUDA-specific behaviour that needs a real GPU: loading nvcc's PTX (C and C++
// entries), the signature check through GetKernel, JIT logs of bad PTX,
// module caching, pinned and managed memory, timers, host-callback failures,
// the device description. Exits 77 (SKIP) with the reason without a device.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "cross_backend/ordering.hpp"
#include "generic/test_kernels.hpp"

namespace sig {
struct Pair {
  double weight;
  int index;
};
}  // namespace sig

int SeTestPreflight() {
  auto& platform = se::Platform<se::cuda>::Get();
  if (platform.VisibleDeviceCount() == 0) {
    fmt::print("SKIPPED: the CUDA GPU suite needs a device: {}\n",
               platform.InitStatus().ok() ? std::string("zero devices visible") : platform.InitStatus().ToString());
    return 77;
  }
  return -1;
}

namespace {

se::StreamExecutor<se::cuda>* Gpu() { return se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie(); }

template <typename T>
using Mem = se::DeviceMemory<T>*;

}  // namespace

TEST_CASE("the description has the driver's properties", "[cuda][gpu]") {
  const se::DeviceDescription& d = Gpu()->GetDeviceDescription();
  INFO(d.ToString());
  CHECK(d.platform_name == "cuda");
  CHECK(d.compute_capability_major >= 5);
  CHECK(d.warp_size == 32);
  CHECK(d.compute_units > 0);
  CHECK(d.device_memory_size > 0);
  CHECK(d.max_threads_per_block >= 512);
  CHECK(d.threads_per_multiprocessor >= d.max_threads_per_block);
  CHECK(d.blocks_per_multiprocessor >= 1);
  CHECK(d.shared_memory_per_multiprocessor >= d.shared_memory_per_block);
  CHECK(d.registers_per_multiprocessor > 0);
  CHECK(d.l2_cache_size > 0);
  CHECK(d.memory_bus_width_bits > 0);
  CHECK(d.extra.size() >= 5);
}

TEST_CASE("a C++ kernel from nvcc's PTX loads by its mangled name and runs", "[cuda][gpu]") {
  auto* gpu = Gpu();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddCudaPtxOnDisk(SE_SIGNATURE_KERNELS_PTX, "_Z9cpp_saxpyfPKfPfj");
  se::TypedKernel<float, Mem<float>, Mem<float>, std::uint32_t> kernel(gpu);
  REQUIRE(gpu->GetKernel(spec, &kernel).ok());
  constexpr std::uint32_t n = 4096;
  std::vector<float> x(n), y(n, 1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = gpu->AllocateOwnedArray<float>(n);
  auto dy = gpu->AllocateOwnedArray<float>(n);
  se::Stream stream(gpu);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(x, dx.ptr())
              .ThenMemcpyH2D<float>(y, dy.ptr())
              .ThenLaunch(se::ThreadDim(256), se::BlockDim(n / 256), kernel, 3.0f, dx.ptr(), dy.ptr(), n)
              .ThenMemcpyD2H<float>(dy.cref(), y)
              .BlockHostUntilDone()
              .ok());
  CHECK(y[100] == 301.0f);
}

// NVRTC's PTX on the real driver (tests/cuda/nvrtc_test.cpp checks the
// compile itself against the double): a template instance by its name
// expression, compiled for this device's architecture, runs and computes.
TEST_CASE("CUDA C++ source compiled by NVRTC runs on the device", "[cuda][gpu][nvrtc]") {
  if (!se::cuda_detail::Nvrtc().status.ok()) {
    FAIL("NVRTC does not load beside the GPU: " << se::cuda_detail::Nvrtc().status.ToString());
  }
  auto* gpu = Gpu();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddCudaSourceInMemory(R"(
template <typename T>
__global__ void axpy(T a, const T* x, T* y, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
)",
                             "axpy<float>", "-std=c++17");
  se::TypedKernel<float, Mem<float>, Mem<float>, std::uint32_t> kernel(gpu);
  const se::Status loaded = gpu->GetKernel(spec, &kernel);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  constexpr std::uint32_t n = 1000;
  std::vector<float> x(n), y(n, 1.0f);
  std::iota(x.begin(), x.end(), 0.0f);
  auto dx = gpu->AllocateOwnedArray<float>(n);
  auto dy = gpu->AllocateOwnedArray<float>(n);
  se::Stream stream(gpu);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(x, dx.ptr())
              .ThenMemcpyH2D<float>(y, dy.ptr())
              .ThenLaunch(se::ThreadDim(128), se::BlockDim(8), kernel, 2.0f, dx.ptr(), dy.ptr(), n)
              .ThenMemcpyD2H<float>(dy.cref(), y)
              .BlockHostUntilDone()
              .ok());
  CHECK(y[0] == 1.0f);
  CHECK(y[999] == 1999.0f);
}

TEST_CASE("a struct passed by value reaches the kernel", "[cuda][gpu]") {
  auto* gpu = Gpu();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaPtxOnDisk(SE_SIGNATURE_KERNELS_PTX, "c_struct");
  se::TypedKernel<sig::Pair, Mem<double>> kernel(gpu);
  REQUIRE(gpu->GetKernel(spec, &kernel).ok());
  auto out = gpu->AllocateOwnedArray<double>(4);
  std::vector<double> host(4, 0.0);
  se::Stream stream(gpu);
  REQUIRE(stream.Init()
              .ThenMemZero(out.ptr(), 4 * sizeof(double))
              .ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, sig::Pair{2.5, 3}, out.ptr())
              .ThenMemcpyD2H<double>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host[3] == 2.5);
}

TEST_CASE("GetKernel rejects a TypedKernel that does not match the PTX", "[cuda][gpu]") {
  auto* gpu = Gpu();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddCudaPtxOnDisk(SE_SIGNATURE_KERNELS_PTX, "_Z9cpp_saxpyfPKfPfj");
  se::TypedKernel<float, Mem<int>, Mem<float>, std::uint32_t> wrong(gpu);
  const se::Status status = gpu->GetKernel(spec, &wrong);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(status.message().find("parameter 1") != std::string::npos);
  CHECK(!wrong.IsLoaded());

  se::MultiKernelLoaderSpec unknown(4);
  unknown.AddCudaPtxOnDisk(SE_SIGNATURE_KERNELS_PTX, "cpp_saxpy");
  se::TypedKernel<float, Mem<float>, Mem<float>, std::uint32_t> kernel(gpu);
  CHECK(gpu->GetKernel(unknown, &kernel).message().find("mangled name") != std::string::npos);
}

TEST_CASE("bad PTX fails to load with the JIT's error log in the Status", "[cuda][gpu]") {
  auto* gpu = Gpu();
  constexpr const char* kBadPtx = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry broken(.param .u32 n) {
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [n];
  this_is_not_an_instruction %r1;
  ret;
}
)";
  se::MultiKernelLoaderSpec spec(1);
  spec.AddCudaPtxInMemory(kBadPtx, "broken");
  se::TypedKernel<std::uint32_t> kernel(gpu);
  const se::Status status = gpu->GetKernel(spec, &kernel);
  INFO(status.ToString());
  CHECK(!status.ok());
  CHECK(status.message().find("cuModuleLoadDataEx failed with CUDA_ERROR_INVALID_PTX") != std::string::npos);
  CHECK(status.message().find("JIT error log") != std::string::npos);
  CHECK(status.message().find("kernel 'broken'") != std::string::npos);
}

TEST_CASE("several kernels of one PTX file share one module", "[cuda][gpu]") {
  auto* gpu = Gpu();
  test_kernels::AddKernel add(gpu);
  test_kernels::SaxpyKernel saxpy(gpu);
  REQUIRE(gpu->GetKernel(test_kernels::AddSpec(), &add).ok());
  REQUIRE(gpu->GetKernel(test_kernels::SaxpySpec(), &saxpy).ok());
  CHECK(gpu->native_state().modules->modules.size() >= 1);
  const std::size_t before = gpu->native_state().modules->modules.size();
  test_kernels::AddKernel again(gpu);
  REQUIRE(gpu->GetKernel(test_kernels::AddSpec(), &again).ok());
  CHECK(gpu->native_state().modules->modules.size() == before);
}

TEST_CASE("pinned host memory and managed memory", "[cuda][gpu]") {
  auto* gpu = Gpu();
  auto& state = gpu->native_state();
  se::PinnedHostMemory<int> words = gpu->HostAllocate<int>(1 << 18);
  REQUIRE(words.ok());
  std::fill(words.span().begin(), words.span().end(), 7);
  auto device = gpu->AllocateOwnedArray<int>(1024);
  se::Stream stream(gpu);
  REQUIRE(stream.Init().ThenMemcpy(device.ptr(), words.data(), 1024 * sizeof(int)).BlockHostUntilDone().ok());
  std::fill(words.span().begin(), words.span().end(), 0);
  REQUIRE(gpu->SynchronousMemcpyD2H(device.cref(), 1024 * sizeof(int), words.data()).ok());
  CHECK(words[1023] == 7);
  REQUIRE(words.Reset().ok());

  std::vector<int> registered(4096, 1);
  REQUIRE(gpu->HostMemoryRegister(registered.data(), registered.size() * sizeof(int)).ok());
  REQUIRE(stream.ThenMemcpy(registered.data(), device.cref(), 1024 * sizeof(int)).BlockHostUntilDone().ok());
  CHECK(registered[0] == 7);
  CHECK(gpu->HostMemoryUnregister(registered.data()).ok());

  se::StatusOr<se::DeviceMemoryBase> managed = se::cuda::AllocateUnified(state, 64);
  REQUIRE(managed.ok());
  auto* bytes = static_cast<unsigned char*>(managed.value().opaque());
  bytes[0] = 9;  // host-dereferenceable
  CHECK(bytes[0] == 9);
  CHECK(se::cuda::Deallocate(state, managed.value()).ok());
}

TEST_CASE("timers measure device time", "[cuda][gpu]") {
  auto* gpu = Gpu();
  auto data = gpu->AllocateOwnedArray<int>(1 << 24);
  se::Timer<se::cuda> timer(gpu);
  se::Stream stream(gpu);
  REQUIRE(stream.InitWithTimer(&timer)
              .ThenStartTimer(&timer)
              .ThenMemset32(data.ptr(), 0x01010101u, (1u << 24) * sizeof(int))
              .ThenStopTimer(&timer)
              .BlockHostUntilDone()
              .ok());
  auto elapsed = timer.ElapsedNanoseconds();
  REQUIRE(elapsed.ok());
  CHECK(elapsed.value() > 0);
}

TEST_CASE("an exception in a host callback fails the stream", "[cuda][gpu]") {
  auto* gpu = Gpu();
  se::Stream stream(gpu);
  bool later_ran = false;
  stream.Init().ThenDoHostCallback([] { throw std::runtime_error("callback exploded"); }).ThenDoHostCallback([&] {
    later_ran = true;
  });
  const se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(status.message().find("callback exploded") != std::string::npos);
  CHECK(!later_ran);
}

TEST_CASE("calls leave the caller's current context as they found it", "[cuda][gpu]") {
  auto* gpu = Gpu();
  test_kernels::AddKernel add(gpu);
  REQUIRE(gpu->GetKernel(test_kernels::AddSpec(), &add).ok());
  auto data = gpu->AllocateOwnedArray<int>(256);
  const auto* api = gpu->native_state().api;
  // A thread with no context current: ours is made current and left, as the
  // CUDA runtime does (a foreign context would be given back: see the
  // counting double's test, which has one).
  REQUIRE(api->cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  se::Stream stream(gpu);
  stream.Init().ThenMemZero(data.ptr(), 256 * sizeof(int));
  for (int i = 0; i < 100; ++i) stream.ThenLaunch(se::ThreadDim(256), se::BlockDim(1), add, data.ptr(), 1);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CUcontext current = nullptr;
  REQUIRE(api->cuCtxGetCurrent(&current) == CUDA_SUCCESS);
  CHECK(current == gpu->native_state().context);  // none was current: ours stays, as with the runtime
  // A caller that made the primary context current (as the runtime API does)
  // keeps it, and hot launches then switch nothing.
  REQUIRE(api->cuCtxSetCurrent(gpu->native_state().context) == CUDA_SUCCESS);
  for (int i = 0; i < 100; ++i) stream.ThenLaunch(se::ThreadDim(256), se::BlockDim(1), add, data.ptr(), 1);
  REQUIRE(stream.BlockHostUntilDone().ok());
  REQUIRE(api->cuCtxGetCurrent(&current) == CUDA_SUCCESS);
  CHECK(current == gpu->native_state().context);
  std::vector<int> host(256);
  REQUIRE(gpu->SynchronousMemcpyD2H<int>(data.cref(), host).ok());
  CHECK(host[255] == 200);
}

TEST_CASE("peer access where two devices exist", "[cuda][gpu]") {
  auto& platform = se::Platform<se::cuda>::Get();
  if (platform.VisibleDeviceCount() < 2) {
    SUCCEED("one device: peer access needs two");
    return;
  }
  auto* a = platform.ExecutorForDevice(0).ValueOrDie();
  auto* b = platform.ExecutorForDevice(1).ValueOrDie();
  if (!se::cuda::CanEnablePeerAccess(a->native_state(), b->native_state())) return;
  CHECK(se::cuda::EnablePeerAccess(a->native_state(), b->native_state()).ok());
  CHECK(se::cuda::EnablePeerAccess(a->native_state(), b->native_state()).ok());  // idempotent
}

TEST_CASE("a CUDA stream waits on a host event, and a host stream on a CUDA event", "[cuda][gpu][cross-backend]") {
  auto* host = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se_test::CheckEventOrdering(host, Gpu(), 10);
  se_test::CheckEventOrdering(Gpu(), host, 10);
}
