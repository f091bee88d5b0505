// BLAS on the host backend: OpenBLAS through its cblas interface. Each
// operation is a host call on the stream, so it runs on the stream's worker
// in stream order, after earlier work and before later work; a failed stream
// skips it like any other command. A host DeviceMemory is host memory, so the
// library receives the views' addresses directly.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "streamexecutor/canned/blas/common.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/host/backend.hpp"

#if defined(STREAMEXECUTOR_BLAS_WITH_OPENBLAS)
#include <cblas.h>
#endif

namespace streamexecutor::blas_detail {

template <>
struct Adapter<host> {
  // OpenBLAS keeps no per-device handle; the state records the plugin chosen,
  // so that the choice is checked once per executor rather than per call.
  struct State {
    BlasPluginId plugin;
  };

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<host>& executor) {
    const BlasPluginId plugin = executor.UsePlugin<PluginKind::kBlas>();
    if (!plugin.is_default() && plugin != host::kOpenBlasPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, host::kOpenBlasPlugin.name);
    }
#if defined(STREAMEXECUTOR_BLAS_WITH_OPENBLAS)
    return std::make_unique<State>(State{plugin});
#else
    return NotBuiltIn(executor.DeviceLabel(), "OpenBLAS (cblas)", "libopenblas-dev");
#endif
  }

#if defined(STREAMEXECUTOR_BLAS_WITH_OPENBLAS)
  template <blas::Scalar T>
  static Status Axpy(Stream<host>& stream, State&, const AxpyArgs<T>& args) {
    const auto* x = Pointer<T>(args.x);
    auto* y = Pointer<T>(args.y);
    return Enqueue(stream, "ThenBlasAxpy", {args.x, args.y},
                   [n = args.n, alpha = args.alpha, x, incx = args.incx, y, incy = args.incy] {
                     if constexpr (std::is_same_v<T, float>) {
                       cblas_saxpy(n, alpha, x, incx, y, incy);
                     } else {
                       cblas_daxpy(n, alpha, x, incx, y, incy);
                     }
                   });
  }

  template <blas::Scalar T>
  static Status Dot(Stream<host>& stream, State&, const DotArgs<T>& args) {
    const auto* x = Pointer<T>(args.x);
    const auto* y = Pointer<T>(args.y);
    auto* result = Pointer<T>(args.result);
    return Enqueue(stream, "ThenBlasDot", {args.x, args.y, args.result},
                   [n = args.n, x, incx = args.incx, y, incy = args.incy, result] {
                     if constexpr (std::is_same_v<T, float>) {
                       *result = cblas_sdot(n, x, incx, y, incy);
                     } else {
                       *result = cblas_ddot(n, x, incx, y, incy);
                     }
                   });
  }

  template <blas::Scalar T>
  static Status Gemv(Stream<host>& stream, State&, const GemvArgs<T>& args) {
    return Enqueue(stream, "ThenBlasGemv", {args.a, args.x, args.y}, [args] {
      const auto* a = Pointer<T>(args.a);
      const auto* x = Pointer<T>(args.x);
      auto* y = Pointer<T>(args.y);
      if constexpr (std::is_same_v<T, float>) {
        cblas_sgemv(CblasColMajor, Op(args.trans), args.m, args.n, args.alpha, a, args.lda, x, args.incx, args.beta, y,
                    args.incy);
      } else {
        cblas_dgemv(CblasColMajor, Op(args.trans), args.m, args.n, args.alpha, a, args.lda, x, args.incx, args.beta, y,
                    args.incy);
      }
    });
  }

  template <blas::Scalar T>
  static Status Gemm(Stream<host>& stream, State&, const GemmArgs<T>& args) {
    return Enqueue(stream, "ThenBlasGemm", {args.a, args.b, args.c}, [args] { RunGemm(args); });
  }

  // OpenBLAS has no half gemm: the operands are widened to float, multiplied
  // by cblas_sgemm (so products and sums are in float, more precise than a
  // half accumulation) and C rounded back to half once. That needs float
  // copies of A, B and C, allocated when the call runs.
  static Status Gemm(Stream<host>& stream, State&, const GemmArgs<Half>& args) {
    return Enqueue(stream, "ThenBlasGemm", {args.a, args.b, args.c}, [args] {
      HalfScratch scratch;
      RunHalfGemm(args, scratch);
    });
  }

  // One host call for the whole batch; it owns a copy of the entries, since
  // the caller's lists may be gone by the time it runs.
  template <blas::Scalar T>
  static Status GemmBatched(Stream<host>& stream, State&, std::span<const GemmArgs<T>> batch) {
    return Enqueue(stream, "ThenBlasGemmBatched", GemmOperands(batch),
                   [entries = std::vector<GemmArgs<T>>(batch.begin(), batch.end())] {
                     for (const GemmArgs<T>& args : entries) RunGemm(args);
                   });
  }

  // Half entries share one set of float copies, sized by the first entry (all
  // have one shape).
  static Status GemmBatched(Stream<host>& stream, State&, std::span<const GemmArgs<Half>> batch) {
    return Enqueue(stream, "ThenBlasGemmBatched", GemmOperands(batch),
                   [entries = std::vector<GemmArgs<Half>>(batch.begin(), batch.end())] {
                     HalfScratch scratch;
                     for (const GemmArgs<Half>& args : entries) RunHalfGemm(args, scratch);
                   });
  }

 private:
  template <typename T>
  static T* Pointer(const DeviceMemoryBase& memory) {
    return static_cast<T*>(host::Address(memory));
  }

  static CBLAS_TRANSPOSE Op(blas::Transpose transpose) {
    switch (transpose) {
      case blas::Transpose::kNoTranspose: return CblasNoTrans;
      case blas::Transpose::kTranspose: return CblasTrans;
      case blas::Transpose::kConjugateTranspose: return CblasConjTrans;
    }
    return CblasNoTrans;
  }

  template <blas::Scalar T>
  static void RunGemm(const GemmArgs<T>& args) {
    const auto* a = Pointer<T>(args.a);
    const auto* b = Pointer<T>(args.b);
    auto* c = Pointer<T>(args.c);
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasColMajor, Op(args.transa), Op(args.transb), args.m, args.n, args.k, args.alpha, a, args.lda, b,
                  args.ldb, args.beta, c, args.ldc);
    } else {
      cblas_dgemm(CblasColMajor, Op(args.transa), Op(args.transb), args.m, args.n, args.k, args.alpha, a, args.lda, b,
                  args.ldb, args.beta, c, args.ldc);
    }
  }

  struct HalfScratch {
    std::vector<float> a, b, c;
  };

  // The rows x cols matrix at `from` (leading dimension ld) as a packed
  // float matrix (leading dimension rows).
  static void Widen(const Half* from, std::size_t rows, std::size_t cols, int ld, std::vector<float>& to) {
    to.resize(rows * cols);
    for (std::size_t j = 0; j < cols; ++j) {
      const Half* column = from + j * static_cast<std::size_t>(ld);
      for (std::size_t i = 0; i < rows; ++i) to[i + j * rows] = static_cast<float>(column[i]);
    }
  }

  static void RunHalfGemm(const GemmArgs<Half>& args, HalfScratch& scratch) {
    const bool a_plain = args.transa == blas::Transpose::kNoTranspose;
    const bool b_plain = args.transb == blas::Transpose::kNoTranspose;
    const auto m = static_cast<std::size_t>(args.m), n = static_cast<std::size_t>(args.n),
               k = static_cast<std::size_t>(args.k);
    const std::size_t a_rows = a_plain ? m : k, a_cols = a_plain ? k : m;
    const std::size_t b_rows = b_plain ? k : n, b_cols = b_plain ? n : k;
    Widen(Pointer<const Half>(args.a), a_rows, a_cols, args.lda, scratch.a);
    Widen(Pointer<const Half>(args.b), b_rows, b_cols, args.ldb, scratch.b);
    Half* c = Pointer<Half>(args.c);
    // beta = 0: C is written, never read (BLAS's rule), so a NaN there stays out.
    if (args.beta == 0.0f) {
      scratch.c.assign(m * n, 0.0f);
    } else {
      Widen(c, m, n, args.ldc, scratch.c);
    }
    // Padded leading dimensions of 1 when a dimension is 0 (k = 0: A and B are empty).
    const auto ld = [](std::size_t rows) { return static_cast<int>(rows == 0 ? 1 : rows); };
    cblas_sgemm(CblasColMajor, Op(args.transa), Op(args.transb), args.m, args.n, args.k, args.alpha, scratch.a.data(),
                ld(a_rows), scratch.b.data(), ld(b_rows), args.beta, scratch.c.data(), ld(m));
    for (std::size_t j = 0; j < n; ++j) {
      Half* column = c + j * static_cast<std::size_t>(args.ldc);
      for (std::size_t i = 0; i < m; ++i) column[i] = Half(scratch.c[i + j * m]);
    }
  }

  // The host backend's own host-call path: the callable goes into the
  // stream's preallocated command slot (it is small enough), with no
  // allocation and the stream's skip-after-failure rule.
  // While the stream captures, the call is recorded instead, with `operands`
  // checked at each submission of the buffer.
  template <typename F>
  static Status Enqueue(Stream<host>& stream, std::string_view caller, std::span<const DeviceMemoryBase> operands,
                        F&& call) {
    return stream.EnqueueCanned(caller, operands, op::HostCall<F>{std::forward<F>(call)});
  }
  template <typename F>
  static Status Enqueue(Stream<host>& stream, std::string_view caller, std::initializer_list<DeviceMemoryBase> operands,
                        F&& call) {
    return Enqueue(stream, caller, std::span<const DeviceMemoryBase>(operands.begin(), operands.size()),
                   std::forward<F>(call));
  }

#else
  // Make refuses every executor, so these are never reached; they exist so
  // that the operations compile in a build without OpenBLAS.
  template <typename T>
  static Status Axpy(Stream<host>&, State&, const AxpyArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Dot(Stream<host>&, State&, const DotArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Gemv(Stream<host>&, State&, const GemvArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Gemm(Stream<host>&, State&, const GemmArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status GemmBatched(Stream<host>&, State&, std::span<const GemmArgs<T>>) {
    return Missing();
  }

 private:
  static Status Missing() { return NotBuiltIn("host", "OpenBLAS (cblas)", "libopenblas-dev"); }
#endif
};

}  // namespace streamexecutor::blas_detail
