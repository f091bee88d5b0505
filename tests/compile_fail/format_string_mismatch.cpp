// expect: basic_format_string
// Built as this project builds (STREAMEXECUTOR_CHECK_FORMAT_STRINGS=1), a
// library format string that does not match its arguments does not compile.
#define STREAMEXECUTOR_CHECK_FORMAT_STRINGS 1
#include <streamexecutor/core/status.hpp>
namespace se = streamexecutor;
se::Status f(int bytes) { return se::MakeError(se::ErrorCode::kInvalidArgument, "{} bytes into {}", bytes); }
