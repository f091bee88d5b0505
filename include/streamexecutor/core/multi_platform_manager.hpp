// BasicMultiPlatformManager<Backends...>: finds a compiled-in platform by
// backend type or by name. <streamexecutor/streamexecutor.hpp> names the list
// of every backend in the build as se::MultiPlatformManager.
//
// A platform chosen by a run-time name is returned as a std::variant of
// Platform<B>* so that the code that uses it is still compiled per backend:
// std::visit once, then everything below is direct calls.
#pragma once

#include <string>
#include <string_view>
#include <optional>
#include <variant>

#include "streamexecutor/core/executor.hpp"

namespace streamexecutor {

template <Backend... Backends>
class BasicMultiPlatformManager {
 public:
  using PlatformPtr = std::variant<Platform<Backends>*...>;

  template <Backend B>
  static Platform<B>* PlatformFor() {
    return &Platform<B>::Get();
  }

  // "host", "opencl", "cuda": an unknown name, or one not compiled into this
  // program, is an error that lists what is available.
  static StatusOr<PlatformPtr> PlatformWithName(std::string_view name) {
    std::optional<PlatformPtr> found;
    const auto match = [&]<typename B>() {
      if (name != B::kName) return false;
      found.emplace(std::in_place_type<Platform<B>*>, &Platform<B>::Get());
      return true;
    };
    static_cast<void>((match.template operator()<Backends>() || ...));
    if (found) return *found;
    return MakeError(ErrorCode::kNotFound,
                     "no platform named '{}' in this program (unknown, or its backend was not compiled in); "
                     "available platforms: {}",
                     name, AvailablePlatformNames());
  }

  static std::string AvailablePlatformNames() {
    std::string names;
    ((names += names.empty() ? "" : ", ", names += Backends::kName), ...);
    return names;
  }
};

}  // namespace streamexecutor
