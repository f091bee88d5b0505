// BLAS on the OpenCL backend: CLBlast, enqueued on the stream's own
// cl_command_queue, so it is ordered with the stream's copies, launches and
// waits (a wait on another backend is a gate on that queue). Like the
// backend's launches, a CLBlast call takes the slow path when the stream
// failed (skipped) or when a host callback is pending (held behind it and
// enqueued by the callback thread once it ran: opencl/held.hpp).
#pragma once

#include <array>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/canned/blas/common.hpp"
#include "streamexecutor/canned/detail/adapter.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/opencl/backend.hpp"
#include "streamexecutor/opencl/library_call.hpp"

#if defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST)
#include "streamexecutor/canned/detail/clblast.hpp"
#endif

namespace streamexecutor::blas_detail {

#if defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST)
namespace clblast_detail {

inline Status Check(clblast::StatusCode code, std::string_view call, const opencl_detail::StreamState& stream) {
  if (code == clblast::StatusCode::kSuccess) [[likely]]
    return Status();
  if (code == clblast::StatusCode::kNoHalfPrecision) {
    return MakeError(ErrorCode::kUnimplemented,
                     "{} failed with kNoHalfPrecision ({}) on {}: the device does not support half precision (it "
                     "lacks the cl_khr_fp16 extension); use float memory on this device",
                     call, static_cast<int>(code), stream.executor->label);
  }
  return MakeError(canned_detail::ClBlastErrorCode(code), "{} failed with {} ({}) on {}", call,
                   canned_detail::ClBlastStatusName(code), static_cast<int>(code), stream.executor->label);
}

constexpr clblast::Transpose Op(blas::Transpose transpose) {
  switch (transpose) {
    case blas::Transpose::kNoTranspose: return clblast::Transpose::kNo;
    case blas::Transpose::kTranspose: return clblast::Transpose::kYes;
    case blas::Transpose::kConjugateTranspose: return clblast::Transpose::kConjugate;
  }
  return clblast::Transpose::kNo;
}

using canned_detail::Offset;

// The element type CLBlast's templates take: cl_half (the bits) for Half.
template <blas::GemmElement T>
using Element = std::conditional_t<std::is_same_v<T, Half>, cl_half, T>;

// alpha or beta as CLBlast takes it: rounded to half for Half.
template <blas::GemmElement T>
Element<T> Scalar(blas::ScalarFor<T> value) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half(value).bits();
  } else {
    return value;
  }
}

}  // namespace clblast_detail
#endif

template <>
struct Adapter<opencl> {
  // CLBlast caches its compiled kernels per context and device itself; the
  // state records the plugin chosen, checked once per executor.
  struct State {
    BlasPluginId plugin;
  };

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<opencl>& executor) {
    const BlasPluginId plugin = executor.UsePlugin<PluginKind::kBlas>();
    if (!plugin.is_default() && plugin != opencl::kClBlastPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, opencl::kClBlastPlugin.name);
    }
#if defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST)
    return std::make_unique<State>(State{plugin});
#else
    return NotBuiltIn(executor.DeviceLabel(), "CLBlast", "libclblast-dev");
#endif
  }

#if defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST)
  template <blas::Scalar T>
  static Status Axpy(Stream<opencl>& stream, State&, const AxpyArgs<T>& args) {
    const std::array<DeviceMemoryBase, 2> buffers{args.x, args.y};
    return canned_detail::EnqueueLibraryCall(stream, "ThenBlasAxpy", buffers, [args](opencl_detail::StreamState& s) {
      using clblast_detail::Offset;
      return clblast_detail::Check(
          clblast::Axpy<T>(Size(args.n), args.alpha, Buffer(args.x), Offset<T>(args.x), Size(args.incx), Buffer(args.y),
                           Offset<T>(args.y), Size(args.incy), &s.queue, nullptr),
          "clblast::Axpy", s);
    });
  }

  template <blas::Scalar T>
  static Status Dot(Stream<opencl>& stream, State&, const DotArgs<T>& args) {
    const std::array<DeviceMemoryBase, 3> buffers{args.x, args.y, args.result};
    return canned_detail::EnqueueLibraryCall(stream, "ThenBlasDot", buffers, [args](opencl_detail::StreamState& s) {
      using clblast_detail::Offset;
      return clblast_detail::Check(
          clblast::Dot<T>(Size(args.n), Buffer(args.result), Offset<T>(args.result), Buffer(args.x), Offset<T>(args.x),
                          Size(args.incx), Buffer(args.y), Offset<T>(args.y), Size(args.incy), &s.queue, nullptr),
          "clblast::Dot", s);
    });
  }

  template <blas::Scalar T>
  static Status Gemv(Stream<opencl>& stream, State&, const GemvArgs<T>& args) {
    const std::array<DeviceMemoryBase, 3> buffers{args.a, args.x, args.y};
    return canned_detail::EnqueueLibraryCall(stream, "ThenBlasGemv", buffers, [args](opencl_detail::StreamState& s) {
      using clblast_detail::Offset;
      return clblast_detail::Check(
          clblast::Gemv<T>(clblast::Layout::kColMajor, clblast_detail::Op(args.trans), Size(args.m), Size(args.n),
                           args.alpha, Buffer(args.a), Offset<T>(args.a), Size(args.lda), Buffer(args.x),
                           Offset<T>(args.x), Size(args.incx), args.beta, Buffer(args.y), Offset<T>(args.y),
                           Size(args.incy), &s.queue, nullptr),
          "clblast::Gemv", s);
    });
  }

  // Half memory is CLBlast's half gemm (cl_half, computed in half on the
  // device); a device without cl_khr_fp16 makes it UNIMPLEMENTED, naming the
  // device and the extension.
  template <blas::GemmElement T>
  static Status Gemm(Stream<opencl>& stream, State&, const GemmArgs<T>& args) {
    const std::array<DeviceMemoryBase, 3> buffers{args.a, args.b, args.c};
    return canned_detail::EnqueueLibraryCall(stream, "ThenBlasGemm", buffers,
                                             [args](opencl_detail::StreamState& s) { return RunGemm(s, args); });
  }

  // CLBlast's batched gemm takes one buffer per operand (entries at offsets
  // into it), so a batch of slices of one allocation per operand is one call;
  // any other batch is one gemm per entry, enqueued in order.
  template <blas::GemmElement T>
  static Status GemmBatched(Stream<opencl>& stream, State&, std::span<const GemmArgs<T>> batch) {
    std::vector<DeviceMemoryBase> buffers;
    buffers.reserve(batch.size() * 3);
    for (const GemmArgs<T>& args : batch) {
      buffers.insert(buffers.end(), {args.a, args.b, args.c});
    }
    return canned_detail::EnqueueLibraryCall(stream, "ThenBlasGemmBatched", buffers,
                                             [entries = std::vector<GemmArgs<T>>(batch.begin(), batch.end())](
                                                 opencl_detail::StreamState& s) { return RunBatch<T>(s, entries); });
  }

 private:
  static std::size_t Size(int value) { return static_cast<std::size_t>(value); }
  static cl_mem Buffer(const DeviceMemoryBase& memory) { return opencl_detail::Buffer(memory); }

  template <blas::GemmElement T>
  static Status RunGemm(opencl_detail::StreamState& s, const GemmArgs<T>& args) {
    using clblast_detail::Offset;
    using E = clblast_detail::Element<T>;
    if (args.k == 0) return ScaleC(s, args);
    return clblast_detail::Check(
        clblast::Gemm<E>(clblast::Layout::kColMajor, clblast_detail::Op(args.transa), clblast_detail::Op(args.transb),
                         Size(args.m), Size(args.n), Size(args.k), clblast_detail::Scalar<T>(args.alpha),
                         Buffer(args.a), Offset<T>(args.a), Size(args.lda), Buffer(args.b), Offset<T>(args.b),
                         Size(args.ldb), clblast_detail::Scalar<T>(args.beta), Buffer(args.c), Offset<T>(args.c),
                         Size(args.ldc), &s.queue, nullptr),
        "clblast::Gemm", s);
  }

  // With k = 0, BLAS defines C <- beta * C, which OpenBLAS and cuBLAS do and
  // CLBlast's gemm refuses (kInvalidDimension): CLBlast's scal, per column
  // unless the columns are contiguous.
  template <blas::GemmElement T>
  static Status ScaleC(opencl_detail::StreamState& s, const GemmArgs<T>& args) {
    if (args.beta == blas::ScalarFor<T>(1)) return Status();
    using clblast_detail::Offset;
    using E = clblast_detail::Element<T>;
    const bool contiguous = args.ldc == args.m;
    const int columns = contiguous ? 1 : args.n;
    const std::size_t length = contiguous ? Size(args.m) * Size(args.n) : Size(args.m);
    for (int j = 0; j < columns; ++j) {
      STREAMEXECUTOR_RETURN_IF_ERROR(
          clblast_detail::Check(clblast::Scal<E>(length, clblast_detail::Scalar<T>(args.beta), Buffer(args.c),
                                                 Offset<T>(args.c) + Size(j) * Size(args.ldc), 1, &s.queue, nullptr),
                                "clblast::Scal", s));
    }
    return Status();
  }

  template <blas::GemmElement T>
  static Status RunBatch(opencl_detail::StreamState& s, const std::vector<GemmArgs<T>>& entries) {
    const GemmArgs<T>& first = entries.front();
    bool shared = first.k > 0;
    for (const GemmArgs<T>& args : entries) {
      shared = shared && Buffer(args.a) == Buffer(first.a) && Buffer(args.b) == Buffer(first.b) &&
               Buffer(args.c) == Buffer(first.c);
    }
    if (!shared) {
      for (const GemmArgs<T>& args : entries) STREAMEXECUTOR_RETURN_IF_ERROR(RunGemm(s, args));
      return Status();
    }
    using clblast_detail::Offset;
    using E = clblast_detail::Element<T>;
    const std::size_t count = entries.size();
    std::vector<E> alphas(count, clblast_detail::Scalar<T>(first.alpha)),
        betas(count, clblast_detail::Scalar<T>(first.beta));
    std::vector<std::size_t> a_offsets(count), b_offsets(count), c_offsets(count);
    for (std::size_t i = 0; i < count; ++i) {
      a_offsets[i] = Offset<T>(entries[i].a);
      b_offsets[i] = Offset<T>(entries[i].b);
      c_offsets[i] = Offset<T>(entries[i].c);
    }
    return clblast_detail::Check(
        clblast::GemmBatched<E>(clblast::Layout::kColMajor, clblast_detail::Op(first.transa),
                                clblast_detail::Op(first.transb), Size(first.m), Size(first.n), Size(first.k),
                                alphas.data(), Buffer(first.a), a_offsets.data(), Size(first.lda), Buffer(first.b),
                                b_offsets.data(), Size(first.ldb), betas.data(), Buffer(first.c), c_offsets.data(),
                                Size(first.ldc), count, &s.queue, nullptr),
        "clblast::GemmBatched", s);
  }
#else
  // Make refuses every executor, so these are never reached; they exist so
  // that the operations compile in a build without CLBlast.
  template <typename T>
  static Status Axpy(Stream<opencl>&, State&, const AxpyArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Dot(Stream<opencl>&, State&, const DotArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Gemv(Stream<opencl>&, State&, const GemvArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status Gemm(Stream<opencl>&, State&, const GemmArgs<T>&) {
    return Missing();
  }
  template <typename T>
  static Status GemmBatched(Stream<opencl>&, State&, std::span<const GemmArgs<T>>) {
    return Missing();
  }

 private:
  static Status Missing() { return NotBuiltIn("opencl", "CLBlast", "libclblast-dev"); }
#endif
};

}  // namespace streamexecutor::blas_detail
