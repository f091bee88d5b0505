// BLAS on the CUDA backend: cuBLAS, loaded at run time (cublas_loader.hpp).
// One cublasHandle_t per executor, created in its primary context on the first
// BLAS call and destroyed with the executor. A call binds the handle to the
// stream's CUstream (cublasSetStream: no allocation) under the state's mutex,
// since a handle is one binding at a time and streams of one executor may be
// driven from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "streamexecutor/canned/blas/common.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/cuda/backend.hpp"

#if defined(STREAMEXECUTOR_BLAS_WITH_CUBLAS)
#include "streamexecutor/canned/blas/cublas_loader.hpp"
#endif

namespace streamexecutor::blas_detail {

template <>
struct Library<cuda> {
#if defined(STREAMEXECUTOR_BLAS_WITH_CUBLAS)
  struct State {
    const CublasApi* api = nullptr;
    const cuda_detail::DriverApi* driver = nullptr;
    CUcontext context = nullptr;
    int ordinal = 0;
    cublasHandle_t handle = nullptr;
    std::mutex mutex;

    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State() {
      if (handle == nullptr) return;
      // The handle belongs to the primary context; the executor destroys its
      // extensions while that context is still retained.
      const cuda_detail::ContextScope scope(*driver, context);
      if (scope.ok()) api->cublasDestroy_v2(handle);
    }
  };
#else
  struct State {};
#endif

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<cuda>& executor) {
    const BlasPluginId plugin = executor.UsePlugin<PluginKind::kBlas>();
    if (!plugin.is_default() && plugin != cuda::kCuBlasPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, cuda::kCuBlasPlugin.name);
    }
#if defined(STREAMEXECUTOR_BLAS_WITH_CUBLAS)
    const CublasLoad& load = Cublas();
    if (!load.status.ok()) return load.status;
    const cuda::ExecutorState& native = executor.native_state();
    auto state = std::make_unique<State>();
    state->api = &load.api;
    state->driver = native.api;
    state->context = native.context;
    state->ordinal = native.ordinal;
    const cuda_detail::ContextScope scope(*native.api, native.context);
    if (!scope.ok()) return scope.status();
    if (const cublasStatus_t s = load.api.cublasCreate_v2(&state->handle); s != CUBLAS_STATUS_SUCCESS) {
      state->handle = nullptr;
      return load.api.Error(s, "cublasCreate", "creating the cuBLAS handle of {}", executor.DeviceLabel());
    }
    return StatusOr<std::unique_ptr<State>>(std::move(state));
#else
    return NotBuiltIn(executor.DeviceLabel(), "cuBLAS's header (cublas_v2.h)", "cuda-cublas-dev (libcublas-dev-13-0)");
#endif
  }

#if defined(STREAMEXECUTOR_BLAS_WITH_CUBLAS)
  template <blas::Scalar T>
  static Status Axpy(Stream<cuda>& stream, State& state, const AxpyArgs<T>& args) {
    return Call(stream, state, CUBLAS_POINTER_MODE_HOST, [&](const CublasApi& api, cublasHandle_t handle) {
      if constexpr (std::is_same_v<T, float>) {
        return Named{"cublasSaxpy", api.cublasSaxpy_v2(handle, args.n, &args.alpha, In<T>(args.x), args.incx,
                                                       Out<T>(args.y), args.incy)};
      } else {
        return Named{"cublasDaxpy", api.cublasDaxpy_v2(handle, args.n, &args.alpha, In<T>(args.x), args.incx,
                                                       Out<T>(args.y), args.incy)};
      }
    });
  }

  // The result stays on the device: device pointer mode, so cuBLAS neither
  // copies it back nor blocks the caller.
  template <blas::Scalar T>
  static Status Dot(Stream<cuda>& stream, State& state, const DotArgs<T>& args) {
    return Call(stream, state, CUBLAS_POINTER_MODE_DEVICE, [&](const CublasApi& api, cublasHandle_t handle) {
      if constexpr (std::is_same_v<T, float>) {
        return Named{"cublasSdot", api.cublasSdot_v2(handle, args.n, In<T>(args.x), args.incx, In<T>(args.y),
                                                     args.incy, Out<T>(args.result))};
      } else {
        return Named{"cublasDdot", api.cublasDdot_v2(handle, args.n, In<T>(args.x), args.incx, In<T>(args.y),
                                                     args.incy, Out<T>(args.result))};
      }
    });
  }

  template <blas::Scalar T>
  static Status Gemv(Stream<cuda>& stream, State& state, const GemvArgs<T>& args) {
    return Call(stream, state, CUBLAS_POINTER_MODE_HOST, [&](const CublasApi& api, cublasHandle_t handle) {
      if constexpr (std::is_same_v<T, float>) {
        return Named{"cublasSgemv", api.cublasSgemv_v2(handle, Op(args.trans), args.m, args.n, &args.alpha,
                                                       In<T>(args.a), args.lda, In<T>(args.x), args.incx,
                                                       &args.beta, Out<T>(args.y), args.incy)};
      } else {
        return Named{"cublasDgemv", api.cublasDgemv_v2(handle, Op(args.trans), args.m, args.n, &args.alpha,
                                                       In<T>(args.a), args.lda, In<T>(args.x), args.incx,
                                                       &args.beta, Out<T>(args.y), args.incy)};
      }
    });
  }

  template <blas::Scalar T>
  static Status Gemm(Stream<cuda>& stream, State& state, const GemmArgs<T>& args) {
    return Call(stream, state, CUBLAS_POINTER_MODE_HOST,
                [&](const CublasApi& api, cublasHandle_t handle) { return RunGemm(api, handle, args); });
  }

  // cuBLAS's pointer-array batched gemm would need the pointer lists in
  // device memory (an allocation and a copy per call); one gemm per entry,
  // in one binding of the handle, needs neither.
  template <blas::Scalar T>
  static Status GemmBatched(Stream<cuda>& stream, State& state, std::span<const GemmArgs<T>> batch) {
    return Call(stream, state, CUBLAS_POINTER_MODE_HOST, [&](const CublasApi& api, cublasHandle_t handle) {
      for (const GemmArgs<T>& args : batch) {
        if (Named result = RunGemm(api, handle, args); result.status != CUBLAS_STATUS_SUCCESS) return result;
      }
      return Named{"cublasGemm", CUBLAS_STATUS_SUCCESS};
    });
  }

 private:
  struct Named {
    const char* call;
    cublasStatus_t status;
  };

  template <typename T>
  static const T* In(const DeviceMemoryBase& memory) {
    return reinterpret_cast<const T*>(static_cast<std::uintptr_t>(cuda::Address(memory)));
  }
  template <typename T>
  static T* Out(const DeviceMemoryBase& memory) {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(cuda::Address(memory)));
  }

  static cublasOperation_t Op(blas::Transpose transpose) {
    switch (transpose) {
      case blas::Transpose::kNoTranspose: return CUBLAS_OP_N;
      case blas::Transpose::kTranspose: return CUBLAS_OP_T;
      case blas::Transpose::kConjugateTranspose: return CUBLAS_OP_C;
    }
    return CUBLAS_OP_N;
  }

  template <blas::Scalar T>
  static Named RunGemm(const CublasApi& api, cublasHandle_t handle, const GemmArgs<T>& args) {
    if constexpr (std::is_same_v<T, float>) {
      return Named{"cublasSgemm", api.cublasSgemm_v2(handle, Op(args.transa), Op(args.transb), args.m, args.n, args.k,
                                                     &args.alpha, In<T>(args.a), args.lda, In<T>(args.b), args.ldb,
                                                     &args.beta, Out<T>(args.c), args.ldc)};
    } else {
      return Named{"cublasDgemm", api.cublasDgemm_v2(handle, Op(args.transa), Op(args.transb), args.m, args.n, args.k,
                                                     &args.alpha, In<T>(args.a), args.lda, In<T>(args.b), args.ldb,
                                                     &args.beta, Out<T>(args.c), args.ldc)};
    }
  }

  // Skipped on a failed stream, as every backend's commands are; otherwise in
  // the primary context, with the handle bound to this stream.
  template <typename Enqueue>
  static Status Call(Stream<cuda>& stream, State& state, cublasPointerMode_t mode, Enqueue&& enqueue) {
    cuda_detail::StreamState* native = stream.native_handle();
    if (native->Failed()) [[unlikely]] return Status();
    const cuda_detail::ContextScope scope(*state.driver, state.context);
    if (!scope.ok()) [[unlikely]] return scope.status();
    const CublasApi& api = *state.api;
    std::lock_guard<std::mutex> lock(state.mutex);
    if (const cublasStatus_t s = api.cublasSetStream_v2(state.handle, native->stream); s != CUBLAS_STATUS_SUCCESS) {
      return api.Error(s, "cublasSetStream", "binding the cuBLAS handle to a stream of cuda:{}", state.ordinal);
    }
    if (const cublasStatus_t s = api.cublasSetPointerMode_v2(state.handle, mode); s != CUBLAS_STATUS_SUCCESS) {
      return api.Error(s, "cublasSetPointerMode", "on cuda:{}", state.ordinal);
    }
    const Named result = enqueue(api, state.handle);
    if (result.status != CUBLAS_STATUS_SUCCESS) [[unlikely]] {
      return api.Error(result.status, result.call, "on a stream of cuda:{}", state.ordinal);
    }
    return Status();
  }
#else
  // Make refuses every executor, so these are never reached; they exist so
  // that the operations compile in a build without cuBLAS's header.
  template <typename T>
  static Status Axpy(Stream<cuda>&, State&, const AxpyArgs<T>&) { return Missing(); }
  template <typename T>
  static Status Dot(Stream<cuda>&, State&, const DotArgs<T>&) { return Missing(); }
  template <typename T>
  static Status Gemv(Stream<cuda>&, State&, const GemvArgs<T>&) { return Missing(); }
  template <typename T>
  static Status Gemm(Stream<cuda>&, State&, const GemmArgs<T>&) { return Missing(); }
  template <typename T>
  static Status GemmBatched(Stream<cuda>&, State&, std::span<const GemmArgs<T>>) { return Missing(); }

 private:
  static Status Missing() { return NotBuiltIn("cuda", "cuBLAS's header (cublas_v2.h)", "cuda-cublas-dev"); }
#endif
};

}  // namespace streamexecutor::blas_detail
