// BasicMultiPlatformManager<Backends...>: finds a compiled-in platform by
// backend type or by name. <streamexecutor/streamexecutor.hpp> names the list
// of every backend in the build as se::MultiPlatformManager.
//
// A platform chosen by a run-time name is returned as a std::variant of
// Platform<B>* so that the code that uses it is still compiled per backend:
// std::visit once, then everything below is direct calls.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
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

  // "host", "opencl", "cuda", matched without case: the seed and XLA spell
  // them "Host", "OpenCL", "CUDA", and code ported from there should not
  // fail on a spelling. An unknown name, or one not compiled into this
  // program, is an error that lists what is available.
  static StatusOr<PlatformPtr> PlatformWithName(std::string_view name) {
    std::optional<PlatformPtr> found;
    const auto match = [&]<typename B>() {
      if (!SameNameIgnoringCase(name, B::kName)) return false;
      found.emplace(std::in_place_type<Platform<B>*>, &Platform<B>::Get());
      return true;
    };
    static_cast<void>((match.template operator()<Backends>() || ...));
    if (found) return *found;
    return MakeError(ErrorCode::kNotFound,
                     "no platform named '{}' in this program (unknown, or its backend was not compiled in); "
                     "available platforms: {} (names match without case: \"CUDA\", \"Host\", \"OpenCL\" work too)",
                     name, AvailablePlatformNames());
  }

  static std::string AvailablePlatformNames() {
    std::string names;
    ((names += names.empty() ? "" : ", ", names += Backends::kName), ...);
    return names;
  }

 private:
  // ASCII only: platform names are ASCII, and a locale must not change
  // which platform a name finds.
  static constexpr bool SameNameIgnoringCase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (Lower(a[i]) != Lower(b[i])) return false;
    }
    return true;
  }
  static constexpr char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
};

}  // namespace streamexecutor
