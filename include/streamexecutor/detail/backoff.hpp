// How a thread waits for another without holding a core: a few rounds of the
// CPU's pause hint, then yielding between polls. Where threads can outnumber
// cores (a host pool has a worker per core, and callers poll too), a thread
// that only spun kept the core that the thread it waited for needed.
#pragma once

#include <chrono>
#include <thread>

namespace streamexecutor::detail {

inline void CpuPause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

class Backoff {
 public:
  static constexpr int kPauseRounds = 64;

  // Polls forever (yielding after the pause rounds).
  Backoff() = default;
  // Poll() turns false once `yield_phase` has passed after the pause rounds,
  // for a caller that then sleeps.
  explicit Backoff(std::chrono::microseconds yield_phase) : yield_phase_(yield_phase), bounded_(true) {}

  // One polling round; false once the caller should sleep instead.
  bool Poll() {
    if (rounds_ < kPauseRounds) {
      ++rounds_;
      CpuPause();
      return true;
    }
    if (bounded_) {
      const auto now = std::chrono::steady_clock::now();
      if (rounds_ == kPauseRounds) {
        ++rounds_;  // stays here: the count never grows past the pause phase
        yield_until_ = now + yield_phase_;
      }
      if (now >= yield_until_) return false;
    }
    std::this_thread::yield();
    return true;
  }
  void Reset() { rounds_ = 0; }

 private:
  int rounds_ = 0;
  std::chrono::microseconds yield_phase_{0};
  bool bounded_ = false;
  std::chrono::steady_clock::time_point yield_until_{};
};

}  // namespace streamexecutor::detail
