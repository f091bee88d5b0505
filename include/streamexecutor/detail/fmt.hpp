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
