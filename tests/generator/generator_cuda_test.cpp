// The header generated from kernels.cu (tools/se_kernel_header.py, through the
// Meson generator), without a GPU: the aliases are the kernels' signatures,
// the embedded PTX passes the CUDA backend's load-time signature check for
// every kernel (extern "C", mangled, template instantiations), a wrong
// TypedKernel does not, the fatbin is embedded, and GetKernel plus a launch
// through the counting driver double (Meson puts it on LD_LIBRARY_PATH) pass
// the kernel exactly the parameter sizes nvcc's PTX declares.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include <streamexecutor/cuda.hpp>

#include "counting_driver_double.hpp"
#include "kernels.cu.h"

namespace se = streamexecutor;

namespace {

template <typename Kernel>
se::Status CheckPtx(const se::MultiKernelLoaderSpec& spec) {
  REQUIRE(spec.cuda_ptx() != nullptr);
  return se::cuda_detail::CheckPtxSignature(spec.cuda_ptx()->data, spec.cuda_ptx()->kernel_name, Kernel::ParamInfos(),
                                            "cuda:0");
}

template <typename T>
using Mem = se::DeviceMemory<T>*;

}  // namespace

static_assert(std::is_same_v<gpucc::kernel::Widths,
                             se::TypedKernel<std::int8_t, std::uint8_t, std::int16_t, std::uint16_t, std::int32_t,
                                             std::uint32_t, std::int64_t, std::uint64_t, float, double, char, bool,
                                             long long, unsigned long long, Mem<double>>>);
static_assert(
    std::is_same_v<gpucc::kernel::Pointers, se::TypedKernel<Mem<float>, Mem<float>, Mem<std::byte>, std::uint32_t>>);
static_assert(std::is_same_v<gpucc::kernel::ByValue, se::TypedKernel<gpucc::Particle, Mem<double>>>);
static_assert(std::is_same_v<gpucc::kernel::Scale<float, 2>, se::TypedKernel<Mem<float>, float, std::uint32_t>>);
static_assert(std::is_same_v<gpucc::kernel::Scale<std::int64_t, 3>,
                             se::TypedKernel<Mem<std::int64_t>, std::int64_t, std::uint32_t>>);
static_assert(
    std::is_same_v<gpucc::kernel::Fill<gpucc::Particle>, se::TypedKernel<Mem<gpucc::Particle>, gpucc::Particle>>);

TEST_CASE("every generated kernel passes the PTX signature check", "[generator][cuda]") {
  auto check = [](const se::Status& status) {
    INFO(status.ToString());
    CHECK(status.ok());
  };
  check(CheckPtx<gpucc::kernel::Widths>(gpucc::spec::widths()));
  check(CheckPtx<gpucc::kernel::Pointers>(gpucc::spec::pointers()));
  check(CheckPtx<gpucc::kernel::ByValue>(gpucc::spec::by_value()));
  check(CheckPtx<gpucc::kernel::Scale<float, 2>>(gpucc::spec::scale<float, 2>()));
  check(CheckPtx<gpucc::kernel::Scale<std::int64_t, 3>>(gpucc::spec::scale<std::int64_t, 3>()));
  check(CheckPtx<gpucc::kernel::Fill<double>>(gpucc::spec::fill<double>()));
  check(CheckPtx<gpucc::kernel::Fill<gpucc::Particle>>(gpucc::spec::fill<gpucc::Particle>()));
}

TEST_CASE("C++ kernels are named by their mangled entry, extern \"C\" ones by their own name", "[generator][cuda]") {
  CHECK(gpucc::spec::widths().cuda_ptx()->kernel_name == "widths");
  CHECK(gpucc::spec::pointers().cuda_ptx()->kernel_name == "_Z8pointersPKfPfPKvj");
  CHECK(gpucc::spec::scale<float, 2>().cuda_ptx()->kernel_name == "_Z5scaleIfLi2EEvPT_S0_j");
}

TEST_CASE("the same PTX refuses a TypedKernel that is not the kernel's", "[generator][cuda]") {
  // float where the mangled name says double.
  const se::Status wrong_element = CheckPtx<se::TypedKernel<gpucc::Particle, Mem<float>>>(gpucc::spec::by_value());
  INFO(wrong_element.ToString());
  CHECK(wrong_element.message().find("the element types differ") != std::string::npos);
  // A struct of another size than the kernel's Particle.
  struct Small {
    double mass;
  };
  const se::Status wrong_size = CheckPtx<se::TypedKernel<Small, Mem<double>>>(gpucc::spec::by_value());
  CHECK(wrong_size.message().find("sizes differ") != std::string::npos);
}

TEST_CASE("the fatbin nvcc built is embedded beside the PTX", "[generator][cuda]") {
  const se::MultiKernelLoaderSpec spec = gpucc::spec::by_value();
  REQUIRE(spec.cuda_fatbin() != nullptr);
  CHECK(spec.cuda_fatbin()->kernel_name == spec.cuda_ptx()->kernel_name);
  const std::string& fatbin = spec.cuda_fatbin()->data;
  REQUIRE(fatbin.size() > 16);
  std::uint32_t magic = 0;
  std::memcpy(&magic, fatbin.data(), sizeof(magic));
  CHECK(magic == 0xBA55ED50u);  // the fatbin container's header
}

TEST_CASE("the embedded PTX loads and launches through the driver", "[generator][cuda]") {
  auto* executor = se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie();
  // Found once the platform has opened libcuda.so.1, which meson.build points at the double.
  auto api = se_test::CountingDoubleApi::Find();
  REQUIRE(api.loaded());
  // The double reads PTX only: the same kernel without the fatbin.
  const se::MultiKernelLoaderSpec generated = gpucc::spec::scale<float, 2>();
  se::MultiKernelLoaderSpec spec(generated.arity());
  spec.AddCudaPtxInMemory(generated.cuda_ptx()->data, generated.cuda_ptx()->kernel_name);
  gpucc::kernel::Scale<float, 2> kernel(executor);
  se::Status loaded = executor->GetKernel(spec, &kernel);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  auto data = executor->AllocateOwnedArray<float>(64);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(32), se::BlockDim(2), kernel, data.ptr(), 1.5f, 64u)
              .BlockHostUntilDone()
              .ok());
  SeCountingDoubleLaunch launch{};
  REQUIRE(api.last_launch(&launch));
  CHECK(std::string_view(launch.kernel_name) == "_Z5scaleIfLi2EEvPT_S0_j");
  REQUIRE(launch.param_count == 3);
  CHECK(launch.param_sizes[0] == 8);
  CHECK(launch.param_sizes[1] == sizeof(float));
  CHECK(launch.param_sizes[2] == sizeof(std::uint32_t));
  float offset = 0;
  std::memcpy(&offset, launch.param_bytes[1], sizeof(offset));
  CHECK(offset == 1.5f);
}
