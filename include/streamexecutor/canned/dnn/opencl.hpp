// DNN on the OpenCL backend: CLBlast, enqueued on the stream's own
// cl_command_queue. CLBlast has convolution (Convgemm: im2col then a batched
// gemm) and matrix products (Gemm), so those two run here. Pooling,
// activation and softmax are UNIMPLEMENTED: no maintained OpenCL DNN library
// runs on a generic device such as PoCL (MIOpen needs AMD's ROCm, oneDNN's
// OpenCL engine takes Intel GPUs only, clDNN was folded into oneDNN), and
// this library does not write numerics of its own.
//
// Like the backend's launches, a CLBlast call takes the slow path when the
// stream failed (skipped) or a host callback is pending (held behind it and
// enqueued by the callback thread once it ran: opencl/held.hpp).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/canned/detail/adapter.hpp"
#include "streamexecutor/canned/dnn/common.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/opencl/backend.hpp"
#include "streamexecutor/opencl/library_call.hpp"

#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
#include "streamexecutor/canned/detail/clblast.hpp"
#endif

namespace streamexecutor::dnn_detail {

inline Status NoOpenCLLibrary(std::string_view caller, std::string_view device, std::string_view operation) {
  return MakeError(ErrorCode::kUnimplemented,
                   "{} on {}: no OpenCL DNN library offers {} on this device (CLBlast has only convolution and "
                   "matmul; MIOpen needs AMD ROCm and oneDNN's OpenCL engine Intel GPUs); use the host or CUDA "
                   "backend for it",
                   caller, device, operation);
}

#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
namespace clblast_dnn {

inline Status Check(clblast::StatusCode code, std::string_view caller, std::string_view call,
                    const opencl_detail::StreamState& stream) {
  if (code == clblast::StatusCode::kSuccess) [[likely]]
    return Status();
  return MakeError(canned_detail::ClBlastErrorCode(code), "{} on {}: {} failed with CLBlast status {} ({}){}", caller,
                   stream.executor->label, call, canned_detail::ClBlastStatusName(code), static_cast<int>(code),
                   code == clblast::StatusCode::kNoDoublePrecision ? " (the device has no double precision)" : "");
}

using canned_detail::Offset;
inline std::size_t Size(std::int64_t value) { return static_cast<std::size_t>(value); }

}  // namespace clblast_dnn
#endif

template <>
struct Adapter<opencl> {
  // CLBlast caches its compiled kernels per context and device itself; the
  // state records that this executor's plugin choice was checked.
  struct State {
    DnnPluginId plugin;
  };

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<opencl>& executor) {
    const DnnPluginId plugin = executor.UsePlugin<PluginKind::kDnn>();
    if (!plugin.is_default() && plugin != opencl::kClBlastDnnPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, opencl::kClBlastDnnPlugin.name);
    }
#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
    return std::make_unique<State>(State{plugin});
#else
    return NotBuiltIn(executor.DeviceLabel(), "CLBlast", "libclblast-dev");
#endif
  }

  template <dnn::Element T>
  static Status Convolve(Stream<opencl>& stream, State&, [[maybe_unused]] const ConvolveArgs& a) {
#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
    const std::array<DeviceMemoryBase, 3> buffers{a.input_data, a.filter_data, a.output_data};
    return canned_detail::EnqueueLibraryCall(stream, "ThenConvolve", buffers, [a](opencl_detail::StreamState& s) {
      using clblast_dnn::Offset;
      using clblast_dnn::Size;
      const dnn::FilterDescriptor& f = a.filter;
      const dnn::ConvolutionDescriptor& c = a.convolution;
      cl_command_queue queue = s.queue;
      return clblast_dnn::Check(
          clblast::Convgemm<T>(
              clblast::KernelMode::kCrossCorrelation, Size(a.input.feature_map_count()), Size(a.input.height()),
              Size(a.input.width()), Size(f.input_filter_height()), Size(f.input_filter_width()),
              Size(c.zero_padding_height()), Size(c.zero_padding_width()), Size(c.vertical_filter_stride()),
              Size(c.horizontal_filter_stride()), 1, 1, Size(f.output_feature_map_count()), Size(a.input.count()),
              Buffer(a.input_data), Offset<T>(a.input_data), Buffer(a.filter_data), Offset<T>(a.filter_data),
              Buffer(a.output_data), Offset<T>(a.output_data), &queue, nullptr),
          "ThenConvolve", "clblast::Convgemm", s);
    });
#else
    return Missing(stream);
#endif
  }

  template <dnn::Element T>
  static Status MatMul(Stream<opencl>& stream, State&, [[maybe_unused]] const MatMulArgs& a) {
#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
    const std::array<DeviceMemoryBase, 3> buffers{a.input_data, a.weights, a.output_data};
    return canned_detail::EnqueueLibraryCall(stream, "ThenMatMul", buffers, [a](opencl_detail::StreamState& s) {
      using clblast_dnn::Offset;
      using clblast_dnn::Size;
      cl_command_queue queue = s.queue;
      // Row-major output (m x n) = input (m x k) times the n x k weights, transposed.
      return clblast_dnn::Check(
          clblast::Gemm<T>(clblast::Layout::kRowMajor, clblast::Transpose::kNo, clblast::Transpose::kYes, Size(a.m),
                           Size(a.n), Size(a.k), T(1), Buffer(a.input_data), Offset<T>(a.input_data), Size(a.k),
                           Buffer(a.weights), Offset<T>(a.weights), Size(a.k), T(0), Buffer(a.output_data),
                           Offset<T>(a.output_data), Size(a.n), &queue, nullptr),
          "ThenMatMul", "clblast::Gemm", s);
    });
#else
    return Missing(stream);
#endif
  }

  template <dnn::Element T>
  static Status Pool(Stream<opencl>& stream, State&, const PoolArgs&) {
    return NoOpenCLLibrary("ThenPoolForward", stream.parent()->DeviceLabel(), "pooling");
  }
  template <dnn::Element T>
  static Status Activate(Stream<opencl>& stream, State&, const PointwiseArgs&) {
    return NoOpenCLLibrary("ThenActivate", stream.parent()->DeviceLabel(), "activation functions");
  }
  template <dnn::Element T>
  static Status Softmax(Stream<opencl>& stream, State&, const PointwiseArgs&) {
    return NoOpenCLLibrary("ThenSoftmax", stream.parent()->DeviceLabel(), "softmax");
  }

 private:
  static cl_mem Buffer(const DeviceMemoryBase& memory) { return opencl_detail::Buffer(memory); }
#if !defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
  // Make refuses every executor, so this is never reached.
  static Status Missing(Stream<opencl>& stream) {
    return NotBuiltIn(stream.parent()->DeviceLabel(), "CLBlast", "libclblast-dev");
  }
#endif
};

}  // namespace streamexecutor::dnn_detail
