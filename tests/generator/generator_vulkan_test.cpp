// The headers generated from kernels.comp and bodies.comp (tools/se_kernel_header.py,
// through the Meson generator): their TypedKernel aliases pass the Vulkan
// backend's load-time check of the SPIR-V they embed, and the kernels launch
// and compute on the device (lavapipe here).
#include <catch2/catch.hpp>

#include <cstdint>
#include <streamexecutor/streamexecutor.hpp>
#include <type_traits>
#include <vector>

#include "bodies.comp.h"
#include "kernels.comp.h"

namespace se = streamexecutor;

namespace {

se::StreamExecutor<se::vulkan>* Executor() { return se::Platform<se::vulkan>::Get().ExecutorForDevice(0).ValueOrDie(); }

template <typename Kernel>
Kernel Load(const se::MultiKernelLoaderSpec& spec) {
  Kernel kernel(Executor());
  se::Status status = Executor()->GetKernel(spec, &kernel);
  INFO(status.ToString());
  REQUIRE(status.ok());
  return kernel;
}

}  // namespace

// The buffer bound at 1 is parameter 1; the push constants fill the others in order.
static_assert(std::is_same_v<gpucc::kernel::GlslScalars,
                             se::TypedKernel<std::int32_t, se::DeviceMemory<double>*, std::uint32_t, std::int64_t,
                                             std::uint64_t, float, double, std::int16_t, std::uint8_t>>);
// Bindings 0 and 1 count the buffers: buffers, push constants, then the shared array.
static_assert(std::is_same_v<gpucc::kernel::Bodies,
                             se::TypedKernel<se::DeviceMemory<gpucc::Body>*, se::DeviceMemory<gpucc::vec4>*, float,
                                             std::uint32_t, se::SharedDeviceMemory<float>>>);

TEST_CASE("every push-constant width arrives as the shader declares it", "[generator][vulkan]") {
  auto* executor = Executor();
  auto kernel = Load<gpucc::kernel::GlslScalars>(gpucc::spec::glsl_scalars());
  auto out = executor->AllocateOwnedArray<double>(8);
  std::vector<double> host(8);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, -2000000000, out.ptr(), 4000000000u,
                          std::int64_t{-1} << 40, std::uint64_t{1} << 60, 0.5f, 0.125, std::int16_t{-30000},
                          std::uint8_t{200})
              .ThenMemcpyD2H<double>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host == std::vector<double>{-2000000000.0, 4000000000.0, -static_cast<double>(std::int64_t{1} << 40),
                                    static_cast<double>(std::uint64_t{1} << 60), 0.5, 0.125, -30000, 200});
}

TEST_CASE("struct and vector buffers use the generated twins, shared arrays their constant", "[generator][vulkan]") {
  auto* executor = Executor();
  auto kernel = Load<gpucc::kernel::Bodies>(gpucc::spec::bodies());
  constexpr std::uint32_t kCount = 64, kBlock = 16;
  std::vector<gpucc::Body> bodies(kCount);
  for (std::uint32_t i = 0; i < kCount; ++i) {
    const float f = static_cast<float>(i);
    bodies[i] = gpucc::Body{{{f, 2 * f, 3 * f, -1}}, f + 1, 1000 + i};
  }
  auto d_bodies = executor->AllocateOwnedArray<gpucc::Body>(kCount);
  auto d_moments = executor->AllocateOwnedArray<gpucc::vec4>(kCount);
  std::vector<gpucc::vec4> moments(kCount);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<gpucc::Body>(bodies, d_bodies.ptr())
              .ThenLaunch(se::ThreadDim(kBlock), se::BlockDim(kCount / kBlock), kernel, d_bodies.ptr(), d_moments.ptr(),
                          0.5f, kCount, se::SharedDeviceMemory<float>(kBlock))
              .ThenMemcpyD2H<gpucc::vec4>(d_moments.cref(), moments)
              .BlockHostUntilDone()
              .ok());
  for (std::uint32_t i = 0; i < kCount; ++i) {
    const float f = static_cast<float>(i), mass = f + 1;
    const std::uint32_t neighbour = i / kBlock * kBlock + (i + 1) % kBlock;
    INFO("body " << i);
    CHECK(moments[i].s[0] == f * mass * 0.5f);
    CHECK(moments[i].s[1] == 2 * f * mass * 0.5f);
    CHECK(moments[i].s[2] == 3 * f * mass * 0.5f);
    CHECK(moments[i].s[3] == static_cast<float>(neighbour + 1) + static_cast<float>(1000 + i));
  }
}

TEST_CASE("the generated spec loads through the untyped path with the same parameter list", "[generator][vulkan]") {
  // An untyped load reads the list from the module alone (ReadParams); for a
  // shader whose buffers sit at their positions it is the generated one.
  auto* executor = Executor();
  se::UntypedKernel untyped(executor);
  se::Status status = executor->GetUntypedKernel(gpucc::spec::glsl_scalars(), &untyped);
  INFO(status.ToString());
  REQUIRE(status.ok());
  REQUIRE(untyped.params().size() == gpucc::kernel::GlslScalars::kArity);
  const std::vector<std::size_t> sizes{4, 0, 4, 8, 8, 4, 8, 2, 1};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    INFO("parameter " << i);
    CHECK(untyped.params()[i].takes_memory == (i == 1));
    if (i != 1) CHECK(untyped.params()[i].size == sizes[i]);
  }
}

TEST_CASE("se_spirv's module of the same shader loads into the generated alias", "[generator][vulkan]") {
  // The Meson generator names the entry point as the header does (the
  // `// se:kernel` line here), so a file on disk serves the same TypedKernel.
  se::MultiKernelLoaderSpec spec(gpucc::kernel::GlslScalars::kArity);
  spec.AddSpirvOnDisk(SE_GENERATOR_SPIRV_DIR "/kernels.spv", "glsl_scalars");
  auto kernel = Load<gpucc::kernel::GlslScalars>(spec);
  auto* executor = Executor();
  auto out = executor->AllocateOwnedArray<double>(8);
  std::vector<double> host(8);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenLaunch(se::ThreadDim(1), se::BlockDim(1), kernel, 7, out.ptr(), 8u, std::int64_t{9},
                          std::uint64_t{10}, 11.0f, 12.0, std::int16_t{13}, std::uint8_t{14})
              .ThenMemcpyD2H<double>(out.cref(), host)
              .BlockHostUntilDone()
              .ok());
  CHECK(host == std::vector<double>{7, 8, 9, 10, 11, 12, 13, 14});
}
