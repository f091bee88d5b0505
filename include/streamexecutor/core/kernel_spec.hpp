// MultiKernelLoaderSpec: where one kernel's code lives for each platform, with
// the seed's setter for every (platform, format, location) combination. Each
// backend's loader picks the entries it understands.
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
#include <fstream>  // Contents() reads on-disk kernels
#endif

namespace streamexecutor {

// One source of kernel code. `data` holds in-memory text or bytes; `filename`
// is set instead for the OnDisk setters and read when the kernel is loaded.
struct KernelLoaderSpec {
  std::string kernel_name;
  std::string data;
  std::string filename;
  std::string options;  // OpenCL build options

  bool on_disk() const { return !filename.empty(); }
  // The code itself, reading the file for on-disk specs.
  StatusOr<std::string> Contents() const;
};

// A kernel compiled into this program, for a backend that runs kernels on the
// CPU. The core only stores it: what the pointers are is the host backend's
// business (host/kernel_abi.hpp makes them and casts them back), so the core
// does not depend on any backend. `void (*)()` is the one function pointer
// type every other converts to and back from without a warning.
struct InProgramKernel {
  void (*runner)() = nullptr;             // runs a range of blocks
  void (*function)() = nullptr;           // the user's function, if not known at compile time
  std::string (*signature)() = nullptr;   // its parameter list, for the load-time check
  const void* runtime_abi = nullptr;      // how launches typed at run time reach it (core/kernel_args.hpp)
};

struct HostKernelLoaderSpec {
  std::string kernel_name;
  InProgramKernel entry;
};

namespace detail {
// Defined by the host backend (host/kernel_abi.hpp); AddHostKernel needs
// <streamexecutor/host.hpp> (or streamexecutor.hpp with the host backend).
template <typename Callable>
struct HostKernelMaker;
template <auto Function>
struct HostFunctionKernelMaker;
}  // namespace detail

class MultiKernelLoaderSpec {
 public:
  explicit MultiKernelLoaderSpec(std::size_t arity) : arity_(arity) {}

  std::size_t arity() const { return arity_; }

  MultiKernelLoaderSpec& AddCudaPtxInMemory(std::string_view ptx, std::string_view kernel_name) {
    return Set(cuda_ptx_, kernel_name, ptx, {}, {});
  }
  MultiKernelLoaderSpec& AddCudaPtxOnDisk(std::string_view filename, std::string_view kernel_name) {
    return Set(cuda_ptx_, kernel_name, {}, filename, {});
  }
  MultiKernelLoaderSpec& AddCudaCubinInMemory(std::string_view cubin_bytes, std::string_view kernel_name) {
    return Set(cuda_cubin_, kernel_name, cubin_bytes, {}, {});
  }
  MultiKernelLoaderSpec& AddCudaCubinOnDisk(std::string_view filename, std::string_view kernel_name) {
    return Set(cuda_cubin_, kernel_name, {}, filename, {});
  }
  MultiKernelLoaderSpec& AddCudaFatbinInMemory(std::string_view fatbin_bytes, std::string_view kernel_name) {
    return Set(cuda_fatbin_, kernel_name, fatbin_bytes, {}, {});
  }
  MultiKernelLoaderSpec& AddOpenCLTextInMemory(std::string_view text, std::string_view kernel_name,
                                               std::string_view build_options = {}) {
    return Set(opencl_text_, kernel_name, text, {}, build_options);
  }
  MultiKernelLoaderSpec& AddOpenCLTextOnDisk(std::string_view filename, std::string_view kernel_name,
                                             std::string_view build_options = {}) {
    return Set(opencl_text_, kernel_name, {}, filename, build_options);
  }
  MultiKernelLoaderSpec& AddOpenCLBinaryInMemory(std::string_view binary, std::string_view kernel_name) {
    return Set(opencl_binary_, kernel_name, binary, {}, {});
  }
  MultiKernelLoaderSpec& AddOpenCLBinaryOnDisk(std::string_view filename, std::string_view kernel_name) {
    return Set(opencl_binary_, kernel_name, {}, filename, {});
  }

  // Host backend: a function pointer or a capture-less lambda (see
  // host/kernel_abi.hpp for the parameter mapping).
  template <typename Callable>
  MultiKernelLoaderSpec& AddHostKernel(std::string_view kernel_name, Callable callable) {
    host_ = HostKernelLoaderSpec{std::string(kernel_name), detail::HostKernelMaker<Callable>::Make(callable)};
    return *this;
  }
  // Same, with the function known at compile time so its body inlines into the
  // per-thread loop.
  template <auto Function>
  MultiKernelLoaderSpec& AddHostKernel(std::string_view kernel_name) {
    host_ = HostKernelLoaderSpec{std::string(kernel_name), detail::HostFunctionKernelMaker<Function>::Make()};
    return *this;
  }

  const std::optional<KernelLoaderSpec>& cuda_ptx() const { return cuda_ptx_; }
  const std::optional<KernelLoaderSpec>& cuda_cubin() const { return cuda_cubin_; }
  const std::optional<KernelLoaderSpec>& cuda_fatbin() const { return cuda_fatbin_; }
  const std::optional<KernelLoaderSpec>& opencl_text() const { return opencl_text_; }
  const std::optional<KernelLoaderSpec>& opencl_binary() const { return opencl_binary_; }
  const std::optional<HostKernelLoaderSpec>& host_kernel() const { return host_; }

  // "; it has: CUDA PTX, OpenCL text" (or "; it is empty"): what a backend's
  // "no code for this platform" error appends, so the user sees what is there.
  std::string DescribeEntries() const;

 private:
  MultiKernelLoaderSpec& Set(std::optional<KernelLoaderSpec>& slot, std::string_view kernel_name,
                             std::string_view data, std::string_view filename, std::string_view options) {
    slot = KernelLoaderSpec{std::string(kernel_name), std::string(data), std::string(filename), std::string(options)};
    return *this;
  }

  std::size_t arity_;
  std::optional<KernelLoaderSpec> cuda_ptx_, cuda_cubin_, cuda_fatbin_;
  std::optional<KernelLoaderSpec> opencl_text_, opencl_binary_;
  std::optional<HostKernelLoaderSpec> host_;
};

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string MultiKernelLoaderSpec::DescribeEntries() const {
  std::string found;
  auto note = [&](bool present, std::string_view what) {
    if (!present) return;
    if (!found.empty()) found += ", ";
    found += what;
  };
  note(host_.has_value(), "a host kernel");
  note(cuda_ptx_.has_value(), "CUDA PTX");
  note(cuda_cubin_.has_value(), "CUDA cubin");
  note(cuda_fatbin_.has_value(), "CUDA fatbin");
  note(opencl_text_.has_value(), "OpenCL text");
  note(opencl_binary_.has_value(), "OpenCL binary");
  return found.empty() ? std::string("; it is empty") : "; it has: " + found;
}
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL StatusOr<std::string> KernelLoaderSpec::Contents() const {
  if (!on_disk()) return data;
  std::ifstream in(filename, std::ios::binary);
  if (!in) {
    return MakeError(ErrorCode::kNotFound, "cannot open kernel file '{}' for kernel '{}'", filename, kernel_name);
  }
  std::string contents{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) {
    return MakeError(ErrorCode::kDataLoss, "error reading kernel file '{}' for kernel '{}'", filename, kernel_name);
  }
  return contents;
}
#endif

}  // namespace streamexecutor
