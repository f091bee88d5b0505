// Every backend compiled into this build, se::EnabledBackends (their list)
// and se::MultiPlatformManager over them. The build (Meson dependency,
// pkg-config or CMake package) defines STREAMEXECUTOR_WITH_<NAME> for each
// backend it enables; a consumer that only adds include/ to its path gets
// the host backend.
#pragma once

#include "streamexecutor/core/backend_list.hpp"
#include "streamexecutor/core/command_buffer.hpp"
#include "streamexecutor/core/copy.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/free_functions.hpp"
#include "streamexecutor/core/multi_platform_manager.hpp"
#include "streamexecutor/core/stream.hpp"
#include "streamexecutor/core/unified_memory.hpp"
#include "streamexecutor/detail/preprocessor.hpp"

// ---- The registry --------------------------------------------------------------
// Every backend of the library: its tag (se::<tag>, the folder
// include/streamexecutor/<tag>/ and the public header <streamexecutor/<tag>.hpp>)
// and the macro with which a build enables it, in the order the
// MultiPlatformManager lists them. Adding a backend adds one line here and
// one include below (docs/architecture.md, "Adding a backend").
#define STREAMEXECUTOR_REGISTERED_BACKENDS(X, F)     \
  X(F, host, STREAMEXECUTOR_WITH_HOST)               \
  X(F, host_serial, STREAMEXECUTOR_WITH_HOST_SERIAL) \
  X(F, opencl, STREAMEXECUTOR_WITH_OPENCL)           \
  X(F, cuda, STREAMEXECUTOR_WITH_CUDA)               \
  X(F, vulkan, STREAMEXECUTOR_WITH_VULKAN)

#define STREAMEXECUTOR_DETAIL_OR_ENABLED(F, tag, flag) || STREAMEXECUTOR_DETAIL_IS_ON(flag)
#if !(0 STREAMEXECUTOR_REGISTERED_BACKENDS(STREAMEXECUTOR_DETAIL_OR_ENABLED, ~))
#define STREAMEXECUTOR_WITH_HOST 1
#endif

#if defined(STREAMEXECUTOR_WITH_HOST)
#include "streamexecutor/host.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_HOST_SERIAL)
#include "streamexecutor/host_serial.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "streamexecutor/opencl.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
#include "streamexecutor/cuda.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_VULKAN)
#include "streamexecutor/vulkan.hpp"
#endif

// STREAMEXECUTOR_FOR_EACH_ENABLED_BACKEND(F) expands to F(tag) for each
// backend this build enabled, in registry order.
#define STREAMEXECUTOR_DETAIL_IF_ENABLED(F, tag, flag) STREAMEXECUTOR_DETAIL_WHEN(flag)(F(tag))
#define STREAMEXECUTOR_FOR_EACH_ENABLED_BACKEND(F) \
  STREAMEXECUTOR_REGISTERED_BACKENDS(STREAMEXECUTOR_DETAIL_IF_ENABLED, F)

namespace streamexecutor {

#define STREAMEXECUTOR_DETAIL_LIST_ENTRY(tag) , ::streamexecutor::tag
// Every backend compiled into this program, as a BackendList.
using EnabledBackends =
    detail::DropLeadingVoid<void STREAMEXECUTOR_FOR_EACH_ENABLED_BACKEND(STREAMEXECUTOR_DETAIL_LIST_ENTRY)>::type;
#undef STREAMEXECUTOR_DETAIL_LIST_ENTRY

namespace detail {
template <typename... Backends>
using ManagerOf = BasicMultiPlatformManager<Backends...>;
}  // namespace detail

// Every backend compiled into this program, found by type or by name.
using MultiPlatformManager = EnabledBackends::Apply<detail::ManagerOf>;

}  // namespace streamexecutor
