// <streamexecutor/rng.hpp> in a CUDA translation unit: compiled and linked by
// nvcc -std=c++20 with -Werror, then run. The host backend draws for real and
// must match the shared formulas; the CUDA backend, where no device exists,
// must report why rather than pass.
#include <streamexecutor/rng.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace se = streamexecutor;

namespace {

const std::uint8_t kSeed[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

template <se::Backend B>
int Run(se::Platform<B>& platform, se::RngPluginId plugin) {
  se::PluginConfig config;
  config.SetRng(plugin);
  auto executor_or = platform.ExecutorForDeviceWithPluginConfig(0, config);
  if (!executor_or.ok()) {
    std::printf("%s: no device: %s\n", std::string(platform.Name()).c_str(), executor_or.status().ToString().c_str());
    return platform.VisibleDeviceCount() == 0 && !platform.InitStatus().ok() ? 0 : 1;
  }
  se::StreamExecutor<B>* executor = executor_or.value();
  constexpr std::size_t n = 1001;
  se::ScopedDeviceMemory<float> values = executor->template AllocateOwnedArray<float>(n);
  se::ScopedDeviceMemory<double> normals = executor->template AllocateOwnedArray<double>(n + 1);
  se::Stream<B> stream(executor);
  se::Status done = stream.Init()
                        .ThenSetRngSeed(kSeed, sizeof(kSeed))
                        .ThenPopulateRandUniform(values.ptr())
                        .ThenPopulateRandGaussian(0.0, 1.0, normals.ptr())
                        .BlockHostUntilDone();
  if (!done.ok()) {
    std::printf("%s: %s\n", std::string(platform.Name()).c_str(), done.ToString().c_str());
    return 1;
  }
  std::vector<float> host(n);
  if (!executor->SynchronousMemcpyD2H(values.cref(), n * sizeof(float), host.data()).ok()) return 1;
  for (std::size_t i = 0; i < n; ++i) {
    const se::rng_detail::PhiloxWords w =
        se::rng_detail::PhiloxBlock(0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull, i / 4);
    const float expected = se::rng_detail::UniformFloat(w.x[i % 4]);
    if (std::memcmp(&expected, &host[i], sizeof(float)) != 0) {
      std::printf("%s: value %zu differs from the shared formula\n", std::string(platform.Name()).c_str(), i);
      return 1;
    }
  }
  std::printf("%s: %zu uniforms match the shared formulas\n", std::string(platform.Name()).c_str(), n);
  return 0;
}

}  // namespace

int main() {
  int failures = Run(se::Platform<se::host>::Get(), se::host::kPhiloxPlugin);
  failures += Run(se::Platform<se::cuda>::Get(), se::cuda::kPhiloxPlugin);
  return failures == 0 ? 0 : 1;
}
