// The load-time signature check: each kind of mismatch between a TypedKernel
// and the real OpenCL kernel is refused at GetKernel with a message naming the
// kernel, the parameter, the declared and the real type.
#include <cstdint>

#include "opencl/opencl_test_util.hpp"

namespace {

constexpr const char* kSaxpy = R"(
__kernel void saxpy(float a, __global const float* x, __global float* y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
__kernel void vectors(__global float4* v, __local int* scratch, __constant short* table, ulong count, __global half* h) {}
__kernel void untyped(__global void* raw) {}
)";

template <typename... Params>
se::Status Load(std::string_view kernel_name) {
  auto* executor = OpenCLExecutor();
  se::MultiKernelLoaderSpec spec(sizeof...(Params));
  spec.AddOpenCLTextInMemory(kSaxpy, kernel_name);
  se::TypedKernel<Params...> kernel(executor);
  se::Status status = executor->GetKernel(spec, &kernel);
  CHECK(kernel.IsLoaded() == status.ok());
  return status;
}

struct Float4 {
  float x, y, z, w;
};
struct Half {
  std::uint16_t bits;
};

}  // namespace

TEST_CASE("matching signatures load", "[opencl][signature]") {
  CHECK(Load<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>("saxpy").ok());
  // Vectors and half match types of their size that have no OpenCL name;
  // __constant pointers are DeviceMemory too.
  CHECK(Load<se::DeviceMemory<Float4>*, se::SharedDeviceMemory<int>, se::DeviceMemory<std::int16_t>*, std::uint64_t,
             se::DeviceMemory<Half>*>("vectors")
            .ok());
  CHECK(Load<se::DeviceMemory<Float4>*, se::SharedDeviceMemory<int>, se::DeviceMemory<short>*, unsigned long,
             se::DeviceMemory<std::uint16_t>*>("vectors")
            .ok());
  // __global void* takes memory of any element type.
  CHECK(Load<se::DeviceMemory<double>*>("untyped").ok());
}

TEST_CASE("element type mismatch: the documented example message", "[opencl][signature][errors]") {
  se::Status status = Load<float, se::DeviceMemory<int>*, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status,
                 "kernel 'saxpy' parameter 1 ('x'): TypedKernel declares streamexecutor::DeviceMemory<int>* but the "
                 "kernel takes __global const float* (int is a 4-byte signed integer, OpenCL float is a 4-byte "
                 "floating-point type); declare it as streamexecutor::DeviceMemory<float>*"));
  CHECK(Mentions(status, "GetKernel on opencl:0"));
}

TEST_CASE("parameter count mismatch lists both parameter lists", "[opencl][signature][errors]") {
  se::Status status = Load<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*>("saxpy");
  CHECK(Mentions(status,
                 "kernel 'saxpy' takes 4 parameter(s) (float a, __global const float* x, __global float* y, "
                 "uint n) but the TypedKernel declares 3"));
  CHECK(Mentions(status, "streamexecutor::DeviceMemory<float>*"));
}

TEST_CASE("value declared where the kernel takes a pointer", "[opencl][signature][errors]") {
  se::Status status = Load<float, float, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
  CHECK(Mentions(status,
                 "parameter 1 ('x'): TypedKernel declares float but the kernel takes __global const float* "
                 "(it is a pointer, not a value); declare it as streamexecutor::DeviceMemory<float>*"));
}

TEST_CASE("pointer declared where the kernel takes a value", "[opencl][signature][errors]") {
  se::Status status =
      Load<se::DeviceMemory<float>*, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
  CHECK(Mentions(status,
                 "parameter 0 ('a'): TypedKernel declares streamexecutor::DeviceMemory<float>* but the "
                 "kernel takes float (it is a value, not a pointer); declare it as float"));
}

TEST_CASE("signedness of the same size is a mismatch", "[opencl][signature][errors]") {
  se::Status status = Load<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, int>("saxpy");
  CHECK(Mentions(status,
                 "parameter 3 ('n'): TypedKernel declares int but the kernel takes uint (int is a 4-byte "
                 "signed integer, OpenCL uint is a 4-byte unsigned integer); declare it as std::uint32_t"));
}

TEST_CASE("a scalar of the wrong size is a mismatch", "[opencl][signature][errors]") {
  se::Status status = Load<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint64_t>("saxpy");
  CHECK(Mentions(status, "parameter 3 ('n')"));
  CHECK(Mentions(status, "is a 8-byte unsigned integer, OpenCL uint is a 4-byte unsigned integer"));
  se::Status wide = Load<double, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
  CHECK(Mentions(wide, "parameter 0 ('a'): TypedKernel declares double but the kernel takes float"));
}

TEST_CASE("__local memory must be SharedDeviceMemory and the reverse", "[opencl][signature][errors]") {
  se::Status global_for_local = Load<se::DeviceMemory<Float4>*, se::DeviceMemory<int>*, se::DeviceMemory<short>*,
                                     std::uint64_t, se::DeviceMemory<Half>*>("vectors");
  CHECK(Mentions(global_for_local,
                 "parameter 1 ('scratch'): TypedKernel declares streamexecutor::DeviceMemory<int>* "
                 "but the kernel takes __local int*"));
  CHECK(Mentions(global_for_local, "declare it as streamexecutor::SharedDeviceMemory<int>"));
  se::Status local_for_global = Load<se::SharedDeviceMemory<Float4>, se::SharedDeviceMemory<int>,
                                     se::DeviceMemory<short>*, std::uint64_t, se::DeviceMemory<Half>*>("vectors");
  CHECK(Mentions(local_for_global, "parameter 0 ('v')"));
  CHECK(Mentions(local_for_global, "it points to global memory"));
}

TEST_CASE("vector types are checked by size", "[opencl][signature][errors]") {
  se::Status scalar = Load<se::DeviceMemory<float>*, se::SharedDeviceMemory<int>, se::DeviceMemory<short>*,
                           std::uint64_t, se::DeviceMemory<Half>*>("vectors");
  CHECK(Mentions(scalar,
                 "parameter 0 ('v'): TypedKernel declares streamexecutor::DeviceMemory<float>* but the kernel "
                 "takes __global float4*"));
  CHECK(Mentions(scalar, "OpenCL float4 is a 16-byte vector"));
  struct Three {
    float a, b, c;
  };
  se::Status small = Load<se::DeviceMemory<Three>*, se::SharedDeviceMemory<int>, se::DeviceMemory<short>*,
                          std::uint64_t, se::DeviceMemory<Half>*>("vectors");
  CHECK(Mentions(small, "is a 12-byte type, OpenCL float4 is a 16-byte vector"));
}

TEST_CASE("__constant memory element types are checked", "[opencl][signature][errors]") {
  se::Status status = Load<se::DeviceMemory<Float4>*, se::SharedDeviceMemory<int>, se::DeviceMemory<int>*,
                           std::uint64_t, se::DeviceMemory<Half>*>("vectors");
  CHECK(Mentions(status,
                 "parameter 2 ('table'): TypedKernel declares streamexecutor::DeviceMemory<int>* but the "
                 "kernel takes __constant const short*"));
}
