// Process-wide singletons (Platform<B>, the CUDA driver table) live in inline
// or template statics. When two shared libraries built with
// -fvisibility=hidden both include these headers, each would otherwise get
// its own copy; marking them with default visibility makes the dynamic linker
// merge them into one per process.
#pragma once

#if defined(_WIN32)
#define STREAMEXECUTOR_EXPORT
#else
#define STREAMEXECUTOR_EXPORT __attribute__((visibility("default")))
#endif
