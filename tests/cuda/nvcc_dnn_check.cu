// <streamexecutor/dnn.hpp> in a CUDA translation unit: compiled and linked by
// nvcc -std=c++20 with -Werror (the cuDNN plugin and the host plugin's
// nvcc form), then run. Under nvcc the host plugin cannot include oneDNN's
// C++ header (canned/dnn/host.hpp says why), so its calls must say so; the
// CUDA backend, where no device exists, must report why rather than pass.
#include <streamexecutor/dnn.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace se = streamexecutor;
namespace dnn = se::dnn;

namespace {

template <se::Backend B>
se::Status ReluThenSoftmax(se::StreamExecutor<B>* executor) {
  const dnn::BatchDescriptor d(1, 1, 2, 2);
  const std::vector<float> input{-1.0f, 0.0f, 1.0f, 2.0f};
  se::ScopedDeviceMemory<float> x = executor->template AllocateOwnedArray<float>(4);
  se::ScopedDeviceMemory<float> y = executor->template AllocateOwnedArray<float>(4);
  se::Stream<B> stream(executor);
  return stream.Init()
      .template ThenMemcpyH2D<float>(input, x.ptr())
      .ThenActivate(dnn::ActivationMode::kRelu, d, x.cref(), y.ptr())
      .ThenSoftmax(d, y.cref(), y.ptr())
      .BlockHostUntilDone();
}

int Host() {
  const se::Status status = ReluThenSoftmax(se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie());
  std::printf("host: %s\n", status.ToString().c_str());
  const bool explained = status.code() == se::ErrorCode::kUnavailable &&
                         (status.message().find("does not compile under nvcc") != std::string::npos ||
                          status.message().find("built without") != std::string::npos);
  return explained ? 0 : 1;
}

int Cuda() {
  auto& platform = se::Platform<se::cuda>::Get();
  auto executor = platform.ExecutorForDevice(0);
  if (!executor.ok()) {
    std::printf("cuda: no device: %s\n", executor.status().ToString().c_str());
    return platform.VisibleDeviceCount() == 0 && !platform.InitStatus().ok() ? 0 : 1;
  }
  const se::Status status = ReluThenSoftmax(executor.value());
  std::printf("cuda: %s\n", status.ToString().c_str());
  return status.ok() ? 0 : 1;
}

}  // namespace

int main() { return Host() + Cuda() == 0 ? 0 : 1; }
