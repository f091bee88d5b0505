// Every backend compiled into this build, and se::MultiPlatformManager over
// them. The build (Meson dependency, pkg-config or CMake package) defines
// STREAMEXECUTOR_WITH_HOST / _OPENCL / _CUDA for the backends it enables; a
// consumer that only adds include/ to its path gets the host backend.
#pragma once

#if !defined(STREAMEXECUTOR_WITH_HOST) && !defined(STREAMEXECUTOR_WITH_OPENCL) && !defined(STREAMEXECUTOR_WITH_CUDA)
#define STREAMEXECUTOR_WITH_HOST 1
#endif

#include "streamexecutor/core/command_buffer.hpp"
#include "streamexecutor/core/copy.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/free_functions.hpp"
#include "streamexecutor/core/multi_platform_manager.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/core/unified_memory.hpp"

#if defined(STREAMEXECUTOR_WITH_HOST)
#include "streamexecutor/host.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "streamexecutor/opencl.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
#include "streamexecutor/cuda.hpp"
#endif

namespace streamexecutor {

namespace detail {
template <typename... Backends>
struct BackendList {
  template <typename B>
  using With = BackendList<Backends..., B>;
  using Manager = BasicMultiPlatformManager<Backends...>;
};
#if defined(STREAMEXECUTOR_WITH_HOST)
using WithHost = BackendList<>::With<host>;
#else
using WithHost = BackendList<>;
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
using WithOpenCL = WithHost::With<opencl>;
#else
using WithOpenCL = WithHost;
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
using EnabledBackends = WithOpenCL::With<cuda>;
#else
using EnabledBackends = WithOpenCL;
#endif
}  // namespace detail

// Every backend compiled into this program, found by type or by name.
using MultiPlatformManager = detail::EnabledBackends::Manager;

}  // namespace streamexecutor
