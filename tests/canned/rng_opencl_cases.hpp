// rng_test.cpp's OpenCL cases: the same seed gives the host's numbers, bit
// for bit for uniforms; Gaussians within the tolerance docs/rng.md states.
// Included once, at the end of rng_test.cpp, where the OpenCL backend is built.
#pragma once

#include <cstdio>

namespace {

se::StreamExecutor<se::opencl>* OpenCLExecutor() {
  return se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
}

}  // namespace

TEST_CASE("OpenCL uniforms are the host's, bit for bit", "[rng][opencl]") {
  auto* host = HostExecutor();
  auto* device = OpenCLExecutor();
  // Odd counts: the last Philox block is cut short on both sides.
  const std::vector<float> host_f = Draw<se::host, float>(host, 100003, false, 0, 1, kSeed, sizeof(kSeed));
  const std::vector<float> device_f = Draw<se::opencl, float>(device, 100003, false, 0, 1, kSeed, sizeof(kSeed));
  CHECK(Bits(device_f) == Bits(host_f));
  CHECK(Bits(device_f) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 0, 100003)));

  // The counters advance the same way: the next calls agree too.
  const std::vector<double> host_d = Draw<se::host, double>(host, 50001);
  const std::vector<double> device_d = Draw<se::opencl, double>(device, 50001);
  CHECK(Bits(device_d) == Bits(host_d));
  CHECK(Bits(device_d) == Bits(DirectUniformDoubles(kSeedKey, kSeedStream, 25001, 50001)));
}

TEST_CASE("OpenCL Gaussians agree with the host's within the documented tolerance", "[rng][opencl]") {
  auto* host = HostExecutor();
  auto* device = OpenCLExecutor();
  constexpr std::size_t n = 100002;
  const std::vector<float> host_f = Draw<se::host, float>(host, n, true, 0.5f, 2.0f, kSeed, sizeof(kSeed));
  const std::vector<float> device_f = Draw<se::opencl, float>(device, n, true, 0.5f, 2.0f, kSeed, sizeof(kSeed));
  CHECK(CountOutsideTolerance(host_f, device_f, 1e-5) == 0);
  const std::vector<double> host_d = Draw<se::host, double>(host, n, true, -3.0, 0.25);
  const std::vector<double> device_d = Draw<se::opencl, double>(device, n, true, -3.0, 0.25);
  CHECK(CountOutsideTolerance(host_d, device_d, 1e-12) == 0);
  // How often the bits agree as well (docs/rng.md quotes it for PoCL).
  std::printf("OpenCL vs host Gaussians, bit-identical: float %zu of %zu, double %zu of %zu\n",
              CountBitEqual(host_f, device_f), n, CountBitEqual(host_d, device_d), n);
  CheckMoments(device_f, 0.5, 4.0, 0.05);
}

TEST_CASE("OpenCL: the seed's errors and an unknown plugin", "[rng][opencl]") {
  auto* device = OpenCLExecutor();
  se::ScopedDeviceMemory<float> memory = device->AllocateOwnedArray<float>(8);
  se::Stream<se::opencl> stream(device);
  se::Status s = stream.Init().ThenSetRngSeed(kSeed, 4).ThenPopulateRandUniform(memory.ptr()).BlockHostUntilDone();
  CHECK(s.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(s, "ThenSetRngSeed on opencl:0: the seed is 4 bytes"));
}

TEST_CASE("OpenCL: an RNG plugin the backend does not have is UNIMPLEMENTED", "[rng][fresh]") {
  auto& platform = se::Platform<se::opencl>::Get();
  se::PluginConfig config;
  config.SetRng(se::RngPluginId{"opencl", "mersenne"});
  auto executor = platform.ExecutorForDeviceWithPluginConfig(0, config);
  REQUIRE(executor.ok());
  se::ScopedDeviceMemory<float> memory = executor.value()->AllocateOwnedArray<float>(8);
  se::Stream<se::opencl> stream(executor.value());
  se::Status s = stream.Init().ThenSetRngSeed(kSeed, 16).ThenPopulateRandUniform(memory.ptr()).BlockHostUntilDone();
  CHECK(s.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(s, "no RNG plugin 'mersenne' on the opencl platform"));
}
