// Free-function forms of the calls whose element or state type is named
// explicitly. In a template where the executor's or the stream's type
// depends on a parameter, the member forms must be spelled
// `executor->template AllocateOwnedArray<T>(n)`; these read
// `se::AllocateOwnedArray<T>(executor, n)` instead. Each forwards to the
// member of the same name, so the rules and messages are the members'.
// A null executor or stream pointer is an INVALID_ARGUMENT, not a crash.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/stream.hpp"

namespace streamexecutor {

namespace detail {
[[gnu::cold]] inline Status NullExecutor(std::string_view caller) {
  return MakeError(ErrorCode::kInvalidArgument, "{}: the StreamExecutor pointer is null", caller);
}
}  // namespace detail

// ---- Memory ------------------------------------------------------------------

template <typename T, Backend B>
StatusOr<DeviceMemory<T>> TryAllocateArray(StreamExecutor<B>* executor, std::uint64_t element_count) {
  if (executor == nullptr) return detail::NullExecutor("TryAllocateArray");
  return executor->template TryAllocateArray<T>(element_count);
}
template <typename T, Backend B>
DeviceMemory<T> AllocateArray(StreamExecutor<B>* executor, std::uint64_t element_count) {
  return TryAllocateArray<T>(executor, element_count).value_or(DeviceMemory<T>());
}
template <typename T, Backend B>
DeviceMemory<T> AllocateScalar(StreamExecutor<B>* executor) {
  return AllocateArray<T>(executor, 1);
}
template <typename T, Backend B>
ScopedDeviceMemory<T> AllocateOwnedArray(StreamExecutor<B>* executor, std::uint64_t element_count) {
  if (executor == nullptr) return ScopedDeviceMemory<T>(detail::NullExecutor("AllocateOwnedArray"));
  return executor->template AllocateOwnedArray<T>(element_count);
}
template <typename T, Backend B>
ScopedDeviceMemory<T> AllocateOwnedScalar(StreamExecutor<B>* executor) {
  return AllocateOwnedArray<T>(executor, 1);
}
template <typename T, Backend B>
  requires UnifiedMemoryBackend<B>
StatusOr<DeviceMemory<T>> TryAllocateUnifiedArray(StreamExecutor<B>* executor, std::uint64_t element_count) {
  if (executor == nullptr) return detail::NullExecutor("TryAllocateUnifiedArray");
  return executor->template TryAllocateUnifiedArray<T>(element_count);
}
template <typename T, Backend B>
  requires PinnedMemoryBackend<B>
PinnedHostMemory<T> HostAllocate(StreamExecutor<B>* executor, std::uint64_t count) {
  if (executor == nullptr) return PinnedHostMemory<T>(detail::NullExecutor("HostAllocate"));
  return executor->template HostAllocate<T>(count);
}

// ---- Typed copies --------------------------------------------------------------

template <typename T, Backend B>
Status SynchronousMemcpyH2D(StreamExecutor<B>* executor, std::span<const std::type_identity_t<T>> host_src,
                            DeviceMemory<T>* device_dst) {
  if (executor == nullptr) return detail::NullExecutor("SynchronousMemcpyH2D");
  return executor->template SynchronousMemcpyH2D<T>(host_src, device_dst);
}
template <typename T, Backend B>
Status SynchronousMemcpyD2H(StreamExecutor<B>* executor, const DeviceMemory<T>& device_src,
                            std::span<std::type_identity_t<T>> host_dst) {
  if (executor == nullptr) return detail::NullExecutor("SynchronousMemcpyD2H");
  return executor->template SynchronousMemcpyD2H<T>(device_src, host_dst);
}
// The stream forms take the stream by reference, as its Then* calls chain on it.
template <typename T, Backend B>
Stream<B>& ThenMemcpyH2D(Stream<B>& stream, std::span<const std::type_identity_t<T>> host_src,
                         DeviceMemory<T>* device_dst) {
  return stream.template ThenMemcpyH2D<T>(host_src, device_dst);
}
template <typename T, Backend B>
Stream<B>& ThenMemcpyD2H(Stream<B>& stream, const DeviceMemory<T>& device_src,
                         std::span<std::type_identity_t<T>> host_dst) {
  return stream.template ThenMemcpyD2H<T>(device_src, host_dst);
}

// ---- Library state -------------------------------------------------------------

template <typename State, Backend B, typename Make>
StatusOr<State*> GetOrCreateExtension(StreamExecutor<B>* executor, Make&& make) {
  if (executor == nullptr) return detail::NullExecutor("GetOrCreateExtension");
  return executor->template GetOrCreateExtension<State>(std::forward<Make>(make));
}
template <typename State, Backend B>
State* FindExtension(const StreamExecutor<B>* executor) {
  return executor == nullptr ? nullptr : executor->template FindExtension<State>();
}

}  // namespace streamexecutor
