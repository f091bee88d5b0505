// What the tests against the counting driver double share: the executors of
// its devices, its query API (found among the loaded libraries once the
// platform has loaded the driver, which is then the double), and a Status
// check that says what it missed.
#pragma once

#include <catch2/catch.hpp>

#include <string_view>

#include <streamexecutor/cuda.hpp>

#include "counting_driver_double.hpp"

namespace se_test {

inline streamexecutor::StreamExecutor<streamexecutor::cuda>* Executor(int ordinal = 0) {
  return streamexecutor::Platform<streamexecutor::cuda>::Get().ExecutorForDevice(ordinal).ValueOrDie();
}

inline CountingDoubleApi& Double() {
  static CountingDoubleApi api = (streamexecutor::Platform<streamexecutor::cuda>::Get(), CountingDoubleApi::Find());
  return api;
}

inline long Calls(const char* entry_point) { return Double().calls(entry_point); }

inline bool Mentions(const streamexecutor::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string_view::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

}  // namespace se_test
