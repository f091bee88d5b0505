// A host callback recorded into a command buffer: owned by the buffer, run
// once per submission. The callables have any type, so one is erased here,
// behind two function pointers (no vtable), for the backends' command
// buffers (host/ and cuda/command_buffer.hpp).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace streamexecutor::detail {

class StoredCallback {
 public:
  StoredCallback(const StoredCallback&) = delete;
  StoredCallback& operator=(const StoredCallback&) = delete;

  void Invoke() { invoke_(this); }

  // The callable, moved or copied in (what its copy or `new` throws passes through).
  template <typename Callback>
  static std::unique_ptr<StoredCallback, void (*)(StoredCallback*)> Make(Callback&& callback);

 protected:
  using InvokeFn = void (*)(StoredCallback*);
  explicit StoredCallback(InvokeFn invoke) : invoke_(invoke) {}
  ~StoredCallback() = default;

 private:
  InvokeFn invoke_;
};

using StoredCallbackPtr = std::unique_ptr<StoredCallback, void (*)(StoredCallback*)>;

template <typename F>
class StoredCallbackOf final : public StoredCallback {
 public:
  template <typename G>
  explicit StoredCallbackOf(G&& g) : StoredCallback(&Run), callable_(std::forward<G>(g)) {}
  static void Destroy(StoredCallback* self) { delete static_cast<StoredCallbackOf*>(self); }

 private:
  static void Run(StoredCallback* self) { static_cast<StoredCallbackOf*>(self)->callable_(); }
  F callable_;
};

template <typename Callback>
StoredCallbackPtr StoredCallback::Make(Callback&& callback) {
  using Holder = StoredCallbackOf<std::decay_t<Callback>>;
  return StoredCallbackPtr(new Holder(std::forward<Callback>(callback)), &Holder::Destroy);
}

}  // namespace streamexecutor::detail
