// How a launch's arguments become what cuLaunchKernel and kernel graph nodes
// take: the device values in a tuple on the launching frame and a void* array
// pointing into it. Used by every CUDA launch and recorded launch.
#pragma once

#include <cuda.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor::cuda_detail {

inline CUdeviceptr DeviceAddress(const DeviceMemoryBase& memory) {
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(memory.opaque())) + memory.offset();
}

template <typename P>
constexpr bool IsSharedParam() {
  return is_shared_device_memory_v<std::remove_cv_t<P>>;
}

// The value passed for one parameter: the device address for memory, the
// byte count for shared memory (summed, never passed), the value otherwise.
template <typename P>
auto ToDevice(const PackedArgT<P>& packed) {
  if constexpr (is_device_memory_pointer_v<std::remove_cv_t<P>>) {
    return DeviceAddress(packed);
  } else if constexpr (IsSharedParam<P>()) {
    return std::uint64_t{packed.size()};
  } else {
    return packed;
  }
}

// `use(params, shared_bytes)` runs while the values live. No allocation.
template <typename... Params, typename Use>
[[gnu::always_inline]] inline decltype(auto) WithKernelParams(const PackedArgs<Params...>& args, Use&& use) {
  auto values = std::apply([](const auto&... packed) { return std::tuple{ToDevice<Params>(packed)...}; }, args);
  constexpr std::size_t kDeviceParams = (std::size_t{0} + ... + (IsSharedParam<Params>() ? 0 : 1));
  std::array<void*, kDeviceParams == 0 ? 1 : kDeviceParams> params{};
  std::uint64_t shared_bytes = 0;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t next = 0;
    (
        [&] {
          if constexpr (IsSharedParam<std::tuple_element_t<I, std::tuple<Params...>>>()) {
            shared_bytes += std::get<I>(values);
          } else {
            params[next++] = &std::get<I>(values);
          }
        }(),
        ...);
    (void)next;
  }(std::index_sequence_for<Params...>{});
  return use(kDeviceParams == 0 ? nullptr : params.data(), shared_bytes);
}

}  // namespace streamexecutor::cuda_detail
