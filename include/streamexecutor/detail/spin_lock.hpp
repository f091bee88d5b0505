// A lock for critical sections that last a few driver calls and are almost
// never contended (one kernel's argument slots, one stream's producer slot).
// Uncontended it is one atomic exchange and one store, where a pthread mutex
// costs about forty instructions in libc on every launch; contended, it spins
// briefly and then yields the core, so a preempted holder can finish.
#pragma once

#include <atomic>
#include <thread>

namespace streamexecutor::detail {

class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpinsBeforeYield) {
          Pause();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpinsBeforeYield = 64;
  static void Pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace streamexecutor::detail
