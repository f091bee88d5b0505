// Shared by the OpenCL-specific tests: the executor for device 0 and a check
// that a Status message contains a piece of text, printing it when not.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include <streamexecutor/opencl.hpp>

namespace se = streamexecutor;

inline se::StreamExecutor<se::opencl>* OpenCLExecutor() {
  return se::Platform<se::opencl>::Get().ExecutorForDevice(0).ValueOrDie();
}

inline bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}
