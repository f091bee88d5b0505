// strict_warnings.cpp's companion for <streamexecutor/rng.hpp>: every RNG
// operation instantiated on every enabled backend, compiled (never run) by
// check.py under -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror with
// g++ and clang++, with the build's Random123 directory and, where nvcc built
// it, the embedded Philox PTX (whose literals must stay under 64 KiB).
#include <streamexecutor/rng.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>

namespace se = streamexecutor;

namespace {

template <typename B>
se::Status ExerciseRng(se::StreamExecutor<B>* executor) {
  const std::uint8_t seed[16] = {1, 2, 3};
  se::ScopedDeviceMemory<float> floats = executor->template AllocateOwnedArray<float>(64);
  se::ScopedDeviceMemory<double> doubles = executor->template AllocateOwnedArray<double>(64);
  se::Stream<B> stream(executor);
  return stream.Init()
      .ThenSetRngSeed(seed, sizeof(seed))
      .ThenPopulateRandUniform(floats.ptr())
      .ThenPopulateRandUniform(doubles.ptr())
      .ThenPopulateRandGaussian(0.5f, 2.0f, floats.ptr())
      .ThenPopulateRandGaussian(-1.0, 0.25, doubles.ptr())
      .BlockHostUntilDone();
}

template <typename B>
int RunRng(se::RngPluginId plugin) {
  se::PluginConfig config;
  config.SetRng(plugin);
  se::StatusOr<se::StreamExecutor<B>*> executor = se::Platform<B>::Get().ExecutorForDeviceWithPluginConfig(0, config);
  if (!executor.ok()) return 1;
  return ExerciseRng(executor.value()).ok() ? 0 : 1;
}

}  // namespace

int StrictRngEntry() {
  int result = 0;
  // Every enabled backend, se::host_serial (no adapter: UNAVAILABLE) included.
  se::EnabledBackends::ForEach([&result]<typename B>() { result += RunRng<B>(se::kDefaultPlugin); });
#if defined(STREAMEXECUTOR_WITH_CUDA)
  result += RunRng<se::cuda>(se::cuda::kCuRandPlugin);  // the vendor generator
#endif
  return result;
}
