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

#if defined(STREAMEXECUTOR_WITH_HOST)
// A kernel with a block barrier (host/cooperative.hpp), launched every way.
void scale_synced(const se::host::CooperativeContext& ctx, float factor, float* data, std::span<float> scratch,
                  std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  scratch[ctx.threadIdx.x] = i < n ? data[i] : 0.0f;
  ctx.SyncThreads();
  if (i < n) data[i] = factor * scratch[(ctx.threadIdx.x + 1) % ctx.blockDim.x];
}

se::Status ExerciseCooperative() {
  se::StreamExecutor<se::host>* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  se::MultiKernelLoaderSpec spec(4);
  spec.AddHostKernel<&scale_synced>("scale_synced");
  spec.AddHostKernel("scale_lambda", [](const se::host::CooperativeContext& ctx, float, float*, std::span<float>,
                                        std::uint32_t) { ctx.SyncThreads(); });
  se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t> kernel(executor);
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->GetKernel(spec, &kernel));
  se::UntypedKernel untyped(executor);
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->GetUntypedKernel(spec, &untyped));
  se::ScopedDeviceMemory<float> data = executor->AllocateOwnedArray<float>(256);
  se::KernelArgsArray<4> args;
  args.Add(2.0f).Add(data.ptr()).Add(se::SharedDeviceMemory<float>(64)).Add(256u);
  se::Stream<se::host> stream(executor);
  return stream.Init()
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, data.ptr(), se::SharedDeviceMemory<float>(64), 256u)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), untyped, args)
      .BlockHostUntilDone();
}
#endif

using ScaleKernel = se::TypedKernel<float, se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, std::uint32_t>;

// Pinned memory, native handles and adoption (core/pinned_memory.hpp, core/interop.hpp).
template <typename B>
se::Status ExerciseInterop(se::StreamExecutor<B>* executor, se::Stream<B>& stream, se::Event<B>& event,
                           const ScaleKernel& kernel, se::DeviceMemory<float>& raw) {
  se::PinnedHostMemory<float> pinned = executor->template HostAllocate<float>(16);
  if (!pinned.ok()) return pinned.status();
  stream.ThenMemcpyD2H(raw, pinned.span());
  std::vector<float> registered(16);
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->HostMemoryRegister(registered.data(), registered.size() * sizeof(float)));
  // Zero copy and peer access (core/pinned_memory.hpp, core/peer_access.hpp).
  se::StatusOr<se::DeviceMemory<float>> view = executor->HostMemoryDeviceView(pinned);
  if (!view.ok()) return view.status();
  se::StatusOr<se::DeviceMemory<float>> part = executor->HostMemoryDeviceView(registered.data() + 4, 8);
  if (!part.ok()) return part.status();
  stream.ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, 1.0f, &part.value(), se::SharedDeviceMemory<float>(8),
                    std::uint32_t{8});
  if (executor->CanEnablePeerAccessTo(executor)) STREAMEXECUTOR_RETURN_IF_ERROR(executor->EnablePeerAccessTo(executor));
  STREAMEXECUTOR_RETURN_IF_ERROR(stream.BlockHostUntilDone());
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->HostMemoryUnregister(registered.data()));
  void* bytes = executor->HostMemoryAllocate(64);
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->HostMemoryDeallocate(bytes));
  (void)se::NativeContext(*executor);
  (void)se::NativeQueue(stream);
  (void)se::NativeEvent(event);
  if constexpr (se::NativeKernelBackend<B>) (void)se::NativeKernel(*executor, kernel);
  if constexpr (se::StreamAdoptionBackend<B>) {
    se::Stream<B> adopted(executor);
    STREAMEXECUTOR_RETURN_IF_ERROR(adopted.InitAdopted(se::NativeQueue(stream)).BlockHostUntilDone());
  }
  se::StatusOr<typename se::Interop<B>::NativeMemory> native = se::NativeMemory(*executor, raw);
  if (!native.ok()) return native.status();
  se::StatusOr<se::DeviceMemory<float>> adopted = executor->template AdoptDeviceMemory<float>(native.value(), 4);
  // ALREADY_EXISTS is the expected answer: raw is the executor's own memory.
  return adopted.status().code() == se::ErrorCode::kAlreadyExists ? se::Status() : adopted.status();
}

// Prepared launches and launches typed at run time (core/prepared_launch.hpp, core/kernel_args.hpp).
template <typename B>
se::Status ExerciseLaunchForms(se::StreamExecutor<B>* executor, const se::MultiKernelLoaderSpec& spec,
                               const ScaleKernel& kernel, se::ScopedDeviceMemory<float>& data,
                               se::DeviceMemory<float>& raw) {
  se::Stream<B> stream(executor);
  const std::uint32_t count = 256;
  se::PreparedLaunch prepared(kernel, se::ThreadDim(64), se::BlockDim(4), 2.0f, data.ptr(),
                              se::SharedDeviceMemory<float>(64), count);
  stream.Init().ThenLaunch(prepared);
  // Dependent here (B), hence `template`, as for any member template.
  prepared.template Set<0>(3.0f).template SetArg<1>(&raw).template Set<3>(16u).SetDimensions(se::ThreadDim(16),
                                                                                             se::BlockDim(1));
  stream.ThenLaunch(prepared);
  se::UntypedKernel untyped(executor);
  STREAMEXECUTOR_RETURN_IF_ERROR(executor->GetUntypedKernel(spec, &untyped));
  se::KernelArgsArray<4> args;
  args.Add(2.0f).Add(data.ptr()).Add(se::SharedDeviceMemory<float>(64)).Add(count);
  se::DeviceMemoryBase& untyped_view = raw;
  args.Clear();
  args.Add(2.0f).Add(&untyped_view).AddSharedBytes(256).Add(count);
  for (const se::DeviceParam& param : untyped.params()) (void)param.size;
  return stream.ThenLaunch(se::ThreadDim(64), se::BlockDim(4), untyped, args).BlockHostUntilDone();
}

// Issue 24 item 8: const views at launch, free-function allocation, unified
// memory, and moving streams, events and timers.
template <typename B>
se::Status ExerciseUserTypes(se::StreamExecutor<B>* executor, const ScaleKernel& kernel) {
  se::ScopedDeviceMemory<float> data = se::AllocateOwnedArray<float>(executor, 64);
  se::DeviceMemory<float> raw = se::AllocateArray<float>(executor, 64);
  se::ScopedDeviceMemory<int> scalar = se::AllocateOwnedScalar<int>(executor);
  std::vector<float> host(64, 1.0f);
  STREAMEXECUTOR_RETURN_IF_ERROR(se::SynchronousMemcpyH2D<float>(executor, host, data.ptr()));
  const se::ScopedDeviceMemory<float>& read_only = data;
  se::Stream<B> first(executor);
  first.Init().ThenLaunch(se::ThreadDim(64), se::BlockDim(1), kernel, 2.0f, read_only.ptr(),
                          se::SharedDeviceMemory<float>(1), std::uint32_t{64});
  se::ThenMemcpyD2H<float>(first, data.cref(), std::span<float>(host));
  se::Stream<B> moved(std::move(first));
  se::Stream<B> assigned(executor);
  assigned = std::move(moved);
  se::Event<B> event(executor);
  if (!event.Init()) return event.init_status();
  se::Event<B> event2(std::move(event));
  se::Timer<B> timer(executor);
  STREAMEXECUTOR_RETURN_IF_ERROR(timer.Init());
  se::Timer<B> timer2(std::move(timer));
  assigned.ThenRecordEvent(&event2).ThenStartTimer(&timer2).ThenStopTimer(&timer2);
  if (event2.PollForStatus() == se::Event<B>::State::kError) return se::Status();
  se::KernelArgsArray<2> args;
  args.Add(&data.cref()).Add(read_only.ptr());
  if constexpr (se::UnifiedMemoryBackend<B>) {
    se::ScopedUnifiedMemory<float> unified = se::AllocateOwnedUnifiedArray<float>(executor, 16);
    if (unified.ok()) {
      for (float& value : unified.host_span()) value = 0.5f;
      unified.host_ptr()[0] = 1.0f;
      assigned.ThenMemcpyD2H(unified.cref(), std::span<float>(host).first(16));
    }
  }
  STREAMEXECUTOR_RETURN_IF_ERROR(assigned.BlockHostUntilDone());
  (void)se::MultiPlatformManager::PlatformWithName("Host");
  (void)scalar.ok();
  return executor->Deallocate(&raw);
}

// Kernel attributes and occupancy (core/occupancy.hpp).
template <typename B>
se::Status ExerciseOccupancy(se::StreamExecutor<B>* executor, const ScaleKernel& kernel) {
  se::StatusOr<se::KernelAttributes> attributes = executor->GetKernelAttributes(kernel);
  if (!attributes.ok()) return attributes.status();
  (void)attributes.value().ToString();
  const std::uint64_t threads = attributes.value().preferred_block_size_multiple;
  se::StatusOr<std::uint64_t> active = executor->MaxActiveBlocksPerMultiprocessor(kernel, threads, 256);
  if (!active.ok()) return active.status();
  se::StatusOr<se::BlockSizeSuggestion> best = executor->SuggestBlockSize(kernel, 256, 128);
  if (!best.ok()) return best.status();
  se::StatusOr<se::BlockSizeSuggestion> per_size =
      executor->SuggestBlockSize(kernel, [](std::uint64_t size) { return size * sizeof(float); });
  return per_size.ok() ? se::Status() : per_size.status();
}

template <typename B>
se::Status Exercise(se::StreamExecutor<B>* executor) {
  se::MultiKernelLoaderSpec spec(4);
#if defined(STREAMEXECUTOR_WITH_HOST)
  spec.AddHostKernel<&scale>("scale");
#endif
  spec.AddOpenCLTextInMemory("__kernel void scale(float f, __global float* d, __local float* s, uint n) {}", "scale");
  spec.AddCudaPtxInMemory(".version 7.0\n.target sm_50\n", "scale");
  spec.AddCudaSourceInMemory("extern \"C\" __global__ void scale() {}", "scale", "-std=c++17");
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
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, data.ptr(), se::SharedDeviceMemory<float>(64),
                  count)
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, nullptr, se::SharedDeviceMemory<float>(1), 1u)
      .ThenMemcpyD2H(data.cref(), std::span<float>(host))
      .ThenMemcpyD2D(&raw, slice)
      .ThenMemset32(&raw, 1u, 8)
      .ThenRecordEvent(&event)
      .ThenWaitFor(&other)
      .ThenDoHostCallback([&host] { host[0] = 0.0f; })
      .ThenStopTimer(&timer);
  other.ThenWaitFor(&event);
  auto flag = executor->template AllocateOwnedArray<std::uint64_t>(1);
  other.ThenWriteValue(flag.ptr(), 1).ThenWaitValue(flag.cref(), 1, se::WaitCondition::kEqual);
  other.ThenLaunch(se::LaunchAttributes().Cooperative().Clusters(se::ClusterDim(2)).ProgrammaticDependent(),
                   se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, data.ptr(), se::SharedDeviceMemory<float>(64),
                   count);
  se::CommandBuffer<B> buffer(executor);
  buffer.Init()
      .ThenLaunch(se::ThreadDim(64), se::BlockDim(4), kernel, 2.0f, data.ptr(), se::SharedDeviceMemory<float>(64),
                  count)
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
  STREAMEXECUTOR_RETURN_IF_ERROR(ExerciseInterop(executor, stream, event, kernel, raw));
  STREAMEXECUTOR_RETURN_IF_ERROR(ExerciseLaunchForms(executor, spec, kernel, data, raw));
  STREAMEXECUTOR_RETURN_IF_ERROR(ExerciseUserTypes(executor, kernel));
  STREAMEXECUTOR_RETURN_IF_ERROR(ExerciseOccupancy(executor, kernel));
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
  result += ExerciseCooperative().ok() ? 0 : 1;
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  result += ExerciseBackend<se::opencl>();
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
  result += ExerciseBackend<se::cuda>();
#endif
  return result;
}
