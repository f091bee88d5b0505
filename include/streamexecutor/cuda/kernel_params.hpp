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
  return static_cast<CUdeviceptr>(memory.start_address());
}

template <typename P>
constexpr bool IsSharedParam() {
  return is_shared_device_memory_v<std::remove_cv_t<P>>;
}

// The value for one parameter, from a caller's argument (SubmitArguments) or
// an element of PackedArgs: the device address for memory, the byte count
// for shared memory (summed, never passed), and for a scalar of the kernel's
// own type the address of that object itself, which cuLaunchKernel (or the
// graph node) reads during the call, so nothing is copied; a converted value
// otherwise.
template <typename P, typename A>
[[gnu::always_inline]] inline auto DeviceValueOf(const A& arg) {
  decltype(auto) passed = streamexecutor::detail::ArgumentAsPassed<P>(arg);
  if constexpr (is_device_memory_pointer_v<std::remove_cv_t<P>>) {
    // The view's own start-address word: the driver copies the parameters
    // during cuLaunchKernel (or the graph-node call), while the view lives.
    static_assert(std::is_lvalue_reference_v<decltype(passed)>);
    static_assert(sizeof(passed.start_address()) == sizeof(CUdeviceptr));
    return &passed.start_address();
  } else if constexpr (IsSharedParam<P>()) {
    return std::uint64_t{passed.size()};
  } else if constexpr (std::is_lvalue_reference_v<decltype(passed)>) {
    return &passed;
  } else {
    return passed;
  }
}

// `use(params, shared_bytes)` with params pointing into `values` (one per
// parameter, from DeviceValueOf); a pointer among them already is the
// parameter's address. No allocation.
template <typename... Params, typename Values, typename Use>
[[gnu::always_inline]] inline decltype(auto) WithDeviceValues(Values& values, Use&& use) {
  constexpr std::size_t kDeviceParams = (std::size_t{0} + ... + (IsSharedParam<Params>() ? 0 : 1));
  std::array<void*, kDeviceParams == 0 ? 1 : kDeviceParams> params{};
  std::uint64_t shared_bytes = 0;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t next = 0;
    (
        [&] {
          auto& value = std::get<I>(values);
          if constexpr (IsSharedParam<std::tuple_element_t<I, std::tuple<Params...>>>()) {
            shared_bytes += value;
          } else if constexpr (std::is_pointer_v<std::remove_reference_t<decltype(value)>>) {
            params[next++] = const_cast<void*>(static_cast<const void*>(value));
          } else {
            params[next++] = &value;
          }
        }(),
        ...);
    (void)next;
  }(std::index_sequence_for<Params...>{});
  return use(kDeviceParams == 0 ? nullptr : params.data(), shared_bytes);
}

// `use(params, shared_bytes)` runs while the values live. No allocation.
template <typename... Params, typename Use>
[[gnu::always_inline]] inline decltype(auto) WithKernelParams(const PackedArgs<Params...>& args, Use&& use) {
  auto values = std::apply([](const auto&... packed) { return std::tuple{DeviceValueOf<Params>(packed)...}; }, args);
  return WithDeviceValues<Params...>(values, use);
}

// The same from the caller's own arguments.
template <typename... Params, typename Use, typename... Args>
[[gnu::always_inline]] inline decltype(auto) WithArgumentParams(Use&& use, const Args&... args) {
  auto values = std::tuple{DeviceValueOf<Params>(args)...};
  return WithDeviceValues<Params...>(values, use);
}

}  // namespace streamexecutor::cuda_detail
