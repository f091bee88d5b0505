// OpenCL memory: buffers and their limits, copies and fills at offsets,
// pinned host memory, and unified memory through fine-grained SVM.
#include <cstring>
#include <numeric>
#include <vector>

#include "opencl/opencl_test_util.hpp"

TEST_CASE("an allocation larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE is a clear Status", "[opencl][memory][errors]") {
  auto* executor = OpenCLExecutor();
  const std::uint64_t limit = executor->GetDeviceDescription().max_allocation_size;
  cl_ulong reported = 0;
  REQUIRE(clGetDeviceInfo(executor->native_state().impl->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(reported),
                          &reported, nullptr) == CL_SUCCESS);
  CHECK(limit == reported);
  // Through the core, which checks the described limit first.
  auto too_big = executor->TryAllocateArray<char>(limit + 1);
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == se::ErrorCode::kResourceExhausted);
  CHECK(Mentions(too_big.status(), fmt::format("largest allocation of {} bytes", limit)));
  // And the backend itself, for callers that bypass the core.
  auto direct = se::opencl::Allocate(executor->native_state(), limit + 1);
  REQUIRE_FALSE(direct.ok());
  CHECK(Mentions(direct.status(), "opencl:0"));
  CHECK(Mentions(direct.status(), std::to_string(limit + 1)));
}

TEST_CASE("copies and fills honour view offsets", "[opencl][memory]") {
  auto* executor = OpenCLExecutor();
  auto whole = executor->AllocateOwnedArray<int>(100);
  std::vector<int> host(100);
  std::iota(host.begin(), host.end(), 0);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(host, whole.ptr()).ok());
  se::DeviceMemory<int> middle = whole.cref().GetSlice(10, 20);
  std::vector<int> part(20);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(middle, part).ok());
  CHECK(part.front() == 10);
  CHECK(part.back() == 29);
  REQUIRE(executor->SynchronousMemset32(&middle, 0xdeadbeef, 8).ok());
  se::DeviceMemory<int> tail = whole.cref().GetSlice(90, 10);
  REQUIRE(executor->SynchronousMemcpyD2D<int>(tail, &middle).ok());
  se::DeviceMemoryBase bytes = whole.cref().GetSlice(50, 1);
  REQUIRE(executor->SynchronousMemZero(&bytes, 4).ok());
  REQUIRE(executor->SynchronousMemcpyD2H<int>(whole.cref(), host).ok());
  CHECK(host[9] == 9);
  CHECK(host[10] == 90);
  CHECK(host[19] == 99);
  CHECK(host[20] == 20);
  CHECK(host[50] == 0);
}

TEST_CASE("a 32-bit fill at an offset that is not a multiple of 4 is refused", "[opencl][memory][errors]") {
  auto* executor = OpenCLExecutor();
  auto whole = executor->AllocateOwnedArray<char>(64);
  se::DeviceMemoryBase odd = whole.cref().GetSlice(1, 8);
  se::Status status = executor->SynchronousMemset32(&odd, 1, 8);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "starts at byte offset 1"));
}

TEST_CASE("pinned host memory is mapped ALLOC_HOST_PTR memory usable for copies", "[opencl][memory][pinned]") {
  STATIC_REQUIRE(se::PinnedMemoryBackend<se::opencl>);
  // Synchronous copies go through the core's executor stream, not inline.
  STATIC_REQUIRE_FALSE(se::InlineExecutionBackend<se::opencl, se::op::MemcpyH2D>);
  auto* executor = OpenCLExecutor();
  auto& state = executor->native_state();
  se::StatusOr<void*> pinned = se::opencl::HostAllocate(state, 1024 * sizeof(float));
  REQUIRE(pinned.ok());
  auto* values = static_cast<float*>(pinned.value());
  std::iota(values, values + 1024, 0.0f);
  auto device = executor->AllocateOwnedArray<float>(1024);
  std::vector<float> back(1024);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpy(device.ptr(), values, 1024 * sizeof(float))
              .ThenMemZero(device.ptr(), 16 * sizeof(float))
              .ThenMemcpy(values, device.cref(), 1024 * sizeof(float))
              .BlockHostUntilDone()
              .ok());
  CHECK(values[15] == 0.0f);
  CHECK(values[16] == 16.0f);
  CHECK(values[1023] == 1023.0f);
  REQUIRE(se::opencl::HostDeallocate(state, values).ok());
  se::Status twice = se::opencl::HostDeallocate(state, values);
  CHECK(twice.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(twice, "was not returned by HostAllocate or was already freed"));
}

TEST_CASE("unified memory through fine-grained SVM, or kUnimplemented", "[opencl][memory][svm]") {
  STATIC_REQUIRE(se::UnifiedMemoryBackend<se::opencl>);
  auto* executor = OpenCLExecutor();
  auto& state = executor->native_state();
  se::StatusOr<se::DeviceMemory<int>> unified = executor->TryAllocateUnifiedArray<int>(64);
  if (!(state.impl->svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
    REQUIRE_FALSE(unified.ok());
    CHECK(unified.status().code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(unified.status(), "no fine-grained buffer SVM"));
    return;
  }
  REQUIRE(unified.ok());
  CHECK(executor->GetDeviceDescription().unified_memory);
  auto* host = static_cast<int*>(se::opencl::HostAddress(unified.value()));
  REQUIRE(host != nullptr);
  std::iota(host, host + 64, 0);  // the host writes directly, no copy

  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory("__kernel void add(__global int* d, int v) { d[get_global_id(0)] += v; }", "add");
  se::TypedKernel<se::DeviceMemory<int>*, int> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  se::DeviceMemory<int> memory = unified.value();
  se::DeviceMemory<int> upper = memory.GetSlice(32, 32);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(32), se::BlockDim(2), kernel, &memory, 100)
              .ThenLaunch(se::ThreadDim(32), se::BlockDim(1), kernel, &upper, 1000)
              .BlockHostUntilDone()
              .ok());
  CHECK(host[0] == 100);  // the host reads the kernel's results directly
  CHECK(host[31] == 131);
  CHECK(host[32] == 1132);
  CHECK(host[63] == 1163);
  REQUIRE(executor->Deallocate(&memory).ok());
}

TEST_CASE("SVM capabilities and allocation limits are described", "[opencl][memory][svm]") {
  const se::DeviceDescription& d = OpenCLExecutor()->GetDeviceDescription();
  bool svm_listed = false;
  for (const auto& [key, value] : d.extra) svm_listed |= key == "SVM capabilities" && !value.empty();
  CHECK(svm_listed);
  CHECK(d.max_allocation_size <= d.device_memory_size);
}
