// <streamexecutor/rng.hpp> on the CUDA backend without a GPU: the counting
// driver double stands in for libcuda.so.1 and the cuRAND double for
// libcurand.so.10 (both folders on LD_LIBRARY_PATH, see meson.build).
//
// [curand]: se::cuda::kCuRandPlugin makes exactly the cuRAND calls it should,
// with the executor's stream, the output's device address and the element
// count; cuRAND's errors become Statuses that name the call. [philox]: the
// default plugin loads the embedded PTX and launches its kernels with the
// seed's key and stream words and a counter that advances by the blocks each
// call used. The two tags run in separate processes: an executor's RNG plugin
// is fixed by its first RNG call. What the kernels compute on a GPU is the
// host's numbers (rng_test.cpp checks the shared formulas on the host).
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>
#include <streamexecutor/rng.hpp>

#include "counting_driver_double.hpp"
#include "curand_double.hpp"

namespace se = streamexecutor;

namespace {

constexpr std::uint8_t kSeed[] = {0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf};
constexpr std::uint64_t kSeedKey = 0x0706050403020100ull;
constexpr std::uint64_t kSeedStream = 0x0f0e0d0c0b0a0908ull;

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

se::StreamExecutor<se::cuda>* Executor(se::RngPluginId plugin) {
  se::PluginConfig config;
  config.SetRng(plugin);
  auto executor = se::Platform<se::cuda>::Get().ExecutorForDeviceWithPluginConfig(0, config);
  INFO(executor.status().ToString());
  REQUIRE(executor.ok());
  return executor.value();
}

SeCurandDoubleState CurandState() {
  static se_test::CurandDoubleApi api = se_test::CurandDoubleApi::Find();
  REQUIRE(api.loaded());
  SeCurandDoubleState state{};
  api.state(&state);
  return state;
}
long CurandCalls(const char* name) {
  se_test::CurandDoubleApi api = se_test::CurandDoubleApi::Find();
  REQUIRE(api.loaded());
  return api.calls(name);
}

template <typename T>
T Param(const SeCountingDoubleLaunch& launch, std::size_t index) {
  T value{};
  REQUIRE(launch.param_sizes[index] == sizeof(T));
  std::memcpy(&value, launch.param_bytes[index], sizeof(T));
  return value;
}

}  // namespace

TEST_CASE("cuRAND plugin: one generator per executor, seeded from the seed's words", "[curand]") {
  auto* executor = Executor(se::cuda::kCuRandPlugin);
  se::ScopedDeviceMemory<float> memory = executor->AllocateOwnedArray<float>(1000);
  se::Stream<se::cuda> stream(executor);
  se::Status done =
      stream.Init().ThenSetRngSeed(kSeed, sizeof(kSeed)).ThenPopulateRandUniform(memory.ptr()).BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  const SeCurandDoubleState state = CurandState();
  CHECK(state.rng_type == CURAND_RNG_PSEUDO_PHILOX4_32_10);
  CHECK(state.live_generators == 1);
  CHECK(state.seed == (kSeedKey ^ kSeedStream));
  CHECK(state.offset == 0);
  CHECK(state.last_kind == 1);
  CHECK(state.last_count == 1000);
  CHECK(state.last_output ==
        reinterpret_cast<void*>(static_cast<std::uintptr_t>(se::NativeMemory(*executor, *memory.ptr()).value())));
  CHECK(state.last_generate_stream == static_cast<void*>(se::NativeQueue(stream)));
  std::vector<float> back(1000);
  REQUIRE(executor->SynchronousMemcpyD2H(memory.cref(), sizeof(float) * back.size(), back.data()).ok());
  CHECK(back.front() == 0.25f);
  CHECK(back.back() == 0.25f);

  // Later calls, on another stream too, reuse the generator and bind their own stream.
  se::ScopedDeviceMemory<double> doubles = executor->AllocateOwnedArray<double>(64);
  se::Stream<se::cuda> other(executor);
  REQUIRE(other.Init()
              .ThenPopulateRandUniform(doubles.ptr())
              .ThenPopulateRandGaussian(2.0, 0.5, doubles.ptr())
              .BlockHostUntilDone()
              .ok());
  const SeCurandDoubleState after = CurandState();
  CHECK(CurandCalls("curandCreateGenerator") == 1);
  CHECK(CurandCalls("curandGenerateUniformDouble") == 1);
  CHECK(after.last_kind == 4);
  CHECK(after.last_count == 64);
  CHECK(after.last_mean == 2.0);
  CHECK(after.last_stddev == 0.5);
  CHECK(after.last_generate_stream == static_cast<void*>(se::NativeQueue(other)));

  REQUIRE(stream.ThenPopulateRandGaussian(-1.0f, 3.0f, memory.ptr()).BlockHostUntilDone().ok());
  CHECK(CurandState().last_kind == 3);
  CHECK(CurandState().last_mean == -1.0);
  CHECK(CurandState().last_stddev == 3.0);
}

TEST_CASE("cuRAND plugin: its rules and errors", "[curand]") {
  auto* executor = Executor(se::cuda::kCuRandPlugin);
  se::ScopedDeviceMemory<float> odd = executor->AllocateOwnedArray<float>(7);
  se::Stream<se::cuda> seeded(executor);
  REQUIRE(seeded.Init().ThenSetRngSeed(kSeed, 8).BlockHostUntilDone().ok());
  CHECK(CurandState().seed == kSeedKey);  // 8 bytes: the stream word is zero

  SECTION("Gaussians come in pairs") {
    const long before = CurandCalls("curandGenerateNormal");
    se::Stream<se::cuda> stream(executor);
    se::Status s = stream.Init().ThenPopulateRandGaussian(0.0f, 1.0f, odd.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "ThenPopulateRandGaussian on cuda:0: cuRAND draws Gaussians in pairs"));
    CHECK(CurandCalls("curandGenerateNormal") == before);
  }
  SECTION("a failing cuRAND call names itself and its status") {
    se_test::CurandDoubleApi::Find().fail_next("curandGenerateUniform", CURAND_STATUS_LAUNCH_FAILURE);
    se::Stream<se::cuda> stream(executor);
    se::Status s = stream.Init().ThenPopulateRandUniform(odd.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInternal);
    CHECK(Mentions(s, "curandGenerateUniform on cuda:0: CURAND_STATUS_LAUNCH_FAILURE (201)"));
  }
  SECTION("a failing reseed") {
    se_test::CurandDoubleApi::Find().fail_next("curandSetPseudoRandomGeneratorSeed", CURAND_STATUS_NOT_INITIALIZED);
    se::Stream<se::cuda> stream(executor);
    se::Status s = stream.Init().ThenSetRngSeed(kSeed, 16).BlockHostUntilDone();
    CHECK(Mentions(s, "curandSetPseudoRandomGeneratorSeed on cuda:0: CURAND_STATUS_NOT_INITIALIZED"));
  }
}

TEST_CASE("cuRAND missing: UNAVAILABLE, naming the library and the package", "[curand][philox]") {
  const char* const absent[] = {"libcurand_absent_for_this_test.so.10"};
  const auto load = se::canned_detail::Load(se::rng_detail::kCuRandLibrary, se::rng_detail::kCuRandEntryPoints, absent);
  CHECK(load.status.code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(load.status, "the cuRAND plugin needs cuRAND (libcurand_absent_for_this_test.so.10)"));
  CHECK(Mentions(load.status, "install libcurand-13-0"));
}

TEST_CASE("CUDA Philox plugin: launches the embedded kernels with the seed and the counter", "[philox]") {
  static se_test::CountingDoubleApi driver = (Executor(se::cuda::kPhiloxPlugin), se_test::CountingDoubleApi::Find());
  REQUIRE(driver.loaded());
  auto* executor = Executor(se::cuda::kPhiloxPlugin);
  se::ScopedDeviceMemory<float> floats = executor->AllocateOwnedArray<float>(1000);
  se::ScopedDeviceMemory<double> doubles = executor->AllocateOwnedArray<double>(1001);
  se::Stream<se::cuda> stream(executor);
  REQUIRE(stream.Init()
              .ThenSetRngSeed(kSeed, sizeof(kSeed))
              .ThenPopulateRandUniform(floats.ptr())
              .BlockHostUntilDone()
              .ok());
  SeCountingDoubleLaunch launch{};
  REQUIRE(driver.last_launch(&launch));
  CHECK(std::string(launch.kernel_name) == "se_philox_uniform_f32");
  CHECK(launch.block[0] == 256);
  CHECK(launch.grid[0] == 1);  // 250 blocks of 4 floats: one block of 256 threads
  CHECK(launch.stream == static_cast<void*>(se::NativeQueue(stream)));
  CHECK(Param<std::uint64_t>(launch, 0) == kSeedKey);
  CHECK(Param<std::uint64_t>(launch, 1) == kSeedStream);
  CHECK(Param<std::uint64_t>(launch, 2) == 0);
  CHECK(Param<std::uint64_t>(launch, 3) == 1000);
  CHECK(Param<CUdeviceptr>(launch, 4) == se::NativeMemory(*executor, *floats.ptr()).value());

  REQUIRE(stream.ThenPopulateRandGaussian(1.5, 0.5, doubles.ptr()).BlockHostUntilDone().ok());
  REQUIRE(driver.last_launch(&launch));
  CHECK(std::string(launch.kernel_name) == "se_philox_gaussian_f64");
  CHECK(launch.grid[0] == 2);                     // 501 blocks of 2 doubles
  CHECK(Param<std::uint64_t>(launch, 2) == 250);  // after the 250 blocks above
  CHECK(Param<std::uint64_t>(launch, 3) == 1001);
  CHECK(Param<double>(launch, 4) == 1.5);
  CHECK(Param<double>(launch, 5) == 0.5);

  // Reseeding restarts the counter; every kernel was loaded once.
  REQUIRE(stream.ThenSetRngSeed(kSeed, 8).ThenPopulateRandUniform(doubles.ptr()).BlockHostUntilDone().ok());
  REQUIRE(driver.last_launch(&launch));
  CHECK(std::string(launch.kernel_name) == "se_philox_uniform_f64");
  CHECK(Param<std::uint64_t>(launch, 1) == 0);
  CHECK(Param<std::uint64_t>(launch, 2) == 0);
  CHECK(driver.calls("cuModuleLoadDataEx") == 1);
  CHECK(driver.calls("cuModuleGetFunction") == 3);
}
