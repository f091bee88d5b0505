// What the test doubles of the libraries the canned plugins load at run time
// share (cuBLAS: tests/canned/cublas_double/; cuFFT, cuRAND, cuDNN:
// tests/cuda/*_double/). Each double is a shared library built under the
// real library's soname, which the plugin under test loads from
// LD_LIBRARY_PATH; it defines the entry points the plugin resolves and
// records what they were asked. Both halves are here:
//
// - the double's: CallLog, a count of every call by entry point and failures
//   armed by name that the next call of that entry point returns (each double
//   adds the state it records under the same mutex), and
//   SE_LIBRARY_DOUBLE_EXPORTS, the query functions every double exports;
// - the test's: QueryApi, which finds those functions in the double the plugin
//   loaded, and Query, which finds a double's own ones.
#pragma once

#include <dlfcn.h>

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
  // A copy of recorded state, taken under the mutex.
  template <typename T>
  void Snapshot(const T& recorded, T* out) {
    std::lock_guard<std::mutex> lock(mutex);
    *out = recorded;
  }
};

// The double's side: defines se_<name>_double_calls(entry_point) and
// se_<name>_double_fail_next(entry_point, status) over `log`, a CallLog.
#define SE_LIBRARY_DOUBLE_EXPORTS(name, log)                                                             \
  extern "C" long se_##name##_double_calls(const char* entry_point) { return (log).Calls(entry_point); } \
  extern "C" void se_##name##_double_fail_next(const char* entry_point, int status) {                    \
    (log).FailNext(entry_point, static_cast<decltype((log).fail_next)::mapped_type>(status));            \
  }

// The test's side: the double `soname` that the plugin under test already
// opened (RTLD_NOLOAD: never a second copy), and its query functions
// se_<name>_double_<function>, each null where the double is not loaded.
class Query {
 public:
  Query(const char* soname, const char* name) : library_(dlopen(soname, RTLD_NOW | RTLD_NOLOAD)), name_(name) {}
  ~Query() {
    if (library_ != nullptr) dlclose(library_);  // drops only the reference NOLOAD added
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  template <typename Fn>
  void Find(const char* function, Fn& fn) const {
    const std::string symbol = "se_" + name_ + "_double_" + function;
    fn = library_ == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(library_, symbol.c_str()));
  }

 private:
  void* library_;
  std::string name_;
};

// The query functions every double has; each double's API derives from it.
struct QueryApi {
  long (*calls)(const char* entry_point) = nullptr;
  // The next call of `entry_point` returns `status` (the library's status type).
  void (*fail_next)(const char* entry_point, int status) = nullptr;

  void FindCommon(const Query& query) {
    query.Find("calls", calls);
    query.Find("fail_next", fail_next);
  }
  bool common_loaded() const { return calls != nullptr && fail_next != nullptr; }
};

}  // namespace library_double
