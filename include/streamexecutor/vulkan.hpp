// The core templates plus the Vulkan backend (se::vulkan), over the Vulkan C
// API opened at run time (<vulkan/vulkan.h> for its types), SPIRV-Cross's C
// API and SPIRV-Tools' validator for the kernels' signature check.
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
#include "streamexecutor/vulkan/backend.hpp"

#if defined(STREAMEXECUTOR_SEPARATE_COMPILATION)
STREAMEXECUTOR_BACKEND_INSTANTIATIONS(extern, ::streamexecutor::vulkan)
#endif
