// What the <family>_no_adapter_test.cpp files share: each calls its family's
// operations on se::host_serial, a backend that no family has an adapter for
// (canned/detail/adapter.hpp). The operations compile there with no line of
// the family naming the backend, check their arguments as on every backend,
// and then report UNAVAILABLE naming the backend and the family.
#pragma once

#include <streamexecutor/streamexecutor.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

namespace no_adapter {

namespace se = streamexecutor;

inline se::StreamExecutor<se::host_serial>* Executor() {
  return se::Platform<se::host_serial>::Get().ExecutorForDevice(0).ValueOrDie();
}

inline void RequireNoLibrary(const se::Status& status, std::string_view caller, std::string_view family) {
  INFO(status.ToString());
  REQUIRE(status.code() == se::ErrorCode::kUnavailable);
  CHECK(status.message() ==
        std::string(caller) + " on host_serial:0: the host_serial backend has no " + std::string(family) + " library");
}

}  // namespace no_adapter
