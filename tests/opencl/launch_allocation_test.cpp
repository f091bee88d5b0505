// The OpenCL launch path allocates nothing: 1000 launches after warm-up make
// zero calls to the global operator new, on any thread. The driver's own
// malloc calls (PoCL allocates command nodes with malloc) are not ours and are
// not counted; the launches use a slice, __local memory and scalars so that
// every kind of argument is on the measured path.
#include <catch2/catch.hpp>

#include "counting_new.hpp"

#include <vector>

#include <streamexecutor/opencl.hpp>

namespace se = streamexecutor;

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
