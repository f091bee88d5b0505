// Status and StatusOr<T>: how every fallible operation reports failure.
//
// An OK Status carries no string, only a null pointer, so returning one costs
// nothing on hot paths (launches, enqueues); the message is only built on
// failure.
#pragma once

#include "streamexecutor/detail/fmt.hpp"
#include "streamexecutor/version.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace streamexecutor {

enum class ErrorCode {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kResourceExhausted,
  kFailedPrecondition,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
  kAborted,
  kDeadlineExceeded,  // a bounded wait ran out (a collective whose other ranks never came)
};

constexpr std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "OK";
    case ErrorCode::kCancelled: return "CANCELLED";
    case ErrorCode::kUnknown: return "UNKNOWN";
    case ErrorCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound: return "NOT_FOUND";
    case ErrorCode::kAlreadyExists: return "ALREADY_EXISTS";
    case ErrorCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case ErrorCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case ErrorCode::kOutOfRange: return "OUT_OF_RANGE";
    case ErrorCode::kUnimplemented: return "UNIMPLEMENTED";
    case ErrorCode::kInternal: return "INTERNAL";
    case ErrorCode::kUnavailable: return "UNAVAILABLE";
    case ErrorCode::kDataLoss: return "DATA_LOSS";
    case ErrorCode::kAborted: return "ABORTED";
    case ErrorCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
  }
  return "UNKNOWN";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message)
      : code_(code), message_(message.empty() ? nullptr : new std::string(std::move(message))) {}
  Status(const Status& other)
      : code_(other.code_), message_(other.message_ ? new std::string(*other.message_) : nullptr) {}
  Status(Status&& other) noexcept : code_(other.code_), message_(std::exchange(other.message_, nullptr)) {}
  ~Status() {
    if (message_ != nullptr) [[unlikely]]
      DropMessage(message_);
  }
  // Assignment returns nothing: with a [[nodiscard]] class, nvcc warns on
  // every `status = ...;` statement if it returns Status&.
  void operator=(const Status& other) {
    if (this == &other) return;
    *this = Status(other);
  }
  void operator=(Status&& other) noexcept {
    if (this == &other) return;
    if (message_ != nullptr) [[unlikely]]
      DropMessage(message_);
    code_ = other.code_;
    message_ = std::exchange(other.message_, nullptr);
  }

  static Status OK() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_ != nullptr ? *message_ : EmptyMessage(); }
  std::string ToString() const {
    if (ok()) return "OK";
    return ::streamexecutor::detail::Format("{}: {}", ErrorCodeName(code_), message());
  }
  // Explicitly drops a Status that the caller has decided not to inspect.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) { return a.code_ == b.code_ && a.message() == b.message(); }

 private:
  // Out of line and cold, so that destroying a Status on a hot path is one
  // compare with null.
  [[gnu::cold, gnu::noinline]] static void DropMessage(std::string* message) noexcept { delete message; }
  // Never destroyed: a Status may be read by other statics' destructors at exit.
  static const std::string& EmptyMessage() {
    static const std::string* const empty = new std::string();
    return *empty;
  }

  // An OK Status is a code and a null pointer: making, moving and destroying
  // one touches no string (launch paths return one per call).
  ErrorCode code_ = ErrorCode::kOk;
  std::string* message_ = nullptr;
};

// Builds an error Status from a {fmt} format string.
template <typename... Args>
Status MakeError(ErrorCode code, detail::FormatString<Args...> format, Args&&... args) {
  return Status(code, detail::VFormat(detail::FormatView(format), fmt::make_format_args(args...)));
}

[[noreturn]] inline void DieWithStatus(const Status& status, std::string_view what) {
  const std::string line = detail::Format("streamexecutor: {} on an error status: {}\n", what, status.ToString());
  std::fputs(line.c_str(), stderr);
  std::abort();
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit like absl::StatusOr
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(ErrorCode::kInternal, "StatusOr built from an OK Status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // Seed name: aborts with the message when there is no value.
  T& ValueOrDie() & {
    if (!ok()) DieWithStatus(status_, "ValueOrDie()");
    return *value_;
  }
  T&& ValueOrDie() && {
    if (!ok()) DieWithStatus(status_, "ValueOrDie()");
    return std::move(*value_);
  }
  T& value() & { return ValueOrDie(); }
  const T& value() const& {
    if (!ok()) DieWithStatus(status_, "value()");
    return *value_;
  }
  T&& value() && { return std::move(*this).ValueOrDie(); }
  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? *value_ : static_cast<T>(std::forward<U>(fallback));
  }
  template <typename U>
  T value_or(U&& fallback) && {
    return ok() ? std::move(*value_) : static_cast<T>(std::forward<U>(fallback));
  }

  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace streamexecutor

template <>
struct fmt::formatter<streamexecutor::Status> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const streamexecutor::Status& status, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(status.ToString(), ctx);
  }
};

// Returns early from the enclosing function when `expr` is an error Status.
#define STREAMEXECUTOR_RETURN_IF_ERROR(expr)      \
  do {                                            \
    ::streamexecutor::Status se_status_ = (expr); \
    if (!se_status_.ok()) return se_status_;      \
  } while (false)
