// What only the Vulkan backend has: its refusals of bad kernels and launches
// before anything reaches the driver, and a machine without a Vulkan driver.
// The generic suite covers everything the backends share.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <streamexecutor/host.hpp>

#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace {

namespace tk = test_kernels;

std::vector<std::uint32_t> ReadWords(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(words.size() * 4),
            reinterpret_cast<char*>(words.data()));
  return words;
}

const std::string kAddSpirv = SE_VULKAN_TEST_KERNELS_DIR "/add.spv";

}  // namespace

TEST_CASE("a TypedKernel that does not match the shader is refused, naming the parameter", "[vulkan][errors]") {
  auto* executor = TestExecutor();
  // add.comp takes (int* data, int value); declared here as (float*, int).
  se::TypedKernel<se::DeviceMemory<float>*, int> wrong(executor);
  se::MultiKernelLoaderSpec spec(2);
  spec.AddSpirvOnDisk(kAddSpirv, "add");
  const se::Status status = executor->GetKernel(spec, &wrong);
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "kernel 'add' parameter 1"));
  CHECK(Mentions(status, "DeviceMemory<float>"));
  CHECK(Mentions(status, "binding 0"));

  se::TypedKernel<se::DeviceMemory<int>*, int, int> extra(executor);
  se::MultiKernelLoaderSpec spec3(3);
  spec3.AddSpirvOnDisk(kAddSpirv, "add");
  const se::Status too_many = executor->GetKernel(spec3, &extra);
  CHECK(too_many.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(too_many, "parameter 3"));
}

TEST_CASE("a module that needs a feature the device lacks is NOT_FOUND, naming the feature", "[vulkan][errors]") {
  auto* executor = TestExecutor();
  // lavapipe has every feature a shader here could need, so for this case
  // only the executor is told it lacks the one every compute module declares
  // (capability 1, Shader).
  auto& missing = executor->native_state().impl->missing_features;
  missing.push_back({1, "shaderTest"});
  se::TypedKernel<se::DeviceMemory<int>*, int> add(executor);
  se::MultiKernelLoaderSpec spec(2);
  spec.AddSpirvOnDisk(kAddSpirv, "add");
  const se::Status status = executor->GetKernel(spec, &add);
  missing.pop_back();
  CHECK(status.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(status, "kernel 'add'"));
  CHECK(Mentions(status, "needs the device feature shaderTest (SPIR-V capability 1)"));
  CHECK(executor->GetKernel(spec, &add).ok());
}

TEST_CASE("a SPIR-V module that fails validation never reaches the driver", "[vulkan][errors]") {
  auto* executor = TestExecutor();
  std::vector<std::uint32_t> words = ReadWords(kAddSpirv);
  REQUIRE(words.size() > 20);
  tk::AddKernel kernel(executor);

  std::vector<std::uint32_t> broken = words;
  broken[words.size() / 2] = 0xdeadbeef;  // an instruction word in the middle
  se::MultiKernelLoaderSpec bad(2);
  bad.AddSpirvInMemory(broken, "add");
  const se::Status invalid = executor->GetKernel(bad, &kernel);
  CHECK(invalid.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(invalid, "add"));

  std::vector<std::uint32_t> truncated(words.begin(), words.begin() + 12);
  se::MultiKernelLoaderSpec short_spec(2);
  short_spec.AddSpirvInMemory(truncated, "add");
  CHECK(executor->GetKernel(short_spec, &kernel).code() == se::ErrorCode::kInvalidArgument);

  se::MultiKernelLoaderSpec no_entry(2);
  no_entry.AddSpirvInMemory(words, "no_such_kernel");
  const se::Status missing = executor->GetKernel(no_entry, &kernel);
  CHECK(missing.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(missing, "'add'"));  // lists the entry points the module has

  const char odd[] = {1, 2, 3, 4, 5};
  se::MultiKernelLoaderSpec bytes(2);
  bytes.AddCode(se::kernel_formats::kSpirv, {}, "add", std::string_view(odd, sizeof odd), {});
  const se::Status not_words = executor->GetKernel(bytes, &kernel);
  CHECK(not_words.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(not_words, "not a whole number of 32-bit words"));

  // The executor still works after all of it.
  REQUIRE(executor->GetKernel(tk::AddSpec(), &kernel).ok());
}

#if defined(STREAMEXECUTOR_VULKAN_LINK_SHADERC)
// saxpy in GLSL, its buffers bound at their parameter positions (so that an
// untyped launch reads the order from the module); OFFSET from -D.
constexpr const char* kSaxpyGlsl = R"(#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform Scalars { float a; uint n; };
#ifndef OFFSET
#define OFFSET 0.0
#endif
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) y[i] = a * x[i] + y[i] + OFFSET;
}
)";

std::vector<float> RunSaxpy(se::StreamExecutor<se::vulkan>* executor, const tk::SaxpyKernel& kernel) {
  constexpr std::uint32_t n = 100;
  std::vector<float> x(n), y(n, 1.0f);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i);
  auto dx = executor->AllocateOwnedArray<float>(n);
  auto dy = executor->AllocateOwnedArray<float>(n);
  se::Stream stream(executor);
  const se::Status done = stream.Init()
                              .ThenMemcpyH2D<float>(x, dx.ptr())
                              .ThenMemcpyH2D<float>(y, dy.ptr())
                              .ThenLaunch(se::ThreadDim(32), se::BlockDim(4), kernel, 2.0f, dx.ptr(), dy.ptr(), n)
                              .ThenMemcpyD2H<float>(dy.cref(), y)
                              .BlockHostUntilDone();
  INFO(done.ToString());
  REQUIRE(done.ok());
  return y;
}

TEST_CASE("GLSL is compiled at load time with shaderc, options and all", "[vulkan][glsl]") {
  auto* executor = TestExecutor();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddGlslInMemory(kSaxpyGlsl, "saxpy");
  tk::SaxpyKernel saxpy(executor);
  const se::Status loaded = executor->GetKernel(spec, &saxpy);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  std::vector<float> y = RunSaxpy(executor, saxpy);
  CHECK(y[0] == 1.0f);
  CHECK(y[99] == 199.0f);

  se::MultiKernelLoaderSpec defined(4);
  defined.AddGlslInMemory(kSaxpyGlsl, "saxpy", "-DOFFSET=0.5 -O");
  tk::SaxpyKernel offset(executor);
  REQUIRE(executor->GetKernel(defined, &offset).ok());
  y = RunSaxpy(executor, offset);
  CHECK(y[0] == 1.5f);
  CHECK(y[99] == 199.5f);

  // From a file; the module's entry point is the kernel's name, whatever it is.
  const std::string path =
      fmt::format("{}/se_vulkan_test_{}.comp", std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp",
                  static_cast<const void*>(&path));
  std::ofstream(path) << kSaxpyGlsl;
  se::MultiKernelLoaderSpec on_disk(4);
  on_disk.AddGlslOnDisk(path, "a_longer_kernel_name_than_main");
  tk::SaxpyKernel renamed(executor);
  const se::Status from_file = executor->GetKernel(on_disk, &renamed);
  std::remove(path.c_str());
  INFO(from_file.ToString());
  REQUIRE(from_file.ok());
  CHECK(RunSaxpy(executor, renamed)[99] == 199.0f);

  // Typed at run time: the parameter list comes from the compiled module.
  se::UntypedKernel untyped(executor);
  REQUIRE(executor->GetUntypedKernel(spec, &untyped).ok());
  REQUIRE(untyped.params().size() == 4);
  CHECK(untyped.params()[1].takes_memory);

  // A SPIR-V entry, where the spec has both, is taken as it is.
  se::MultiKernelLoaderSpec both(4);
  both.AddGlslInMemory("this is not GLSL", "saxpy");
  both.AddSpirvOnDisk(SE_VULKAN_TEST_KERNELS_DIR "/saxpy.spv", "saxpy");
  tk::SaxpyKernel prebuilt(executor);
  CHECK(executor->GetKernel(both, &prebuilt).ok());
}

TEST_CASE("GLSL that does not compile, bad options and a wrong TypedKernel are clear errors",
          "[vulkan][glsl][errors]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel saxpy(executor);
  se::MultiKernelLoaderSpec broken(4);
  broken.AddGlslInMemory("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undeclared = 1; }\n", "saxpy");
  const se::Status compile = executor->GetKernel(broken, &saxpy);
  CHECK(compile.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(compile, "shaderc_compile_into_spv failed with compilation_error"));
  CHECK(Mentions(compile, "kernel 'saxpy'"));
  CHECK(Mentions(compile, "saxpy.comp:3"));  // the log, with the line
  CHECK(Mentions(compile, "undeclared"));

  se::MultiKernelLoaderSpec option(4);
  option.AddGlslInMemory(kSaxpyGlsl, "saxpy", "-DOFFSET=1 --fast-math");
  const se::Status bad_option = executor->GetKernel(option, &saxpy);
  CHECK(bad_option.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(bad_option, "unknown option '--fast-math'"));

  se::MultiKernelLoaderSpec missing(4);
  missing.AddGlslOnDisk("/nonexistent/saxpy.comp", "saxpy");
  CHECK_FALSE(executor->GetKernel(missing, &saxpy).ok());

  // The compiled module meets the same signature check as any other.
  se::TypedKernel<se::DeviceMemory<int>*, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t> wrong(
      executor);
  se::MultiKernelLoaderSpec spec(4);
  spec.AddGlslInMemory(kSaxpyGlsl, "saxpy");
  const se::Status mismatch = executor->GetKernel(spec, &wrong);
  CHECK(mismatch.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(mismatch, "kernel 'saxpy' parameter 1"));

  se::MultiKernelLoaderSpec none(4);
  none.AddOpenCLTextInMemory("__kernel void saxpy() {}", "saxpy");
  const se::Status no_code = executor->GetKernel(none, &saxpy);
  CHECK(no_code.code() == se::ErrorCode::kNotFound);
}
#else
TEST_CASE("without shaderc, a GLSL entry is UNAVAILABLE, saying what to do", "[vulkan][glsl][errors]") {
  auto* executor = TestExecutor();
  tk::SaxpyKernel saxpy(executor);
  se::MultiKernelLoaderSpec spec(4);
  spec.AddGlslInMemory("#version 450\nvoid main() {}\n", "saxpy");
  const se::Status status = executor->GetKernel(spec, &saxpy);
  CHECK(status.code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(status, "GLSL source of kernel 'saxpy'"));
  CHECK(Mentions(status, "shaderc"));
}
#endif

TEST_CASE("launches outside the shader's or the device's limits are refused", "[vulkan][errors]") {
  auto* executor = TestExecutor();
  se::MultiKernelLoaderSpec spec(2);
  spec.AddSpirvOnDisk(SE_VULKAN_TEST_SHADERS "/fixed_local_size.spv", "fixed");
  tk::AddKernel fixed(executor);
  REQUIRE(executor->GetKernel(spec, &fixed).ok());
  auto data = executor->AllocateOwnedArray<int>(64);
  REQUIRE(executor->SynchronousMemZero(data.ptr(), 64 * sizeof(int)).ok());

  se::Stream stream(executor);
  const se::Status other_size =
      stream.Init().ThenLaunch(se::ThreadDim(16), se::BlockDim(4), fixed, data.ptr(), 1).BlockHostUntilDone();
  CHECK(other_size.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(other_size, "fixes its work-group size to 8x1x1"));
  CHECK(Mentions(other_size, "local_size_x_id"));

  se::Stream right(executor);
  REQUIRE(right.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(8), fixed, data.ptr(), 2).BlockHostUntilDone().ok());
  std::vector<int> back(64);
  REQUIRE(executor->SynchronousMemcpyD2H<int>(data.cref(), back).ok());
  CHECK(back == std::vector<int>(64, 2));

  // More threads per block than the device has.
  tk::AddKernel add(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &add).ok());
  const std::uint64_t too_many = executor->GetDeviceDescription().max_threads_per_block * 2;
  se::Stream big(executor);
  const se::Status over =
      big.Init().ThenLaunch(se::ThreadDim(too_many), se::BlockDim(1), add, data.ptr(), 1).BlockHostUntilDone();
  CHECK(over.code() == se::ErrorCode::kInvalidArgument);
}

TEST_CASE("a slice that no storage buffer can start at is refused at launch", "[vulkan][errors]") {
  auto* executor = TestExecutor();
  tk::AddKernel add(executor);
  REQUIRE(executor->GetKernel(tk::AddSpec(), &add).ok());
  auto data = executor->AllocateOwnedArray<int>(64);
  se::DeviceMemory<int> odd = data.cref().GetSlice(1, 32);  // 4 bytes in
  se::Stream stream(executor);
  const se::Status status =
      stream.Init().ThenLaunch(se::ThreadDim(32), se::BlockDim(1), add, &odd, 1).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "minStorageBufferOffsetAlignment"));

  se::DeviceMemory<int> aligned = data.cref().GetSlice(16, 32);  // 64 bytes in: every device allows it
  se::Stream ok(executor);
  CHECK(ok.Init().ThenLaunch(se::ThreadDim(32), se::BlockDim(1), add, &aligned, 1).BlockHostUntilDone().ok());
}

TEST_CASE("a copy between overlapping ranges of one allocation is refused", "[vulkan][errors]") {
  auto* executor = TestExecutor();
  auto data = executor->AllocateOwnedArray<int>(64);
  se::DeviceMemory<int> low = data.cref().GetSlice(0, 32);
  se::DeviceMemory<int> high = data.cref().GetSlice(16, 32);
  se::Stream stream(executor);
  const se::Status status = stream.Init().ThenMemcpy(&high, low, 32 * sizeof(int)).BlockHostUntilDone();
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "overlap"));
}

namespace {

// The executor's vkWaitSemaphores, counting the waits for any of several
// semaphores: only the event notifier (foreign_wait.hpp) makes those.
PFN_vkWaitSemaphores g_wait_semaphores = nullptr;
std::atomic<int> g_any_waits{0};
VKAPI_ATTR VkResult VKAPI_CALL CountingWaitSemaphores(VkDevice device, const VkSemaphoreWaitInfo* info,
                                                      std::uint64_t timeout) {
  if ((info->flags & VK_SEMAPHORE_WAIT_ANY_BIT) != 0) g_any_waits.fetch_add(1);
  return g_wait_semaphores(device, info, timeout);
}

}  // namespace

// Executors live until the process ends, and at exit the driver tears itself
// down while the notifier thread still runs: an idle notifier that kept
// calling vkWaitSemaphores (100 ms at a time) crashed inside lavapipe then,
// after every case had passed. With nothing pending it must not call the
// driver at all.
TEST_CASE("the notifier of another backend's waits makes no Vulkan call while nothing is pending",
          "[vulkan][cross-backend]") {
  auto* executor = TestExecutor();
  auto* host = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  // Installed before the executor's first notification starts the notifier
  // thread, which then only ever reads the wrapper.
  REQUIRE(executor->native_state().notifier == nullptr);
  auto& api = executor->native_state().impl->api;
  g_wait_semaphores = api.vkWaitSemaphores;
  api.vkWaitSemaphores = &CountingWaitSemaphores;

  auto device = executor->AllocateOwnedArray<int>(256);
  se::Stream producer(executor);
  se::Stream consumer(host);
  REQUIRE(producer.Init().ok());
  REQUIRE(consumer.Init().ok());
  std::vector<int> in(256, 7), out(256, 0);
  for (int round = 0; round < 2; ++round) {
    se::Event done(executor);
    REQUIRE(done.Init());
    // The host stream waits for the Vulkan copy: the notifier releases it.
    REQUIRE(producer.ThenMemcpyH2D<int>(in, device.ptr()).ThenRecordEvent(&done).ok());
    int seen = 0;
    REQUIRE(consumer.ThenWaitFor(&done).ThenDoHostCallback([&] { seen = 1; }).BlockHostUntilDone().ok());
    CHECK(seen == 1);
    REQUIRE(producer.BlockHostUntilDone().ok());
    // Idle now: three of the old 100 ms waits would have come and gone.
    const int waits = g_any_waits.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    CHECK(g_any_waits.load() == waits);
    in.assign(256, 8 + round);  // the second round wakes the idle notifier
  }
  REQUIRE(producer.ThenMemcpyD2H<int>(device.cref(), out).BlockHostUntilDone().ok());
  CHECK(out[255] == 8);
}

// Run alone, with the loader pointed at no driver (tests/vulkan/meson.build).
TEST_CASE("without a Vulkan driver the platform is UNAVAILABLE with zero devices", "[.no-driver]") {
  auto& platform = se::Platform<TestBackend>::Get();
  CHECK(platform.VisibleDeviceCount() == 0);
  se::StatusOr<se::StreamExecutor<TestBackend>*> executor = platform.ExecutorForDevice(0);
  REQUIRE_FALSE(executor.ok());
  CHECK(executor.status().code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(executor.status(), "vkCreateInstance"));
}

// The run without a driver expects none; elsewhere no device is a SKIP.
int SeTestPreflight() {
  if (std::getenv("SE_VULKAN_EXPECT_NO_DRIVER") != nullptr) return -1;
  auto& platform = se::Platform<TestBackend>::Get();
  if (platform.VisibleDeviceCount() == 0) {
    fmt::print("SKIPPED: no Vulkan device: {}\n", platform.InitStatus().ToString());
    return 77;
  }
  return -1;
}
