// The compiled part of separate compilation (docs/separate_compilation.md):
// include this in exactly one .cpp of a project that defines
// STREAMEXECUTOR_SEPARATE_COMPILATION in every unit (this one too), with the
// same STREAMEXECUTOR_WITH_* backends. It defines the per-backend class
// instantiations and the out-of-line functions the other units only declare.
#pragma once

#if !defined(STREAMEXECUTOR_SEPARATE_COMPILATION)
#error \
    "<streamexecutor/src.hpp> is the compiled part of separate compilation: define STREAMEXECUTOR_SEPARATE_COMPILATION"
#endif
#define STREAMEXECUTOR_COMPILING_SEPARATE_PART 1

#include "streamexecutor/streamexecutor.hpp"

// Here, after every header: an explicit instantiation defines only the
// members defined before it.
#define STREAMEXECUTOR_DETAIL_INSTANTIATE(tag) STREAMEXECUTOR_BACKEND_INSTANTIATIONS(, ::streamexecutor::tag)
STREAMEXECUTOR_FOR_EACH_ENABLED_BACKEND(STREAMEXECUTOR_DETAIL_INSTANTIATE)
#undef STREAMEXECUTOR_DETAIL_INSTANTIATE
