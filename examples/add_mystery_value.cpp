// The seed's detailed example, ported: same structure, same names. The
// platform comes from the command line: `add_mystery_value host` (or opencl,
// cuda, vulkan where they are built in). Prints the result and exits non-zero when
// it is wrong or the platform cannot run it.
#include <streamexecutor/streamexecutor.hpp>

#include <cstdio>
#include <string_view>
#include <variant>

namespace se = streamexecutor;

// A PTX string defining a CUDA kernel: adds a fixed value to its input and
// stores the sum through its output pointer.
static constexpr const char* KERNEL_PTX = R"(
    .version 3.1
    .target sm_20
    .address_size 64
    .visible .entry add_mystery_value(
        .param .f32 float_literal,
        .param .u64 result_loc
        ) {
      .reg .u64 %rl<2>;
      .reg .f32 %f<2>;
      ld.param.f32 %f1, [float_literal];
      ld.param.u64 %rl1, [result_loc];
      add.f32 %f1, %f1, 123.0;
      st.f32 [%rl1], %f1;
      ret;
    }
    )";

// The same kernel in OpenCL C.
static constexpr const char* KERNEL_OPENCL = R"(
    __kernel void add_mystery_value(float float_literal, __global float *result_loc) {
      *result_loc = float_literal + 123.0f;
    }
    )";

// The same kernel as a Vulkan compute shader (add_mystery_value.comp), compiled
// at build time into an array of SPIR-V words, kAddMysteryValueSpirv.
#ifdef ADD_MYSTERY_VALUE_SPIRV_HEADER
#include <cstdint>
#include ADD_MYSTERY_VALUE_SPIRV_HEADER
#endif

// The same kernel for the host backend: a CUDA-style body that receives its
// thread coordinates first, then the kernel's parameters.
static void add_mystery_value_host(const se::host::KernelContext&, float float_literal, float* result_loc) {
  *result_loc = float_literal + 123.0f;
}

// The number of arguments expected by the kernel.
static constexpr int KERNEL_ARITY = 2;

// The name of the kernel.
static constexpr const char* KERNEL_NAME = "add_mystery_value";

// The value added to the input in the kernel.
static constexpr float MYSTERY_VALUE = 123.0f;

template <se::Backend B>
int Run(se::Platform<B>* platform) {
  // Get a StreamExecutor for the chosen Platform. Multiple devices are
  // supported, we indicate here that we want to run on device 0.
  const int device_ordinal = 0;
  auto executor_or = platform->ExecutorForDevice(device_ordinal);
  if (!executor_or.ok()) {
    std::fprintf(stderr, "add_mystery_value: %s\n", executor_or.status().ToString().c_str());
    return 2;
  }
  se::StreamExecutor<B>* executor = executor_or.ValueOrDie();

  // Create a MultiKernelLoaderSpec, which knows where to find the code for our
  // kernel on each platform.
  se::MultiKernelLoaderSpec kernel_loader_spec(KERNEL_ARITY);
  kernel_loader_spec.AddCudaPtxInMemory(KERNEL_PTX, KERNEL_NAME);
  kernel_loader_spec.AddOpenCLTextInMemory(KERNEL_OPENCL, KERNEL_NAME);
  kernel_loader_spec.AddHostKernel<&add_mystery_value_host>(KERNEL_NAME);
#ifdef ADD_MYSTERY_VALUE_SPIRV_HEADER
  kernel_loader_spec.AddSpirvInMemory(kAddMysteryValueSpirv, KERNEL_NAME);
#endif

  // A kernel that takes a float and a pointer to a float in device memory.
  using KernelType = se::TypedKernel<float, se::DeviceMemory<float>*>;
  KernelType kernel(executor);

  // Load the kernel code onto the device and bind the kernel object to it.
  if (se::Status loaded = executor->GetKernel(kernel_loader_spec, &kernel); !loaded.ok()) {
    std::fprintf(stderr, "add_mystery_value: %s\n", loaded.ToString().c_str());
    return 3;
  }

  // Allocate memory to hold the result; freed when `result` goes out of scope.
  se::ScopedDeviceMemory<float> result = executor->template AllocateOwnedScalar<float>();

  // Create a stream on which to schedule device operations.
  se::Stream stream(executor);

  // Schedule a kernel launch on the new stream and block until it completes.
  const float kernel_input_argument = 42.5f;
  se::Status done = stream.Init()
                        .ThenLaunch(se::ThreadDim(), se::BlockDim(), kernel, kernel_input_argument, result.ptr())
                        .BlockHostUntilDone();
  if (!done.ok()) {
    std::fprintf(stderr, "add_mystery_value: %s\n", done.ToString().c_str());
    return 4;
  }

  // Copy the result of the kernel call from device back to the host.
  float host_result = 0.0f;
  if (se::Status copied = executor->SynchronousMemcpyD2H(result.cref(), sizeof(host_result), &host_result);
      !copied.ok()) {
    std::fprintf(stderr, "add_mystery_value: %s\n", copied.ToString().c_str());
    return 5;
  }

  std::printf("%s: %.1f + %.1f = %.1f\n", std::string(platform->Name()).c_str(), kernel_input_argument, MYSTERY_VALUE,
              host_result);
  // Verify that the correct result was computed.
  return (kernel_input_argument + MYSTERY_VALUE) == host_result ? 0 : 1;
}

int main(int argc, char* argv[]) {
  const std::string_view platform_name = argc > 1 ? argv[1] : "host";
  auto platform = se::MultiPlatformManager::PlatformWithName(platform_name);
  if (!platform.ok()) {
    std::fprintf(stderr, "add_mystery_value: %s\n", platform.status().ToString().c_str());
    return 2;
  }
  return std::visit([](auto* chosen) { return Run(chosen); }, platform.ValueOrDie());
}
