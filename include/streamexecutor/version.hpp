// The library's version, and the language check every header gets through
// core/status.hpp: the headers use concepts, so older standards would fail
// with pages of unrelated errors instead of this one line.
#pragma once

#if defined(_MSVC_LANG)
#define STREAMEXECUTOR_CPLUSPLUS _MSVC_LANG
#else
#define STREAMEXECUTOR_CPLUSPLUS __cplusplus
#endif
#if STREAMEXECUTOR_CPLUSPLUS < 202002L
#error "streamexecutor needs C++20 or later: compile with -std=c++20"
#endif
#undef STREAMEXECUTOR_CPLUSPLUS

#define STREAMEXECUTOR_VERSION_MAJOR 0
#define STREAMEXECUTOR_VERSION_MINOR 1
#define STREAMEXECUTOR_VERSION_PATCH 0
// major * 10000 + minor * 100 + patch, for #if comparisons.
#define STREAMEXECUTOR_VERSION \
  (STREAMEXECUTOR_VERSION_MAJOR * 10000 + STREAMEXECUTOR_VERSION_MINOR * 100 + STREAMEXECUTOR_VERSION_PATCH)
