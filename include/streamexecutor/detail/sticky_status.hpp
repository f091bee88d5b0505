// What every backend's stream keeps for failures that happen off the calling
// thread (a host callback or host kernel that throws): the first error, kept
// until the stream is destroyed, and how a callback's exception becomes one.
#pragma once

#include <exception>
#include <mutex>
#include <string_view>
#include <type_traits>
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

// A host callback may return a Status (XLA's DoHostCallbackWithStatus). The
// backends store and run callbacks behind a `void()` of their own (a ring
// slot, a CUDA host function, an OpenCL callback thread, a graph node), so
// a failed Status travels from the callable to InvokeHostCallback, the one
// place all of them run callbacks through, as this exception. It is no
// std::exception so that nothing but InvokeHostCallback mistakes it for one.
struct HostCallbackFailure {
  Status status;
};

template <typename F>
struct StatusHostCallback {
  F callable;
  void operator()() {
    if (Status status = callable(); !status.ok()) throw HostCallbackFailure{std::move(status)};
  }
};

template <typename Callback>
inline constexpr bool kHostCallbackReturnsStatus =
    std::is_same_v<std::remove_cvref_t<std::invoke_result_t<std::decay_t<Callback>&>>, Status>;

template <typename Callback>
constexpr bool CheckHostCallback() {
  static_assert(std::is_invocable_v<std::decay_t<Callback>&>, "ThenDoHostCallback takes a callable with no arguments");
  if constexpr (std::is_invocable_v<std::decay_t<Callback>&>) {
    static_assert(std::is_void_v<std::invoke_result_t<std::decay_t<Callback>&>> || kHostCallbackReturnsStatus<Callback>,
                  "ThenDoHostCallback takes a callable returning void or se::Status (a non-OK Status fails the "
                  "stream)");
  }
  return true;
}

// Runs a host callback. A Status it returns keeps its code and gains the
// device in its message; an exception becomes an ABORTED Status naming the
// device (e.g. "cuda:0") instead of escaping into a driver or pool thread.
template <typename Callback>
Status InvokeHostCallback(Callback& callback, std::string_view backend, int ordinal) {
  try {
    callback();
    return Status();
  } catch (HostCallbackFailure& failure) {
    return MakeError(failure.status.code(), "host callback on {}:{} failed: {}", backend, ordinal,
                     failure.status.message());
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kAborted, "host callback on {}:{} threw: {}", backend, ordinal, e.what());
  } catch (...) {
    return MakeError(ErrorCode::kAborted, "host callback on {}:{} threw a non-std::exception", backend, ordinal);
  }
}

}  // namespace streamexecutor::detail
