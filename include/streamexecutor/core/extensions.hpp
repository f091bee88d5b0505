// Per-executor state of libraries built on top of the core (canned BLAS, FFT,
// RNG and DNN operations): a cuBLAS handle, an FFT plan cache, a generator.
// Each kind of state is created on first use, owned by its executor, and
// destroyed with it (in reverse order of creation).
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/type_name.hpp"

namespace streamexecutor::detail {

class ExtensionSlots {
 public:
  ExtensionSlots() = default;
  ExtensionSlots(const ExtensionSlots&) = delete;
  ExtensionSlots& operator=(const ExtensionSlots&) = delete;
  ~ExtensionSlots() { Clear(); }

  // Destroys every state, newest first (a later library may use an earlier
  // one's state); the executor calls it while its device is still open.
  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!slots_.empty()) slots_.pop_back();
  }

  // The State of this executor, made by `make()` (returning
  // StatusOr<std::unique_ptr<State>>) the first time it is asked for. Types
  // are told apart by name, not by the address of a per-type variable, so that
  // two shared libraries built with -fvisibility=hidden find the same slot.
  // `make` runs under the slots' lock: it must not ask for another extension.
  template <typename State, typename Make>
  StatusOr<State*> GetOrCreate(Make&& make) {
    static_assert(std::is_same_v<std::remove_cv_t<State>, State>, "an extension type is a plain class");
    const std::string_view key = TypeName<State>();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Slot& slot : slots_) {
      if (slot.key == key) return static_cast<State*>(slot.object.get());
    }
    StatusOr<std::unique_ptr<State>> made = std::forward<Make>(make)();
    if (!made.ok()) return made.status();
    std::unique_ptr<State> object = std::move(made).value();
    if (object == nullptr) {
      return MakeError(ErrorCode::kInternal, "the factory of extension {} returned null", key);
    }
    try {
      slots_.reserve(slots_.size() + 1);  // so that the push below cannot throw
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "out of host memory registering extension {}", key);
    }
    slots_.push_back(Slot{key, Owned(object.release(), &Delete<State>)});
    return static_cast<State*>(slots_.back().object.get());
  }

  // The State if it was created, else null.
  template <typename State>
  State* Find() const {
    const std::string_view key = TypeName<State>();
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Slot& slot : slots_) {
      if (slot.key == key) return static_cast<State*>(slot.object.get());
    }
    return nullptr;
  }

 private:
  using Owned = std::unique_ptr<void, void (*)(void*)>;
  struct Slot {
    std::string_view key;
    Owned object;
  };
  template <typename State>
  static void Delete(void* object) {
    delete static_cast<State*>(object);
  }

  mutable std::mutex mutex_;
  std::vector<Slot> slots_;
};

}  // namespace streamexecutor::detail
