// Human-readable type names for error messages, taken from the compiler's
// pretty function signature so that no RTTI or demangler is needed.
#pragma once

#include <string_view>

namespace streamexecutor::detail {

template <typename T>
constexpr std::string_view TypeName() {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view full = __PRETTY_FUNCTION__;
  constexpr std::string_view key = "T = ";
  constexpr auto start = full.find(key) + key.size();
  constexpr auto end = full.find_first_of(";]", start);
  return full.substr(start, end - start);
#else
  return "<type>";
#endif
}

}  // namespace streamexecutor::detail
