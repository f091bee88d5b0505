// rng_test.cpp's Vulkan cases (the SPIR-V of philox.comp): the same seed gives
// the host's numbers, bit for bit for uniforms; Gaussians within the tolerance
// docs/rng.md states. Included once, at the end of rng_test.cpp, where the
// Vulkan backend is built.
#pragma once

#include <cstdio>

namespace {

se::StreamExecutor<se::vulkan>* VulkanExecutor() {
  return se::Platform<se::vulkan>::Get().ExecutorForDevice(0).ValueOrDie();
}

}  // namespace

TEST_CASE("Vulkan uniforms are the host's, bit for bit", "[rng][vulkan]") {
  auto* host = HostExecutor();
  auto* device = VulkanExecutor();
  // Odd counts: the last Philox block is cut short on both sides.
  const std::vector<float> host_f = Draw<se::host, float>(host, 100003, false, 0, 1, kSeed, sizeof(kSeed));
  const std::vector<float> device_f = Draw<se::vulkan, float>(device, 100003, false, 0, 1, kSeed, sizeof(kSeed));
  CHECK(Bits(device_f) == Bits(host_f));
  CHECK(Bits(device_f) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 0, 100003)));

  // The counters advance the same way: the next calls agree too.
  const std::vector<double> host_d = Draw<se::host, double>(host, 50001);
  const std::vector<double> device_d = Draw<se::vulkan, double>(device, 50001);
  CHECK(Bits(device_d) == Bits(host_d));
  CHECK(Bits(device_d) == Bits(DirectUniformDoubles(kSeedKey, kSeedStream, 25001, 50001)));
}

TEST_CASE("Vulkan Gaussians agree with the host's within the documented tolerance", "[rng][vulkan]") {
  auto* host = HostExecutor();
  auto* device = VulkanExecutor();
  constexpr std::size_t n = 100002;
  const std::vector<float> host_f = Draw<se::host, float>(host, n, true, 0.5f, 2.0f, kSeed, sizeof(kSeed));
  const std::vector<float> device_f = Draw<se::vulkan, float>(device, n, true, 0.5f, 2.0f, kSeed, sizeof(kSeed));
  CHECK(CountOutsideTolerance(host_f, device_f, 1e-5) == 0);
  // Doubles: GLSL has no double log, sin or cos; philox.comp's own are held
  // to the same tolerance as every device's libm.
  const std::vector<double> host_d = Draw<se::host, double>(host, n, true, -3.0, 0.25);
  const std::vector<double> device_d = Draw<se::vulkan, double>(device, n, true, -3.0, 0.25);
  CHECK(CountOutsideTolerance(host_d, device_d, 1e-12) == 0);
  std::printf("Vulkan vs host Gaussians, bit-identical: float %zu of %zu, double %zu of %zu\n",
              CountBitEqual(host_f, device_f), n, CountBitEqual(host_d, device_d), n);
  CheckMoments(device_f, 0.5, 4.0, 0.05);
  CheckMoments(device_d, -3.0, 0.0625, 0.05);
}

TEST_CASE("Vulkan: a captured populate replays the numbers of its capture", "[rng][vulkan]") {
  auto* device = VulkanExecutor();
  constexpr std::size_t n = 1001;
  se::ScopedDeviceMemory<float> memory = device->AllocateOwnedArray<float>(n);
  se::Stream<se::vulkan> stream(device);
  REQUIRE(stream.Init().ThenSetRngSeed(kSeed, sizeof(kSeed)).BlockHostUntilDone().ok());
  se::CommandBuffer<se::vulkan> recorded(device);
  recorded.Init();
  REQUIRE(stream.BeginCapture(&recorded).ok());
  stream.ThenPopulateRandUniform(memory.ptr());
  REQUIRE(stream.EndCapture(&recorded).ok());
  std::vector<float> values(n);
  for (int run = 0; run < 2; ++run) {
    REQUIRE(stream.ThenMemZero(memory.ptr(), n * sizeof(float)).ThenSubmit(&recorded).BlockHostUntilDone().ok());
    REQUIRE(device->SynchronousMemcpyD2H(memory.cref(), n * sizeof(float), values.data()).ok());
    CHECK(Bits(values) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 0, n)));
  }
}

TEST_CASE("Vulkan: the seed's errors", "[rng][vulkan]") {
  auto* device = VulkanExecutor();
  se::ScopedDeviceMemory<float> memory = device->AllocateOwnedArray<float>(8);
  se::Stream<se::vulkan> stream(device);
  se::Status s = stream.Init().ThenSetRngSeed(kSeed, 4).ThenPopulateRandUniform(memory.ptr()).BlockHostUntilDone();
  CHECK(s.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(s, "ThenSetRngSeed on vulkan:0"));
  CHECK(Mentions(s, "the seed is 4 bytes"));
}

TEST_CASE("Vulkan: an RNG plugin the backend does not have is UNIMPLEMENTED", "[rng][fresh]") {
  auto& platform = se::Platform<se::vulkan>::Get();
  se::PluginConfig config;
  config.SetRng(se::RngPluginId{"vulkan", "mersenne"});
  auto executor = platform.ExecutorForDeviceWithPluginConfig(0, config);
  REQUIRE(executor.ok());
  se::ScopedDeviceMemory<float> memory = executor.value()->AllocateOwnedArray<float>(8);
  se::Stream<se::vulkan> stream(executor.value());
  se::Status s = stream.Init().ThenSetRngSeed(kSeed, 16).ThenPopulateRandUniform(memory.ptr()).BlockHostUntilDone();
  CHECK(s.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(s, "no RNG plugin 'mersenne' on the vulkan platform"));
}
