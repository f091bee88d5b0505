// The header generated from kernels.cl (tools/se_kernel_header.py, through
// the Meson generator): its TypedKernel aliases pass the OpenCL backend's
// load-time signature check and its kernels launch and compute on the device.
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels.cl.h"
#include "opencl/opencl_test_util.hpp"

namespace {

template <typename Kernel>
Kernel Load(const se::MultiKernelLoaderSpec& spec) {
  Kernel kernel(OpenCLExecutor());
  se::Status status = OpenCLExecutor()->GetKernel(spec, &kernel);
  INFO(status.ToString());
  REQUIRE(status.ok());
  return kernel;
}

}  // namespace

// The aliases are what the kernel's own signature says, width for width.
static_assert(
    std::is_same_v<gpucc::kernel::Scalars,
                   se::TypedKernel<std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t, std::uint32_t,
                                   std::int64_t, std::uint64_t, float, double, se::DeviceMemory<double>*>>);
static_assert(std::is_same_v<gpucc::kernel::AddressSpaces,
                             se::TypedKernel<se::DeviceMemory<std::int32_t>*, se::DeviceMemory<std::int32_t>*,
                                             se::SharedDeviceMemory<std::int32_t>, se::DeviceMemory<std::int32_t>*>>);
static_assert(
    std::is_same_v<gpucc::kernel::Halves, se::TypedKernel<se::DeviceMemory<std::uint16_t>*, se::DeviceMemory<float>*>>);

TEST_CASE("every scalar width arrives as the kernel declares it", "[generator][opencl]") {
  auto* executor = OpenCLExecutor();
  auto kernel = Load<gpucc::kernel::Scalars>(gpucc::spec::scalars());
  auto out = executor->AllocateOwnedArray<double>(10);
  std::vector<double> host(10);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, std::int8_t{-100}, std::uint8_t{200},
                          std::int16_t{-30000}, std::uint16_t{60000}, -2000000000, 4000000000u, std::int64_t{-1} << 40,
                          std::uint64_t{1} << 60, 0.5f, 0.125, out.ptr())
              .ThenMemcpyD2H<double>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host == std::vector<double>{-100, 200, -30000, 60000, -2000000000.0, 4000000000.0,
                                    -static_cast<double>(std::int64_t{1} << 40),
                                    static_cast<double>(std::uint64_t{1} << 60), 0.5, 0.125});
}

TEST_CASE("__global, __constant and __local pointers map to device and shared memory", "[generator][opencl]") {
  auto* executor = OpenCLExecutor();
  auto kernel = Load<gpucc::kernel::AddressSpaces>(gpucc::spec::address_spaces());
  constexpr std::uint32_t kCount = 64;
  std::vector<std::int32_t> in(kCount), table{1000, 2000, 3000, 4000}, result(kCount);
  for (std::uint32_t i = 0; i < kCount; ++i) in[i] = static_cast<std::int32_t>(i);
  auto d_in = executor->AllocateOwnedArray<std::int32_t>(kCount);
  auto d_table = executor->AllocateOwnedArray<std::int32_t>(4);
  auto d_out = executor->AllocateOwnedArray<std::int32_t>(kCount);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<std::int32_t>(in, d_in.ptr())
              .ThenMemcpyH2D<std::int32_t>(table, d_table.ptr())
              .ThenLaunch(se::ThreadDim(16), se::BlockDim(kCount / 16), kernel, d_in.ptr(), d_table.ptr(),
                          se::SharedDeviceMemory<std::int32_t>(16), d_out.ptr())
              .ThenMemcpyD2H<std::int32_t>(d_out.cref(), result)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t i = 0; i < kCount; ++i) CHECK(result[i] == in[i] + table[i % 4]);
}

TEST_CASE("structs and vectors by value use the generated twins", "[generator][opencl]") {
  auto* executor = OpenCLExecutor();
  auto kernel = Load<gpucc::kernel::Structs>(gpucc::spec::structs());
  auto out = executor->AllocateOwnedArray<float>(4);
  std::vector<float> host(4);
  const gpucc::Affine affine{1.5f, 7};
  const gpucc::Pair pair{0.5, 12, {1, 2, 3}};
  const gpucc::float4 vector{{1.0f, 2.0f, 3.0f, 4.0f}};
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, affine, pair, vector, out.ptr())
              .ThenMemcpyD2H<float>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host == std::vector<float>{10.0f, 6.0f, 6.0f, 10.0f});
}

TEST_CASE("half travels as its bits", "[generator][opencl]") {
  auto* executor = OpenCLExecutor();
  auto kernel = Load<gpucc::kernel::Halves>(gpucc::spec::halves());
  // IEEE binary16: 1.0, -2.0, 0.5, 65504 (the largest).
  std::vector<std::uint16_t> bits{0x3c00, 0xc000, 0x3800, 0x7bff};
  std::vector<float> result(4);
  auto d_in = executor->AllocateOwnedArray<std::uint16_t>(4);
  auto d_out = executor->AllocateOwnedArray<float>(4);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<std::uint16_t>(bits, d_in.ptr())
              .ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, d_in.ptr(), d_out.ptr())
              .ThenMemcpyD2H<float>(d_out.cref(), result)
              .BlockHostUntilDone()
              .ok());
  CHECK(result == std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f});
}

TEST_CASE("a generated spec carries the kernel's own source and name", "[generator][opencl]") {
  const se::MultiKernelLoaderSpec spec = gpucc::spec::structs();
  CHECK(spec.arity() == gpucc::kernel::Structs::kArity);
  REQUIRE(spec.opencl_text() != nullptr);
  CHECK(spec.opencl_text()->kernel_name == "structs");
  CHECK(spec.opencl_text()->data.find("__kernel void structs(Affine a") != std::string::npos);
}
