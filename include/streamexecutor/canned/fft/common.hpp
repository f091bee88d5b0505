// What every FFT plugin shares: the transform types, a plan's shape, the
// element counts a transform reads and writes, and the checks of ThenFft's
// buffers. Conventions (docs/fft.md): dimensions are given slowest first
// (row-major, as cuFFT's and FFTW's n[]); transforms are unnormalized (an
// inverse of a forward multiplies by the element count); a real transform's
// complex side has the last dimension cut to n/2 + 1.
#pragma once

#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "streamexecutor/canned/detail/adapter.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/fmt.hpp"
#include "streamexecutor/detail/type_name.hpp"

namespace streamexecutor::fft {

// The seed's names: C = complex float, Z = complex double, R = float, D = double.
enum class Type : unsigned char { kC2CForward, kC2CInverse, kR2C, kC2R, kZ2ZForward, kZ2ZInverse, kD2Z, kZ2D };

constexpr std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kC2CForward: return "C2C forward";
    case Type::kC2CInverse: return "C2C inverse";
    case Type::kR2C: return "R2C";
    case Type::kC2R: return "C2R";
    case Type::kZ2ZForward: return "Z2Z forward";
    case Type::kZ2ZInverse: return "Z2Z inverse";
    case Type::kD2Z: return "D2Z";
    case Type::kZ2D: return "Z2D";
  }
  return "?";
}

constexpr bool IsDouble(Type type) {
  return type == Type::kZ2ZForward || type == Type::kZ2ZInverse || type == Type::kD2Z || type == Type::kZ2D;
}
constexpr bool IsComplexToComplex(Type type) {
  return type == Type::kC2CForward || type == Type::kC2CInverse || type == Type::kZ2ZForward ||
         type == Type::kZ2ZInverse;
}
constexpr bool IsRealToComplex(Type type) { return type == Type::kR2C || type == Type::kD2Z; }
constexpr bool IsComplexToReal(Type type) { return type == Type::kC2R || type == Type::kZ2D; }
// The sign of the exponent: forward e^-i, inverse e^+i (R2C is forward, C2R inverse).
constexpr bool IsForward(Type type) {
  return type == Type::kC2CForward || type == Type::kZ2ZForward || IsRealToComplex(type);
}

// One side (input or output) of a batched plan, cuFFT's and FFTW's "advanced
// data layout": element (x0, .., x{r-1}) of transform b sits at
//   b * distance + ((x0 * embed[1] + x1) * embed[2] + x2) * stride
// (rank 1: b * distance + x0 * stride), in elements of that side's type.
// `embed` is the array the transform is embedded in, slowest first; all zeros
// means the transform's own dimensions (on the complex side of a real
// transform, the last one n/2 + 1). Unlike cuFFT, whose null embed makes it
// ignore stride and distance, the stride and distance always apply here.
struct BatchLayout {
  std::array<std::uint64_t, 3> embed{0, 0, 0};
  std::int64_t stride = 1;
  std::int64_t distance = 1;
};

}  // namespace streamexecutor::fft

namespace streamexecutor::fft_detail {

// One side of a plan as the plugins take it: every field filled in.
struct SideLayout {
  std::array<std::uint64_t, 3> embed{1, 1, 1};  // slowest first; entries past the rank are 1
  std::uint64_t stride = 1;
  std::uint64_t distance = 1;  // between transforms
  std::uint64_t extent = 0;    // elements a buffer must hold: the last one touched + 1

  bool operator==(const SideLayout&) const = default;
  // Offset, in elements, between neighbours along dimension `i` (slowest first).
  std::uint64_t DimStride(int rank, int i) const {
    std::uint64_t s = stride;
    for (int j = i + 1; j < rank; ++j) s *= embed[static_cast<std::size_t>(j)];
    return s;
  }
};

struct PlanSpec {
  fft::Type type = fft::Type::kC2CForward;
  int rank = 1;
  std::array<std::uint64_t, 3> dims{1, 1, 1};  // slowest first; dims[rank-1] is the contiguous one
  // Batched plans (CreateBatchedFftPlan): `batch` transforms laid out as
  // `in` and `out` say. A plain plan is one dense transform, batch 1, whose
  // layouts are filled in the same way (embed = dims, stride 1).
  bool batched = false;
  std::uint64_t batch = 1;
  SideLayout in, out;

  std::uint64_t Elements() const {
    std::uint64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<std::size_t>(i)];
    return n;
  }
  // Complex elements on the complex side of a real transform.
  std::uint64_t HalfElements() const {
    const std::uint64_t last = dims[static_cast<std::size_t>(rank - 1)];
    return Elements() / last * (last / 2 + 1);
  }
  // One transform's logical dimensions on the input or output side (the
  // complex side of a real transform has the last cut to n/2 + 1).
  std::array<std::uint64_t, 3> SideDims(bool input) const {
    std::array<std::uint64_t, 3> d = dims;
    const bool half = input ? fft::IsComplexToReal(type) : fft::IsRealToComplex(type);
    if (half) d[static_cast<std::size_t>(rank - 1)] = d[static_cast<std::size_t>(rank - 1)] / 2 + 1;
    return d;
  }
  // Elements the input and output buffers must hold (every transform of a batch).
  std::uint64_t InputElements() const { return in.extent; }
  std::uint64_t OutputElements() const { return out.extent; }
  std::string Describe() const {
    std::string shape;
    for (int i = 0; i < rank; ++i) shape += (i ? "x" : "") + std::to_string(dims[static_cast<std::size_t>(i)]);
    if (!batched) return ::streamexecutor::detail::Format("{} {}-D {}", fft::TypeName(type), rank, shape);
    return ::streamexecutor::detail::Format(
        "{} {}-D {} batch {} (input stride {} distance {}, output stride {} distance {})", fft::TypeName(type), rank,
        shape, batch, in.stride, in.distance, out.stride, out.distance);
  }
};

// The element types a plan's input and output must have.
template <typename T>
constexpr bool IsComplexOf(fft::Type type) {
  if constexpr (std::is_same_v<T, std::complex<float>>) {
    return !fft::IsDouble(type);
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    return fft::IsDouble(type);
  } else {
    return false;
  }
}
template <typename In, typename Out>
constexpr bool TypesFit(fft::Type type) {
  if (fft::IsComplexToComplex(type)) return IsComplexOf<In>(type) && IsComplexOf<Out>(type);
  if (fft::IsRealToComplex(type)) {
    return std::is_same_v<In, std::conditional_t<std::is_same_v<Out, std::complex<double>>, double, float>> &&
           IsComplexOf<Out>(type);
  }
  return IsComplexOf<In>(type) &&
         std::is_same_v<Out, std::conditional_t<std::is_same_v<In, std::complex<double>>, double, float>>;
}

inline Status CheckShape(std::string_view caller, std::string_view device, fft::Type type, int rank,
                         const std::array<std::uint64_t, 3>& dims) {
  if (rank < 1 || rank > 3) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: an FFT has 1 to 3 dimensions, not {}", caller, device,
                     rank);
  }
  for (int i = 0; i < rank; ++i) {
    // The libraries take int sizes (FFTW, cuFFT); 2^31 per dimension is far
    // beyond any device memory anyway.
    if (dims[static_cast<std::size_t>(i)] == 0 || dims[static_cast<std::size_t>(i)] > 0x7fffffffu) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: dimension {} of the {} plan is {}; it must be 1 to 2^31-1", caller, device, i,
                       fft::TypeName(type), dims[static_cast<std::size_t>(i)]);
    }
  }
  return Status();
}

// Fills `side` (of a plan whose shape CheckShape passed) from the caller's
// layout: positive stride and distance, embed at least the transform's
// dimensions, each within the libraries' int, and the extent a buffer must hold.
inline Status CheckSide(std::string_view caller, std::string_view device, const PlanSpec& spec, bool input,
                        const fft::BatchLayout& layout, SideLayout& side) {
  const std::string_view name = input ? "input" : "output";
  constexpr std::int64_t kIntMax = 0x7fffffff;
  if (layout.stride < 1 || layout.stride > kIntMax) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the {} stride of the batched {} plan is {}; it must be 1 to 2^31-1", caller, device,
                     name, fft::TypeName(spec.type), layout.stride);
  }
  if (layout.distance < 1 || layout.distance > kIntMax) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the {} distance of the batched {} plan is {}; it must be 1 to 2^31-1", caller, device,
                     name, fft::TypeName(spec.type), layout.distance);
  }
  const std::array<std::uint64_t, 3> logical = spec.SideDims(input);
  const bool tight = layout.embed == std::array<std::uint64_t, 3>{0, 0, 0};
  side = SideLayout{};
  for (int i = 0; i < spec.rank; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const std::uint64_t embed = tight ? logical[at] : layout.embed[at];
    if (embed < logical[at] || embed > 0x7fffffffu) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: {} embed dimension {} of the batched {} plan is {}; it must be {} (that side's "
                       "dimension) to 2^31-1",
                       caller, device, name, i, fft::TypeName(spec.type), embed, logical[at]);
    }
    side.embed[at] = embed;
  }
  side.stride = static_cast<std::uint64_t>(layout.stride);
  side.distance = static_cast<std::uint64_t>(layout.distance);
  // extent = (batch - 1) * distance + stride * sum((n_i - 1) * prod(embed_j, j > i)) + 1,
  // kept below 2^58 so that its size in bytes (16 per element at most) fits.
  constexpr std::uint64_t kMaxExtent = std::uint64_t{1} << 58;
  bool overflow = false;
  std::uint64_t last = 0, term = 0, dim_stride = side.stride;
  for (int i = spec.rank - 1; i >= 0; --i) {
    overflow |= __builtin_mul_overflow(logical[static_cast<std::size_t>(i)] - 1, dim_stride, &term);
    overflow |= __builtin_add_overflow(last, term, &last);
    if (i > 0) overflow |= __builtin_mul_overflow(dim_stride, side.embed[static_cast<std::size_t>(i)], &dim_stride);
  }
  overflow |= __builtin_mul_overflow(spec.batch - 1, side.distance, &term);
  overflow |= __builtin_add_overflow(last, term, &last);
  if (overflow || last >= kMaxExtent) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the {} layout of the {}{} plan spans more than 2^58 elements", caller, device, name,
                     spec.batched ? "batched " : "", fft::TypeName(spec.type));
  }
  side.extent = last + 1;
  return Status();
}

// ThenFft's buffers against the plan: element types, sizes, in-place rules.
template <typename In, typename Out>
Status CheckBuffers(std::string_view device, const PlanSpec& spec, const DeviceMemory<In>& input,
                    const DeviceMemory<Out>& output) {
  if (!TypesFit<In, Out>(spec.type)) {
    return MakeError(ErrorCode::kInvalidArgument, "ThenFft on {}: a {} plan does not take {} input and {} output",
                     device, spec.Describe(), detail::TypeName<In>(), detail::TypeName<Out>());
  }
  if (input.ElementCount() < spec.InputElements() || output.ElementCount() < spec.OutputElements()) {
    return MakeError(ErrorCode::kOutOfRange,
                     "ThenFft on {}: the {} plan reads {} input and writes {} output elements, but the input holds "
                     "{} and the output {}",
                     device, spec.Describe(), spec.InputElements(), spec.OutputElements(), input.ElementCount(),
                     output.ElementCount());
  }
  const bool same = input.opaque() == output.opaque() && input.offset() == output.offset();
  const std::uint64_t in_bytes = spec.InputElements() * sizeof(In), out_bytes = spec.OutputElements() * sizeof(Out);
  const bool overlap = input.opaque() == output.opaque() && input.offset() < output.offset() + out_bytes &&
                       output.offset() < input.offset() + in_bytes;
  if (overlap && !same) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenFft on {}: the input and output of the {} plan overlap without being the same memory "
                     "(in place means the same view)",
                     device, spec.Describe());
  }
  if (same && !fft::IsComplexToComplex(spec.type)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenFft on {}: a real {} plan cannot run in place (its input and output are the same memory)",
                     device, spec.Describe());
  }
  if (same && spec.batched && !(spec.in == spec.out)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenFft on {}: the {} plan cannot run in place: its input and output layouts differ", device,
                     spec.Describe());
  }
  return Status();
}

}  // namespace streamexecutor::fft_detail

namespace streamexecutor::fft_detail {

// The family's adapter trait (canned/detail/adapter.hpp), specialised in
// canned/fft/<backend>.hpp for each backend with an FFT library (host.hpp:
// FFTW3, opencl.hpp: clFFT, cuda.hpp: cuFFT):
//   static constexpr std::string_view kPluginName;
//   class Plan {                                   // one library plan
//     static StatusOr<std::unique_ptr<Plan>> Make(StreamExecutor<B>*, const PlanSpec&);
//     Status Enqueue(Stream<B>&, const DeviceMemoryBase& input, const DeviceMemoryBase& output);
//   };
// Other backends get the primary template: plan creation is UNAVAILABLE,
// naming the backend, so its Plan is never made.
template <typename B>
struct Adapter : canned_detail::NoAdapter<PluginKind::kFft, B> {
  struct Plan {};
};

// A backend's library that this program was compiled without: its adapter
// still exists (the plugin can be named), and plan creation says what to install.
inline Status NotBuiltIn(std::string_view device, std::string_view library, std::string_view package) {
  return MakeError(ErrorCode::kUnavailable,
                   "FFT on {} needs {}, which was not found when this program was compiled (install the {} package)",
                   device, library, package);
}

// The Plan of such an adapter (Missing: kLibrary, kPackage). Make refuses
// every plan, so Enqueue is never reached; it exists so that ThenFft compiles.
template <typename Missing>
struct PlanWithoutLibrary {
  template <typename Executor>
  static StatusOr<std::unique_ptr<PlanWithoutLibrary>> Make(Executor* executor, const PlanSpec&) {
    return NotBuiltIn(executor->DeviceLabel(), Missing::kLibrary, Missing::kPackage);
  }
  template <typename Stream>
  Status Enqueue(Stream& stream, const DeviceMemoryBase&, const DeviceMemoryBase&) {
    return NotBuiltIn(stream.parent()->DeviceLabel(), Missing::kLibrary, Missing::kPackage);
  }
};

}  // namespace streamexecutor::fft_detail
