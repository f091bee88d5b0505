// How a host-backend kernel is written and called.
//
// A host kernel is a function or a capture-less lambda whose first parameter
// is `const se::host::KernelContext&`, followed by one parameter per TypedKernel
// parameter:
//   TypedKernel parameter      host kernel parameter
//   DeviceMemory<T>*           T*  (or const T*)
//   SharedDeviceMemory<T>      std::span<T>  (per-block scratch)
//   scalar T                   T   (or const T&)
// The kernel body runs once per thread, like a CUDA kernel body.
// A kernel whose first parameter is `const se::host::BlockContext&` instead
// runs once per block and loops over the block's threads itself: a loop the
// compiler can vectorise, where a per-thread body's bounds check
// (`if (i < n)`) becomes a conditional store that baseline x86-64 cannot.
// A kernel whose first parameter is `const se::host::CooperativeContext&`
// runs once per thread and may wait for its block at ctx.SyncThreads(): its
// block's threads run as fibers (cooperative.hpp).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/kernel_args.hpp"
#include "streamexecutor/core/kernel_params.hpp"
#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/type_name.hpp"
#include "streamexecutor/host/cooperative.hpp"
#include "streamexecutor/host/device_label.hpp"

namespace streamexecutor::host_detail {

// CUDA's built-in variables, passed explicitly. Names follow CUDA on purpose.
struct KernelContext {
  Dim3 threadIdx{0, 0, 0};
  Dim3 blockIdx{0, 0, 0};
  Dim3 blockDim;
  Dim3 gridDim;
};

// A per-block kernel's view: the block it runs, without a thread index.
struct BlockContext {
  Dim3 blockIdx{0, 0, 0};
  Dim3 blockDim;
  Dim3 gridDim;
};

// What the pool hands to a kernel's block runner.
struct LaunchView {
  Dim3 grid;
  Dim3 block;
  const void* args;  // std::tuple<StoredParamT<...>...> living in the stream's command slot
};

using AnyFunction = void (*)();
// Runs blocks [first_block, end_block) of one launch. `shared` is this
// worker's scratch, at least as large as the launch's shared memory.
using BlockRunner = void (*)(AnyFunction fn, const LaunchView& launch, std::uint64_t first_block,
                             std::uint64_t end_block, std::byte* shared);

namespace abi {

// The host parameter that a TypedKernel parameter becomes.
template <typename P>
struct HostParam {
  using type = std::remove_cv_t<P>;
};
template <typename T>
struct HostParam<DeviceMemory<T>*> {
  using type = T*;
};
template <typename T>
struct HostParam<SharedDeviceMemory<T>> {
  using type = std::span<T>;
};
template <typename P>
using HostParamT = typename HostParam<std::remove_cv_t<P>>::type;

// A kernel function's parameter with const-ness that does not change the ABI
// removed, so that `const float*` matches DeviceMemory<float>*.
template <typename F>
struct Normalize {
  using type = std::remove_cvref_t<F>;
};
template <typename T>
struct Normalize<const T*> {
  using type = T*;
};
template <typename T>
struct Normalize<const T* const> {
  using type = T*;
};
template <typename T>
struct Normalize<std::span<const T>> {
  using type = std::span<T>;
};
template <typename F>
using NormalizeT = typename Normalize<std::remove_cvref_t<F>>::type;

// What a launch stores for each parameter: spans travel as element counts and
// are rebuilt per block over the worker's scratch.
template <typename H>
struct Stored {
  using type = H;
};
template <typename T>
struct Stored<std::span<T>> {
  using type = std::uint64_t;
};
template <typename H>
using StoredT = typename Stored<H>::type;

template <typename H>
inline constexpr bool is_span_v = false;
template <typename T>
inline constexpr bool is_span_v<std::span<T>> = true;

template <typename H>
constexpr std::size_t SharedElementSize() {
  if constexpr (is_span_v<H>)
    return sizeof(typename H::element_type);
  else
    return 0;
}

inline constexpr std::uint64_t kSharedAlignment = 64;

// Byte offset of every shared-memory parameter inside the block's scratch, and
// the total. Used by the launcher (to size scratch) and the runner (to carve it).
template <typename... H>
constexpr std::uint64_t SharedLayout(const std::tuple<StoredT<H>...>& stored,
                                     std::array<std::uint64_t, sizeof...(H) + 1>& offsets) {
  std::uint64_t total = 0;
  std::size_t i = 0;
  auto place = [&]<typename Param>(const StoredT<Param>& value) {
    offsets[i++] = total;
    if constexpr (is_span_v<Param>) {
      // Saturating: a count whose bytes would wrap must fail the launch's
      // size check, not pass it as a small number.
      constexpr std::uint64_t kMax = ~std::uint64_t{0};
      constexpr std::uint64_t kElement = SharedElementSize<Param>();
      const std::uint64_t bytes =
          value > (kMax - kSharedAlignment) / kElement ? kMax - kSharedAlignment + 1 : value * kElement;
      const std::uint64_t padded = (bytes + kSharedAlignment - 1) / kSharedAlignment * kSharedAlignment;
      total = padded > kMax - total ? kMax : total + padded;
    }
  };
  std::apply([&](const auto&... value) { (place.template operator()<H>(value), ...); }, stored);
  offsets[i] = total;
  return total;
}

template <typename H>
H Materialize(const StoredT<H>& stored, std::byte* shared, std::uint64_t offset) {
  if constexpr (is_span_v<H>) {
    return H(reinterpret_cast<typename H::element_type*>(shared + offset), static_cast<std::size_t>(stored));
  } else {
    (void)shared;
    (void)offset;
    return stored;
  }
}

// Turns a linear block number into blockIdx (x fastest, as CUDA numbers blocks).
constexpr Dim3 Unlinearize(std::uint64_t linear, const Dim3& extent) {
  return Dim3{linear % extent.x, (linear / extent.x) % extent.y, linear / (extent.x * extent.y)};
}

template <typename Invoker, typename... H>
void RunBlocks(AnyFunction fn, const LaunchView& launch, std::uint64_t first_block, std::uint64_t end_block,
               std::byte* shared) {
  const auto& stored = *static_cast<const std::tuple<StoredT<H>...>*>(launch.args);
  std::array<std::uint64_t, sizeof...(H) + 1> offsets{};
  SharedLayout<H...>(stored, offsets);
  KernelContext ctx;
  ctx.blockDim = launch.block;
  ctx.gridDim = launch.grid;
  for (std::uint64_t b = first_block; b < end_block; ++b) {
    ctx.blockIdx = Unlinearize(b, launch.grid);
    for (std::uint64_t z = 0; z < launch.block.z; ++z) {
      for (std::uint64_t y = 0; y < launch.block.y; ++y) {
        for (std::uint64_t x = 0; x < launch.block.x; ++x) {
          ctx.threadIdx = Dim3{x, y, z};
          [&]<std::size_t... I>(std::index_sequence<I...>) {
            Invoker::Call(fn, ctx, Materialize<H>(std::get<I>(stored), shared, offsets[I])...);
          }(std::index_sequence_for<H...>{});
        }
      }
    }
  }
}

// Per-block kernels: one call per block, the kernel loops over its threads.
template <typename Invoker, typename... H>
void RunWholeBlocks(AnyFunction fn, const LaunchView& launch, std::uint64_t first_block, std::uint64_t end_block,
                    std::byte* shared) {
  const auto& stored = *static_cast<const std::tuple<StoredT<H>...>*>(launch.args);
  std::array<std::uint64_t, sizeof...(H) + 1> offsets{};
  SharedLayout<H...>(stored, offsets);
  BlockContext ctx;
  ctx.blockDim = launch.block;
  ctx.gridDim = launch.grid;
  for (std::uint64_t b = first_block; b < end_block; ++b) {
    ctx.blockIdx = Unlinearize(b, launch.grid);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      Invoker::Call(fn, ctx, Materialize<H>(std::get<I>(stored), shared, offsets[I])...);
    }(std::index_sequence_for<H...>{});
  }
}

// Kernels with a barrier: each block's threads as fibers (cooperative.hpp).
template <typename Invoker, typename... H>
void RunCooperativeBlocks(AnyFunction fn, const LaunchView& launch, std::uint64_t first_block, std::uint64_t end_block,
                          std::byte* shared) {
  const auto& stored = *static_cast<const std::tuple<StoredT<H>...>*>(launch.args);
  std::array<std::uint64_t, sizeof...(H) + 1> offsets{};
  SharedLayout<H...>(stored, offsets);
  auto body = [&](CooperativeContext& ctx, std::uint64_t block) {
    ctx.blockIdx = Unlinearize(block, launch.grid);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      Invoker::Call(fn, static_cast<const CooperativeContext&>(ctx),
                    Materialize<H>(std::get<I>(stored), shared, offsets[I])...);
    }(std::index_sequence_for<H...>{});
  };
  FiberBlock::Run(launch.block, launch.grid, first_block, end_block, body);
}

// Invokers: how the runner reaches the user's code. The two static forms let
// the compiler inline the kernel body into the per-thread loop.
template <typename Fn>
struct RuntimeFunctionInvoker {
  template <typename Context, typename... A>
  static void Call(AnyFunction fn, const Context& ctx, A&&... args) {
    reinterpret_cast<Fn>(fn)(ctx, static_cast<A&&>(args)...);
  }
};
template <auto Fn>
struct StaticFunctionInvoker {
  template <typename Context, typename... A>
  static void Call(AnyFunction, const Context& ctx, A&&... args) {
    Fn(ctx, static_cast<A&&>(args)...);
  }
};
template <typename Lambda>
struct StatelessLambdaInvoker {
  template <typename Context, typename... A>
  static void Call(AnyFunction, const Context& ctx, A&&... args) {
    Lambda{}(ctx, static_cast<A&&>(args)...);
  }
};

// std::span<T> rather than the compiler's std::span<T, 18446744073709551615>.
template <typename H>
std::string ParamName() {
  if constexpr (is_span_v<H>) {
    return "std::span<" + std::string(streamexecutor::detail::TypeName<typename H::element_type>()) + ">";
  } else {
    return std::string(streamexecutor::detail::TypeName<H>());
  }
}

template <typename... H>
std::string SignatureString() {
  std::string out = "(";
  bool first = true;
  ((out += first ? "" : ", ", out += ParamName<H>(), first = false), ...);
  return out + ")";
}

// Which runner a kernel gets, from its first parameter.
enum class Runner { kPerThread, kPerBlock, kCooperative };

template <typename Signature>
struct FunctionParams;
template <typename R, typename Ctx, typename... P>
struct FunctionParams<R (*)(Ctx, P...)> {
  using Return = R;
  using Context = Ctx;
  static constexpr Runner kRunner = std::is_same_v<std::remove_cvref_t<Ctx>, BlockContext> ? Runner::kPerBlock
                                    : std::is_same_v<std::remove_cvref_t<Ctx>, CooperativeContext>
                                        ? Runner::kCooperative
                                        : Runner::kPerThread;
  template <template <typename...> class T>
  using Apply = T<NormalizeT<P>...>;
};
template <typename R, typename C, typename Ctx, typename... P>
struct FunctionParams<R (C::*)(Ctx, P...) const> : FunctionParams<R (*)(Ctx, P...)> {};

template <typename Fn>
constexpr bool CheckKernelShape() {
  static_assert(std::is_same_v<typename FunctionParams<Fn>::Return, void>, "host kernels must return void");
  using Context = std::remove_cvref_t<typename FunctionParams<Fn>::Context>;
  static_assert(std::is_same_v<Context, KernelContext> || std::is_same_v<Context, BlockContext> ||
                    std::is_same_v<Context, CooperativeContext>,
                "the first parameter of a host kernel must be `const se::host::KernelContext&` (one call per "
                "thread), `const se::host::BlockContext&` (one call per block) or "
                "`const se::host::CooperativeContext&` (one call per thread, with ctx.SyncThreads())");
  return true;
}

}  // namespace abi

// A host kernel as stored in a MultiKernelLoaderSpec (InProgramKernel): the
// runner instantiated for the kernel's parameter list, and that list spelled
// out for the load-time comparison with TypedKernel<...>.
using KernelEntry = InProgramKernel;

inline BlockRunner EntryRunner(const KernelEntry& entry) { return reinterpret_cast<BlockRunner>(entry.runner); }

namespace abi {

// Launches typed at run time (core/kernel_args.hpp): the kernel's parameters
// as the launch-time check reads them, and how checked KernelArgs become the
// stored tuple RunBlocks reads, in a command's payload.
struct RuntimeAbi {
  std::span<const KernelParamInfo> params;
  std::size_t stored_bytes;  // sizeof the stored tuple, which must fit a command's payload
  // Builds the tuple in `payload`; returns the block's shared-memory bytes.
  std::uint64_t (*assemble)(const KernelArgs& args, void* payload);
  // What the kernel's runner can run (cooperative kernels: FiberStacks::kMaxThreads).
  std::uint64_t max_threads_per_block;
  // Each thread's own stack (cooperative kernels: FiberStacks::kStackBytes);
  // 0 where a block's threads run on their worker's stack.
  std::uint64_t stack_bytes_per_thread;
};

template <typename H>
constexpr KernelParamInfo RuntimeParamInfo() {
  if constexpr (std::is_pointer_v<H>) {
    using T = std::remove_pointer_t<H>;
    return KernelParamInfo{KernelParamKind::kDevicePointer, streamexecutor::detail::TypeName<H>(),
                           streamexecutor::detail::TypeName<T>(), sizeof(T), alignof(T)};
  } else if constexpr (is_span_v<H>) {
    using T = typename H::element_type;
    return KernelParamInfo{KernelParamKind::kSharedMemory, "std::span", streamexecutor::detail::TypeName<T>(),
                           sizeof(T), alignof(T)};
  } else {
    return KernelParamInfo{KernelParamKind::kScalar, streamexecutor::detail::TypeName<H>(),
                           streamexecutor::detail::TypeName<H>(), sizeof(H), alignof(H)};
  }
}

// One checked argument as the stored parameter H: memory as its address,
// shared memory as an element count, a scalar from its bytes.
template <typename H>
StoredT<H> FromArg(const KernelArg& arg, const std::byte* data) {
  if constexpr (std::is_pointer_v<H>) {
    return static_cast<H>(static_cast<void*>(static_cast<std::byte*>(arg.memory.opaque()) + arg.memory.offset()));
  } else if constexpr (is_span_v<H>) {
    constexpr std::uint64_t kElement = sizeof(typename H::element_type);
    return arg.shared_bytes / kElement + (arg.shared_bytes % kElement != 0);
  } else {
    std::array<std::byte, sizeof(H)> raw{};
    std::memcpy(raw.data(), data + arg.offset, sizeof(H));
    return std::bit_cast<H>(raw);  // H need not be default-constructible
  }
}

template <typename... H>
std::uint64_t Assemble(const KernelArgs& args, void* payload) {
  using Stored = std::tuple<StoredT<H>...>;
  const Stored* stored = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return ::new (payload) Stored(FromArg<H>(args.args()[I], args.data())...);
  }(std::index_sequence_for<H...>{});
  std::array<std::uint64_t, sizeof...(H) + 1> offsets{};
  return SharedLayout<H...>(*stored, offsets);
}

template <typename... H>
inline constexpr std::array<KernelParamInfo, sizeof...(H)> kRuntimeParams{RuntimeParamInfo<H>()...};
template <std::uint64_t kMaxThreads, std::uint64_t kStackBytes, typename... H>
inline constexpr RuntimeAbi kRuntimeAbi{kRuntimeParams<H...>, sizeof(std::tuple<StoredT<H>...>), &Assemble<H...>,
                                        kMaxThreads, kStackBytes};

template <typename Invoker, Runner kRunner, typename... H>
struct EntryFor {
  static KernelEntry Make(AnyFunction fn) {
    BlockRunner runner;
    // Others are limited by the DeviceDescription only, which the core checks.
    const RuntimeAbi* runtime = &kRuntimeAbi<~std::uint64_t{0}, 0, H...>;
    if constexpr (kRunner == Runner::kPerBlock) {
      runner = &RunWholeBlocks<Invoker, H...>;
    } else if constexpr (kRunner == Runner::kCooperative) {
      runner = &RunCooperativeBlocks<Invoker, H...>;
      runtime = &kRuntimeAbi<FiberStacks::kMaxThreads, FiberStacks::kStackBytes, H...>;
    } else {
      runner = &RunBlocks<Invoker, H...>;
    }
    return KernelEntry{reinterpret_cast<void (*)()>(runner), fn, &SignatureString<H...>, runtime};
  }
};

template <typename Invoker, typename Fn>
struct BindInvoker {
  template <typename... H>
  using type = EntryFor<Invoker, FunctionParams<Fn>::kRunner, H...>;
};

}  // namespace abi

// The parameter list of a host kernel for a run-time typed launch, from the
// RuntimeAbi its entry carries.
// `payload_bytes`: what a launch command holds (Command::kPayloadBytes).
inline Status RuntimeParams(const HostKernelLoaderSpec& entry, const DeviceLabel& device, std::size_t payload_bytes,
                            std::vector<DeviceParam>& params) {
  const auto* abi = static_cast<const abi::RuntimeAbi*>(entry.entry.runtime_abi);
  if (abi == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetUntypedKernel on {}: host kernel '{}' was not made by AddHostKernel: its parameter list "
                     "is unknown",
                     device, entry.kernel_name);
  }
  if (abi->stored_bytes > payload_bytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "GetUntypedKernel on {}: host kernel '{}' takes {} bytes of arguments; a launch holds at most "
                     "{}: pass large data in DeviceMemory",
                     device, entry.kernel_name, abi->stored_bytes, payload_bytes);
  }
  for (const KernelParamInfo& info : abi->params) {
    DeviceParam& param = params.emplace_back();
    param.takes_memory = info.kind == KernelParamKind::kDevicePointer;
    param.takes_shared = info.kind == KernelParamKind::kSharedMemory;
    param.takes_scalar = info.kind == KernelParamKind::kScalar;
    (param.takes_scalar ? param.size : param.element_size) = info.value_size;
    param.type =
        param.takes_shared ? "std::span<" + std::string(info.value_type) + ">" : std::string(info.declared_type);
  }
  return Status();
}

// Launches refused by the host backend, built out of line.
[[gnu::cold]] inline Status SharedTooLarge(const DeviceLabel& device, const std::string* kernel_name,
                                           std::uint64_t shared, std::uint64_t per_block) {
  return MakeError(ErrorCode::kResourceExhausted,
                   "ThenLaunch of kernel '{}' on {}: the shared-memory arguments need {} bytes once each is "
                   "aligned to {} bytes; a block has {}",
                   kernel_name ? *kernel_name : std::string("<unnamed>"), device, shared, abi::kSharedAlignment,
                   per_block);
}
[[gnu::cold]] inline Status TooManyThreads(const DeviceLabel& device, const std::string* kernel_name,
                                           std::uint64_t threads, std::uint64_t limit) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "ThenLaunch of kernel '{}' on {}: {} threads per block; a kernel taking "
                   "se::host::CooperativeContext runs at most {} (each thread is a fiber with a stack of its own)",
                   kernel_name ? *kernel_name : std::string("<unnamed>"), device, threads, limit);
}

// Makes the entry for a function pointer, known at compile time or not.
template <auto Fn>
KernelEntry MakeKernelEntry() {
  using FnPtr = decltype(Fn);
  static_assert(std::is_pointer_v<FnPtr> && std::is_function_v<std::remove_pointer_t<FnPtr>>,
                "AddHostKernel<F>: F must be a function");
  static_assert(abi::CheckKernelShape<FnPtr>());
  using Entry = typename abi::FunctionParams<FnPtr>::template Apply<
      abi::BindInvoker<abi::StaticFunctionInvoker<Fn>, FnPtr>::template type>;
  return Entry::Make(nullptr);
}

template <typename Callable>
KernelEntry MakeKernelEntry(Callable callable) {
  if constexpr (std::is_pointer_v<Callable> && std::is_function_v<std::remove_pointer_t<Callable>>) {
    static_assert(abi::CheckKernelShape<Callable>());
    using Entry = typename abi::FunctionParams<Callable>::template Apply<
        abi::BindInvoker<abi::RuntimeFunctionInvoker<Callable>, Callable>::template type>;
    return Entry::Make(reinterpret_cast<AnyFunction>(callable));
  } else {
    static_assert(std::is_empty_v<Callable> && std::is_default_constructible_v<Callable>,
                  "host kernels must be stateless (capture nothing): pass state as kernel arguments");
    static_assert(
        requires { &Callable::operator(); }, "host kernels must have concrete parameter types (no `auto` parameters)");
    using Call = decltype(&Callable::operator());
    static_assert(abi::CheckKernelShape<Call>());
    using Entry = typename abi::FunctionParams<Call>::template Apply<
        abi::BindInvoker<abi::StatelessLambdaInvoker<Callable>, Call>::template type>;
    return Entry::Make(nullptr);
  }
}

// The parameter list a host kernel for TypedKernel<Params...> must take after
// its context, as the load-time check spells it.
template <typename... Params>
std::string HostSignature() {
  return abi::SignatureString<abi::NormalizeT<abi::HostParamT<Params>>...>();
}

}  // namespace streamexecutor::host_detail

namespace streamexecutor::detail {

template <typename Callable>
struct HostKernelMaker {
  static InProgramKernel Make(Callable callable) { return host_detail::MakeKernelEntry(callable); }
};
template <auto Function>
struct HostFunctionKernelMaker {
  static InProgramKernel Make() { return host_detail::MakeKernelEntry<Function>(); }
};

}  // namespace streamexecutor::detail
