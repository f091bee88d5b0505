// The backend a generic suite executable runs on, chosen by the build with
// -DSE_TEST_BACKEND=<tag>, and small helpers shared by the generic tests.
#pragma once

#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;

#ifndef SE_TEST_BACKEND
#error "build the generic suite with -DSE_TEST_BACKEND=<tag of a backend in se::EnabledBackends>"
#endif
using TestBackend = se::SE_TEST_BACKEND;

inline se::StreamExecutor<TestBackend>* TestExecutor() {
  return se::Platform<TestBackend>::Get().ExecutorForDevice(0).ValueOrDie();
}
// The executor of a second device, or null where there is one: the cases
// about two executors then say so and stop (OpenCL runs them with
// POCL_DEVICES='pthread pthread', the CUDA double with SE_COUNTING_DOUBLE_DEVICES=2).
inline se::StreamExecutor<TestBackend>* SecondExecutor() {
  auto& platform = se::Platform<TestBackend>::Get();
  return platform.VisibleDeviceCount() < 2 ? nullptr : platform.ExecutorForDevice(1).ValueOrDie();
}

// Whether a host callback may call the backend (enqueue into its own stream):
// CUDA forbids CUDA calls inside a host function, so our CUDA callbacks refuse
// them with FAILED_PRECONDITION (docs/api.md, "Differences between backends").
inline constexpr bool kCallbacksMayCallTheBackend = se::Capabilities<TestBackend>::kCallbacksMayEnqueue;
inline constexpr bool kCallbackFailureSkipsQueuedWork = se::Capabilities<TestBackend>::kCallbackFailureSkipsQueuedWork;
// Whether every operation has run when its Then* call returns (a serial backend):
// cases about work that is still queued do not apply there.
inline constexpr bool kRunsOnEnqueue = se::Capabilities<TestBackend>::kRunsOnEnqueue;

// Substring check for Status messages.
inline bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}
