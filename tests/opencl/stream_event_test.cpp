// Streams, events, timers and host callbacks on OpenCL queues.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "opencl/opencl_test_util.hpp"

namespace {
constexpr const char* kBusy = R"(
__kernel void busy(__global float* data, uint rounds) {
  size_t i = get_global_id(0);
  float x = data[i];
  for (uint r = 0; r < rounds; ++r) x = x * 0.999f + 0.001f;
  data[i] = x;
}
)";
using BusyKernel = se::TypedKernel<se::DeviceMemory<float>*, std::uint32_t>;
}  // namespace

TEST_CASE("a timer reads the profiling timestamps around a kernel", "[opencl][timer]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kBusy, "busy");
  BusyKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto data = executor->AllocateOwnedArray<float>(1 << 16);
  REQUIRE(executor->SynchronousMemZero(data.ptr(), (1 << 16) * sizeof(float)).ok());
  se::Timer timer(executor);
  se::Stream stream(executor);
  const auto wall_start = std::chrono::steady_clock::now();
  REQUIRE(stream.InitWithTimer(&timer)
              .ThenStartTimer(&timer)
              .ThenLaunch(se::ThreadDim(64), se::BlockDim(1024), kernel, data.ptr(), 2000u)
              .ThenStopTimer(&timer)
              .BlockHostUntilDone()
              .ok());
  const auto wall = std::chrono::steady_clock::now() - wall_start;
  auto elapsed = timer.ElapsedNanoseconds();
  REQUIRE(elapsed.ok());
  CHECK(elapsed.value() > 0);
  CHECK(elapsed.value() <= static_cast<std::uint64_t>(std::chrono::nanoseconds(wall).count()));
  // Measured here: printed so the run shows what PoCL's profiling reports.
  WARN("busy kernel over 65536 items: " << elapsed.value() / 1000 << " us by profiling, "
                                        << std::chrono::duration_cast<std::chrono::microseconds>(wall).count()
                                        << " us wall");
}

TEST_CASE("a throwing callback fails the stream, and BlockHostUntilDone returns it", "[opencl][callback][errors]") {
  auto* executor = OpenCLExecutor();
  bool later_ran = false;
  se::Stream stream(executor);
  stream.Init().ThenDoHostCallback([] { throw std::runtime_error("callback exploded"); }).ThenDoHostCallback([&] {
    later_ran = true;
  });
  se::Status status = stream.BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kAborted);
  CHECK(Mentions(status, "host callback on opencl:0"));
  CHECK(Mentions(status, "callback exploded"));
  CHECK(stream.BlockHostUntilDone() == status);  // sticks
  (void)later_ran;                               // whether later work ran is not specified
}

TEST_CASE("callbacks keep stream order with kernels and copies", "[opencl][callback]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kBusy, "busy");
  BusyKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto data = executor->AllocateOwnedArray<float>(1024);
  std::vector<float> ones(1024, 1.0f), seen(1024, -1.0f);
  std::vector<float> snapshot;
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(ones, data.ptr())
              .ThenDoHostCallback([&] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); })
              .ThenLaunch(se::ThreadDim(64), se::BlockDim(16), kernel, data.ptr(), 0u)
              .ThenMemcpyD2H<float>(data.cref(), seen)
              .ThenDoHostCallback([&] { snapshot = seen; })  // runs after the copy has landed
              .BlockHostUntilDone()
              .ok());
  CHECK(snapshot == ones);
}

TEST_CASE("an event is re-recorded and waited on by another stream", "[opencl][event]") {
  auto* executor = OpenCLExecutor();
  se::Event event(executor);
  REQUIRE(event.Init());
  auto device = executor->AllocateOwnedArray<int>(1024);
  std::vector<int> twos(1024, 2), out(1024, 0);
  se::Stream a(executor), b(executor);
  a.Init();
  b.Init();
  for (int round = 0; round < 3; ++round) {
    std::atomic<bool> release{false};
    a.ThenDoHostCallback([&] {
       while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
     })
        .ThenMemcpyH2D<int>(twos, device.ptr())
        .ThenRecordEvent(&event);
    b.ThenWaitFor(&event).ThenMemcpyD2H<int>(device.cref(), out);
    CHECK(event.PollForStatus() == se::Event<se::opencl>::State::kPending);
    release = true;
    REQUIRE(b.BlockHostUntilDone().ok());
    CHECK(out == twos);
    CHECK(event.PollForStatus() == se::Event<se::opencl>::State::kComplete);
    REQUIRE(a.BlockHostUntilDone().ok());
    out.assign(1024, 0);
  }
}

TEST_CASE("a callback may itself use the executor without deadlock", "[opencl][callback]") {
  auto* executor = OpenCLExecutor();
  auto device = executor->AllocateOwnedArray<int>(16);
  std::vector<int> values(16, 5), read(16, 0);
  se::Status inner;
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(values, device.ptr())
              .ThenDoHostCallback([&] { inner = executor->SynchronousMemcpyD2H<int>(device.cref(), read); })
              .BlockHostUntilDone()
              .ok());
  REQUIRE(inner.ok());
  CHECK(read == values);
}

TEST_CASE("one event recorded and waited on from two threads at once", "[opencl][event][threads]") {
  // Before EventState, a wait could read the latest marker just as another
  // thread's recording released it, and hand a freed cl_event to the driver.
  auto* executor = OpenCLExecutor();
  se::Event event(executor);
  REQUIRE(event.Init());
  se::Stream recorder(executor), waiter(executor);
  recorder.Init();
  waiter.Init();
  constexpr int kRounds = 2000;
  std::thread recording([&] {
    for (int i = 0; i < kRounds; ++i) recorder.ThenRecordEvent(&event);
  });
  for (int i = 0; i < kRounds; ++i) {
    waiter.ThenWaitFor(&event);
    CHECK(event.PollForStatus() != se::Event<se::opencl>::State::kError);
    if (i % 256 == 0) CHECK(event.Synchronize().ok());
  }
  recording.join();
  CHECK(recorder.BlockHostUntilDone().ok());
  CHECK(waiter.BlockHostUntilDone().ok());
  CHECK(event.PollForStatus() == se::Event<se::opencl>::State::kComplete);
}

namespace {
cl_command_queue_properties QueueProperties(cl_command_queue queue) {
  cl_command_queue_properties properties = 0;
  REQUIRE(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof(properties), &properties, nullptr) == CL_SUCCESS);
  return properties;
}
}  // namespace

TEST_CASE("a stream's queue profiles only from its first timer on, and keeps its order", "[opencl][timer]") {
  auto* executor = OpenCLExecutor();
  constexpr std::size_t kCount = 1 << 14;
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kBusy, "busy");
  BusyKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto data = executor->AllocateOwnedArray<float>(kCount);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());
  cl_command_queue untimed = se::NativeQueue(stream);
  CHECK((QueueProperties(untimed) & CL_QUEUE_PROFILING_ENABLE) == 0);

  // Work queued before the switch (a slow kernel, then a host callback still
  // pending) must all come before work queued after it.
  std::vector<float> ones(kCount, 1.0f), from_callback(kCount, 0.0f), result(kCount, 0.0f);
  bool callback_ran = false;
  se::Timer timer(executor);
  REQUIRE(timer.Init().ok());
  stream.ThenMemcpyH2D<float>(ones, data.ptr())
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(kCount / 64), kernel, data.ptr(), 20000u)
      .ThenDoHostCallback([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::fill(from_callback.begin(), from_callback.end(), 3.0f);
        callback_ran = true;
      })
      .ThenStartTimer(&timer)
      .ThenMemcpyH2D<float>(from_callback, data.ptr())
      .ThenMemcpyD2H<float>(data.cref(), result)
      .ThenStopTimer(&timer);
  cl_command_queue timed = se::NativeQueue(stream);
  CHECK(timed != untimed);
  CHECK((QueueProperties(timed) & CL_QUEUE_PROFILING_ENABLE) != 0);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(callback_ran);
  CHECK(result == std::vector<float>(kCount, 3.0f));
  auto elapsed = timer.ElapsedNanoseconds();
  REQUIRE(elapsed.ok());
  CHECK(elapsed.value() > 0);

  // A second timer reuses the profiling queue.
  se::Timer again(executor);
  REQUIRE(again.Init().ok());
  REQUIRE(stream.ThenStartTimer(&again).ThenStopTimer(&again).BlockHostUntilDone().ok());
  CHECK(se::NativeQueue(stream) == timed);
  CHECK(again.ElapsedNanoseconds().ok());
}

TEST_CASE("a timer on an adopted queue without profiling says so when read, and the stream goes on",
          "[opencl][timer][errors]") {
  auto* executor = OpenCLExecutor();
  cl_int error = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueueWithProperties(executor->native_state().impl->context,
                                                              executor->native_state().impl->device, nullptr, &error);
  REQUIRE(error == CL_SUCCESS);
  {
    se::Stream stream(executor);
    REQUIRE(stream.InitAdopted(queue).ok());
    se::Timer timer(executor);
    REQUIRE(timer.Init().ok());
    REQUIRE(stream.ThenStartTimer(&timer).ThenStopTimer(&timer).BlockHostUntilDone().ok());
    CHECK(se::NativeQueue(stream) == queue);  // the user's queue is never replaced
    auto elapsed = timer.ElapsedNanoseconds();
    REQUIRE_FALSE(elapsed.ok());
    CHECK(Mentions(elapsed.status(), "CL_PROFILING_INFO_NOT_AVAILABLE"));
    CHECK(Mentions(elapsed.status(), "adopted without CL_QUEUE_PROFILING_ENABLE"));
    CHECK(stream.ok());
  }
  clReleaseCommandQueue(queue);
}

// Stream priorities are cl_khr_priority_hints' CL_QUEUE_PRIORITY_KHR on a
// queue of a device that lists the extension; PoCL here does not, so kLow and
// kHigh are refused there, and the queue's properties are read back where a
// device has it.
TEST_CASE("stream priorities: the queue's CL_QUEUE_PRIORITY_KHR, or UNIMPLEMENTED naming the extension",
          "[opencl][priority]") {
  CHECK(se::opencl_detail::QueuePriorityHint(se::StreamPriority::kHigh) == CL_QUEUE_PRIORITY_HIGH_KHR);
  CHECK(se::opencl_detail::QueuePriorityHint(se::StreamPriority::kLow) == CL_QUEUE_PRIORITY_LOW_KHR);
  CHECK(se::opencl_detail::QueuePriorityHint(se::StreamPriority::kNormal) == 0);  // no property: the default

  auto* executor = OpenCLExecutor();
  const cl_device_id device = executor->native_state().impl->device;
  const bool listed =
      se::opencl_detail::InfoString(clGetDeviceInfo, device, CL_DEVICE_EXTENSIONS).find("cl_khr_priority_hints") !=
      std::string::npos;
  // The priority a queue was made with, from its properties (0: none given).
  auto queue_priority = [](cl_command_queue queue) {
    std::size_t bytes = 0;
    REQUIRE(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES_ARRAY, 0, nullptr, &bytes) == CL_SUCCESS);
    std::vector<cl_queue_properties> properties(bytes / sizeof(cl_queue_properties) + 1, 0);
    REQUIRE(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES_ARRAY, bytes, properties.data(), nullptr) == CL_SUCCESS);
    for (std::size_t i = 0; i + 1 < properties.size() && properties[i] != 0; i += 2) {
      if (properties[i] == CL_QUEUE_PRIORITY_KHR) return properties[i + 1];
    }
    return cl_queue_properties{0};
  };

  for (se::StreamPriority priority : {se::StreamPriority::kLow, se::StreamPriority::kHigh}) {
    INFO("priority " << se::StreamPriorityName(priority));
    se::Timer timer(executor);
    se::Stream stream(executor);
    stream.InitWithTimer(&timer, priority);
    if (!listed) {
      CHECK(stream.status().code() == se::ErrorCode::kUnimplemented);
      CHECK(Mentions(stream.status(), "does not list cl_khr_priority_hints"));
      CHECK(Mentions(stream.status(), std::string("StreamPriority::") + std::string(se::StreamPriorityName(priority))));
      CHECK(Mentions(stream.status(), executor->DeviceLabel()));
      CHECK_FALSE(stream.initialized());
      continue;
    }
    REQUIRE(stream.ok());
    const cl_queue_properties expected = se::opencl_detail::QueuePriorityHint(priority);
    CHECK(queue_priority(stream.native_handle()->queue) == expected);
    // A timer moves the stream to a profiling queue, at the same priority.
    REQUIRE(stream.ThenStartTimer(&timer).ThenStopTimer(&timer).BlockHostUntilDone().ok());
    CHECK(stream.native_handle()->profiling);
    CHECK(queue_priority(stream.native_handle()->queue) == expected);
  }
  // kNormal sets no property, on every device.
  se::Stream normal(executor);
  REQUIRE(normal.Init(se::StreamPriority::kNormal).ok());
  CHECK(queue_priority(normal.native_handle()->queue) == 0);
}
