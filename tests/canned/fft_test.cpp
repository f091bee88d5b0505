// <streamexecutor/fft.hpp> on the host backend (FFTW3) and, where built in,
// OpenCL (clFFT) and Vulkan (VkFFT, on lavapipe in CI): every transform type
// in 1, 2 and 3 dimensions against a
// naive DFT computed here in double precision, forward then inverse giving N
// times the input (the plugins are unnormalized), in-place transforms, and
// every error ThenFft and the plan makers give.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <streamexecutor/fft.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include "fft_reference.hpp"

namespace se = streamexecutor;
using se::fft::Type;

namespace {

using namespace fft_reference;

template <typename T>
double MaxError(const std::vector<T>& got, const std::vector<std::complex<double>>& want) {
  double worst = 0, scale = 1;
  for (const auto& w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(std::complex<double>(got[i]) - want[i]) / scale);
  }
  return worst;
}

template <typename B, typename Value>
std::vector<Value> Transform(se::StreamExecutor<B>* executor, se::FftPlan<B>& plan, const std::vector<Value>& input,
                             bool in_place = false) {
  se::ScopedDeviceMemory<Value> in = executor->template AllocateOwnedArray<Value>(input.size());
  se::ScopedDeviceMemory<Value> out = executor->template AllocateOwnedArray<Value>(input.size());
  se::Stream<B> stream(executor);
  stream.Init().ThenMemcpyH2D(std::span<const Value>(input), in.ptr());
  stream.ThenFft(&plan, *in.ptr(), in_place ? in.ptr() : out.ptr());
  std::vector<Value> result(input.size());
  stream.ThenMemcpyD2H(in_place ? in.cref() : out.cref(), std::span<Value>(result));
  se::Status done = stream.BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  return result;
}

template <typename B, typename In, typename Out>
std::vector<Out> TransformReal(se::StreamExecutor<B>* executor, se::FftPlan<B>& plan, const std::vector<In>& input,
                               std::size_t output_count) {
  se::ScopedDeviceMemory<In> in = executor->template AllocateOwnedArray<In>(input.size());
  se::ScopedDeviceMemory<Out> out = executor->template AllocateOwnedArray<Out>(output_count);
  se::Stream<B> stream(executor);
  std::vector<Out> result(output_count);
  se::Status done = stream.Init()
                        .ThenMemcpyH2D(std::span<const In>(input), in.ptr())
                        .ThenFft(&plan, *in.ptr(), out.ptr())
                        .ThenMemcpyD2H(out.cref(), std::span<Out>(result))
                        .BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  return result;
}

template <typename B>
se::FftPlan<B> MakePlan(se::StreamExecutor<B>* executor, Type type, const Dims& dims) {
  std::array<std::uint64_t, 3> d{1, 1, 1};
  for (std::size_t i = 0; i < dims.size(); ++i) d[i] = dims[i];
  auto plan = se::CreateFftPlan(executor, type, static_cast<int>(dims.size()), d);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

// Every transform type of one precision on `executor`, against the naive DFT.
template <typename B, typename Real>
void CheckTransforms(se::StreamExecutor<B>* executor, const Dims& dims, double tolerance) {
  using Complex = std::complex<Real>;
  constexpr bool kDouble = std::is_same_v<Real, double>;
  const std::size_t n = Product(dims);
  INFO("dims " << dims.size() << "-D, " << n << " elements, " << (kDouble ? "double" : "float"));
  const std::vector<std::complex<double>> x = RandomComplex(n, static_cast<unsigned>(n));
  std::vector<Complex> input(x.begin(), x.end());

  se::FftPlan<B> forward = MakePlan(executor, kDouble ? Type::kZ2ZForward : Type::kC2CForward, dims);
  se::FftPlan<B> inverse = MakePlan(executor, kDouble ? Type::kZ2ZInverse : Type::kC2CInverse, dims);
  const std::vector<Complex> y = Transform(executor, forward, input);
  CHECK(MaxError(y, NaiveDft(x, dims, -1)) < tolerance);
  CHECK(MaxError(Transform(executor, inverse, input), NaiveDft(x, dims, +1)) < tolerance);
  // In place, and inverse(forward(x)) = N x.
  CHECK(MaxError(Transform(executor, forward, input, /*in_place=*/true), NaiveDft(x, dims, -1)) < tolerance);
  std::vector<std::complex<double>> scaled(x);
  for (auto& v : scaled) v *= static_cast<double>(n);
  CHECK(MaxError(Transform(executor, inverse, y), scaled) < tolerance);

  // Real to complex, and back.
  std::vector<Real> real(n);
  std::vector<std::complex<double>> real_as_complex(n);
  for (std::size_t i = 0; i < n; ++i) {
    real[i] = static_cast<Real>(x[i].real());
    real_as_complex[i] = static_cast<double>(real[i]);
  }
  const std::vector<std::complex<double>> half = Half(NaiveDft(real_as_complex, dims, -1), dims);
  se::FftPlan<B> r2c = MakePlan(executor, kDouble ? Type::kD2Z : Type::kR2C, dims);
  const std::vector<Complex> spectrum = TransformReal<B, Real, Complex>(executor, r2c, real, half.size());
  CHECK(MaxError(spectrum, half) < tolerance);
  se::FftPlan<B> c2r = MakePlan(executor, kDouble ? Type::kZ2D : Type::kC2R, dims);
  const std::vector<Real> back = TransformReal<B, Complex, Real>(executor, c2r, spectrum, n);
  std::vector<std::complex<double>> real_scaled(n);
  for (std::size_t i = 0; i < n; ++i) real_scaled[i] = real_as_complex[i] * static_cast<double>(n);
  CHECK(MaxError(back, real_scaled) < tolerance);
}

// Every shape in both precisions. A clFFT plan compiles its kernels when it
// is made (seconds each on PoCL, cached on disk after the first run), so
// OpenCL runs each rank once per precision, not every shape twice.
template <typename B>
void CheckAllShapes(se::StreamExecutor<B>* executor, bool every_shape_twice) {
  if (every_shape_twice) {
    for (const Dims& dims : {Dims{64}, Dims{60}, Dims{8, 12}, Dims{4, 6, 8}}) {
      CheckTransforms<B, float>(executor, dims, 2e-5);
      CheckTransforms<B, double>(executor, dims, 1e-12);
    }
    return;
  }
  CheckTransforms<B, float>(executor, Dims{60}, 2e-5);
  CheckTransforms<B, double>(executor, Dims{64}, 1e-12);
  CheckTransforms<B, float>(executor, Dims{8, 12}, 2e-5);
  CheckTransforms<B, double>(executor, Dims{4, 6, 8}, 1e-12);
}

template <typename B>
void CheckErrors(se::StreamExecutor<B>* executor, std::string_view device) {
  se::FftPlan<B> plan = MakePlan(executor, Type::kC2CForward, {16});
  se::ScopedDeviceMemory<std::complex<float>> small = executor->template AllocateOwnedArray<std::complex<float>>(8);
  se::ScopedDeviceMemory<std::complex<float>> big = executor->template AllocateOwnedArray<std::complex<float>>(16);
  se::ScopedDeviceMemory<float> reals = executor->template AllocateOwnedArray<float>(16);
  const std::string on = "ThenFft on " + std::string(device);

  SECTION("buffers smaller than the plan") {
    se::Stream<B> stream(executor);
    se::Status s = stream.Init().ThenFft(&plan, *small.ptr(), big.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kOutOfRange);
    CHECK(Mentions(s, on + ": the C2C forward 1-D 16 plan reads 16 input and writes 16 output elements, but the "
                           "input holds 8 and the output 16"));
  }
  SECTION("element types the plan does not take") {
    se::Stream<B> stream(executor);
    se::Status s = stream.Init().ThenFft(&plan, *reals.ptr(), big.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "plan does not take float input"));
  }
  SECTION("a real transform in place") {
    se::FftPlan<B> c2r = MakePlan(executor, Type::kC2R, {16});
    se::Stream<B> stream(executor);
    se::DeviceMemory<float> aliased(*big.ptr());
    se::Status s = stream.Init().ThenFft(&c2r, *big.ptr(), &aliased).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "cannot run in place"));
  }
  SECTION("input and output overlapping without being the same") {
    se::Stream<B> stream(executor);
    se::ScopedDeviceMemory<std::complex<float>> wide = executor->template AllocateOwnedArray<std::complex<float>>(24);
    se::DeviceMemory<std::complex<float>> first = wide.ptr()->GetSlice(0, 16), shifted = wide.ptr()->GetSlice(8, 16);
    se::Status s = stream.Init().ThenFft(&plan, first, &shifted).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "overlap without being the same memory"));
  }
  SECTION("null and empty plans") {
    se::Stream<B> stream(executor);
    se::FftPlan<B>* none = nullptr;
    CHECK(
        Mentions(stream.Init().ThenFft(none, *big.ptr(), big.ptr()).BlockHostUntilDone(), "the plan pointer is null"));
    se::FftPlan<B> empty;
    se::Stream<B> other(executor);
    CHECK(Mentions(other.Init().ThenFft(&empty, *big.ptr(), big.ptr()).BlockHostUntilDone(), "the plan is empty"));
  }
  SECTION("shapes") {
    auto zero = se::fft::Create2dPlan(executor, 4, 0, Type::kC2CForward);
    CHECK(zero.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(zero.status(), "dimension 1 of the C2C forward plan is 0"));
    auto rank = se::CreateFftPlan(executor, Type::kR2C, 4, {2, 2, 2});
    CHECK(Mentions(rank.status(), "an FFT has 1 to 3 dimensions, not 4"));
  }
}

}  // namespace

#if defined(STREAMEXECUTOR_FFT_WITH_FFTW3)
TEST_CASE("FFTW3 plugin: every type, 1-D to 3-D, against a naive DFT", "[fft][host]") {
  CheckAllShapes(se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(), true);
}
TEST_CASE("FFTW3 plugin: errors", "[fft][host]") {
  CheckErrors(se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(), "host:0");
}
TEST_CASE("FFTW3 plugin: a captured transform runs at each submission and outlives its plan", "[fft][host][capture]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  std::vector<std::complex<float>> input(16);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = {static_cast<float>(i % 5), static_cast<float>(i % 3)};
  auto plan = std::make_unique<se::FftPlan<se::host>>(MakePlan(executor, Type::kC2CForward, {16}));
  const std::vector<std::complex<float>> direct = Transform(executor, *plan, input);
  auto in = executor->AllocateOwnedArray<std::complex<float>>(16);
  auto out = executor->AllocateOwnedArray<std::complex<float>>(16);
  REQUIRE(executor->SynchronousMemcpyH2D(std::span<const std::complex<float>>(input), in.ptr()).ok());
  se::Stream<se::host> stream(executor);
  stream.Init();
  se::CommandBuffer<se::host> buffer(executor);
  buffer.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  stream.ThenFft(plan.get(), in.cref(), out.ptr());
  REQUIRE(stream.EndCapture(&buffer).ok());
  plan.reset();  // the buffer holds what it needs
  std::vector<std::complex<float>> got(16);
  REQUIRE(stream.ThenMemZero(out.ptr(), 16 * sizeof(std::complex<float>))
              .ThenSubmit(&buffer)
              .ThenMemcpyD2H(out.cref(), std::span<std::complex<float>>(got))
              .BlockHostUntilDone()
              .ok());
  CHECK(got == direct);
}
#endif

#if defined(STREAMEXECUTOR_FFT_WITH_CLFFT)
TEST_CASE("clFFT plugin: a transform cannot be captured", "[fft][opencl][capture]") {
  auto* executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  se::FftPlan<se::opencl> plan = MakePlan(executor, Type::kC2CForward, {8});
  auto data = executor->AllocateOwnedArray<std::complex<float>>(8);
  se::Stream<se::opencl> stream(executor);
  stream.Init();
  se::CommandBuffer<se::opencl> buffer(executor);
  buffer.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  stream.ThenFft(&plan, data.cref(), data.ptr());
  const se::Status captured = stream.EndCapture(&buffer);
  CHECK(captured.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(captured, "ThenFft (clFFT)"));
  CHECK(stream.ok());  // the capture failed, not the stream
}
TEST_CASE("clFFT plugin: every type, 1-D to 3-D, against a naive DFT", "[fft][opencl]") {
  CheckAllShapes(se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie(), false);
}
TEST_CASE("clFFT plugin: errors, and slices it cannot take", "[fft][opencl]") {
  auto* executor = se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
  CheckErrors(executor, "opencl:0");
  se::FftPlan<se::opencl> plan = MakePlan(executor, Type::kC2CForward, {8});
  se::ScopedDeviceMemory<std::complex<float>> data = executor->AllocateOwnedArray<std::complex<float>>(16);
  se::DeviceMemory<std::complex<float>> slice = data.ptr()->GetSlice(8, 8);
  se::Stream<se::opencl> stream(executor);
  se::Status s = stream.Init().ThenFft(&plan, slice, data.ptr()).BlockHostUntilDone();
  CHECK(s.code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(s, "clFFT transforms whole buffers"));
}

int SeTestPreflight() {
  auto& platform = se::Platform<se::opencl>::Get();
  if (platform.VisibleDeviceCount() == 0) {
    std::printf("SKIPPED: the opencl platform has no device: %s\n", platform.InitStatus().ToString().c_str());
    return 77;
  }
  return -1;
}
#endif

#if defined(STREAMEXECUTOR_FFT_WITH_VKFFT)
namespace {
se::StreamExecutor<se::vulkan>* VulkanExecutor() {
  auto& platform = se::Platform<se::vulkan>::Get();
  if (platform.VisibleDeviceCount() == 0) return nullptr;
  return platform.ExecutorForDevice(0).ValueOrDie();
}
}  // namespace

// VkFFT compiles each plan's shaders with glslang and the driver (about a
// second on lavapipe): each rank once per precision, as on OpenCL.
TEST_CASE("VkFFT plugin: every type, 1-D to 3-D, against a naive DFT", "[fft][vulkan]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) {
    WARN("no Vulkan device: " << se::Platform<se::vulkan>::Get().InitStatus().ToString());
    return;
  }
  CheckAllShapes(executor, false);
  CheckTransforms<se::vulkan, float>(executor, Dims{64}, 2e-5);
  CheckTransforms<se::vulkan, double>(executor, Dims{60}, 1e-12);
  // A prime past VkFFT's radices: Bluestein's algorithm, whose kernels VkFFT
  // prepares on the queue while it plans.
  CheckTransforms<se::vulkan, float>(executor, Dims{97}, 2e-5);
  CheckTransforms<se::vulkan, double>(executor, Dims{97}, 1e-12);
}
TEST_CASE("VkFFT plugin: errors", "[fft][vulkan]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) return;
  CheckErrors(executor, executor->DeviceLabel());
}
TEST_CASE("VkFFT plugin: se::vulkan::kVkFftPlugin, the Vulkan backend's default FFT plugin", "[fft][vulkan]") {
  STATIC_REQUIRE(se::vulkan::kVkFftPlugin.name == se::fft_detail::Adapter<se::vulkan>::kPluginName);
  CHECK(se::vulkan::DefaultPlugins().fft() == se::vulkan::kVkFftPlugin);
}
TEST_CASE("VkFFT plugin: slices, other buffers in flight, and a plan freed while its work is queued", "[fft][vulkan]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) return;
  using C = std::complex<float>;
  const std::vector<std::complex<double>> x = RandomComplex(16, 3);
  const std::vector<C> input(x.begin(), x.end());
  const std::vector<std::complex<double>> want = NaiveDft(x, Dims{16}, -1);
  auto plan = std::make_unique<se::FftPlan<se::vulkan>>(MakePlan(executor, Type::kC2CForward, {16}));
  // Three buffer pairs queued back to back on one stream, so that the plan's
  // first VkFFT application is still in flight when the next buffers come;
  // the last pair are slices at element offsets 3 and 5 of wider buffers.
  auto a = executor->AllocateOwnedArray<C>(16), b = executor->AllocateOwnedArray<C>(16);
  auto c = executor->AllocateOwnedArray<C>(16), d = executor->AllocateOwnedArray<C>(16);
  auto wide_in = executor->AllocateOwnedArray<C>(24), wide_out = executor->AllocateOwnedArray<C>(24);
  se::DeviceMemory<C> slice_in = wide_in.ptr()->GetSlice(3, 16), slice_out = wide_out.ptr()->GetSlice(5, 16);
  std::vector<C> got_b(16), got_d(16), got_slice(16), got_in_place(16);
  se::Stream<se::vulkan> stream(executor);
  stream.Init()
      .ThenMemcpyH2D(std::span<const C>(input), a.ptr())
      .ThenMemcpyH2D(std::span<const C>(input), c.ptr())
      .ThenMemcpyH2D(std::span<const C>(input), &slice_in)
      .ThenFft(plan.get(), a.cref(), b.ptr())
      .ThenFft(plan.get(), c.cref(), d.ptr())
      .ThenFft(plan.get(), slice_in, &slice_out)
      .ThenFft(plan.get(), c.cref(), c.ptr());  // in place: another application
  plan.reset();                                 // the queued transforms keep what they use
  se::Status done = stream.ThenMemcpyD2H(b.cref(), std::span<C>(got_b))
                        .ThenMemcpyD2H(d.cref(), std::span<C>(got_d))
                        .ThenMemcpyD2H(slice_out, std::span<C>(got_slice))
                        .ThenMemcpyD2H(c.cref(), std::span<C>(got_in_place))
                        .BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  CHECK(MaxError(got_b, want) < 2e-5);
  CHECK(MaxError(got_d, want) < 2e-5);
  CHECK(MaxError(got_slice, want) < 2e-5);
  CHECK(MaxError(got_in_place, want) < 2e-5);
}
// Recorded into the command buffer's own VkCommandBuffer, with an application
// of the recording's: it runs at each submission, with the input as it is then,
// after its plan is gone; a clone and a nested copy run it too.
TEST_CASE("VkFFT plugin: a captured transform runs at each submission and outlives its plan",
          "[fft][vulkan][capture]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) return;
  using C = std::complex<float>;
  const std::vector<std::complex<double>> x = RandomComplex(24, 8), z = RandomComplex(24, 9);
  const std::vector<C> first(x.begin(), x.end()), second(z.begin(), z.end());
  auto plan = std::make_unique<se::FftPlan<se::vulkan>>(MakePlan(executor, Type::kC2CForward, {24}));
  auto in = executor->AllocateOwnedArray<C>(24), out = executor->AllocateOwnedArray<C>(24);
  se::Stream<se::vulkan> stream(executor);
  stream.Init();
  se::CommandBuffer<se::vulkan> buffer(executor);
  buffer.Init();
  REQUIRE(stream.BeginCapture(&buffer).ok());
  stream.ThenFft(plan.get(), in.cref(), out.ptr());
  REQUIRE(stream.EndCapture(&buffer).ok());
  plan.reset();  // the buffer holds what it needs
  REQUIRE(buffer.Finalize().ok());
  std::vector<C> got_first(24), got_second(24), got_nested(24);
  se::Status s = stream.ThenMemcpyH2D(std::span<const C>(first), in.ptr())
                     .ThenSubmit(&buffer)
                     .ThenMemcpyD2H(out.cref(), std::span<C>(got_first))
                     .ThenMemcpyH2D(std::span<const C>(second), in.ptr())
                     .ThenSubmit(&buffer)
                     .ThenMemcpyD2H(out.cref(), std::span<C>(got_second))
                     .BlockHostUntilDone();
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(MaxError(got_first, NaiveDft(x, Dims{24}, -1)) < 2e-5);
  CHECK(MaxError(got_second, NaiveDft(z, Dims{24}, -1)) < 2e-5);
  // Nested in another buffer, after a fill of the output: the transform runs after it.
  se::CommandBuffer<se::vulkan> outer(executor);
  outer.Init().ThenMemZero(out.ptr(), 24 * sizeof(C)).ThenSubmit(&buffer);
  REQUIRE(outer.Finalize().ok());
  s = stream.ThenMemcpyH2D(std::span<const C>(first), in.ptr())
          .ThenSubmit(&outer)
          .ThenMemcpyD2H(out.cref(), std::span<C>(got_nested))
          .BlockHostUntilDone();
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(MaxError(got_nested, NaiveDft(x, Dims{24}, -1)) < 2e-5);
}
// A host callback holds the stream's device work (recorded, not submitted)
// until it returns, so the plan's first application is surely in flight when
// the next transforms come: other buffers need another application (its
// descriptor sets may not change under the held recording), the same buffers
// may use it again.
TEST_CASE("VkFFT plugin: an application in flight is never rebound", "[fft][vulkan]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) return;
  using C = std::complex<float>;
  const std::vector<std::complex<double>> x = RandomComplex(32, 5), z = RandomComplex(32, 6);
  const std::vector<C> first(x.begin(), x.end()), second(z.begin(), z.end());
  se::FftPlan<se::vulkan> plan = MakePlan(executor, Type::kC2CInverse, {32});
  auto a = executor->AllocateOwnedArray<C>(32), b = executor->AllocateOwnedArray<C>(32);
  auto c = executor->AllocateOwnedArray<C>(32), d = executor->AllocateOwnedArray<C>(32);
  auto e = executor->AllocateOwnedArray<C>(32);
  REQUIRE(executor->SynchronousMemcpyH2D(std::span<const C>(first), a.ptr()).ok());
  REQUIRE(executor->SynchronousMemcpyH2D(std::span<const C>(second), c.ptr()).ok());
  std::atomic<bool> go{false};
  std::vector<C> got_b(32), got_d(32), got_e(32);
  se::Stream<se::vulkan> stream(executor);
  stream.Init().ThenDoHostCallback([&go] {
    while (!go.load()) std::this_thread::yield();
  });
  stream.ThenFft(&plan, a.cref(), b.ptr()).ThenFft(&plan, c.cref(), d.ptr()).ThenFft(&plan, a.cref(), e.ptr());
  go.store(true);
  se::Status done = stream.ThenMemcpyD2H(b.cref(), std::span<C>(got_b))
                        .ThenMemcpyD2H(d.cref(), std::span<C>(got_d))
                        .ThenMemcpyD2H(e.cref(), std::span<C>(got_e))
                        .BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  CHECK(MaxError(got_b, NaiveDft(x, Dims{32}, +1)) < 2e-5);
  CHECK(MaxError(got_d, NaiveDft(z, Dims{32}, +1)) < 2e-5);
  CHECK(MaxError(got_e, NaiveDft(x, Dims{32}, +1)) < 2e-5);
}
TEST_CASE("VkFFT plugin: what VkFFT cannot do is refused with a Status", "[fft][vulkan]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) return;
  const std::string label = executor->DeviceLabel();
  SECTION("a stride other than 1: UNIMPLEMENTED when the plan is made") {
    se::fft::BatchLayout strided;
    strided.stride = 2;
    strided.distance = 33;
    auto plan =
        se::CreateBatchedFftPlan(executor, Type::kC2CForward, 1, {16, 1, 1}, strided, se::fft::BatchLayout{}, 2);
    CHECK(plan.status().code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(plan.status(), "CreateBatchedFftPlan on " + label +
                                      ": VkFFT reads and writes the fastest dimension contiguously; the C2C forward "
                                      "1-D 16 batch 2 (input stride 2 distance 33, output stride 1 distance 1) plan's "
                                      "input stride is 2"));
  }
  SECTION("real buffers ending inside a complex element (VkFFT binds whole ones): staged through a copy") {
    // 15 reals end in the first half of the 8th complex element.
    se::FftPlan<se::vulkan> r2c = MakePlan(executor, Type::kR2C, {15});
    se::FftPlan<se::vulkan> c2r = MakePlan(executor, Type::kC2R, {15});
    auto reals = executor->AllocateOwnedArray<float>(15);
    auto back = executor->AllocateOwnedArray<float>(15);
    auto spectrum = executor->AllocateOwnedArray<std::complex<float>>(8);
    std::vector<float> real(15);
    for (std::size_t i = 0; i < 15; ++i) real[i] = static_cast<float>(i % 4) - 1.5f;
    std::vector<std::complex<float>> got(8);
    std::vector<float> got_back(15);
    se::Stream<se::vulkan> stream(executor);
    se::Status s = stream.Init()
                       .ThenMemcpyH2D(std::span<const float>(real), reals.ptr())
                       .ThenFft(&r2c, reals.cref(), spectrum.ptr())
                       .ThenMemcpyD2H(spectrum.cref(), std::span<std::complex<float>>(got))
                       .ThenFft(&c2r, spectrum.cref(), back.ptr())
                       .ThenMemcpyD2H(back.cref(), std::span<float>(got_back))
                       .BlockHostUntilDone();
    INFO(s.ToString());
    REQUIRE(s.ok());
    std::vector<std::complex<double>> as_complex(real.begin(), real.end()), scaled(15);
    for (std::size_t i = 0; i < 15; ++i) scaled[i] = as_complex[i] * 15.0;
    CHECK(MaxError(got, Half(NaiveDft(as_complex, Dims{15}, -1), Dims{15})) < 2e-5);
    CHECK(MaxError(got_back, scaled) < 2e-5);
  }
  SECTION("a view whose offset is not a whole element of its side") {
    se::FftPlan<se::vulkan> plan = MakePlan(executor, Type::kC2CForward, {8});
    auto bytes = executor->AllocateOwnedArray<float>(20);
    // Complex elements 4 bytes into the allocation: VkFFT's offsets count elements.
    se::DeviceMemory<std::complex<float>> odd(bytes.ptr()->GetSlice(1, 16));
    se::Stream<se::vulkan> stream(executor);
    se::Status s = stream.Init().ThenFft(&plan, odd, &odd).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(s, "VkFFT takes offsets in whole elements; a view of the C2C forward 1-D 8 plan starts at byte 4"));
  }
  SECTION("every VkFFTResult has its name; VkFFT's errors become Statuses naming the call") {
    CHECK(se::fft_detail::VkFftResultName(VKFFT_ERROR_UNSUPPORTED_RADIX) == "VKFFT_ERROR_UNSUPPORTED_RADIX");
    CHECK(se::fft_detail::VkFftResultName(VKFFT_ERROR_FAILED_TO_SUBMIT_BARRIER) ==
          "VKFFT_ERROR_FAILED_TO_SUBMIT_BARRIER");
    CHECK(se::fft_detail::VkFftResultName(static_cast<VkFFTResult>(77)) == "not a VkFFTResult of vkFFT.h 1.2.26");
    se::fft_detail::PlanSpec spec;
    spec.dims = {7, 1, 1};
    const se::Status radix = se::fft_detail::VkFftError(VKFFT_ERROR_UNSUPPORTED_RADIX, "initializeVkFFT", "dev", spec);
    CHECK(radix.code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(radix,
                   "initializeVkFFT on dev: VkFFT error 3001 (VKFFT_ERROR_UNSUPPORTED_RADIX) for the C2C forward 1-D "
                   "7 plan"));
    CHECK(se::fft_detail::VkFftError(VKFFT_ERROR_FAILED_TO_ALLOCATE, "x", "dev", spec).code() ==
          se::ErrorCode::kResourceExhausted);
    CHECK(se::fft_detail::VkFftError(VKFFT_ERROR_FAILED_SHADER_PARSE, "x", "dev", spec).code() ==
          se::ErrorCode::kInternal);
  }
}
#endif
