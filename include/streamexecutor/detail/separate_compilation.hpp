// Optional separate compilation (docs/separate_compilation.md). By
// default every function is inline and every unit that includes a backend
// compiles that backend's Platform, StreamExecutor and Stream again. A project
// that defines STREAMEXECUTOR_SEPARATE_COMPILATION everywhere, and compiles
// <streamexecutor/src.hpp> in one unit of its own, gets:
// - extern template declarations of those classes for each backend it
//   includes, so their members are compiled once, in that unit;
// - the set-up and error-reporting functions that are not templates
//   (program building, signature checks, device descriptions, error names)
//   as plain declarations, defined in that unit.
// The launch path stays inline in both modes: what a launch runs is the same.
#pragma once

#include "streamexecutor/detail/export.hpp"

// STREAMEXECUTOR_DECL goes before every function whose body sits under
// `#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE`: inline where every unit sees the
// body, a plain (exported) declaration and definition where only the
// library's unit does.
#if defined(STREAMEXECUTOR_SEPARATE_COMPILATION)
#define STREAMEXECUTOR_DECL STREAMEXECUTOR_EXPORT
#if defined(STREAMEXECUTOR_COMPILING_SEPARATE_PART)
#define STREAMEXECUTOR_DEFINE_OUT_OF_LINE 1
#else
#define STREAMEXECUTOR_DEFINE_OUT_OF_LINE 0
#endif
#else
#define STREAMEXECUTOR_DECL inline
#define STREAMEXECUTOR_DEFINE_OUT_OF_LINE 1
#endif

// Declares (extern) or defines the per-backend class instantiations; used at
// the end of each backend's header and in <streamexecutor/src.hpp>.
#define STREAMEXECUTOR_BACKEND_INSTANTIATIONS(KIND, B)     \
  KIND template class ::streamexecutor::Platform<B>;       \
  KIND template class ::streamexecutor::StreamExecutor<B>; \
  KIND template class ::streamexecutor::Stream<B>;         \
  KIND template class ::streamexecutor::Event<B>;          \
  KIND template class ::streamexecutor::Timer<B>;          \
  KIND template class ::streamexecutor::CommandBuffer<B>;
