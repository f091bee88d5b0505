// The core templates plus the OpenCL backend (se::opencl). The only public
// header that includes <CL/opencl.hpp>.
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
