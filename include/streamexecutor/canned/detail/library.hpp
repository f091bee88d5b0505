// The one loader of the libraries that canned plugins open at run time, as
// the CUDA driver is (cuda/driver.hpp): cuBLAS, cuFFT, cuRAND and cuDNN (and
// the next one: NCCL). A program built with such a plugin must start on
// machines without the library, so nothing links against it; the plugin
// describes its library (RunTimeLibrary) and lists its entry points
// (EntryPoint: a symbol and the member of the plugin's table that receives
// its address), and Load resolves them once. What fails is an UNAVAILABLE
// Status naming the library, the missing symbols and the package to install.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/fmt.hpp"

namespace streamexecutor::canned_detail {

struct RunTimeLibrary {
  std::string_view backend;              // whose plugin needs it: "cuda"
  std::string_view name;                 // as messages name it: "cuBLAS"
  std::span<const char* const> sonames;  // tried in order, newest first
  std::string_view package;              // what to install
};

// One symbol of the library and where its address goes. An optional one
// (newer than some versions of the library) is left null where missing.
template <typename Api>
struct EntryPoint {
  const char* symbol;
  void (*bind)(Api& api, void* address);
  bool required = true;
};

template <typename Api, auto Member>
void BindEntryPoint(Api& api, void* address) {
  auto& slot = api.*Member;
  // The slot's pointer type, named without passing it through a template:
  // GCC drops (and warns about) a prototype's attributes there, such as
  // glibc's nonnull on strlen.
  using Function = decltype(+slot);
  slot = reinterpret_cast<Function>(address);
}

// The entry point `name` of `Api`, whose member of that name has the
// prototype's type (decltype(&::name)), so that a table that disagrees with
// the library's header does not compile. A library lists its entry points
// once, as LIST(X, Api) calling X(Api, name) for each; its table type is then
//   struct Api { LIST(STREAMEXECUTOR_ENTRY_POINT_MEMBER, Api) };
// and its entry points {LIST(STREAMEXECUTOR_LISTED_ENTRY_POINT, Api)}.
#define STREAMEXECUTOR_ENTRY_POINT_MEMBER(Api, name) decltype(&::name) name = nullptr;
#define STREAMEXECUTOR_LISTED_ENTRY_POINT(Api, name) STREAMEXECUTOR_ENTRY_POINT(Api, name),
#define STREAMEXECUTOR_ENTRY_POINT(Api, name)                                \
  ::streamexecutor::canned_detail::EntryPoint<Api> {                         \
    #name, &::streamexecutor::canned_detail::BindEntryPoint<Api, &Api::name> \
  }
#define STREAMEXECUTOR_OPTIONAL_ENTRY_POINT(Api, name)                              \
  ::streamexecutor::canned_detail::EntryPoint<Api> {                                \
    #name, &::streamexecutor::canned_detail::BindEntryPoint<Api, &Api::name>, false \
  }

template <typename Api>
struct Loaded {
  Api api;
  Status status;                 // UNAVAILABLE when the library or a required symbol is missing
  const char* soname = nullptr;  // the one that loaded
};

// Opens the first of `library.sonames` that dlopen loads (RTLD_LOCAL: its
// symbols must not interpose on anything else in the process) and resolves
// `entry_points` into Loaded::api. The library stays loaded until exit, as the
// driver does: handles made from it may be destroyed by static destructors.
template <typename Api>
Loaded<Api> Load(const RunTimeLibrary& library, std::span<const EntryPoint<Api>> entry_points) {
  Loaded<Api> loaded;
  void* handle = nullptr;
  std::string tried;
  for (const char* soname : library.sonames) {
    handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      loaded.soname = soname;
      break;
    }
    const char* why = dlerror();
    tried += ::streamexecutor::detail::Format("{}dlopen(\"{}\"): {}", tried.empty() ? "" : "; ", soname,
                                              why != nullptr ? why : "unknown reason");
  }
  const std::string_view first = library.sonames.empty() ? std::string_view() : library.sonames[0];
  if (handle == nullptr) {
    loaded.status = MakeError(ErrorCode::kUnavailable,
                              "{}: the {} plugin needs {} ({}), which could not be loaded: {}; install {}, or put the "
                              "directory holding {} on LD_LIBRARY_PATH",
                              library.backend, library.name, library.name, first, tried, library.package, first);
    return loaded;
  }
  std::string missing;
  for (const EntryPoint<Api>& entry : entry_points) {
    void* const address = dlsym(handle, entry.symbol);
    entry.bind(loaded.api, address);
    if (address == nullptr && entry.required) {
      missing += ::streamexecutor::detail::Format("{}{}", missing.empty() ? "" : ", ", entry.symbol);
    }
  }
  if (!missing.empty()) {
    loaded.status = MakeError(ErrorCode::kUnavailable, "{}: the loaded {} ({}) lacks {}; install {}", library.backend,
                              library.name, loaded.soname, missing, library.package);
  }
  return loaded;
}

// The same, from `sonames` instead of the library's own (tests name ones that
// cannot exist).
template <typename Api, std::size_t N>
Loaded<Api> Load(const RunTimeLibrary& library, const EntryPoint<Api> (&entry_points)[N],
                 std::span<const char* const> sonames) {
  RunTimeLibrary from = library;
  from.sonames = sonames;
  return Load(from, std::span<const EntryPoint<Api>>(entry_points));
}
template <typename Api, std::size_t N>
Loaded<Api> Load(const RunTimeLibrary& library, const EntryPoint<Api> (&entry_points)[N]) {
  return Load(library, std::span<const EntryPoint<Api>>(entry_points));
}

}  // namespace streamexecutor::canned_detail
