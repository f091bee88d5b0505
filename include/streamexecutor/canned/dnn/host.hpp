// DNN on the host backend: oneDNN's CPU engine. A primitive is made (and
// cached) when the operation is enqueued, so an unsupported shape is an error
// of the Then* call; it runs as a host call on the stream, in stream order,
// on the views' host addresses (a host DeviceMemory is host memory).
//
// The engine, its dnnl::stream and the cache belong to the executor. Each
// cached primitive keeps its dnnl::memory objects and argument map, and a call
// only points them at its buffers, so running one allocates nothing; that
// sharing is why one executor's oneDNN calls run one at a time (a lock around
// each run; enqueueing takes another, for the cache only), which costs little
// since oneDNN spreads every primitive over all cores itself.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "streamexecutor/canned/dnn/common.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/host/backend.hpp"

// nvcc 13's front end stops with an internal error (lexical.c, in
// find_allocated_name_reference) on oneDNN 2.6's dnnl.hpp in C++20 mode, so a
// CUDA translation unit gets the plugin without oneDNN: its host DNN calls are
// UNAVAILABLE and say so (make them from a unit the host compiler compiles).
#if defined(STREAMEXECUTOR_DNN_WITH_ONEDNN) && !defined(__CUDACC__)
#define STREAMEXECUTOR_DNN_HOST_ONEDNN 1
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace streamexecutor::dnn_detail {

template <>
struct Library<host> {
#if defined(STREAMEXECUTOR_DNN_HOST_ONEDNN)
  // One cached primitive and the memory objects its arguments are bound to.
  struct Prepared {
    dnnl::primitive primitive;
    dnnl::memory src;
    dnnl::memory weights;  // empty for primitives without weights
    dnnl::memory dst;
    dnnl::memory scratchpad;  // allocated with the primitive, reused by every run
    std::unordered_map<int, dnnl::memory> args;
  };

  struct State {
    dnnl::engine engine;
    dnnl::stream stream;
    std::mutex mutex;        // held while a primitive runs
    std::mutex cache_mutex;  // held while the cache is searched or grows, so enqueueing never waits for a run
    std::map<std::vector<std::int64_t>, Prepared> cache;  // node addresses are stable
  };

  static StatusOr<std::unique_ptr<State>> Make(StreamExecutor<host>& executor) {
    const DnnPluginId plugin = executor.UsePlugin<PluginKind::kDnn>();
    if (!plugin.is_default() && plugin != host::kOneDnnPlugin) {
      return UnknownPlugin(executor.DeviceLabel(), plugin, host::kOneDnnPlugin.name);
    }
    try {
      auto state = std::make_unique<State>();
      state->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
      state->stream = dnnl::stream(state->engine);
      return StatusOr<std::unique_ptr<State>>(std::move(state));
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kUnavailable, "oneDNN could not open its CPU engine for {}: {}",
                       executor.DeviceLabel(), e.what());
    }
  }

  template <dnn::Element T>
  static Status Convolve(Stream<host>& stream, State& state, const ConvolveArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenConvolve");
    } else {
      const dnn::FilterDescriptor& f = a.filter;
      const dnn::ConvolutionDescriptor& c = a.convolution;
      const dnnl::memory::dims padding{c.zero_padding_height(), c.zero_padding_width()};
      std::vector<std::int64_t> key{0, a.input.count(), a.input.feature_map_count(), a.input.height(),
                                    a.input.width(), f.output_feature_map_count(), f.input_filter_height(),
                                    f.input_filter_width(), padding[0], padding[1], c.vertical_filter_stride(),
                                    c.horizontal_filter_stride()};
      return Run(stream, state, "ThenConvolve", "convolution_forward", std::move(key), [&] {
        const auto src = Desc(a.input);
        const auto weights = dnnl::memory::desc({f.output_feature_map_count(), f.input_feature_map_count(),
                                                 f.input_filter_height(), f.input_filter_width()},
                                                dnnl::memory::data_type::f32, dnnl::memory::format_tag::oihw);
        const auto dst = Desc(a.output);
        const dnnl::convolution_forward::desc desc(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, weights, dst,
            {c.vertical_filter_stride(), c.horizontal_filter_stride()}, padding, padding);
        const dnnl::convolution_forward::primitive_desc pd(desc, UserScratchpad(), state.engine);
        return Bind(state, dnnl::convolution_forward(pd), pd.scratchpad_desc(),
                    src, weights, dst);
      }, a.input_data, a.filter_data, a.output_data);
    }
  }

  template <dnn::Element T>
  static Status Pool(Stream<host>& stream, State& state, const PoolArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenPoolForward");
    } else {
      const dnn::PoolingDescriptor& p = a.pooling;
      const bool max = p.mode() == dnn::PoolingMode::kMaximum;
      const dnnl::memory::dims padding{p.vertical_padding(), p.horizontal_padding()};
      std::vector<std::int64_t> key{1, max ? 0 : 1, a.input.count(), a.input.feature_map_count(), a.input.height(),
                                    a.input.width(), p.window_height(), p.window_width(), padding[0], padding[1],
                                    p.vertical_stride(), p.horizontal_stride()};
      return Run(stream, state, "ThenPoolForward", "pooling_forward", std::move(key), [&] {
        const auto src = Desc(a.input);
        const auto dst = Desc(a.output);
        const dnnl::pooling_forward::desc desc(
            dnnl::prop_kind::forward_inference,
            max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding, src, dst,
            {p.vertical_stride(), p.horizontal_stride()}, {p.window_height(), p.window_width()}, padding, padding);
        const dnnl::pooling_forward::primitive_desc pd(desc, UserScratchpad(), state.engine);
        return Bind(state, dnnl::pooling_forward(pd), pd.scratchpad_desc(), src, {},
                    dst);
      }, a.input_data, DeviceMemoryBase(), a.output_data);
    }
  }

  template <dnn::Element T>
  static Status Activate(Stream<host>& stream, State& state, const PointwiseArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenActivate");
    } else {
      std::vector<std::int64_t> key{2, static_cast<std::int64_t>(a.mode), a.dimensions.ElementCount()};
      return Run(stream, state, "ThenActivate", "eltwise_forward", std::move(key), [&] {
        // Elementwise: the shape does not matter, one flat vector is cached.
        const dnnl::memory::desc data({a.dimensions.ElementCount()}, dnnl::memory::data_type::f32,
                                      dnnl::memory::format_tag::a);
        dnnl::algorithm algorithm = dnnl::algorithm::eltwise_relu;
        float beta = 0.0f;
        switch (a.mode) {
          case dnn::ActivationMode::kSigmoid: algorithm = dnnl::algorithm::eltwise_logistic; break;
          case dnn::ActivationMode::kRelu: algorithm = dnnl::algorithm::eltwise_relu; break;
          case dnn::ActivationMode::kRelu6: algorithm = dnnl::algorithm::eltwise_clip; beta = 6.0f; break;
          case dnn::ActivationMode::kTanh: algorithm = dnnl::algorithm::eltwise_tanh; break;
        }
        const dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, data, 0.0f, beta);
        const dnnl::eltwise_forward::primitive_desc pd(desc, UserScratchpad(), state.engine);
        return Bind(state, dnnl::eltwise_forward(pd), pd.scratchpad_desc(), data, {},
                    data);
      }, a.input_data, DeviceMemoryBase(), a.output_data);
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
      return Run(stream, state, "ThenSoftmax", "softmax_forward", std::move(key), [&] {
        const dnnl::memory::desc data({rows, columns}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
        const dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, data, 1);
        const dnnl::softmax_forward::primitive_desc pd(desc, UserScratchpad(), state.engine);
        return Bind(state, dnnl::softmax_forward(pd), pd.scratchpad_desc(), data, {},
                    data);
      }, a.input_data, DeviceMemoryBase(), a.output_data);
    }
  }

  template <dnn::Element T>
  static Status MatMul(Stream<host>& stream, State& state, const MatMulArgs& a) {
    if constexpr (!std::is_same_v<T, float>) {
      return NoDouble(stream, "ThenMatMul");
    } else {
      std::vector<std::int64_t> key{4, a.m, a.n, a.k};
      return Run(stream, state, "ThenMatMul", "matmul", std::move(key), [&] {
        using tag = dnnl::memory::format_tag;
        const dnnl::memory::desc src({a.m, a.k}, dnnl::memory::data_type::f32, tag::ab);
        // The weights are stored n x k: read as the k x n operand, transposed.
        const dnnl::memory::desc weights({a.k, a.n}, dnnl::memory::data_type::f32, tag::ba);
        const dnnl::memory::desc dst({a.m, a.n}, dnnl::memory::data_type::f32, tag::ab);
        const dnnl::matmul::desc desc(src, weights, dst);
        const dnnl::matmul::primitive_desc pd(desc, UserScratchpad(), state.engine);
        return Bind(state, dnnl::matmul(pd), pd.scratchpad_desc(), src, weights, dst);
      }, a.input_data, a.weights, a.output_data);
    }
  }

 private:
  static dnnl::memory::desc Desc(const dnn::BatchDescriptor& batch) {
    return dnnl::memory::desc({batch.count(), batch.feature_map_count(), batch.height(), batch.width()},
                              dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw);
  }

  // oneDNN's default (library) scratchpad crashed our tests inside oneDNN 2.6
  // whenever a primitive ran on a thread other than the process's main
  // thread, which is where every host stream runs it; a scratchpad of the
  // primitive's own is made once with it instead.
  static dnnl::primitive_attr UserScratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }

  // Memory objects with no data yet: each run points them at its buffers.
  static Prepared Bind(State& state, dnnl::primitive primitive, const dnnl::memory::desc& scratchpad,
                       const dnnl::memory::desc& src, const dnnl::memory::desc& weights,
                       const dnnl::memory::desc& dst) {
    Prepared prepared;
    prepared.primitive = std::move(primitive);
    prepared.scratchpad = dnnl::memory(scratchpad, state.engine);
    prepared.src = dnnl::memory(src, state.engine, DNNL_MEMORY_NONE);
    prepared.dst = dnnl::memory(dst, state.engine, DNNL_MEMORY_NONE);
    prepared.args = {{DNNL_ARG_SRC, prepared.src}, {DNNL_ARG_DST, prepared.dst},
                     {DNNL_ARG_SCRATCHPAD, prepared.scratchpad}};
    if (!weights.is_zero()) {
      prepared.weights = dnnl::memory(weights, state.engine, DNNL_MEMORY_NONE);
      prepared.args.emplace(DNNL_ARG_WEIGHTS, prepared.weights);
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
    } catch (const dnnl::error& e) {
      return MakeError(e.status == dnnl_unimplemented ? ErrorCode::kUnimplemented : ErrorCode::kInternal,
                       "{} on {}: oneDNN could not create a {} primitive: {}", caller,
                       stream.parent()->DeviceLabel(), primitive, e.what());
    } catch (const std::bad_alloc&) {
      return MakeError(ErrorCode::kResourceExhausted, "{} on {}: out of memory creating a oneDNN {} primitive", caller,
                       stream.parent()->DeviceLabel(), primitive);
    }
    return host::Submit(stream.native_handle(),
                        op::HostCall<RunPrepared>{RunPrepared{&state, prepared, host::Address(src),
                                                              weights.IsNull() ? nullptr : host::Address(weights),
                                                              host::Address(dst), caller}});
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
      try {
        prepared->src.set_data_handle(src);
        if (weights != nullptr) prepared->weights.set_data_handle(weights);
        prepared->dst.set_data_handle(dst);
        prepared->primitive.execute(state->stream, prepared->args);
        state->stream.wait();
      } catch (const dnnl::error& e) {
        // The stream's callback runner turns this into the stream's error.
        throw std::runtime_error(std::string(caller) + ": oneDNN failed: " + e.what());
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
    return Missing(executor.DeviceLabel());
  }
  template <typename T>
  static Status Convolve(Stream<host>&, State&, const ConvolveArgs&) { return Missing(); }
  template <typename T>
  static Status Pool(Stream<host>&, State&, const PoolArgs&) { return Missing(); }
  template <typename T>
  static Status Activate(Stream<host>&, State&, const PointwiseArgs&) { return Missing(); }
  template <typename T>
  static Status Softmax(Stream<host>&, State&, const PointwiseArgs&) { return Missing(); }
  template <typename T>
  static Status MatMul(Stream<host>&, State&, const MatMulArgs&) { return Missing(); }

 private:
  static Status Missing(std::string_view device = "host") {
#if defined(STREAMEXECUTOR_DNN_WITH_ONEDNN)
    return MakeError(ErrorCode::kUnavailable,
                     "DNN on {}: oneDNN's C++ header does not compile under nvcc (its front end fails on dnnl.hpp in "
                     "C++20 mode); make host DNN calls from a translation unit compiled by the host compiler",
                     device);
#else
    return NotBuiltIn(device, "oneDNN", "libdnnl-dev");
#endif
  }
#endif
};

}  // namespace streamexecutor::dnn_detail
