// The core templates plus the serial host backend (se::host_serial): every
// operation runs on the enqueueing thread (include/streamexecutor/host_serial/).
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
#include "streamexecutor/host_serial/backend.hpp"

#if defined(STREAMEXECUTOR_SEPARATE_COMPILATION)
STREAMEXECUTOR_BACKEND_INSTANTIATIONS(extern, ::streamexecutor::host_serial)
#endif
