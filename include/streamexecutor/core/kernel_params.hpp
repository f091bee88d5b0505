// Compile-time rules for kernel parameter types and for the arguments passed
// to them at launch. Everything here is consteval/type-level: nothing in it
// runs on the launch path.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/detail/type_name.hpp"

namespace streamexecutor {

enum class KernelParamKind { kScalar, kDevicePointer, kSharedMemory };

// What the loader knows about one declared TypedKernel parameter. Backends
// compare this with the real kernel (OpenCL arg info, PTX .param list).
struct KernelParamInfo {
  KernelParamKind kind;
  std::string_view declared_type;  // e.g. "streamexecutor::DeviceMemory<float>*"
  std::string_view value_type;     // scalar type, or the element type of memory
  std::size_t value_size;          // sizeof the scalar or of one element
  std::size_t value_alignment;
};

namespace detail {

template <typename P>
struct ParamTraits {
  static constexpr KernelParamKind kind = KernelParamKind::kScalar;
  using ValueType = P;
};
template <typename T>
struct ParamTraits<DeviceMemory<T>*> {
  static constexpr KernelParamKind kind = KernelParamKind::kDevicePointer;
  using ValueType = T;
  using ValueTypeMemory = DeviceMemory<T>;
};
template <typename T>
struct ParamTraits<SharedDeviceMemory<T>> {
  static constexpr KernelParamKind kind = KernelParamKind::kSharedMemory;
  using ValueType = T;
};

template <typename T>
inline constexpr bool is_device_memory_v = std::is_base_of_v<DeviceMemoryBase, T>;

// A declared TypedKernel parameter is one of: DeviceMemory<T>*,
// SharedDeviceMemory<T>, or a trivially copyable value that is not a pointer.
template <typename P>
constexpr bool CheckParamType() {
  using V = std::remove_cv_t<P>;
  if constexpr (is_device_memory_pointer_v<V> || is_shared_device_memory_v<V>) {
    return true;
  } else {
    static_assert(!std::is_reference_v<P>, "TypedKernel parameters are passed by value: drop the reference");
    static_assert(!std::is_pointer_v<V>,
                  "TypedKernel parameter is a raw pointer: declare device memory as se::DeviceMemory<T>* "
                  "(host pointers cannot be passed to a kernel)");
    static_assert(!is_device_memory_v<V>,
                  "TypedKernel parameter is DeviceMemory by value: declare it as se::DeviceMemory<T>*");
    static_assert(std::is_trivially_copyable_v<V>, "TypedKernel scalar parameters must be trivially copyable");
    return true;
  }
}

template <typename P>
constexpr KernelParamInfo MakeParamInfo() {
  using V = std::remove_cv_t<P>;
  using T = typename ParamTraits<V>::ValueType;
  return KernelParamInfo{ParamTraits<V>::kind, TypeName<V>(), TypeName<T>(), sizeof(T), alignof(T)};
}

template <typename... Params>
inline constexpr std::array<KernelParamInfo, sizeof...(Params)> kParamInfos{MakeParamInfo<Params>()...};

// Scalars must convert without narrowing: passing a double where the kernel
// takes float is a compile error, not a silent rounding.
template <typename P, typename A>
concept NonNarrowingTo = requires(A&& a) { P{static_cast<A&&>(a)}; };

template <std::size_t Index, typename P, typename A>
constexpr bool CheckArgument() {
  using V = std::remove_cv_t<P>;
  using Arg = std::remove_cvref_t<A>;
  if constexpr (is_device_memory_pointer_v<V>) {
    // A const view (&buffer.cref(), a const ScopedDeviceMemory's ptr()) is
    // accepted too: it names the same allocation, every launch reads only
    // the view's handle and offset, and callers passing a buffer the kernel
    // only reads should not need a const_cast. The parameter type does not
    // say whether the kernel writes, so this is no read-only guarantee.
    constexpr bool ok = std::is_convertible_v<Arg, const typename ParamTraits<V>::ValueTypeMemory*>;
    static_assert(ok,
                  "ThenLaunch: this argument must be a se::DeviceMemory<T>* whose T matches the kernel parameter, "
                  "or a const one (see Index, P and A in the instantiation above)");
    return ok;
  } else if constexpr (is_shared_device_memory_v<V>) {
    constexpr bool ok = std::is_same_v<Arg, V>;
    constexpr bool by_pointer =
        std::is_pointer_v<Arg> && std::is_same_v<std::remove_cv_t<std::remove_pointer_t<Arg>>, V>;
    static_assert(!by_pointer,
                  "ThenLaunch: pass SharedDeviceMemory<T> by value, not by pointer: it is a size, not memory");
    static_assert(ok || by_pointer,
                  "ThenLaunch: a SharedDeviceMemory<T> parameter takes a SharedDeviceMemory<T> argument");
    return ok;
  } else {
    constexpr bool not_memory = !std::is_pointer_v<Arg> && !is_device_memory_v<Arg>;
    static_assert(not_memory, "ThenLaunch: a pointer or DeviceMemory was passed for a scalar kernel parameter");
    constexpr bool ok = NonNarrowingTo<V, A>;
    static_assert(!not_memory || ok,
                  "ThenLaunch: argument does not convert to the kernel's scalar parameter type without "
                  "narrowing (see Index, P and A in the instantiation above)");
    return ok && not_memory;
  }
}

template <typename ParamTuple, typename ArgTuple, std::size_t... I>
constexpr bool CheckArguments(std::index_sequence<I...>) {
  return (CheckArgument<I, std::tuple_element_t<I, ParamTuple>, std::tuple_element_t<I, ArgTuple>>() && ...);
}

}  // namespace detail

// What a backend's Launch receives for each declared parameter: a memory view
// for DeviceMemory<T>*, the element count for SharedDeviceMemory<T>, the value
// for scalars. Plain data on the caller's stack.
template <typename P>
struct PackedArg {
  using type = std::remove_cv_t<P>;
};
template <typename T>
struct PackedArg<DeviceMemory<T>*> {
  using type = DeviceMemoryBase;
};
template <typename P>
using PackedArgT = typename PackedArg<std::remove_cv_t<P>>::type;

template <typename... Params>
using PackedArgs = std::tuple<PackedArgT<Params>...>;

namespace detail {

template <typename P, typename A>
constexpr PackedArgT<P> PackOne(A&& arg) {
  using V = std::remove_cv_t<P>;
  if constexpr (is_device_memory_pointer_v<V> && std::is_null_pointer_v<std::remove_cvref_t<A>>) {
    return DeviceMemoryBase();  // a nullptr literal: CheckLaunch refuses it with a message
  } else if constexpr (is_device_memory_pointer_v<V>) {
    return arg == nullptr ? DeviceMemoryBase() : static_cast<const DeviceMemoryBase&>(*arg);
  } else {
    return V{static_cast<A&&>(arg)};
  }
}

// What the plain launch path of an ArgumentLaunchBackend reads of one
// argument, with no copy where it can: the caller's own view for DeviceMemory
// (never null there: ThenLaunch's checks refused null), the object itself
// when it already has the parameter's packed type (a caller's scalar of the
// kernel's type, or an element of PackedArgs), the converted value otherwise.
template <typename P, typename A>
[[gnu::always_inline]] inline decltype(auto) ArgumentAsPassed(const A& arg) {
  using V = std::remove_cv_t<P>;
  if constexpr (is_device_memory_pointer_v<V> && std::is_null_pointer_v<A>) {
    static constexpr DeviceMemoryBase kNullView;
    return (kNullView);
  } else if constexpr (is_device_memory_pointer_v<V> && std::is_pointer_v<A>) {
    return static_cast<const DeviceMemoryBase&>(*arg);
  } else if constexpr (std::is_same_v<A, PackedArgT<P>>) {
    return (arg);
  } else {
    return PackOne<P>(arg);  // a value
  }
}

// The view a launch argument for parameter P denotes, for the launch-time
// liveness check: null for parameters that are not DeviceMemory, a null view
// for a null pointer.
template <typename P, typename A>
[[gnu::always_inline]] inline const DeviceMemoryBase* MemoryView(const A& arg) {
  if constexpr (is_device_memory_pointer_v<std::remove_cv_t<P>>) {
    static constexpr DeviceMemoryBase kNullView;
    if constexpr (std::is_null_pointer_v<A>) {
      return &kNullView;
    } else {
      return arg == nullptr ? &kNullView : static_cast<const DeviceMemoryBase*>(arg);
    }
  } else {
    return nullptr;
  }
}

}  // namespace detail

}  // namespace streamexecutor
