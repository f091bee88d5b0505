// A borrowed callable of one signature: an object pointer and a function
// pointer. A function that takes one is compiled once, where a template on
// the callable's type is compiled again for every caller's lambda (each
// launch signature, each kind of operation): the cold paths that only run a
// callable (tracing) take one to keep a unit's code small (issue 30).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace streamexecutor::detail {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  // Refers to `callable`, which must outlive every call through this.
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& callable) noexcept  // NOLINT(google-explicit-constructor): a parameter type, as std::function_ref
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(callable)))),
        call_(&Call<std::remove_reference_t<F>>) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  template <typename F>
  static R Call(void* object, Args... args) {
    return (*static_cast<F*>(object))(std::forward<Args>(args)...);
  }

  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace streamexecutor::detail
