#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include <streamexecutor/core/kernel.hpp>
#include <streamexecutor/core/kernel_spec.hpp>

namespace se = streamexecutor;

TEST_CASE("every setter of the seed's table records code and kernel name", "[kernel_spec]") {
  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaPtxInMemory("ptx text", "k1")
      .AddCudaCubinOnDisk("/tmp/k.cubin", "k2")
      .AddCudaFatbinInMemory("fatbin", "k3")
      .AddOpenCLTextInMemory("__kernel void k4() {}", "k4", "-cl-fast-relaxed-math")
      .AddOpenCLBinaryOnDisk("/tmp/k.bin", "k5");
  CHECK(spec.arity() == 2);
  REQUIRE(spec.cuda_ptx());
  CHECK(spec.cuda_ptx()->data == "ptx text");
  CHECK(spec.cuda_ptx()->kernel_name == "k1");
  CHECK_FALSE(spec.cuda_ptx()->on_disk());
  REQUIRE(spec.cuda_cubin());
  CHECK(spec.cuda_cubin()->on_disk());
  CHECK(spec.cuda_fatbin()->data == "fatbin");
  CHECK(spec.opencl_text()->options == "-cl-fast-relaxed-math");
  CHECK(spec.opencl_binary()->filename == "/tmp/k.bin");
  CHECK_FALSE(spec.host_kernel());
  CHECK(spec.DescribeEntries() == "; it has: CUDA PTX, CUDA cubin, CUDA fatbin, OpenCL text, OpenCL binary");
  CHECK(se::MultiKernelLoaderSpec(0).DescribeEntries() == "; it is empty");

  spec.AddCudaPtxOnDisk("/tmp/k.ptx", "k6").AddCudaCubinInMemory("cubin", "k7").AddOpenCLTextOnDisk("k.cl", "k8");
  spec.AddOpenCLBinaryInMemory("bin", "k9");
  CHECK(spec.cuda_ptx()->filename == "/tmp/k.ptx");
  CHECK(spec.cuda_cubin()->data == "cubin");
  CHECK(spec.opencl_text()->filename == "k.cl");
  CHECK(spec.opencl_binary()->data == "bin");
}

TEST_CASE("on-disk code is read when asked for, with a clear error if missing", "[kernel_spec]") {
  const char* path = "kernel_spec_test_ptx.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << "line one\nline two\n";
  }
  se::MultiKernelLoaderSpec spec(0);
  spec.AddCudaPtxOnDisk(path, "k");
  auto contents = spec.cuda_ptx()->Contents();
  REQUIRE(contents.ok());
  CHECK(contents.value() == "line one\nline two\n");
  std::remove(path);

  spec.AddCudaPtxOnDisk("/nonexistent/kernel.ptx", "k");
  auto missing = spec.cuda_ptx()->Contents();
  CHECK(missing.status().code() == se::ErrorCode::kNotFound);
  CHECK(missing.status().message().find("/nonexistent/kernel.ptx") != std::string::npos);
}

TEST_CASE("TypedKernel describes its parameters for load-time checks", "[kernel_spec]") {
  using K = se::TypedKernel<float, se::DeviceMemory<double>*, se::SharedDeviceMemory<int>>;
  constexpr auto params = K::ParamInfos();
  STATIC_REQUIRE(params.size() == 3);
  STATIC_REQUIRE(params[0].kind == se::KernelParamKind::kScalar);
  STATIC_REQUIRE(params[0].value_size == sizeof(float));
  STATIC_REQUIRE(params[1].kind == se::KernelParamKind::kDevicePointer);
  STATIC_REQUIRE(params[1].value_size == sizeof(double));
  STATIC_REQUIRE(params[2].kind == se::KernelParamKind::kSharedMemory);
  CHECK(params[0].value_type == "float");
  CHECK(params[1].value_type == "double");
  CHECK(params[1].declared_type == "streamexecutor::DeviceMemory<double>*");
}

TEST_CASE("launch arguments are checked at compile time", "[kernel_spec]") {
  using se::detail::NonNarrowingTo;
  STATIC_REQUIRE(NonNarrowingTo<float, float>);
  STATIC_REQUIRE(NonNarrowingTo<double, float>);
  STATIC_REQUIRE_FALSE(NonNarrowingTo<float, double>);
  STATIC_REQUIRE_FALSE(NonNarrowingTo<int, long>);
}
