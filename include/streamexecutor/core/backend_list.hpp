// BackendList<Backends...>: a list of backend types to iterate over at compile
// time. <streamexecutor/streamexecutor.hpp> defines se::EnabledBackends, the
// list of every backend this build enabled, from its registry; code that
// does something for every backend (MultiPlatformManager, the compiled part
// of separate compilation, tests) iterates that list instead of naming them.
#pragma once

#include <cstddef>
#include <type_traits>

namespace streamexecutor {

template <typename... Backends>
struct BackendList {
  static constexpr std::size_t kSize = sizeof...(Backends);

  // Template<Backends...>, e.g. BasicMultiPlatformManager or std::variant.
  template <template <typename...> class Template>
  using Apply = Template<Backends...>;

  template <typename B>
  static constexpr bool kContains = (std::is_same_v<B, Backends> || ...);

  // Calls f.template operator()<B>() for each backend, in order.
  template <typename F>
  static constexpr void ForEach(F&& f) {
    (f.template operator()<Backends>(), ...);
  }
};

namespace detail {
// The registry builds the list with a leading void, so that each entry can
// add itself as ", type" whether or not an entry came before it.
template <typename... Backends>
struct DropLeadingVoid;
template <typename... Backends>
struct DropLeadingVoid<void, Backends...> {
  using type = BackendList<Backends...>;
};
}  // namespace detail

}  // namespace streamexecutor
