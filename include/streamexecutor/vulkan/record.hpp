// Device commands that a library writes itself (VkFFT's VkFFTAppend), recorded
// as one operation of a Vulkan stream: into the stream's next ring command
// buffer and submitted with its timeline's wait and signal, as a launch is, so
// that they run in stream order with everything else on the stream.
#pragma once

#include <cstdint>
#include <mutex>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/vulkan/runtime.hpp"

namespace streamexecutor::vulkan_detail {

// `record(VkCommandBuffer)` writes the commands and returns a Status. On
// success, the operation's value on the stream's timeline (s.timeline): the
// commands are done once it is reached. 0: nothing recorded, the stream had
// failed (later work is skipped, as on every backend). `record` runs with the
// stream's lock held: it must only record, never wait or submit.
template <typename Record>
StatusOr<std::uint64_t> RecordOnStream(StreamState& s, Record&& record) {
  if (s.Failed()) [[unlikely]]
    return std::uint64_t{0};
  std::lock_guard<StreamLock> lock(s.mutex);
  StatusOr<std::size_t> slot = BeginSlot(s);
  if (!slot.ok()) return slot.status();
  VkCommandBuffer commands = s.slots[slot.value()].commands;
  if (Status status = record(commands); !status.ok()) {
    // The slot stays free (value 0): its half-written commands are reset
    // before the ring reuses it.
    s.executor->api.vkEndCommandBuffer(commands);
    return status;
  }
  STREAMEXECUTOR_RETURN_IF_ERROR(FinishSlot(s, slot.value()));
  return s.last;
}

}  // namespace streamexecutor::vulkan_detail
