// The objects behind the Vulkan backend's handles: the executor (one VkDevice
// and its compute queue), buffers, host-visible staging, timelines (a timeline
// semaphore each stream signals, one value per operation) and streams.
//
// A stream is a chain of values on its timeline: each operation waits for the
// stream's latest value and signals the next one. Device work is one
// vkQueueSubmit with its own command buffer; host work (callbacks, the host
// half of a copy to host memory) runs on the stream's worker thread, which
// waits for the value before it and signals its own with vkSignalSemaphore.
//
// No submission ever waits for a value that is not on the queue yet. Drivers
// run a queue's submissions in order (lavapipe has one queue thread), so a
// submission waiting for a host signal would hold every later submission of
// every stream back, and a callback that waits for another stream would wait
// forever. Instead, while host work of a stream is pending, the stream's later
// device work is held (recorded, not submitted) and the worker submits it
// once the host work has signalled; a wait for another stream's value that is
// not submitted yet becomes host work too (docs/vulkan.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/spin_lock.hpp"
#include "streamexecutor/detail/sticky_status.hpp"
#include "streamexecutor/detail/stored_callback.hpp"
#include "streamexecutor/vulkan/api.hpp"

namespace streamexecutor::vulkan_detail {

struct Executor;
struct StreamState;
struct Timeline;

// One allocation: a buffer bound to memory of its own.
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::uint64_t size = 0;
  void* mapped = nullptr;  // where the memory is host-visible (staging, pinned host memory)
  bool owned = true;       // false: adopted (AdoptDeviceMemory), the caller's to destroy
  int adoptions = 0;       // AdoptDeviceMemory calls that returned it and were not forgotten
  // Where a view's offset 0 is in the VkBuffer: 0, except for registered host
  // memory, whose buffer starts at the alignment below the caller's pointer.
  std::uint64_t base_offset = 0;
};

// A view's byte offset in its VkBuffer.
inline std::uint64_t BufferOffset(const DeviceMemoryBase& view) {
  return static_cast<const Buffer*>(view.opaque())->base_offset + view.offset();
}

struct MemoryTypes {
  std::uint32_t device = 0;    // device-local: allocations
  std::uint32_t upload = 0;    // host-visible, coherent: staging toward the device
  std::uint32_t readback = 0;  // host-visible, coherent, cached where the device has it: staging back
  std::uint32_t unified = 0;   // host-visible, coherent, device-local where the device has it (ReBAR, UMA)
  bool device_is_host_visible = false;
};

// A timeline semaphore, shared by a stream and the events recorded on it (an
// event outlives its stream's destruction). `submitted` is the highest value
// whose signal is on the queue or done: a submission may wait for values up
// to it without holding the queue.
struct Timeline {
  Executor* executor = nullptr;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  std::atomic<std::uint64_t> submitted{0};
  std::atomic<std::uint64_t> completed{0};  // last value read back, a cache
  std::atomic<int> references{1};

  void Reference() { references.fetch_add(1, std::memory_order_relaxed); }
  void Release();
  StatusOr<std::uint64_t> Read();
  Status Wait(std::uint64_t value, std::string_view what);
  bool Reached(std::uint64_t value) {
    if (completed.load(std::memory_order_acquire) >= value) return true;
    StatusOr<std::uint64_t> now = Read();
    return now.ok() && now.value() >= value;
  }
};

// Host-visible buffers for staging, in power-of-two classes, reused.
class StagingPool {
 public:
  static constexpr std::uint64_t kSmallest = 4096;
  StatusOr<Buffer> Acquire(Executor& executor, std::uint64_t bytes, bool readback);
  void Release(Executor& executor, Buffer buffer, bool readback);
  void Clear(Executor& executor);

 private:
  static std::size_t ClassOf(std::uint64_t bytes, std::uint64_t& capacity) {
    std::size_t index = 0;
    capacity = kSmallest;
    while (capacity < bytes) {
      capacity *= 2;
      ++index;
    }
    return index;
  }
  std::mutex mutex_;
  std::vector<Buffer> free_[2][48];
};

struct Executor {
  const InstanceApi* instance = nullptr;
  DeviceApi api;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
  // vkQueueSubmit: the queue is externally synchronized. A spin lock, held
  // for one driver call: a std::mutex pair cost the launch path 40 instructions.
  streamexecutor::detail::SpinLock queue_mutex;
  VkPhysicalDeviceProperties properties{};
  MemoryTypes memory_types;
  std::uint32_t timestamp_valid_bits = 0;
  std::uint32_t subgroup_size = 0;
  std::uint64_t max_allocation = 0;
  std::string label;  // "vulkan:0 (llvmpipe ...)"
  int ordinal = 0;
  StagingPool staging;
  std::mutex mutex;                    // the maps below
  std::map<void*, Buffer> pinned;      // HostAllocate'd memory, by host address
  std::map<void*, Buffer> registered;  // HostMemoryRegister'ed memory, imported (VK_EXT_external_memory_host)
  // Every allocation and adopted buffer by its VkBuffer: adopting one again
  // gives the same handle, which the core then refuses as already registered.
  std::map<VkBuffer, Buffer*> by_handle;
  std::uint64_t host_pointer_alignment = 0;  // 0: the device cannot import host memory
  // SPIR-V capabilities whose device feature this device lacks, with the feature's name.
  std::vector<std::pair<std::uint32_t, const char*>> missing_features;
  // Live streams, and allocations freed while work that may use them was
  // queued: each goes once every stream passed the value it had then.
  struct Deferred {
    Buffer buffer;              // destroyed once `until` is reached
    Buffer* wrapper = nullptr;  // deleted then (a DeviceMemoryBase's handle)
    // Or any other object queued work may use (a kernel's pipelines).
    void* object = nullptr;
    void (*destroy)(void* object) = nullptr;
    std::vector<std::pair<Timeline*, std::uint64_t>> until;
  };
  std::vector<Timeline*> idle_timelines;  // released, kept for reuse (Timeline::Release)
  std::mutex lists_mutex;
  std::vector<StreamState*> streams;
  std::vector<Deferred> deferred;

  Status Fail(std::string_view call, VkResult result, std::string_view what) const {
    return VkError(call, result, "{} on {}", what, label);
  }
};

// A timeline nobody uses goes back to its executor, not to the driver:
// lavapipe's queue thread still holds a semaphore's lock for a moment after
// the signal that a host wait has seen (found by TSan: a use after free in
// the driver), and a timeline can be reused as it is, its values only grow.
// The executor destroys them after vkDeviceWaitIdle when it closes.
inline void Timeline::Release() {
  if (references.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::lock_guard<std::mutex> lock(executor->mutex);
  try {
    executor->idle_timelines.push_back(this);
  } catch (...) {
    // Out of memory to keep it: leak the semaphore rather than risk the driver's race.
  }
}
inline StatusOr<std::uint64_t> Timeline::Read() {
  std::uint64_t value = 0;
  const VkResult result = executor->api.vkGetSemaphoreCounterValue(executor->device, semaphore, &value);
  if (result != VK_SUCCESS) return executor->Fail("vkGetSemaphoreCounterValue", result, "reading a stream's timeline");
  std::uint64_t seen = completed.load(std::memory_order_relaxed);
  while (seen < value && !completed.compare_exchange_weak(seen, value, std::memory_order_acq_rel)) {
  }
  return value;
}
inline Status Timeline::Wait(std::uint64_t value, std::string_view what) {
  if (completed.load(std::memory_order_acquire) >= value) return Status();
  VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &semaphore, &value};
  const VkResult result = executor->api.vkWaitSemaphores(executor->device, &info, UINT64_MAX);
  if (result != VK_SUCCESS) return executor->Fail("vkWaitSemaphores", result, what);
  std::uint64_t seen = completed.load(std::memory_order_relaxed);
  while (seen < value && !completed.compare_exchange_weak(seen, value, std::memory_order_acq_rel)) {
  }
  return Status();
}

inline StatusOr<Timeline*> CreateTimeline(Executor& executor) {
  {
    std::lock_guard<std::mutex> lock(executor.mutex);
    if (!executor.idle_timelines.empty()) {
      Timeline* reused = executor.idle_timelines.back();
      executor.idle_timelines.pop_back();
      reused->references.store(1, std::memory_order_relaxed);
      return reused;
    }
  }
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr, VK_SEMAPHORE_TYPE_TIMELINE, 0};
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
  VkSemaphore semaphore = VK_NULL_HANDLE;
  const VkResult result = executor.api.vkCreateSemaphore(executor.device, &info, nullptr, &semaphore);
  if (result != VK_SUCCESS) return executor.Fail("vkCreateSemaphore", result, "creating a timeline semaphore");
  auto* timeline = new Timeline();
  timeline->executor = &executor;
  timeline->semaphore = semaphore;
  return timeline;
}

// ---- Buffers -------------------------------------------------------------------

inline StatusOr<Buffer> CreateBuffer(Executor& e, std::uint64_t bytes, std::uint32_t memory_type, bool map,
                                     std::string_view what) {
  Buffer b;
  b.size = bytes;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = bytes == 0 ? 4 : bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult result = e.api.vkCreateBuffer(e.device, &info, nullptr, &b.buffer);
  if (result != VK_SUCCESS) return VkError("vkCreateBuffer", result, "{} of {} bytes on {}", what, bytes, e.label);
  VkMemoryRequirements requirements{};
  e.api.vkGetBufferMemoryRequirements(e.device, b.buffer, &requirements);
  if (!(requirements.memoryTypeBits & (1u << memory_type))) {
    e.api.vkDestroyBuffer(e.device, b.buffer, nullptr);
    return MakeError(ErrorCode::kInternal, "{} on {}: memory type {} cannot hold a buffer (allowed types {:#x})", what,
                     e.label, memory_type, requirements.memoryTypeBits);
  }
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, requirements.size, memory_type};
  result = e.api.vkAllocateMemory(e.device, &allocate, nullptr, &b.memory);
  if (result != VK_SUCCESS) {
    e.api.vkDestroyBuffer(e.device, b.buffer, nullptr);
    return VkError("vkAllocateMemory", result, "{} of {} bytes on {}", what, bytes, e.label);
  }
  result = e.api.vkBindBufferMemory(e.device, b.buffer, b.memory, 0);
  if (result == VK_SUCCESS && map) result = e.api.vkMapMemory(e.device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  if (result != VK_SUCCESS) {
    e.api.vkDestroyBuffer(e.device, b.buffer, nullptr);
    e.api.vkFreeMemory(e.device, b.memory, nullptr);
    return VkError(map ? "vkBindBufferMemory/vkMapMemory" : "vkBindBufferMemory", result, "{} of {} bytes on {}", what,
                   bytes, e.label);
  }
  return b;
}
inline void DestroyBuffer(Executor& e, Buffer& b) {
  if (!b.owned) {
    b = Buffer{};
    return;
  }
  if (b.buffer != VK_NULL_HANDLE) e.api.vkDestroyBuffer(e.device, b.buffer, nullptr);
  // Freeing mapped memory unmaps it.
  if (b.memory != VK_NULL_HANDLE) e.api.vkFreeMemory(e.device, b.memory, nullptr);
  b = Buffer{};
}

inline StatusOr<Buffer> StagingPool::Acquire(Executor& executor, std::uint64_t bytes, bool readback) {
  std::uint64_t capacity = 0;
  const std::size_t index = ClassOf(bytes, capacity);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Buffer>& list = free_[readback][index];
    if (!list.empty()) {
      Buffer b = list.back();
      list.pop_back();
      return b;
    }
  }
  return CreateBuffer(executor, capacity, readback ? executor.memory_types.readback : executor.memory_types.upload,
                      true, "a staging buffer");
}
inline void StagingPool::Release(Executor& executor, Buffer buffer, bool readback) {
  std::uint64_t capacity = 0;
  const std::size_t index = ClassOf(buffer.size, capacity);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Keep a few per class: enough for the copies in flight of a pipeline.
    std::vector<Buffer>& list = free_[readback][index];
    if (list.size() < 8) {
      list.push_back(buffer);
      return;
    }
  }
  DestroyBuffer(executor, buffer);
}
inline void StagingPool::Clear(Executor& executor) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& kind : free_) {
    for (std::vector<Buffer>& list : kind) {
      for (Buffer& b : list) DestroyBuffer(executor, b);
      list.clear();
    }
  }
}

// The pinned buffer holding [ptr, ptr + bytes) and the range's offset in it,
// if the range lies in HostAllocate'd or registered memory of this executor.
inline std::optional<std::pair<VkBuffer, std::uint64_t>> FindPinned(Executor& e, const void* ptr, std::uint64_t bytes) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(e.mutex);
  for (const std::map<void*, Buffer>* ranges : {&e.pinned, &e.registered}) {
    if (ranges->empty()) continue;
    auto it = ranges->upper_bound(const_cast<void*>(ptr));
    if (it == ranges->begin()) continue;
    --it;
    const auto start = reinterpret_cast<std::uintptr_t>(it->first);
    if (address - start <= it->second.size && bytes <= it->second.size - (address - start)) {
      return std::make_pair(it->second.buffer, it->second.base_offset + (address - start));
    }
  }
  return std::nullopt;
}

// ---- Streams -------------------------------------------------------------------

// One operation's command buffer and what it keeps alive until its value is
// reached: a staging buffer, a reference to a timeline it waits for.
struct Slot {
  VkCommandBuffer commands = VK_NULL_HANDLE;
  std::uint64_t value = 0;  // 0: free
  Buffer staging;
  bool staging_readback = false;
  Timeline* waited = nullptr;
};

// Device work recorded but held behind host work (see the top of this file).
struct HeldSubmit {
  VkCommandBuffer commands = VK_NULL_HANDLE;  // a slot's, or a command buffer's run
  Timeline* wait_timeline = nullptr;
  std::uint64_t wait_value = 0;
  std::uint64_t signal = 0;
};

// Host work: wait for `wait` on the stream's timeline, run, signal `signal`.
struct HostJob {
  std::uint64_t wait = 0;
  std::uint64_t signal = 0;
  streamexecutor::detail::StoredCallbackPtr callback{nullptr, nullptr};
  bool user = false;            // a user callback (skipped once the stream failed); else a copy's host half
  Timeline* foreign = nullptr;  // a wait for another stream's value, on the host
  std::uint64_t foreign_value = 0;
};

struct StreamEntry {
  bool host = false;
  HeldSubmit submit;
  HostJob job;
};

// Held for one enqueue (record and submit) or one step of the host thread;
// the host thread sleeps on a condition_variable_any over it.
using StreamLock = streamexecutor::detail::SpinLock;

struct StreamState {
  Executor* executor = nullptr;
  Timeline* timeline = nullptr;
  std::uint64_t last = 0;  // value of the latest operation enqueued
  VkCommandPool pool = VK_NULL_HANDLE;
  std::vector<Slot> slots;
  std::size_t next = 0;  // the oldest slot: reused first
  StreamLock mutex;      // enqueue and the worker's flush

  // Host work and what is held behind it, in stream order; the worker
  // drains it. Non-empty means later device work is held too.
  std::deque<StreamEntry> pending;
  std::condition_variable_any wake;
  std::thread worker;
  std::atomic<bool> stopping{false};
  std::atomic<std::thread::id> worker_id{};

  streamexecutor::detail::StickyStatus error;
  std::atomic<bool> failed{false};

  void Fail(Status status) {
    error.Fail(std::move(status));
    failed.store(true, std::memory_order_release);
  }
  bool Failed() const { return failed.load(std::memory_order_acquire); }
  Status CurrentError() const { return error.Get(); }
  bool OnWorker() const { return worker_id.load(std::memory_order_acquire) == std::this_thread::get_id(); }
};

// Frees what a slot kept once its value is reached. Caller holds the mutex.
inline void RecycleSlot(StreamState& s, Slot& slot) {
  if (slot.staging.buffer != VK_NULL_HANDLE) {
    s.executor->staging.Release(*s.executor, slot.staging, slot.staging_readback);
    slot.staging = Buffer{};
  }
  if (slot.waited != nullptr) std::exchange(slot.waited, nullptr)->Release();
  slot.value = 0;
}

// After a copy into host-visible memory the host will read: a semaphore or
// fence wait makes the device's writes visible to the device only; the host
// sees them after a barrier to the host stage (Vulkan spec, "Host Write
// Ordering Guarantees" and the host access scope).
inline void RecordHostReadBarrier(const Executor& e, VkCommandBuffer commands) {
  const VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                                VK_ACCESS_HOST_READ_BIT};
  e.api.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                             nullptr, 0, nullptr);
}

// A free slot with its command buffer begun. Caller holds the mutex.
[[gnu::always_inline]] inline StatusOr<std::size_t> BeginSlot(StreamState& s) {
  Executor& e = *s.executor;
  std::size_t index = s.next;
  bool reuse = index < s.slots.size();
  if (reuse && s.slots[index].value != 0 && !s.timeline->Reached(s.slots[index].value)) reuse = false;
  if (reuse) {
    // No vkResetCommandBuffer: the pool has RESET_COMMAND_BUFFER_BIT, so
    // vkBeginCommandBuffer below resets it (one driver call less per launch).
    RecycleSlot(s, s.slots[index]);
  } else {
    // The oldest is still running: a new slot goes just before it, so that
    // the ring stays in submission order.
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, s.pool,
                                     VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    Slot slot;
    if (const VkResult result = e.api.vkAllocateCommandBuffers(e.device, &info, &slot.commands); result != VK_SUCCESS)
      return e.Fail("vkAllocateCommandBuffers", result, "for a stream");
    s.slots.insert(s.slots.begin() + static_cast<std::ptrdiff_t>(index), slot);
  }
  s.next = (index + 1) % s.slots.size();
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                 VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
  if (const VkResult result = e.api.vkBeginCommandBuffer(s.slots[index].commands, &begin); result != VK_SUCCESS)
    return e.Fail("vkBeginCommandBuffer", result, "for a stream");
  return index;
}

// One vkQueueSubmit: wait for the stream's previous value (and another
// timeline's, for an event wait), run the commands, signal `signal`.
[[gnu::always_inline]] inline Status QueueSubmit(StreamState& s, const HeldSubmit& h) {
  Executor& e = *s.executor;
  VkSemaphore waits[2] = {s.timeline->semaphore, VK_NULL_HANDLE};
  std::uint64_t wait_values[2] = {h.signal - 1, 0};
  std::uint32_t wait_count = 1;
  if (h.wait_timeline != nullptr) {
    waits[1] = h.wait_timeline->semaphore;
    wait_values[1] = h.wait_value;
    wait_count = 2;
  }
  const VkPipelineStageFlags stages[2] = {VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT};
  VkTimelineSemaphoreSubmitInfo values{};
  values.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  values.waitSemaphoreValueCount = wait_count;
  values.pWaitSemaphoreValues = wait_values;
  values.signalSemaphoreValueCount = 1;
  values.pSignalSemaphoreValues = &h.signal;
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.pNext = &values;
  info.waitSemaphoreCount = wait_count;
  info.pWaitSemaphores = waits;
  info.pWaitDstStageMask = stages;
  info.commandBufferCount = h.commands != VK_NULL_HANDLE ? 1u : 0u;
  info.pCommandBuffers = &h.commands;
  info.signalSemaphoreCount = 1;
  info.pSignalSemaphores = &s.timeline->semaphore;
  VkResult result;
  {
    std::lock_guard<streamexecutor::detail::SpinLock> lock(e.queue_mutex);
    result = e.api.vkQueueSubmit(e.queue, 1, &info, VK_NULL_HANDLE);
  }
  if (result != VK_SUCCESS) return e.Fail("vkQueueSubmit", result, "submitting a stream's work");
  s.timeline->submitted.store(h.signal, std::memory_order_release);
  return Status();
}

// Signals `value` from the host, for work that ran (or was skipped) there.
inline Status HostSignal(StreamState& s, std::uint64_t value) {
  Executor& e = *s.executor;
  VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, s.timeline->semaphore, value};
  const VkResult result = e.api.vkSignalSemaphore(e.device, &info);
  if (result != VK_SUCCESS) return e.Fail("vkSignalSemaphore", result, "completing a stream's host work");
  s.timeline->submitted.store(value, std::memory_order_release);
  return Status();
}

// Destroys `buffer` (and deletes `wrapper`) once every stream of the executor
// has passed the value it has reached now: work already queued may use it,
// and freeing memory never blocks (docs/api.md, Deallocate).
inline void DestroyDeferred(Executor& e, Executor::Deferred& d) {
  DestroyBuffer(e, d.buffer);
  delete d.wrapper;
  if (d.destroy != nullptr) d.destroy(d.object);
}
inline void DestroyWhenIdle(Executor& e, Executor::Deferred deferred) {
  {
    std::lock_guard<std::mutex> lock(e.lists_mutex);
    for (StreamState* s : e.streams) {
      std::lock_guard<StreamLock> stream_lock(s->mutex);
      if (s->last == 0 || s->timeline->Reached(s->last)) continue;
      s->timeline->Reference();
      deferred.until.emplace_back(s->timeline, s->last);
    }
    if (!deferred.until.empty()) {
      try {
        e.deferred.push_back(std::move(deferred));
        return;
      } catch (...) {
        // Out of memory to defer: wait instead, below.
      }
    }
  }
  for (auto& [timeline, value] : deferred.until) {
    timeline->Wait(value, "freeing an object queued work may use").IgnoreError();
    timeline->Release();
  }
  DestroyDeferred(e, deferred);
}
inline void DestroyWhenIdle(Executor& e, Buffer buffer, Buffer* wrapper) {
  DestroyWhenIdle(e, Executor::Deferred{buffer, wrapper, nullptr, nullptr, {}});
}
// Destroys what DestroyWhenIdle deferred and is no longer used (all of it,
// waiting, when `wait`).
inline void ReclaimDeferred(Executor& e, bool wait = false) {
  std::vector<Executor::Deferred> done;
  {
    std::lock_guard<std::mutex> lock(e.lists_mutex);
    if (e.deferred.empty()) return;
    for (std::size_t i = 0; i < e.deferred.size();) {
      bool reached = true;
      for (auto& [timeline, value] : e.deferred[i].until) {
        if (wait) timeline->Wait(value, "freeing memory").IgnoreError();
        reached = reached && timeline->Reached(value);
      }
      if (reached || wait) {
        done.push_back(std::move(e.deferred[i]));
        e.deferred.erase(e.deferred.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  for (Executor::Deferred& d : done) {
    for (auto& entry : d.until) entry.first->Release();
    DestroyDeferred(e, d);
  }
}

void RunWorker(StreamState* s);

// Ends the slot's command buffer and submits it, or holds it behind pending
// host work. Caller holds the mutex. `wait` is another timeline's value to
// wait for (an event), already submitted.
[[gnu::always_inline]] inline Status FinishSlot(StreamState& s, std::size_t index, Timeline* wait = nullptr,
                                                std::uint64_t wait_value = 0) {
  Executor& e = *s.executor;
  Slot& slot = s.slots[index];
  if (const VkResult result = e.api.vkEndCommandBuffer(slot.commands); result != VK_SUCCESS)
    return e.Fail("vkEndCommandBuffer", result, "for a stream");
  HeldSubmit h{slot.commands, wait, wait_value, s.last + 1};
  if (wait != nullptr) {
    wait->Reference();
    slot.waited = wait;
  }
  if (!s.pending.empty()) {
    StreamEntry entry;
    entry.submit = h;
    s.pending.push_back(std::move(entry));
  } else {
    STREAMEXECUTOR_RETURN_IF_ERROR(QueueSubmit(s, h));
  }
  slot.value = h.signal;
  s.last = h.signal;
  return Status();
}

// Submits a command buffer's recorded run as the stream's next operation;
// `value` is its value on the stream's timeline (0: skipped, the stream failed).
inline Status SubmitCommands(StreamState& s, VkCommandBuffer commands, std::uint64_t& value) {
  std::lock_guard<StreamLock> lock(s.mutex);
  value = 0;
  if (s.Failed()) return Status();  // skipped after a failure, as on every backend
  HeldSubmit h{commands, nullptr, 0, s.last + 1};
  if (!s.pending.empty()) {
    StreamEntry entry;
    entry.submit = h;
    s.pending.push_back(std::move(entry));
  } else {
    STREAMEXECUTOR_RETURN_IF_ERROR(QueueSubmit(s, h));
  }
  s.last = h.signal;
  value = h.signal;
  return Status();
}

// Queues host work after everything enqueued so far. Caller holds the mutex.
inline Status EnqueueHost(StreamState& s, HostJob job) {
  if (!s.worker.joinable()) {
    try {
      s.worker = std::thread(&RunWorker, &s);
    } catch (const std::exception& ex) {
      return MakeError(ErrorCode::kResourceExhausted, "starting the host thread of a stream on {}: {}",
                       s.executor->label, ex.what());
    }
  }
  job.wait = s.last;
  job.signal = s.last + 1;
  StreamEntry entry;
  entry.host = true;
  entry.job = std::move(job);
  s.pending.push_back(std::move(entry));
  s.last += 1;
  s.wake.notify_one();
  return Status();
}

// The worker: host work in order, then the device work held behind it.
inline void RunWorker(StreamState* s) {
  s->worker_id.store(std::this_thread::get_id(), std::memory_order_release);
  std::unique_lock<StreamLock> lock(s->mutex);
  for (;;) {
    s->wake.wait(lock, [&] { return !s->pending.empty() || s->stopping.load(); });
    if (s->pending.empty()) return;  // stopping
    StreamEntry& front = s->pending.front();
    if (!front.host) {
      // Device work that was held: its host work before it has signalled.
      HeldSubmit h = front.submit;
      s->pending.pop_front();
      Status status = s->Failed() ? Status() : QueueSubmit(*s, h);
      if (s->Failed() || !status.ok()) {
        if (!status.ok()) s->Fail(std::move(status));
        HostSignal(*s, h.signal).IgnoreError();  // skipped: later waits must not hang
      }
      continue;
    }
    HostJob job = std::move(front.job);
    // The entry stays in `pending` while it runs, so that device work
    // enqueued meanwhile is held behind it.
    lock.unlock();
    Status status = s->timeline->Wait(job.wait, "waiting for a stream's earlier work on its host thread");
    if (status.ok() && job.foreign != nullptr) {
      status = job.foreign->Wait(job.foreign_value, "waiting for another stream's event on the host");
    }
    if (!status.ok()) {
      s->Fail(std::move(status));
    } else if (job.callback && !(job.user && s->Failed())) {
      job.callback->Invoke();
    }
    if (job.foreign != nullptr) job.foreign->Release();
    job.callback.reset();
    if (Status signal = HostSignal(*s, job.signal); !signal.ok()) s->Fail(std::move(signal));
    lock.lock();
    s->pending.pop_front();
    if (s->pending.empty()) s->wake.notify_all();  // SynchronizeStream's drain
  }
}

}  // namespace streamexecutor::vulkan_detail
