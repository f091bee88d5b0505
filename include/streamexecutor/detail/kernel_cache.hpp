// The kernel cache on disk: compiled kernels kept between processes where
// STREAMEXECUTOR_KERNEL_CACHE names a directory (CUDA C++ compiled by NVRTC,
// OpenCL programs built from source). It is only ever a shortcut: a file that
// is missing, damaged or for another key is a miss, and a directory that
// cannot be written costs the cache, never the load.
//
// A file is named after a hash of its key and holds the whole key, which is
// compared on reading, so two keys with one hash never share an entry. It is
// written under a name of this process's and renamed into place, so that a
// reader in another process never sees half of one.
#pragma once

#include <string>
#include <string_view>

#include "streamexecutor/detail/separate_compilation.hpp"

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "streamexecutor/detail/fmt.hpp"
#endif

namespace streamexecutor::detail {

// The directory, or null where the cache is off (unset or empty).
STREAMEXECUTOR_DECL const char* KernelCacheDirectory();
// The payload stored for `key` under `kind` ("nvrtc", "opencl"); false on a miss.
STREAMEXECUTOR_DECL bool ReadKernelCache(std::string_view kind, const std::string& key, std::string& payload);
STREAMEXECUTOR_DECL void WriteKernelCache(std::string_view kind, const std::string& key, std::string_view payload);

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
namespace kernel_cache_detail {
// 64-bit FNV-1a.
inline std::uint64_t Hash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}
inline std::string Path(const char* directory, std::string_view kind, const std::string& key) {
  return ::streamexecutor::detail::Format("{}/{}-{:016x}", directory, kind, Hash(key));
}
}  // namespace kernel_cache_detail

STREAMEXECUTOR_DECL const char* KernelCacheDirectory() {
  const char* directory = std::getenv("STREAMEXECUTOR_KERNEL_CACHE");
  return directory != nullptr && directory[0] != '\0' ? directory : nullptr;
}

STREAMEXECUTOR_DECL bool ReadKernelCache(std::string_view kind, const std::string& key, std::string& payload) {
  const char* directory = KernelCacheDirectory();
  if (directory == nullptr) return false;
  std::FILE* file = std::fopen(kernel_cache_detail::Path(directory, kind, key).c_str(), "rb");
  if (file == nullptr) return false;
  std::string contents;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) contents.append(buffer, n);
  std::fclose(file);
  const std::string header = ::streamexecutor::detail::Format("{}\n", key.size());
  const std::string_view view = contents;
  if (!view.starts_with(header) || view.substr(header.size(), key.size()) != key) return false;
  payload = contents.substr(header.size() + key.size());
  return !payload.empty();
}

STREAMEXECUTOR_DECL void WriteKernelCache(std::string_view kind, const std::string& key, std::string_view payload) {
  const char* directory = KernelCacheDirectory();
  if (directory == nullptr) return;
  const std::string path = kernel_cache_detail::Path(directory, kind, key);
  const std::string temporary = ::streamexecutor::detail::Format("{}.{}.tmp", path, static_cast<long>(::getpid()));
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) return;
  const std::string header = ::streamexecutor::detail::Format("{}\n", key.size());
  const bool written = std::fwrite(header.data(), 1, header.size(), file) == header.size() &&
                       std::fwrite(key.data(), 1, key.size(), file) == key.size() &&
                       std::fwrite(payload.data(), 1, payload.size(), file) == payload.size();
  if (std::fclose(file) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
  }
}
#endif

}  // namespace streamexecutor::detail
