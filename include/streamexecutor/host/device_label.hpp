// The name a host-side backend's messages give a device ("host:0" and
// the like): the backends built on host_detail::HostBackend
// share this folder's machinery, and an error must name the executor the user made.
#pragma once

#include <string_view>

#include "streamexecutor/detail/fmt.hpp"

namespace streamexecutor::host_detail {

struct DeviceLabel {
  std::string_view backend;  // the backend's kName
  int ordinal = 0;
};

}  // namespace streamexecutor::host_detail

template <>
struct fmt::formatter<streamexecutor::host_detail::DeviceLabel> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const streamexecutor::host_detail::DeviceLabel& label, FormatContext& ctx) const {
    return fmt::format_to(ctx.out(), "{}:{}", label.backend, label.ordinal);
  }
};
