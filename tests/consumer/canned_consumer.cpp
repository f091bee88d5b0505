// A consumer of the canned operations, built against an installed
// streamexecutor (pkg-config or the CMake package's components) or the source
// tree (add_subdirectory): one operation of each family the build system asked
// for (SE_CONSUMER_BLAS, _RNG, _FFT, _DNN, _COLLECTIVES), run on the host backend, its result
// checked against values computed here. Prints "<family>: ok" for each, and
// exits non-zero on the first wrong value or error.
#include <streamexecutor/streamexecutor.hpp>

#if SE_CONSUMER_BLAS
#include <streamexecutor/blas.hpp>
#endif
#if SE_CONSUMER_RNG
#include <Random123/philox.h>
#include <Random123/u01fixedpt.h>

#include <streamexecutor/rng.hpp>
#endif
#if SE_CONSUMER_FFT
#include <streamexecutor/fft.hpp>
#endif
#if SE_CONSUMER_DNN
#include <streamexecutor/dnn.hpp>
#endif
#if SE_CONSUMER_COLLECTIVES
#include <streamexecutor/collectives.hpp>
#endif

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <span>
#include <thread>

namespace se = streamexecutor;
using Executor = se::StreamExecutor<se::host>;

namespace {

bool Fail(const char* family, const se::Status& status) {
  std::printf("%s: FAILED: %s\n", family, status.ToString().c_str());
  return false;
}

#if SE_CONSUMER_BLAS
// y = 2 x + y, through OpenBLAS.
bool Blas(Executor* executor) {
  const std::array<float, 4> x = {1.0f, 2.0f, 3.0f, 4.0f};
  std::array<float, 4> y = {10.0f, 20.0f, 30.0f, 40.0f};
  auto dx = executor->AllocateOwnedArray<float>(4);
  auto dy = executor->AllocateOwnedArray<float>(4);
  se::Stream stream(executor);
  se::Status status = stream.Init()
                          .ThenMemcpyH2D(std::span<const float>(x), dx.ptr())
                          .ThenMemcpyH2D(std::span<const float>(y), dy.ptr())
                          .ThenBlasAxpy(4, 2.0f, dx.cref(), 1, dy.ptr(), 1)
                          .ThenMemcpyD2H(dy.cref(), std::span<float>(y))
                          .BlockHostUntilDone();
  if (!status.ok()) return Fail("blas", status);
  const std::array<float, 4> expected = {12.0f, 24.0f, 36.0f, 48.0f};
  if (y != expected) {
    std::printf("blas: FAILED: axpy gave %g %g %g %g, expected 12 24 36 48\n", y[0], y[1], y[2], y[3]);
    return false;
  }
  std::printf("blas: ok (axpy %g %g %g %g)\n", y[0], y[1], y[2], y[3]);
  return true;
}
#endif

#if SE_CONSUMER_RNG
// Eight uniform floats from the seed 00..0f, against Random123 called here:
// key = seed bytes 0-7, stream = bytes 8-15 (little-endian), blocks 0 and 1
// (docs/rng.md, "The numbers, exactly"). They must be the same bits.
bool Rng(Executor* executor) {
  std::uint8_t seed[16];
  for (int i = 0; i < 16; ++i) seed[i] = static_cast<std::uint8_t>(i);
  std::array<float, 8> values{};
  auto device = executor->AllocateOwnedArray<float>(values.size());
  se::Stream stream(executor);
  se::Status status = stream.Init()
                          .ThenSetRngSeed(seed, sizeof(seed))
                          .ThenPopulateRandUniform(device.ptr())
                          .ThenMemcpyD2H(device.cref(), std::span<float>(values))
                          .BlockHostUntilDone();
  if (!status.ok()) return Fail("rng", status);
  r123::Philox4x32 philox;
  const r123::Philox4x32::key_type key = {{0x03020100u, 0x07060504u}};
  for (std::uint32_t block = 0; block < 2; ++block) {
    const r123::Philox4x32::ctr_type counter = {{block, 0u, 0x0b0a0908u, 0x0f0e0d0cu}};
    const r123::Philox4x32::ctr_type words = philox(counter, key);
    for (int i = 0; i < 4; ++i) {
      const float expected = u01fixedpt_open_closed_32_float(words.v[i]);
      if (values[block * 4 + i] != expected) {
        std::printf("rng: FAILED: value %u is %.9g, Random123 gives %.9g\n", block * 4 + i,
                    static_cast<double>(values[block * 4 + i]), static_cast<double>(expected));
        return false;
      }
    }
  }
  // examples/rng.cpp prints the same first value on every backend.
  if (std::fabs(values[0] - 0.28064328f) > 1e-7f) {
    std::printf("rng: FAILED: the first value is %.8f, examples/rng.cpp documents 0.28064328\n",
                static_cast<double>(values[0]));
    return false;
  }
  std::printf("rng: ok (%.8f %.8f %.8f ...)\n", static_cast<double>(values[0]), static_cast<double>(values[1]),
              static_cast<double>(values[2]));
#if defined(STREAMEXECUTOR_WITH_CUDA)
#if defined(STREAMEXECUTOR_RNG_HAVE_PHILOX_PTX)
  std::printf("rng: CUDA Philox PTX embedded\n");
#else
  std::printf("rng: CUDA Philox PTX missing\n");
#endif
#endif
#if defined(STREAMEXECUTOR_WITH_VULKAN)
#if defined(STREAMEXECUTOR_RNG_HAVE_PHILOX_SPIRV)
  std::printf("rng: Vulkan Philox SPIR-V embedded\n");
#else
  std::printf("rng: Vulkan Philox SPIR-V missing\n");
#endif
#endif
  return true;
}
#endif

#if SE_CONSUMER_FFT
// A 4-point forward C2C transform of 1 2 3 4: 10, -2+2i, -2, -2-2i.
bool Fft(Executor* executor) {
  using C = std::complex<float>;
  const std::array<C, 4> in = {C(1, 0), C(2, 0), C(3, 0), C(4, 0)};
  std::array<C, 4> out{};
  auto plan = se::fft::Create1dPlan(executor, 4, se::fft::Type::kC2CForward);
  if (!plan.ok()) return Fail("fft", plan.status());
  auto din = executor->AllocateOwnedArray<C>(4);
  auto dout = executor->AllocateOwnedArray<C>(4);
  se::Stream stream(executor);
  se::Status status = stream.Init()
                          .ThenMemcpyH2D(std::span<const C>(in), din.ptr())
                          .ThenFft(&plan.value(), *din.ptr(), dout.ptr())
                          .ThenMemcpyD2H(dout.cref(), std::span<C>(out))
                          .BlockHostUntilDone();
  if (!status.ok()) return Fail("fft", status);
  const std::array<C, 4> expected = {C(10, 0), C(-2, 2), C(-2, 0), C(-2, -2)};
  for (int i = 0; i < 4; ++i) {
    if (std::abs(out[i] - expected[i]) > 1e-5f) {
      std::printf("fft: FAILED: X[%d] = (%g, %g), expected (%g, %g)\n", i, static_cast<double>(out[i].real()),
                  static_cast<double>(out[i].imag()), static_cast<double>(expected[i].real()),
                  static_cast<double>(expected[i].imag()));
      return false;
    }
  }
  std::printf("fft: ok (X[1] = %g%+gi)\n", static_cast<double>(out[1].real()), static_cast<double>(out[1].imag()));
  return true;
}
#endif

#if SE_CONSUMER_DNN
// ReLU through oneDNN: -1 2 -3 4 -> 0 2 0 4.
bool Dnn(Executor* executor) {
  const std::array<float, 4> in = {-1.0f, 2.0f, -3.0f, 4.0f};
  std::array<float, 4> out = {7.0f, 7.0f, 7.0f, 7.0f};
  auto din = executor->AllocateOwnedArray<float>(4);
  auto dout = executor->AllocateOwnedArray<float>(4);
  const se::dnn::BatchDescriptor shape(/*count=*/1, /*feature_map_count=*/1, /*height=*/1, /*width=*/4);
  se::Stream stream(executor);
  se::Status status = stream.Init()
                          .ThenMemcpyH2D(std::span<const float>(in), din.ptr())
                          .ThenActivate(se::dnn::ActivationMode::kRelu, shape, *din.ptr(), dout.ptr())
                          .ThenMemcpyD2H(dout.cref(), std::span<float>(out))
                          .BlockHostUntilDone();
  if (!status.ok()) return Fail("dnn", status);
  const std::array<float, 4> expected = {0.0f, 2.0f, 0.0f, 4.0f};
  if (out != expected) {
    std::printf("dnn: FAILED: relu gave %g %g %g %g, expected 0 2 0 4\n", out[0], out[1], out[2], out[3]);
    return false;
  }
  std::printf("dnn: ok (relu %g %g %g %g)\n", out[0], out[1], out[2], out[3]);
  return true;
}
#endif

#if SE_CONSUMER_COLLECTIVES
// An all-reduce (max) over a loopback group of two ranks, each on a thread of its own.
bool Collectives(Executor* executor) {
  se::LoopbackGroup group(2);
  std::array<se::Communicator<se::host>, 2> comms = {group.Join(executor, 0), group.Join(executor, 1)};
  std::array<std::array<std::int32_t, 3>, 2> values = {{{1, 5, 3}, {4, 2, 6}}};
  std::array<se::Status, 2> statuses;
  std::array<std::thread, 2> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks[static_cast<std::size_t>(r)] = std::thread([&, r] {
      const auto i = static_cast<std::size_t>(r);
      auto memory = executor->AllocateOwnedArray<std::int32_t>(3);
      se::Stream stream(executor);
      statuses[i] = stream.Init()
                        .ThenMemcpyH2D(std::span<const std::int32_t>(values[i]), memory.ptr())
                        .ThenAllReduce(comms[i], memory.cref(), memory.ptr(), se::ReduceOp::kMax)
                        .ThenMemcpyD2H(memory.cref(), std::span<std::int32_t>(values[i]))
                        .BlockHostUntilDone();
    });
  }
  for (std::thread& t : ranks) t.join();
  for (const se::Status& status : statuses) {
    if (!status.ok()) return Fail("collectives", status);
  }
  const std::array<std::int32_t, 3> expected = {4, 5, 6};
  if (values[0] != expected || values[1] != expected) {
    std::printf("collectives: FAILED: max all-reduce gave %d %d %d and %d %d %d, expected 4 5 6\n", values[0][0],
                values[0][1], values[0][2], values[1][0], values[1][1], values[1][2]);
    return false;
  }
  std::printf("collectives: ok (all-reduce max %d %d %d on both ranks)\n", values[0][0], values[0][1], values[0][2]);
  return true;
}
#endif

}  // namespace

int main() {
  Executor* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  bool ok = true;
#if SE_CONSUMER_BLAS
  ok = Blas(executor) && ok;
#endif
#if SE_CONSUMER_RNG
  ok = Rng(executor) && ok;
#endif
#if SE_CONSUMER_FFT
  ok = Fft(executor) && ok;
#endif
#if SE_CONSUMER_DNN
  ok = Dnn(executor) && ok;
#endif
#if SE_CONSUMER_COLLECTIVES
  ok = Collectives(executor) && ok;
#endif
  return ok ? 0 : 1;
}
