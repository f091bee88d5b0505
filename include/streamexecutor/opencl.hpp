// The core templates plus the OpenCL backend (se::opencl), over the OpenCL C
// API: <CL/cl.h>, from opencl/errors.hpp. No header of ours includes CLHPP's
// <CL/opencl.hpp>; a consumer who wants it includes it after this one.
#pragma once

#include "streamexecutor/core/command_buffer.hpp"
#include "streamexecutor/core/copy.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/free_functions.hpp"
#include "streamexecutor/core/multi_platform_manager.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/core/unified_memory.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"
#include "streamexecutor/opencl/backend.hpp"

#if defined(STREAMEXECUTOR_SEPARATE_COMPILATION)
STREAMEXECUTOR_BACKEND_INSTANTIATIONS(extern, ::streamexecutor::opencl)
#endif
