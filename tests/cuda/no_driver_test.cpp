// The CUDA platform without a usable driver. Meson runs this executable twice
// with a controlled library path (tests/cuda/meson.build):
//   SE_EXPECT=missing  LD_LIBRARY_PATH=<empty dir>      no libcuda.so.1 at all
//   SE_EXPECT=stub     LD_LIBRARY_PATH=<stub dir>       the toolkit's stub library
// Both must give a clear Status and zero devices, never a crash.
#include <dlfcn.h>
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;

namespace {

std::string Expectation() {
  const char* value = std::getenv("SE_EXPECT");
  return value ? value : "";
}

bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

}  // namespace

// With a real driver installed system-wide, an empty LD_LIBRARY_PATH does not
// hide it, so the missing-driver case cannot be simulated: say so.
int SeTestPreflight() {
  if (Expectation() == "missing") {
    if (void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); handle != nullptr) {
      dlclose(handle);
      fmt::print("SKIPPED: a CUDA driver is installed system-wide; the missing-driver case cannot be simulated\n");
      return 77;
    }
  }
  return -1;
}

TEST_CASE("the CUDA platform reports why it has no device", "[cuda][no-driver]") {
  const std::string expect = Expectation();
  REQUIRE((expect == "missing" || expect == "stub"));
  auto& platform = se::Platform<se::cuda>::Get();
  const se::Status& init = platform.InitStatus();
  INFO(init.ToString());
  CHECK(platform.Name() == "cuda");
  CHECK(platform.VisibleDeviceCount() == 0);
  CHECK(init.code() == se::ErrorCode::kUnavailable);
  if (expect == "missing") {
    CHECK(Mentions(init, "no CUDA driver: dlopen(\"libcuda.so.1\") failed"));
    CHECK(Mentions(init, "cannot open shared object file"));  // dlerror()'s reason
  } else {
    CHECK(Mentions(init, "cuInit failed with CUDA_ERROR_STUB_LIBRARY (34)"));
    CHECK(Mentions(init, "stub library"));
  }

  auto executor = platform.ExecutorForDevice(0);
  REQUIRE(!executor.ok());
  CHECK(executor.status().code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(executor.status(), "platform 'cuda' is unavailable"));
  CHECK(Mentions(executor.status(), init.message()));

  // Through the manager too: the platform exists, it just has no devices.
  auto by_name = se::MultiPlatformManager::PlatformWithName("cuda");
  REQUIRE(by_name.ok());
}

TEST_CASE("error names come from a fallback table without a driver", "[cuda][no-driver]") {
  namespace cd = se::cuda_detail;
  CHECK(cd::FallbackErrorName(CUDA_ERROR_STUB_LIBRARY) == "CUDA_ERROR_STUB_LIBRARY");
  CHECK(cd::FallbackErrorName(CUDA_ERROR_OUT_OF_MEMORY) == "CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(cd::FallbackErrorName(static_cast<CUresult>(123456)) == "CUDA_ERROR_<unknown code>");
  CHECK(cd::CodeForResult(CUDA_ERROR_OUT_OF_MEMORY) == se::ErrorCode::kResourceExhausted);
  CHECK(cd::CodeForResult(CUDA_ERROR_INVALID_PTX) == se::ErrorCode::kInvalidArgument);
  const cd::DriverApi no_driver{};
  const se::Status status = no_driver.Error(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc", "allocating {} bytes", 42);
  CHECK(status.message() == "cuMemAlloc failed with CUDA_ERROR_INVALID_VALUE (1) allocating 42 bytes");
}
