#include <catch2/catch.hpp>

#include <streamexecutor/core/status.hpp>

#include <string>
#include <string_view>

namespace se = streamexecutor;

TEST_CASE("an OK Status carries no message", "[status]") {
  se::Status ok;
  CHECK(ok.ok());
  CHECK(ok.code() == se::ErrorCode::kOk);
  CHECK(ok.message().empty());
  CHECK(ok.ToString() == "OK");
  CHECK(se::Status::OK() == ok);
}

TEST_CASE("MakeError formats the message and names the code", "[status]") {
  se::Status error = se::MakeError(se::ErrorCode::kOutOfRange, "{} bytes into {}", 40, "dst");
  CHECK_FALSE(error.ok());
  CHECK(error.message() == "40 bytes into dst");
  CHECK(error.ToString() == "OUT_OF_RANGE: 40 bytes into dst");
  CHECK(fmt::format("{}", error) == error.ToString());
}

TEST_CASE("the library's messages format the same with format strings checked or not", "[status]") {
  // This file is built twice: as this project builds (checked at compile
  // time) and as a consumer's build compiles the headers (unchecked).
  CHECK(se::detail::Format("{} of {:>4} at {:#x}", "copy", 16, 255u) == "copy of   16 at 0xff");
  const std::string name = "scale";
  const std::string_view device = "host:0";
  CHECK(se::MakeError(se::ErrorCode::kInvalidArgument, "kernel '{}' on {}: {} arguments", name, device, 3).message() ==
        "kernel 'scale' on host:0: 3 arguments");
  const std::string known_at_run_time = "{} of {}";
  CHECK(se::MakeError(se::ErrorCode::kInternal, fmt::runtime(known_at_run_time), 2, 3).message() == "2 of 3");
}

#if !STREAMEXECUTOR_CHECK_FORMAT_STRINGS
TEST_CASE("an unchecked format string that does not match its arguments still gives a message", "[status]") {
  // Checked builds reject this at compile time (compile_fail/format_string_mismatch.cpp);
  // unchecked, the error path must not throw.
  se::Status error = se::MakeError(se::ErrorCode::kInternal, "{} bytes into {}", 40);
  CHECK(error.code() == se::ErrorCode::kInternal);
  CHECK(error.message().starts_with("{} bytes into {} (format error: "));
  CHECK(se::detail::Format("{:d}", "text").starts_with("{:d} (format error: "));
}
#endif

TEST_CASE("StatusOr holds a value or the error", "[status]") {
  se::StatusOr<int> value = 7;
  REQUIRE(value.ok());
  CHECK(value.ValueOrDie() == 7);
  CHECK(*value == 7);

  se::StatusOr<int> error = se::Status(se::ErrorCode::kNotFound, "nothing");
  CHECK_FALSE(error.ok());
  CHECK(error.status().code() == se::ErrorCode::kNotFound);
  CHECK(std::move(error).value_or(3) == 3);

  se::StatusOr<int> wrongly_ok = se::Status();
  CHECK(wrongly_ok.status().code() == se::ErrorCode::kInternal);
}

namespace {
se::Status FailsAt(int step, int failing) {
  if (step == failing) return se::MakeError(se::ErrorCode::kInternal, "step {}", step);
  return {};
}
se::Status Chain(int failing) {
  STREAMEXECUTOR_RETURN_IF_ERROR(FailsAt(1, failing));
  STREAMEXECUTOR_RETURN_IF_ERROR(FailsAt(2, failing));
  return {};
}
}  // namespace

TEST_CASE("STREAMEXECUTOR_RETURN_IF_ERROR returns the first error", "[status]") {
  CHECK(Chain(0).ok());
  CHECK(Chain(2).message() == "step 2");
}

TEST_CASE("value_or works on lvalues and rvalues", "[status]") {
  const se::StatusOr<int> value(7);
  se::StatusOr<int> error(se::Status(se::ErrorCode::kNotFound, "nothing"));
  CHECK(value.value_or(3) == 7);
  CHECK(error.value_or(3) == 3);
  se::StatusOr<std::string> text(std::string("kept"));
  CHECK(text.value_or("fallback") == "kept");
  CHECK(text.value() == "kept");  // the lvalue form copies, it does not move out
}

TEST_CASE("the version macros agree with each other", "[status]") {
  STATIC_REQUIRE(STREAMEXECUTOR_VERSION == STREAMEXECUTOR_VERSION_MAJOR * 10000 + STREAMEXECUTOR_VERSION_MINOR * 100 +
                                               STREAMEXECUTOR_VERSION_PATCH);
}
