// <streamexecutor/dnn.hpp> on the host backend (oneDNN) and, where built in,
// on OpenCL (CLBlast): each operation against the naive loops of
// dnn_reference.hpp, stream order, and every error path. [fresh] cases choose
// a plugin for the process's executors: meson runs them in a process of their own.
#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <streamexecutor/dnn.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include "canned/dnn_reference.hpp"

namespace se = streamexecutor;
namespace dnn = se::dnn;

namespace {

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

template <typename B>
se::StreamExecutor<B>* Executor() {
  return se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
}

template <typename B, typename T>
se::ScopedDeviceMemory<T> Upload(se::StreamExecutor<B>* executor, const std::vector<T>& values) {
  se::ScopedDeviceMemory<T> memory = executor->template AllocateOwnedArray<T>(values.size());
  REQUIRE(executor->SynchronousMemcpyH2D(std::span<const T>(values), memory.ptr()).ok());
  return memory;
}

template <typename B, typename T>
std::vector<T> Download(se::StreamExecutor<B>* executor, const se::ScopedDeviceMemory<T>& memory) {
  std::vector<T> values(memory.cref().ElementCount());
  REQUIRE(executor->SynchronousMemcpyD2H(memory.cref(), std::span<T>(values)).ok());
  return values;
}

// One operation on a fresh stream: its Status once done, and the output.
template <typename B, typename T, typename Op>
se::Status RunOn(se::StreamExecutor<B>* executor, Op&& op) {
  se::Stream<B> stream(executor);
  stream.Init();
  op(stream);
  return stream.BlockHostUntilDone();
}

struct ConvCase {
  dnn::BatchDescriptor input;
  dnn::FilterDescriptor filter;
  dnn::ConvolutionDescriptor convolution;
  dnn::BatchDescriptor output;
};

std::vector<ConvCase> ConvCases() {
  std::vector<ConvCase> cases;
  cases.push_back({dnn::BatchDescriptor(2, 3, 9, 7), dnn::FilterDescriptor(4, 3, 3, 3), dnn::ConvolutionDescriptor(),
                   dnn::BatchDescriptor(2, 4, 7, 5)});
  dnn::ConvolutionDescriptor padded;
  padded.set_zero_padding_height(1)
      .set_zero_padding_width(2)
      .set_vertical_filter_stride(2)
      .set_horizontal_filter_stride(1);
  cases.push_back(
      {dnn::BatchDescriptor(3, 2, 8, 6), dnn::FilterDescriptor(5, 2, 3, 2), padded, dnn::BatchDescriptor(3, 5, 4, 9)});
  dnn::ConvolutionDescriptor strided;
  strided.set_vertical_filter_stride(3).set_horizontal_filter_stride(2);
  cases.push_back({dnn::BatchDescriptor(1, 8, 16, 16), dnn::FilterDescriptor(6, 8, 1, 1), strided,
                   dnn::BatchDescriptor(1, 6, 6, 8)});
  return cases;
}

template <typename B, typename T>
void CheckConvolutions(double tolerance) {
  auto* executor = Executor<B>();
  unsigned seed = 1;
  for (const ConvCase& c : ConvCases()) {
    INFO(c.input.ToString() << " " << c.filter.ToString() << " " << c.convolution.ToString());
    const std::vector<T> input = dnn_ref::RandomValues<T>(c.input.ElementCount(), seed++);
    const std::vector<T> filter = dnn_ref::RandomValues<T>(c.filter.ElementCount(), seed++);
    auto x = Upload<B>(executor, input);
    auto w = Upload<B>(executor, filter);
    auto y = executor->template AllocateOwnedArray<T>(static_cast<std::uint64_t>(c.output.ElementCount()));
    const se::Status status = RunOn<B, T>(executor, [&](se::Stream<B>& s) {
      s.ThenConvolve(c.input, x.cref(), c.filter, w.cref(), c.convolution, c.output, y.ptr());
    });
    REQUIRE(status.ok());
    CHECK(dnn_ref::MaxRelativeError(dnn_ref::Convolve(c.input, input, c.filter, filter, c.convolution, c.output),
                                    Download<B>(executor, y)) < tolerance);
  }
}

template <typename B, typename T>
void CheckMatMul(double tolerance) {
  auto* executor = Executor<B>();
  // k = 2 * 3 * 4 input nodes per example, n = 7 * 1 * 1 output nodes.
  const dnn::BatchDescriptor in(5, 2, 3, 4);
  const dnn::BatchDescriptor out(5, 7, 1, 1);
  const std::vector<T> input = dnn_ref::RandomValues<T>(in.ElementCount(), 11);
  const std::vector<T> weights = dnn_ref::RandomValues<T>(7 * 24, 12);
  auto x = Upload<B>(executor, input);
  auto w = Upload<B>(executor, weights);
  auto y = executor->template AllocateOwnedArray<T>(35);
  REQUIRE(RunOn<B, T>(executor, [&](se::Stream<B>& s) { s.ThenMatMul(x.cref(), w.cref(), in, out, y.ptr()); }).ok());
  CHECK(dnn_ref::MaxRelativeError(dnn_ref::MatMul(input, weights, 5, 7, 24), Download<B>(executor, y)) < tolerance);
}

}  // namespace

// ---- Host: oneDNN --------------------------------------------------------------

TEST_CASE("host convolutions match the reference", "[dnn][host]") { CheckConvolutions<se::host, float>(1e-5); }

TEST_CASE("host matmul matches the reference", "[dnn][host]") { CheckMatMul<se::host, float>(1e-5); }

TEST_CASE("host max and average pooling match the reference, with padding and strides", "[dnn][host]") {
  auto* executor = Executor<se::host>();
  const dnn::BatchDescriptor in(2, 3, 7, 8);
  const std::vector<float> input = dnn_ref::RandomValues<float>(in.ElementCount(), 21);
  auto x = Upload<se::host>(executor, input);
  for (dnn::PoolingMode mode : {dnn::PoolingMode::kMaximum, dnn::PoolingMode::kAverage}) {
    dnn::PoolingDescriptor pooling;
    pooling.set_pooling_mode(mode).set_window_height(3).set_window_width(2).set_vertical_padding(1);
    pooling.set_horizontal_padding(1).set_vertical_stride(2).set_horizontal_stride(3);
    const dnn::BatchDescriptor out(2, 3, 4, 3);
    INFO(pooling.ToString());
    auto y = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(out.ElementCount()));
    REQUIRE(RunOn<se::host, float>(executor, [&](se::Stream<se::host>& s) {
              s.ThenPoolForward(pooling, in, x.cref(), out, y.ptr());
            }).ok());
    CHECK(dnn_ref::MaxRelativeError(dnn_ref::Pool(pooling, in, input, out), Download<se::host>(executor, y)) < 1e-6);
  }
}

TEST_CASE("host activations match the reference, in place too", "[dnn][host]") {
  auto* executor = Executor<se::host>();
  const dnn::BatchDescriptor d(3, 4, 5, 6);
  std::vector<float> input = dnn_ref::RandomValues<float>(d.ElementCount(), 31);
  for (float& v : input) v *= 8.0f;  // reaches both of kRelu6's bounds
  auto x = Upload<se::host>(executor, input);
  for (dnn::ActivationMode mode : {dnn::ActivationMode::kSigmoid, dnn::ActivationMode::kRelu,
                                   dnn::ActivationMode::kRelu6, dnn::ActivationMode::kTanh}) {
    INFO(dnn::ActivationModeString(mode));
    auto y = executor->AllocateOwnedArray<float>(input.size());
    REQUIRE(RunOn<se::host, float>(executor, [&](se::Stream<se::host>& s) {
              s.ThenActivate(mode, d, x.cref(), y.ptr());
            }).ok());
    CHECK(dnn_ref::MaxRelativeError(dnn_ref::Activate(mode, input), Download<se::host>(executor, y)) < 1e-6);
  }
  auto z = Upload<se::host>(executor, input);
  REQUIRE(RunOn<se::host, float>(executor, [&](se::Stream<se::host>& s) {
            s.ThenActivate(dnn::ActivationMode::kTanh, d, z.cref(), z.ptr());
          }).ok());
  CHECK(dnn_ref::MaxRelativeError(dnn_ref::Activate(dnn::ActivationMode::kTanh, input),
                                  Download<se::host>(executor, z)) < 1e-6);
}

TEST_CASE("host softmax runs over each example's nodes", "[dnn][host]") {
  auto* executor = Executor<se::host>();
  const dnn::BatchDescriptor d(4, 3, 2, 5);
  std::vector<float> input = dnn_ref::RandomValues<float>(d.ElementCount(), 41);
  input[7] = 60.0f;  // large inputs: the library must subtract the maximum
  auto x = Upload<se::host>(executor, input);
  auto y = executor->AllocateOwnedArray<float>(input.size());
  REQUIRE(RunOn<se::host, float>(executor, [&](se::Stream<se::host>& s) { s.ThenSoftmax(d, x.cref(), y.ptr()); }).ok());
  const std::vector<float> result = Download<se::host>(executor, y);
  CHECK(dnn_ref::MaxRelativeError(dnn_ref::Softmax(d, input), result) < 1e-6);
  float first_example = 0;
  for (std::size_t i = 0; i < 30; ++i) first_example += result[i];
  CHECK(first_example == Approx(1.0f).epsilon(1e-5));
}

TEST_CASE("host DNN calls run in stream order with copies, and a cached primitive takes new buffers", "[dnn][host]") {
  auto* executor = Executor<se::host>();
  const ConvCase c = ConvCases()[1];
  se::Stream<se::host> stream(executor);
  stream.Init();
  auto x = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(c.input.ElementCount()));
  auto w = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(c.filter.ElementCount()));
  auto y = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(c.output.ElementCount()));
  for (unsigned round = 0; round < 3; ++round) {
    const std::vector<float> input = dnn_ref::RandomValues<float>(c.input.ElementCount(), 100 + round);
    const std::vector<float> filter = dnn_ref::RandomValues<float>(c.filter.ElementCount(), 200 + round);
    std::vector<float> output(static_cast<std::size_t>(c.output.ElementCount()));
    stream.ThenMemcpyH2D<float>(input, x.ptr())
        .ThenMemcpyH2D<float>(filter, w.ptr())
        .ThenConvolve(c.input, x.cref(), c.filter, w.cref(), c.convolution, c.output, y.ptr())
        .ThenActivate(dnn::ActivationMode::kRelu, c.output, y.cref(), y.ptr())
        .ThenMemcpyD2H<float>(y.cref(), output);
    REQUIRE(stream.BlockHostUntilDone().ok());
    CHECK(dnn_ref::MaxRelativeError(
              dnn_ref::Activate(dnn::ActivationMode::kRelu,
                                dnn_ref::Convolve(c.input, input, c.filter, filter, c.convolution, c.output)),
              output) < 1e-5);
  }
}

TEST_CASE("host DNN is float only: double is UNIMPLEMENTED naming oneDNN", "[dnn][host]") {
  auto* executor = Executor<se::host>();
  const dnn::BatchDescriptor d(1, 1, 2, 2);
  auto x = executor->AllocateOwnedArray<double>(4);
  auto y = executor->AllocateOwnedArray<double>(4);
  se::Stream<se::host> stream(executor);
  stream.Init().ThenActivate(dnn::ActivationMode::kRelu, d, x.cref(), y.ptr());
  CHECK(stream.status().code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(stream.status(), "ThenActivate on host:0: the oneDNN plugin runs float only"));
}

// ---- Errors (checked before any library runs, the same on every backend) -------

TEST_CASE("a buffer smaller than its descriptor is OUT_OF_RANGE naming the dimensions and both sizes",
          "[dnn][host][errors]") {
  auto* executor = Executor<se::host>();
  const ConvCase c = ConvCases()[0];
  auto x = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(c.input.ElementCount()) - 1);
  auto w = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(c.filter.ElementCount()));
  auto y = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(c.output.ElementCount()));
  se::Stream<se::host> stream(executor);
  stream.Init().ThenConvolve(c.input, x.cref(), c.filter, w.cref(), c.convolution, c.output, y.ptr());
  CHECK(stream.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(stream.status(),
                 "ThenConvolve on host:0: the input BatchDescriptor{count=2, feature_map_count=3, height=9, width=7} "
                 "needs 378 elements (1512 bytes), but its DeviceMemory holds 377 (1508 bytes)"));

  auto small_weights = executor->AllocateOwnedArray<float>(10);
  const dnn::BatchDescriptor in(5, 2, 3, 4), out(5, 7, 1, 1);
  auto mx = executor->AllocateOwnedArray<float>(120);
  auto my = executor->AllocateOwnedArray<float>(35);
  se::Stream<se::host> matmul(executor);
  matmul.Init().ThenMatMul(mx.cref(), small_weights.cref(), in, out, my.ptr());
  CHECK(matmul.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(matmul.status(), "the weights matrix of 7 output x 24 input nodes needs 168 elements"));
}

TEST_CASE("descriptors that do not fit together are INVALID_ARGUMENT naming them", "[dnn][host][errors]") {
  auto* executor = Executor<se::host>();
  const ConvCase c = ConvCases()[0];
  auto x = executor->AllocateOwnedArray<float>(1000);
  auto w = executor->AllocateOwnedArray<float>(1000);
  auto y = executor->AllocateOwnedArray<float>(1000);

  se::Stream<se::host> wrong_output(executor);
  wrong_output.Init().ThenConvolve(c.input, x.cref(), c.filter, w.cref(), c.convolution,
                                   dnn::BatchDescriptor(2, 4, 9, 7), y.ptr());
  CHECK(wrong_output.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(wrong_output.status(),
                 "the output is BatchDescriptor{count=2, feature_map_count=4, height=9, width=7}, "
                 "but FilterDescriptor{"));
  CHECK(Mentions(wrong_output.status(), "gives BatchDescriptor{count=2, feature_map_count=4, height=7, width=5}"));

  se::Stream<se::host> wrong_maps(executor);
  wrong_maps.Init().ThenConvolve(c.input, x.cref(), dnn::FilterDescriptor(4, 2, 3, 3), w.cref(), c.convolution,
                                 c.output, y.ptr());
  CHECK(Mentions(wrong_maps.status(), "the filter reads 2 input feature maps, but the input"));

  se::Stream<se::host> zero(executor);
  zero.Init().ThenSoftmax(dnn::BatchDescriptor(0, 1, 1, 1), x.cref(), y.ptr());
  CHECK(zero.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(zero.status(), "ThenSoftmax on host:0: the dimensions's count is 0"));

  dnn::PoolingDescriptor all_padding;
  all_padding.set_window_height(2).set_window_width(2).set_vertical_padding(2);
  se::Stream<se::host> pool(executor);
  pool.Init().ThenPoolForward(all_padding, dnn::BatchDescriptor(1, 1, 4, 4), x.cref(), dnn::BatchDescriptor(1, 1, 7, 3),
                              y.ptr());
  CHECK(Mentions(pool.status(), "pads as much as its window or more"));
}

TEST_CASE("null pointers and null memory are INVALID_ARGUMENT", "[dnn][host][errors]") {
  auto* executor = Executor<se::host>();
  const dnn::BatchDescriptor d(1, 2, 3, 4);
  auto x = executor->AllocateOwnedArray<float>(24);
  se::Stream<se::host> null_output(executor);
  se::DeviceMemory<float>* no_output = nullptr;
  null_output.Init().ThenActivate(dnn::ActivationMode::kRelu, d, x.cref(), no_output);
  CHECK(null_output.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(null_output.status(), "ThenActivate on host:0: the output DeviceMemory pointer is null"));

  se::DeviceMemory<float> null_input;
  auto y = executor->AllocateOwnedArray<float>(24);
  se::Stream<se::host> null_memory(executor);
  null_memory.Init().ThenSoftmax(d, null_input, y.ptr());
  CHECK(null_memory.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(null_memory.status(), "ThenSoftmax on host:0: the input is"));
}

TEST_CASE("an uninitialized stream fails the call; a failed stream keeps its first error and skips DNN work",
          "[dnn][host][errors]") {
  auto* executor = Executor<se::host>();
  const dnn::BatchDescriptor d(1, 1, 2, 2);
  std::vector<float> input{-1.0f, 2.0f, -3.0f, 4.0f};
  auto x = Upload<se::host>(executor, input);
  auto y = Upload<se::host>(executor, std::vector<float>{7.0f, 7.0f, 7.0f, 7.0f});

  se::Stream<se::host> uninitialized(executor);
  uninitialized.ThenActivate(dnn::ActivationMode::kRelu, d, x.cref(), y.ptr());
  CHECK(uninitialized.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(uninitialized.status(), "ThenActivate on host:0: the stream was not initialized"));

  se::Stream<se::host> stream(executor);
  stream.Init()
      .ThenSoftmax(dnn::BatchDescriptor(2, 1, 2, 2), x.cref(), y.ptr())  // x holds 4 of the 8 values
      .ThenActivate(dnn::ActivationMode::kRelu, d, x.cref(), y.ptr());
  CHECK(stream.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(stream.status(), "ThenSoftmax"));
  CHECK(stream.BlockHostUntilDone().code() == se::ErrorCode::kOutOfRange);
  CHECK(Download<se::host>(executor, y) == std::vector<float>{7.0f, 7.0f, 7.0f, 7.0f});
}

TEST_CASE("the DNN plugin defaults are oneDNN, CLBlast and cuDNN", "[dnn][plugin]") {
  CHECK(se::host::DefaultPlugins().dnn() == se::host::kOneDnnPlugin);
  CHECK(Executor<se::host>()->plugin_config().dnn() == se::host::kOneDnnPlugin);
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  CHECK(se::opencl::DefaultPlugins().dnn() == se::opencl::kClBlastDnnPlugin);
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
  CHECK(se::cuda::DefaultPlugins().dnn() == se::cuda::kCuDnnPlugin);
#endif
}

TEST_CASE("a DNN plugin this backend does not have is NOT_FOUND at the first call", "[dnn][plugin][fresh]") {
  se::PluginConfig config;
  config.SetDnn(se::DnnPluginId{"host", "no-such-library"});
  auto* executor = se::Platform<se::host>::Get().ExecutorForDeviceWithPluginConfig(0, config).ValueOrDie();
  const dnn::BatchDescriptor d(1, 1, 1, 2);
  auto x = executor->AllocateOwnedArray<float>(2);
  se::Stream<se::host> stream(executor);
  stream.Init().ThenSoftmax(d, x.cref(), x.ptr());
  CHECK(stream.status().code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(stream.status(), "host:0 has no DNN plugin 'no-such-library' (available: onednn)"));
}

#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "canned/dnn_opencl_cases.hpp"
#endif
