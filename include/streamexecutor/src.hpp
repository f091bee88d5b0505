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

#if defined(STREAMEXECUTOR_WITH_HOST)
STREAMEXECUTOR_BACKEND_INSTANTIATIONS(, ::streamexecutor::host)
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
STREAMEXECUTOR_BACKEND_INSTANTIATIONS(, ::streamexecutor::opencl)
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
STREAMEXECUTOR_BACKEND_INSTANTIATIONS(, ::streamexecutor::cuda)
#endif
