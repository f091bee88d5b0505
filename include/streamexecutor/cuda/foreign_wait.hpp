// Waits between the CUDA backend and the others (ForeignWaitBackend and
// EventNotifyBackend in core/backend.hpp), on the driver's own mechanisms so
// that no thread waits:
//
// - A CUDA stream waiting on another backend's event waits on a word of
//   pinned, device-mapped host memory (cuStreamWaitValue32); the other
//   backend's release stores the value that lets it pass. Each stream takes
//   a ring of such words from its executor: wait number i uses word i % N and
//   waits for the value i itself, and after each wait the stream writes i to
//   a progress word (cuStreamWriteValue32). A word is reused only once the
//   progress shows the GPU passed its previous wait, and a late store of an
//   old number never lets a newer wait pass.
// - A CUDA event lifts another backend's wait from a host function queued,
//   behind a wait on the event, on a stream made for it and destroyed at once
//   (the driver releases it when its work is done). One stream per
//   notification: a shared one would make each notification wait for every
//   earlier one.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"

namespace streamexecutor::cuda_detail {

struct WaitRing {
  static constexpr std::uint32_t kWords = 1023;  // plus the progress word: one 4 KiB page
  std::uint32_t* host = nullptr;                 // kWords slots, then the progress word
  CUdeviceptr device = 0;
  std::uint32_t next = 0;  // number of the latest wait queued through this ring

  std::uint32_t Progress() const {
    return std::atomic_ref<std::uint32_t>(host[kWords]).load(std::memory_order_acquire);
  }
};

// The rings of one executor. Rings are never freed before the executor
// closes: a release may store into its word after the waiting stream is gone.
struct WaitRings {
  std::mutex mutex;
  std::vector<WaitRing*> idle;
  std::vector<std::unique_ptr<WaitRing>> all;

  // A ring for a stream, made on first use. Called in the stream's context.
  StatusOr<WaitRing*> Take(const DriverApi& api, int ordinal) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!idle.empty()) {
      WaitRing* ring = idle.back();
      idle.pop_back();
      return ring;
    }
    auto ring = std::make_unique<WaitRing>();
    void* host = nullptr;
    const std::size_t bytes = (WaitRing::kWords + 1) * sizeof(std::uint32_t);
    if (const CUresult r = api.cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
        r != CUDA_SUCCESS) {
      return api.Error(r, "cuMemHostAlloc", "of {} bytes of wait words for waits on other backends on cuda:{}", bytes,
                       ordinal);
    }
    ring->host = static_cast<std::uint32_t*>(host);
    for (std::uint32_t i = 0; i <= WaitRing::kWords; ++i) ring->host[i] = 0;
    if (const CUresult r = api.cuMemHostGetDevicePointer(&ring->device, host, 0); r != CUDA_SUCCESS) {
      api.cuMemFreeHost(host);
      return api.Error(r, "cuMemHostGetDevicePointer", "of the wait words on cuda:{}", ordinal);
    }
    all.push_back(std::move(ring));
    return all.back().get();
  }
  // Back from a stream that has synchronized: its waits have all passed.
  void Give(WaitRing* ring) {
    std::lock_guard<std::mutex> lock(mutex);
    idle.push_back(ring);  // cannot throw: `all` holds as many as ever taken
  }
  // At executor close, in its context.
  void FreeAll(const DriverApi& api) {
    for (auto& ring : all) api.cuMemFreeHost(ring->host);
    all.clear();
    idle.clear();
  }
};

struct WaitWord {
  std::uint32_t* word;
  std::uint32_t value;
};
inline void StoreWaitWord(void* context) noexcept {
  const std::unique_ptr<WaitWord> release(static_cast<WaitWord*>(context));
  std::atomic_ref<std::uint32_t>(*release->word).store(release->value, std::memory_order_release);
}

// Queues the wait on `stream` (in its context) and returns its release.
inline StatusOr<op::ForeignRelease> QueueForeignWait(const DriverApi& api, CUstream stream, WaitRing& ring,
                                                     int ordinal) {
  if (api.cuStreamWaitValue32 == nullptr || api.cuStreamWriteValue32 == nullptr) {
    return MakeError(ErrorCode::kUnimplemented,
                     "ThenWaitFor (another backend) on cuda:{}: the driver (version {}) has no stream memory "
                     "operations (cuStreamWaitValue32, CUDA 11.7)",
                     ordinal, api.driver_version);
  }
  const std::uint32_t number = ring.next + 1;
  const std::uint32_t slot = number % WaitRing::kWords;
  // The wait that used this word last, number - kWords, must have passed.
  if (number > WaitRing::kWords && static_cast<std::int32_t>(ring.Progress() - (number - WaitRing::kWords)) < 0) {
    return MakeError(ErrorCode::kResourceExhausted,
                     "ThenWaitFor (another backend) on cuda:{}: {} waits on other backends are already pending on this "
                     "stream; synchronize it before queueing more",
                     ordinal, WaitRing::kWords);
  }
  auto* release = new (std::nothrow) WaitWord{ring.host + slot, number};
  if (release == nullptr) {
    return MakeError(ErrorCode::kResourceExhausted, "ThenWaitFor (another backend) on cuda:{}: out of memory", ordinal);
  }
  const CUdeviceptr word = ring.device + slot * sizeof(std::uint32_t);
  if (const CUresult r = api.cuStreamWaitValue32(stream, word, number, CU_STREAM_WAIT_VALUE_GEQ); r != CUDA_SUCCESS) {
    delete release;
    return api.Error(r, "cuStreamWaitValue32", "waiting on another backend on cuda:{}", ordinal);
  }
  ring.next = number;
  const CUdeviceptr progress = ring.device + WaitRing::kWords * sizeof(std::uint32_t);
  if (const CUresult r = api.cuStreamWriteValue32(stream, progress, number, 0); r != CUDA_SUCCESS) {
    // The wait is queued and cannot be taken back: let it pass now, and fail
    // the stream with the error, rather than leave it to hang.
    StoreWaitWord(release);
    return api.Error(r, "cuStreamWriteValue32", "after a wait on another backend on cuda:{}", ordinal);
  }
  return op::ForeignRelease{&StoreWaitWord, release};
}

// The host function that lifts another backend's wait. Whatever the release
// does, it makes no CUDA call (CUDA forbids them in host functions).
inline void CUDA_CB FireForeignRelease(void* context) {
  const std::unique_ptr<op::ForeignRelease> release(static_cast<op::ForeignRelease*>(context));
  (*release)();
}

// Lifts `release` when `event`'s latest recording has run (at once if it was
// never recorded: a wait on such an event is a no-op in CUDA). Called in the
// event's context.
inline Status NotifyForeign(const DriverApi& api, CUevent event, int ordinal, op::ForeignRelease release) {
  CUstream notifier = nullptr;
  if (const CUresult r = api.cuStreamCreate(&notifier, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
    return api.Error(r, "cuStreamCreate", "for another backend's wait on an event of cuda:{}", ordinal);
  }
  Status status;
  auto* box = new (std::nothrow) op::ForeignRelease(release);
  if (box == nullptr) {
    status = MakeError(ErrorCode::kResourceExhausted,
                       "ThenWaitFor on an event of cuda:{}: out of memory to register the waiter", ordinal);
  } else if (const CUresult r = api.cuStreamWaitEvent(notifier, event, 0); r != CUDA_SUCCESS) {
    delete box;
    status = api.Error(r, "cuStreamWaitEvent", "for another backend's wait on an event of cuda:{}", ordinal);
  } else if (const CUresult h = api.cuLaunchHostFunc(notifier, &FireForeignRelease, box); h != CUDA_SUCCESS) {
    delete box;
    status = api.Error(h, "cuLaunchHostFunc", "for another backend's wait on an event of cuda:{}", ordinal);
  }
  // Returns at once; the driver frees the stream once the host function ran.
  api.cuStreamDestroy(notifier);
  return status;
}

}  // namespace streamexecutor::cuda_detail
