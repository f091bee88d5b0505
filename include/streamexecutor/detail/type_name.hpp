// Human-readable type names for error messages, taken from the compiler's
// pretty function signature so that no RTTI or demangler is needed.
#pragma once

#include <cstddef>
#include <string_view>

namespace streamexecutor::detail {

template <typename T>
constexpr std::string_view PrettyTypeName() {
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

// clang writes "float *" where g++ writes "float*"; messages (and the tests
// that read them) spell a type one way whichever compiler built the program.
template <std::size_t N>
struct SpelledTypeName {
  char text[N + 1] = {};
  std::size_t size = 0;
};

template <typename T>
constexpr auto SpellTypeName() {
  constexpr std::string_view pretty = PrettyTypeName<T>();
  SpelledTypeName<pretty.size()> name;
  for (std::size_t i = 0; i < pretty.size(); ++i) {
    const bool before_declarator = i + 1 < pretty.size() && (pretty[i + 1] == '*' || pretty[i + 1] == '&');
    if (pretty[i] == ' ' && before_declarator) continue;
    name.text[name.size++] = pretty[i];
  }
  return name;
}

template <typename T>
inline constexpr auto kSpelledTypeName = SpellTypeName<T>();

template <typename T>
constexpr std::string_view TypeName() {
  return std::string_view(kSpelledTypeName<T>.text, kSpelledTypeName<T>.size);
}

}  // namespace streamexecutor::detail
