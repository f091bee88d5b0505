// What every canned family shares about its adapter trait,
// <family>_detail::Adapter<B>: the one template that a file
// canned/<family>/<backend>.hpp specialises to give backend B the family's
// library. The family's primary template derives from NoAdapter, so that a
// backend nobody wrote an adapter for (one added later, or a variant like a serial one)
// compiles every operation of every family: the arguments are checked as on
// any backend, and the operation then reports UNAVAILABLE naming the backend
// and the family, with no edit of the family.
#pragma once

#include <string_view>
#include <type_traits>

#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor::canned_detail {

struct NoAdapterTag {};

template <PluginKind Family, typename B>
struct NoAdapter : NoAdapterTag {
  static Status Unavailable(std::string_view caller, std::string_view device) {
    return MakeError(ErrorCode::kUnavailable, "{} on {}: the {} backend has no {} library", caller, device, B::kName,
                     PluginKindName(Family));
  }
};

// Whether a family's Adapter<B> was specialised for B. The front ends test
// it with `if constexpr`, so that the primary template needs none of the
// family's operations.
template <typename A>
concept Adapted = !std::is_base_of_v<NoAdapterTag, A>;

}  // namespace streamexecutor::canned_detail
