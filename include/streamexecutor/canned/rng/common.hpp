// The backend-independent half of the canned RNG operations: the value types,
// the family's adapter trait, and (included from here) the Philox kernels'
// names and parameters (kernels.hpp) and the executor's seed and counter
// (state.hpp).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string_view>

#include "streamexecutor/canned/detail/adapter.hpp"
#include "streamexecutor/canned/rng/kernels.hpp"
#include "streamexecutor/canned/rng/state.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/plugin.hpp"

namespace streamexecutor::rng_detail {

template <typename T>
concept RngValue = std::same_as<T, float> || std::same_as<T, double>;

// The family's adapter trait (canned/detail/adapter.hpp), specialised in
// canned/rng/<backend>.hpp for each backend with an RNG:
//   // The Philox plugin (every adapter has it): the loader spec of one of
//   // the four kernels, or why there is none (CUDA built without nvcc).
//   static StatusOr<MultiKernelLoaderSpec> PhiloxSpec(PhiloxKernel);
// and where the backend also has a vendor generator (CUDA: cuRAND):
//   static constexpr RngPluginId kVendorPlugin;
//   class VendorState {                            // per executor, an extension
//     static StatusOr<std::unique_ptr<VendorState>> Make(StreamExecutor<B>*, std::string_view caller);
//     Status Reseed(const Seed&, std::string_view device);
//     template <RngValue T>
//     Status Generate(Stream<B>&, std::string_view caller, const DeviceMemoryBase& values, std::uint64_t count,
//                     Distribution, T mean, T stddev);
//   };
// Other backends get the primary template: UNAVAILABLE, naming the backend.
template <typename B>
struct Adapter : canned_detail::NoAdapter<PluginKind::kRng, B> {};

// An adapter that offers a vendor generator besides Philox.
template <typename A>
concept VendorAdapter = requires {
  { A::kVendorPlugin } -> std::convertible_to<RngPluginId>;
  typename A::VendorState;
};

}  // namespace streamexecutor::rng_detail
