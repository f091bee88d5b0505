// The core templates plus the CUDA backend (driver API, loaded at run time).
#pragma once

#include "streamexecutor/core/command_buffer.hpp"
#include "streamexecutor/core/copy.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/free_functions.hpp"
#include "streamexecutor/core/multi_platform_manager.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/core/unified_memory.hpp"
#include "streamexecutor/cuda/backend.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

#if defined(STREAMEXECUTOR_SEPARATE_COMPILATION)
STREAMEXECUTOR_BACKEND_INSTANTIATIONS(extern, ::streamexecutor::cuda)
#endif
