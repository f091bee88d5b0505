// <streamexecutor/blas.hpp> in a program built without the BLAS libraries
// (streamexecutor_dep, not streamexecutor_blas_dep: no STREAMEXECUTOR_BLAS_WITH_*
// defines): the operations still compile, and each backend's first BLAS call
// is UNAVAILABLE, naming the library and the package to install.
#include <streamexecutor/blas.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <string_view>

namespace se = streamexecutor;

#if defined(STREAMEXECUTOR_BLAS_WITH_OPENBLAS) || defined(STREAMEXECUTOR_BLAS_WITH_CLBLAST) || \
    defined(STREAMEXECUTOR_BLAS_WITH_CUBLAS)
#error "this test must be built without the BLAS libraries"
#endif

namespace {

template <typename B>
void RequireUnavailable(std::string_view library, std::string_view package) {
  auto& platform = se::Platform<B>::Get();
  if (platform.VisibleDeviceCount() == 0) {
    WARN("the " << platform.Name() << " platform has no device here: its case is not run");
    return;
  }
  auto* executor = platform.ExecutorForDevice(0).ValueOrDie();
  se::ScopedDeviceMemory<float> x = executor->template AllocateOwnedArray<float>(8);
  REQUIRE(x.ok());
  se::Stream<B> stream(executor);
  stream.Init().ThenBlasAxpy(8, 1.0f, x.cref(), 1, x.ptr(), 1);
  const se::Status status = stream.status();
  INFO(status.ToString());
  REQUIRE(status.code() == se::ErrorCode::kUnavailable);
  REQUIRE(status.message().find(std::string(library)) != std::string::npos);
  REQUIRE(status.message().find(std::string(package)) != std::string::npos);
  // Argument errors are still found first, without the library.
  se::Stream<B> bad(executor);
  bad.Init().ThenBlasAxpy(9, 1.0f, x.cref(), 1, x.ptr(), 1);
  REQUIRE(bad.status().code() == se::ErrorCode::kOutOfRange);
}

}  // namespace

#if defined(STREAMEXECUTOR_WITH_HOST)
TEST_CASE("host BLAS without OpenBLAS is UNAVAILABLE naming libopenblas-dev", "[blas]") {
  RequireUnavailable<se::host>("OpenBLAS", "libopenblas-dev");
}
#endif

#if defined(STREAMEXECUTOR_WITH_OPENCL)
TEST_CASE("OpenCL BLAS without CLBlast is UNAVAILABLE naming libclblast-dev", "[blas]") {
  RequireUnavailable<se::opencl>("CLBlast", "libclblast-dev");
}
#endif
