// DNN on the host backend: oneDNN's CPU engine. A primitive is made (and
// cached) when the operation is enqueued, so an unsupported shape is an error
// of the Then* call; it runs as a host call on the stream, in stream order,
// on the views' host addresses (a host DeviceMemory is host memory).
//
// oneDNN's C API (dnnl.h), not its C++ header: nvcc 13's front end stops with
// an internal error on oneDNN 2.6's dnnl.hpp in C++20 mode, and this header
// must compile in CUDA translation units too. The C API also reports errors
// as values, which suits the host call that runs a primitive.
//
// The engine, its dnnl_stream_t and the cache belong to the executor. Each
// cached primitive keeps its memory objects, argument list and scratchpad, and
// a call only points the memory objects at its buffers, so running one
// allocates nothing; that sharing is why one executor's oneDNN calls run one
// at a time (a lock around each run; enqueueing takes another, for the cache
// only), which costs little since oneDNN spreads every primitive over all
// cores itself.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/canned/dnn/common.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/host/backend.hpp"

#if defined(STREAMEXECUTOR_DNN_WITH_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
#endif

namespace streamexecutor::dnn_detail {

#if defined(STREAMEXECUTOR_DNN_WITH_ONEDNN)
namespace onednn {

inline std::string_view StatusName(dnnl_status_t status) {
  switch (status) {
    case dnnl_success: return "dnnl_success";
    case dnnl_out_of_memory: return "dnnl_out_of_memory";
    case dnnl_invalid_arguments: return "dnnl_invalid_arguments";
    case dnnl_unimplemented: return "dnnl_unimplemented";
    case dnnl_iterator_ends: return "dnnl_iterator_ends";
    case dnnl_runtime_error: return "dnnl_runtime_error";
    case dnnl_not_required: return "dnnl_not_required";
  }
  return "an unknown dnnl_status_t";
}

// Owners of oneDNN's C handles.
template <typename Handle, dnnl_status_t (*Destroy)(Handle)>
struct Deleter {
  void operator()(Handle handle) const { Destroy(handle); }
};
template <typename Handle, dnnl_status_t (*Destroy)(Handle)>
using Owned = std::unique_ptr<std::remove_pointer_t<Handle>, Deleter<Handle, Destroy>>;
using Engine = Owned<dnnl_engine_t, dnnl_engine_destroy>;
using StreamHandle = Owned<dnnl_stream_t, dnnl_stream_destroy>;
using Primitive = Owned<dnnl_primitive_t, dnnl_primitive_destroy>;
using PrimitiveDesc = Owned<dnnl_primitive_desc_t, dnnl_primitive_desc_destroy>;
using Attr = Owned<dnnl_primitive_attr_t, dnnl_primitive_attr_destroy>;
using Memory = Owned<dnnl_memory_t, dnnl_memory_destroy>;

// A failed oneDNN call while a primitive is made: the Then* call's Status.
struct Failure {
  dnnl_status_t status;
  const char* call;
};

inline void Check(dnnl_status_t status, const char* call) {
  if (status != dnnl_success) throw Failure{status, call};
}

inline dnnl_memory_desc_t Desc(std::initializer_list<std::int64_t> dims, dnnl_format_tag_t tag) {
  dnnl_dims_t d{};
  int n = 0;
  for (std::int64_t dim : dims) d[n++] = dim;
  dnnl_memory_desc_t desc;
  Check(dnnl_memory_desc_init_by_tag(&desc, n, d, dnnl_f32, tag), "dnnl_memory_desc_init_by_tag");
  return desc;
}

inline dnnl_memory_desc_t Desc(const dnn::BatchDescriptor& batch) {
  return Desc({batch.count(), batch.feature_map_count(), batch.height(), batch.width()}, dnnl_nchw);
}

}  // namespace onednn
#endif

template <>
struct Adapter<host> {
#if defined(STREAMEXECUTOR_DNN_WITH_ONEDNN)
  // One cached primitive and the memory objects its arguments are bound to.
  struct Prepared {
    onednn::Primitive primitive;
    onednn::Memory src;
    onednn::Memory weights;  // null for primitives without weights
    onednn::Memory dst;
    onednn::Memory scratchpad;  // allocated with the primitive, reused by every run
    std::array<dnnl_exec_arg_t, 4> args{};
    int arg_count = 0;
  };

  struct State {
    onednn::Engine engine;
    onednn::StreamHandle stream;
    std::mutex mutex;        // held while a primitive runs
    std::mutex cache_mutex;  // held while the cache is searched or grows, so enqueueing never waits for a run
    std::map<std::vector<std::int64_t>, Prepared> cache;  // node addresses are stable
  };

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<host>& executor) {
    const DnnPluginId plugin = executor.UsePlugin<PluginKind::kDnn>();
    if (!plugin.is_default() && plugin != host::kOneDnnPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, host::kOneDnnPlugin.name);
    }
    auto state = std::make_unique<State>();
    dnnl_engine_t engine = nullptr;
    dnnl_status_t status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    state->engine.reset(engine);
    dnnl_stream_t stream = nullptr;
    if (status == dnnl_success) status = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
    state->stream.reset(stream);
    if (status != dnnl_success) {
      return MakeError(ErrorCode::kUnavailable, "oneDNN could not open its CPU engine for {}: {}",
                       executor.DeviceLabel(), onednn::StatusName(status));
    }
    return StatusOr<std::unique_ptr<State>>(std::move(state));
  }

  template <dnn::Element T>
  static Status Convolve(Stream<host>& stream, State& state, const ConvolveArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenConvolve");
    } else {
      const dnn::FilterDescriptor& f = a.filter;
      const dnn::ConvolutionDescriptor& c = a.convolution;
      std::vector<std::int64_t> key{0,
                                    a.input.count(),
                                    a.input.feature_map_count(),
                                    a.input.height(),
                                    a.input.width(),
                                    f.output_feature_map_count(),
                                    f.input_filter_height(),
                                    f.input_filter_width(),
                                    c.zero_padding_height(),
                                    c.zero_padding_width(),
                                    c.vertical_filter_stride(),
                                    c.horizontal_filter_stride()};
      return Run(
          stream, state, "ThenConvolve", "convolution_forward", std::move(key),
          [&] {
            const dnnl_memory_desc_t src = onednn::Desc(a.input);
            const dnnl_memory_desc_t weights = onednn::Desc({f.output_feature_map_count(), f.input_feature_map_count(),
                                                             f.input_filter_height(), f.input_filter_width()},
                                                            dnnl_oihw);
            const dnnl_memory_desc_t dst = onednn::Desc(a.output);
            const dnnl_dims_t strides{c.vertical_filter_stride(), c.horizontal_filter_stride()};
            const dnnl_dims_t padding{c.zero_padding_height(), c.zero_padding_width()};
            dnnl_convolution_desc_t desc;
            onednn::Check(dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct,
                                                             &src, &weights, nullptr, &dst, strides, padding, padding),
                          "dnnl_convolution_forward_desc_init");
            return Bind(state, &desc, src, &weights, dst);
          },
          a.input_data, a.filter_data, a.output_data);
    }
  }

  template <dnn::Element T>
  static Status Pool(Stream<host>& stream, State& state, const PoolArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenPoolForward");
    } else {
      const dnn::PoolingDescriptor& p = a.pooling;
      const bool max = p.mode() == dnn::PoolingMode::kMaximum;
      std::vector<std::int64_t> key{1,
                                    max ? 0 : 1,
                                    a.input.count(),
                                    a.input.feature_map_count(),
                                    a.input.height(),
                                    a.input.width(),
                                    p.window_height(),
                                    p.window_width(),
                                    p.vertical_padding(),
                                    p.horizontal_padding(),
                                    p.vertical_stride(),
                                    p.horizontal_stride()};
      return Run(
          stream, state, "ThenPoolForward", "pooling_forward", std::move(key),
          [&] {
            const dnnl_memory_desc_t src = onednn::Desc(a.input);
            const dnnl_memory_desc_t dst = onednn::Desc(a.output);
            const dnnl_dims_t strides{p.vertical_stride(), p.horizontal_stride()};
            const dnnl_dims_t window{p.window_height(), p.window_width()};
            const dnnl_dims_t padding{p.vertical_padding(), p.horizontal_padding()};
            dnnl_pooling_desc_t desc;
            onednn::Check(dnnl_pooling_forward_desc_init(&desc, dnnl_forward_inference,
                                                         max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding,
                                                         &src, &dst, strides, window, padding, padding),
                          "dnnl_pooling_forward_desc_init");
            return Bind(state, &desc, src, nullptr, dst);
          },
          a.input_data, DeviceMemoryBase(), a.output_data);
    }
  }

  template <dnn::Element T>
  static Status Activate(Stream<host>& stream, State& state, const PointwiseArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenActivate");
    } else {
      std::vector<std::int64_t> key{2, static_cast<std::int64_t>(a.mode), a.dimensions.ElementCount()};
      return Run(
          stream, state, "ThenActivate", "eltwise_forward", std::move(key),
          [&] {
            // Elementwise: the shape does not matter, one flat vector is cached.
            const dnnl_memory_desc_t data = onednn::Desc({a.dimensions.ElementCount()}, dnnl_a);
            dnnl_alg_kind_t algorithm = dnnl_eltwise_relu;
            float beta = 0.0f;
            switch (a.mode) {
              case dnn::ActivationMode::kSigmoid: algorithm = dnnl_eltwise_logistic; break;
              case dnn::ActivationMode::kRelu: algorithm = dnnl_eltwise_relu; break;
              case dnn::ActivationMode::kRelu6:
                algorithm = dnnl_eltwise_clip;
                beta = 6.0f;
                break;
              case dnn::ActivationMode::kTanh: algorithm = dnnl_eltwise_tanh; break;
            }
            dnnl_eltwise_desc_t desc;
            onednn::Check(dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, algorithm, &data, 0.0f, beta),
                          "dnnl_eltwise_forward_desc_init");
            return Bind(state, &desc, data, nullptr, data);
          },
          a.input_data, DeviceMemoryBase(), a.output_data);
    }
  }

  template <dnn::Element T>
  static Status Softmax(Stream<host>& stream, State& state, const PointwiseArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenSoftmax");
    } else {
      const std::int64_t rows = a.dimensions.count();
      const std::int64_t columns = a.dimensions.NodesAcrossFeatureMaps();
      std::vector<std::int64_t> key{3, rows, columns};
      return Run(
          stream, state, "ThenSoftmax", "softmax_forward", std::move(key),
          [&] {
            const dnnl_memory_desc_t data = onednn::Desc({rows, columns}, dnnl_ab);
            dnnl_softmax_desc_t desc;
            onednn::Check(dnnl_softmax_forward_desc_init(&desc, dnnl_forward_inference, &data, 1),
                          "dnnl_softmax_forward_desc_init");
            return Bind(state, &desc, data, nullptr, data);
          },
          a.input_data, DeviceMemoryBase(), a.output_data);
    }
  }

  template <dnn::Element T>
  static Status MatMul(Stream<host>& stream, State& state, const MatMulArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenMatMul");
    } else {
      std::vector<std::int64_t> key{4, a.m, a.n, a.k};
      return Run(
          stream, state, "ThenMatMul", "matmul", std::move(key),
          [&] {
            const dnnl_memory_desc_t src = onednn::Desc({a.m, a.k}, dnnl_ab);
            // The weights are stored n x k: read as the k x n operand, transposed.
            const dnnl_memory_desc_t weights = onednn::Desc({a.k, a.n}, dnnl_ba);
            const dnnl_memory_desc_t dst = onednn::Desc({a.m, a.n}, dnnl_ab);
            dnnl_matmul_desc_t desc;
            onednn::Check(dnnl_matmul_desc_init(&desc, &src, &weights, nullptr, &dst), "dnnl_matmul_desc_init");
            return Bind(state, &desc, src, &weights, dst);
          },
          a.input_data, a.weights, a.output_data);
    }
  }

 private:
  static onednn::Memory NewMemory(State& state, const dnnl_memory_desc_t& desc, void* handle) {
    dnnl_memory_t memory = nullptr;
    const dnnl_status_t status = dnnl_memory_create(&memory, &desc, state.engine.get(), handle);
    onednn::Memory owned(memory);
    onednn::Check(status, "dnnl_memory_create");
    return owned;
  }

  // Makes the primitive for `op_desc` and memory objects with no data yet:
  // each run points them at its buffers. The scratchpad is the primitive's
  // own (scratchpad_mode::user) because oneDNN 2.6's default library
  // scratchpad crashed inside oneDNN whenever a primitive ran on a thread
  // other than the process's main thread, which is where every host stream
  // runs it.
  static Prepared Bind(State& state, const void* op_desc, const dnnl_memory_desc_t& src,
                       const dnnl_memory_desc_t* weights, const dnnl_memory_desc_t& dst) {
    dnnl_primitive_attr_t attr_handle = nullptr;
    onednn::Check(dnnl_primitive_attr_create(&attr_handle), "dnnl_primitive_attr_create");
    const onednn::Attr attr(attr_handle);
    onednn::Check(dnnl_primitive_attr_set_scratchpad_mode(attr.get(), dnnl_scratchpad_mode_user),
                  "dnnl_primitive_attr_set_scratchpad_mode");
    dnnl_primitive_desc_t pd_handle = nullptr;
    const dnnl_status_t made = dnnl_primitive_desc_create(&pd_handle, op_desc, attr.get(), state.engine.get(), nullptr);
    const onednn::PrimitiveDesc pd(pd_handle);
    onednn::Check(made, "dnnl_primitive_desc_create");
    Prepared prepared;
    dnnl_primitive_t primitive = nullptr;
    const dnnl_status_t created = dnnl_primitive_create(&primitive, pd.get());
    prepared.primitive.reset(primitive);
    onednn::Check(created, "dnnl_primitive_create");
    prepared.scratchpad =
        NewMemory(state, *dnnl_primitive_desc_query_md(pd.get(), dnnl_query_scratchpad_md, 0), DNNL_MEMORY_ALLOCATE);
    prepared.src = NewMemory(state, src, DNNL_MEMORY_NONE);
    prepared.dst = NewMemory(state, dst, DNNL_MEMORY_NONE);
    prepared.args[0] = {DNNL_ARG_SRC, prepared.src.get()};
    prepared.args[1] = {DNNL_ARG_DST, prepared.dst.get()};
    prepared.args[2] = {DNNL_ARG_SCRATCHPAD, prepared.scratchpad.get()};
    prepared.arg_count = 3;
    if (weights != nullptr) {
      prepared.weights = NewMemory(state, *weights, DNNL_MEMORY_NONE);
      prepared.args[3] = {DNNL_ARG_WEIGHTS, prepared.weights.get()};
      prepared.arg_count = 4;
    }
    return prepared;
  }

  // Finds or makes the primitive for `key` (make() builds it), then enqueues
  // its run on `src`, `weights` (null for none) and `dst`.
  template <typename MakePrepared>
  static Status Run(Stream<host>& stream, State& state, std::string_view caller, std::string_view primitive,
                    std::vector<std::int64_t> key, MakePrepared&& make, const DeviceMemoryBase& src,
                    const DeviceMemoryBase& weights, const DeviceMemoryBase& dst) {
    const Prepared* prepared = nullptr;
    try {
      std::lock_guard<std::mutex> lock(state.cache_mutex);
      auto found = state.cache.find(key);
      if (found == state.cache.end()) found = state.cache.emplace(std::move(key), make()).first;
      prepared = &found->second;
    } catch (const onednn::Failure& failure) {
      return MakeError(failure.status == dnnl_unimplemented   ? ErrorCode::kUnimplemented
                       : failure.status == dnnl_out_of_memory ? ErrorCode::kResourceExhausted
                                                              : ErrorCode::kInternal,
                       "{} on {}: oneDNN could not create a {} primitive: {} returned {}", caller,
                       stream.parent()->DeviceLabel(), primitive, failure.call, onednn::StatusName(failure.status));
    } catch (const std::bad_alloc&) {
      return MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of memory creating a oneDNN {} primitive", caller,
                       stream.parent()->DeviceLabel(), primitive);
    }
    // While the stream captures, the call is recorded (the operands checked at each submission).
    const DeviceMemoryBase operands[] = {src, weights.IsNull() ? src : weights, dst};
    return stream.EnqueueCanned(caller, operands, op::HostCall<RunPrepared>{RunPrepared {
                                  &state,
                                  prepared,
                                  host::Address(src),
                                  weights.IsNull() ? nullptr : host::Address(weights),
                                  host::Address(dst),
                                  caller
                                }});
  }

  // The host call: small enough for the stream's command slot (no allocation).
  struct RunPrepared {
    State* state;
    const Prepared* prepared;
    void* src;
    void* weights;
    void* dst;
    std::string_view caller;

    void operator()() const {
      std::lock_guard<std::mutex> lock(state->mutex);
      dnnl_status_t status = dnnl_memory_set_data_handle(prepared->src.get(), src);
      if (status == dnnl_success && weights != nullptr) {
        status = dnnl_memory_set_data_handle(prepared->weights.get(), weights);
      }
      if (status == dnnl_success) status = dnnl_memory_set_data_handle(prepared->dst.get(), dst);
      if (status == dnnl_success) {
        status = dnnl_primitive_execute(prepared->primitive.get(), state->stream.get(), prepared->arg_count,
                                        prepared->args.data());
      }
      if (status == dnnl_success) status = dnnl_stream_wait(state->stream.get());
      if (status != dnnl_success) {
        // The stream's callback runner turns this into the stream's error.
        throw std::runtime_error(std::string(caller) + ": oneDNN failed: " + std::string(onednn::StatusName(status)));
      }
    }
  };

  static Status NoDouble(Stream<host>& stream, std::string_view caller) {
    return MakeError(ErrorCode::kUnimplemented,
                     "{} on {}: the oneDNN plugin runs float only (oneDNN's CPU engine has no f64 primitives)", caller,
                     stream.parent()->DeviceLabel());
  }
#else
  // Make refuses every executor, so the operations are never reached; they
  // exist so that <streamexecutor/dnn.hpp> compiles in a build without oneDNN.
  struct State {};

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<host>& executor) {
    const DnnPluginId plugin = executor.UsePlugin<PluginKind::kDnn>();
    if (!plugin.is_default() && plugin != host::kOneDnnPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, host::kOneDnnPlugin.name);
    }
    return NotBuiltIn(executor.DeviceLabel(), "oneDNN", "libdnnl-dev");
  }
  template <typename T>
  static Status Convolve(Stream<host>&, State&, const ConvolveArgs&) {
    return Missing();
  }
  template <typename T>
  static Status Pool(Stream<host>&, State&, const PoolArgs&) {
    return Missing();
  }
  template <typename T>
  static Status Activate(Stream<host>&, State&, const PointwiseArgs&) {
    return Missing();
  }
  template <typename T>
  static Status Softmax(Stream<host>&, State&, const PointwiseArgs&) {
    return Missing();
  }
  template <typename T>
  static Status MatMul(Stream<host>&, State&, const MatMulArgs&) {
    return Missing();
  }

 private:
  static Status Missing() { return NotBuiltIn("host", "oneDNN", "libdnnl-dev"); }
#endif
};

}  // namespace streamexecutor::dnn_detail
