// Pages of one process mapped into another (Linux): how the host backend
// shares device memory and events between processes (core/ipc.hpp), and how
// the CUDA driver double stands in for cuIpc*.
//
// Memory that a process already uses is moved, in place, into a memory file
// (memfd): its contents are copied into the file, which is then mapped over
// the same addresses, so pointers and views of it stay valid. Another process
// opens the file through /proc/<pid>/fd/<fd>, which the kernel allows to a
// process of the same user, and maps it. The file's inode travels with the
// handle and is compared on opening, so that a descriptor number reused for
// another file is refused rather than mapped.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "streamexecutor/core/status.hpp"

namespace streamexecutor::detail {

struct SharedPages {
  std::int32_t pid = 0;
  std::int32_t fd = -1;
  std::uint64_t inode = 0;
  std::uint64_t bytes = 0;
};

inline std::uint64_t PageSize() {
  static const std::uint64_t size = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  return size;
}

[[gnu::cold]] inline Status SystemError(ErrorCode code, std::string_view call, int error, std::string_view what) {
  return MakeError(code, "{} failed: {} ({}) {}", call, std::strerror(error), error, what);
}

// Moves the whole pages [base, base + bytes) into a new memory file, in
// place. Nothing may write them meanwhile (a write between the copy and the
// mapping would be lost): the caller has waited for the work that uses them.
inline StatusOr<SharedPages> SharePagesInPlace(void* base, std::uint64_t bytes, const char* name) {
  if (reinterpret_cast<std::uintptr_t>(base) % PageSize() != 0 || bytes % PageSize() != 0) {
    return MakeError(ErrorCode::kInternal, "sharing memory: [{}, +{}) is not whole pages", fmt::ptr(base), bytes);
  }
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return SystemError(ErrorCode::kResourceExhausted, "memfd_create", errno, "for shared memory");
  auto fail = [fd](ErrorCode code, std::string_view call, std::uint64_t size) {
    const int error = errno;
    close(fd);
    return SystemError(code, call, error, ::streamexecutor::detail::Format("moving {} bytes into shared memory", size));
  };
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) return fail(ErrorCode::kResourceExhausted, "ftruncate", bytes);
  for (std::uint64_t done = 0; done < bytes;) {
    const ssize_t wrote = pwrite(fd, static_cast<const char*>(base) + done, bytes - done, static_cast<off_t>(done));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return fail(ErrorCode::kResourceExhausted, "pwrite", bytes);
    done += static_cast<std::uint64_t>(wrote);
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) return fail(ErrorCode::kInternal, "fstat", bytes);
  if (mmap(base, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    return fail(ErrorCode::kResourceExhausted, "mmap", bytes);
  }
  return SharedPages{static_cast<std::int32_t>(getpid()), fd, static_cast<std::uint64_t>(info.st_ino), bytes};
}

// New zeroed pages in a memory file, mapped here: memory made to be shared.
inline StatusOr<SharedPages> CreateSharedPages(std::uint64_t bytes, const char* name, void** mapped) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return SystemError(ErrorCode::kResourceExhausted, "memfd_create", errno, "for shared memory");
  struct stat info {};
  void* memory = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 || fstat(fd, &info) != 0 ||
      (memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return SystemError(ErrorCode::kResourceExhausted, "ftruncate, fstat or mmap", error,
                       ::streamexecutor::detail::Format("making {} bytes of shared memory", bytes));
  }
  *mapped = memory;
  return SharedPages{static_cast<std::int32_t>(getpid()), fd, static_cast<std::uint64_t>(info.st_ino), bytes};
}

// Gives the pages private memory of their own again (their contents are
// dropped) and closes the file: what another process still maps of it is
// no longer this process's memory. For memory about to be freed.
inline void UnsharePages(void* base, std::uint64_t bytes, int fd) {
  mmap(base, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  close(fd);
}

// Maps another process's shared pages. NOT_FOUND where that process has
// exited or closed them; FAILED_PRECONDITION where the kernel refuses (a
// process of another user).
inline StatusOr<void*> MapSharedPages(const SharedPages& pages) {
  const std::string path = ::streamexecutor::detail::Format("/proc/{}/fd/{}", pages.pid, pages.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return MakeError(ErrorCode::kNotFound, "opening {}: process {} has exited, or has freed the memory it exported",
                       path, pages.pid);
    }
    return SystemError(error == EACCES || error == EPERM ? ErrorCode::kFailedPrecondition : ErrorCode::kInternal,
                       "open", error,
                       ::streamexecutor::detail::Format("of {} (memory exported by process {})", path, pages.pid));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || static_cast<std::uint64_t>(info.st_ino) != pages.inode ||
      static_cast<std::uint64_t>(info.st_size) < pages.bytes) {
    close(fd);
    return MakeError(ErrorCode::kNotFound,
                     "opening {}: it is no longer the memory process {} exported (freed, its descriptor reused)", path,
                     pages.pid);
  }
  void* mapped = mmap(nullptr, pages.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (mapped == MAP_FAILED) {
    return SystemError(ErrorCode::kResourceExhausted, "mmap", error,
                       ::streamexecutor::detail::Format("of {} bytes exported by process {}", pages.bytes, pages.pid));
  }
  return mapped;
}

inline void UnmapSharedPages(void* base, std::uint64_t bytes) { munmap(base, bytes); }

}  // namespace streamexecutor::detail
