// Instantiates the public templates the way consumers do, so that their
// bodies are compiled under the consumer's strictest flags (template code
// only warns once instantiated). Compiled, never run, by check.py with
// -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror under g++ and clang++.
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>
#include <span>
#include <vector>

// The headers' internal X-macros must not leak into consumers' code.
#if defined(SE_CUDA_REQUIRED_ENTRY_POINTS) || defined(SE_CUDA_OPTIONAL_ENTRY_POINTS) || defined(SE_CUDA_DECLARE) || \
    defined(SE_CUDA_RESOLVE) || defined(SE_CUDA_RESOLVE_OPTIONAL) || defined(SE_CL_ERROR)
#error "an internal X-macro of the streamexecutor headers is still defined"
#endif

namespace se = streamexecutor;

namespace {

#if defined(STREAMEXECUTOR_WITH_HOST)
void scale(const se::host::KernelContext& ctx, float factor, float* data, std::span<float> scratch, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) data[i] *= factor + scratch[0];
}
#endif

using ScaleKernel =
    se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t>;

template <typename B>
se::Status Exercise(se::StreamExecutor<B>* executor) {
  se::MultiKernelLoaderSpec spec(4);
#if defined(STREAMEXECUTOR_WITH_HOST)
  spec.AddHostKernel<&scale>("scale");
#endif
  spec.AddOpenCLTextInMemory("__kernel void scale(float f, __global float* d, __local float* s, uint n) {}", "scale");
  spec.AddCudaPtxInMemory(".version 7.0\n.target sm_50\n", "scale");
  ScaleKernel kernel(executor);
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->GetKernel(spec, &kernel));

  se::ScopedDeviceMemory<float> data = executor->template AllocateOwnedArray<float>(256);
  se::DeviceMemory<float> raw = executor->template AllocateArray<float>(16);
  se::DeviceMemory<float> slice = data.cref().GetSlice(8, 8);
  std::vector<float> host(256, 1.0f);
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->template SynchronousMemcpyH2D<float>(host, data.ptr()));
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->SynchronousMemZero(&slice, slice.size()));
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->SynchronousMemset32(&raw, 7u, raw.size()));

  se::Event<B> event(executor);
  se::Timer<B> timer(executor);
  se::Stream<B> stream(executor), other(executor);
  if (!event.Init()) return event.init_status();
  other.Init();
  const std::uint32_t count = 256;
  stream.InitWithTimer(&timer)
      .ThenStartTimer(&timer)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, data.ptr(), se::SharedDeviceMemory<float>(64), count)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, nullptr, se::SharedDeviceMemory<float>(1), 1u)
      .ThenMemcpyD2H(data.cref(), std::span<float>(host))
      .ThenMemcpyD2D(&raw, slice)
      .ThenMemset32(&raw, 1u, 8)
      .ThenRecordEvent(&event)
      .ThenWaitFor(&other)
      .ThenDoHostCallback([&host] { host[0] = 0.0f; })
      .ThenStopTimer(&timer);
  other.ThenWaitFor(&event);
  se::CommandBuffer<B> buffer(executor);
  buffer.Init()
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, data.ptr(), se::SharedDeviceMemory<float>(64), count)
      .ThenMemcpy(&raw, host.data(), 4)
      .template ThenMemcpyD2H<float>(data.cref(), std::span<float>(host))
      .ThenMemcpyD2D(&raw, slice)
      .ThenMemZero(&raw, 8)
      .ThenRecordEvent(&event)
      .ThenWaitFor(&event)
      .ThenDoHostCallback([&host] { host[1] = 0.0f; });
  STREAMEXECUTOR_RETURN_IF_ERROR(buffer.Finalize());
  stream.ThenSubmit(&buffer);
  STREAMEXECUTOR_RETURN_IF_ERROR(stream.BlockHostUntilDone());
  STREAMEXECUTOR_RETURN_IF_ERROR(event.Synchronize());
  const std::uint64_t ns = timer.Nanoseconds() + timer.Microseconds();
  (void)ns;
  (void)event.PollForStatus();
  return executor->Deallocate(&raw);
}

template <typename B>
int ExerciseBackend() {
  se::StatusOr<se::StreamExecutor<B>*> executor = se::Platform<B>::Get().ExecutorForDevice(0);
  if (!executor.ok()) return 1;
  se::StreamExecutor<B>* fallback = nullptr;
  se::StreamExecutor<B>* chosen = executor.value_or(fallback);
  return Exercise(chosen).ok() ? 0 : 1;
}

}  // namespace

int StrictWarningsEntry(const char* name) {
  se::StatusOr<se::MultiPlatformManager::PlatformPtr> platform = se::MultiPlatformManager::PlatformWithName(name);
  if (!platform.ok()) return 2;
  int result = 0;
#if defined(STREAMEXECUTOR_WITH_HOST)
  result += ExerciseBackend<se::host>();
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  result += ExerciseBackend<se::opencl>();
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
  result += ExerciseBackend<se::cuda>();
#endif
  return result;
}
