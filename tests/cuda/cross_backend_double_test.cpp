// Waits between CUDA and the host backend, against the counting driver double
// (counting_double/), which stands in for libcuda.so.1 where no NVIDIA driver
// can exist. What it proves without a GPU: which driver calls each side makes
// (a CUDA stream waits with cuStreamWaitValue32 on a pinned word, a CUDA event
// notifies through a host function on a stream of its own), that the release
// stores the wait's number into that word, that words are recycled, and that
// every failure is a Status naming the call and never a hung stream. Real
// ordering on a GPU is gpu_test.cpp's business.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <string_view>

#include <streamexecutor/cuda.hpp>
#include <streamexecutor/host.hpp>
#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include <streamexecutor/opencl.hpp>
#endif
#include <vector>

#include "cross_backend/ordering.hpp"
#include "double_test.hpp"

namespace se = streamexecutor;
using se_test::Gate;

namespace {

using se_test::Double;
using se_test::Mentions;

se::StreamExecutor<se::cuda>* Cuda() { return se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie(); }
se::StreamExecutor<se::host>* Host() { return se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(); }

}  // namespace

TEST_CASE("the double is the driver", "[cuda][double][cross-backend]") {
  REQUIRE(Double().loaded());
  REQUIRE(se::Platform<se::cuda>::Get().VisibleDeviceCount() == 1);
}

TEST_CASE("a CUDA stream waits on a host event through a pinned word", "[cuda][double][cross-backend]") {
  auto* cuda = Cuda();
  auto* host = Host();
  se::Stream producer(host);
  se::Stream consumer(cuda);
  se::Event<se::host> event(host);
  REQUIRE(producer.Init().ok());
  REQUIRE(consumer.Init().ok());
  REQUIRE(event.Init());

  const long allocs = Double().calls("cuMemHostAlloc");
  const long waits = Double().calls("cuStreamWaitValue32");
  const long writes = Double().calls("cuStreamWriteValue32");
  for (int round = 0; round < 3; ++round) {
    Gate gate;
    producer.ThenDoHostCallback([&] { gate.Wait(); }).ThenRecordEvent(&event);
    consumer.ThenWaitFor(&event);
    REQUIRE(consumer.ok());
    gate.Open();
    REQUIRE(producer.BlockHostUntilDone().ok());
    REQUIRE(consumer.BlockHostUntilDone().ok());
  }
  // One ring of words for the stream, taken on its first wait.
  CHECK(Double().calls("cuMemHostAlloc") - allocs <= 1);
  CHECK(Double().calls("cuStreamWaitValue32") == waits + 3);
  CHECK(Double().calls("cuStreamWriteValue32") == writes + 3);
  // The ring is the stream's: its last wait number is what the release stored.
  const se::cuda_detail::WaitRing* ring = consumer.native_handle()->wait_ring;
  REQUIRE(ring != nullptr);
  const std::uint32_t last = ring->next;
  CHECK(std::atomic_ref<std::uint32_t>(ring->host[last % se::cuda_detail::WaitRing::kWords]).load() == last);
  CHECK(ring->Progress() == last);
  CHECK(Double().calls_from_host_functions() == 0);
}

TEST_CASE("a host stream waits on a CUDA event through a host function", "[cuda][double][cross-backend]") {
  auto* cuda = Cuda();
  auto* host = Host();
  se::Stream producer(cuda);
  se::Stream consumer(host);
  se::Event<se::cuda> event(cuda);
  REQUIRE(producer.Init().ok());
  REQUIRE(consumer.Init().ok());
  REQUIRE(event.Init());
  const long streams = Double().calls("cuStreamCreate");
  const long host_functions = Double().calls("cuLaunchHostFunc");
  const long event_waits = Double().calls("cuStreamWaitEvent");
  bool ran = false;
  producer.ThenRecordEvent(&event);
  consumer.ThenWaitFor(&event).ThenDoHostCallback([&] { ran = true; });
  REQUIRE(consumer.BlockHostUntilDone().ok());
  CHECK(ran);
  // A stream of its own, waiting on the event, then the host function.
  CHECK(Double().calls("cuStreamCreate") == streams + 1);
  CHECK(Double().calls("cuStreamWaitEvent") == event_waits + 1);
  CHECK(Double().calls("cuLaunchHostFunc") == host_functions + 1);
  CHECK(Double().calls_from_host_functions() == 0);

  SECTION("and on a CUDA stream") {
    bool after = false;
    consumer.ThenWaitFor(&producer).ThenDoHostCallback([&] { after = true; });
    REQUIRE(consumer.BlockHostUntilDone().ok());
    CHECK(after);
    CHECK(Double().calls("cuEventRecord") > 0);
  }
}

TEST_CASE("driver failures on either side name the call and never hang the waiter",
          "[cuda][double][cross-backend][errors]") {
  auto* cuda = Cuda();
  auto* host = Host();
  se::Event<se::host> host_event(host);
  REQUIRE(host_event.Init());
  se::Stream recorder(host);
  REQUIRE(recorder.Init().ThenRecordEvent(&host_event).BlockHostUntilDone().ok());

  SECTION("cuStreamWaitValue32") {
    se::Stream consumer(cuda);
    Double().fail_next("cuStreamWaitValue32", CUDA_ERROR_NOT_SUPPORTED);
    const se::Status status = consumer.Init().ThenWaitFor(&host_event).BlockHostUntilDone();
    INFO(status.ToString());
    CHECK(Mentions(status, "cuStreamWaitValue32 failed with CUDA_ERROR_NOT_SUPPORTED"));
    CHECK(Mentions(status, "waiting on another backend on cuda:0"));
  }
  SECTION("cuStreamWriteValue32: the queued wait is let through, the stream fails") {
    se::Stream consumer(cuda);
    Double().fail_next("cuStreamWriteValue32", CUDA_ERROR_ILLEGAL_ADDRESS);
    const se::Status status = consumer.Init().ThenWaitFor(&host_event).BlockHostUntilDone();
    INFO(status.ToString());
    CHECK(Mentions(status, "cuStreamWriteValue32 failed with CUDA_ERROR_ILLEGAL_ADDRESS"));
  }
  SECTION("cuMemHostAlloc of the wait words") {
    se::Stream consumer(cuda);
    Double().fail_next("cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY);
    // Another test's ring may be idle and reused: then no allocation happens.
    const long before = Double().calls("cuMemHostAlloc");
    const se::Status status = consumer.Init().ThenWaitFor(&host_event).BlockHostUntilDone();
    if (Double().calls("cuMemHostAlloc") > before) {
      CHECK(Mentions(status, "cuMemHostAlloc failed with CUDA_ERROR_OUT_OF_MEMORY"));
    } else {
      Double().fail_next("cuMemHostAlloc", 0);
      CHECK(status.ok());
    }
  }
  SECTION("cuLaunchHostFunc of the notification: the host stream goes on, with the error") {
    se::Stream producer(cuda);
    se::Stream consumer(host);
    se::Event<se::cuda> event(cuda);
    REQUIRE(event.Init());
    REQUIRE(producer.Init().ThenRecordEvent(&event).ok());
    Double().fail_next("cuLaunchHostFunc", CUDA_ERROR_LAUNCH_FAILED);
    const se::Status status = consumer.Init().ThenWaitFor(&event).BlockHostUntilDone();
    INFO(status.ToString());
    CHECK(Mentions(status, "cuLaunchHostFunc failed with CUDA_ERROR_LAUNCH_FAILED"));
    CHECK(Mentions(status, "another backend's wait on an event of cuda:0"));
  }
  SECTION("cuStreamCreate of the notification") {
    se::Stream consumer(host);
    se::Event<se::cuda> event(cuda);
    REQUIRE(event.Init());
    Double().fail_next("cuStreamCreate", CUDA_ERROR_OUT_OF_MEMORY);
    const se::Status status = consumer.Init().ThenWaitFor(&event).BlockHostUntilDone();
    CHECK(Mentions(status, "cuStreamCreate failed with CUDA_ERROR_OUT_OF_MEMORY"));
  }
}

TEST_CASE("a wait on another backend inside a CUDA callback is refused", "[cuda][double][cross-backend][errors]") {
  auto* cuda = Cuda();
  auto* host = Host();
  se::Event<se::host> event(host);
  REQUIRE(event.Init());
  se::Stream consumer(cuda);
  se::Stream other(cuda);
  REQUIRE(other.Init().ok());
  se::Status inner;
  consumer.Init().ThenDoHostCallback([&] { inner = other.ThenWaitFor(&event).status(); });
  REQUIRE(consumer.BlockHostUntilDone().ok());
  CHECK(inner.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Double().calls_from_host_functions() == 0);
}

TEST_CASE("copies between CUDA and the host backend go straight to and from host memory",
          "[cuda][double][cross-backend][copy]") {
  auto* cuda = Cuda();
  auto* host = Host();
  auto device = cuda->AllocateOwnedArray<int>(1000);
  auto host_side = host->AllocateOwnedArray<int>(1000);
  std::vector<int> values(1000), result(1000, 0);
  for (int i = 0; i < 1000; ++i) values[static_cast<std::size_t>(i)] = i * 7 - 3;
  se::Stream cuda_stream(cuda);
  se::Stream host_stream(host);
  REQUIRE(cuda_stream.Init().ok());
  REQUIRE(host_stream.Init().ok());
  REQUIRE(host->SynchronousMemcpyH2D<int>(values, host_side.ptr()).ok());

  const long h2d = Double().calls("cuMemcpyHtoDAsync");
  se::StatusOr<se::CopyRoute> in = se::ThenCopyBetween(&host_stream, host_side.cref(), &cuda_stream, device.ptr());
  REQUIRE(in.ok());
  CHECK(in.value() == se::CopyRoute::kFromHostMemory);
  CHECK(Double().calls("cuMemcpyHtoDAsync") == h2d + 1);  // one copy, from the host allocation itself
  REQUIRE(cuda_stream.BlockHostUntilDone().ok());

  REQUIRE(host->SynchronousMemZero(host_side.ptr(), 1000 * sizeof(int)).ok());
  const long d2h = Double().calls("cuMemcpyDtoHAsync");
  se::StatusOr<se::CopyRoute> out = se::ThenCopyBetween(&cuda_stream, device.cref(), &host_stream, host_side.ptr());
  REQUIRE(out.ok());
  CHECK(out.value() == se::CopyRoute::kIntoHostMemory);
  CHECK(Double().calls("cuMemcpyDtoHAsync") == d2h + 1);
  REQUIRE(host_stream.BlockHostUntilDone().ok());
  REQUIRE(cuda_stream.BlockHostUntilDone().ok());
  REQUIRE(host->SynchronousMemcpyD2H<int>(host_side.cref(), result).ok());
  CHECK(result == values);
}

#if defined(STREAMEXECUTOR_WITH_OPENCL)
// One chunk only: the double lets every wait pass at once, so a second use of
// a staging buffer would not wait for OpenCL to have read the first (a GPU
// would); gpu_test.cpp has no OpenCL, the chunking is tested between two
// OpenCL devices in tests/cross_backend/copy_test.cpp.
TEST_CASE("a copy from CUDA to OpenCL is staged through CUDA's pinned memory", "[cuda][double][cross-backend][copy]") {
  auto* cuda = Cuda();
  auto* cl = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  auto device = cuda->AllocateOwnedArray<int>(4096);
  auto cl_side = cl->AllocateOwnedArray<int>(4096);
  std::vector<int> values(4096), result(4096, 0);
  for (int i = 0; i < 4096; ++i) values[static_cast<std::size_t>(i)] = 5 * i + 1;
  REQUIRE(cuda->SynchronousMemcpyH2D<int>(values, device.ptr()).ok());
  se::Stream cuda_stream(cuda);
  se::Stream cl_stream(cl);
  REQUIRE(cuda_stream.Init().ok());
  REQUIRE(cl_stream.Init().ok());
  const long pinned = Double().calls("cuMemHostAlloc");
  se::StatusOr<se::CopyRoute> route = se::ThenCopyBetween(&cuda_stream, device.cref(), &cl_stream, cl_side.ptr());
  INFO(route.status().ToString());
  REQUIRE(route.ok());
  CHECK(route.value() == se::CopyRoute::kStaged);
  cl_stream.ThenMemcpyD2H<int>(cl_side.cref(), result);
  REQUIRE(cl_stream.BlockHostUntilDone().ok());
  REQUIRE(cuda_stream.BlockHostUntilDone().ok());
  CHECK(result == values);
  // The staging buffer is pinned by CUDA, once: a second copy reuses it.
  const long after_first = Double().calls("cuMemHostAlloc");
  CHECK(after_first - pinned <= 2);
  REQUIRE(se::ThenCopyBetween(&cuda_stream, device.cref(), &cl_stream, cl_side.ptr()).ok());
  REQUIRE(cl_stream.BlockHostUntilDone().ok());
  CHECK(Double().calls("cuMemHostAlloc") == after_first);
}
#endif
