// Loading a CUDA library at run time, as the driver is (cuda/driver.hpp):
// what the cuBLAS, cuFFT, cuRAND and cuDNN plugins share. Each keeps its own
// entry-point table and its own messages.
#pragma once

#include <dlfcn.h>

#include <span>
#include <string>

#include "streamexecutor/detail/fmt.hpp"

namespace streamexecutor::canned_detail {

struct OpenedLibrary {
  void* handle = nullptr;
  const char* name = nullptr;  // the soname that loaded
  std::string errors;          // why each one tried before it did not
};

// The first of `names` that dlopen loads. RTLD_LOCAL: the library's symbols
// must not interpose on anything else in the process.
inline OpenedLibrary OpenFirstLibrary(std::span<const char* const> names) {
  OpenedLibrary library;
  for (const char* name : names) {
    library.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library.handle != nullptr) {
      library.name = name;
      break;
    }
    const char* why = dlerror();
    library.errors += fmt::format("{}dlopen(\"{}\"): {}", library.errors.empty() ? "" : "; ", name,
                                  why != nullptr ? why : "unknown reason");
  }
  return library;
}

// Sets `fn` to the library's `name`; a missing one is appended to `missing`.
template <typename Fn>
bool ResolveSymbol(void* library, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (fn == nullptr) missing += missing.empty() ? name : std::string(", ") + name;
  return fn != nullptr;
}

}  // namespace streamexecutor::canned_detail
