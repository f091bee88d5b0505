// A stream held busy by a host callback until the test opens the gate: it
// stands in for a long-running kernel, so that cases about queued work are
// deterministic. Shared by the generic cases (they are also compiled as one
// unity unit, so a helper is defined once).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "generic/test_backend.hpp"

namespace test_gate {

class Gate {
 public:
  void Close(se::Stream<TestBackend>& stream) {
    stream.ThenDoHostCallback([this] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!open_.load() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  }
  void Open() { open_ = true; }
  // Opens from a thread of its own after `delay`, and says so first, so that
  // a synchronous call that returned before it can tell.
  void OpenLater(std::chrono::milliseconds delay) {
    opener_ = std::thread([this, delay] {
      std::this_thread::sleep_for(delay);
      opened_ = true;
      open_ = true;
    });
  }
  bool opened() const { return opened_.load(); }
  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate() {
    open_ = true;
    if (opener_.joinable()) opener_.join();
  }

 private:
  std::atomic<bool> open_{false};
  std::atomic<bool> opened_{false};
  std::thread opener_;
};

}  // namespace test_gate
