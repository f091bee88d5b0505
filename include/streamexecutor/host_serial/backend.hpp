// se::host_serial — the CPU as a device that runs every operation on the
// thread that enqueues it, when it is enqueued: launches run their blocks in
// order, callbacks run before ThenDoHostCallback returns, and nothing is left
// queued unless a stream waits for an event that has not completed yet (its
// work then runs on the thread that completes that event). For stepping
// through kernels in a debugger and for reproducing a bug without threads,
// as Kokkos::Serial and alpaka's serial accelerator are used. It is se::host's
// machinery (include/streamexecutor/host/) with a pool that has no workers;
// see docs/host_serial.md for what differs.
#pragma once

#include <string_view>

#include "streamexecutor/core/untyped_launch.hpp"
#include "streamexecutor/host/backend.hpp"

namespace streamexecutor {
namespace host_serial_detail {

struct Traits {
  static constexpr std::string_view kName = "host_serial";
  static constexpr bool kSerial = true;
  // The canned families have no host_serial library: none is chosen, and
  // their operations report UNAVAILABLE naming the backend.
  static PluginConfig DefaultPlugins() { return PluginConfig(); }
};

}  // namespace host_serial_detail

// Exported so that Platform<host_serial> is one per process across shared libraries.
struct STREAMEXECUTOR_EXPORT host_serial : host_detail::HostBackend<host_serial_detail::Traits> {};

static_assert(Backend<host_serial>);
static_assert(UnifiedMemoryBackend<host_serial>);
static_assert(PinnedMemoryBackend<host_serial>);
static_assert(ForeignWaitBackend<host_serial> && EventNotifyBackend<host_serial>);
static_assert(CommandBufferBackend<host_serial>);
static_assert(CommandBufferUpdateBackend<host_serial>);
static_assert(CommandBufferCloneBackend<host_serial> && CommandBufferNestingBackend<host_serial>);
static_assert(CommandBufferConditionalBackend<host_serial>);
static_assert(UntypedLaunchBackend<host_serial>);
static_assert(StreamMemoryOperationBackend<host_serial>);
static_assert(IpcMemoryBackend<host_serial> && IpcEventBackend<host_serial>);
// No workers to take streams in an order: each operation runs on the thread that enqueues it.
static_assert(!StreamPriorityBackend<host_serial>);
static_assert(Capabilities<host_serial>::kRunsOnEnqueue);

}  // namespace streamexecutor

// Native objects and kernel attributes: se::host's, which cover both.
#include "streamexecutor/host/interop.hpp"
#include "streamexecutor/host/occupancy.hpp"
