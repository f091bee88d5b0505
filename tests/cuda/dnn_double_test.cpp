// <streamexecutor/dnn.hpp> on the CUDA backend without a GPU: the counting
// driver double stands in for libcuda.so.1 and the cuDNN double for
// libcudnn.so.9 (both folders on LD_LIBRARY_PATH, see meson.build).
//
// se::cuda::kCuDnnPlugin makes the cuDNN calls it should: one handle per
// executor, bound to the calling stream; descriptors set with the
// operation's N, C, H, W, filter, padding, strides and modes; the views'
// device addresses; and cuDNN's errors become Statuses that name the call.
// What cuDNN computes needs a GPU; dnn_test.cpp checks the same operations'
// numbers on host and OpenCL.
#include <catch2/catch.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>
#include <streamexecutor/dnn.hpp>

#include "cudnn_double.hpp"

namespace se = streamexecutor;
namespace dnn = se::dnn;

namespace {

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

se::StreamExecutor<se::cuda>* Executor() {
  auto executor = se::Platform<se::cuda>::Get().ExecutorForDevice(0);
  INFO(executor.status().ToString());
  REQUIRE(executor.ok());
  return executor.value();
}

// The plugin's loader opens the double first, so that Find sees it.
se_test::CudnnDoubleApi& Double() {
  static se_test::CudnnDoubleApi api = (se::dnn_detail::CuDnn(), se_test::CudnnDoubleApi::Find());
  REQUIRE(api.loaded());
  return api;
}

SeCudnnDoubleCall Last() {
  SeCudnnDoubleCall call{};
  Double().last(&call);
  return call;
}

template <typename T>
const void* Address(se::StreamExecutor<se::cuda>* executor, const se::DeviceMemory<T>& memory) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(se::NativeMemory(*executor, memory).value()));
}

void CheckTensor(const SeCudnnDoubleTensor& tensor, const dnn::BatchDescriptor& batch, int type) {
  CHECK(tensor.format == CUDNN_TENSOR_NCHW);
  CHECK(tensor.data_type == type);
  CHECK(tensor.n == batch.count());
  CHECK(tensor.c == batch.feature_map_count());
  CHECK(tensor.h == batch.height());
  CHECK(tensor.w == batch.width());
}

}  // namespace

TEST_CASE("cuDNN convolution: descriptors, algorithm, scalars, stream and addresses", "[dnn][cudnn]") {
  auto* executor = Executor();
  const dnn::BatchDescriptor input(3, 2, 8, 6);
  const dnn::FilterDescriptor filter(5, 2, 3, 2);
  dnn::ConvolutionDescriptor convolution;
  convolution.set_zero_padding_height(1).set_zero_padding_width(2).set_vertical_filter_stride(2);
  const dnn::BatchDescriptor output(3, 5, 4, 9);
  auto x = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(input.ElementCount()));
  auto w = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(filter.ElementCount()));
  auto y = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(output.ElementCount()));
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenConvolve(input, x.cref(), filter, w.cref(), convolution, output, y.ptr())
              .BlockHostUntilDone()
              .ok());

  const SeCudnnDoubleCall call = Last();
  CHECK(std::string(call.name) == "cudnnConvolutionForward");
  CHECK(call.stream == static_cast<void*>(se::NativeQueue(stream)));
  CheckTensor(call.x, input, CUDNN_DATA_FLOAT);
  CheckTensor(call.y, output, CUDNN_DATA_FLOAT);
  CHECK(call.filter_format == CUDNN_TENSOR_NCHW);
  CHECK(call.filter_type == CUDNN_DATA_FLOAT);
  CHECK(call.filter_k == 5);
  CHECK(call.filter_c == 2);
  CHECK(call.filter_h == 3);
  CHECK(call.filter_w == 2);
  CHECK(call.pad_h == 1);
  CHECK(call.pad_w == 2);
  CHECK(call.stride_u == 2);
  CHECK(call.stride_v == 1);
  CHECK(call.dilation_h == 1);
  CHECK(call.dilation_w == 1);
  CHECK(call.conv_mode == CUDNN_CROSS_CORRELATION);
  CHECK(call.conv_type == CUDNN_DATA_FLOAT);
  CHECK(call.math_type == CUDNN_FMA_MATH);
  CHECK(call.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
  CHECK(call.workspace == nullptr);
  CHECK(call.workspace_bytes == 0);
  CHECK(call.alpha == 1.0);
  CHECK(call.beta == 0.0);
  CHECK(call.x_data == Address(executor, x.cref()));
  CHECK(call.w_data == Address(executor, w.cref()));
  CHECK(call.y_data == Address(executor, y.cref()));

  // The double wrote its marker over exactly the output.
  std::vector<float> back(static_cast<std::size_t>(output.ElementCount()));
  REQUIRE(executor->SynchronousMemcpyD2H(y.cref(), std::span<float>(back)).ok());
  CHECK(back.front() == 0.5f);
  CHECK(back.back() == 0.5f);
}

TEST_CASE("cuDNN: one handle per executor, bound to each calling stream; doubles are CUDNN_DATA_DOUBLE",
          "[dnn][cudnn]") {
  auto* executor = Executor();
  const dnn::BatchDescriptor d(2, 3, 4, 5);
  auto x = executor->AllocateOwnedArray<double>(120);
  auto y = executor->AllocateOwnedArray<double>(120);
  se::Stream first(executor), second(executor);
  first.Init();
  second.Init();
  const long bindings_before = Double().calls("cudnnSetStream");
  REQUIRE(first.ThenSoftmax(d, x.cref(), y.ptr()).BlockHostUntilDone().ok());
  CHECK(Last().stream == static_cast<void*>(se::NativeQueue(first)));
  CheckTensor(Last().x, d, CUDNN_DATA_DOUBLE);
  REQUIRE(second.ThenSoftmax(d, x.cref(), y.ptr()).BlockHostUntilDone().ok());
  CHECK(Last().stream == static_cast<void*>(se::NativeQueue(second)));
  CHECK(Double().calls("cudnnSetStream") == bindings_before + 2);
  CHECK(Double().calls("cudnnCreate") == 1);
  SeCudnnDoubleLive live{};
  Double().live(&live);
  CHECK(live.handles == 1);
  CHECK(live.descriptors == 6);  // two tensors, filter, convolution, pooling, activation
}

TEST_CASE("cuDNN pooling: mode, window, padding and strides", "[dnn][cudnn]") {
  auto* executor = Executor();
  const dnn::BatchDescriptor in(2, 3, 7, 8), out(2, 3, 4, 3);
  auto x = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(in.ElementCount()));
  auto y = executor->AllocateOwnedArray<float>(static_cast<std::uint64_t>(out.ElementCount()));
  for (dnn::PoolingMode mode : {dnn::PoolingMode::kMaximum, dnn::PoolingMode::kAverage}) {
    dnn::PoolingDescriptor pooling;
    pooling.set_pooling_mode(mode).set_window_height(3).set_window_width(2).set_vertical_padding(1);
    pooling.set_horizontal_padding(1).set_vertical_stride(2).set_horizontal_stride(3);
    se::Stream stream(executor);
    REQUIRE(stream.Init().ThenPoolForward(pooling, in, x.cref(), out, y.ptr()).BlockHostUntilDone().ok());
    const SeCudnnDoubleCall call = Last();
    CHECK(std::string(call.name) == "cudnnPoolingForward");
    CHECK(call.pooling_mode ==
          (mode == dnn::PoolingMode::kMaximum ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING));
    CHECK(call.window_h == 3);
    CHECK(call.window_w == 2);
    CHECK(call.pooling_pad_v == 1);
    CHECK(call.pooling_pad_h == 1);
    CHECK(call.pooling_stride_v == 2);
    CHECK(call.pooling_stride_h == 3);
    CheckTensor(call.x, in, CUDNN_DATA_FLOAT);
    CheckTensor(call.y, out, CUDNN_DATA_FLOAT);
    CHECK(call.y_data == Address(executor, y.cref()));
  }
}

TEST_CASE("cuDNN activation modes, kRelu6 as a clipped ReLU at 6; softmax is ACCURATE over each example",
          "[dnn][cudnn]") {
  auto* executor = Executor();
  const dnn::BatchDescriptor d(2, 3, 4, 5);
  auto x = executor->AllocateOwnedArray<float>(120);
  const struct {
    dnn::ActivationMode mode;
    cudnnActivationMode_t expected;
    double coef;
  } modes[] = {{dnn::ActivationMode::kSigmoid, CUDNN_ACTIVATION_SIGMOID, 0.0},
               {dnn::ActivationMode::kRelu, CUDNN_ACTIVATION_RELU, 0.0},
               {dnn::ActivationMode::kRelu6, CUDNN_ACTIVATION_CLIPPED_RELU, 6.0},
               {dnn::ActivationMode::kTanh, CUDNN_ACTIVATION_TANH, 0.0}};
  for (const auto& m : modes) {
    se::Stream stream(executor);
    REQUIRE(stream.Init().ThenActivate(m.mode, d, x.cref(), x.ptr()).BlockHostUntilDone().ok());
    const SeCudnnDoubleCall call = Last();
    CHECK(std::string(call.name) == "cudnnActivationForward");
    CHECK(call.activation_mode == m.expected);
    CHECK(call.activation_coef == m.coef);
    CHECK(call.x_data == call.y_data);  // in place
    CheckTensor(call.x, d, CUDNN_DATA_FLOAT);
  }
  se::Stream stream(executor);
  auto y = executor->AllocateOwnedArray<float>(120);
  REQUIRE(stream.Init().ThenSoftmax(d, x.cref(), y.ptr()).BlockHostUntilDone().ok());
  CHECK(Last().softmax_algo == CUDNN_SOFTMAX_ACCURATE);
  CHECK(Last().softmax_mode == CUDNN_SOFTMAX_MODE_INSTANCE);
  CHECK(Last().y_data == Address(executor, y.cref()));
}

TEST_CASE("cuDNN matmul is a 1x1 convolution of the n x k weights", "[dnn][cudnn]") {
  auto* executor = Executor();
  const dnn::BatchDescriptor in(5, 2, 3, 4), out(5, 7, 1, 1);
  auto x = executor->AllocateOwnedArray<float>(120);
  auto w = executor->AllocateOwnedArray<float>(7 * 24);
  auto y = executor->AllocateOwnedArray<float>(35);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenMatMul(x.cref(), w.cref(), in, out, y.ptr()).BlockHostUntilDone().ok());
  const SeCudnnDoubleCall call = Last();
  CHECK(std::string(call.name) == "cudnnConvolutionForward");
  CheckTensor(call.x, dnn::BatchDescriptor(5, 24, 1, 1), CUDNN_DATA_FLOAT);
  CheckTensor(call.y, dnn::BatchDescriptor(5, 7, 1, 1), CUDNN_DATA_FLOAT);
  CHECK(call.filter_k == 7);
  CHECK(call.filter_c == 24);
  CHECK(call.filter_h == 1);
  CHECK(call.filter_w == 1);
  CHECK(call.pad_h == 0);
  CHECK(call.stride_u == 1);
  CHECK(call.w_data == Address(executor, w.cref()));
}

TEST_CASE("cuDNN errors name the call and stick; shapes are checked before cuDNN", "[dnn][cudnn][errors]") {
  auto* executor = Executor();
  const dnn::BatchDescriptor d(1, 1, 2, 2);
  auto x = executor->AllocateOwnedArray<float>(4);
  auto y = executor->AllocateOwnedArray<float>(4);

  Double().fail_next("cudnnActivationForward", CUDNN_STATUS_BAD_PARAM);
  se::Stream failing(executor);
  failing.Init().ThenActivate(dnn::ActivationMode::kRelu, d, x.cref(), y.ptr());
  CHECK(failing.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(
      Mentions(failing.status(), "ThenActivate on cuda:0: cudnnActivationForward failed with CUDNN_STATUS_BAD_PARAM"));
  const long softmaxes = Double().calls("cudnnSoftmaxForward");
  failing.ThenSoftmax(d, x.cref(), y.ptr());  // skipped: the stream has failed
  CHECK(Double().calls("cudnnSoftmaxForward") == softmaxes);
  CHECK(failing.BlockHostUntilDone().code() == se::ErrorCode::kInvalidArgument);

  Double().fail_next("cudnnSetStream", CUDNN_STATUS_NOT_SUPPORTED);
  se::Stream unbound(executor);
  unbound.Init().ThenSoftmax(d, x.cref(), y.ptr());
  CHECK(unbound.status().code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(unbound.status(), "cudnnSetStream failed with CUDNN_STATUS_NOT_SUPPORTED"));
  CHECK(Double().calls("cudnnSoftmaxForward") == softmaxes);

  const long convolutions = Double().calls("cudnnConvolutionForward");
  se::Stream small(executor);
  small.Init().ThenConvolve(dnn::BatchDescriptor(1, 1, 4, 4), x.cref(), dnn::FilterDescriptor(1, 1, 1, 1), y.cref(),
                            dnn::ConvolutionDescriptor(), dnn::BatchDescriptor(1, 1, 4, 4), y.ptr());
  CHECK(small.status().code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(small.status(),
                 "ThenConvolve on cuda:0: the input BatchDescriptor{count=1, feature_map_count=1, "
                 "height=4, width=4} needs 16 elements (64 bytes), but its DeviceMemory holds 4"));
  CHECK(Double().calls("cudnnConvolutionForward") == convolutions);
}

TEST_CASE("a missing cuDNN is UNAVAILABLE naming the package", "[dnn][cudnn]") {
  const char* names[] = {"libcudnn-not-installed.so.9"};
  const auto load = se::canned_detail::Load(se::dnn_detail::kCuDnnLibrary, se::dnn_detail::kCuDnnEntryPoints, names);
  CHECK(load.status.code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(load.status, "the cuDNN plugin needs cuDNN (libcudnn-not-installed.so.9), which could not be loaded"));
  CHECK(Mentions(load.status, "install libcudnn9-cuda-13"));
}

TEST_CASE("a cuDNN call from inside a host callback is refused before cuDNN", "[dnn][cudnn][errors]") {
  auto* executor = Executor();
  const dnn::BatchDescriptor d(1, 1, 2, 2);
  auto x = executor->AllocateOwnedArray<float>(4);
  auto y = executor->AllocateOwnedArray<float>(4);
  se::Stream inner(executor);
  inner.Init();
  REQUIRE(inner.ThenSoftmax(d, x.cref(), y.ptr()).BlockHostUntilDone().ok());  // the state exists already
  const long softmaxes = Double().calls("cudnnSoftmaxForward");
  se::Status seen;
  se::Stream outer(executor);
  outer.Init().ThenDoHostCallback([&] {
    inner.ThenSoftmax(d, x.cref(), y.ptr());
    seen = inner.status();
  });
  (void)outer.BlockHostUntilDone();
  CHECK(seen.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(seen, "a host callback (ThenDoHostCallback) may not call the CUDA driver"));
  CHECK(Double().calls("cudnnSoftmaxForward") == softmaxes);
}
