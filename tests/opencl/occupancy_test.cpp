// Kernel attributes and occupancy on OpenCL: each attribute is the driver's
// clGetKernelWorkGroupInfo answer (the static __local figure as read at load,
// before any launch set a __local argument), a declared reqd_work_group_size
// binds the queries and the suggestion, and the description's typed fields
// are clGetDeviceInfo's.
#include <cstdint>
#include <numeric>
#include <vector>

#include "opencl/opencl_test_util.hpp"

namespace {

constexpr const char* kKernels = R"(
__kernel void staged(__global float* data, __local float* dynamic_scratch) {
  __local float tile[128];
  float mine[16];
  size_t t = get_local_id(0), size = get_local_size(0);
  for (int i = 0; i < 16; ++i) mine[i] = data[get_global_id(0)] + (float)i;
  tile[t % 128] = mine[t % 16];
  barrier(CLK_LOCAL_MEM_FENCE);
  dynamic_scratch[t] = tile[(t + 1) % 128];
  barrier(CLK_LOCAL_MEM_FENCE);
  data[get_global_id(0)] = dynamic_scratch[(t + 1) % size];
}

__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void fixed(__global int* out) {
  out[get_global_id(0)] = (int)get_local_size(0);
}
)";

template <typename T>
T KernelInfo(cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info what) {
  T value{};
  REQUIRE(clGetKernelWorkGroupInfo(kernel, device, what, sizeof(T), &value, nullptr) == CL_SUCCESS);
  return value;
}

}  // namespace

TEST_CASE("the attributes are clGetKernelWorkGroupInfo's answers", "[opencl][occupancy]") {
  auto* executor = OpenCLExecutor();
  const cl_device_id device = se::NativeDevice(*executor);
  se::MultiKernelLoaderSpec spec(2);
  spec.AddOpenCLTextInMemory(kKernels, "staged");
  se::TypedKernel<se::DeviceMemory<float>*, se::SharedDeviceMemory<float>> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  const cl_kernel native = se::NativeKernel(*executor, kernel).value();
  const cl_ulong static_local = KernelInfo<cl_ulong>(native, device, CL_KERNEL_LOCAL_MEM_SIZE);

  auto attributes = executor->GetKernelAttributes(kernel);
  REQUIRE(attributes.ok());
  const se::KernelAttributes& a = attributes.value();
  INFO(a.ToString());
  CHECK(a.max_threads_per_block == KernelInfo<std::size_t>(native, device, CL_KERNEL_WORK_GROUP_SIZE));
  CHECK(a.preferred_block_size_multiple ==
        KernelInfo<std::size_t>(native, device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE));
  CHECK(a.local_memory_per_thread_bytes == KernelInfo<cl_ulong>(native, device, CL_KERNEL_PRIVATE_MEM_SIZE));
  CHECK(a.static_shared_memory_bytes == static_local);
  CHECK(a.static_shared_memory_bytes >= 128 * sizeof(float));
  CHECK(a.max_dynamic_shared_memory_bytes == executor->GetDeviceDescription().shared_memory_per_block - static_local);
  CHECK(a.registers_per_thread == 0);
  CHECK(a.ptx_version == 0);

  // A launch sets the __local argument on the cl_kernel, which the driver's
  // CL_KERNEL_LOCAL_MEM_SIZE then counts; the kernel's static figure stays.
  auto data = executor->AllocateOwnedArray<float>(256);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemZero(data.ptr(), 256 * sizeof(float))
              .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, data.ptr(), se::SharedDeviceMemory<float>(1000))
              .BlockHostUntilDone()
              .ok());
  CHECK(KernelInfo<cl_ulong>(native, device, CL_KERNEL_LOCAL_MEM_SIZE) > static_local);
  CHECK(executor->GetKernelAttributes(kernel).value().static_shared_memory_bytes == static_local);
}

TEST_CASE("a declared reqd_work_group_size binds every query", "[opencl][occupancy]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextInMemory(kKernels, "fixed");
  se::TypedKernel<se::DeviceMemory<int>*> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  auto attributes = executor->GetKernelAttributes(kernel);
  REQUIRE(attributes.ok());
  CHECK(attributes.value().required_block_dims == se::Dim3{64, 1, 1});
  CHECK(attributes.value().max_threads_per_block == 64);
  CHECK(attributes.value().ToString().find("required block 64x1x1") != std::string::npos);

  auto other = executor->MaxActiveBlocksPerMultiprocessor(kernel, 32);
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(other.status(), "reqd_work_group_size(64, 1, 1): every launch has exactly 64 threads per block"));
  CHECK(executor->MaxActiveBlocksPerMultiprocessor(kernel, 64).ok());

  auto best = executor->SuggestBlockSize(kernel);
  REQUIRE(best.ok());
  CHECK(best.value().threads_per_block == 64);
  std::vector<std::uint64_t> asked;
  auto per_size = executor->SuggestBlockSize(kernel, [&](std::uint64_t threads) {
    asked.push_back(threads);
    return std::uint64_t{0};
  });
  REQUIRE(per_size.ok());
  CHECK(asked == std::vector<std::uint64_t>{64});

  constexpr std::uint64_t blocks = 3;
  auto out = executor->AllocateOwnedArray<int>(64 * blocks);
  std::vector<int> host(64 * blocks, 0);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(best.value().threads_per_block), se::BlockDim(blocks), kernel, out.ptr())
              .ThenMemcpyD2H<int>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host == std::vector<int>(64 * blocks, 64));
}

TEST_CASE("the description's typed fields are clGetDeviceInfo's", "[opencl][occupancy][platform]") {
  auto* executor = OpenCLExecutor();
  const cl_device_id device = se::NativeDevice(*executor);
  const se::DeviceDescription& d = executor->GetDeviceDescription();
  auto info = [&]<typename T>(cl_device_info what, T) {
    T value{};
    REQUIRE(clGetDeviceInfo(device, what, sizeof(T), &value, nullptr) == CL_SUCCESS);
    return value;
  };
  CHECK(d.constant_memory_size == info(CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE, cl_ulong{}));
  CHECK(d.l2_cache_size == info(CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cl_ulong{}));
  CHECK(d.cache_line_size == info(CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE, cl_uint{}));
  CHECK(d.ecc_enabled == (info(CL_DEVICE_ERROR_CORRECTION_SUPPORT, cl_bool{}) != CL_FALSE));
  CHECK(d.integrated == (info(CL_DEVICE_HOST_UNIFIED_MEMORY, cl_bool{}) != CL_FALSE));
  if (info(CL_DEVICE_TYPE, cl_device_type{}) & CL_DEVICE_TYPE_CPU) {
    // A CPU compute unit runs one work-group at a time.
    CHECK(d.blocks_per_multiprocessor == 1);
    CHECK(d.threads_per_multiprocessor == d.max_threads_per_block);
    CHECK(d.shared_memory_per_multiprocessor == d.shared_memory_per_block);
  }
  for (const auto& [key, value] : d.extra) {
    INFO(key);
    CHECK(key.find("cache") == std::string::npos);
  }
}
