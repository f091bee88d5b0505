// <streamexecutor/dnn.hpp> in a CUDA translation unit: compiled and linked by
// nvcc -std=c++20 with -Werror (the oneDNN and cuDNN plugins both), then run.
// The host backend computes a ReLU and a softmax for real (or, built without
// oneDNN, reports that it needs it); the CUDA backend
// reports why it has no device, or, against the doubles, runs the calls.
#include <streamexecutor/dnn.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace se = streamexecutor;
namespace dnn = se::dnn;

namespace {

const std::vector<float> kInput{-1.0f, 0.0f, 1.0f, 2.0f};

template <se::Backend B>
se::Status ReluThenSoftmax(se::StreamExecutor<B>* executor, std::vector<float>& relu, std::vector<float>& softmax) {
  const dnn::BatchDescriptor d(1, 1, 2, 2);
  se::ScopedDeviceMemory<float> x = executor->template AllocateOwnedArray<float>(4);
  se::ScopedDeviceMemory<float> y = executor->template AllocateOwnedArray<float>(4);
  se::Stream<B> stream(executor);
  return stream.Init()
      .template ThenMemcpyH2D<float>(kInput, x.ptr())
      .ThenActivate(dnn::ActivationMode::kRelu, d, x.cref(), y.ptr())
      .template ThenMemcpyD2H<float>(y.cref(), relu)
      .ThenSoftmax(d, x.cref(), y.ptr())
      .template ThenMemcpyD2H<float>(y.cref(), softmax)
      .BlockHostUntilDone();
}

int Host() {
  std::vector<float> relu(4), softmax(4);
  const se::Status status =
      ReluThenSoftmax(se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie(), relu, softmax);
#if !defined(STREAMEXECUTOR_DNN_WITH_ONEDNN)
  // A build without oneDNN (tools/gpu_check.sh's, where cudnn.h alone
  // brought this check in): the host's calls must say what they need.
  const bool names_onednn = status.message().find("needs oneDNN") != std::string::npos;
  std::printf("host (built without oneDNN): %s\n", status.ToString().c_str());
  return status.code() == se::ErrorCode::kUnavailable && names_onednn ? 0 : 1;
#else
  if (!status.ok()) {
    std::printf("host: %s\n", status.ToString().c_str());
    return 1;
  }
  double total = 0;
  for (float v : kInput) total += std::exp(static_cast<double>(v));
  for (std::size_t i = 0; i < 4; ++i) {
    const double expected = std::exp(static_cast<double>(kInput[i])) / total;
    if (relu[i] != (kInput[i] > 0 ? kInput[i] : 0.0f) || std::abs(softmax[i] - expected) > 1e-6) {
      std::printf("host: element %zu: relu %f, softmax %f (expected %f)\n", i, static_cast<double>(relu[i]),
                  static_cast<double>(softmax[i]), expected);
      return 1;
    }
  }
  std::printf("host: ReLU and softmax match\n");
  return 0;
#endif
}

int Cuda() {
  auto& platform = se::Platform<se::cuda>::Get();
  auto executor = platform.ExecutorForDevice(0);
  if (!executor.ok()) {
    std::printf("cuda: no device: %s\n", executor.status().ToString().c_str());
    return platform.VisibleDeviceCount() == 0 && !platform.InitStatus().ok() ? 0 : 1;
  }
  std::vector<float> relu(4), softmax(4);
  const se::Status status = ReluThenSoftmax(executor.value(), relu, softmax);
  std::printf("cuda: %s\n", status.ToString().c_str());
  return status.ok() ? 0 : 1;
}

}  // namespace

int main() { return Host() + Cuda() == 0 ? 0 : 1; }
