// PreparedLaunch<Params...>: a kernel, its grid and its arguments bound once,
// then launched any number of times with only the changed arguments set
// again (Set<I>), for code that relaunches one kernel in a loop.
//
// The arguments are checked at compile time exactly as Stream::ThenLaunch
// checks them (core/kernel_params.hpp) and kept packed, so a relaunch does
// not pack again. Every launch still runs the run-time checks of a direct
// launch (core/launch_check.hpp): a buffer freed after it was bound is an
// error at the launch, not a fault in the kernel. A backend that can skip
// work for arguments that did not change (OpenCL: clSetKernelArg) provides a
// Submit overload for op::PreparedLaunch; the others get the plain op::Launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/launch_check.hpp"
#include "streamexecutor/core/operations.hpp"

namespace streamexecutor {

// A backend that handles prepared launches itself (opencl/prepared.hpp).
template <typename B, typename... Params>
concept PreparedLaunchBackend =
    Backend<B> &&
    requires(typename B::StreamHandle& stream, const op::PreparedLaunch<typename B::KernelHandle, Params...>& launch) {
      { B::Submit(stream, launch) } -> std::same_as<Status>;
    };

template <Backend B>
class Stream;

template <typename... Params>
class PreparedLaunch {
  static_assert(sizeof...(Params) <= 64, "PreparedLaunch tracks changed arguments in one 64-bit word");
  static constexpr std::uint64_t kAllChanged =
      sizeof...(Params) == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << sizeof...(Params)) - 1;

 public:
  // `kernel` must outlive this object: the launch refers to it.
  template <typename... Args>
  PreparedLaunch(const TypedKernel<Params...>& kernel, ThreadDim threads, BlockDim blocks, Args&&... args)
      : kernel_(&kernel), threads_(threads), blocks_(blocks), args_(PackAll(static_cast<Args&&>(args)...)) {}

  // Copies are independent launches with the same arguments: the backend's
  // record of what the kernel holds is valid for both.
  PreparedLaunch(const PreparedLaunch&) = default;
  PreparedLaunch& operator=(const PreparedLaunch&) = default;

  // Replaces argument I, with ThenLaunch's compile-time checks for it.
  template <std::size_t I, typename A>
  PreparedLaunch& Set(A&& arg) {
    static_assert(I < sizeof...(Params), "PreparedLaunch::Set<I>: I is not a parameter index of the kernel");
    if constexpr (I < sizeof...(Params)) {
      using P = std::tuple_element_t<I, std::tuple<Params...>>;
      static_assert(detail::CheckArgument<I, P, A&&>() || true);
      if constexpr (detail::CheckArgument<I, P, A&&>()) {
        std::get<I>(args_) = detail::PackOne<P>(static_cast<A&&>(arg));
        changed_ |= std::uint64_t{1} << I;
      }
    }
    return *this;
  }
  // The seed-style spelling of Set.
  template <std::size_t I, typename A>
  PreparedLaunch& SetArg(A&& arg) {
    return Set<I>(static_cast<A&&>(arg));
  }
  PreparedLaunch& SetDimensions(ThreadDim threads, BlockDim blocks) {
    threads_ = threads;
    blocks_ = blocks;
    return *this;
  }

  const TypedKernel<Params...>& kernel() const { return *kernel_; }
  const ThreadDim& threads() const { return threads_; }
  const BlockDim& blocks() const { return blocks_; }
  // The arguments as the backend receives them (PackedArgs).
  const PackedArgs<Params...>& packed_args() const { return args_; }

 private:
  template <Backend B>
  friend class Stream;

  template <typename... Args>
  static PackedArgs<Params...> PackAll(Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "PreparedLaunch: the number of arguments differs from the TypedKernel's parameter count");
    if constexpr (sizeof...(Params) == sizeof...(Args)) {
      static_assert(
          detail::CheckArguments<std::tuple<Params...>, std::tuple<Args&&...>>(std::index_sequence_for<Params...>{}) ||
          true);
      if constexpr (detail::CheckArguments<std::tuple<Params...>, std::tuple<Args&&...>>(
                        std::index_sequence_for<Params...>{})) {
        return PackedArgs<Params...>{detail::PackOne<Params>(static_cast<Args&&>(args))...};
      }
    }
    return PackedArgs<Params...>{};
  }

  // What detail::CheckLaunch reads for parameter P: a pointer to the packed
  // view for memory (its liveness is checked at every launch), the packed
  // value otherwise.
  template <typename P>
  static decltype(auto) CheckedArg(const PackedArgT<P>& packed) {
    if constexpr (is_device_memory_pointer_v<std::remove_cv_t<P>>)
      return &packed;
    else
      return (packed);
  }

  // Called by Stream::ThenLaunch(PreparedLaunch&) on an initialized stream.
  template <Backend B>
  Status SubmitOn(const StreamExecutor<B>& executor, typename B::StreamHandle& stream) {
    Status checked = std::apply(
        [&](const auto&... packed) {
          return detail::CheckLaunch(executor, threads_, blocks_, *kernel_, CheckedArg<Params>(packed)...);
        },
        args_);
    if (!checked.ok()) [[unlikely]]
      return checked;
    using Handle = typename B::KernelHandle;
    const op::Launch<Handle, Params...> launch{kernel_->template handle<Handle>(), threads_, blocks_, args_,
                                               &kernel_->name()};
    if constexpr (PreparedLaunchBackend<B, Params...>) {
      return B::Submit(stream, op::PreparedLaunch<Handle, Params...>{launch, stamp_, changed_});
    } else {
      return B::Submit(stream, launch);  // nothing to skip: packing was the saving
    }
  }

  const TypedKernel<Params...>* kernel_;
  ThreadDim threads_;
  BlockDim blocks_;
  PackedArgs<Params...> args_;
  std::uint64_t stamp_ = 0;
  std::uint64_t changed_ = kAllChanged;
};

template <typename... Params, typename... Args>
PreparedLaunch(const TypedKernel<Params...>&, ThreadDim, BlockDim, Args&&...) -> PreparedLaunch<Params...>;

}  // namespace streamexecutor
