// Built twice, as two shared libraries with -fvisibility=hidden
// (-DSE_LIBRARY_NAME=a / b): each includes the headers on its own, as two
// plugins of one application would.
#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;

#define SE_EXPORT_FN(name) SE_CONCAT(name, SE_LIBRARY_NAME)
#define SE_CONCAT(a, b) SE_CONCAT2(a, b)
#define SE_CONCAT2(a, b) a##_##b

extern "C" __attribute__((visibility("default"))) void* SE_EXPORT_FN(platform_address)() {
  return &se::Platform<se::host>::Get();
}

// The which-th backend of the build (se::EnabledBackends): the address of its
// platform and its name, or null past the last.
extern "C" __attribute__((visibility("default"))) void* SE_EXPORT_FN(other_platform_address)(int which,
                                                                                             const char** name) {
  void* address = nullptr;
  int index = 0;
  se::EnabledBackends::ForEach([&]<typename B>() {
    if (index++ != which) return;
    address = &se::Platform<B>::Get();
    *name = B::kName.data();
  });
  return address;
}

// Allocates through this library's view of the platform.
extern "C" __attribute__((visibility("default"))) bool SE_EXPORT_FN(allocate)(se::DeviceMemory<int>* out) {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  *out = executor->AllocateArray<int>(16);
  return !out->IsNull();
}

// Frees memory that the other library allocated: only works if both see one
// executor (and one allocation-id counter).
extern "C" __attribute__((visibility("default"))) bool SE_EXPORT_FN(free)(se::DeviceMemory<int>* memory) {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  return executor->Deallocate(memory).ok();
}

// A callback that waits for its own stream must be refused, not hang, even
// when the worker running it was started by the other library: the worker's
// thread-locals (which stream it drains, whether it is a worker) must be the
// same variables in both libraries.
extern "C" __attribute__((visibility("default"))) bool SE_EXPORT_FN(self_wait_refused)() {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::Stream stream(executor);
  se::Status inner;
  const se::Status outer =
      stream.Init().ThenDoHostCallback([&] { inner = stream.BlockHostUntilDone(); }).BlockHostUntilDone();
  // The refusal also sticks to the stream, as every error from its own callback does.
  return inner.code() == se::ErrorCode::kFailedPrecondition && outer.code() == inner.code();
}

// Runs one callback, so that this library's code starts the pool's workers.
extern "C" __attribute__((visibility("default"))) bool SE_EXPORT_FN(run_callback)() {
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::Stream stream(executor);
  bool ran = false;
  return stream.Init().ThenDoHostCallback([&] { ran = true; }).BlockHostUntilDone().ok() && ran;
}
