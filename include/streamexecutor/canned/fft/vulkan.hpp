// se::vulkan's FFT plugin "vkfft": VkFFT (libvkfft-dev; vkFFT.h, headers
// only), which writes GLSL for each plan and compiles it with glslang's C
// interface (glslang-dev) when the plan is made. Its commands are recorded
// into the stream's own ring command buffer and submitted with the stream's
// timeline wait and signal (vulkan/record.hpp), so a transform runs in stream
// order as a launch does. VkFFT is unnormalized, as every plugin is, and
// computes inverse transforms with e^+i.
//
// VkFFT compiles its shaders for fixed buffer sizes and keeps the buffers in
// descriptor sets of its own, which may not change while a recording that
// binds them is pending. So a plan keeps a few VkFFT applications: one per
// buffer size (in place or not) and recording in flight. An application whose
// last transform is done is rebound to the next buffers (VkFFT rewrites its
// descriptor sets); one still in flight is used again only with the same
// buffers, else another is made. A buffer's offset is a push constant
// (VkFFT's offsets at launch): slices are transformed in place in the buffer.
// VkFFT binds buffers in whole complex elements, so a real side whose last
// element is the first half of one its buffer does not hold (an odd number
// of reals) goes through a copy of the application's (Bind).
//
// What VkFFT cannot lay out: every element of the fastest dimension must be
// next to the last (a batched plan's stride 1; embeds and distances are
// free); UNIMPLEMENTED when the plan is made. Doubles need shaderFloat64.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "streamexecutor/canned/fft/common.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/vulkan.hpp"
#include "streamexecutor/vulkan/record.hpp"

#if __has_include(<vkFFT.h>) && __has_include(<glslang/Include/glslang_c_interface.h>)
#include "streamexecutor/canned/fft/vkfft_include.hpp"
#define STREAMEXECUTOR_FFT_WITH_VKFFT 1
#endif

namespace streamexecutor::fft_detail {

#if defined(STREAMEXECUTOR_FFT_WITH_VKFFT)

// VkFFTResult has no names of its own at run time.
#define SE_VKFFT_RESULTS(X)                                    \
  X(VKFFT_SUCCESS)                                             \
  X(VKFFT_ERROR_MALLOC_FAILED)                                 \
  X(VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER)                      \
  X(VKFFT_ERROR_INSUFFICIENT_TEMP_BUFFER)                      \
  X(VKFFT_ERROR_PLAN_NOT_INITIALIZED)                          \
  X(VKFFT_ERROR_NULL_TEMP_PASSED)                              \
  X(VKFFT_ERROR_INVALID_PHYSICAL_DEVICE)                       \
  X(VKFFT_ERROR_INVALID_DEVICE)                                \
  X(VKFFT_ERROR_INVALID_QUEUE)                                 \
  X(VKFFT_ERROR_INVALID_COMMAND_POOL)                          \
  X(VKFFT_ERROR_INVALID_FENCE)                                 \
  X(VKFFT_ERROR_ONLY_FORWARD_FFT_INITIALIZED)                  \
  X(VKFFT_ERROR_ONLY_INVERSE_FFT_INITIALIZED)                  \
  X(VKFFT_ERROR_INVALID_CONTEXT)                               \
  X(VKFFT_ERROR_INVALID_PLATFORM)                              \
  X(VKFFT_ERROR_ENABLED_saveApplicationToString)               \
  X(VKFFT_ERROR_EMPTY_FILE)                                    \
  X(VKFFT_ERROR_EMPTY_FFTdim)                                  \
  X(VKFFT_ERROR_EMPTY_size)                                    \
  X(VKFFT_ERROR_EMPTY_bufferSize)                              \
  X(VKFFT_ERROR_EMPTY_buffer)                                  \
  X(VKFFT_ERROR_EMPTY_tempBufferSize)                          \
  X(VKFFT_ERROR_EMPTY_tempBuffer)                              \
  X(VKFFT_ERROR_EMPTY_inputBufferSize)                         \
  X(VKFFT_ERROR_EMPTY_inputBuffer)                             \
  X(VKFFT_ERROR_EMPTY_outputBufferSize)                        \
  X(VKFFT_ERROR_EMPTY_outputBuffer)                            \
  X(VKFFT_ERROR_EMPTY_kernelSize)                              \
  X(VKFFT_ERROR_EMPTY_kernel)                                  \
  X(VKFFT_ERROR_EMPTY_applicationString)                       \
  X(VKFFT_ERROR_EMPRY_useCustomBluesteinPaddingPattern_arrays) \
  X(VKFFT_ERROR_UNSUPPORTED_RADIX)                             \
  X(VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH)                        \
  X(VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C)                    \
  X(VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_DCT)                    \
  X(VKFFT_ERROR_UNSUPPORTED_FFT_OMIT)                          \
  X(VKFFT_ERROR_FAILED_TO_ALLOCATE)                            \
  X(VKFFT_ERROR_FAILED_TO_MAP_MEMORY)                          \
  X(VKFFT_ERROR_FAILED_TO_ALLOCATE_COMMAND_BUFFERS)            \
  X(VKFFT_ERROR_FAILED_TO_BEGIN_COMMAND_BUFFER)                \
  X(VKFFT_ERROR_FAILED_TO_END_COMMAND_BUFFER)                  \
  X(VKFFT_ERROR_FAILED_TO_SUBMIT_QUEUE)                        \
  X(VKFFT_ERROR_FAILED_TO_WAIT_FOR_FENCES)                     \
  X(VKFFT_ERROR_FAILED_TO_RESET_FENCES)                        \
  X(VKFFT_ERROR_FAILED_TO_CREATE_DESCRIPTOR_POOL)              \
  X(VKFFT_ERROR_FAILED_TO_CREATE_DESCRIPTOR_SET_LAYOUT)        \
  X(VKFFT_ERROR_FAILED_TO_ALLOCATE_DESCRIPTOR_SETS)            \
  X(VKFFT_ERROR_FAILED_TO_CREATE_PIPELINE_LAYOUT)              \
  X(VKFFT_ERROR_FAILED_SHADER_PREPROCESS)                      \
  X(VKFFT_ERROR_FAILED_SHADER_PARSE)                           \
  X(VKFFT_ERROR_FAILED_SHADER_LINK)                            \
  X(VKFFT_ERROR_FAILED_SPIRV_GENERATE)                         \
  X(VKFFT_ERROR_FAILED_TO_CREATE_SHADER_MODULE)                \
  X(VKFFT_ERROR_FAILED_TO_CREATE_INSTANCE)                     \
  X(VKFFT_ERROR_FAILED_TO_SETUP_DEBUG_MESSENGER)               \
  X(VKFFT_ERROR_FAILED_TO_FIND_PHYSICAL_DEVICE)                \
  X(VKFFT_ERROR_FAILED_TO_CREATE_DEVICE)                       \
  X(VKFFT_ERROR_FAILED_TO_CREATE_FENCE)                        \
  X(VKFFT_ERROR_FAILED_TO_CREATE_COMMAND_POOL)                 \
  X(VKFFT_ERROR_FAILED_TO_CREATE_BUFFER)                       \
  X(VKFFT_ERROR_FAILED_TO_ALLOCATE_MEMORY)                     \
  X(VKFFT_ERROR_FAILED_TO_BIND_BUFFER_MEMORY)                  \
  X(VKFFT_ERROR_FAILED_TO_FIND_MEMORY)                         \
  X(VKFFT_ERROR_FAILED_TO_SYNCHRONIZE)                         \
  X(VKFFT_ERROR_FAILED_TO_COPY)                                \
  X(VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM)                      \
  X(VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM)                     \
  X(VKFFT_ERROR_FAILED_TO_GET_CODE_SIZE)                       \
  X(VKFFT_ERROR_FAILED_TO_GET_CODE)                            \
  X(VKFFT_ERROR_FAILED_TO_DESTROY_PROGRAM)                     \
  X(VKFFT_ERROR_FAILED_TO_LOAD_MODULE)                         \
  X(VKFFT_ERROR_FAILED_TO_GET_FUNCTION)                        \
  X(VKFFT_ERROR_FAILED_TO_SET_DYNAMIC_SHARED_MEMORY)           \
  X(VKFFT_ERROR_FAILED_TO_MODULE_GET_GLOBAL)                   \
  X(VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL)                       \
  X(VKFFT_ERROR_FAILED_TO_EVENT_RECORD)                        \
  X(VKFFT_ERROR_FAILED_TO_ADD_NAME_EXPRESSION)                 \
  X(VKFFT_ERROR_FAILED_TO_INITIALIZE)                          \
  X(VKFFT_ERROR_FAILED_TO_SET_DEVICE_ID)                       \
  X(VKFFT_ERROR_FAILED_TO_GET_DEVICE)                          \
  X(VKFFT_ERROR_FAILED_TO_CREATE_CONTEXT)                      \
  X(VKFFT_ERROR_FAILED_TO_CREATE_PIPELINE)                     \
  X(VKFFT_ERROR_FAILED_TO_SET_KERNEL_ARG)                      \
  X(VKFFT_ERROR_FAILED_TO_CREATE_COMMAND_QUEUE)                \
  X(VKFFT_ERROR_FAILED_TO_RELEASE_COMMAND_QUEUE)               \
  X(VKFFT_ERROR_FAILED_TO_ENUMERATE_DEVICES)                   \
  X(VKFFT_ERROR_FAILED_TO_GET_ATTRIBUTE)                       \
  X(VKFFT_ERROR_FAILED_TO_CREATE_EVENT)                        \
  X(VKFFT_ERROR_FAILED_TO_CREATE_COMMAND_LIST)                 \
  X(VKFFT_ERROR_FAILED_TO_DESTROY_COMMAND_LIST)                \
  X(VKFFT_ERROR_FAILED_TO_SUBMIT_BARRIER)

constexpr std::string_view VkFftResultName(VkFFTResult result) {
  switch (result) {
#define SE_VKFFT_RESULT_NAME(name) \
  case name: return #name;
    SE_VKFFT_RESULTS(SE_VKFFT_RESULT_NAME)
#undef SE_VKFFT_RESULT_NAME
  }
  return "not a VkFFTResult of vkFFT.h 1.2.26";
}
#undef SE_VKFFT_RESULTS

inline Status VkFftError(VkFFTResult result, std::string_view call, std::string_view device, const PlanSpec& spec) {
  ErrorCode code = ErrorCode::kInternal;
  switch (result) {
    case VKFFT_ERROR_MALLOC_FAILED:
    case VKFFT_ERROR_FAILED_TO_ALLOCATE:
    case VKFFT_ERROR_FAILED_TO_ALLOCATE_MEMORY:
    case VKFFT_ERROR_FAILED_TO_ALLOCATE_COMMAND_BUFFERS:
    case VKFFT_ERROR_FAILED_TO_CREATE_DESCRIPTOR_POOL:
    case VKFFT_ERROR_FAILED_TO_ALLOCATE_DESCRIPTOR_SETS: code = ErrorCode::kResourceExhausted; break;
    case VKFFT_ERROR_UNSUPPORTED_RADIX:
    case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH:
    case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C:
    case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_DCT:
    case VKFFT_ERROR_UNSUPPORTED_FFT_OMIT: code = ErrorCode::kUnimplemented; break;
    default: break;
  }
  return MakeError(code, "{} on {}: VkFFT error {} ({}) for the {} plan", call, device, static_cast<int>(result),
                   VkFftResultName(result), spec.Describe());
}

// VkFFT's plan making is not thread-safe: it sets the process's C locale
// while it prints its shaders, and starts and stops glslang's process state.
STREAMEXECUTOR_EXPORT inline std::mutex& VkFftInitMutex() {
  static std::mutex mutex;
  return mutex;
}

// VkFFT's strides of one side, in that side's elements (the fastest
// dimension is contiguous: stride 1): between rows, between planes, and
// between the transforms of a batch. VkFFT has three dimensions and a batch
// count, and it reads a plan of fewer dimensions with a batch as more rows
// (or planes) of one: the batch of a 1-D or 2-D plan is its next dimension
// (VkFftSizes), whose stride is the distance.
inline std::array<std::uint64_t, 3> VkFftStrides(const PlanSpec& spec, const SideLayout& side) {
  const auto embed = [&](int i) { return side.embed[static_cast<std::size_t>(i)]; };
  const int rank = spec.rank;
  const std::uint64_t row = embed(rank - 1);
  const std::uint64_t plane = rank >= 2 ? row * embed(rank - 2) : row;
  const std::uint64_t volume = rank >= 3 ? plane * embed(rank - 3) : plane;
  const std::uint64_t distance = spec.batch > 1 ? side.distance : volume;
  if (rank == 1) return {distance, distance * spec.batch, distance * spec.batch};
  if (rank == 2) return {row, distance, distance * spec.batch};
  return {row, plane, distance};
}
// VkFFT's sizes (fastest first) and its batch count, as VkFftStrides lays them out.
inline std::array<std::uint64_t, 4> VkFftSizes(const PlanSpec& spec) {
  std::array<std::uint64_t, 4> sizes{1, 1, 1, 1};
  for (int i = 0; i < spec.rank; ++i) {
    sizes[static_cast<std::size_t>(i)] = spec.dims[static_cast<std::size_t>(spec.rank - 1 - i)];
  }
  sizes[static_cast<std::size_t>(std::min(spec.rank, 3))] = spec.batch;
  return sizes;
}

// Which buffer sizes (in bytes) and placement a VkFFT application was made for.
struct VkFftShape {
  bool in_place = false;
  std::uint64_t buffer_bytes = 0;  // VkFFT's `buffer`: the complex side
  std::uint64_t input_bytes = 0;   // VkFFT's `inputBuffer`: the other side (0 in place)
  bool operator==(const VkFftShape&) const = default;
};

// One VkFFT application and the Vulkan objects it was given. VkFFT keeps
// pointers to the members it was handed: an application never moves.
struct VkFftApp {
  VkFftApp() = default;
  VkFftApp(const VkFftApp&) = delete;
  VkFftApp& operator=(const VkFftApp&) = delete;
  ~VkFftApp() {
    if (initialized) deleteVkFFT(&app);
    if (fence != VK_NULL_HANDLE) vkDestroyFence(device, fence, nullptr);
    if (staging.buffer != VK_NULL_HANDLE) vulkan_detail::DestroyBuffer(*executor, staging);
    if (pool != VK_NULL_HANDLE) executor->api.vkDestroyCommandPool(device, pool, nullptr);
    if (last != nullptr) last->Release();
  }
  // Its last transform is done: its descriptor sets may be rewritten.
  bool Idle() const { return last == nullptr || last->Reached(last_value); }

  VkFFTApplication app{};
  bool initialized = false;
  VkFftShape shape;
  vulkan_detail::Executor* executor = nullptr;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  // For VkFFT's own transfers while it plans (its tables, Bluestein's kernels).
  VkCommandPool pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  // Bound now: VkFFT's buffer, and its input (C2R: output) buffer.
  VkBuffer buffer = VK_NULL_HANDLE, input = VK_NULL_HANDLE;
  vulkan_detail::Buffer staging;  // a real side's copy (VkFftPlan::Bind), made on first need
  std::uint64_t buffer_bytes = 0, input_bytes = 0;
  vulkan_detail::Timeline* last = nullptr;  // referenced: the latest recording's stream
  std::uint64_t last_value = 0;
  std::uint64_t used = 0;  // the plan's counter at its latest use: least recently used goes first
  bool bound = false;      // a captured application's buffers are in its descriptor sets
};

class VkFftPlan {
 public:
  static StatusOr<std::unique_ptr<VkFftPlan>> Make(StreamExecutor<vulkan>* executor, const PlanSpec& spec) {
    const std::string& device = executor->DeviceLabel();
    vulkan_detail::Executor& e = *executor->native_state().impl;
    const std::string_view caller = spec.batched ? "CreateBatchedFftPlan" : "CreateFftPlan";
    if (spec.in.stride != 1 || spec.out.stride != 1) {
      return MakeError(ErrorCode::kUnimplemented,
                       "{} on {}: VkFFT reads and writes the fastest dimension contiguously; the {} plan's {} stride "
                       "is {} (embeds and distances may be anything, strides must be 1)",
                       caller, device, spec.Describe(), spec.in.stride != 1 ? "input" : "output",
                       spec.in.stride != 1 ? spec.in.stride : spec.out.stride);
    }
    if (fft::IsDouble(spec.type)) {
      VkPhysicalDeviceFeatures2 features{};
      features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
      e.instance->vkGetPhysicalDeviceFeatures2(e.physical, &features);
      if (!features.features.shaderFloat64) {
        return MakeError(ErrorCode::kNotFound,
                         "{} on {}: a {} plan needs the device feature shaderFloat64 (doubles in shaders), which this "
                         "device does not have",
                         caller, device, fft::TypeName(spec.type));
      }
    }
    auto plan = std::unique_ptr<VkFftPlan>(new VkFftPlan(executor, spec));
    // The application for buffers that hold exactly the plan's elements, made
    // now so that a shape VkFFT cannot do fails here; the first ThenFft with
    // such buffers uses it.
    VkFftShape shape;
    shape.in_place = false;
    shape.buffer_bytes = RoundUp(plan->BufferSideElements() * plan->ComplexBytes(), plan->ComplexBytes());
    shape.input_bytes = RoundUp(plan->InputSideElements() * plan->InputSideBytes(), plan->ComplexBytes());
    StatusOr<std::unique_ptr<VkFftApp>> app = plan->MakeApp(caller, shape);
    if (!app.ok()) return app.status();
    plan->apps_.push_back(std::move(app).value());
    return StatusOr<std::unique_ptr<VkFftPlan>>(std::move(plan));  // spelled out: nvcc does not move implicitly here
  }

  // Applications may still be in use by queued work: they go once every
  // stream of the executor has passed what it has queued now.
  ~VkFftPlan() {
    if (apps_.empty()) return;
    auto* apps = new (std::nothrow) std::vector<std::unique_ptr<VkFftApp>>(std::move(apps_));
    if (apps == nullptr) return;  // out of memory: leaked rather than destroyed under running work
    vulkan_detail::DestroyWhenIdle(
        *executor_->native_state().impl,
        vulkan_detail::Executor::Deferred{
            {}, nullptr, apps, [](void* p) { delete static_cast<std::vector<std::unique_ptr<VkFftApp>>*>(p); }, {}});
  }
  VkFftPlan(const VkFftPlan&) = delete;
  VkFftPlan& operator=(const VkFftPlan&) = delete;

  Status Enqueue(Stream<vulkan>& stream, const std::shared_ptr<VkFftPlan>& self, const DeviceMemoryBase& input,
                 const DeviceMemoryBase& output) {
    // VkFFT's `buffer` is the complex side (C2R: the input, which VkFFT may
    // overwrite, as the family allows); the other side is its `inputBuffer`,
    // which it only reads, or for C2R its `outputBuffer`. (VkFFT 1.2.26 binds
    // the real side of a C2R that "returns to the input buffer" with the
    // complex side's size, past the end of a buffer just big enough.)
    const bool c2r = fft::IsComplexToReal(spec_.type);
    const DeviceMemoryBase& buffer_view = c2r ? input : output;
    const DeviceMemoryBase& input_view = c2r ? output : input;
    VkFftShape shape;
    shape.in_place = input.opaque() == output.opaque() && input.offset() == output.offset();
    Binding binding;
    binding.spec = &spec_;
    binding.device = executor_->DeviceLabel();
    binding.in_place = shape.in_place;
    binding.input_bytes = InputSideElements() * InputSideBytes();
    STREAMEXECUTOR_RETURN_IF_ERROR(Bind(buffer_view, BufferSideElements() * ComplexBytes(), ComplexBytes(),
                                        binding.buffer_offset, shape.buffer_bytes));
    if (!shape.in_place) {
      STREAMEXECUTOR_RETURN_IF_ERROR(Bind(input_view, binding.input_bytes, InputSideBytes(), binding.input_offset,
                                          shape.input_bytes, &binding.staged));
    }
    binding.buffer = static_cast<const vulkan_detail::Buffer*>(buffer_view.opaque())->buffer;
    binding.input =
        shape.in_place ? VK_NULL_HANDLE : static_cast<const vulkan_detail::Buffer*>(input_view.opaque())->buffer;
    vulkan_detail::Executor& e = *executor_->native_state().impl;
    if (stream.capturing()) return Capture(stream, self, input, output, shape, std::move(binding));

    std::lock_guard<std::mutex> lock(mutex_);
    StatusOr<VkFftApp*> chosen = Choose(shape, binding.buffer, binding.input, binding.staged);
    if (!chosen.ok()) return chosen.status();
    VkFftApp& app = *chosen.value();
    STREAMEXECUTOR_RETURN_IF_ERROR(MakeStaging(e, app, binding));
    // Rebinding rewrites descriptor sets that no pending recording uses. An
    // idle application is rebound even to the same handles: the buffer it
    // had may have been freed and the handle reused.
    const bool rebind = app.Idle();
    vulkan_detail::StreamState& s = *stream.native_handle();
    StatusOr<std::uint64_t> value = vulkan_detail::RecordOnStream(
        s, [&](VkCommandBuffer commands) { return Record(e, app, binding, rebind, commands); });
    if (!value.ok()) return value.status();
    if (value.value() != 0) {
      s.timeline->Reference();
      if (app.last != nullptr) app.last->Release();
      app.last = s.timeline;
      app.last_value = value.value();
    }
    return Status();
  }

 private:
  // Applications kept per plan: one per buffer shape and recording in
  // flight; past this, the least recently used idle ones go.
  static constexpr std::size_t kKeptApps = 4;

  // What one transform binds: VkFFT's buffer and its input (C2R: output)
  // buffer, their offsets, and whether the real side is staged (Bind).
  struct Binding {
    const PlanSpec* spec = nullptr;
    std::string_view device;  // the executor's label: the executor outlives its work
    bool in_place = false, staged = false;
    VkBuffer buffer = VK_NULL_HANDLE, input = VK_NULL_HANDLE;
    std::uint64_t buffer_offset = 0, input_offset = 0;
    std::uint64_t input_bytes = 0;  // the real (or other complex) side's bytes
  };

  static Status MakeStaging(vulkan_detail::Executor& e, VkFftApp& app, const Binding& binding) {
    if (!binding.staged || app.staging.buffer != VK_NULL_HANDLE) return Status();
    StatusOr<vulkan_detail::Buffer> made = vulkan_detail::CreateBuffer(
        e, app.shape.input_bytes, e.memory_types.device, false, "ThenFft (VkFFT's copy of a real buffer)");
    if (!made.ok()) return made.status();
    app.staging = made.value();
    return Status();
  }

  // The transform's commands: VkFFTAppend, and a staged side's copies.
  static Status Record(vulkan_detail::Executor& e, VkFftApp& app, const Binding& b, bool rebind,
                       VkCommandBuffer commands) {
    const bool c2r = fft::IsComplexToReal(b.spec->type);
    if (rebind) {
      app.buffer = b.buffer;
      app.input = b.staged ? app.staging.buffer : b.input;
      // VkFFT rewrites its descriptor sets when given buffers other than
      // those it holds (it compares the pointers).
      app.app.configuration.buffer = nullptr;
      app.app.configuration.inputBuffer = nullptr;
      app.app.configuration.outputBuffer = nullptr;
    }
    // A staged real side is copied in whole, padding included, so that a
    // C2R's copy back leaves the elements outside its layout as they were.
    const VkBufferCopy into{b.input_offset, 0, b.input_bytes}, back{0, b.input_offset, b.input_bytes};
    if (b.staged) {
      e.api.vkCmdCopyBuffer(commands, b.input, app.staging.buffer, 1, &into);
      Barrier(e, commands, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    }
    VkFFTLaunchParams launch{};
    launch.commandBuffer = &commands;
    launch.buffer = &app.buffer;
    if (!b.in_place) (c2r ? launch.outputBuffer : launch.inputBuffer) = &app.input;
    launch.bufferOffset = b.buffer_offset;
    (c2r ? launch.outputBufferOffset : launch.inputBufferOffset) = b.staged ? 0 : b.input_offset;
    const VkFFTResult r = VkFFTAppend(&app.app, fft::IsForward(b.spec->type) ? -1 : 1, &launch);
    if (r != VKFFT_SUCCESS) return VkFftError(r, "ThenFft (VkFFTAppend)", b.device, *b.spec);
    if (b.staged && c2r) {
      Barrier(e, commands, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_TRANSFER_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT);
      e.api.vkCmdCopyBuffer(commands, app.staging.buffer, b.input, 1, &back);
    }
    return Status();
  }

  // Captured into a CommandBuffer: an application of the recording's own,
  // bound to these buffers when first written into a command buffer and never
  // rebound (each submission of the buffer binds its descriptor sets), and
  // freed once the buffer and the work queued with it are gone.
  struct Captured {
    std::shared_ptr<VkFftApp> app;
    std::shared_ptr<Binding> binding;
    std::shared_ptr<std::mutex> mutex;  // the application's state, recorded from any thread
    Status operator()(VkCommandBuffer commands) const {
      std::lock_guard<std::mutex> lock(*mutex);
      const bool rebind = !app->bound;
      STREAMEXECUTOR_RETURN_IF_ERROR(Record(*app->executor, *app, *binding, rebind, commands));
      app->bound = true;
      return Status();
    }
  };
  Status Capture(Stream<vulkan>& stream, const std::shared_ptr<VkFftPlan>& self, const DeviceMemoryBase& input,
                 const DeviceMemoryBase& output, const VkFftShape& shape, Binding binding) {
    vulkan_detail::Executor& e = *executor_->native_state().impl;
    StatusOr<std::unique_ptr<VkFftApp>> made = MakeApp("ThenFft", shape);
    if (!made.ok()) return made.status();
    Captured call;
    call.app = std::shared_ptr<VkFftApp>(std::move(made).value().release(), [&e](VkFftApp* app) {
      vulkan_detail::DestroyWhenIdle(e, vulkan_detail::Executor::Deferred{
                                            {}, nullptr, app, [](void* p) { delete static_cast<VkFftApp*>(p); }, {}});
    });
    STREAMEXECUTOR_RETURN_IF_ERROR(MakeStaging(e, *call.app, binding));
    // The recording outlives the plan's spec: it keeps its own.
    auto owned = std::make_shared<std::pair<PlanSpec, Binding>>(spec_, std::move(binding));
    owned->second.spec = &owned->first;
    call.binding = std::shared_ptr<Binding>(owned, &owned->second);
    call.mutex = std::make_shared<std::mutex>();
    const DeviceMemoryBase operands[] = {input, output};
    return canned_detail::EnqueueLibraryCall(stream, "ThenFft", operands, call, self);
  }

  VkFftPlan(StreamExecutor<vulkan>* executor, const PlanSpec& spec) : executor_(executor), spec_(spec) {}

  static std::uint64_t RoundUp(std::uint64_t bytes, std::uint64_t unit) { return (bytes + unit - 1) / unit * unit; }
  std::uint64_t ComplexBytes() const { return fft::IsDouble(spec_.type) ? 16 : 8; }
  // Bytes of one element of VkFFT's input side: real for real transforms.
  std::uint64_t InputSideBytes() const {
    return fft::IsComplexToComplex(spec_.type) ? ComplexBytes() : ComplexBytes() / 2;
  }
  std::uint64_t BufferSideElements() const {
    return fft::IsComplexToReal(spec_.type) ? spec_.InputElements() : spec_.OutputElements();
  }
  std::uint64_t InputSideElements() const {
    return fft::IsComplexToReal(spec_.type) ? spec_.OutputElements() : spec_.InputElements();
  }

  // A view's offset in its VkBuffer, and the size VkFFT is to bind from the
  // buffer's start: through the view's last element, in whole complex
  // elements (VkFFT binds `size / complex` complex elements). A real side
  // whose last element ends inside a complex element the buffer does not
  // hold is `staged`: copied to a buffer of whole complex elements, which
  // VkFFT binds instead.
  Status Bind(const DeviceMemoryBase& view, std::uint64_t bytes, std::uint64_t element, std::uint64_t& offset,
              std::uint64_t& bound, bool* staged = nullptr) const {
    const auto* b = static_cast<const vulkan_detail::Buffer*>(view.opaque());
    offset = vulkan_detail::BufferOffset(view);
    if (offset % element != 0) {
      return MakeError(ErrorCode::kUnimplemented,
                       "ThenFft on {}: VkFFT takes offsets in whole elements; a view of the {} plan starts at byte {} "
                       "of its buffer, not a multiple of {}",
                       executor_->DeviceLabel(), spec_.Describe(), offset, element);
    }
    bound = RoundUp(offset + bytes, ComplexBytes());
    if (bound <= b->base_offset + b->size) return Status();
    if (staged == nullptr) {
      return MakeError(ErrorCode::kInternal,
                       "ThenFft on {}: the {} plan's complex side ends inside a complex element of its buffer",
                       executor_->DeviceLabel(), spec_.Describe());
    }
    *staged = true;
    bound = RoundUp(bytes, ComplexBytes());
    return Status();
  }

  static void Barrier(vulkan_detail::Executor& e, VkCommandBuffer commands, VkAccessFlags src_access,
                      VkPipelineStageFlags src_stage, VkAccessFlags dst_access, VkPipelineStageFlags dst_stage) {
    VkMemoryBarrier barrier{};
    barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    barrier.srcAccessMask = src_access;
    barrier.dstAccessMask = dst_access;
    e.api.vkCmdPipelineBarrier(commands, src_stage, dst_stage, 0, 1, &barrier, 0, nullptr, 0, nullptr);
  }

  // An application for `shape` that may take these buffers now. Caller holds mutex_.
  // A staged transform takes an idle application only: its copy of the real
  // side is the application's.
  StatusOr<VkFftApp*> Choose(const VkFftShape& shape, VkBuffer buffer, VkBuffer input, bool staged) {
    ++uses_;
    VkFftApp* chosen = nullptr;
    for (const std::unique_ptr<VkFftApp>& app : apps_) {
      if (app->shape != shape) continue;
      const bool same = !staged && app->buffer == buffer && app->input == input;
      // In flight on these buffers (they are alive until it is done): as it is.
      if (same && !app->Idle()) {
        chosen = app.get();
        break;
      }
      if (chosen == nullptr && app->Idle()) chosen = app.get();
    }
    if (chosen == nullptr) {
      StatusOr<std::unique_ptr<VkFftApp>> made = MakeApp("ThenFft", shape);
      if (!made.ok()) return made.status();
      apps_.push_back(std::move(made).value());
      chosen = apps_.back().get();
    }
    chosen->used = uses_;
    // Idle applications of other shapes past kKeptApps go now: nothing pending uses them.
    while (apps_.size() > kKeptApps) {
      auto oldest = apps_.end();
      for (auto it = apps_.begin(); it != apps_.end(); ++it) {
        if (it->get() != chosen && (*it)->Idle() && (oldest == apps_.end() || (*it)->used < (*oldest)->used)) {
          oldest = it;
        }
      }
      if (oldest == apps_.end()) break;
      apps_.erase(oldest);
    }
    return chosen;
  }

  StatusOr<std::unique_ptr<VkFftApp>> MakeApp(std::string_view caller, const VkFftShape& shape) const {
    vulkan_detail::Executor& e = *executor_->native_state().impl;
    const std::string& device = executor_->DeviceLabel();
    auto app = std::make_unique<VkFftApp>();
    app->executor = &e;
    app->physical = e.physical;
    app->device = e.device;
    app->queue = e.queue;
    app->shape = shape;
    app->buffer_bytes = shape.buffer_bytes;
    app->input_bytes = shape.input_bytes;
    VkCommandPoolCreateInfo pool{};
    pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = e.queue_family;
    if (VkResult r = e.api.vkCreateCommandPool(e.device, &pool, nullptr, &app->pool); r != VK_SUCCESS) {
      return vulkan_detail::VkError("vkCreateCommandPool", r, "{} on {}: for VkFFT's {} plan", caller, device,
                                    spec_.Describe());
    }
    VkFenceCreateInfo fence{};
    fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    if (VkResult r = vkCreateFence(e.device, &fence, nullptr, &app->fence); r != VK_SUCCESS) {
      return vulkan_detail::VkError("vkCreateFence", r, "{} on {}: for VkFFT's {} plan", caller, device,
                                    spec_.Describe());
    }

    VkFFTConfiguration config{};
    config.FFTdim = static_cast<std::uint64_t>(spec_.rank);
    const std::array<std::uint64_t, 4> sizes = VkFftSizes(spec_);
    for (std::size_t i = 0; i < 3; ++i) config.size[i] = sizes[i];
    config.numberBatches = sizes[3];
    config.physicalDevice = &app->physical;
    config.device = &app->device;
    config.queue = &app->queue;
    config.commandPool = &app->pool;
    config.fence = &app->fence;
    config.doublePrecision = fft::IsDouble(spec_.type) ? 1 : 0;
    config.performR2C = fft::IsComplexToComplex(spec_.type) ? 0 : 1;
    config.specifyOffsetsAtLaunch = 1;
    // A plan has one direction: VkFFT compiles only its shaders.
    config.makeForwardPlanOnly = fft::IsForward(spec_.type) ? 1 : 0;
    config.makeInversePlanOnly = fft::IsForward(spec_.type) ? 0 : 1;
    const bool c2r = fft::IsComplexToReal(spec_.type);
    const SideLayout& buffer_side = c2r ? spec_.in : spec_.out;
    const SideLayout& input_side = c2r ? spec_.out : spec_.in;
    config.bufferNum = 1;
    config.bufferSize = &app->buffer_bytes;
    const std::array<std::uint64_t, 3> buffer_strides = VkFftStrides(spec_, shape.in_place ? spec_.in : buffer_side);
    for (std::size_t i = 0; i < 3; ++i) config.bufferStride[i] = buffer_strides[i];
    if (!shape.in_place) {
      const std::array<std::uint64_t, 3> input_strides = VkFftStrides(spec_, input_side);
      if (c2r) {
        config.isOutputFormatted = 1;
        config.outputBufferNum = 1;
        config.outputBufferSize = &app->input_bytes;
        for (std::size_t i = 0; i < 3; ++i) config.outputBufferStride[i] = input_strides[i];
      } else {
        config.isInputFormatted = 1;
        config.inputBufferNum = 1;
        config.inputBufferSize = &app->input_bytes;
        for (std::size_t i = 0; i < 3; ++i) config.inputBufferStride[i] = input_strides[i];
      }
    }
    VkFFTResult r = VKFFT_SUCCESS;
    {
      std::lock_guard<std::mutex> init(VkFftInitMutex());
      // VkFFT submits its own transfers to the queue while it plans.
      std::lock_guard<streamexecutor::detail::SpinLock> queue(e.queue_mutex);
      r = initializeVkFFT(&app->app, config);
    }
    if (r != VKFFT_SUCCESS) return VkFftError(r, std::string(caller) + " (initializeVkFFT)", device, spec_);
    app->initialized = true;
    return StatusOr<std::unique_ptr<VkFftApp>>(std::move(app));  // spelled out: nvcc does not move implicitly here
  }

  StreamExecutor<vulkan>* executor_;
  PlanSpec spec_;
  std::mutex mutex_;  // apps_ and each application's use
  std::vector<std::unique_ptr<VkFftApp>> apps_;
  std::uint64_t uses_ = 0;
};

template <>
struct Adapter<vulkan> {
  static constexpr std::string_view kPluginName = "vkfft";
  using Plan = VkFftPlan;
};
#else
// Built without vkFFT.h or glslang's C interface: the plugin exists in name only.
template <>
struct Adapter<vulkan> {
  static constexpr std::string_view kPluginName = "vkfft";
  static constexpr std::string_view kLibrary = "VkFFT (vkFFT.h) with glslang's C interface",
                                    kPackage = "libvkfft-dev and glslang-dev";
  using Plan = PlanWithoutLibrary<Adapter>;
};
#endif

}  // namespace streamexecutor::fft_detail
