// What every backend's stream keeps for failures that happen off the calling
// thread (a host callback or host kernel that throws): the first error, kept
// until the stream is destroyed, and how a callback's exception becomes one.
#pragma once

#include <exception>
#include <mutex>
#include <string_view>
#include <utility>

#include "streamexecutor/core/status.hpp"

namespace streamexecutor::detail {

class StickyStatus {
 public:
  // Keeps `status` unless an earlier error is already kept.
  void Fail(Status status) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.ok()) status_ = std::move(status);
  }
  Status Get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }

 private:
  mutable std::mutex mutex_;
  Status status_;
};

// Runs a host callback; an exception becomes an ABORTED Status naming the
// device (e.g. "cuda:0") instead of escaping into a driver or pool thread.
template <typename Callback>
Status InvokeHostCallback(Callback& callback, std::string_view backend, int ordinal) {
  try {
    callback();
    return Status();
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kAborted, "host callback on {}:{} threw: {}", backend, ordinal, e.what());
  } catch (...) {
    return MakeError(ErrorCode::kAborted, "host callback on {}:{} threw a non-std::exception", backend, ordinal);
  }
}

}  // namespace streamexecutor::detail
