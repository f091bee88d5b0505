// The host backend's device memory is host memory: collectives read and
// write it where it is, with no staging copy.
#pragma once

#include "streamexecutor/collectives/communicator.hpp"
#include "streamexecutor/host/backend.hpp"

namespace streamexecutor::collectives_detail {

template <>
inline constexpr bool kDeviceMemoryIsHostMemory<host> = true;

}  // namespace streamexecutor::collectives_detail
