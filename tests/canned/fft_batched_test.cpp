// Batched FFT plans (se::CreateBatchedFftPlan, the seed's
// se::fft::CreateBatchedPlan) on the host backend (FFTW3's plan_many) and,
// where built in, OpenCL (clFFT's batch size, distances and strides) and
// Vulkan (VkFFT's batches, row and batch strides; element stride 1): every
// transform of a batch read from and written to the given layout (dense,
// padded rows, distances beyond the transform, non-unit strides, interleaved
// transforms), against a naive DFT computed here in double precision; output
// elements outside the layout left untouched; in place with one layout; and
// the errors of plan creation and ThenFft.
#include <catch2/catch.hpp>

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <streamexecutor/fft.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include "fft_reference.hpp"

namespace se = streamexecutor;
using se::fft::Type;

namespace {

using namespace fft_reference;

// The complex side of a real transform keeps n/2 + 1 of the last dimension.
Dims HalfDims(Dims dims) {
  dims.back() = dims.back() / 2 + 1;
  return dims;
}

// One side's layout as the test spells it: embed empty means the side's own
// dimensions. Element `index` (row-major over `dims`) of transform b is at
//   b * distance + ((x0 * embed[1] + x1) * embed[2] + x2) * stride.
struct Layout {
  Dims embed;
  std::size_t stride = 1;
  std::size_t distance = 1;

  std::size_t Offset(const Dims& dims, std::size_t batch, std::size_t index) const {
    const Dims& e = embed.empty() ? dims : embed;
    std::vector<std::size_t> x(dims.size());
    for (std::size_t d = dims.size(), rest = index; d-- > 0;) {
      x[d] = rest % dims[d];
      rest /= dims[d];
    }
    std::size_t offset = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) offset = offset * e[d] + x[d];
    return batch * distance + offset * stride;
  }
  std::size_t Extent(const Dims& dims, std::size_t batch) const {
    return Offset(dims, batch - 1, Product(dims) - 1) + 1;
  }
  se::fft::BatchLayout ForPlan() const {
    se::fft::BatchLayout layout;
    for (std::size_t i = 0; i < embed.size(); ++i) layout.embed[i] = embed[i];
    layout.stride = static_cast<std::int64_t>(stride);
    layout.distance = static_cast<std::int64_t>(distance);
    return layout;
  }
};

std::string Describe(const Layout& l) {
  std::string s = "embed {";
  for (std::size_t e : l.embed) s += std::to_string(e) + ",";
  return s + "} stride " + std::to_string(l.stride) + " distance " + std::to_string(l.distance);
}

template <typename B>
se::FftPlan<B> MakeBatchedPlan(se::StreamExecutor<B>* executor, Type type, const Dims& dims, const Layout& in,
                               const Layout& out, std::size_t batch) {
  std::array<std::uint64_t, 3> d{1, 1, 1};
  for (std::size_t i = 0; i < dims.size(); ++i) d[i] = dims[i];
  auto plan = se::CreateBatchedFftPlan(executor, type, static_cast<int>(dims.size()), d, in.ForPlan(), out.ForPlan(),
                                       static_cast<std::int64_t>(batch));
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  CHECK(plan.value().batch_count() == batch);
  return std::move(plan).value();
}

// `input` into an output buffer of `output_count` elements filled with
// `sentinel` (the same buffer when `in_place`), returning the output buffer.
template <typename B, typename In, typename Out>
std::vector<Out> Run(se::StreamExecutor<B>* executor, se::FftPlan<B>& plan, const std::vector<In>& input,
                     std::size_t output_count, Out sentinel, bool in_place = false) {
  se::ScopedDeviceMemory<In> in = executor->template AllocateOwnedArray<In>(input.size());
  se::ScopedDeviceMemory<Out> out = executor->template AllocateOwnedArray<Out>(in_place ? 1 : output_count);
  const std::vector<Out> fill(output_count, sentinel);
  se::Stream<B> stream(executor);
  stream.Init().ThenMemcpyH2D(std::span<const In>(input), in.ptr());
  if (in_place) {
    if constexpr (std::is_same_v<In, Out>) stream.ThenFft(&plan, *in.ptr(), in.ptr());
  } else {
    stream.ThenMemcpyH2D(std::span<const Out>(fill), out.ptr());
    stream.ThenFft(&plan, *in.ptr(), out.ptr());
  }
  std::vector<Out> result(output_count);
  if constexpr (std::is_same_v<In, Out>) {
    stream.ThenMemcpyD2H(in_place ? in.cref() : out.cref(), std::span<Out>(result));
  } else {
    stream.ThenMemcpyD2H(out.cref(), std::span<Out>(result));
  }
  se::Status done = stream.BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  return result;
}

// The largest difference between the transforms' elements in `got` (laid out
// as `layout`) and `want` (transform after transform, dense), relative to the
// largest wanted value.
template <typename T>
double MaxError(const std::vector<T>& got, const Layout& layout, const Dims& dims, std::size_t batch,
                const std::vector<std::complex<double>>& want) {
  const std::size_t n = Product(dims);
  double worst = 0, scale = 1;
  for (const auto& w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::complex<double> g(got[layout.Offset(dims, b, i)]);
      worst = std::max(worst, std::abs(g - want[b * n + i]) / scale);
    }
  }
  return worst;
}

// Elements of `got` outside the layout that no longer hold the sentinel.
template <typename T>
std::size_t Touched(const std::vector<T>& got, const Layout& layout, const Dims& dims, std::size_t batch, T sentinel) {
  std::vector<bool> inside(got.size(), false);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < Product(dims); ++i) inside[layout.Offset(dims, b, i)] = true;
  }
  std::size_t touched = 0;
  for (std::size_t i = 0; i < got.size(); ++i) touched += !inside[i] && got[i] != sentinel;
  return touched;
}

// A complex batched plan (forward or inverse) from `in` to `out` against the
// naive DFT of each transform; the input buffer's padding is random too, so
// a plugin reading outside the layout shows.
template <typename B, typename Real>
void CheckComplex(se::StreamExecutor<B>* executor, bool forward, const Dims& dims, std::size_t batch, const Layout& in,
                  const Layout& out, double tolerance) {
  using Complex = std::complex<Real>;
  constexpr bool kDouble = std::is_same_v<Real, double>;
  const Type type =
      kDouble ? (forward ? Type::kZ2ZForward : Type::kZ2ZInverse) : (forward ? Type::kC2CForward : Type::kC2CInverse);
  INFO(se::fft::TypeName(type) << " " << dims.size() << "-D batch " << batch << "; in " << Describe(in) << "; out "
                               << Describe(out));
  const std::size_t n = Product(dims);
  const std::vector<std::complex<double>> buffer =
      RandomComplex(in.Extent(dims, batch), static_cast<unsigned>(n + batch));
  std::vector<std::complex<double>> want;
  for (std::size_t b = 0; b < batch; ++b) {
    std::vector<std::complex<double>> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = buffer[in.Offset(dims, b, i)];
    for (const auto& y : NaiveDft(x, dims, forward ? -1 : +1)) want.push_back(y);
  }
  se::FftPlan<B> plan = MakeBatchedPlan(executor, type, dims, in, out, batch);
  CHECK(plan.input_elements() == in.Extent(dims, batch));
  CHECK(plan.output_elements() == out.Extent(dims, batch));
  const Complex sentinel(1234.5f, -99.0f);
  const std::vector<Complex> got =
      Run(executor, plan, std::vector<Complex>(buffer.begin(), buffer.end()), out.Extent(dims, batch), sentinel);
  CHECK(MaxError(got, out, dims, batch, want) < tolerance);
  CHECK(Touched(got, out, dims, batch, sentinel) == 0);
}

// The same plan in place (one layout for both sides): the padding between
// transforms keeps its input values.
template <typename B, typename Real>
void CheckInPlace(se::StreamExecutor<B>* executor, const Dims& dims, std::size_t batch, const Layout& layout,
                  double tolerance) {
  using Complex = std::complex<Real>;
  const Type type = std::is_same_v<Real, double> ? Type::kZ2ZForward : Type::kC2CForward;
  INFO("in place " << se::fft::TypeName(type) << " " << dims.size() << "-D batch " << batch << "; "
                   << Describe(layout));
  const std::size_t n = Product(dims);
  const std::vector<std::complex<double>> buffer = RandomComplex(layout.Extent(dims, batch), 7);
  const std::vector<Complex> input(buffer.begin(), buffer.end());
  std::vector<std::complex<double>> want;
  for (std::size_t b = 0; b < batch; ++b) {
    std::vector<std::complex<double>> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = buffer[layout.Offset(dims, b, i)];
    for (const auto& y : NaiveDft(x, dims, -1)) want.push_back(y);
  }
  se::FftPlan<B> plan = MakeBatchedPlan(executor, type, dims, layout, layout, batch);
  const std::vector<Complex> got = Run(executor, plan, input, input.size(), Complex(), /*in_place=*/true);
  CHECK(MaxError(got, layout, dims, batch, want) < tolerance);
  std::size_t changed = 0;
  std::vector<bool> inside(got.size(), false);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < n; ++i) inside[layout.Offset(dims, b, i)] = true;
  }
  for (std::size_t i = 0; i < got.size(); ++i) changed += !inside[i] && got[i] != input[i];
  CHECK(changed == 0);
}

// R2C from `real_in` to `half_out`, then C2R of that spectrum (re-laid out
// as `half_in`) to `real_out`: the spectrum against the naive DFT's first
// n/2 + 1 of the last dimension, and the way back against N times the input.
template <typename B, typename Real>
void CheckReal(se::StreamExecutor<B>* executor, const Dims& dims, std::size_t batch, const Layout& real_in,
               const Layout& half_out, const Layout& half_in, const Layout& real_out, double tolerance) {
  using Complex = std::complex<Real>;
  constexpr bool kDouble = std::is_same_v<Real, double>;
  INFO((kDouble ? "D2Z/Z2D " : "R2C/C2R ")
       << dims.size() << "-D batch " << batch << "; real in " << Describe(real_in) << "; half out "
       << Describe(half_out) << "; half in " << Describe(half_in) << "; real out " << Describe(real_out));
  const std::size_t n = Product(dims);
  const Dims half = HalfDims(dims);
  const std::size_t n_half = Product(half);
  const std::vector<std::complex<double>> noise = RandomComplex(real_in.Extent(dims, batch), static_cast<unsigned>(n));
  std::vector<Real> reals(noise.size());
  for (std::size_t i = 0; i < noise.size(); ++i) reals[i] = static_cast<Real>(noise[i].real());
  std::vector<std::complex<double>> spectrum, scaled;
  for (std::size_t b = 0; b < batch; ++b) {
    std::vector<std::complex<double>> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<double>(reals[real_in.Offset(dims, b, i)]);
    for (const auto& y : Half(NaiveDft(x, dims, -1), dims)) spectrum.push_back(y);
    for (const auto& v : x) scaled.push_back(v * static_cast<double>(n));
  }

  se::FftPlan<B> r2c = MakeBatchedPlan(executor, kDouble ? Type::kD2Z : Type::kR2C, dims, real_in, half_out, batch);
  const Complex sentinel(-7.25f, 3.5f);
  const std::vector<Complex> got = Run(executor, r2c, reals, half_out.Extent(half, batch), sentinel);
  CHECK(MaxError(got, half_out, half, batch, spectrum) < tolerance);
  CHECK(Touched(got, half_out, half, batch, sentinel) == 0);

  // The exact spectrum, laid out for the C2R plan.
  std::vector<Complex> half_buffer(half_in.Extent(half, batch), Complex(555.0f, 0));
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < n_half; ++i) {
      half_buffer[half_in.Offset(half, b, i)] = Complex(spectrum[b * n_half + i]);
    }
  }
  se::FftPlan<B> c2r = MakeBatchedPlan(executor, kDouble ? Type::kZ2D : Type::kC2R, dims, half_in, real_out, batch);
  const Real real_sentinel = static_cast<Real>(4242.0);
  const std::vector<Real> back = Run(executor, c2r, half_buffer, real_out.Extent(dims, batch), real_sentinel);
  CHECK(MaxError(back, real_out, dims, batch, scaled) < tolerance);
  CHECK(Touched(back, real_out, dims, batch, real_sentinel) == 0);
}

// Layouts for `dims` (the side's own dimensions, slowest first) and a batch
// of `batch`: dense; rows padded and transforms further apart than their
// size (distance > n); every element 2 apart; and the transforms interleaved
// (stride = batch, distance 1, as cuFFT's docs show).
Layout Dense(const Dims& dims) { return Layout{{}, 1, Product(dims)}; }
Layout Padded(const Dims& dims) {
  Dims embed = dims;
  embed.back() += 3;
  return Layout{embed, 1, Product(embed) + 5};
}
Layout Strided(const Dims& dims) { return Layout{{}, 2, 2 * Product(dims) + 1}; }
Layout Interleaved(std::size_t batch) { return Layout{{}, batch, 1}; }

template <typename B, typename Real>
void CheckLayouts(se::StreamExecutor<B>* executor, const Dims& dims, std::size_t batch, double tolerance,
                  bool every_pair) {
  const Dims half = HalfDims(dims);
  // Complex, forward and inverse: layouts in to out.
  CheckComplex<B, Real>(executor, true, dims, batch, Dense(dims), Dense(dims), tolerance);
  CheckComplex<B, Real>(executor, false, dims, batch, Padded(dims), Strided(dims), tolerance);
  CheckComplex<B, Real>(executor, true, dims, batch, Interleaved(batch), Padded(dims), tolerance);
  if (every_pair) {
    CheckComplex<B, Real>(executor, false, dims, batch, Strided(dims), Interleaved(batch), tolerance);
    CheckComplex<B, Real>(executor, true, dims, batch, Padded(dims), Padded(dims), tolerance);
  }
  CheckInPlace<B, Real>(executor, dims, batch, Padded(dims), tolerance);
  // Real: dense both ways; then padded real rows (FFTW's in-place layout,
  // 2 (n/2 + 1) long) to a strided spectrum, and back from a padded one.
  CheckReal<B, Real>(executor, dims, batch, Dense(dims), Dense(half), Dense(half), Dense(dims), tolerance);
  Dims fftw_padded = dims;
  fftw_padded.back() = 2 * (dims.back() / 2 + 1);
  const Layout padded_real{fftw_padded, 1, Product(fftw_padded)};
  CheckReal<B, Real>(executor, dims, batch, padded_real, Strided(half), Padded(half), Padded(dims), tolerance);
  if (every_pair) {
    CheckReal<B, Real>(executor, dims, batch, Interleaved(batch), Interleaved(batch), Strided(half), Strided(dims),
                       tolerance);
  }
}

// `strides`: the plugin takes element strides other than 1 (VkFFT does not:
// its own test checks the refusal).
template <typename B>
void CheckErrors(se::StreamExecutor<B>* executor, std::string_view device, bool strides = true) {
  const std::string create = "CreateBatchedFftPlan on " + std::string(device);
  const Layout dense16{{}, 1, 16};
  SECTION("buffers smaller than the layout: OUT_OF_RANGE naming the batch, distances and sizes") {
    const Layout in{{}, 1, 20};
    se::FftPlan<B> plan = MakeBatchedPlan(executor, Type::kC2CForward, {16}, in, dense16, 4);
    CHECK(plan.input_elements() == 3 * 20 + 16);
    CHECK(plan.output_elements() == 4 * 16);
    se::ScopedDeviceMemory<std::complex<float>> a = executor->template AllocateOwnedArray<std::complex<float>>(64);
    se::ScopedDeviceMemory<std::complex<float>> b = executor->template AllocateOwnedArray<std::complex<float>>(76);
    se::Stream<B> stream(executor);
    se::Status s = stream.Init().ThenFft(&plan, *a.ptr(), b.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kOutOfRange);
    CHECK(Mentions(s, "ThenFft on " + std::string(device) +
                          ": the C2C forward 1-D 16 batch 4 (input stride 1 distance 20, output stride 1 distance 16) "
                          "plan reads 76 input and writes 64 output elements, but the input holds 64 and the output "
                          "76"));
    if (!strides) return;
    // The output too: a strided real spectrum, whose last element is 20 + 8 * 2.
    se::FftPlan<B> r2c = MakeBatchedPlan(executor, Type::kR2C, {16}, dense16, Layout{{}, 2, 20}, 2);
    se::ScopedDeviceMemory<float> reals = executor->template AllocateOwnedArray<float>(32);
    se::ScopedDeviceMemory<std::complex<float>> spectrum =
        executor->template AllocateOwnedArray<std::complex<float>>(36);
    se::Stream<B> other(executor);
    s = other.Init().ThenFft(&r2c, *reals.ptr(), spectrum.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kOutOfRange);
    CHECK(Mentions(s,
                   "the R2C 1-D 16 batch 2 (input stride 1 distance 16, output stride 2 distance 20) plan reads 32 "
                   "input and writes 37 output elements, but the input holds 32 and the output 36"));
  }
  SECTION("non-positive batch, stride and distance: INVALID_ARGUMENT") {
    for (std::int64_t batch : {0, -3}) {
      auto plan = se::CreateBatchedFftPlan(executor, Type::kC2CForward, 1, {16, 1, 1}, dense16.ForPlan(),
                                           dense16.ForPlan(), batch);
      CHECK(plan.status().code() == se::ErrorCode::kInvalidArgument);
      CHECK(Mentions(plan.status(), create + ": the batch count of the C2C forward plan is " + std::to_string(batch) +
                                        "; it must be 1 to 2^31-1"));
    }
    se::fft::BatchLayout bad = dense16.ForPlan();
    bad.stride = 0;
    auto stride = se::CreateBatchedFftPlan(executor, Type::kZ2ZInverse, 1, {16, 1, 1}, bad, dense16.ForPlan(), 2);
    CHECK(stride.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(stride.status(), create + ": the input stride of the batched Z2Z inverse plan is 0"));
    bad = dense16.ForPlan();
    bad.distance = -16;
    auto distance = se::CreateBatchedFftPlan(executor, Type::kC2R, 1, {16, 1, 1}, Layout{{}, 1, 9}.ForPlan(), bad, 2);
    CHECK(distance.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(distance.status(), "the output distance of the batched C2R plan is -16"));
    bad = dense16.ForPlan();
    bad.stride = std::int64_t{1} << 31;
    CHECK(se::CreateBatchedFftPlan(executor, Type::kC2CForward, 1, {16, 1, 1}, dense16.ForPlan(), bad, 2)
              .status()
              .code() == se::ErrorCode::kInvalidArgument);
  }
  SECTION("an embed smaller than the transform") {
    // A real input's rows are n long; its spectrum's n/2 + 1.
    auto plan = se::CreateBatchedFftPlan(executor, Type::kD2Z, 2, {4, 8, 1}, Layout{{4, 7}, 1, 32}.ForPlan(),
                                         Layout{{4, 5}, 1, 20}.ForPlan(), 2);
    CHECK(plan.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(plan.status(), "input embed dimension 1 of the batched D2Z plan is 7; it must be 8"));
    auto half = se::CreateBatchedFftPlan(executor, Type::kD2Z, 2, {4, 8, 1}, Layout{{4, 8}, 1, 32}.ForPlan(),
                                         Layout{{3, 5}, 1, 20}.ForPlan(), 2);
    CHECK(Mentions(half.status(), "output embed dimension 0 of the batched D2Z plan is 3; it must be 4"));
    auto fits = se::CreateBatchedFftPlan(executor, Type::kD2Z, 2, {4, 8, 1}, Layout{{4, 8}, 1, 32}.ForPlan(),
                                         Layout{{4, 5}, 1, 20}.ForPlan(), 2);
    CHECK(fits.ok());
  }
  SECTION("a layout past 2^58 elements") {
    auto plan = se::CreateBatchedFftPlan(executor, Type::kC2CForward, 3, {1024, 1024, 1024},
                                         Layout{{}, 0x7fffffff, 1}.ForPlan(), Layout{{}, 1, 1}.ForPlan(), 1);
    CHECK(plan.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(plan.status(), "the input layout of the batched C2C forward plan spans more than 2^58 elements"));
  }
  SECTION("in place needs one layout; real plans never run in place") {
    se::FftPlan<B> plan = MakeBatchedPlan(executor, Type::kC2CForward, {16}, Layout{{}, 1, 16}, Layout{{}, 1, 17}, 2);
    se::ScopedDeviceMemory<std::complex<float>> data = executor->template AllocateOwnedArray<std::complex<float>>(40);
    se::Stream<B> stream(executor);
    se::Status s = stream.Init().ThenFft(&plan, *data.ptr(), data.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "plan cannot run in place: its input and output layouts differ"));
    se::FftPlan<B> c2r = MakeBatchedPlan(executor, Type::kC2R, {16}, Layout{{}, 1, 9}, dense16, 2);
    se::DeviceMemory<float> aliased(*data.ptr());
    se::Stream<B> other(executor);
    s = other.Init().ThenFft(&c2r, *data.ptr(), &aliased).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(s, "cannot run in place"));
  }
  SECTION("the seed's CreateBatchedPlan: null embeds mean the transform's own dimensions") {
    const std::uint64_t dims[2] = {4, 6};
    const std::uint64_t out_embed[2] = {4, 9};
    if (!strides) {
      auto unit = se::fft::CreateBatchedPlan(executor, 2, dims, nullptr, 1, 50, out_embed, 1, 40, Type::kC2CForward, 3);
      INFO(unit.status().ToString());
      REQUIRE(unit.ok());
      CHECK(unit.value().input_elements() == 2 * 50 + 23 + 1);
      CHECK(unit.value().output_elements() == 2 * 40 + 3 * 9 + 5 + 1);
      return;
    }
    auto plan = se::fft::CreateBatchedPlan(executor, 2, dims, nullptr, 2, 50, out_embed, 1, 40, Type::kC2CForward, 3);
    INFO(plan.status().ToString());
    REQUIRE(plan.ok());
    CHECK(plan.value().batch_count() == 3);
    CHECK(plan.value().rank() == 2);
    CHECK(plan.value().input_elements() == 2 * 50 + 2 * 23 + 1);  // last element (3, 5) of transform 2
    CHECK(plan.value().output_elements() == 2 * 40 + 3 * 9 + 5 + 1);
    auto no_dims = se::fft::CreateBatchedPlan(executor, 2, nullptr, nullptr, 1, 1, nullptr, 1, 1, Type::kR2C, 1);
    CHECK(Mentions(no_dims.status(), "elem_count is null"));
    auto rank = se::fft::CreateBatchedPlan(executor, 4, dims, nullptr, 1, 1, nullptr, 1, 1, Type::kR2C, 1);
    CHECK(Mentions(rank.status(), "an FFT has 1 to 3 dimensions, not 4"));
  }
}

}  // namespace

#if defined(STREAMEXECUTOR_FFT_WITH_FFTW3)
TEST_CASE("FFTW3 batched plans: every type and layout, 1-D to 3-D, against a naive DFT", "[fft][host][batched]") {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  for (const Dims& dims : {Dims{12}, Dims{4, 6}, Dims{2, 3, 4}}) {
    CheckLayouts<se::host, float>(executor, dims, 3, 2e-5, true);
    CheckLayouts<se::host, double>(executor, dims, 3, 1e-12, true);
  }
  CheckLayouts<se::host, float>(executor, Dims{16}, 1, 2e-5, false);  // a batch of one
}
TEST_CASE("FFTW3 batched plans: errors", "[fft][host][batched]") {
  CheckErrors(se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(), "host:0");
}
#endif

#if defined(STREAMEXECUTOR_FFT_WITH_CLFFT)
namespace {
se::StreamExecutor<se::opencl>* OpenClExecutor() {
  auto& platform = se::Platform<se::opencl>::Get();
  if (platform.VisibleDeviceCount() == 0) return nullptr;
  return platform.ExecutorForDevice(0).ValueOrDie();
}
}  // namespace

// Each clFFT plan compiles its kernels when made (seconds on PoCL): fewer
// layout pairs than on the host, 1-D and 2-D, one precision each.
TEST_CASE("clFFT batched plans: every type, strided and padded, against a naive DFT", "[fft][opencl][batched]") {
  auto* executor = OpenClExecutor();
  if (executor == nullptr) {
    WARN("no OpenCL device: " << se::Platform<se::opencl>::Get().InitStatus().ToString());
    return;
  }
  CheckLayouts<se::opencl, float>(executor, Dims{12}, 3, 2e-5, false);
  CheckLayouts<se::opencl, double>(executor, Dims{4, 6}, 3, 1e-12, false);
}
TEST_CASE("clFFT batched plans: errors", "[fft][opencl][batched]") {
  auto* executor = OpenClExecutor();
  if (executor == nullptr) {
    WARN("no OpenCL device");
    return;
  }
  CheckErrors(executor, "opencl:0");
}
#endif

#if defined(STREAMEXECUTOR_FFT_WITH_VKFFT)
namespace {
se::StreamExecutor<se::vulkan>* VulkanExecutor() {
  auto& platform = se::Platform<se::vulkan>::Get();
  if (platform.VisibleDeviceCount() == 0) return nullptr;
  return platform.ExecutorForDevice(0).ValueOrDie();
}

// The layouts VkFFT takes (element stride 1): dense, padded rows with
// transforms further apart than their size, and FFTW's padded real rows.
template <typename Real>
void CheckUnitStrideLayouts(se::StreamExecutor<se::vulkan>* executor, const Dims& dims, std::size_t batch,
                            double tolerance) {
  const Dims half = HalfDims(dims);
  CheckComplex<se::vulkan, Real>(executor, true, dims, batch, Dense(dims), Dense(dims), tolerance);
  CheckComplex<se::vulkan, Real>(executor, false, dims, batch, Padded(dims), Dense(dims), tolerance);
  CheckComplex<se::vulkan, Real>(executor, true, dims, batch, Dense(dims), Padded(dims), tolerance);
  CheckInPlace<se::vulkan, Real>(executor, dims, batch, Padded(dims), tolerance);
  CheckReal<se::vulkan, Real>(executor, dims, batch, Dense(dims), Dense(half), Dense(half), Dense(dims), tolerance);
  Dims fftw_padded = dims;
  fftw_padded.back() = 2 * (dims.back() / 2 + 1);
  const Layout padded_real{fftw_padded, 1, Product(fftw_padded)};
  CheckReal<se::vulkan, Real>(executor, dims, batch, padded_real, Padded(half), Padded(half), Padded(dims), tolerance);
}
}  // namespace

TEST_CASE("VkFFT batched plans: every type, padded rows and distances, against a naive DFT", "[fft][vulkan][batched]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) {
    WARN("no Vulkan device: " << se::Platform<se::vulkan>::Get().InitStatus().ToString());
    return;
  }
  CheckUnitStrideLayouts<float>(executor, Dims{12}, 3, 2e-5);
  CheckUnitStrideLayouts<double>(executor, Dims{4, 6}, 3, 1e-12);
  CheckUnitStrideLayouts<float>(executor, Dims{2, 3, 4}, 2, 2e-5);
  CheckUnitStrideLayouts<float>(executor, Dims{16}, 1, 2e-5);  // a batch of one
}
TEST_CASE("VkFFT batched plans: errors, and element strides refused", "[fft][vulkan][batched]") {
  auto* executor = VulkanExecutor();
  if (executor == nullptr) return;
  CheckErrors(executor, executor->DeviceLabel(), /*strides=*/false);
  for (const auto& [in, out] :
       {std::pair{Strided(Dims{12}), Dense(Dims{12})}, std::pair{Dense(Dims{12}), Interleaved(3)}}) {
    auto plan = se::CreateBatchedFftPlan(executor, Type::kZ2ZForward, 1, {12, 1, 1}, in.ForPlan(), out.ForPlan(), 3);
    CHECK(plan.status().code() == se::ErrorCode::kUnimplemented);
    CHECK(Mentions(plan.status(), "strides must be 1"));
  }
}
#endif
