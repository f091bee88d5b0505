// MultiKernelLoaderSpec: where one kernel's code lives for each platform, with
// the seed's setter for every (platform, format, location) combination. Each
// backend's loader picks the entries it understands.
#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// A CUDA device's compute capability, as PTX targets it (`.target sm_90` is 9.0).
struct CudaComputeCapability {
  int major = 0;
  int minor = 0;
  // Written out: nvcc 13 leaves a defaulted operator<=>'s implied == undefined.
  friend constexpr bool operator==(const CudaComputeCapability& a, const CudaComputeCapability& b) {
    return a.major == b.major && a.minor == b.minor;
  }
  friend constexpr bool operator!=(const CudaComputeCapability& a, const CudaComputeCapability& b) { return !(a == b); }
  friend constexpr bool operator<(const CudaComputeCapability& a, const CudaComputeCapability& b) {
    return a.major != b.major ? a.major < b.major : a.minor < b.minor;
  }
  friend constexpr bool operator<=(const CudaComputeCapability& a, const CudaComputeCapability& b) { return !(b < a); }
};

// PTX for devices of `capability` and newer (the driver compiles PTX for the
// device it loads on, never for an older one). Entries added without a
// capability have 0.0: any device.
struct CudaPtxLoaderSpec {
  CudaComputeCapability capability;
  KernelLoaderSpec code;
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

  // PTX, as the seed's CudaPtxInMemory holds it: one entry per compute
  // capability; GetKernel loads the one of the highest capability the device
  // has (an entry without a capability serves any device).
  MultiKernelLoaderSpec& AddCudaPtxInMemory(std::string_view ptx, std::string_view kernel_name) {
    return AddCudaPtx(CudaComputeCapability{}, kernel_name, ptx, {});
  }
  MultiKernelLoaderSpec& AddCudaPtxInMemory(CudaComputeCapability capability, std::string_view ptx,
                                            std::string_view kernel_name) {
    return AddCudaPtx(capability, kernel_name, ptx, {});
  }
  MultiKernelLoaderSpec& AddCudaPtxOnDisk(std::string_view filename, std::string_view kernel_name) {
    return AddCudaPtx(CudaComputeCapability{}, kernel_name, {}, filename);
  }
  MultiKernelLoaderSpec& AddCudaPtxOnDisk(CudaComputeCapability capability, std::string_view filename,
                                          std::string_view kernel_name) {
    return AddCudaPtx(capability, kernel_name, {}, filename);
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
    if (host_) return Duplicate("a host kernel", kernel_name);
    host_ = HostKernelLoaderSpec{std::string(kernel_name), detail::HostKernelMaker<Callable>::Make(callable)};
    return *this;
  }
  // Same, with the function known at compile time so its body inlines into the
  // per-thread loop.
  template <auto Function>
  MultiKernelLoaderSpec& AddHostKernel(std::string_view kernel_name) {
    if (host_) return Duplicate("a host kernel", kernel_name);
    host_ = HostKernelLoaderSpec{std::string(kernel_name), detail::HostFunctionKernelMaker<Function>::Make()};
    return *this;
  }

  // The first misuse of a setter (a second entry of one kind, or of one kind
  // and capability): a replaced entry would load other code than the caller
  // thinks, so GetKernel returns this error instead.
  const Status& status() const { return status_; }

  // The PTX for a device of `device` capability: the entry of the highest
  // capability not above it; null if there is none.
  const KernelLoaderSpec* cuda_ptx(CudaComputeCapability device) const {
    const CudaPtxLoaderSpec* best = nullptr;
    for (const CudaPtxLoaderSpec& entry : cuda_ptx_) {
      if (entry.capability <= device && (best == nullptr || best->capability < entry.capability)) best = &entry;
    }
    return best ? &best->code : nullptr;
  }
  // The PTX of the highest capability (what a message names the kernel by).
  const KernelLoaderSpec* cuda_ptx() const { return cuda_ptx(CudaComputeCapability{1 << 30, 0}); }
  std::span<const CudaPtxLoaderSpec> cuda_ptx_entries() const { return cuda_ptx_; }
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
    if (slot) return Duplicate(&slot == &cuda_cubin_     ? "CUDA cubin"
                               : &slot == &cuda_fatbin_  ? "CUDA fatbin"
                               : &slot == &opencl_text_  ? "OpenCL text"
                                                         : "an OpenCL binary",
                               kernel_name);
    slot = KernelLoaderSpec{std::string(kernel_name), std::string(data), std::string(filename), std::string(options)};
    return *this;
  }
  MultiKernelLoaderSpec& AddCudaPtx(CudaComputeCapability capability, std::string_view kernel_name,
                                    std::string_view data, std::string_view filename);
  MultiKernelLoaderSpec& Duplicate(std::string_view kind, std::string_view kernel_name);

  std::size_t arity_;
  Status status_;
  std::vector<CudaPtxLoaderSpec> cuda_ptx_;
  std::optional<KernelLoaderSpec> cuda_cubin_, cuda_fatbin_;
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
  std::string ptx = "CUDA PTX";
  for (const CudaPtxLoaderSpec& entry : cuda_ptx_) {
    if (entry.capability == CudaComputeCapability{}) continue;
    ptx += fmt::format("{}{}.{}", ptx.size() == 8 ? " (compute capability " : ", ", entry.capability.major,
                       entry.capability.minor);
  }
  if (ptx.size() > 8) ptx += ")";
  note(!cuda_ptx_.empty(), ptx);
  note(cuda_cubin_.has_value(), "CUDA cubin");
  note(cuda_fatbin_.has_value(), "CUDA fatbin");
  note(opencl_text_.has_value(), "OpenCL text");
  note(opencl_binary_.has_value(), "OpenCL binary");
  return found.empty() ? std::string("; it is empty") : "; it has: " + found;
}
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL MultiKernelLoaderSpec& MultiKernelLoaderSpec::AddCudaPtx(CudaComputeCapability capability,
                                                                           std::string_view kernel_name,
                                                                           std::string_view data,
                                                                           std::string_view filename) {
  for (const CudaPtxLoaderSpec& entry : cuda_ptx_) {
    if (entry.capability != capability) continue;
    return Duplicate(capability == CudaComputeCapability{}
                         ? std::string("CUDA PTX without a compute capability")
                         : fmt::format("CUDA PTX for compute capability {}.{}", capability.major, capability.minor),
                     kernel_name);
  }
  cuda_ptx_.push_back(CudaPtxLoaderSpec{
      capability, KernelLoaderSpec{std::string(kernel_name), std::string(data), std::string(filename), {}}});
  return *this;
}

STREAMEXECUTOR_DECL MultiKernelLoaderSpec& MultiKernelLoaderSpec::Duplicate(std::string_view kind,
                                                                          std::string_view kernel_name) {
  if (status_.ok()) {
    status_ = MakeError(ErrorCode::kAlreadyExists,
                        "the MultiKernelLoaderSpec already has {} (adding it again for kernel '{}'); each kind of "
                        "code, and each compute capability of PTX, takes one entry",
                        kind, kernel_name);
  }
  return *this;
}

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
