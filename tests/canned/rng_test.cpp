// <streamexecutor/rng.hpp> on the host backend and, where it is built in, on
// OpenCL: the numbers against Random123 called directly (and its published
// known answer), the host and OpenCL streams bit for bit, the counter's
// advance and reproducibility, the moments of large samples, and every error.
//
// Tagged [fresh] cases need an executor that has never been seeded or used
// for RNG; meson.build runs them in a process of their own.
#include <catch2/catch.hpp>

#include <Random123/philox.h>
#include <Random123/u01fixedpt.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <streamexecutor/rng.hpp>
#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;

namespace {

constexpr std::uint8_t kSeed[] = {0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf};

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

// Random123 called directly, with the counter and key laid out as
// docs/rng.md specifies: no code of the library under test.
std::array<std::uint32_t, 4> DirectBlock(std::uint64_t key, std::uint64_t stream, std::uint64_t block) {
  philox4x32_ctr_t counter = {{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                               static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
  philox4x32_key_t words = {{static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)}};
  const philox4x32_ctr_t out = philox4x32_R(10, counter, words);
  return {out.v[0], out.v[1], out.v[2], out.v[3]};
}

std::vector<float> DirectUniformFloats(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block,
                                       std::size_t count) {
  std::vector<float> values;
  for (std::uint64_t block = first_block; values.size() < count; ++block) {
    for (std::uint32_t word : DirectBlock(key, stream, block)) {
      if (values.size() < count) values.push_back(u01fixedpt_open_closed_32_float(word));
    }
  }
  return values;
}

std::vector<double> DirectUniformDoubles(std::uint64_t key, std::uint64_t stream, std::uint64_t first_block,
                                         std::size_t count) {
  std::vector<double> values;
  for (std::uint64_t block = first_block; values.size() < count; ++block) {
    const std::array<std::uint32_t, 4> w = DirectBlock(key, stream, block);
    for (int half = 0; half < 2 && values.size() < count; ++half) {
      const std::uint64_t word =
          static_cast<std::uint64_t>(w[2 * half]) | (static_cast<std::uint64_t>(w[2 * half + 1]) << 32);
      values.push_back(u01fixedpt_open_closed_64_double(word));
    }
  }
  return values;
}

constexpr std::uint64_t kSeedKey = 0x0706050403020100ull;
constexpr std::uint64_t kSeedStream = 0x0f0e0d0c0b0a0908ull;

template <typename B, typename T>
std::vector<T> Draw(se::StreamExecutor<B>* executor, std::size_t count, bool gaussian = false, T mean = 0, T stddev = 1,
                    const std::uint8_t* seed = nullptr, std::uint64_t seed_bytes = 0) {
  se::ScopedDeviceMemory<T> memory = executor->template AllocateOwnedArray<T>(count);
  se::Stream<B> stream(executor);
  stream.Init();
  if (seed != nullptr) stream.ThenSetRngSeed(seed, seed_bytes);
  if (gaussian) {
    stream.ThenPopulateRandGaussian(mean, stddev, memory.ptr());
  } else {
    stream.ThenPopulateRandUniform(memory.ptr());
  }
  se::Status done = stream.BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  std::vector<T> values(count);
  REQUIRE(executor->SynchronousMemcpyD2H(memory.cref(), count * sizeof(T), values.data()).ok());
  return values;
}

template <typename T>
std::vector<std::uint64_t> Bits(const std::vector<T>& values) {
  std::vector<std::uint64_t> bits;
  for (T value : values) {
    std::uint64_t word = 0;
    std::memcpy(&word, &value, sizeof(T));
    bits.push_back(word);
  }
  return bits;
}

se::StreamExecutor<se::host>* HostExecutor() { return se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(); }

// A device's Gaussians against the host's: log, cos and sin (and on OpenCL
// sqrt unless made correctly rounded) may each be a few ulp off the host's libm.
template <typename T>
std::size_t CountOutsideTolerance(const std::vector<T>& host, const std::vector<T>& device, double relative) {
  std::size_t outside = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const double scale = std::max(1.0, std::abs(static_cast<double>(host[i])));
    if (std::abs(static_cast<double>(host[i]) - static_cast<double>(device[i])) > relative * scale) ++outside;
  }
  return outside;
}

template <typename T>
std::size_t CountBitEqual(const std::vector<T>& a, const std::vector<T>& b) {
  const std::vector<std::uint64_t> x = Bits(a), y = Bits(b);
  std::size_t equal = 0;
  for (std::size_t i = 0; i < x.size(); ++i) equal += x[i] == y[i] ? 1 : 0;
  return equal;
}

template <typename T>
void CheckMoments(const std::vector<T>& values, double mean, double variance, double tolerance) {
  double sum = 0, squares = 0;
  for (T v : values) sum += static_cast<double>(v);
  const double sample_mean = sum / static_cast<double>(values.size());
  for (T v : values) squares += (static_cast<double>(v) - sample_mean) * (static_cast<double>(v) - sample_mean);
  const double sample_variance = squares / static_cast<double>(values.size() - 1);
  CHECK(std::abs(sample_mean - mean) < tolerance);
  CHECK(std::abs(sample_variance - variance) < tolerance * (1 + variance));
}

}  // namespace

TEST_CASE("Philox4x32-10 through Random123 matches its published known answer", "[rng]") {
  // Random123's kat_vectors: philox4x32 10 rounds, counter and key all zero.
  const std::array<std::uint32_t, 4> block = DirectBlock(0, 0, 0);
  CHECK(block == std::array<std::uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
}

TEST_CASE("host uniform floats are Random123's, block after block", "[rng][host]") {
  auto* executor = HostExecutor();
  const std::uint8_t zero_seed[8] = {};
  const std::vector<float> values = Draw<se::host, float>(executor, 6, false, 0, 1, zero_seed, sizeof(zero_seed));
  // The known-answer block above, converted by u01fixedpt_open_closed_32_float: ((w >> 8) + 1) * 2^-24.
  CHECK(values[0] == std::ldexp(static_cast<float>((0x6627e8d5u >> 8) + 1), -24));
  CHECK(values[3] == std::ldexp(static_cast<float>((0x9b00dbd8u >> 8) + 1), -24));
  CHECK(Bits(values) == Bits(DirectUniformFloats(0, 0, 0, 6)));

  const std::vector<float> seeded = Draw<se::host, float>(executor, 1001, false, 0, 1, kSeed, sizeof(kSeed));
  CHECK(Bits(seeded) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 0, 1001)));
  // The next call starts at the block after the last one used (1001 floats: 251 blocks).
  const std::vector<float> next = Draw<se::host, float>(executor, 8);
  CHECK(Bits(next) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 251, 8)));
}

TEST_CASE("host uniform doubles are Random123's", "[rng][host]") {
  auto* executor = HostExecutor();
  const std::vector<double> values = Draw<se::host, double>(executor, 777, false, 0, 1, kSeed, sizeof(kSeed));
  CHECK(Bits(values) == Bits(DirectUniformDoubles(kSeedKey, kSeedStream, 0, 777)));
  for (double v : values) {
    CHECK(v > 0.0);
    CHECK(v <= 1.0);
  }
}

TEST_CASE("successive calls differ; the same seed and calls give the same numbers", "[rng][host]") {
  auto* executor = HostExecutor();
  const std::vector<float> first = Draw<se::host, float>(executor, 4096, false, 0, 1, kSeed, sizeof(kSeed));
  const std::vector<float> second = Draw<se::host, float>(executor, 4096);
  const std::vector<double> third = Draw<se::host, double>(executor, 100, true, 1.0, 2.0);
  CHECK(Bits(first) != Bits(second));
  std::size_t equal = 0;
  for (std::size_t i = 0; i < first.size(); ++i) equal += first[i] == second[i] ? 1 : 0;
  CHECK(equal < 8);  // 2^24 possible values: a handful of collisions at most

  CHECK(Bits(Draw<se::host, float>(executor, 4096, false, 0, 1, kSeed, sizeof(kSeed))) == Bits(first));
  CHECK(Bits(Draw<se::host, float>(executor, 4096)) == Bits(second));
  CHECK(Bits(Draw<se::host, double>(executor, 100, true, 1.0, 2.0)) == Bits(third));

  // Another stream word (bytes 8-15) is another sequence under the same key.
  std::uint8_t other[16];
  std::memcpy(other, kSeed, sizeof(other));
  other[15] ^= 0x80;
  CHECK(Bits(Draw<se::host, float>(executor, 4096, false, 0, 1, other, sizeof(other))) != Bits(first));
}

TEST_CASE("a captured populate writes the numbers of its capture at each submission; seeding is not captured",
          "[rng][host][capture]") {
  auto* executor = HostExecutor();
  const std::vector<float> expected = Draw<se::host, float>(executor, 1024, false, 0, 1, kSeed, sizeof(kSeed));
  se::Stream<se::host> stream(executor);
  stream.Init().ThenSetRngSeed(kSeed, sizeof(kSeed));
  auto memory = executor->AllocateOwnedArray<float>(1024);
  se::CommandBuffer<se::host> buffer(executor);
  buffer.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  stream.ThenPopulateRandUniform(memory.ptr());
  REQUIRE(stream.EndCapture(&buffer).ok());
  std::vector<float> first(1024), second(1024);
  REQUIRE(stream.ThenSubmit(&buffer)
              .ThenMemcpyD2H(memory.cref(), std::span<float>(first))
              .ThenMemZero(memory.ptr(), 1024 * sizeof(float))
              .ThenSubmit(&buffer)
              .ThenMemcpyD2H(memory.cref(), std::span<float>(second))
              .BlockHostUntilDone()
              .ok());
  CHECK(Bits(first) == Bits(expected));  // the first numbers after the seed, as a direct call draws them
  CHECK(Bits(second) == Bits(first));    // the counter was taken at capture

  se::CommandBuffer<se::host> seeding(executor);
  seeding.Init();
  REQUIRE(stream.BeginCapture(&seeding).ok());
  stream.ThenSetRngSeed(kSeed, sizeof(kSeed));
  const se::Status refused = stream.EndCapture(&seeding);
  CHECK(refused.code() == se::ErrorCode::kUnimplemented);
  CHECK(refused.message().find("ThenSetRngSeed") != std::string::npos);
}

TEST_CASE("one stream's calls in order, and two streams share the executor's counter", "[rng][host]") {
  auto* executor = HostExecutor();
  se::ScopedDeviceMemory<float> a = executor->AllocateOwnedArray<float>(10);
  se::ScopedDeviceMemory<float> b = executor->AllocateOwnedArray<float>(10);
  se::Stream<se::host> one(executor), two(executor);
  one.Init().ThenSetRngSeed(kSeed, sizeof(kSeed)).ThenPopulateRandUniform(a.ptr());
  two.Init().ThenPopulateRandUniform(b.ptr());
  REQUIRE(one.BlockHostUntilDone().ok());
  REQUIRE(two.BlockHostUntilDone().ok());
  std::vector<float> got_a(10), got_b(10);
  REQUIRE(executor->SynchronousMemcpyD2H(a.cref(), sizeof(float) * 10, got_a.data()).ok());
  REQUIRE(executor->SynchronousMemcpyD2H(b.cref(), sizeof(float) * 10, got_b.data()).ok());
  CHECK(Bits(got_a) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 0, 10)));
  CHECK(Bits(got_b) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 3, 10)));  // 10 floats took 3 blocks
}

TEST_CASE("large samples have the moments of their distributions", "[rng][host]") {
  auto* executor = HostExecutor();
  constexpr std::size_t n = 1 << 20;
  const std::vector<float> uniform = Draw<se::host, float>(executor, n, false, 0, 1, kSeed, sizeof(kSeed));
  CheckMoments(uniform, 0.5, 1.0 / 12.0, 0.002);
  const std::vector<double> uniform64 = Draw<se::host, double>(executor, n);
  CheckMoments(uniform64, 0.5, 1.0 / 12.0, 0.002);
  const std::vector<float> normal = Draw<se::host, float>(executor, n, true, 2.0f, 3.0f);
  CheckMoments(normal, 2.0, 9.0, 0.02);
  const std::vector<double> normal64 = Draw<se::host, double>(executor, n, true, -1.0, 0.5);
  CheckMoments(normal64, -1.0, 0.25, 0.005);
  std::size_t within_one_sigma = 0;
  for (float v : normal) within_one_sigma += std::abs(v - 2.0f) < 3.0f ? 1 : 0;
  CHECK(std::abs(static_cast<double>(within_one_sigma) / n - 0.6827) < 0.003);
}

TEST_CASE("RNG errors are stream errors that name the call", "[rng][host]") {
  auto* executor = HostExecutor();
  se::ScopedDeviceMemory<float> memory = executor->AllocateOwnedArray<float>(16);

  SECTION("a seed shorter than 8 bytes") {
    se::Stream<se::host> stream(executor);
    se::Status s = stream.Init().ThenSetRngSeed(kSeed, 7).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "ThenSetRngSeed on host:0: the seed is 7 bytes; it must be 8 to 16 bytes"));
  }
  SECTION("a seed longer than 16 bytes") {
    const std::uint8_t long_seed[17] = {};
    se::Stream<se::host> stream(executor);
    se::Status s = stream.Init().ThenSetRngSeed(long_seed, sizeof(long_seed)).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "the seed is 17 bytes"));
  }
  SECTION("a null seed") {
    se::Stream<se::host> stream(executor);
    const std::uint8_t* none = nullptr;
    se::Status s = stream.Init().ThenSetRngSeed(none, 16).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "the seed pointer is null"));
  }
  SECTION("a null output") {
    se::Stream<se::host> stream(executor);
    se::DeviceMemory<float>* none = nullptr;
    se::Status s = stream.Init().ThenSetRngSeed(kSeed, 16).ThenPopulateRandUniform(none).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "ThenPopulateRandUniform on host:0: the output DeviceMemory pointer is null"));
  }
  SECTION("a negative standard deviation") {
    se::Stream<se::host> stream(executor);
    se::Status s = stream.Init()
                       .ThenSetRngSeed(kSeed, 16)
                       .ThenPopulateRandGaussian(0.0f, -1.0f, memory.ptr())
                       .BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "ThenPopulateRandGaussian on host:0: the standard deviation is -1"));
  }
  SECTION("freed memory") {
    se::DeviceMemory<float> freed = executor->AllocateArray<float>(4);
    REQUIRE(executor->Deallocate(&freed).ok());
    se::Stream<se::host> stream(executor);
    se::Status s = stream.Init().ThenSetRngSeed(kSeed, 16).ThenPopulateRandUniform(&freed).BlockHostUntilDone();
    CHECK_FALSE(s.ok());
    CHECK(Mentions(s, "ThenPopulateRandUniform on host:0"));
  }
  SECTION("a stream that was not initialised") {
    se::Stream<se::host> stream(executor);
    se::Status s = stream.ThenPopulateRandUniform(memory.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(s, "ThenPopulateRandUniform on host:0: the stream was not initialized"));
  }
  SECTION("the first error sticks: later RNG calls neither run nor advance the counter") {
    se::Stream<se::host> seeded(executor);
    REQUIRE(seeded.Init().ThenSetRngSeed(kSeed, 16).BlockHostUntilDone().ok());
    se::Stream<se::host> stream(executor);
    se::Status s = stream.Init()
                       .ThenSetRngSeed(kSeed, 3)
                       .ThenSetRngSeed(kSeed, 16)
                       .ThenPopulateRandUniform(memory.ptr())
                       .BlockHostUntilDone();
    CHECK(Mentions(s, "the seed is 3 bytes"));
    // Still block 0: the failed stream's populate took nothing.
    CHECK(Bits(Draw<se::host, float>(executor, 16)) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 0, 16)));
  }
  SECTION("an empty output draws nothing") {
    se::DeviceMemory<float> empty = memory.ptr()->GetSlice(0, 0);
    se::Stream<se::host> stream(executor);
    REQUIRE(stream.Init().ThenSetRngSeed(kSeed, 16).ThenPopulateRandUniform(&empty).BlockHostUntilDone().ok());
    CHECK(Bits(Draw<se::host, float>(executor, 16)) == Bits(DirectUniformFloats(kSeedKey, kSeedStream, 0, 16)));
  }
}

TEST_CASE("without a seed, populating is FAILED_PRECONDITION", "[rng][fresh]") {
  auto* executor = HostExecutor();
  se::ScopedDeviceMemory<double> memory = executor->AllocateOwnedArray<double>(16);
  se::Stream<se::host> stream(executor);
  se::Status s = stream.Init().ThenPopulateRandGaussian(0.0, 1.0, memory.ptr()).BlockHostUntilDone();
  CHECK(s.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(s,
                 "ThenPopulateRandGaussian on host:0: no RNG seed was set on this device (call ThenSetRngSeed "
                 "first)"));
}

#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "canned/rng_opencl_cases.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_VULKAN)
#include "canned/rng_vulkan_cases.hpp"
#endif

// The device backends' cases compare against a device: without one, the
// whole program is a SKIP, not a pass.
int SeTestPreflight() {
  auto skip = [](std::string_view backend, const se::Status& why) {
    std::printf("SKIPPED: the %.*s platform has no device: %s\n", static_cast<int>(backend.size()), backend.data(),
                why.ToString().c_str());
    return 77;
  };
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  if (se::Platform<se::opencl>::Get().VisibleDeviceCount() == 0) {
    return skip("opencl", se::Platform<se::opencl>::Get().InitStatus());
  }
#endif
#if defined(STREAMEXECUTOR_WITH_VULKAN)
  if (se::Platform<se::vulkan>::Get().VisibleDeviceCount() == 0) {
    return skip("vulkan", se::Platform<se::vulkan>::Get().InitStatus());
  }
#endif
  return -1;
}
