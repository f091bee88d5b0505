// BLAS on the host backend: OpenBLAS through its cblas interface. Each
// operation is a host call on the stream, so it runs on the stream's worker
// in stream order, after earlier work and before later work; a failed stream
// skips it like any other command. A host DeviceMemory is host memory, so the
// library receives the views' addresses directly.
#pragma once

#include <memory>
#include <span>
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
struct Library<host> {
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
    return Enqueue(stream, [n = args.n, alpha = args.alpha, x, incx = args.incx, y, incy = args.incy] {
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
    return Enqueue(stream, [n = args.n, x, incx = args.incx, y, incy = args.incy, result] {
      if constexpr (std::is_same_v<T, float>) {
        *result = cblas_sdot(n, x, incx, y, incy);
      } else {
        *result = cblas_ddot(n, x, incx, y, incy);
      }
    });
  }

  template <blas::Scalar T>
  static Status Gemv(Stream<host>& stream, State&, const GemvArgs<T>& args) {
    return Enqueue(stream, [args] {
      const auto* a = Pointer<T>(args.a);
      const auto* x = Pointer<T>(args.x);
      auto* y = Pointer<T>(args.y);
      if constexpr (std::is_same_v<T, float>) {
        cblas_sgemv(CblasColMajor, Op(args.trans), args.m, args.n, args.alpha, a, args.lda, x, args.incx, args.beta,
                    y, args.incy);
      } else {
        cblas_dgemv(CblasColMajor, Op(args.trans), args.m, args.n, args.alpha, a, args.lda, x, args.incx, args.beta,
                    y, args.incy);
      }
    });
  }

  template <blas::Scalar T>
  static Status Gemm(Stream<host>& stream, State&, const GemmArgs<T>& args) {
    return Enqueue(stream, [args] { RunGemm(args); });
  }

  // One host call for the whole batch; it owns a copy of the entries, since
  // the caller's lists may be gone by the time it runs.
  template <blas::Scalar T>
  static Status GemmBatched(Stream<host>& stream, State&, std::span<const GemmArgs<T>> batch) {
    return Enqueue(stream, [entries = std::vector<GemmArgs<T>>(batch.begin(), batch.end())] {
      for (const GemmArgs<T>& args : entries) RunGemm(args);
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

  // The host backend's own host-call path: the callable goes into the
  // stream's preallocated command slot (it is small enough), with no
  // allocation and the stream's skip-after-failure rule.
  template <typename F>
  static Status Enqueue(Stream<host>& stream, F&& call) {
    return host::Submit(stream.native_handle(), op::HostCall<F>{std::forward<F>(call)});
  }
#else
  // Make refuses every executor, so these are never reached; they exist so
  // that the operations compile in a build without OpenBLAS.
  template <typename T>
  static Status Axpy(Stream<host>&, State&, const AxpyArgs<T>&) { return Missing(); }
  template <typename T>
  static Status Dot(Stream<host>&, State&, const DotArgs<T>&) { return Missing(); }
  template <typename T>
  static Status Gemv(Stream<host>&, State&, const GemvArgs<T>&) { return Missing(); }
  template <typename T>
  static Status Gemm(Stream<host>&, State&, const GemmArgs<T>&) { return Missing(); }
  template <typename T>
  static Status GemmBatched(Stream<host>&, State&, std::span<const GemmArgs<T>>) { return Missing(); }

 private:
  static Status Missing() { return NotBuiltIn("host", "OpenBLAS (cblas)", "libopenblas-dev"); }
#endif
};

}  // namespace streamexecutor::blas_detail
