// The seed's canned-operation example (random number generation), ported:
// same structure, same names. The platform comes from the command line:
// `rng host` (or opencl, cuda where they are built in); the RNG plugin
// constant (kRngPlugin below) is the only thing that differs between
// platforms. Prints a few of the numbers and exits non-zero on an error or a
// value outside (0, 1]; 77 where the platform has no RNG library.
#include <streamexecutor/rng.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>

namespace se = streamexecutor;

// The plugin constant of each platform: the seed's own choice,
// se::cuda::kCuRandPlugin, on CUDA; the backend's default elsewhere, Philox
// (host and OpenCL print the same numbers).
template <se::Backend B>
constexpr se::RngPluginId kRngPlugin = se::kDefaultPlugin;
#if defined(STREAMEXECUTOR_WITH_CUDA)
template <>
constexpr se::RngPluginId kRngPlugin<se::cuda> = se::cuda::kCuRandPlugin;
#endif

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  se::PluginConfig plugin_config;
  plugin_config.SetRng(kRngPlugin<B>);

  const int device_ordinal = 0;
  auto executor_or = platform->ExecutorForDeviceWithPluginConfig(device_ordinal, plugin_config);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "rng: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  const std::uint8_t seed[] = {0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf};
  constexpr std::uint64_t random_element_count = 1024;

  using HostArray = std::array<float, random_element_count>;

  HostArray host_memory;
  const size_t data_size = host_memory.size() * sizeof(HostArray::value_type);

  se::ScopedDeviceMemory<float> device_memory = executor->template AllocateOwnedArray<float>(random_element_count);

  se::Stream stream(executor);
  se::Status done = stream.Init()
                        .ThenSetRngSeed(seed, sizeof(seed))
                        .ThenPopulateRandUniform(device_memory.ptr())
                        .BlockHostUntilDone();
  if (!done.ok()) {
    std::fprintf(stderr, "rng: %s\n", done.ToString().c_str());
    // A platform without an RNG library: nothing to show,
    // which Meson's test runner counts as skipped (77), not as a failure.
    return done.code() == se::ErrorCode::kUnavailable ? 77 : 3;
  }

  if (se::Status copied = executor->SynchronousMemcpyD2H(*device_memory.ptr(), data_size, host_memory.data());
      !copied.ok()) {
    std::fprintf(stderr, "rng: %s\n", copied.ToString().c_str());
    return 4;
  }

  std::printf("%s: %llu uniform floats from seed 00..0f: %.8f %.8f %.8f ... %.8f\n",
              std::string(platform->Name()).c_str(), static_cast<unsigned long long>(random_element_count),
              static_cast<double>(host_memory[0]), static_cast<double>(host_memory[1]),
              static_cast<double>(host_memory[2]), static_cast<double>(host_memory[random_element_count - 1]));
  for (float value : host_memory) {
    if (!(value > 0.0f && value <= 1.0f)) return 1;
  }
  return 0;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "rng: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
