// Platforms and devices: every device of every platform the ICD loader shows,
// and the DeviceDescription filled from clGetDeviceInfo.
#include <vector>

#include "opencl/opencl_test_util.hpp"

TEST_CASE("every device of every platform is visible, flattened", "[opencl][platform]") {
  cl_uint platforms = 0;
  REQUIRE(clGetPlatformIDs(0, nullptr, &platforms) == CL_SUCCESS);
  std::vector<cl_platform_id> ids(platforms);
  REQUIRE(clGetPlatformIDs(platforms, ids.data(), nullptr) == CL_SUCCESS);
  int expected = 0;
  for (cl_platform_id id : ids) {
    cl_uint devices = 0;
    if (clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, 0, nullptr, &devices) == CL_SUCCESS)
      expected += static_cast<int>(devices);
  }
  auto& platform = se::Platform<se::opencl>::Get();
  CHECK(platform.VisibleDeviceCount() == expected);
  for (int i = 0; i < platform.VisibleDeviceCount(); ++i) {
    auto executor = platform.ExecutorForDevice(i);
    REQUIRE(executor.ok());
    CHECK(executor.value()->GetDeviceDescription().device_ordinal == i);
    CHECK(executor.value()->DeviceLabel() == fmt::format("opencl:{}", i));
  }
}

TEST_CASE("the description matches clGetDeviceInfo", "[opencl][platform]") {
  auto* executor = OpenCLExecutor();
  const cl_device_id device = executor->native_state().impl->device;
  const se::DeviceDescription& d = executor->GetDeviceDescription();
  auto text = [&](cl_device_info param) { return se::opencl_detail::InfoString(clGetDeviceInfo, device, param); };
  CHECK(d.name == text(CL_DEVICE_NAME));
  CHECK(d.vendor == text(CL_DEVICE_VENDOR));
  CHECK(d.driver_version == text(CL_DRIVER_VERSION));
  CHECK(d.api_version == text(CL_DEVICE_VERSION));
  CHECK(d.api_version.rfind("OpenCL ", 0) == 0);
  cl_ulong local = 0;
  REQUIRE(clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local), &local, nullptr) == CL_SUCCESS);
  CHECK(d.shared_memory_per_block == local);
  std::size_t group = 0;
  REQUIRE(clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(group), &group, nullptr) == CL_SUCCESS);
  CHECK(d.max_threads_per_block == group);
  std::size_t items[3] = {};
  REQUIRE(clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(items), items, nullptr) == CL_SUCCESS);
  CHECK(d.max_block_dims == se::Dim3{items[0], items[1], items[2]});
  CHECK(d.max_grid_dims.x * d.max_block_dims.x >= d.max_grid_dims.x);  // blocks x threads fits a size_t
  auto has = [&](std::string_view key) {
    for (const auto& [k, v] : d.extra) {
      if (k == key && !v.empty()) return true;
    }
    return false;
  };
  CHECK(has("OpenCL C version"));
  CHECK(has("preferred vector widths (char short int long float double half)"));
  CHECK(has("SVM capabilities"));
  CHECK(has("platform"));
  CHECK(d.ToString().find("SVM capabilities") != std::string::npos);
}

TEST_CASE("CL error codes have names", "[opencl][errors]") {
  using se::opencl_detail::ErrorName;
  CHECK(ErrorName(CL_INVALID_KERNEL_NAME) == "CL_INVALID_KERNEL_NAME");
  CHECK(ErrorName(CL_BUILD_PROGRAM_FAILURE) == "CL_BUILD_PROGRAM_FAILURE");
  CHECK(ErrorName(CL_INVALID_WORK_GROUP_SIZE) == "CL_INVALID_WORK_GROUP_SIZE");
  CHECK(ErrorName(-9999) == "an unknown OpenCL error");
  se::Status status = se::opencl_detail::ClError("clFoo", CL_OUT_OF_HOST_MEMORY, "doing {}", "bar");
  CHECK(status.code() == se::ErrorCode::kResourceExhausted);
  CHECK(status.message() == "clFoo failed with CL_OUT_OF_HOST_MEMORY (-6) doing bar");
}
