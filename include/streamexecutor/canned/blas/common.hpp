// The backend-independent half of the canned BLAS operations: the enums of
// namespace se::blas, the checked argument packs handed to each backend's
// library, and the shape checks every backend shares. Matrices are
// column-major, as in cuBLAS and the seed's StreamExecutor.
#pragma once

#include <algorithm>
#include <climits>
#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "streamexecutor/canned/blas/half.hpp"
#include "streamexecutor/canned/detail/adapter.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor::blas {

// Whether an operand is used as stored, transposed, or conjugate-transposed
// (the same as kTranspose for the real types offered here).
enum class Transpose : unsigned char { kNoTranspose, kTranspose, kConjugateTranspose };

constexpr std::string_view TransposeString(Transpose transpose) {
  switch (transpose) {
    case Transpose::kNoTranspose: return "N";
    case Transpose::kTranspose: return "T";
    case Transpose::kConjugateTranspose: return "C";
  }
  return "?";
}

// The element types every plugin offers for every operation.
template <typename T>
concept Scalar = std::same_as<T, float> || std::same_as<T, double>;

// The element types of gemm and batched gemm: those, and half precision
// (se::Half, canned/blas/half.hpp).
template <typename T>
concept GemmElement = Scalar<T> || std::same_as<T, Half>;

// The type alpha and beta take for elements of type T: T itself, and float
// for Half (rounded to half where the library's half gemm takes half scalars:
// cuBLAS's and CLBlast's; used as float on the host, which computes in float).
template <GemmElement T>
using ScalarFor = std::conditional_t<std::same_as<T, Half>, float, T>;

}  // namespace streamexecutor::blas

namespace streamexecutor::blas_detail {

// Arguments after the front end checked them: sizes fit the libraries' 32-bit
// int, increments and leading dimensions are positive, and every view is live
// memory of the stream's executor holding what the shape reads and writes.
template <typename T>
struct AxpyArgs {
  int n;
  T alpha;
  DeviceMemoryBase x;
  int incx;
  DeviceMemoryBase y;
  int incy;
};

template <typename T>
struct DotArgs {
  int n;
  DeviceMemoryBase x;
  int incx;
  DeviceMemoryBase y;
  int incy;
  DeviceMemoryBase result;
};

template <typename T>
struct GemvArgs {
  blas::Transpose trans;
  int m;
  int n;
  T alpha;
  DeviceMemoryBase a;
  int lda;
  DeviceMemoryBase x;
  int incx;
  T beta;
  DeviceMemoryBase y;
  int incy;
};

template <typename T>
struct GemmArgs {
  blas::Transpose transa;
  blas::Transpose transb;
  int m;
  int n;
  int k;
  blas::ScalarFor<T> alpha;
  DeviceMemoryBase a;
  int lda;
  DeviceMemoryBase b;
  int ldb;
  blas::ScalarFor<T> beta;
  DeviceMemoryBase c;
  int ldc;
};
// Every operand of a batch: what a command buffer holding it checks at each submission.
template <typename T>
std::vector<DeviceMemoryBase> GemmOperands(std::span<const GemmArgs<T>> batch) {
  std::vector<DeviceMemoryBase> operands;
  operands.reserve(batch.size() * 3);
  for (const GemmArgs<T>& args : batch) operands.insert(operands.end(), {args.a, args.b, args.c});
  return operands;
}

// The family's adapter trait (canned/detail/adapter.hpp), specialised in
// canned/blas/<backend>.hpp for each backend with a BLAS library:
//   struct State;                                   // per executor, an extension
//   static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<B>&);
//   static Status Axpy/Dot/Gemv/Gemm(Stream<B>&, State&, const XArgs<T>&);
//   static Status GemmBatched(Stream<B>&, State&, std::span<const GemmArgs<T>>);
// Other backends get the primary template: UNAVAILABLE, naming the backend.
template <typename B>
struct Adapter : canned_detail::NoAdapter<PluginKind::kBlas, B> {};

// The name each plugin is known by when the configuration names the default.
inline std::string_view PluginName(const BlasPluginId& plugin, std::string_view default_name) {
  return plugin.is_default() ? default_name : plugin.name;
}

// A BLAS plugin id of this backend that no library here serves (a typo, or a
// plugin of a newer version of this library).
inline Status UnknownPlugin(std::string_view device, const BlasPluginId& plugin, std::string_view available) {
  return MakeError(ErrorCode::kNotFound, "{} has no BLAS plugin '{}' (available: {})", device, plugin.name, available);
}

// A library that the build did not find: the plugin exists in name only.
inline Status NotBuiltIn(std::string_view device, std::string_view library, std::string_view package) {
  return MakeError(ErrorCode::kUnavailable,
                   "BLAS on {} needs {}, which this program was built without (install the {} package and "
                   "reconfigure, so that streamexecutor_blas_dep finds it)",
                   device, library, package);
}

// ---- Shape checks ------------------------------------------------------------------
// Each returns the number of elements an operand reads or writes, or an error
// whose message gives the sizes involved.

// Sizes are taken as any integer type, so that a literal or an int passes
// through Stream's forwarding members without a sign conversion there.
// BLAS libraries take int dimensions (OpenBLAS's blasint, cuBLAS, CLBlast's
// checks): larger values would be truncated, not rejected, by the library.
template <std::integral I>
Status CheckDimension(std::string_view caller, std::string_view device, std::string_view name, I value) {
  if constexpr (std::is_signed_v<I>) {
    if (value < 0) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: {}={} is negative", caller, device, name, value);
    }
  }
  if (static_cast<std::uint64_t>(value) > static_cast<std::uint64_t>(INT_MAX)) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: {}={} is larger than the BLAS libraries' int limit ({})",
                     caller, device, name, value, INT_MAX);
  }
  return Status();
}

// The value of a dimension that CheckDimension accepted.
template <std::integral I>
constexpr std::uint64_t Dimension(I value) {
  return static_cast<std::uint64_t>(value);
}

// Negative increments walk a vector backwards in reference BLAS but are not
// accepted by every plugin (CLBlast takes size_t increments), so none takes them.
inline Status CheckIncrement(std::string_view caller, std::string_view device, std::string_view name, int inc) {
  if (inc <= 0) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: {}={} must be positive", caller, device, name, inc);
  }
  return Status();
}

// Elements a vector of `length` entries spaced `inc` apart spans.
constexpr std::uint64_t VectorSpan(std::uint64_t length, int inc) {
  return length == 0 ? 0 : 1 + (length - 1) * static_cast<std::uint64_t>(inc);
}

// Elements a column-major rows x cols matrix with leading dimension ld spans.
constexpr std::uint64_t MatrixSpan(std::uint64_t rows, std::uint64_t cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : static_cast<std::uint64_t>(ld) * (cols - 1) + rows;
}

inline Status CheckLeadingDimension(std::string_view caller, std::string_view device, std::string_view ld_name, int ld,
                                    std::uint64_t rows, std::string_view matrix, std::string_view how) {
  if (ld <= 0 || static_cast<std::uint64_t>(ld) < std::max<std::uint64_t>(1, rows)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: {}={} is smaller than the {} rows {} stores ({}); it must be at least max(1, {})",
                     caller, device, ld_name, ld, rows, matrix, how, rows);
  }
  return Status();
}

// `shape` describes the operation ("m=4, n=5, k=6 (transa=N, transb=T)") so
// that the message says which sizes asked for what.
inline Status CheckHolds(std::string_view caller, std::string_view device, std::string_view shape,
                         std::string_view operand, std::uint64_t needed, std::uint64_t held_bytes,
                         std::size_t element_bytes) {
  const std::uint64_t held = held_bytes / element_bytes;
  if (needed > held) {
    return MakeError(ErrorCode::kOutOfRange,
                     "{} on {}: {} needs {} elements of {}, but its DeviceMemory holds {} ({} bytes)", caller, device,
                     shape, needed, operand, held, held_bytes);
  }
  return Status();
}

}  // namespace streamexecutor::blas_detail
