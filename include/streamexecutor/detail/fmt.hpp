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

#include <fmt/format.h>
