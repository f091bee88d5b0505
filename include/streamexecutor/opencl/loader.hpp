// Building OpenCL programs (text or binary), the per-executor program cache
// (and, with STREAMEXECUTOR_KERNEL_CACHE, the built binaries on disk), and
// creating a checked cl_kernel from a MultiKernelLoaderSpec.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/detail/kernel_cache.hpp"
#include "streamexecutor/detail/separate_compilation.hpp"
#include "streamexecutor/opencl/runtime.hpp"
#include "streamexecutor/opencl/signature.hpp"

namespace streamexecutor::opencl_detail {

// Always on: the signature check reads clGetKernelArgInfo.
inline constexpr std::string_view kArgInfoOption = "-cl-kernel-arg-info";

struct ProgramSource {
  const KernelLoaderSpec* spec = nullptr;
  bool binary = false;
};

// Text is preferred: it builds for any device, a binary only for its own.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL StatusOr<ProgramSource> PickSource(const Executor& executor, const MultiKernelLoaderSpec& spec) {
  if (spec.opencl_text()) return ProgramSource{&*spec.opencl_text(), false};
  if (spec.opencl_binary()) return ProgramSource{&*spec.opencl_binary(), true};
  return MakeError(ErrorCode::kNotFound,
                   "GetKernel on {}: the MultiKernelLoaderSpec has no OpenCL entry (add one with "
                   "AddOpenCLTextInMemory/OnDisk or AddOpenCLBinaryInMemory/OnDisk){}",
                   executor.label, spec.DescribeEntries());
}
#else
STREAMEXECUTOR_DECL StatusOr<ProgramSource> PickSource(const Executor& executor, const MultiKernelLoaderSpec& spec);
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string BuildLog(cl_program program, cl_device_id device) {
  std::string log =
      Trim(InfoString([device](cl_program p, cl_program_build_info param, std::size_t size, void* value,
                               std::size_t* ret) { return clGetProgramBuildInfo(p, device, param, size, value, ret); },
                      program, CL_PROGRAM_BUILD_LOG));
  return log.empty() ? std::string("(the driver gave no build log)") : log;
}
#else
STREAMEXECUTOR_DECL std::string BuildLog(cl_program program, cl_device_id device);
#endif

STREAMEXECUTOR_DECL StatusOr<std::string> ProgramBinary(const Executor& executor, cl_program program);

// OpenCL C built from the disk cache's binary (detail/kernel_cache.hpp), or
// null on a miss. The key names the device and its driver as well as the
// options and the source: a binary is for one device and one compiler. A
// binary the driver refuses (another driver, a damaged file) is a miss too.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string DiskCacheKey(const Executor& executor, const std::string& options,
                                             const std::string& code) {
  return ::streamexecutor::detail::Format(
      "opencl\ndevice {}\ndevice version {}\ndriver {}\noptions {}\nsource {}\n{}", executor.device_name,
      InfoString(clGetDeviceInfo, executor.device, CL_DEVICE_VERSION),
      InfoString(clGetDeviceInfo, executor.device, CL_DRIVER_VERSION), options, code.size(), code);
}
STREAMEXECUTOR_DECL cl_program ProgramFromDiskCache(const Executor& executor, const std::string& key,
                                                    const std::string& options) {
  std::string binary;
  if (!detail::ReadKernelCache("opencl", key, binary)) return nullptr;
  const std::size_t length = binary.size();
  const auto* data = reinterpret_cast<const unsigned char*>(binary.data());
  cl_int binary_status = CL_SUCCESS, error = CL_SUCCESS;
  cl_program program =
      clCreateProgramWithBinary(executor.context, 1, &executor.device, &length, &data, &binary_status, &error);
  if (error == CL_SUCCESS && binary_status == CL_SUCCESS &&
      clBuildProgram(program, 1, &executor.device, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
    return program;
  }
  if (program != nullptr) clReleaseProgram(program);
  return nullptr;
}
#else
STREAMEXECUTOR_DECL std::string DiskCacheKey(const Executor& executor, const std::string& options,
                                             const std::string& code);
STREAMEXECUTOR_DECL cl_program ProgramFromDiskCache(const Executor& executor, const std::string& key,
                                                    const std::string& options);
#endif

// Builds (or finds in the cache) the program for `source`. Failed builds are
// not cached, so a corrected file is picked up by the next GetKernel.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL StatusOr<cl_program> GetProgram(Executor& executor, const ProgramSource& source) {
  const KernelLoaderSpec& spec = *source.spec;
  StatusOr<std::string> code = spec.Contents();
  if (!code.ok())
    return Status(code.status().code(),
                  ::streamexecutor::detail::Format("GetKernel on {}: {}", executor.label, code.status().message()));
  const std::string options = Trim(spec.options + " " + std::string(kArgInfoOption));
  std::string key = ::streamexecutor::detail::Format("{}\n{}\n", source.binary ? "binary" : "text", options);
  key += code.value();

  std::lock_guard<std::mutex> lock(executor.mutex);
  if (auto it = executor.programs.find(key); it != executor.programs.end()) return it->second;

  cl_int error = CL_SUCCESS;
  cl_program program = nullptr;
  const std::string& bytes = code.value();
  const char* what = source.binary ? "OpenCL binary" : "OpenCL C source";
  const std::string origin =
      spec.on_disk() ? ::streamexecutor::detail::Format("'{}'", spec.filename) : std::string("in memory");
  std::string disk_key;  // set where the disk cache is on, for OpenCL C
  if (source.binary) {
    const std::size_t length = bytes.size();
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    cl_int binary_status = CL_SUCCESS;
    program = clCreateProgramWithBinary(executor.context, 1, &executor.device, &length, &data, &binary_status, &error);
    if (error == CL_SUCCESS && binary_status != CL_SUCCESS) error = binary_status;
    if (error != CL_SUCCESS) {
      if (program) clReleaseProgram(program);
      return ClError("clCreateProgramWithBinary", error,
                     "for kernel '{}' on {}: the {}-byte {} ({}) is not a program for this device", spec.kernel_name,
                     executor.label, length, what, origin);
    }
  } else {
    if (detail::KernelCacheDirectory() != nullptr) {
      disk_key = DiskCacheKey(executor, options, bytes);
      if (cl_program cached = ProgramFromDiskCache(executor, disk_key, options); cached != nullptr) {
        ++executor.programs_from_disk;
        executor.programs.emplace(std::move(key), cached);
        return cached;
      }
    }
    const char* text = bytes.data();
    const std::size_t length = bytes.size();
    program = clCreateProgramWithSource(executor.context, 1, &text, &length, &error);
    if (error != CL_SUCCESS) {
      return ClError("clCreateProgramWithSource", error, "for kernel '{}' on {}", spec.kernel_name, executor.label);
    }
  }
  error = clBuildProgram(program, 1, &executor.device, options.c_str(), nullptr, nullptr);
  if (error != CL_SUCCESS) {
    Status status =
        ClError("clBuildProgram", error, "building the {} ({}) for kernel '{}' on {} with options '{}'; build log:\n{}",
                what, origin, spec.kernel_name, executor.label, options, BuildLog(program, executor.device));
    clReleaseProgram(program);
    return status;
  }
  ++executor.programs_built;
  if (!disk_key.empty()) {
    if (StatusOr<std::string> binary = ProgramBinary(executor, program); binary.ok() && !binary.value().empty()) {
      detail::WriteKernelCache("opencl", disk_key, binary.value());
    }
  }
  executor.programs.emplace(std::move(key), program);
  return program;
}
#else
STREAMEXECUTOR_DECL StatusOr<cl_program> GetProgram(Executor& executor, const ProgramSource& source);
#endif

#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL std::string KernelNames(cl_program program) {
  std::string names = InfoString(clGetProgramInfo, program, CL_PROGRAM_KERNEL_NAMES);
  for (char& c : names) {
    if (c == ';') c = ',';
  }
  std::string spaced;
  for (char c : names) {
    spaced += c;
    if (c == ',') spaced += ' ';
  }
  return spaced.empty() ? std::string("none") : spaced;
}
#else
STREAMEXECUTOR_DECL std::string KernelNames(cl_program program);
#endif

// clCreateKernel plus `check(kernel)` (the signature check of a TypedKernel,
// or reading the parameters of an UntypedKernel); the caller owns the result.
template <typename Check>
StatusOr<cl_kernel> CreateCheckedKernel(Executor& executor, cl_program program, const std::string& name,
                                        Check&& check) {
  cl_int error = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name.c_str(), &error);
  if (error != CL_SUCCESS) {
    return ClError("clCreateKernel", error, "for kernel '{}' on {}: the program has the kernels: {}", name,
                   executor.label, KernelNames(program));
  }
  if (Status checked = check(kernel); !checked.ok()) {
    clReleaseKernel(kernel);
    return checked;
  }
  return kernel;
}

// CL_PROGRAM_BINARIES of a single-device program.
#if STREAMEXECUTOR_DEFINE_OUT_OF_LINE
STREAMEXECUTOR_DECL StatusOr<std::string> ProgramBinary(const Executor& executor, cl_program program) {
  std::size_t size = 0;
  cl_int error = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr);
  if (error != CL_SUCCESS) return ClError("clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)", error, "on {}", executor.label);
  std::string binary(size, '\0');
  unsigned char* data = reinterpret_cast<unsigned char*>(binary.data());
  error = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr);
  if (error != CL_SUCCESS) return ClError("clGetProgramInfo(CL_PROGRAM_BINARIES)", error, "on {}", executor.label);
  return binary;
}
#else
STREAMEXECUTOR_DECL StatusOr<std::string> ProgramBinary(const Executor& executor, cl_program program);
#endif

}  // namespace streamexecutor::opencl_detail
