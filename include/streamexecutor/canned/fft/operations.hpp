// The canned FFT operations as Stream<B> sees them: FftPlan<B>, the plan
// factories (CreateFftPlan, CreateBatchedFftPlan, fft::Create1dPlan ...) and
// CannedFft, which Stream::ThenFft calls by argument-dependent lookup. Shapes,
// layouts and buffers are checked the same way on every backend; the plan
// itself is the backend's Adapter<B>::Plan (canned/fft/host.hpp, opencl.hpp,
// cuda.hpp). A backend without an adapter gets UNAVAILABLE at plan creation
// (canned/detail/adapter.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "streamexecutor/canned/fft/common.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/stream.hpp"

namespace streamexecutor {

template <Backend B>
class FftPlan {
 public:
  FftPlan() = default;
  FftPlan(FftPlan&&) noexcept = default;
  FftPlan& operator=(FftPlan&&) noexcept = default;

  bool valid() const { return impl_ != nullptr; }
  fft::Type type() const { return spec_.type; }
  int rank() const { return spec_.rank; }
  // Transforms per ThenFft: 1, or a batched plan's batch count.
  std::uint64_t batch_count() const { return spec_.batch; }
  // Elements ThenFft's input and output must hold: one dense transform's, or
  // for a batched plan the last element its layout touches, plus one.
  std::uint64_t input_elements() const { return spec_.InputElements(); }
  std::uint64_t output_elements() const { return spec_.OutputElements(); }
  StreamExecutor<B>* executor() const { return executor_; }

 private:
  template <Backend Of>
  friend StatusOr<FftPlan<Of>> CreateFftPlan(StreamExecutor<Of>*, fft::Type, int, std::array<std::uint64_t, 3>);
  template <Backend Of>
  friend StatusOr<FftPlan<Of>> CreateBatchedFftPlan(StreamExecutor<Of>*, fft::Type, int, std::array<std::uint64_t, 3>,
                                                    const fft::BatchLayout&, const fft::BatchLayout&, std::int64_t);
  template <Backend Of, typename In, typename Out>
  friend Stream<Of>& CannedFft(Stream<Of>&, FftPlan<Of>*, const DeviceMemory<In>&, DeviceMemory<Out>*);

  // The plan of `spec` (its layouts filled in) from the executor's plugin.
  static StatusOr<FftPlan> Make(std::string_view caller, StreamExecutor<B>* executor, const fft_detail::PlanSpec& spec);

  StreamExecutor<B>* executor_ = nullptr;
  fft_detail::PlanSpec spec_;
  // Shared with the work queued or recorded with it (a CommandBuffer holds
  // it), so that the plan's owner may destroy it at any time.
  std::shared_ptr<typename fft_detail::Adapter<B>::Plan> impl_;
};

template <Backend B>
StatusOr<FftPlan<B>> FftPlan<B>::Make(std::string_view caller, StreamExecutor<B>* executor,
                                      const fft_detail::PlanSpec& spec) {
  const std::string& device = executor->DeviceLabel();
  if constexpr (!canned_detail::Adapted<fft_detail::Adapter<B>>) {
    return fft_detail::Adapter<B>::Unavailable(caller, device);
  } else {
    const FftPluginId plugin = executor->template UsePlugin<PluginKind::kFft>();
    if (!plugin.is_default() && plugin.name != fft_detail::Adapter<B>::kPluginName) {
      return MakeError(ErrorCode::kUnimplemented, "{} on {}: no FFT plugin '{}' on the {} platform", caller, device,
                       plugin.name, plugin.backend);
    }
    FftPlan<B> plan;
    plan.executor_ = executor;
    plan.spec_ = spec;
    auto impl = fft_detail::Adapter<B>::Plan::Make(executor, plan.spec_);
    if (!impl.ok()) return impl.status();
    plan.impl_ = std::move(impl).value();
    return StatusOr<FftPlan<B>>(std::move(plan));  // spelled out: nvcc does not move implicitly here
  }
}

// A plan of `rank` dimensions (1 to 3, slowest first) on `executor`, made by
// its FFT plugin (fixed by the executor's first FFT plan).
template <Backend B>
StatusOr<FftPlan<B>> CreateFftPlan(StreamExecutor<B>* executor, fft::Type type, int rank,
                                   std::array<std::uint64_t, 3> dims) {
  constexpr std::string_view caller = "CreateFftPlan";
  if (executor == nullptr) return MakeError(ErrorCode::kInvalidArgument, "{}: the StreamExecutor is null", caller);
  const std::string& device = executor->DeviceLabel();
  STREAMEXECUTOR_RETURN_IF_ERROR(fft_detail::CheckShape(caller, device, type, rank, dims));
  fft_detail::PlanSpec spec;
  spec.type = type;
  spec.rank = rank;
  spec.dims = dims;
  for (int i = rank; i < 3; ++i) spec.dims[static_cast<std::size_t>(i)] = 1;
  // One dense transform: each side's own dimensions, stride 1 (a distance
  // with a batch of 1 moves nothing).
  const fft::BatchLayout dense{{0, 0, 0}, 1, 1};
  STREAMEXECUTOR_RETURN_IF_ERROR(fft_detail::CheckSide(caller, device, spec, true, dense, spec.in));
  STREAMEXECUTOR_RETURN_IF_ERROR(fft_detail::CheckSide(caller, device, spec, false, dense, spec.out));
  return FftPlan<B>::Make(caller, executor, spec);
}

// `batch_count` transforms of one type and shape (`rank` dimensions, slowest
// first) in one plan, each ThenFft running them all: the seed's
// CreateBatchedPlan, cuFFT's cufftPlanMany and FFTW's fftw_plan_many_dft.
// `input` and `output` place the transforms in their buffers (see
// fft::BatchLayout; distances and strides count elements of that side's
// type). ThenFft's buffers must hold the last element each layout touches.
template <Backend B>
StatusOr<FftPlan<B>> CreateBatchedFftPlan(StreamExecutor<B>* executor, fft::Type type, int rank,
                                          std::array<std::uint64_t, 3> dims, const fft::BatchLayout& input,
                                          const fft::BatchLayout& output, std::int64_t batch_count) {
  constexpr std::string_view caller = "CreateBatchedFftPlan";
  if (executor == nullptr) return MakeError(ErrorCode::kInvalidArgument, "{}: the StreamExecutor is null", caller);
  const std::string& device = executor->DeviceLabel();
  STREAMEXECUTOR_RETURN_IF_ERROR(fft_detail::CheckShape(caller, device, type, rank, dims));
  if (batch_count < 1 || batch_count > 0x7fffffff) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the batch count of the {} plan is {}; it must be 1 to 2^31-1", caller, device,
                     fft::TypeName(type), batch_count);
  }
  fft_detail::PlanSpec spec;
  spec.type = type;
  spec.rank = rank;
  spec.dims = dims;
  for (int i = rank; i < 3; ++i) spec.dims[static_cast<std::size_t>(i)] = 1;
  spec.batched = true;
  spec.batch = static_cast<std::uint64_t>(batch_count);
  STREAMEXECUTOR_RETURN_IF_ERROR(fft_detail::CheckSide(caller, device, spec, true, input, spec.in));
  STREAMEXECUTOR_RETURN_IF_ERROR(fft_detail::CheckSide(caller, device, spec, false, output, spec.out));
  return FftPlan<B>::Make(caller, executor, spec);
}

namespace fft {
template <Backend B>
StatusOr<FftPlan<B>> Create1dPlan(StreamExecutor<B>* executor, std::uint64_t num_x, Type type) {
  return CreateFftPlan(executor, type, 1, {num_x, 1, 1});
}
template <Backend B>
StatusOr<FftPlan<B>> Create2dPlan(StreamExecutor<B>* executor, std::uint64_t num_x, std::uint64_t num_y, Type type) {
  return CreateFftPlan(executor, type, 2, {num_x, num_y, 1});
}
// The seed's CreateBatchedPlan, argument for argument: `elem_count`,
// `input_embed` and `output_embed` hold `rank` entries, slowest first; a null
// embed means the transform's own dimensions (the stride and distance still
// apply, unlike cuFFT's null embed).
template <Backend B>
StatusOr<FftPlan<B>> CreateBatchedPlan(StreamExecutor<B>* executor, int rank, const std::uint64_t* elem_count,
                                       const std::uint64_t* input_embed, std::int64_t input_stride,
                                       std::int64_t input_distance, const std::uint64_t* output_embed,
                                       std::int64_t output_stride, std::int64_t output_distance, Type type,
                                       std::int64_t batch_count) {
  if (elem_count == nullptr) return MakeError(ErrorCode::kInvalidArgument, "CreateBatchedPlan: elem_count is null");
  if (rank < 1 || rank > 3) {  // reported there
    return CreateBatchedFftPlan(executor, type, rank, {1, 1, 1}, BatchLayout{}, BatchLayout{}, batch_count);
  }
  std::array<std::uint64_t, 3> dims{1, 1, 1};
  BatchLayout input{{0, 0, 0}, input_stride, input_distance}, output{{0, 0, 0}, output_stride, output_distance};
  for (int i = 0; i < rank; ++i) {
    const auto at = static_cast<std::size_t>(i);
    dims[at] = elem_count[i];
    if (input_embed != nullptr) input.embed[at] = input_embed[i];
    if (output_embed != nullptr) output.embed[at] = output_embed[i];
  }
  return CreateBatchedFftPlan(executor, type, rank, dims, input, output, batch_count);
}
template <Backend B>
StatusOr<FftPlan<B>> Create3dPlan(StreamExecutor<B>* executor, std::uint64_t num_x, std::uint64_t num_y,
                                  std::uint64_t num_z, Type type) {
  return CreateFftPlan(executor, type, 3, {num_x, num_y, num_z});
}
}  // namespace fft

// One transform (or a batched plan's batch) of `input` into `output` (the
// same memory for an in-place complex transform, whose layouts must then be
// the same). A C2R/Z2D transform may overwrite its input, as FFTW
// and cuFFT do.
template <Backend B, typename In, typename Out>
Stream<B>& CannedFft(Stream<B>& stream, FftPlan<B>* plan, const DeviceMemory<In>& input, DeviceMemory<Out>* output) {
  constexpr std::string_view caller = "ThenFft";
  if (!stream.ReadyForCanned(caller)) return stream;
  StreamExecutor<B>* executor = stream.parent();
  const std::string& device = executor->DeviceLabel();
  if (plan == nullptr || output == nullptr) {
    return stream.CheckCanned(MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} pointer is null", caller, device,
                                        plan == nullptr ? "plan" : "output"));
  }
  if (!plan->valid()) {
    return stream.CheckCanned(MakeError(ErrorCode::kInvalidArgument,
                                        "{} on {}: the plan is empty (moved from, or never created)", caller, device));
  }
  if (plan->executor_ != executor) {
    return stream.CheckCanned(MakeError(ErrorCode::kInvalidArgument, "{} on {}: the plan was made for {}", caller,
                                        device, plan->executor_->DeviceLabel()));
  }
  if (Status s = fft_detail::CheckBuffers(device, plan->spec_, input, *output); !s.ok()) {
    return stream.CheckCanned(std::move(s));
  }
  if (Status s = executor->CheckDeviceRange(caller, "input", input, plan->spec_.InputElements() * sizeof(In));
      !s.ok()) {
    return stream.CheckCanned(std::move(s));
  }
  if (Status s = executor->CheckDeviceRange(caller, "output", *output, plan->spec_.OutputElements() * sizeof(Out));
      !s.ok()) {
    return stream.CheckCanned(std::move(s));
  }
  if constexpr (canned_detail::Adapted<fft_detail::Adapter<B>>) {
    return stream.CheckCanned(plan->impl_->Enqueue(stream, plan->impl_, input, *output));
  } else {
    return stream;  // no plan can exist without an adapter: valid() was false above
  }
}

}  // namespace streamexecutor
