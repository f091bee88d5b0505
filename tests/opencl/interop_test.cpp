// Interop with OpenCL objects the test makes itself: a command queue and
// buffers created with the executor's context are adopted, used for copies and
// launches (slices included), and released by the test after our wrappers are
// gone, with reference counts showing that we neither leak nor over-release.
// Objects of another context, out-of-order queues and oversized adoptions are
// refused before anything is retained.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "opencl/opencl_test_util.hpp"

// Our headers include only <CL/cl.h>; a consumer who wants the C++ wrapper
// includes it after them, with no flags of its own.
#include <CL/opencl.hpp>

namespace {

cl_uint References(cl_mem memory) {
  cl_uint count = 0;
  REQUIRE(clGetMemObjectInfo(memory, CL_MEM_REFERENCE_COUNT, sizeof(count), &count, nullptr) == CL_SUCCESS);
  return count;
}
cl_uint References(cl_command_queue queue) {
  cl_uint count = 0;
  REQUIRE(clGetCommandQueueInfo(queue, CL_QUEUE_REFERENCE_COUNT, sizeof(count), &count, nullptr) == CL_SUCCESS);
  return count;
}

// PoCL drops the references its finished commands hold on a separate thread,
// a little after they complete: wait (a bounded time) for a count to come
// down to `expected`, and return what it is then. A count that stays higher
// is a leak; one lower than expected is an over-release either way.
template <typename Object>
cl_uint SettledReferences(Object object, cl_uint expected) {
  cl_uint count = References(object);
  for (int i = 0; i < 500 && count > expected; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count = References(object);
  }
  return count;
}

constexpr const char* kSaxpy = R"(
__kernel void saxpy(float a, __global const float* x, __global float* y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";
using SaxpyKernel = se::TypedKernel<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>;

}  // namespace

TEST_CASE("a test-made queue and buffers are adopted, used, and left to the test", "[opencl][interop]") {
  auto* executor = OpenCLExecutor();
  const cl_context context = se::NativeContext(*executor);
  const cl_device_id device = se::NativeDevice(*executor);
  cl_int error = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &error);
  REQUIRE(error == CL_SUCCESS);
  constexpr std::size_t kCount = 256;
  std::vector<float> ones(kCount, 1.0f);
  // x read-only: slices of it for a kernel inherit that (clCreateSubBuffer flags 0).
  cl_mem x =
      clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, kCount * sizeof(float), ones.data(), &error);
  REQUIRE(error == CL_SUCCESS);
  cl_mem y = clCreateBuffer(context, CL_MEM_READ_WRITE, kCount * sizeof(float), nullptr, &error);
  REQUIRE(error == CL_SUCCESS);
  // The test uses the queue first: drivers may hold references of their own
  // from recent commands (PoCL keeps one for the queue's last command), so the
  // counts below are relative to the one seen now.
  std::vector<float> zeros(kCount, 0.0f);
  REQUIRE(clEnqueueWriteBuffer(queue, y, CL_TRUE, 0, kCount * sizeof(float), zeros.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  const cl_uint queue_references = References(queue);
  REQUIRE(References(x) == 1);

  // Slices for the kernel start at an offset sub-buffers accept.
  const std::uint64_t align = executor->native_state().impl->base_address_align;
  const std::uint64_t slice_start = align <= sizeof(float) ? 64 : align / sizeof(float);
  REQUIRE(slice_start < kCount);
  std::vector<float> out(kCount, 0.0f);
  {
    se::Stream stream(executor);
    REQUIRE(stream.InitAdopted(queue).ok());
    CHECK(se::NativeQueue(stream) == queue);
    CHECK(References(queue) == queue_references + 1);  // the Stream's own reference

    se::StatusOr<se::DeviceMemory<float>> adopted_x = executor->AdoptDeviceMemory<float>(x, kCount);
    se::StatusOr<se::DeviceMemory<float>> adopted_y = executor->AdoptDeviceMemory<float>(y, kCount);
    REQUIRE(adopted_x.ok());
    REQUIRE(adopted_y.ok());
    CHECK(References(x) == 2);
    se::DeviceMemory<float> dx = adopted_x.value();
    se::DeviceMemory<float> dy = adopted_y.value();
    CHECK(se::NativeMemory(*executor, dy).value() == y);

    SaxpyKernel kernel(executor);
    se::MultiKernelLoaderSpec spec(4);
    spec.AddOpenCLTextInMemory(kSaxpy, "saxpy");
    REQUIRE(executor->GetKernel(spec, &kernel).ok());
    cl_kernel native_kernel = se::NativeKernel(*executor, kernel).value();
    char name[16] = {};
    REQUIRE(clGetKernelInfo(native_kernel, CL_KERNEL_FUNCTION_NAME, sizeof(name), name, nullptr) == CL_SUCCESS);
    CHECK(std::string(name) == "saxpy");

    se::DeviceMemory<float> x_tail = dx.GetSlice(slice_start, kCount - slice_start);
    se::DeviceMemory<float> y_tail = dy.GetSlice(slice_start, kCount - slice_start);
    const auto tail = static_cast<std::uint32_t>(kCount - slice_start);
    se::Event done(executor);
    REQUIRE(done.Init());
    REQUIRE(stream.ThenMemZero(&dy, kCount * sizeof(float))
                .ThenLaunch(se::ThreadDim(16), se::BlockDim(kCount / 16), kernel, 2.0f, &dx, &dy,
                            static_cast<std::uint32_t>(kCount))
                .ThenLaunch(se::ThreadDim(1), se::BlockDim(tail), kernel, 1.0f, &x_tail, &y_tail, tail)
                .ThenRecordEvent(&done)
                .ThenMemcpyD2H<float>(dy, out)
                .BlockHostUntilDone()
                .ok());
    CHECK(out[0] == 2.0f);
    CHECK(out[slice_start - 1] == 2.0f);
    CHECK(out[slice_start] == 3.0f);
    CHECK(out[kCount - 1] == 3.0f);

    cl_event marker = se::NativeEvent(done);
    REQUIRE(marker != nullptr);
    cl_command_queue recorded_on = nullptr;
    REQUIRE(clGetEventInfo(marker, CL_EVENT_COMMAND_QUEUE, sizeof(recorded_on), &recorded_on, nullptr) == CL_SUCCESS);
    CHECK(recorded_on == queue);

    // Forgetting drops our reference and the slices' sub-buffers.
    REQUIRE(executor->ForgetDeviceMemory(&dx).ok());
    REQUIRE(executor->ForgetDeviceMemory(&dy).ok());
    CHECK(SettledReferences(x, 1) == 1);
    CHECK(SettledReferences(y, 1) == 1);
  }
  // The queue and the buffers are the test's, and still work.
  std::vector<float> again(kCount, 0.0f);
  REQUIRE(clEnqueueReadBuffer(queue, y, CL_TRUE, 0, kCount * sizeof(float), again.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  CHECK(again == out);
  CHECK(clReleaseMemObject(x) == CL_SUCCESS);
  CHECK(clReleaseMemObject(y) == CL_SUCCESS);
  // Counted once the buffers are gone: PoCL keeps a buffer's last writing
  // command (on this queue) with the buffer, and that command holds the
  // queue. Then only the test's own reference is left.
  CHECK(SettledReferences(queue, 1) == 1);
  CHECK(clReleaseCommandQueue(queue) == CL_SUCCESS);
}

TEST_CASE("objects of another context, out-of-order queues and oversized buffers are refused",
          "[opencl][interop][errors]") {
  auto* executor = OpenCLExecutor();
  cl_device_id device = se::NativeDevice(*executor);
  cl_int error = CL_SUCCESS;
  cl_context other = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &error);
  REQUIRE(error == CL_SUCCESS);
  cl_command_queue foreign_queue = clCreateCommandQueueWithProperties(other, device, nullptr, &error);
  REQUIRE(error == CL_SUCCESS);
  cl_mem foreign_buffer = clCreateBuffer(other, CL_MEM_READ_WRITE, 64, nullptr, &error);
  REQUIRE(error == CL_SUCCESS);

  se::Stream stream(executor);
  se::Status queue_refused = stream.InitAdopted(foreign_queue).status();
  CHECK(queue_refused.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(queue_refused, "belongs to another context"));
  CHECK(References(foreign_queue) == 1);
  se::StatusOr<se::DeviceMemory<char>> memory_refused = executor->AdoptDeviceMemory<char>(foreign_buffer, 64);
  CHECK(memory_refused.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(memory_refused.status(), "the cl_mem belongs to another context"));
  CHECK(References(foreign_buffer) == 1);

  cl_mem ours = clCreateBuffer(se::NativeContext(*executor), CL_MEM_READ_WRITE, 64, nullptr, &error);
  REQUIRE(error == CL_SUCCESS);
  se::StatusOr<se::DeviceMemory<char>> too_big = executor->AdoptDeviceMemory<char>(ours, 65);
  CHECK(too_big.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(too_big.status(), "the cl_mem holds 64 (CL_MEM_SIZE)"));
  CHECK(References(ours) == 1);

  const cl_queue_properties out_of_order[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
  cl_command_queue unordered =
      clCreateCommandQueueWithProperties(se::NativeContext(*executor), device, out_of_order, &error);
  if (error == CL_SUCCESS) {
    se::Stream second(executor);
    se::Status refused = second.InitAdopted(unordered).status();
    CHECK(refused.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(refused, "out-of-order"));
    CHECK(References(unordered) == 1);
    CHECK(clReleaseCommandQueue(unordered) == CL_SUCCESS);
  } else {
    WARN("the device has no out-of-order queues (" << error << "): that refusal is not exercised");
  }
  CHECK(clReleaseMemObject(ours) == CL_SUCCESS);
  CHECK(clReleaseMemObject(foreign_buffer) == CL_SUCCESS);
  CHECK(clReleaseCommandQueue(foreign_queue) == CL_SUCCESS);
  CHECK(clReleaseContext(other) == CL_SUCCESS);
}

TEST_CASE("registered host memory is a mapped USE_HOST_PTR buffer while registered", "[opencl][pinned]") {
  auto* executor = OpenCLExecutor();
  auto& impl = *executor->native_state().impl;
  constexpr std::size_t kBytes = 1 << 16;
  std::unique_ptr<void, decltype(&std::free)> memory(std::aligned_alloc(4096, kBytes), &std::free);
  REQUIRE(memory);
  REQUIRE(executor->HostMemoryRegister(memory.get(), kBytes).ok());
  cl_mem buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    REQUIRE(impl.pinned.count(memory.get()) == 1);
    buffer = impl.pinned.at(memory.get());
  }
  void* host_ptr = nullptr;
  REQUIRE(clGetMemObjectInfo(buffer, CL_MEM_HOST_PTR, sizeof(host_ptr), &host_ptr, nullptr) == CL_SUCCESS);
  CHECK(host_ptr == memory.get());
  cl_uint maps = 0;
  REQUIRE(clGetMemObjectInfo(buffer, CL_MEM_MAP_COUNT, sizeof(maps), &maps, nullptr) == CL_SUCCESS);
  CHECK(maps == 1);

  auto* words = static_cast<std::uint32_t*>(memory.get());
  auto device = executor->AllocateOwnedArray<std::uint32_t>(kBytes / 4);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemset32(device.ptr(), 0xabcd1234u, kBytes)
              .ThenMemcpy(words, device.cref(), kBytes)
              .BlockHostUntilDone()
              .ok());
  CHECK(words[0] == 0xabcd1234u);
  CHECK(words[kBytes / 4 - 1] == 0xabcd1234u);
  REQUIRE(executor->HostMemoryUnregister(memory.get()).ok());
  std::lock_guard<std::mutex> lock(impl.mutex);
  CHECK(impl.pinned.count(memory.get()) == 0);
}

TEST_CASE("native handles wrap into CLHPP objects", "[opencl][interop]") {
  auto* executor = OpenCLExecutor();
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());
  cl::CommandQueue queue(se::NativeQueue(stream), /*retainObject=*/true);
  const cl_uint before = References(se::NativeQueue(stream));
  cl::Context context = queue.getInfo<CL_QUEUE_CONTEXT>();
  CHECK(context() == executor->native_state().impl->context);
  auto data = executor->AllocateOwnedArray<int>(4);
  cl::Buffer buffer(se::NativeMemory(*executor, *data.ptr()).value(), /*retainObject=*/true);
  const int pattern = 7;
  CHECK(queue.enqueueFillBuffer(buffer, pattern, 0, 4 * sizeof(int)) == CL_SUCCESS);
  CHECK(queue.finish() == CL_SUCCESS);
  std::vector<int> out(4);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(data.cref(), out).ok());
  CHECK(out == std::vector<int>(4, 7));
  CHECK(References(se::NativeQueue(stream)) == before);
}
