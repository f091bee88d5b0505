// What the test doubles of the CUDA libraries (cuBLAS, cuFFT, cuRAND, cuDNN)
// share: a count of every call by entry point, and failures armed by name
// that the next call of that entry point returns. Each double adds the state
// it records under the same mutex.
#pragma once

#include <map>
#include <mutex>
#include <string>

namespace library_double {

template <typename Result, Result kSuccess>
struct CallLog {
  std::mutex mutex;
  std::map<std::string, long> calls;
  std::map<std::string, Result> fail_next;

  // Counts the call; returns the failure armed for it, or kSuccess. The
  // caller holds `mutex`.
  Result EnterLocked(const char* name) {
    ++calls[name];
    if (auto armed = fail_next.find(name); armed != fail_next.end()) {
      const Result result = armed->second;
      fail_next.erase(armed);
      return result;
    }
    return kSuccess;
  }
  Result Enter(const char* name) {
    std::lock_guard<std::mutex> lock(mutex);
    return EnterLocked(name);
  }
  void FailNext(const char* name, Result result) {
    std::lock_guard<std::mutex> lock(mutex);
    fail_next[name] = result;
  }
  long Calls(const char* name) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = calls.find(name);
    return it == calls.end() ? 0 : it->second;
  }
};

}  // namespace library_double
