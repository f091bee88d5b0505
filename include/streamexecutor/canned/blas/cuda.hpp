// BLAS on the CUDA backend: cuBLAS, loaded at run time (cublas_loader.hpp).
// One cublasHandle_t per executor, created in its primary context on the first
// BLAS call and destroyed with the executor. A call binds the handle to the
// stream's CUstream (cublasSetStream: no allocation) under the state's mutex,
// since a handle is one binding at a time and streams of one executor may be
// driven from several threads. A batched gemm is one cuBLAS call (strided, or
// with pointer arrays in a device buffer the state keeps: see State).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "streamexecutor/canned/blas/common.hpp"
#include "streamexecutor/canned/detail/adapter.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/cuda/backend.hpp"

#if defined(STREAMEXECUTOR_BLAS_WITH_CUBLAS)
#include "streamexecutor/canned/blas/cublas_loader.hpp"
#endif

namespace streamexecutor::blas_detail {

template <>
struct Adapter<cuda> {
#if defined(STREAMEXECUTOR_BLAS_WITH_CUBLAS)
  struct State {
    const CublasApi* api = nullptr;
    const cuda_detail::DriverApi* driver = nullptr;
    CUcontext context = nullptr;
    int ordinal = 0;
    cublasHandle_t handle = nullptr;
    std::mutex mutex;

    // The pointer arrays of cublas<t>gemmBatched live in device memory: one
    // allocation per executor (per handle), made by the first batch that needs
    // it and grown geometrically, so a batch no larger than an earlier one
    // allocates nothing. The arrays are built in `host_pointers` (reused) and
    // copied on the stream. `pointers_read` is recorded on the stream of every
    // batched call that read them, and the next such call's stream waits for
    // it before overwriting them, whichever stream it is. A buffer replaced
    // by a larger one may still be read by a batch in flight: it is retired,
    // freed once `pointers_read` has completed (checked without blocking on
    // later calls) or with the state.
    CUdeviceptr pointers = 0;
    std::size_t pointer_bytes = 0;
    std::vector<CUdeviceptr> retired;
    std::vector<CUdeviceptr> host_pointers;
    CUevent pointers_read = nullptr;
    bool pointers_recorded = false;

    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State() {
      if (handle == nullptr) return;
      // The handle belongs to the primary context; the executor destroys its
      // extensions while that context is still retained.
      const cuda_detail::ContextScope scope(*driver, context);
      if (!scope.ok()) return;
      if (pointers_read != nullptr) {
        if (pointers_recorded) driver->cuEventSynchronize(pointers_read);
        driver->cuEventDestroy(pointers_read);
      }
      for (const CUdeviceptr old : retired) driver->cuMemFree(old);
      if (pointers != 0) driver->cuMemFree(pointers);
      api->cublasDestroy_v2(handle);
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
    const auto& load = Cublas();
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
    return Call(stream, "ThenBlasAxpy", {args.x, args.y}, state, CUBLAS_POINTER_MODE_HOST,
                [&](const CublasApi& api, cublasHandle_t handle) {
                  if constexpr (std::is_same_v<T, float>) {
                    return Named{"cublasSaxpy", api.cublasSaxpy_v2(handle, args.n, &args.alpha, In<T>(args.x),
                                                                   args.incx, Out<T>(args.y), args.incy)};
                  } else {
                    return Named{"cublasDaxpy", api.cublasDaxpy_v2(handle, args.n, &args.alpha, In<T>(args.x),
                                                                   args.incx, Out<T>(args.y), args.incy)};
                  }
                });
  }

  // The result stays on the device: device pointer mode, so cuBLAS neither
  // copies it back nor blocks the caller.
  template <blas::Scalar T>
  static Status Dot(Stream<cuda>& stream, State& state, const DotArgs<T>& args) {
    return Call(stream, "ThenBlasDot", {args.x, args.y, args.result}, state, CUBLAS_POINTER_MODE_DEVICE,
                [&](const CublasApi& api, cublasHandle_t handle) {
                  if constexpr (std::is_same_v<T, float>) {
                    return Named{"cublasSdot", api.cublasSdot_v2(handle, args.n, In<T>(args.x), args.incx,
                                                                 In<T>(args.y), args.incy, Out<T>(args.result))};
                  } else {
                    return Named{"cublasDdot", api.cublasDdot_v2(handle, args.n, In<T>(args.x), args.incx,
                                                                 In<T>(args.y), args.incy, Out<T>(args.result))};
                  }
                });
  }

  template <blas::Scalar T>
  static Status Gemv(Stream<cuda>& stream, State& state, const GemvArgs<T>& args) {
    return Call(stream, "ThenBlasGemv", {args.a, args.x, args.y}, state, CUBLAS_POINTER_MODE_HOST,
                [&](const CublasApi& api, cublasHandle_t handle) {
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

  // Half memory is cuBLAS's cublasHgemm (half scalars, rounded from the float
  // ones; cuBLAS chooses how it accumulates).
  template <blas::GemmElement T>
  static Status Gemm(Stream<cuda>& stream, State& state, const GemmArgs<T>& args) {
    return Call(stream, "ThenBlasGemm", {args.a, args.b, args.c}, state, CUBLAS_POINTER_MODE_HOST,
                [&](const CublasApi& api, cublasHandle_t handle) { return RunGemm(api, handle, args); });
  }

  // One cuBLAS call for the whole batch. Entries whose A, B and C addresses
  // each advance by a constant step (slices of one allocation, equally
  // spaced: the usual layout) are cublas<t>gemmStridedBatched, which needs
  // nothing but the strides. Any other batch is cublas<t>gemmBatched, whose
  // pointer arrays are copied on the stream into the executor's pointer
  // buffer (State). A batch of one is a plain gemm.
  template <blas::GemmElement T>
  static Status GemmBatched(Stream<cuda>& stream, State& state, std::span<const GemmArgs<T>> batch) {
    if (batch.size() == 1) return Gemm(stream, state, batch.front());
    const std::vector<DeviceMemoryBase> operands = GemmOperands(batch);
    if (const std::optional<Strides> strides = EqualStrides(batch)) {
      return Call(stream, "ThenBlasGemmBatched", operands, state, CUBLAS_POINTER_MODE_HOST,
                  [&](const CublasApi& api, cublasHandle_t handle) {
                    return RunStrided(api, handle, batch.front(), *strides, static_cast<int>(batch.size()));
                  });
    }
    return Call(stream, "ThenBlasGemmBatched", operands, state, CUBLAS_POINTER_MODE_HOST,
                [&](const CublasApi& api, cublasHandle_t handle, cuda_detail::StreamState& native) {
                  return RunPointerArrays(native, state, api, handle, batch);
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

  // The element type cuBLAS takes: __half for Half.
  template <blas::GemmElement T>
  using Element = std::conditional_t<std::is_same_v<T, Half>, __half, T>;

  // alpha or beta as cuBLAS takes it: rounded to half for Half.
  template <blas::GemmElement T>
  static Element<T> Scalar(blas::ScalarFor<T> value) {
    if constexpr (std::is_same_v<T, Half>) {
      __half_raw raw{};
      raw.x = Half(value).bits();
      return __half(raw);
    } else {
      return value;
    }
  }

  template <blas::GemmElement T>
  static Named RunGemm(const CublasApi& api, cublasHandle_t handle, const GemmArgs<T>& args) {
    using E = Element<T>;
    const E alpha = Scalar<T>(args.alpha), beta = Scalar<T>(args.beta);
    const auto gemm = [&](const char* name, auto entry) {
      return Named{name, entry(handle, Op(args.transa), Op(args.transb), args.m, args.n, args.k, &alpha, In<E>(args.a),
                               args.lda, In<E>(args.b), args.ldb, &beta, Out<E>(args.c), args.ldc)};
    };
    if constexpr (std::is_same_v<T, float>) {
      return gemm("cublasSgemm", api.cublasSgemm_v2);
    } else if constexpr (std::is_same_v<T, double>) {
      return gemm("cublasDgemm", api.cublasDgemm_v2);
    } else {
      return gemm("cublasHgemm", api.cublasHgemm);
    }
  }

  // Element steps between consecutive entries' A, B and C.
  struct Strides {
    long long a, b, c;
  };

  // The constant step of one operand's addresses over the batch, in elements;
  // none when the addresses go backwards, are unequally spaced or not a whole
  // number of elements apart.
  template <blas::GemmElement T>
  static std::optional<long long> Step(std::span<const GemmArgs<T>> batch, DeviceMemoryBase GemmArgs<T>::*operand) {
    const CUdeviceptr first = cuda::Address(batch[0].*operand);
    const CUdeviceptr second = cuda::Address(batch[1].*operand);
    if (second < first || (second - first) % sizeof(T) != 0) return std::nullopt;
    const CUdeviceptr step = second - first;
    for (std::size_t i = 2; i < batch.size(); ++i) {
      if (cuda::Address(batch[i].*operand) != first + step * i) return std::nullopt;
    }
    return static_cast<long long>(step / sizeof(T));
  }

  // A and B may repeat (step 0: every entry reads the same matrix); C must
  // advance, or the entries would write one matrix at once.
  template <blas::GemmElement T>
  static std::optional<Strides> EqualStrides(std::span<const GemmArgs<T>> batch) {
    const std::optional<long long> a = Step(batch, &GemmArgs<T>::a);
    const std::optional<long long> b = Step(batch, &GemmArgs<T>::b);
    const std::optional<long long> c = Step(batch, &GemmArgs<T>::c);
    if (!a || !b || !c || *c == 0) return std::nullopt;
    return Strides{*a, *b, *c};
  }

  template <blas::GemmElement T>
  static Named RunStrided(const CublasApi& api, cublasHandle_t handle, const GemmArgs<T>& first, const Strides& strides,
                          int count) {
    using E = Element<T>;
    const E alpha = Scalar<T>(first.alpha), beta = Scalar<T>(first.beta);
    const auto gemm = [&](const char* name, auto entry) {
      return Named{name, entry(handle, Op(first.transa), Op(first.transb), first.m, first.n, first.k, &alpha,
                               In<E>(first.a), first.lda, strides.a, In<E>(first.b), first.ldb, strides.b, &beta,
                               Out<E>(first.c), first.ldc, strides.c, count)};
    };
    if constexpr (std::is_same_v<T, float>) {
      return gemm("cublasSgemmStridedBatched", api.cublasSgemmStridedBatched);
    } else if constexpr (std::is_same_v<T, double>) {
      return gemm("cublasDgemmStridedBatched", api.cublasDgemmStridedBatched);
    } else {
      return gemm("cublasHgemmStridedBatched", api.cublasHgemmStridedBatched);
    }
  }

  // Makes the pointer buffer hold `bytes` (under the state's mutex). The
  // buffer it replaces is retired, not freed: a batch in flight may read it.
  static Status ReservePointers(State& state, std::size_t bytes) {
    const cuda_detail::DriverApi& driver = *state.driver;
    if (state.pointers_read == nullptr) {
      if (const CUresult r = driver.cuEventCreate(&state.pointers_read, CU_EVENT_DISABLE_TIMING); r != CUDA_SUCCESS) {
        state.pointers_read = nullptr;
        return driver.Error(r, "cuEventCreate", "for the batched gemm's pointer arrays on cuda:{}", state.ordinal);
      }
    }
    // Every read of any pointer buffer was ordered before the last record of
    // the event (each call waits for it first): once it completed, the
    // retired buffers are unused.
    if (!state.retired.empty() && driver.cuEventQuery(state.pointers_read) == CUDA_SUCCESS) {
      for (const CUdeviceptr old : state.retired) driver.cuMemFree(old);
      state.retired.clear();
    }
    if (bytes <= state.pointer_bytes) return Status();
    const std::size_t grown = std::max({bytes, 2 * state.pointer_bytes, std::size_t { 64 * 3 * sizeof(CUdeviceptr) }});
    CUdeviceptr fresh = 0;
    if (const CUresult r = driver.cuMemAlloc(&fresh, grown); r != CUDA_SUCCESS) {
      return driver.Error(r, "cuMemAlloc", "allocating {} bytes for the batched gemm's pointer arrays on cuda:{}",
                          grown, state.ordinal);
    }
    if (state.pointers != 0) state.retired.push_back(state.pointers);
    state.pointers = fresh;
    state.pointer_bytes = grown;
    return Status();
  }

  template <blas::GemmElement T>
  static Status RunPointerArrays(cuda_detail::StreamState& native, State& state, const CublasApi& api,
                                 cublasHandle_t handle, std::span<const GemmArgs<T>> batch) {
    using E = Element<T>;
    const cuda_detail::DriverApi& driver = *state.driver;
    const std::size_t count = batch.size();
    const std::size_t bytes = 3 * count * sizeof(CUdeviceptr);
    if (native.capturing) {
      // The arrays are copied from host memory that later batches reuse: a
      // graph would read them at its launches, not as they are now.
      return MakeError(ErrorCode::kUnimplemented,
                       "ThenBlasGemmBatched on cuda:{}: a batch that is not equally strided needs pointer arrays "
                       "copied from the host, which a command buffer cannot capture; capture equally strided "
                       "slices of one allocation (one cublas<t>gemmStridedBatched)",
                       state.ordinal);
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(ReservePointers(state, bytes));
    if (state.pointers_recorded) {
      if (const CUresult r = driver.cuStreamWaitEvent(native.stream, state.pointers_read, 0); r != CUDA_SUCCESS) {
        return driver.Error(r, "cuStreamWaitEvent", "ordering the batched gemm's pointer arrays on cuda:{}",
                            state.ordinal);
      }
    }
    state.host_pointers.resize(3 * count);
    for (std::size_t i = 0; i < count; ++i) {
      state.host_pointers[i] = cuda::Address(batch[i].a);
      state.host_pointers[count + i] = cuda::Address(batch[i].b);
      state.host_pointers[2 * count + i] = cuda::Address(batch[i].c);
    }
    // From pageable memory: the driver has staged the source when this
    // returns, so host_pointers may be rebuilt by the next call at once.
    if (const CUresult r = driver.cuMemcpyHtoDAsync(state.pointers, state.host_pointers.data(), bytes, native.stream);
        r != CUDA_SUCCESS) {
      return driver.Error(r, "cuMemcpyHtoDAsync", "copying the batched gemm's pointer arrays on cuda:{}",
                          state.ordinal);
    }
    const GemmArgs<T>& first = batch.front();
    const E alpha = Scalar<T>(first.alpha), beta = Scalar<T>(first.beta);
    const auto* as = reinterpret_cast<const E* const*>(static_cast<std::uintptr_t>(state.pointers));
    const auto* bs = as + count;
    auto* const* cs = reinterpret_cast<E* const*>(static_cast<std::uintptr_t>(state.pointers)) + 2 * count;
    const int n = static_cast<int>(count);
    const auto gemm = [&](const char* name, auto entry) {
      return Named{name, entry(handle, Op(first.transa), Op(first.transb), first.m, first.n, first.k, &alpha, as,
                               first.lda, bs, first.ldb, &beta, cs, first.ldc, n)};
    };
    Named result{};
    if constexpr (std::is_same_v<T, float>) {
      result = gemm("cublasSgemmBatched", api.cublasSgemmBatched);
    } else if constexpr (std::is_same_v<T, double>) {
      result = gemm("cublasDgemmBatched", api.cublasDgemmBatched);
    } else {
      result = gemm("cublasHgemmBatched", api.cublasHgemmBatched);
    }
    // Recorded even when cuBLAS refused the call: the copy above is on the
    // stream, and the next call's copy must not overtake it.
    const CUresult recorded = driver.cuEventRecord(state.pointers_read, native.stream);
    if (recorded == CUDA_SUCCESS) state.pointers_recorded = true;
    if (result.status != CUBLAS_STATUS_SUCCESS) {
      return api.Error(result.status, result.call, "on a stream of cuda:{}", state.ordinal);
    }
    if (recorded != CUDA_SUCCESS) {
      return driver.Error(recorded, "cuEventRecord", "after the batched gemm on cuda:{}", state.ordinal);
    }
    return Status();
  }

  // Skipped on a failed stream, as every backend's commands are; otherwise in
  // the primary context, with the handle bound to this stream.
  // While the stream captures, this runs once on the command buffer's
  // capture stream (Stream::EnqueueCanned), and `operands` are checked at
  // each submission of the buffer.
  template <typename Enqueue>
  static Status Call(Stream<cuda>& stream, std::string_view caller, std::span<const DeviceMemoryBase> operands,
                     State& state, cublasPointerMode_t mode, Enqueue&& enqueue) {
    if (stream.capturing()) [[unlikely]] {
      std::shared_ptr<const void> keep;
      CUdeviceptr workspace = 0;
      STREAMEXECUTOR_RETURN_IF_ERROR(CaptureWorkspace(state, &keep, &workspace));
      return canned_detail::EnqueueLibraryCall(
          stream, caller, operands,
          [&](cuda_detail::StreamState& native) { return CallOn(&native, state, mode, enqueue, workspace); },
          std::move(keep));
    }
    return canned_detail::EnqueueLibraryCall(stream, caller, operands, [&](cuda_detail::StreamState& native) {
      return CallOn(&native, state, mode, enqueue);
    });
  }

  // While a stream captures, cuBLAS (12.2 and later) takes its workspace
  // with cudaMallocAsync, which puts allocation nodes into the captured
  // graph; a conditional's body refuses those, and so does
  // cuGraphAddChildGraphNode. A captured call gets a workspace of its own
  // instead (cublasSetWorkspace), which the command buffer holds as long as
  // its graph may run: its own, since two buffers may run at once. 4 MiB is
  // what cuBLAS takes by default before Hopper; with less than it likes, it
  // picks another algorithm, never a wrong result.
  static constexpr std::size_t kCaptureWorkspaceBytes = std::size_t{4} << 20;
  struct CaptureWorkspaceMemory {
    const cuda_detail::DriverApi* driver;
    CUcontext context;
    CUdeviceptr address;
    CaptureWorkspaceMemory(const cuda_detail::DriverApi* d, CUcontext c, CUdeviceptr a)
        : driver(d), context(c), address(a) {}
    CaptureWorkspaceMemory(const CaptureWorkspaceMemory&) = delete;
    CaptureWorkspaceMemory& operator=(const CaptureWorkspaceMemory&) = delete;
    ~CaptureWorkspaceMemory() {
      // cuMemFree waits for the graph launches still reading it.
      if (const cuda_detail::ContextScope scope(*driver, context); scope.ok()) driver->cuMemFree(address);
    }
  };
  static Status CaptureWorkspace(State& state, std::shared_ptr<const void>* keep, CUdeviceptr* address) {
    const cuda_detail::ContextScope scope(*state.driver, state.context);
    if (!scope.ok()) return scope.status();
    if (const CUresult r = state.driver->cuMemAlloc(address, kCaptureWorkspaceBytes); r != CUDA_SUCCESS) {
      return state.driver->Error(r, "cuMemAlloc",
                                 "allocating {} bytes of cuBLAS workspace for a captured call on cuda:{}",
                                 kCaptureWorkspaceBytes, state.ordinal);
    }
    try {
      *keep = std::make_shared<const CaptureWorkspaceMemory>(state.driver, state.context, *address);
    } catch (...) {
      state.driver->cuMemFree(*address);
      return MakeError(ErrorCode::kResourceExhausted, "capturing a cuBLAS call on cuda:{}: out of host memory",
                       state.ordinal);
    }
    return Status();
  }
  template <typename Enqueue>
  static Status Call(Stream<cuda>& stream, std::string_view caller, std::initializer_list<DeviceMemoryBase> operands,
                     State& state, cublasPointerMode_t mode, Enqueue&& enqueue) {
    return Call(stream, caller, std::span<const DeviceMemoryBase>(operands.begin(), operands.size()), state, mode,
                std::forward<Enqueue>(enqueue));
  }
  template <typename Enqueue>
  static Status CallOn(cuda_detail::StreamState* native, State& state, cublasPointerMode_t mode, Enqueue& enqueue,
                       CUdeviceptr workspace = 0) {
    if (native->Failed()) [[unlikely]]
      return Status();
    const cuda_detail::ContextScope scope(*state.driver, state.context);
    if (!scope.ok()) [[unlikely]]
      return scope.status();
    const CublasApi& api = *state.api;
    std::lock_guard<std::mutex> lock(state.mutex);
    if (const cublasStatus_t s = api.cublasSetStream_v2(state.handle, native->stream); s != CUBLAS_STATUS_SUCCESS) {
      return api.Error(s, "cublasSetStream", "binding the cuBLAS handle to a stream of cuda:{}", state.ordinal);
    }
    // cublasSetStream went back to cuBLAS's own workspace; a captured call sets its own after it.
    if (workspace != 0) {
      if (const cublasStatus_t s =
              api.cublasSetWorkspace_v2(state.handle, reinterpret_cast<void*>(workspace), kCaptureWorkspaceBytes);
          s != CUBLAS_STATUS_SUCCESS) {
        return api.Error(s, "cublasSetWorkspace", "for a captured call on cuda:{}", state.ordinal);
      }
    }
    if (const cublasStatus_t s = api.cublasSetPointerMode_v2(state.handle, mode); s != CUBLAS_STATUS_SUCCESS) {
      return api.Error(s, "cublasSetPointerMode", "on cuda:{}", state.ordinal);
    }
    if constexpr (std::is_invocable_v<Enqueue&, const CublasApi&, cublasHandle_t, cuda_detail::StreamState&>) {
      return enqueue(api, state.handle, *native);  // it names its own errors
    } else if constexpr (std::is_same_v<decltype(enqueue(api, state.handle)), Status>) {
      return enqueue(api, state.handle);  // it names its own errors
    } else {
      const Named result = enqueue(api, state.handle);
      if (result.status != CUBLAS_STATUS_SUCCESS) [[unlikely]] {
        return api.Error(result.status, result.call, "on a stream of cuda:{}", state.ordinal);
      }
      return Status();
    }
  }
#else
  // Make refuses every executor, so these are never reached; they exist so
  // that the operations compile in a build without cuBLAS's header.
  template <typename T>
  static Status Axpy(Stream<cuda>&, State&, const AxpyArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Dot(Stream<cuda>&, State&, const DotArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Gemv(Stream<cuda>&, State&, const GemvArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Gemm(Stream<cuda>&, State&, const GemmArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status GemmBatched(Stream<cuda>&, State&, std::span<const GemmArgs<T>>) {
    return Missing();
  }

 private:
  static Status Missing() { return NotBuiltIn("cuda", "cuBLAS's header (cublas_v2.h)", "cuda-cublas-dev"); }
#endif
};

}  // namespace streamexecutor::blas_detail
