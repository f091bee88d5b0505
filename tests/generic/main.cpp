// Preflight of a backend's generic suite. Where the backend has no device (no
// CUDA driver, no OpenCL platform) the suite reports SKIP through Meson's
// exit code 77, with the reason, instead of passing without running.
#include <fmt/format.h>

#include "generic/test_backend.hpp"

int SeTestPreflight() {
  auto& platform = se::Platform<TestBackend>::Get();
  if (platform.VisibleDeviceCount() == 0) {
    fmt::print("SKIPPED: the {} platform has no device: {}\n", platform.Name(),
               platform.InitStatus().ok() ? std::string("zero devices visible") : platform.InitStatus().ToString());
    return 77;
  }
  auto executor = platform.ExecutorForDevice(0);
  if (!executor.ok()) {
    fmt::print("the {} platform cannot open device 0: {}\n", platform.Name(), executor.status().ToString());
    return 1;
  }
  fmt::print("generic suite on {}: {}\n", executor.value()->DeviceLabel(),
             executor.value()->GetDeviceDescription().name);
  if constexpr (kRunsOnEnqueue) {
    fmt::print(
        "{} runs every operation as it is enqueued: the [async-callbacks] cases, which hold a stream with a "
        "callback that the test releases later, would wait for themselves and are left out\n",
        platform.Name());
  }
  return -1;
}

const char* SeTestDefaultSpec() { return kRunsOnEnqueue ? "~[async-callbacks]" : nullptr; }
