// strict_warnings.cpp's companion for <streamexecutor/dnn.hpp>: every DNN
// operation instantiated in float and double on every enabled backend,
// compiled (never run) by check.py under -Wall -Wextra -Wpedantic -Wshadow
// -Wconversion -Werror with g++ and clang++, with the build's DNN defines (so
// oneDNN's, CLBlast's and cudnn.h's paths are compiled where they were found).
#include <streamexecutor/dnn.hpp>
#include <streamexecutor/streamexecutor.hpp>

// The loader's X-macros must not leak into consumers' code.
#if defined(SE_CUDNN_MEMBER) || defined(SE_CUDNN_RESOLVE)
#error "an internal X-macro of the DNN headers is still defined"
#endif

namespace se = streamexecutor;
namespace dnn = se::dnn;

namespace {

template <typename B, typename T>
se::Status ExerciseDnn(se::StreamExecutor<B>* executor) {
  const dnn::BatchDescriptor input(2, 3, 8, 8);
  const dnn::FilterDescriptor filter(4, 3, 3, 3);
  dnn::ConvolutionDescriptor convolution;
  convolution.set_zero_padding_height(1).set_zero_padding_width(1);
  const dnn::BatchDescriptor output(2, 4, 8, 8);
  dnn::PoolingDescriptor pooling;
  pooling.set_pooling_mode(dnn::PoolingMode::kAverage).set_window_height(2).set_window_width(2);
  pooling.set_vertical_stride(2).set_horizontal_stride(2);
  const dnn::BatchDescriptor pooled(2, 4, 4, 4);
  const dnn::BatchDescriptor dense(2, 10, 1, 1);
  se::ScopedDeviceMemory<T> x = executor->template AllocateOwnedArray<T>(384);
  se::ScopedDeviceMemory<T> w = executor->template AllocateOwnedArray<T>(2560);
  se::ScopedDeviceMemory<T> y = executor->template AllocateOwnedArray<T>(512);
  se::ScopedDeviceMemory<T> z = executor->template AllocateOwnedArray<T>(128);
  se::Stream<B> stream(executor);
  return stream.Init()
      .ThenConvolve(input, x.cref(), filter, w.cref(), convolution, output, y.ptr())
      .ThenActivate(dnn::ActivationMode::kRelu6, output, y.cref(), y.ptr())
      .ThenPoolForward(pooling, output, y.cref(), pooled, z.ptr())
      .ThenMatMul(z.cref(), w.cref(), pooled, dense, x.ptr())
      .ThenSoftmax(dense, x.cref(), x.ptr())
      .BlockHostUntilDone();
}

template <typename B>
int RunDnn() {
  se::StatusOr<se::StreamExecutor<B>*> executor = se::Platform<B>::Get().ExecutorForDevice(0);
  if (!executor.ok()) return 1;
  return (ExerciseDnn<B, float>(executor.value()).ok() ? 0 : 1) +
         (ExerciseDnn<B, double>(executor.value()).ok() ? 0 : 1);
}

}  // namespace

int StrictDnnEntry() {
  int result = 0;
  // Every enabled backend, se::host_serial (no adapter: UNAVAILABLE) included.
  se::EnabledBackends::ForEach([&result]<typename B>() { result += RunDnn<B>(); });
  return result;
}
