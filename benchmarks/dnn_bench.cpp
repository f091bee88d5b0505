// DNN: forward convolution through the host backend's oneDNN plugin against
// oneDNN called directly, on the same shapes and the same NCHW/OIHW memory.
//   dnn_conv/<shape>/ours    ThenConvolve + BlockHostUntilDone on a host stream
//   dnn_conv/<shape>/onednn  a convolution_forward primitive made once, then
//                            execute + wait on the calling thread
// Throughput ratio: onednn time / our time (higher is better for us).
#include <streamexecutor/dnn.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace se = streamexecutor;
namespace dnn = se::dnn;
using bench::Name;

struct Shape {
  std::string name;
  dnn::BatchDescriptor input;
  dnn::FilterDescriptor filter;
  std::int64_t padding;
  std::int64_t stride;

  dnn::ConvolutionDescriptor Convolution() const {
    dnn::ConvolutionDescriptor c;
    c.set_zero_padding_height(padding).set_zero_padding_width(padding);
    c.set_vertical_filter_stride(stride).set_horizontal_filter_stride(stride);
    return c;
  }
  dnn::BatchDescriptor Output() const {
    const auto extent = [&](std::int64_t in, std::int64_t window) { return (in + 2 * padding - window) / stride + 1; };
    return dnn::BatchDescriptor(input.count(), filter.output_feature_map_count(),
                                extent(input.height(), filter.input_filter_height()),
                                extent(input.width(), filter.input_filter_width()));
  }
  double Flops() const {
    return 2.0 * static_cast<double>(Output().ElementCount()) *
           static_cast<double>(filter.input_feature_map_count() * filter.input_filter_height() *
                               filter.input_filter_width());
  }
};

const std::vector<Shape> kShapes = {
    {"n1_c16_32x32_k16_3x3", dnn::BatchDescriptor(1, 16, 32, 32), dnn::FilterDescriptor(16, 16, 3, 3), 1, 1},
    {"n1_c3_224x224_k64_7x7_s2", dnn::BatchDescriptor(1, 3, 224, 224), dnn::FilterDescriptor(64, 3, 7, 7), 3, 2},
    {"n1_c64_56x56_k64_3x3", dnn::BatchDescriptor(1, 64, 56, 56), dnn::FilterDescriptor(64, 64, 3, 3), 1, 1},
    {"n1_c128_28x28_k128_3x3", dnn::BatchDescriptor(1, 128, 28, 28), dnn::FilterDescriptor(128, 128, 3, 3), 1, 1},
};

void Ok(const se::Status& status) {
  if (!status.ok()) bench::Die(status.ToString());
}

void RegisterOurs(const Shape& shape) {
  benchmark::RegisterBenchmark(Name("dnn_conv", shape.name, "ours").c_str(), [shape](benchmark::State& state) {
    auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
    const dnn::BatchDescriptor output = shape.Output();
    se::ScopedDeviceMemory<float> x = executor->AllocateOwnedArray<float>(std::uint64_t(shape.input.ElementCount()));
    se::ScopedDeviceMemory<float> w = executor->AllocateOwnedArray<float>(std::uint64_t(shape.filter.ElementCount()));
    se::ScopedDeviceMemory<float> y = executor->AllocateOwnedArray<float>(std::uint64_t(output.ElementCount()));
    Ok(executor->SynchronousMemZero(x.ptr(), x.cref().size()));
    Ok(executor->SynchronousMemZero(w.ptr(), w.cref().size()));
    se::Stream<se::host> stream(executor);
    stream.Init();
    const dnn::ConvolutionDescriptor convolution = shape.Convolution();
    for (auto _ : state) {
      stream.ThenConvolve(shape.input, x.cref(), shape.filter, w.cref(), convolution, output, y.ptr());
      Ok(stream.BlockHostUntilDone());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(shape.Flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  })->UseRealTime();
}

void RegisterOneDnn(const Shape& shape) {
  benchmark::RegisterBenchmark(Name("dnn_conv", shape.name, "onednn").c_str(), [shape](benchmark::State& state) {
    const dnn::BatchDescriptor out = shape.Output();
    const dnn::BatchDescriptor& in = shape.input;
    const dnn::FilterDescriptor& f = shape.filter;
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const dnnl::memory::desc src({in.count(), in.feature_map_count(), in.height(), in.width()}, f32, tag::nchw);
    const dnnl::memory::desc weights(
        {f.output_feature_map_count(), f.input_feature_map_count(), f.input_filter_height(), f.input_filter_width()},
        f32, tag::oihw);
    const dnnl::memory::desc dst({out.count(), out.feature_map_count(), out.height(), out.width()}, f32, tag::nchw);
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                               src, weights, dst, {shape.stride, shape.stride},
                                               {shape.padding, shape.padding}, {shape.padding, shape.padding});
    const dnnl::convolution_forward primitive(dnnl::convolution_forward::primitive_desc(desc, engine));
    std::vector<float> x(std::size_t(in.ElementCount())), w(std::size_t(f.ElementCount())),
        y(std::size_t(out.ElementCount()));
    const dnnl::memory mx(src, engine, x.data()), mw(weights, engine, w.data()), my(dst, engine, y.data());
    for (auto _ : state) {
      primitive.execute(stream, {{DNNL_ARG_SRC, mx}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, my}});
      stream.wait();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(shape.Flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  })->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (const Shape& shape : kShapes) {
    RegisterOurs(shape);
    RegisterOneDnn(shape);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
