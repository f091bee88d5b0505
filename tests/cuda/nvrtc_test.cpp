// CUDA C++ source compiled at run time (AddCudaSourceInMemory/OnDisk): the
// real NVRTC compiles here (it runs on the CPU), and its PTX goes to the
// counting driver double, which loads it, reads its entries and records the
// launches. Template kernels by name expression, the signature check on the
// compiled PTX, the compile log in the Status, options and include paths,
// the cache per executor and on disk. Exits 77 (SKIP) where NVRTC does not load.
#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

int SeTestPreflight() {
  if (const auto& nvrtc = se::cuda_detail::Nvrtc(); !nvrtc.status.ok()) {
    fmt::print("SKIPPED: NVRTC does not load here: {}\n", nvrtc.status.ToString());
    return 77;
  }
  return -1;
}

namespace {

using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

long Compilations() { return se::cuda_detail::NvrtcCompilations().load(); }

// A fresh directory under the system's temporary one.
std::filesystem::path TemporaryDirectory(std::string_view name) {
  auto path = std::filesystem::temp_directory_path() / fmt::format("se_nvrtc_{}_{}", name, ::getpid());
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

constexpr const char* kScale = R"(
extern "C" __global__ void scale(float a, float* x) { x[threadIdx.x] *= a; }
)";

constexpr const char* kTemplate = R"(
template <typename T>
__global__ void axpy(T a, const T* x, T* y) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] += a * x[i];
}
// A C++ (not extern "C") kernel: its name in the PTX is mangled.
__global__ void fill(int value, int* out) { out[threadIdx.x] = value; }
)";

}  // namespace

TEST_CASE("CUDA C++ source is compiled by NVRTC at GetKernel, and launches as PTX does", "[cuda][nvrtc]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const long before = Compilations();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaSourceInMemory(kScale, "scale");
  se::TypedKernel<float, se::DeviceMemory<float>*> kernel(executor);
  const se::Status loaded = executor->GetKernel(spec, &kernel);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  CHECK(Compilations() - before == 1);

  auto x = executor->AllocateOwnedArray<float>(32);
  se::Stream stream(executor);
  REQUIRE(
      stream.Init().ThenLaunch(se::ThreadDim(32), se::BlockDim(1), kernel, 2.5f, x.ptr()).BlockHostUntilDone().ok());
  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CHECK(std::string_view(launch.kernel_name) == "scale");
  REQUIRE(launch.param_count == 2);
  float a = 0;
  std::memcpy(&a, launch.param_bytes[0], sizeof a);
  CHECK(a == 2.5f);
  CHECK(launch.block[0] == 32);
}

TEST_CASE("a template kernel is found by its name expression, and checked against the TypedKernel", "[cuda][nvrtc]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  se::MultiKernelLoaderSpec spec(3);
  spec.AddCudaSourceInMemory(kTemplate, "axpy<float>");
  se::TypedKernel<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*> kernel(executor);
  const se::Status loaded = executor->GetKernel(spec, &kernel);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  auto x = executor->AllocateOwnedArray<float>(8);
  auto y = executor->AllocateOwnedArray<float>(8);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, 3.0f, x.ptr(), y.ptr()).ok());
  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CHECK(std::string_view(launch.kernel_name) == "_Z4axpyIfEvT_PKS0_PS0_");  // the instance NVRTC lowered

  SECTION("another instance of the template does not match the TypedKernel") {
    se::MultiKernelLoaderSpec doubles(3);
    doubles.AddCudaSourceInMemory(kTemplate, "axpy<double>");
    se::TypedKernel<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*> mismatched(executor);
    const se::Status status = executor->GetKernel(doubles, &mismatched);
    INFO(status.ToString());
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "parameter 0"));
  }
  SECTION("a C++ kernel by its plain name") {
    se::MultiKernelLoaderSpec fill(2);
    fill.AddCudaSourceInMemory(kTemplate, "fill");
    se::TypedKernel<int, se::DeviceMemory<int>*> typed(executor);
    const se::Status status = executor->GetKernel(fill, &typed);
    INFO(status.ToString());
    CHECK(status.ok());
  }
  SECTION("a name the source does not have") {
    se::MultiKernelLoaderSpec missing(3);
    missing.AddCudaSourceInMemory(kTemplate, "saxpy<float>");
    const se::Status status = executor->GetKernel(missing, &kernel);
    INFO(status.ToString());
    CHECK(status.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(status, "saxpy"));
  }
}

TEST_CASE("a compile error is a Status with NVRTC's log; bad options and files are named", "[cuda][nvrtc]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  se::TypedKernel<float, se::DeviceMemory<float>*> kernel(executor);
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaSourceInMemory("extern \"C\" __global__ void broken(float a, float* x) { x[0] = a + undefined_value; }\n",
                             "broken");
  const se::Status status = executor->GetKernel(spec, &kernel);
  INFO(status.ToString());
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "nvrtcCompileProgram failed with NVRTC_ERROR_COMPILATION"));
  CHECK(Mentions(status, "kernel 'broken'"));
  CHECK(Mentions(status, "NVRTC log:"));
  CHECK(Mentions(status, "undefined_value"));
  CHECK(Mentions(status, "cuda:0"));

  se::MultiKernelLoaderSpec bad_option(2);
  bad_option.AddCudaSourceInMemory(kScale, "scale", "--no-such-option");
  const se::Status refused = executor->GetKernel(bad_option, &kernel);
  INFO(refused.ToString());
  CHECK(refused.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(refused, "NVRTC_ERROR_INVALID_OPTION"));
  CHECK(Mentions(refused, "--no-such-option"));

  se::MultiKernelLoaderSpec missing_file(2);
  missing_file.AddCudaSourceOnDisk("/nonexistent/scale.cu", "scale");
  const se::Status not_found = executor->GetKernel(missing_file, &kernel);
  CHECK(not_found.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(not_found, "/nonexistent/scale.cu"));
}

TEST_CASE("options and include paths reach NVRTC; a source file compiles as one in memory", "[cuda][nvrtc]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const auto directory = TemporaryDirectory("include");
  std::ofstream(directory / "factor.h") << "#define FACTOR 3\n";
  const std::string source = R"(
#include "factor.h"
#if FACTOR != 3 || OFFSET != 1
#error "the include path or the define did not arrive"
#endif
extern "C" __global__ void shift(int* x) { x[threadIdx.x] = FACTOR * x[threadIdx.x] + OFFSET; }
)";
  const std::string options = fmt::format("-I{} -DOFFSET=1 -std=c++17", directory.string());
  se::TypedKernel<se::DeviceMemory<int>*> kernel(executor);

  se::MultiKernelLoaderSpec in_memory(1);
  in_memory.AddCudaSourceInMemory(source, "shift", options);
  const se::Status loaded = executor->GetKernel(in_memory, &kernel);
  INFO(loaded.ToString());
  CHECK(loaded.ok());

  std::ofstream(directory / "shift.cu") << source;
  se::MultiKernelLoaderSpec on_disk(1);
  on_disk.AddCudaSourceOnDisk((directory / "shift.cu").string(), "shift", options);
  const long before = Compilations();
  const se::Status from_file = executor->GetKernel(on_disk, &kernel);
  INFO(from_file.ToString());
  CHECK(from_file.ok());
  CHECK(Compilations() == before);  // the same source, options and name: compiled once

  se::MultiKernelLoaderSpec without(1);
  without.AddCudaSourceInMemory(source, "shift");
  const se::Status failed = executor->GetKernel(without, &kernel);
  CHECK(failed.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(failed, "factor.h"));
  std::filesystem::remove_all(directory);
}

TEST_CASE("an executor compiles a source once; other options are another compile; PTX in the spec wins",
          "[cuda][nvrtc]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  const std::string source = std::string(kScale) + "// cache test\n";
  se::TypedKernel<float, se::DeviceMemory<float>*> kernel(executor);
  const long before = Compilations();
  for (int i = 0; i < 3; ++i) {
    se::MultiKernelLoaderSpec spec(2);
    spec.AddCudaSourceInMemory(source, "scale");
    REQUIRE(executor->GetKernel(spec, &kernel).ok());
  }
  CHECK(Compilations() - before == 1);
  se::MultiKernelLoaderSpec other(2);
  other.AddCudaSourceInMemory(source, "scale", "-DUNUSED=1");
  REQUIRE(executor->GetKernel(other, &kernel).ok());
  CHECK(Compilations() - before == 2);

  // The source's PTX, given as PTX beside a source that would not compile.
  se::MultiKernelLoaderSpec both(2);
  both.AddCudaPtxInMemory(R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry scale(.param .f32 scale_param_0, .param .u64 scale_param_1)
{
  ret;
}
)",
                          "scale");
  both.AddCudaSourceInMemory("this is not C++", "scale");
  const se::Status status = executor->GetKernel(both, &kernel);
  INFO(status.ToString());
  CHECK(status.ok());
  CHECK(Compilations() - before == 2);
}

TEST_CASE("STREAMEXECUTOR_KERNEL_CACHE keeps the PTX on disk for other executors and processes", "[cuda][nvrtc]") {
  REQUIRE(Double().loaded());
  REQUIRE(se::Platform<se::cuda>::Get().VisibleDeviceCount() >= 2);  // SE_COUNTING_DOUBLE_DEVICES=2
  const auto directory = TemporaryDirectory("cache");
  REQUIRE(::setenv("STREAMEXECUTOR_KERNEL_CACHE", directory.c_str(), 1) == 0);
  const std::string source = fmt::format("{}// disk cache test {}\n", kScale, ::getpid());
  auto load = [&](int ordinal) {
    se::MultiKernelLoaderSpec spec(2);
    spec.AddCudaSourceInMemory(source, "scale");
    se::TypedKernel<float, se::DeviceMemory<float>*> kernel(Executor(ordinal));
    return Executor(ordinal)->GetKernel(spec, &kernel);
  };
  auto files = [&] {
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) found.push_back(entry.path());
    return found;
  };
  const long before = Compilations();
  REQUIRE(load(0).ok());
  CHECK(Compilations() - before == 1);
  const auto written = files();
  REQUIRE(written.size() == 1);
  CHECK(written[0].filename().string().starts_with("nvrtc-"));
  // Executor 1 has not compiled it: the file serves it.
  REQUIRE(load(1).ok());
  CHECK(Compilations() - before == 1);

  SECTION("a damaged file is a miss, and is written again") {
    const std::string source2 = source + "// damaged\n";
    auto load2 = [&](int ordinal) {
      se::MultiKernelLoaderSpec spec(2);
      spec.AddCudaSourceInMemory(source2, "scale");
      se::TypedKernel<float, se::DeviceMemory<float>*> kernel(Executor(ordinal));
      return Executor(ordinal)->GetKernel(spec, &kernel);
    };
    REQUIRE(load2(0).ok());
    CHECK(Compilations() - before == 2);
    std::filesystem::path second;
    for (const auto& path : files()) {
      if (path != written[0]) second = path;
    }
    REQUIRE(!second.empty());
    std::ofstream(second, std::ios::trunc) << "12\nnot the key";
    REQUIRE(load2(1).ok());
    CHECK(Compilations() - before == 3);
    std::ifstream in(second);
    const std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(contents.find(".entry scale") != std::string::npos);
  }
  ::unsetenv("STREAMEXECUTOR_KERNEL_CACHE");
  std::filesystem::remove_all(directory);
}

TEST_CASE("without NVRTC, CUDA C++ source is UNAVAILABLE, naming the library", "[cuda][nvrtc]") {
  static const char* const kMissing[] = {"libnvrtc-not-installed.so.13"};
  const auto load =
      se::canned_detail::Load(se::cuda_detail::kNvrtcLibrary, se::cuda_detail::kNvrtcEntryPoints, kMissing);
  CHECK(load.status.code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(load.status, "NVRTC"));
  CHECK(Mentions(load.status, "libnvrtc-not-installed.so.13"));
  CHECK(Mentions(load.status, "cuda-nvrtc"));
}
