// MultiKernelLoaderSpec: where one kernel's code lives for each platform, with
// the seed's setter for every (platform, format, location) combination. Each
// backend's loader picks the entries it understands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
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
  std::string options;  // OpenCL build options; NVRTC options for CUDA C++ source; shaderc's for GLSL

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
  void (*runner)() = nullptr;            // runs a range of blocks
  void (*function)() = nullptr;          // the user's function, if not known at compile time
  std::string (*signature)() = nullptr;  // its parameter list, for the load-time check
  const void* runtime_abi = nullptr;     // how launches typed at run time reach it (core/kernel_args.hpp)
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
// A kind of kernel code ("CUDA PTX", "OpenCL binary"). A backend lists the
// formats it loads in B::kKernelFormats (core/backend.hpp); the spec keeps
// every format's entries in one list, so a new format (SPIR-V, CUDA C++
// source) is one KernelFormat and its seed-named setters, and nothing else
// here. Formats are compared by name: specs cross shared libraries.
struct KernelFormat {
  std::string_view name;                // as messages say it
  bool per_compute_capability = false;  // one entry per CudaComputeCapability (PTX)
  friend constexpr bool operator==(const KernelFormat& a, const KernelFormat& b) { return a.name == b.name; }
};

namespace kernel_formats {
inline constexpr KernelFormat kCudaPtx{"CUDA PTX", true};
inline constexpr KernelFormat kCudaCubin{"CUDA cubin"};
inline constexpr KernelFormat kCudaFatbin{"CUDA fatbin"};
inline constexpr KernelFormat kCudaSource{"CUDA C++ source"};
inline constexpr KernelFormat kOpenCLText{"OpenCL text"};
inline constexpr KernelFormat kOpenCLBinary{"OpenCL binary"};
inline constexpr KernelFormat kSpirv{"SPIR-V"};
inline constexpr KernelFormat kGlsl{"GLSL source"};
// A C++ function of this program (AddHostKernel): not code to load, so its
// entry is kept apart (host_kernel()), but it is a format a backend declares.
inline constexpr KernelFormat kHostFunction{"a host kernel"};
}  // namespace kernel_formats

// One entry of a MultiKernelLoaderSpec: code in one format (for PTX, for one
// compute capability; {0, 0} when none was given).
struct KernelCodeEntry {
  KernelFormat format;
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
    return AddCode(kernel_formats::kCudaPtx, {}, kernel_name, ptx, {});
  }
  MultiKernelLoaderSpec& AddCudaPtxInMemory(CudaComputeCapability capability, std::string_view ptx,
                                            std::string_view kernel_name) {
    return AddCode(kernel_formats::kCudaPtx, capability, kernel_name, ptx, {});
  }
  MultiKernelLoaderSpec& AddCudaPtxOnDisk(std::string_view filename, std::string_view kernel_name) {
    return AddCode(kernel_formats::kCudaPtx, {}, kernel_name, {}, filename);
  }
  MultiKernelLoaderSpec& AddCudaPtxOnDisk(CudaComputeCapability capability, std::string_view filename,
                                          std::string_view kernel_name) {
    return AddCode(kernel_formats::kCudaPtx, capability, kernel_name, {}, filename);
  }
  MultiKernelLoaderSpec& AddCudaCubinInMemory(std::string_view cubin_bytes, std::string_view kernel_name) {
    return AddCode(kernel_formats::kCudaCubin, {}, kernel_name, cubin_bytes, {});
  }
  MultiKernelLoaderSpec& AddCudaCubinOnDisk(std::string_view filename, std::string_view kernel_name) {
    return AddCode(kernel_formats::kCudaCubin, {}, kernel_name, {}, filename);
  }
  MultiKernelLoaderSpec& AddCudaFatbinInMemory(std::string_view fatbin_bytes, std::string_view kernel_name) {
    return AddCode(kernel_formats::kCudaFatbin, {}, kernel_name, fatbin_bytes, {});
  }
  // CUDA C++ compiled with NVRTC when GetKernel loads it (for the device's
  // compute capability, unless `options` names one), for a device that has
  // no cubin, fatbin or PTX entry here. `kernel_name` is a name expression:
  // "scale" for an extern "C" kernel or a C++ one, "scale<float>" for an
  // instance of a template kernel. `options` go to nvrtcCompileProgram,
  // separated by spaces ("-std=c++20 -I/path -DN=4").
  MultiKernelLoaderSpec& AddCudaSourceInMemory(std::string_view source, std::string_view kernel_name,
                                               std::string_view options = {}) {
    return AddCode(kernel_formats::kCudaSource, {}, kernel_name, source, {}, options);
  }
  MultiKernelLoaderSpec& AddCudaSourceOnDisk(std::string_view filename, std::string_view kernel_name,
                                             std::string_view options = {}) {
    return AddCode(kernel_formats::kCudaSource, {}, kernel_name, {}, filename, options);
  }
  MultiKernelLoaderSpec& AddOpenCLTextInMemory(std::string_view text, std::string_view kernel_name,
                                               std::string_view build_options = {}) {
    return AddCode(kernel_formats::kOpenCLText, {}, kernel_name, text, {}, build_options);
  }
  MultiKernelLoaderSpec& AddOpenCLTextOnDisk(std::string_view filename, std::string_view kernel_name,
                                             std::string_view build_options = {}) {
    return AddCode(kernel_formats::kOpenCLText, {}, kernel_name, {}, filename, build_options);
  }
  MultiKernelLoaderSpec& AddOpenCLBinaryInMemory(std::string_view binary, std::string_view kernel_name) {
    return AddCode(kernel_formats::kOpenCLBinary, {}, kernel_name, binary, {});
  }
  MultiKernelLoaderSpec& AddOpenCLBinaryOnDisk(std::string_view filename, std::string_view kernel_name) {
    return AddCode(kernel_formats::kOpenCLBinary, {}, kernel_name, {}, filename);
  }
  // A SPIR-V module (a Vulkan compute shader); the kernel name is its entry
  // point ("main" for GLSL compiled by glslc). The words are copied.
  MultiKernelLoaderSpec& AddSpirvInMemory(std::span<const std::uint32_t> words, std::string_view kernel_name) {
    return AddCode(kernel_formats::kSpirv, {}, kernel_name,
                   std::string_view(reinterpret_cast<const char*>(words.data()), words.size_bytes()), {});
  }
  MultiKernelLoaderSpec& AddSpirvOnDisk(std::string_view filename, std::string_view kernel_name) {
    return AddCode(kernel_formats::kSpirv, {}, kernel_name, {}, filename);
  }
  // A GLSL compute shader compiled to SPIR-V when GetKernel loads it (shaderc,
  // at run time), for a device that has no SPIR-V entry here. Its entry point
  // is GLSL's main; the module names it `kernel_name`. `options`, separated by
  // spaces: -DNAME[=VALUE], -O, -Os, -O0, -g (the Vulkan backend's documentation).
  MultiKernelLoaderSpec& AddGlslInMemory(std::string_view source, std::string_view kernel_name,
                                         std::string_view options = {}) {
    return AddCode(kernel_formats::kGlsl, {}, kernel_name, source, {}, options);
  }
  MultiKernelLoaderSpec& AddGlslOnDisk(std::string_view filename, std::string_view kernel_name,
                                       std::string_view options = {}) {
    return AddCode(kernel_formats::kGlsl, {}, kernel_name, {}, filename, options);
  }
  // What every setter above does: one entry of code in `format` (a backend
  // with a format of its own calls it from its seed-named setter). A second
  // entry of the same format (for PTX, of the same compute capability) is
  // refused like the setters' (status()); the first is kept.
  MultiKernelLoaderSpec& AddCode(const KernelFormat& format, CudaComputeCapability capability,
                                 std::string_view kernel_name, std::string_view data, std::string_view filename,
                                 std::string_view options = {});

  // Host backend: a function pointer or a capture-less lambda (see
  // host/kernel_abi.hpp for the parameter mapping).
  template <typename Callable>
  MultiKernelLoaderSpec& AddHostKernel(std::string_view kernel_name, Callable callable) {
    if (has_host_) return Duplicate("a host kernel", kernel_name);
    host_ = HostKernelLoaderSpec{std::string(kernel_name), detail::HostKernelMaker<Callable>::Make(callable)};
    has_host_ = true;
    return *this;
  }
  // Same, with the function known at compile time so its body inlines into the
  // per-thread loop.
  template <auto Function>
  MultiKernelLoaderSpec& AddHostKernel(std::string_view kernel_name) {
    if (has_host_) return Duplicate("a host kernel", kernel_name);
    host_ = HostKernelLoaderSpec{std::string(kernel_name), detail::HostFunctionKernelMaker<Function>::Make()};
    has_host_ = true;
    return *this;
  }

  // The first misuse of a setter (a second entry of one kind, or of one kind
  // and capability): a replaced entry would load other code than the caller
  // thinks, so GetKernel returns this error instead.
  const Status& status() const { return status_; }

  // The entry of `format` for a device of compute capability `device`: the
  // highest capability not above it (a format without capabilities has one
  // entry); by default the highest, which messages name the kernel by. Null
  // when there is none.
  const KernelLoaderSpec* Code(const KernelFormat& format,
                               CudaComputeCapability device = CudaComputeCapability{1 << 30, 0}) const {
    const KernelCodeEntry* best = nullptr;
    for (const KernelCodeEntry& entry : code_) {
      if (entry.format == format && entry.capability <= device &&
          (best == nullptr || best->capability < entry.capability)) {
        best = &entry;
      }
    }
    return best ? &best->code : nullptr;
  }
  std::span<const KernelCodeEntry> code_entries() const { return code_; }

  // The seed's accessors, one per format.
  const KernelLoaderSpec* cuda_ptx(CudaComputeCapability device) const {
    return Code(kernel_formats::kCudaPtx, device);
  }
  const KernelLoaderSpec* cuda_ptx() const { return Code(kernel_formats::kCudaPtx); }
  const KernelLoaderSpec* cuda_cubin() const { return Code(kernel_formats::kCudaCubin); }
  const KernelLoaderSpec* cuda_fatbin() const { return Code(kernel_formats::kCudaFatbin); }
  const KernelLoaderSpec* cuda_source() const { return Code(kernel_formats::kCudaSource); }
  const KernelLoaderSpec* opencl_text() const { return Code(kernel_formats::kOpenCLText); }
  const KernelLoaderSpec* opencl_binary() const { return Code(kernel_formats::kOpenCLBinary); }
  const KernelLoaderSpec* spirv() const { return Code(kernel_formats::kSpirv); }
  const KernelLoaderSpec* glsl() const { return Code(kernel_formats::kGlsl); }
  const HostKernelLoaderSpec* host_kernel() const { return has_host_ ? &host_ : nullptr; }

  // "; it has: CUDA PTX, OpenCL text" (or "; it is empty"): what a backend's
  // "no code for this platform" error appends, so the user sees what is there.
  std::string DescribeEntries() const;

 private:
  MultiKernelLoaderSpec& Duplicate(std::string_view kind, std::string_view kernel_name);

  std::size_t arity_;
  Status status_;
  std::vector<KernelCodeEntry> code_;  // in the order they were added
  // Not a std::optional: g++ 12 takes the empty optional's string for
  // maybe-uninitialized where a spec without a host kernel is destroyed
  // (-Werror=maybe-uninitialized in consumers' builds).
  HostKernelLoaderSpec host_;
  bool has_host_ = false;
};

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string MultiKernelLoaderSpec::DescribeEntries() const {
  std::string found;
  auto note = [&](bool present, std::string_view what) {
    if (!present) return;
    if (!found.empty()) found += ", ";
    found += what;
  };
  note(has_host_, kernel_formats::kHostFunction.name);
  // Each format once, where its first entry is; PTX with its capabilities.
  for (std::size_t i = 0; i < code_.size(); ++i) {
    const KernelFormat& format = code_[i].format;
    bool seen = false;
    for (std::size_t j = 0; j < i; ++j) seen |= code_[j].format == format;
    if (seen) continue;
    std::string what(format.name);
    std::string capabilities;
    for (std::size_t j = i; j < code_.size(); ++j) {
      if (!(code_[j].format == format) || code_[j].capability == CudaComputeCapability{}) continue;
      capabilities += ::streamexecutor::detail::Format("{}{}.{}", capabilities.empty() ? "" : ", ",
                                                       code_[j].capability.major, code_[j].capability.minor);
    }
    if (!capabilities.empty()) what += " (compute capability " + capabilities + ")";
    note(true, what);
  }
  return found.empty() ? std::string("; it is empty") : "; it has: " + found;
}
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL MultiKernelLoaderSpec& MultiKernelLoaderSpec::AddCode(
    const KernelFormat& format, CudaComputeCapability capability, std::string_view kernel_name, std::string_view data,
    std::string_view filename, std::string_view options) {
  for (const KernelCodeEntry& entry : code_) {
    if (!(entry.format == format) || entry.capability != capability) continue;
    if (!format.per_compute_capability) {
      return Duplicate(
          format == kernel_formats::kOpenCLBinary ? std::string("an OpenCL binary") : std::string(format.name),
          kernel_name);
    }
    return Duplicate(capability == CudaComputeCapability{}
                         ? ::streamexecutor::detail::Format("{} without a compute capability", format.name)
                         : ::streamexecutor::detail::Format("{} for compute capability {}.{}", format.name,
                                                            capability.major, capability.minor),
                     kernel_name);
  }
  code_.push_back(KernelCodeEntry{
      format, capability,
      KernelLoaderSpec{std::string(kernel_name), std::string(data), std::string(filename), std::string(options)}});
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
