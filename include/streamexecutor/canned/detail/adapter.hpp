// What every canned family shares about its adapter trait,
// <family>_detail::Adapter<B>: the one template that a file
// canned/<family>/<backend>.hpp specialises to give backend B the family's
// library. The family's primary template derives from NoAdapter, so that a
// backend nobody wrote an adapter for (one added later, or a variant like a serial one)
// compiles every operation of every family: the arguments are checked as on
// any backend, and the operation then reports UNAVAILABLE naming the backend
// and the family, with no edit of the family.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/operations.hpp"
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

// A library call that enqueues on the stream's native queue itself
// (`call(native stream state)`), through Stream::EnqueueCanned, so that a
// capturing stream records it. `buffers` lists every view the call uses.
// `keep`: an object the call's work uses, which a recording holds on to.
template <typename Stream, typename Call>
Status EnqueueLibraryCall(Stream& stream, std::string_view caller, std::span<const DeviceMemoryBase> buffers,
                          Call&& call, std::shared_ptr<const void> keep = {}) {
  return stream.EnqueueCanned(caller, buffers, op::LibraryCall<std::remove_reference_t<Call>>{caller, buffers, call},
                              std::move(keep));
}

}  // namespace streamexecutor::canned_detail
