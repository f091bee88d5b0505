// se::opencl::kClFftPlugin: clFFT on the OpenCL backend. A plan is a clFFT
// plan of the executor's context (a batched plan: clFFT's batch size,
// distances and per-dimension strides), baked (its kernels compiled) when the plan
// is made; transforms are enqueued on the stream's own queue, so they run in
// stream order. clFFT scales inverse transforms by 1/N by default; the scale
// is set to 1 so that every plugin is unnormalized.
#pragma once

#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>

#include "streamexecutor/canned/fft/common.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/opencl.hpp"

#if __has_include(<clFFT.h>)
#include <clFFT.h>
#define STREAMEXECUTOR_FFT_WITH_CLFFT 1
#endif

namespace streamexecutor::fft_detail {

#if defined(STREAMEXECUTOR_FFT_WITH_CLFFT)

inline Status ClFftError(clfftStatus status, std::string_view call, std::string_view device) {
  return MakeError(status == CLFFT_OUT_OF_HOST_MEMORY || status == CLFFT_OUT_OF_RESOURCES
                       ? ErrorCode::kResourceExhausted
                       : ErrorCode::kInternal,
                   "{} on {}: clFFT error {}", call, device, static_cast<int>(status));
}

// True from the moment the process starts exiting past clfftSetup. clFFT
// keeps its plans in a static repository that clfftSetup makes, and statics
// are destroyed in reverse order of construction: a plan held by an object
// made before the first plan (at namespace scope, in an earlier static, in an
// executor's plan cache) is destroyed after that repository, where
// clfftDestroyPlan would free its memory a second time. From then on a plan
// is left to the process's end, as clFFT's kernels already are.
STREAMEXECUTOR_EXPORT inline std::atomic<bool>& ClFftExiting() noexcept {
  static std::atomic<bool> exiting{false};
  return exiting;
}

// clfftSetup once per process; clFFT keeps global state (its kernel cache)
// that is never torn down, as the OpenCL platform itself is not: other code
// of the process may hold clFFT plans of its own at exit.
STREAMEXECUTOR_EXPORT inline const clfftStatus& ClFftSetup() {
  static const clfftStatus status = [] {
    clfftSetupData setup;
    clfftStatus s = clfftInitSetupData(&setup);
    if (s == CLFFT_SUCCESS) s = clfftSetup(&setup);
    if (s == CLFFT_SUCCESS) {
      // Registered after clfftSetup made the repository, so it runs before
      // the repository's destructor ([basic.start.term]).
      ClFftExiting();
      std::atexit([] { ClFftExiting().store(true, std::memory_order_relaxed); });
    }
    return s;
  }();
  return status;
}

class ClFftPlan {
 public:
  static StatusOr<std::unique_ptr<ClFftPlan>> Make(StreamExecutor<opencl>* executor, const PlanSpec& spec) {
    const std::string& device = executor->DeviceLabel();
    if (ClFftSetup() != CLFFT_SUCCESS) return ClFftError(ClFftSetup(), "clfftSetup", device);
    auto plan = std::unique_ptr<ClFftPlan>(new ClFftPlan(executor, spec));
    STREAMEXECUTOR_RETURN_IF_ERROR(plan->MakeHandle(false, plan->out_of_place_));
    plan->has_out_of_place_ = true;
    return StatusOr<std::unique_ptr<ClFftPlan>>(std::move(plan));  // spelled out: nvcc does not move implicitly here
  }

  ~ClFftPlan() {
    if (ClFftExiting().load(std::memory_order_relaxed)) return;  // see ClFftExiting
    if (has_out_of_place_) clfftDestroyPlan(&out_of_place_);
    if (has_in_place_) clfftDestroyPlan(&in_place_);
  }
  ClFftPlan(const ClFftPlan&) = delete;
  ClFftPlan& operator=(const ClFftPlan&) = delete;

  Status Enqueue(Stream<opencl>& stream, const std::shared_ptr<ClFftPlan>&, const DeviceMemoryBase& input,
                 const DeviceMemoryBase& output) {
    if (stream.capturing()) return stream.NotCapturable("ThenFft (clFFT)");
    const std::string& device = executor_->DeviceLabel();
    // clFFT takes whole buffers: a slice's offset cannot be passed.
    if (input.offset() != 0 || output.offset() != 0) {
      return MakeError(ErrorCode::kUnimplemented,
                       "ThenFft on {}: clFFT transforms whole buffers; a slice (GetSlice at a non-zero offset) "
                       "cannot be its input or output",
                       device);
    }
    const bool in_place = input.opaque() == output.opaque();
    clfftPlanHandle handle = out_of_place_;
    if (in_place) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!has_in_place_) {
        STREAMEXECUTOR_RETURN_IF_ERROR(MakeHandle(true, in_place_));
        has_in_place_ = true;
      }
      handle = in_place_;
    }
    opencl_detail::StreamState& state = *stream.native_handle();
    // Commands held behind a pending host callback (opencl/held.hpp) cannot
    // be joined by a library's own enqueue, so that order is refused.
    if (auto held = opencl_detail::HoldIfPending(state, [&] {
          return MakeError(ErrorCode::kUnimplemented,
                           "ThenFft on {}: the stream has a host callback still pending; clFFT enqueues on the queue "
                           "directly, so wait for the callback (BlockHostUntilDone) before ThenFft",
                           device);
        })) {
      return *held;
    }
    cl_mem in = opencl_detail::Buffer(input);
    cl_mem out = opencl_detail::Buffer(output);
    cl_command_queue queue = state.queue;
    // clFFT sets the arguments of the plan's own cl_kernels before enqueuing
    // them: two threads enqueuing one plan must take turns.
    std::lock_guard<std::mutex> lock(mutex_);
    const clfftStatus s = clfftEnqueueTransform(handle, fft::IsForward(spec_.type) ? CLFFT_FORWARD : CLFFT_BACKWARD, 1,
                                                &queue, 0, nullptr, nullptr, &in, in_place ? nullptr : &out, nullptr);
    return s == CLFFT_SUCCESS ? Status() : ClFftError(s, "clfftEnqueueTransform", device);
  }

 private:
  ClFftPlan(StreamExecutor<opencl>* executor, const PlanSpec& spec) : executor_(executor), spec_(spec) {}

  Status MakeHandle(bool in_place, clfftPlanHandle& handle) {
    const std::string& device = executor_->DeviceLabel();
    const opencl_detail::Executor& native = *executor_->native_state().impl;
    // clFFT's lengths run fastest first: ours reversed.
    std::array<std::size_t, 3> lengths{1, 1, 1};
    for (int i = 0; i < spec_.rank; ++i) {
      lengths[static_cast<std::size_t>(i)] = spec_.dims[static_cast<std::size_t>(spec_.rank - 1 - i)];
    }
    const auto dim = spec_.rank == 1 ? CLFFT_1D : spec_.rank == 2 ? CLFFT_2D : CLFFT_3D;
    clfftPlanHandle made{};
    clfftStatus s = clfftCreateDefaultPlan(&made, native.context, dim, lengths.data());
    if (s != CLFFT_SUCCESS) return ClFftError(s, "clfftCreateDefaultPlan", device);
    if (s == CLFFT_SUCCESS) s = clfftSetPlanPrecision(made, fft::IsDouble(spec_.type) ? CLFFT_DOUBLE : CLFFT_SINGLE);
    if (s == CLFFT_SUCCESS) s = clfftSetPlanScale(made, CLFFT_BACKWARD, 1.0f);
    if (s == CLFFT_SUCCESS) s = clfftSetResultLocation(made, in_place ? CLFFT_INPLACE : CLFFT_OUTOFPLACE);
    if (s == CLFFT_SUCCESS) {
      // A real transform's complex side is Hermitian: its rows are n/2 + 1 long.
      const bool forward = fft::IsRealToComplex(spec_.type);
      s = fft::IsComplexToComplex(spec_.type)
              ? clfftSetLayout(made, CLFFT_COMPLEX_INTERLEAVED, CLFFT_COMPLEX_INTERLEAVED)
              : clfftSetLayout(made, forward ? CLFFT_REAL : CLFFT_HERMITIAN_INTERLEAVED,
                               forward ? CLFFT_HERMITIAN_INTERLEAVED : CLFFT_REAL);
    }
    // Strides per dimension, fastest first, from the layouts (PlanSpec::in
    // and ::out: dense for a plain plan, the caller's for a batched one).
    std::array<std::size_t, 3> in_strides{1, 1, 1}, out_strides{1, 1, 1};
    for (int i = 0; i < spec_.rank; ++i) {
      in_strides[static_cast<std::size_t>(i)] = spec_.in.DimStride(spec_.rank, spec_.rank - 1 - i);
      out_strides[static_cast<std::size_t>(i)] = spec_.out.DimStride(spec_.rank, spec_.rank - 1 - i);
    }
    if (s == CLFFT_SUCCESS) s = clfftSetPlanInStride(made, dim, in_strides.data());
    if (s == CLFFT_SUCCESS) s = clfftSetPlanOutStride(made, dim, out_strides.data());
    if (s == CLFFT_SUCCESS && spec_.batched) {
      s = clfftSetPlanBatchSize(made, spec_.batch);
      if (s == CLFFT_SUCCESS) s = clfftSetPlanDistance(made, spec_.in.distance, spec_.out.distance);
    }
    if (s != CLFFT_SUCCESS) {
      clfftDestroyPlan(&made);
      return ClFftError(s, "configuring the clFFT plan", device);
    }
    // Baking compiles the plan's kernels; a queue of the context is all it
    // needs, and the executor's own would serialize with unrelated work.
    cl_int error = CL_SUCCESS;
    cl_command_queue queue = clCreateCommandQueueWithProperties(native.context, native.device, nullptr, &error);
    if (error != CL_SUCCESS) {
      clfftDestroyPlan(&made);
      return opencl_detail::ClError("clCreateCommandQueueWithProperties", error, "baking a clFFT plan on {}", device);
    }
    s = clfftBakePlan(made, 1, &queue, nullptr, nullptr);
    clReleaseCommandQueue(queue);
    if (s != CLFFT_SUCCESS) {
      clfftDestroyPlan(&made);
      return ClFftError(s, "clfftBakePlan", device);
    }
    handle = made;
    return Status();
  }

  StreamExecutor<opencl>* executor_;
  PlanSpec spec_;
  std::mutex mutex_;
  // clFFT handles are plain numbers with no null value: the flags say which exist.
  clfftPlanHandle out_of_place_{};
  clfftPlanHandle in_place_{};
  bool has_out_of_place_ = false;
  bool has_in_place_ = false;
};

template <>
struct Adapter<opencl> {
  static constexpr std::string_view kPluginName = "clfft";
  using Plan = ClFftPlan;
};
#else
// Built without clFFT.h: the plugin exists in name only.
template <>
struct Adapter<opencl> {
  static constexpr std::string_view kPluginName = "clfft";
  static constexpr std::string_view kLibrary = "clFFT", kPackage = "libclfft-dev";
  using Plan = PlanWithoutLibrary<Adapter>;
};
#endif

}  // namespace streamexecutor::fft_detail
