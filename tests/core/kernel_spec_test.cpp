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

  CHECK(spec.status().ok());

  se::MultiKernelLoaderSpec on_disk(0);
  on_disk.AddCudaPtxOnDisk("/tmp/k.ptx", "k6").AddCudaCubinInMemory("cubin", "k7").AddOpenCLTextOnDisk("k.cl", "k8");
  on_disk.AddOpenCLBinaryInMemory("bin", "k9");
  CHECK(on_disk.cuda_ptx()->filename == "/tmp/k.ptx");
  CHECK(on_disk.cuda_cubin()->data == "cubin");
  CHECK(on_disk.opencl_text()->filename == "k.cl");
  CHECK(on_disk.opencl_binary()->data == "bin");
}

TEST_CASE("a second entry of one kind is an error, not a silent replacement", "[kernel_spec][errors]") {
  se::MultiKernelLoaderSpec spec(0);
  spec.AddOpenCLTextInMemory("__kernel void a() {}", "a").AddOpenCLTextOnDisk("b.cl", "b");
  CHECK(spec.opencl_text()->kernel_name == "a");  // the first entry is kept
  CHECK(spec.status().code() == se::ErrorCode::kAlreadyExists);
  CHECK(spec.status().message().find("already has OpenCL text (adding it again for kernel 'b')") != std::string::npos);
  spec.AddCudaCubinInMemory("c", "c").AddCudaCubinInMemory("d", "d");
  CHECK(spec.status().message().find("OpenCL text") != std::string::npos);  // the first error sticks

  se::MultiKernelLoaderSpec ptx(0);
  ptx.AddCudaPtxInMemory("any", "k").AddCudaPtxInMemory({7, 0}, "sm70", "k").AddCudaPtxInMemory({9, 0}, "sm90", "k");
  CHECK(ptx.status().ok());
  ptx.AddCudaPtxOnDisk({7, 0}, "other.ptx", "k");
  CHECK(ptx.status().message().find("CUDA PTX for compute capability 7.0") != std::string::npos);
  se::MultiKernelLoaderSpec twice(0);
  twice.AddCudaPtxInMemory("one", "k").AddCudaPtxOnDisk("two.ptx", "k");
  CHECK(twice.status().message().find("CUDA PTX without a compute capability") != std::string::npos);
}

TEST_CASE("PTX per compute capability: the highest one the device has is chosen", "[kernel_spec]") {
  se::MultiKernelLoaderSpec spec(0);
  spec.AddCudaPtxInMemory({8, 0}, "sm80", "k")
      .AddCudaPtxInMemory({7, 0}, "sm70", "k")
      .AddCudaPtxInMemory({9, 0}, "sm90", "k");
  CHECK(spec.cuda_ptx({9, 0})->data == "sm90");
  CHECK(spec.cuda_ptx({8, 9})->data == "sm80");  // PTX for 9.0 cannot load on 8.9
  CHECK(spec.cuda_ptx({10, 0})->data == "sm90");
  CHECK(spec.cuda_ptx({7, 5})->data == "sm70");
  CHECK(spec.cuda_ptx({6, 1}) == nullptr);
  CHECK(spec.cuda_ptx()->data == "sm90");  // the highest, for names in messages
  CHECK(spec.DescribeEntries() == "; it has: CUDA PTX (compute capability 8.0, 7.0, 9.0)");
  spec.AddCudaPtxInMemory("generic", "k");  // 0.0: any device
  CHECK(spec.cuda_ptx({6, 1})->data == "generic");
  CHECK(spec.cuda_ptx({7, 0})->data == "sm70");
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

  se::MultiKernelLoaderSpec nonexistent(0);
  nonexistent.AddCudaPtxOnDisk("/nonexistent/kernel.ptx", "k");
  auto missing = nonexistent.cuda_ptx()->Contents();
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

TEST_CASE("a format of a backend's own needs only its setter", "[kernel-spec]") {
  // What a new backend's format (SPIR-V, say) does: one KernelFormat, and a
  // setter that calls AddCode; lookups, messages and duplicates are generic.
  static constexpr se::KernelFormat kSpirv{"SPIR-V"};
  se::MultiKernelLoaderSpec spec(1);
  spec.AddCode(kSpirv, {}, "k", "\x03\x02\x23\x07", {}).AddOpenCLTextInMemory("__kernel void k() {}", "k");
  REQUIRE(spec.Code(kSpirv) != nullptr);
  CHECK(spec.Code(kSpirv)->data == "\x03\x02\x23\x07");
  CHECK(spec.Code(se::kernel_formats::kCudaPtx) == nullptr);
  CHECK(spec.DescribeEntries() == "; it has: SPIR-V, OpenCL text");
  CHECK(spec.code_entries().size() == 2);
  spec.AddCode(kSpirv, {}, "other", "x", {});
  CHECK(spec.status().code() == se::ErrorCode::kAlreadyExists);
  CHECK(spec.status().message().find("already has SPIR-V (adding it again for kernel 'other')") != std::string::npos);
  CHECK(spec.Code(kSpirv)->kernel_name == "k");  // the first entry is kept
}
