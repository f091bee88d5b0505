// The canned BLAS operations as Stream<B> sees them: Stream::ThenBlasAxpy and
// friends call these CannedBlas* functions by argument-dependent lookup. Each
// checks its arguments the same way on every backend (shapes against buffer
// sizes, liveness, int limits), then hands plain values to the backend's
// Adapter<B> (canned/blas/host.hpp, opencl.hpp, cuda.hpp) with the executor's
// library state, created on the first BLAS call of that executor. A backend
// without an adapter gets UNAVAILABLE there (canned/detail/adapter.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "streamexecutor/canned/blas/common.hpp"
#include "streamexecutor/core/stream.hpp"

namespace streamexecutor {
namespace blas_detail {

template <Backend B>
StatusOr<typename Adapter<B>::State*> StateOf(StreamExecutor<B>& executor) {
  using State = typename Adapter<B>::State;
  return executor.template GetOrCreateExtension<State>([&] { return Adapter<B>::Make(executor); });
}

// Null, freed or foreign memory first (the core's wording), then the size
// the shape needs. `describe` formats the shape, only when there is an error.
template <Backend B, typename Describe>
Status CheckOperand(const StreamExecutor<B>& executor, std::string_view caller, std::string_view operand,
                    const DeviceMemoryBase& memory, std::uint64_t needed, std::size_t element_bytes,
                    Describe&& describe) {
  STREAMEXECUTOR_RETURN_IF_ERROR(executor.CheckDeviceRange(caller, operand, memory, 0));
  if (needed > memory.size() / element_bytes) [[unlikely]] {
    return CheckHolds(caller, executor.DeviceLabel(), describe(), operand, needed, memory.size(), element_bytes);
  }
  return Status();
}

template <Backend B>
Status NullPointer(const StreamExecutor<B>& executor, std::string_view caller, std::string_view what) {
  return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} pointer is null", caller, executor.DeviceLabel(),
                   what);
}

// Runs `submit.operator()<Adapter<B>>(state)` once the arguments passed,
// recording any error as the stream's sticky status. `submit` is a template
// on the adapter, so that its body (the adapter's operation) is compiled only
// for a backend that has one.
template <Backend B, typename Submit>
Stream<B>& Finish(Stream<B>& stream, std::string_view caller, Status checked, Submit&& submit) {
  if (!checked.ok()) [[unlikely]]
    return stream.CheckCanned(std::move(checked));
  if constexpr (!canned_detail::Adapted<Adapter<B>>) {
    return stream.CheckCanned(Adapter<B>::Unavailable(caller, stream.parent()->DeviceLabel()));
  } else {
    StatusOr<typename Adapter<B>::State*> state = StateOf(*stream.parent());
    if (!state.ok()) [[unlikely]]
      return stream.CheckCanned(state.status());
    return stream.CheckCanned(submit.template operator()<Adapter<B>>(*state.value()));
  }
}

template <std::integral M, std::integral N, std::integral K>
Status CheckGemmDimensions(std::string_view caller, std::string_view device, M m, N n, K k) {
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, "m", m));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckDimension(caller, device, "n", n));
  return CheckDimension(caller, device, "k", k);
}

// m, n and k passed CheckGemmDimensions.
template <Backend B, blas::GemmElement T>
Status CheckGemm(const StreamExecutor<B>& executor, std::string_view caller, GemmArgs<T>& args, std::uint64_t m,
                 std::uint64_t n, std::uint64_t k, const DeviceMemory<T>& a, const DeviceMemory<T>& b,
                 const DeviceMemory<T>* c) {
  const std::string& device = executor.DeviceLabel();
  const bool a_plain = args.transa == blas::Transpose::kNoTranspose;
  const bool b_plain = args.transb == blas::Transpose::kNoTranspose;
  // op(A) is m x k and op(B) k x n; stored, A is m x k or k x m, B k x n or n x k.
  const std::uint64_t a_rows = a_plain ? m : k, a_cols = a_plain ? k : m;
  const std::uint64_t b_rows = b_plain ? k : n, b_cols = b_plain ? n : k;
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckLeadingDimension(caller, device, "lda", args.lda, a_rows, "A", a_plain ? "m, transa=N" : "k, A transposed"));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckLeadingDimension(caller, device, "ldb", args.ldb, b_rows, "B", b_plain ? "k, transb=N" : "n, B transposed"));
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckLeadingDimension(caller, device, "ldc", args.ldc, m, "C", "m"));
  if (c == nullptr) return NullPointer(executor, caller, "C");
  auto describe = [&] {
    return ::streamexecutor::detail::Format("m={}, n={}, k={} (transa={}, transb={}, lda={}, ldb={}, ldc={})", m, n, k,
                                            blas::TransposeString(args.transa), blas::TransposeString(args.transb),
                                            args.lda, args.ldb, args.ldc);
  };
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckOperand(executor, caller, "matrix A", a, MatrixSpan(a_rows, a_cols, args.lda), sizeof(T), describe));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckOperand(executor, caller, "matrix B", b, MatrixSpan(b_rows, b_cols, args.ldb), sizeof(T), describe));
  STREAMEXECUTOR_RETURN_IF_ERROR(
      CheckOperand(executor, caller, "matrix C", *c, MatrixSpan(m, n, args.ldc), sizeof(T), describe));
  args.m = static_cast<int>(m);
  args.n = static_cast<int>(n);
  args.k = static_cast<int>(k);
  args.a = a;
  args.b = b;
  args.c = *c;
  return Status();
}

template <Backend B, blas::GemmElement T, std::integral M, std::integral N, std::integral K>
Stream<B>& GemmBatched(Stream<B>& stream, blas::Transpose transa, blas::Transpose transb, M m_in, N n_in, K k_in,
                       blas::ScalarFor<T> alpha, std::span<DeviceMemory<T>* const> a, int lda,
                       std::span<DeviceMemory<T>* const> b, int ldb, blas::ScalarFor<T> beta,
                       std::span<DeviceMemory<T>* const> c, int ldc, int batch_count) {
  constexpr std::string_view caller = "ThenBlasGemmBatched";
  if (!stream.ReadyForCanned(caller)) return stream;
  const StreamExecutor<B>& executor = *stream.parent();
  if (batch_count < 0 || a.size() < static_cast<std::size_t>(batch_count) ||
      b.size() < static_cast<std::size_t>(batch_count) || c.size() < static_cast<std::size_t>(batch_count)) {
    return stream.CheckCanned(MakeError(
        ErrorCode::kOutOfRange, "{} on {}: batch_count={} but the batch lists hold {} A, {} B and {} C matrices",
        caller, executor.DeviceLabel(), batch_count, a.size(), b.size(), c.size()));
  }
  if (Status s = CheckGemmDimensions(caller, executor.DeviceLabel(), m_in, n_in, k_in); !s.ok()) {
    return stream.CheckCanned(std::move(s));
  }
  const std::uint64_t m = Dimension(m_in), n = Dimension(n_in), k = Dimension(k_in);
  if (m == 0 || n == 0 || batch_count == 0) return stream;
  std::vector<GemmArgs<T>> batch(static_cast<std::size_t>(batch_count),
                                 GemmArgs<T>{transa, transb, 0, 0, 0, alpha, {}, lda, {}, ldb, beta, {}, ldc});
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (a[i] == nullptr || b[i] == nullptr) {
      return stream.CheckCanned(
          NullPointer(executor, caller, ::streamexecutor::detail::Format("{}[{}]", a[i] ? "B" : "A", i)));
    }
    Status checked = CheckGemm(executor, caller, batch[i], m, n, k, *a[i], *b[i], c[i]);
    if (!checked.ok()) {
      return stream.CheckCanned(MakeError(checked.code(), "{} (batch entry {})", checked.message(), i));
    }
  }
  return Finish(stream, caller, Status(), [&]<typename A>(typename A::State& state) {
    return A::GemmBatched(stream, state, std::span<const GemmArgs<T>>(batch));
  });
}

}  // namespace blas_detail

// y <- alpha * x + y over n elements.
template <Backend B, blas::Scalar T>
Stream<B>& CannedBlasAxpy(Stream<B>& stream, std::integral auto n_in, std::type_identity_t<T> alpha,
                          const DeviceMemory<T>& x, int incx, DeviceMemory<T>* y, int incy) {
  constexpr std::string_view caller = "ThenBlasAxpy";
  if (!stream.ReadyForCanned(caller)) return stream;
  const StreamExecutor<B>& executor = *stream.parent();
  const std::string& device = executor.DeviceLabel();
  const std::uint64_t n = blas_detail::Dimension(n_in);  // used once checked
  auto check = [&]() -> Status {
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckDimension(caller, device, "n", n_in));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckIncrement(caller, device, "incx", incx));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckIncrement(caller, device, "incy", incy));
    if (y == nullptr) return blas_detail::NullPointer(executor, caller, "y");
    auto describe = [&] { return ::streamexecutor::detail::Format("n={} (incx={}, incy={})", n, incx, incy); };
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckOperand(executor, caller, "vector x", x,
                                                             blas_detail::VectorSpan(n, incx), sizeof(T), describe));
    return blas_detail::CheckOperand(executor, caller, "vector y", *y, blas_detail::VectorSpan(n, incy), sizeof(T),
                                     describe);
  };
  Status checked = check();
  if (checked.ok() && n == 0) return stream;
  return blas_detail::Finish(stream, caller, std::move(checked), [&]<typename A>(typename A::State& state) {
    return A::Axpy(stream, state, blas_detail::AxpyArgs<T>{static_cast<int>(n), alpha, x, incx, *y, incy});
  });
}

// *result <- x . y over n elements; the result stays in device memory.
template <Backend B, blas::Scalar T>
Stream<B>& CannedBlasDot(Stream<B>& stream, std::integral auto n_in, const DeviceMemory<T>& x, int incx,
                         const DeviceMemory<T>& y, int incy, DeviceMemory<T>* result) {
  constexpr std::string_view caller = "ThenBlasDot";
  if (!stream.ReadyForCanned(caller)) return stream;
  const StreamExecutor<B>& executor = *stream.parent();
  const std::string& device = executor.DeviceLabel();
  const std::uint64_t n = blas_detail::Dimension(n_in);  // used once checked
  auto check = [&]() -> Status {
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckDimension(caller, device, "n", n_in));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckIncrement(caller, device, "incx", incx));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckIncrement(caller, device, "incy", incy));
    if (result == nullptr) return blas_detail::NullPointer(executor, caller, "result");
    auto describe = [&] { return ::streamexecutor::detail::Format("n={} (incx={}, incy={})", n, incx, incy); };
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckOperand(executor, caller, "vector x", x,
                                                             blas_detail::VectorSpan(n, incx), sizeof(T), describe));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckOperand(executor, caller, "vector y", y,
                                                             blas_detail::VectorSpan(n, incy), sizeof(T), describe));
    return blas_detail::CheckOperand(executor, caller, "result", *result, 1, sizeof(T), describe);
  };
  Status checked = check();
  // The empty sum is 0 (as BLAS defines it); not every library accepts n=0.
  if (checked.ok() && n == 0) return stream.ThenMemZero(result, sizeof(T));
  return blas_detail::Finish(stream, caller, std::move(checked), [&]<typename A>(typename A::State& state) {
    return A::Dot(stream, state, blas_detail::DotArgs<T>{static_cast<int>(n), x, incx, y, incy, *result});
  });
}

// y <- alpha * op(A) x + beta * y, A an m x n matrix.
template <Backend B, blas::Scalar T>
Stream<B>& CannedBlasGemv(Stream<B>& stream, blas::Transpose trans, std::integral auto m_in, std::integral auto n_in,
                          std::type_identity_t<T> alpha, const DeviceMemory<T>& a, int lda, const DeviceMemory<T>& x,
                          int incx, std::type_identity_t<T> beta, DeviceMemory<T>* y, int incy) {
  constexpr std::string_view caller = "ThenBlasGemv";
  if (!stream.ReadyForCanned(caller)) return stream;
  const StreamExecutor<B>& executor = *stream.parent();
  const std::string& device = executor.DeviceLabel();
  const bool plain = trans == blas::Transpose::kNoTranspose;
  const std::uint64_t m = blas_detail::Dimension(m_in), n = blas_detail::Dimension(n_in);  // used once checked
  auto check = [&]() -> Status {
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckDimension(caller, device, "m", m_in));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckDimension(caller, device, "n", n_in));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckLeadingDimension(caller, device, "lda", lda, m, "A", "m"));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckIncrement(caller, device, "incx", incx));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckIncrement(caller, device, "incy", incy));
    if (y == nullptr) return blas_detail::NullPointer(executor, caller, "y");
    auto describe = [&] {
      return ::streamexecutor::detail::Format("m={}, n={} (trans={}, lda={}, incx={}, incy={})", m, n,
                                              blas::TransposeString(trans), lda, incx, incy);
    };
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckOperand(executor, caller, "matrix A", a,
                                                             blas_detail::MatrixSpan(m, n, lda), sizeof(T), describe));
    STREAMEXECUTOR_RETURN_IF_ERROR(blas_detail::CheckOperand(
        executor, caller, "vector x", x, blas_detail::VectorSpan(plain ? n : m, incx), sizeof(T), describe));
    return blas_detail::CheckOperand(executor, caller, "vector y", *y, blas_detail::VectorSpan(plain ? m : n, incy),
                                     sizeof(T), describe);
  };
  Status checked = check();
  if (checked.ok() && (m == 0 || n == 0)) return stream;  // BLAS's quick return: y is left as it is
  return blas_detail::Finish(stream, caller, std::move(checked), [&]<typename A>(typename A::State& state) {
    return A::Gemv(stream, state,
                   blas_detail::GemvArgs<T>{trans, static_cast<int>(m), static_cast<int>(n), alpha, a, lda, x, incx,
                                            beta, *y, incy});
  });
}

// C <- alpha * op(A) op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n.
// For Half memory, alpha and beta are float (blas::ScalarFor).
template <Backend B, blas::GemmElement T>
Stream<B>& CannedBlasGemm(Stream<B>& stream, blas::Transpose transa, blas::Transpose transb, std::integral auto m,
                          std::integral auto n, std::integral auto k, blas::ScalarFor<T> alpha,
                          const DeviceMemory<T>& a, int lda, const DeviceMemory<T>& b, int ldb, blas::ScalarFor<T> beta,
                          DeviceMemory<T>* c, int ldc) {
  constexpr std::string_view caller = "ThenBlasGemm";
  if (!stream.ReadyForCanned(caller)) return stream;
  blas_detail::GemmArgs<T> args{transa, transb, 0, 0, 0, alpha, {}, lda, {}, ldb, beta, {}, ldc};
  Status checked = blas_detail::CheckGemmDimensions(caller, stream.parent()->DeviceLabel(), m, n, k);
  if (checked.ok()) {
    checked = blas_detail::CheckGemm(*stream.parent(), caller, args, blas_detail::Dimension(m),
                                     blas_detail::Dimension(n), blas_detail::Dimension(k), a, b, c);
  }
  if (checked.ok() && (args.m == 0 || args.n == 0)) return stream;
  return blas_detail::Finish(stream, caller, std::move(checked),
                             [&]<typename A>(typename A::State& state) { return A::Gemm(stream, state, args); });
}

// batch_count independent gemms of one shape; the lists are read during the
// call, so they may go right after it. Overloads per element type, so that a
// std::vector<DeviceMemory<float>*> converts to the span.
template <Backend B>
Stream<B>& CannedBlasGemmBatched(Stream<B>& stream, blas::Transpose transa, blas::Transpose transb,
                                 std::integral auto m, std::integral auto n, std::integral auto k, float alpha,
                                 std::span<DeviceMemory<float>* const> a, int lda,
                                 std::span<DeviceMemory<float>* const> b, int ldb, float beta,
                                 std::span<DeviceMemory<float>* const> c, int ldc, int batch_count) {
  return blas_detail::GemmBatched<B, float>(stream, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                                            batch_count);
}
template <Backend B>
Stream<B>& CannedBlasGemmBatched(Stream<B>& stream, blas::Transpose transa, blas::Transpose transb,
                                 std::integral auto m, std::integral auto n, std::integral auto k, double alpha,
                                 std::span<DeviceMemory<double>* const> a, int lda,
                                 std::span<DeviceMemory<double>* const> b, int ldb, double beta,
                                 std::span<DeviceMemory<double>* const> c, int ldc, int batch_count) {
  return blas_detail::GemmBatched<B, double>(stream, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                                             batch_count);
}
// Half memory, float scalars.
template <Backend B>
Stream<B>& CannedBlasGemmBatched(Stream<B>& stream, blas::Transpose transa, blas::Transpose transb,
                                 std::integral auto m, std::integral auto n, std::integral auto k, float alpha,
                                 std::span<DeviceMemory<Half>* const> a, int lda,
                                 std::span<DeviceMemory<Half>* const> b, int ldb, float beta,
                                 std::span<DeviceMemory<Half>* const> c, int ldc, int batch_count) {
  return blas_detail::GemmBatched<B, Half>(stream, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                                           batch_count);
}

}  // namespace streamexecutor
