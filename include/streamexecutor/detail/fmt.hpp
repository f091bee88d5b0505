// {fmt}, usable from CUDA translation units too. fmt 9 under nvcc: its
// consteval format-string check cannot be evaluated by nvcc's front end, and
// its "no constexpr under __NVCC__" fallback does not compile with g++ 12 in
// C++20 mode. So under nvcc we keep constexpr and check format strings at run
// time (the host compiler's own builds still check them at compile time).
#pragma once

#if defined(__CUDACC__) && !defined(FMT_CONSTEVAL)
#define FMT_CONSTEVAL
#endif
#if defined(__CUDACC__) && !defined(FMT_USE_CONSTEXPR)
#define FMT_USE_CONSTEXPR 1
#endif

// g++ 12 at -O3 reports a false -Wstringop-overflow inside fmt 9's fill
// parser (fill_t::operator=, reached from formatter<string_view>::parse) in
// every unit that formats a string, which -Werror turns into a failed build
// of the consumer's code. fmt 10 rewrote that parser; until then the warning
// is off for fmt's own code, which is the only code this region covers.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include <fmt/format.h>
#pragma GCC diagnostic pop
#else
#include <fmt/format.h>
#endif

#include <string>
#include <type_traits>
#include <utility>

namespace streamexecutor::detail {

// The library's messages are formatted through Format (and MakeError): one
// non-template vformat for all of them. fmt::format_string checks a format
// string against its arguments with a consteval parse instantiated for every
// list of argument types, which made up most of fmt's share of a consumer's
// compile time (issue 30). The check runs where it finds our mistakes, in
// this project's own builds (STREAMEXECUTOR_CHECK_FORMAT_STRINGS=1, set by
// meson.build for its tests, examples and benchmarks); a consumer's build
// takes the strings as they are, unless it sets the macro too.
#if defined(STREAMEXECUTOR_CHECK_FORMAT_STRINGS) && STREAMEXECUTOR_CHECK_FORMAT_STRINGS && !defined(__CUDACC__)
template <typename... Args>
using FormatString = fmt::format_string<Args...>;
#else
template <typename... Args>
struct UncheckedFormatString {
  template <typename S>
    requires std::is_convertible_v<const S&, fmt::string_view>
  constexpr UncheckedFormatString(const S& s) : view(s) {}  // NOLINT(google-explicit-constructor): as fmt's
  // fmt::runtime(string), which a checked build needs for a string known only at run time.
  template <typename R>
    requires(!std::is_convertible_v<const R&, fmt::string_view> &&
             std::is_convertible_v<decltype(std::declval<const R&>().str), fmt::string_view>)
  constexpr UncheckedFormatString(const R& runtime) : view(runtime.str) {}  // NOLINT(google-explicit-constructor)
  constexpr operator fmt::string_view() const { return view; }  // NOLINT(google-explicit-constructor): as fmt's
  fmt::string_view view;
};
template <typename... Args>
using FormatString = UncheckedFormatString<std::type_identity_t<Args>...>;
#endif

// Either kind of format string (both convert), as vformat takes it.
template <typename F>
fmt::string_view FormatView(const F& format) {
  return format;
}

// A string that does not match its arguments (only possible unchecked) gives
// the string and fmt's complaint, not an exception out of an error path.
[[gnu::cold, gnu::noinline]] inline std::string VFormat(fmt::string_view format, fmt::format_args args) {
#if FMT_EXCEPTIONS
  try {
    return fmt::vformat(format, args);
  } catch (const fmt::format_error& e) {
    return std::string(format.data(), format.size()) + " (format error: " + e.what() + ")";
  }
#else
  return fmt::vformat(format, args);
#endif
}

template <typename... Args>
std::string Format(FormatString<Args...> format, Args&&... args) {
  return VFormat(FormatView(format), fmt::make_format_args(args...));
}

}  // namespace streamexecutor::detail
