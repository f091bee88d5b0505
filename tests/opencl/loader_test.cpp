// Loading OpenCL kernels: text and binaries, in memory and on disk, the build
// log of a failed build, unknown kernel names, the per-executor cache and the
// cache on disk (STREAMEXECUTOR_KERNEL_CACHE).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "opencl/opencl_test_util.hpp"

namespace {

constexpr const char* kScale = R"(
#ifndef FACTOR
#define FACTOR 1
#endif
__kernel void scale(__global int* data) { data[get_global_id(0)] *= FACTOR; }
__kernel void other(__global int* data) { data[get_global_id(0)] = 0; }
)";

using ScaleKernel = se::TypedKernel<se::DeviceMemory<int>*>;

std::vector<int> RunScale(se::StreamExecutor<se::opencl>* executor, const ScaleKernel& kernel) {
  std::vector<int> data{1, 2, 3, 4};
  auto device = executor->AllocateOwnedArray<int>(4);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(data, device.ptr())
              .ThenLaunch(se::ThreadDim(4), se::BlockDim(1), kernel, device.ptr())
              .ThenMemcpyD2H<int>(device.cref(), data)
              .BlockHostUntilDone()
              .ok());
  return data;
}

std::string TempPath(const char* name) { return std::string("/tmp/se_opencl_test_") + name; }

}  // namespace

TEST_CASE("build options reach the compiler", "[opencl][loader]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextInMemory(kScale, "scale", "-DFACTOR=3");
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  CHECK(RunScale(executor, kernel) == std::vector<int>{3, 6, 9, 12});
}

TEST_CASE("OpenCL C text on disk loads, a missing file is named", "[opencl][loader]") {
  auto* executor = OpenCLExecutor();
  const std::string path = TempPath("scale.cl");
  std::ofstream(path) << kScale;
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextOnDisk(path, "scale", "-DFACTOR=5");
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  CHECK(RunScale(executor, kernel) == std::vector<int>{5, 10, 15, 20});
  std::remove(path.c_str());

  se::MultiKernelLoaderSpec missing(1);
  missing.AddOpenCLTextOnDisk("/nonexistent/scale.cl", "scale");
  ScaleKernel none(executor);
  se::Status status = executor->GetKernel(missing, &none);
  CHECK(status.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(status, "/nonexistent/scale.cl"));
}

TEST_CASE("loading the same spec twice builds the program once", "[opencl][loader]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextInMemory(kScale, "scale", "-DFACTOR=7");
  const int before = se::opencl::ProgramsBuilt(executor->native_state());
  ScaleKernel first(executor), second(executor);
  REQUIRE(executor->GetKernel(spec, &first).ok());
  CHECK(se::opencl::ProgramsBuilt(executor->native_state()) == before + 1);
  REQUIRE(executor->GetKernel(spec, &second).ok());
  // The other kernel of the same program comes from the cache too.
  se::MultiKernelLoaderSpec other(1);
  other.AddOpenCLTextInMemory(kScale, "other", "-DFACTOR=7");
  ScaleKernel third(executor);
  REQUIRE(executor->GetKernel(other, &third).ok());
  CHECK(se::opencl::ProgramsBuilt(executor->native_state()) == before + 1);
  // Different options are a different program.
  se::MultiKernelLoaderSpec changed(1);
  changed.AddOpenCLTextInMemory(kScale, "scale", "-DFACTOR=8");
  ScaleKernel fourth(executor);
  REQUIRE(executor->GetKernel(changed, &fourth).ok());
  CHECK(se::opencl::ProgramsBuilt(executor->native_state()) == before + 2);
  CHECK(RunScale(executor, second) == std::vector<int>{7, 14, 21, 28});
  CHECK(RunScale(executor, third) == std::vector<int>{0, 0, 0, 0});
}

TEST_CASE("a program binary round-trips: text, CL_PROGRAM_BINARIES, binary in memory and on disk", "[opencl][loader]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec text(1);
  text.AddOpenCLTextInMemory(kScale, "scale", "-DFACTOR=11");
  se::StatusOr<std::string> binary = se::opencl::ProgramBinary(executor->native_state(), text);
  REQUIRE(binary.ok());
  REQUIRE_FALSE(binary.value().empty());

  se::MultiKernelLoaderSpec in_memory(1);
  in_memory.AddOpenCLBinaryInMemory(binary.value(), "scale");
  ScaleKernel from_memory(executor);
  se::Status loaded = executor->GetKernel(in_memory, &from_memory);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  CHECK(RunScale(executor, from_memory) == std::vector<int>{11, 22, 33, 44});

  const std::string path = TempPath("scale.bin");
  std::ofstream(path, std::ios::binary) << binary.value();
  se::MultiKernelLoaderSpec on_disk(1);
  on_disk.AddOpenCLBinaryOnDisk(path, "scale");
  ScaleKernel from_disk(executor);
  REQUIRE(executor->GetKernel(on_disk, &from_disk).ok());
  CHECK(RunScale(executor, from_disk) == std::vector<int>{11, 22, 33, 44});
  std::remove(path.c_str());
}

TEST_CASE("invalid OpenCL C source: the Status carries the build log", "[opencl][loader][errors]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextInMemory("__kernel void broken(__global int* data) { data[0] = undeclared_name; }", "broken");
  ScaleKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK_FALSE(status.ok());
  CHECK(Mentions(status, "clBuildProgram failed with CL_BUILD_PROGRAM_FAILURE"));
  CHECK(Mentions(status, "kernel 'broken'"));
  CHECK(Mentions(status, "opencl:0"));
  CHECK(Mentions(status, "undeclared_name"));  // from the compiler's log
  CHECK(Mentions(status, "-cl-kernel-arg-info"));
  CHECK_FALSE(kernel.IsLoaded());
}

TEST_CASE("invalid build options are reported", "[opencl][loader][errors]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextInMemory(kScale, "scale", "-no-such-option-xyz");
  ScaleKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK_FALSE(status.ok());
  CHECK(Mentions(status, "clBuildProgram failed"));
  CHECK(Mentions(status, "-no-such-option-xyz"));
}

TEST_CASE("a kernel name that is not in the program lists the kernels it has", "[opencl][loader][errors]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextInMemory(kScale, "scael");
  ScaleKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK(status.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(status, "clCreateKernel failed with CL_INVALID_KERNEL_NAME"));
  CHECK(Mentions(status, "kernel 'scael'"));
  CHECK(Mentions(status, "scale"));
  CHECK(Mentions(status, "other"));
}

TEST_CASE("garbage bytes as a binary are refused with a Status", "[opencl][loader][errors]") {
  auto* executor = OpenCLExecutor();
  const std::string garbage = "this is not an OpenCL program binary \x01\x02\x03\xff";
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLBinaryInMemory(garbage, "scale");
  ScaleKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK_FALSE(status.ok());
  CHECK(Mentions(status, "clCreateProgramWithBinary failed"));
  CHECK(Mentions(status, "kernel 'scale'"));
  CHECK(Mentions(status, fmt::format("{}-byte OpenCL binary", garbage.size())));
  CHECK_FALSE(kernel.IsLoaded());
}

TEST_CASE("a spec without an OpenCL entry says what it has", "[opencl][loader][errors]") {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(1);
  spec.AddCudaPtxInMemory(".version 7.0", "scale");
  ScaleKernel kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK(status.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(status, "no OpenCL entry"));
  CHECK(Mentions(status, "CUDA PTX"));
}

// With POCL_DEVICES="pthread pthread" (its own test run, 'opencl loader
// (two devices, kernel cache)'): device 1 builds from device 0's binary.
TEST_CASE("STREAMEXECUTOR_KERNEL_CACHE keeps built OpenCL C for other executors and processes",
          "[opencl][.][kernel-cache]") {
  auto& platform = se::Platform<se::opencl>::Get();
  REQUIRE(platform.VisibleDeviceCount() >= 2);
  auto* first = platform.ExecutorForDevice(0).ValueOrDie();
  auto* second = platform.ExecutorForDevice(1).ValueOrDie();
  const std::string directory = TempPath(("kernel_cache_" + std::to_string(::getpid())).c_str());
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  REQUIRE(::setenv("STREAMEXECUTOR_KERNEL_CACHE", directory.c_str(), 1) == 0);
  se::MultiKernelLoaderSpec spec(1);
  spec.AddOpenCLTextInMemory(kScale, "scale", "-DFACTOR=5");
  auto count = [](se::StreamExecutor<se::opencl>* executor) {
    return std::pair(se::opencl::ProgramsBuilt(executor->native_state()),
                     se::opencl::ProgramsFromDiskCache(executor->native_state()));
  };
  auto files = [&] {
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) found.push_back(entry.path());
    return found;
  };
  const auto [built0, cached0] = count(first);
  const auto [built1, cached1] = count(second);
  ScaleKernel on_first(first), on_second(second);
  REQUIRE(first->GetKernel(spec, &on_first).ok());
  CHECK(count(first) == std::pair(built0 + 1, cached0));
  REQUIRE(files().size() == 1);
  CHECK(files()[0].filename().string().starts_with("opencl-"));
  // Another executor of the same device and driver: from the file, not the compiler.
  REQUIRE(second->GetKernel(spec, &on_second).ok());
  CHECK(count(second) == std::pair(built1, cached1 + 1));
  CHECK(RunScale(second, on_second) == std::vector<int>{5, 10, 15, 20});

  // A damaged file is a miss: built from source again, and the file rewritten.
  se::MultiKernelLoaderSpec damaged(1);
  damaged.AddOpenCLTextInMemory(kScale, "scale", "-DFACTOR=6");
  ScaleKernel d0(first), d1(second);
  REQUIRE(first->GetKernel(damaged, &d0).ok());
  std::filesystem::path path;  // the file holding the new options
  for (const auto& file : files()) {
    std::ifstream in(file, std::ios::binary);
    const std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (contents.find("-DFACTOR=6") != std::string::npos) path = file;
  }
  REQUIRE(!path.empty());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "999\nnot a key";
  REQUIRE(second->GetKernel(damaged, &d1).ok());
  CHECK(count(second) == std::pair(built1 + 1, cached1 + 1));
  CHECK(RunScale(second, d1) == std::vector<int>{6, 12, 18, 24});
  CHECK(std::filesystem::file_size(path) > 100);

  ::unsetenv("STREAMEXECUTOR_KERNEL_CACHE");
  std::filesystem::remove_all(directory);
}
