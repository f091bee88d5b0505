// Waits between backends (core/foreign_wait.hpp) on Vulkan.
//
// A Vulkan stream waiting for another backend's event: the stream's host
// thread waits for a gate, opened by the other backend's release; the device
// work behind it is held until then (runtime.hpp), so the queue never waits
// for a host signal.
//
// Another backend waiting for a Vulkan event: Vulkan has no completion
// callback, so one notifier thread per executor waits for every pending
// (timeline, value) at once (vkWaitSemaphores with VK_SEMAPHORE_WAIT_ANY_BIT,
// plus a semaphore of its own that wakes it for new entries) and fires each
// release when its value is reached. One thread per executor, not per wait.
// With nothing pending it waits on a condition variable, outside the driver:
// executors live until the process ends, and at exit the driver tears down
// its own state (lavapipe's LLVM) while this thread still runs, so an idle
// notifier must make no Vulkan call (a vkWaitSemaphores timing out then
// crashed `generic vulkan (validation)` after every case had passed). With
// something pending at exit, the thread is inside vkWaitSemaphores: an exit
// handler takes every notifier out of the driver first (Notifier::LeaveAll).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#endif

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/vulkan/runtime.hpp"

namespace streamexecutor::vulkan_detail {

// Opened once by the other backend's release; the stream's host thread waits.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened_cv;
  bool opened = false;

  static void Open(void* context) noexcept {
    auto* gate = static_cast<Gate*>(context);
    {
      std::lock_guard<std::mutex> lock(gate->mutex);
      gate->opened = true;
    }
    gate->opened_cv.notify_all();
  }
  void WaitOpen() {
    std::unique_lock<std::mutex> lock(mutex);
    opened_cv.wait(lock, [&] { return opened; });
  }
};

inline Status WaitForGate(StreamState& s, op::ForeignRelease& release) {
  auto gate = std::make_shared<Gate>();
  HostJob job;
  try {
    job.callback = streamexecutor::detail::StoredCallback::Make([gate] { gate->WaitOpen(); });
  } catch (...) {
    return MakeError(ErrorCode::kResourceExhausted, "waiting on another backend on {}: out of host memory",
                     s.executor->label);
  }
  // The release may come after the stream (and its job) are gone: it holds
  // its own reference, dropped when it fires.
  auto* held = new (std::nothrow) std::shared_ptr<Gate>(gate);
  if (held == nullptr) {
    return MakeError(ErrorCode::kResourceExhausted, "waiting on another backend on {}: out of host memory",
                     s.executor->label);
  }
  std::lock_guard<StreamLock> lock(s.mutex);
  if (Status status = EnqueueHost(s, std::move(job)); !status.ok()) {
    delete held;
    return status;
  }
  release = op::ForeignRelease{[](void* context) noexcept {
                                 auto* reference = static_cast<std::shared_ptr<Gate>*>(context);
                                 Gate::Open(reference->get());
                                 delete reference;
                               },
                               held};
  return Status();
}

class Notifier {
 public:
  explicit Notifier(Executor& executor) : executor_(executor) {}
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;
  ~Notifier() {
    Stop();
    const std::lock_guard<std::mutex> lock(LiveMutex());
    std::erase(Live(), this);
  }

  // Fires `release` once `timeline` reaches `value` (referenced until then).
  Status Add(Timeline* timeline, std::uint64_t value, op::ForeignRelease release) {
    // Known to the exit handler before the thread can exist. Outside mutex_:
    // the handler takes the registry's lock, then each notifier's.
    if (!registered_.load(std::memory_order_acquire)) {
      if (Status registered = RegisterForExit(); !registered.ok()) return registered;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "waiting for a Vulkan event of {} from another backend: the process is exiting, and the "
                       "event notifier has stopped",
                       executor_.label);
    }
    if (wake_ == nullptr) {
      StatusOr<Timeline*> wake = CreateTimeline(executor_);
      if (!wake.ok()) return wake.status();
      wake_ = wake.value();
      // A reused timeline goes on from the value it reached.
      StatusOr<std::uint64_t> start = wake_->Read();
      if (!start.ok()) {
        wake_->Release();
        wake_ = nullptr;
        return start.status();
      }
      wake_value_ = start.value();
      try {
        thread_ = std::thread(&Notifier::Run, this);
      } catch (const std::exception& e) {
        wake_->Release();
        wake_ = nullptr;
        return MakeError(ErrorCode::kResourceExhausted, "starting the event notifier of {}: {}", executor_.label,
                         e.what());
      }
    }
    try {
      entries_.push_back({timeline, value, release});
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "notifying another backend on {}: out of host memory",
                       executor_.label);
    }
    timeline->Reference();
    WakeLocked();
    return Status();
  }

  void Stop() {
    if (!EndThread()) return;
    for (Entry& entry : entries_) {
      entry.release();  // the executor is closing: never leave a waiter hanging
      entry.timeline->Release();
    }
    entries_.clear();
    wake_->Release();
    wake_ = nullptr;
  }

  // The exit handler: executors live until the process ends, and the driver
  // tears its state down in exit handlers of its own (lavapipe: LLVM's). This
  // one is registered when the first notifier starts, after the driver was
  // loaded, so it runs before them: each thread leaves vkWaitSemaphores and
  // ends. What is still pending stays so: releasing it now would run other
  // backends' work while the process exits.
  static void LeaveAll() noexcept {
    const std::lock_guard<std::mutex> lock(LiveMutex());
    for (Notifier* notifier : Live()) notifier->EndThread();
  }

 private:
  // Never destroyed: the exit handler reads them after static destructors
  // may have run.
  static std::mutex& LiveMutex() {
    static auto* const mutex = new std::mutex();
    return *mutex;
  }
  static std::vector<Notifier*>& Live() {
    static auto* const live = new std::vector<Notifier*>();
    return *live;
  }
  Status RegisterForExit() {
    static const bool handler = std::atexit(&Notifier::LeaveAll) == 0;
    if (!handler) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "starting the event notifier of {}: std::atexit refused its exit handler", executor_.label);
    }
    const std::lock_guard<std::mutex> lock(LiveMutex());
    if (std::find(Live().begin(), Live().end(), this) == Live().end()) {
      try {
        Live().push_back(this);
      } catch (...) {
        return MakeError(ErrorCode::kResourceExhausted, "starting the event notifier of {}: out of host memory",
                         executor_.label);
      }
    }
    registered_.store(true, std::memory_order_release);
    return Status();
  }
  // Ends the thread (Stop, and the exit handler before it); false if it
  // never started. Entries stay: Stop releases them, the exit leaves them.
  bool EndThread() noexcept {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (wake_ == nullptr) return false;
      if (!stopping_) {
        stopping_ = true;
        WakeLocked();
      }
    }
    if (thread_.joinable()) {
      if (thread_.get_id() == std::this_thread::get_id()) {
        thread_.detach();  // exit() called from a release: the thread ends when this returns
      } else {
        thread_.join();
      }
    }
    return true;
  }

  struct Entry {
    Timeline* timeline;
    std::uint64_t value;
    op::ForeignRelease release;
  };

  void WakeLocked() {
    ++wake_value_;
    VkSemaphoreSignalInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
    info.semaphore = wake_->semaphore;
    info.value = wake_value_;
    executor_.api.vkSignalSemaphore(executor_.device, &info);
    pending_cv_.notify_one();  // the thread may be idle, outside the driver
  }

  void Run() {
#if defined(__linux__)
    // Named for debuggers and profilers, and for the test that checks the
    // thread is gone before the driver's exit handlers run.
    pthread_setname_np(pthread_self(), "se-vk-notifier");
#endif
    std::vector<VkSemaphore> semaphores;
    std::vector<std::uint64_t> values;
    std::vector<Entry> fired;
    for (;;) {
      std::uint64_t seen = 0;
      bool idle = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        pending_cv_.wait(lock, [&] { return stopping_ || !entries_.empty(); });
        if (stopping_) return;
        seen = wake_value_;
        // Fire what is reached; wait for the rest and for the next wake.
        for (std::size_t i = 0; i < entries_.size();) {
          if (entries_[i].timeline->Reached(entries_[i].value)) {
            fired.push_back(entries_[i]);
            entries_[i] = entries_.back();
            entries_.pop_back();
          } else {
            ++i;
          }
        }
        idle = entries_.empty();  // all fired: back to the condition variable, not the driver
        semaphores.assign(1, wake_->semaphore);
        values.assign(1, seen + 1);
        for (const Entry& entry : entries_) {
          semaphores.push_back(entry.timeline->semaphore);
          values.push_back(entry.value);
        }
      }
      for (Entry& entry : fired) {
        entry.release();
        entry.timeline->Release();
      }
      fired.clear();
      if (idle) continue;
      VkSemaphoreWaitInfo info{};
      info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
      info.flags = VK_SEMAPHORE_WAIT_ANY_BIT;
      info.semaphoreCount = static_cast<std::uint32_t>(semaphores.size());
      info.pSemaphores = semaphores.data();
      info.pValues = values.data();
      // Bounded, so that a lost device cannot keep the thread forever.
      executor_.api.vkWaitSemaphores(executor_.device, &info, 100'000'000);
    }
  }

  Executor& executor_;
  std::mutex mutex_;
  std::condition_variable pending_cv_;  // entries_ became non-empty, or stopping_
  std::vector<Entry> entries_;
  Timeline* wake_ = nullptr;
  std::uint64_t wake_value_ = 0;
  bool stopping_ = false;
  std::atomic<bool> registered_{false};  // in Live()
  std::thread thread_;
};

}  // namespace streamexecutor::vulkan_detail
