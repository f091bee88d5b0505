// A lock for critical sections that last a few driver calls and are almost
// never contended (one kernel's argument slots, one stream's producer slot).
// Uncontended it is one atomic exchange and one store, where a pthread mutex
// costs about forty instructions in libc on every launch; contended, it spins
// briefly and then yields the core, so a preempted holder can finish.
#pragma once

#include <atomic>

#include "streamexecutor/detail/backoff.hpp"

namespace streamexecutor::detail {

class SpinLock {
 public:
  void lock() noexcept {
    if (locked_.exchange(true, std::memory_order_acquire)) [[unlikely]]
      WaitAndLock();
  }
  bool try_lock() noexcept { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  // Out of line: inlined, the polling loop's registers would crowd the
  // caller's launch path, which almost never gets here.
  [[gnu::noinline, gnu::cold]] void WaitAndLock() noexcept {
    do {
      for (Backoff backoff; locked_.load(std::memory_order_relaxed);) backoff.Poll();
    } while (locked_.exchange(true, std::memory_order_acquire));
  }

  std::atomic<bool> locked_{false};
};

}  // namespace streamexecutor::detail
