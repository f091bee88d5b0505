// The OpenCL launch path allocates nothing: 1000 launches after warm-up make
// zero calls to the global operator new, on any thread. The driver's own
// malloc calls (PoCL allocates command nodes with malloc) are not ours and are
// not counted; the launches use a slice, __local memory and scalars so that
// every kind of argument is on the measured path.
#include <catch2/catch.hpp>

#include "counting_new.hpp"

#include <dlfcn.h>

#include <atomic>
#include <vector>

#include <streamexecutor/opencl.hpp>

namespace se = streamexecutor;

// clSetKernelArg, counted: the library's calls (inline in this executable)
// bind to this definition, which forwards to the driver's.
namespace {
std::atomic<long> set_kernel_arg_calls{0};
}  // namespace
extern "C" cl_int clSetKernelArg(cl_kernel kernel, cl_uint index, size_t size, const void* value) {
  using Fn = cl_int (*)(cl_kernel, cl_uint, size_t, const void*);
  static const Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "clSetKernelArg"));
  set_kernel_arg_calls.fetch_add(1, std::memory_order_relaxed);
  return real(kernel, index, size, value);
}

namespace {
constexpr const char* kTouch = R"(
__kernel void touch(float a, __global float* x, __local float* scratch, uint n) {
  size_t i = get_global_id(0);
  scratch[get_local_id(0)] = a;
  if (i < n) x[i] += scratch[get_local_id(0)];
}
)";
}  // namespace

TEST_CASE("1000 OpenCL launches allocate nothing", "[opencl][allocation]") {
  auto* executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddOpenCLTextInMemory(kTouch, "touch");
  se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(2048);
  REQUIRE(executor->SynchronousMemZero(x.ptr(), 2048 * sizeof(float)).ok());
  // The second half as a slice: its offset (4096 bytes) suits both slice schemes.
  se::DeviceMemory<float> upper = x.cref().GetSlice(1024, 1024);
  se::Stream stream(executor);
  stream.Init();
  auto launch = [&] {
    stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(16), kernel, 1.0f, x.ptr(), se::SharedDeviceMemory<float>(64),
                      1024u);
    stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(16), kernel, 2.0f, &upper, se::SharedDeviceMemory<float>(64),
                      1024u);
  };
  for (int i = 0; i < 50; ++i) launch();  // warm-up: sub-buffer cache, driver state
  REQUIRE(stream.BlockHostUntilDone().ok());

  const long before = GlobalNewCalls();
  for (int i = 0; i < 500; ++i) launch();  // 1000 launches
  se::Status done = stream.BlockHostUntilDone();
  const long after = GlobalNewCalls();
  REQUIRE(done.ok());
  CHECK(after - before == 0);

  std::vector<float> host(2048);
  REQUIRE(executor->SynchronousMemcpyD2H<float>(x.cref(), host).ok());
  CHECK(host[0] == 550.0f);
  CHECK(host[1023] == 550.0f);
  CHECK(host[1024] == 1100.0f);
  CHECK(host[2047] == 1100.0f);
}

TEST_CASE("1000 prepared and 1000 run-time typed OpenCL launches allocate nothing", "[opencl][allocation]") {
  auto* executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddOpenCLTextInMemory(kTouch, "touch");
  se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t> kernel(executor);
  se::UntypedKernel untyped(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  REQUIRE(executor->GetUntypedKernel(spec, &untyped).ok());
  auto x = executor->AllocateOwnedArray<float>(2048);
  REQUIRE(executor->SynchronousMemZero(x.ptr(), 2048 * sizeof(float)).ok());
  se::DeviceMemory<float> upper = x.cref().GetSlice(1024, 1024);
  // The prepared launch alternates with the run-time typed one on the same
  // cl_kernel, so it sets its arguments again each time: both paths measured.
  se::PreparedLaunch prepared(kernel, se::ThreadDim(64), se::BlockDim(16), 1.0f, x.ptr(),
                              se::SharedDeviceMemory<float>(64), 1024u);
  se::KernelArgsArray<4> args;
  args.Add(2.0f).Add(&upper).Add(se::SharedDeviceMemory<float>(64)).Add(std::uint32_t{1024});
  se::Stream stream(executor);
  stream.Init();
  auto launch = [&] {
    prepared.Set<0>(1.0f);
    stream.ThenLaunch(prepared).ThenLaunch(prepared).ThenLaunch(se::ThreadDim(64), se::BlockDim(16), untyped, args);
  };
  for (int i = 0; i < 50; ++i) launch();  // warm-up
  REQUIRE(stream.BlockHostUntilDone().ok());

  const long before = GlobalNewCalls();
  for (int i = 0; i < 500; ++i) launch();  // 1500 launches
  se::Status done = stream.BlockHostUntilDone();
  const long after = GlobalNewCalls();
  REQUIRE(done.ok());
  CHECK(after - before == 0);

  std::vector<float> host(2048);
  REQUIRE(executor->SynchronousMemcpyD2H<float>(x.cref(), host).ok());
  CHECK(host[0] == 1100.0f);
  CHECK(host[1024] == 1100.0f);
  CHECK(host[2047] == 1100.0f);
}

TEST_CASE("a prepared launch sets only its changed arguments, unless another launch set the kernel's",
          "[opencl][prepared]") {
  auto* executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddOpenCLTextInMemory(kTouch, "touch");
  se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto x = executor->AllocateOwnedArray<float>(1024);
  REQUIRE(executor->SynchronousMemZero(x.ptr(), 1024 * sizeof(float)).ok());
  se::PreparedLaunch a(kernel, se::ThreadDim(64), se::BlockDim(16), 1.0f, x.ptr(), se::SharedDeviceMemory<float>(64),
                       1024u);
  se::PreparedLaunch b = a;
  se::Stream stream(executor);
  stream.Init();
  auto sets = [&](auto&& launch) {
    const long before = set_kernel_arg_calls.load();
    launch();
    return set_kernel_arg_calls.load() - before;
  };
  CHECK(sets([&] { stream.ThenLaunch(a); }) == 4);  // first launch: all
  CHECK(sets([&] { stream.ThenLaunch(a); }) == 0);  // nothing changed
  CHECK(sets([&] { stream.ThenLaunch(a.Set<0>(2.0f)); }) == 1);
  CHECK(sets([&] { stream.ThenLaunch(b); }) == 4);  // another launch's arguments are on the kernel
  CHECK(sets([&] { stream.ThenLaunch(a); }) == 4);
  CHECK(sets([&] {
          stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(16), kernel, 1.0f, x.ptr(),
                            se::SharedDeviceMemory<float>(64), 1024u);
        }) == 4);
  CHECK(sets([&] { stream.ThenLaunch(a); }) == 4);
  CHECK(sets([&] { stream.ThenLaunch(a); }) == 0);
  REQUIRE(stream.BlockHostUntilDone().ok());
  std::vector<float> host(1024);
  REQUIRE(executor->SynchronousMemcpyD2H<float>(x.cref(), host).ok());
  CHECK(host[0] == 1 + 1 + 2 + 1 + 2 + 1 + 2 + 2);
}
