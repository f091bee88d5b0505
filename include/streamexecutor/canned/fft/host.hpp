// se::host::kFftw3Plugin: FFTW3 (single and double precision) on the host
// backend, through FFTW's advanced interface (fftw_plan_many_dft, _r2c, _c2r)
// for plain and batched plans alike. Plans are made once, with FFTW_ESTIMATE | FFTW_UNALIGNED so that
// one plan serves any buffers (fftw_execute_dft and friends, FFTW's "new-array
// execute"), and run in the stream's order as a host callback on its worker.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <utility>

#include "streamexecutor/canned/fft/common.hpp"
#include "streamexecutor/detail/export.hpp"
#include "streamexecutor/host.hpp"

#if __has_include(<fftw3.h>)
#include <fftw3.h>
#define STREAMEXECUTOR_FFT_WITH_FFTW3 1
#endif

namespace streamexecutor::fft_detail {

#if defined(STREAMEXECUTOR_FFT_WITH_FFTW3)

// FFTW's planner is not thread-safe (its execute functions are): one lock
// for every plan made or destroyed in the process.
STREAMEXECUTOR_EXPORT inline std::mutex& FftwPlannerMutex() {
  static std::mutex mutex;
  return mutex;
}

// FFTW plans for both placements: FFTW's new-array execute must be given
// buffers with the placement the plan was made for.
template <typename Plan>
struct FftwPlans {
  Plan out_of_place = nullptr;
  Plan in_place = nullptr;
};

class FftwPlan {
 public:
  static StatusOr<std::unique_ptr<FftwPlan>> Make(StreamExecutor<host>* executor, const PlanSpec& spec) {
    auto plan = std::unique_ptr<FftwPlan>(new FftwPlan(spec));
    // FFTW's advanced interface (fftw_plan_many_dft and friends) for every
    // plan: a plain plan is a batch of one with a dense layout. CheckShape and
    // CheckSide kept every number below 2^31.
    int n[3] = {}, in_embed[3] = {}, out_embed[3] = {};
    for (int i = 0; i < spec.rank; ++i) {
      const auto at = static_cast<std::size_t>(i);
      n[i] = static_cast<int>(spec.dims[at]);
      in_embed[i] = static_cast<int>(spec.in.embed[at]);
      out_embed[i] = static_cast<int>(spec.out.embed[at]);
    }
    const int howmany = static_cast<int>(spec.batch);
    const int istride = static_cast<int>(spec.in.stride), idist = static_cast<int>(spec.in.distance);
    const int ostride = static_cast<int>(spec.out.stride), odist = static_cast<int>(spec.out.distance);
    const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
    const std::size_t in_bytes =
        spec.InputElements() * Bytes(spec, fft::IsComplexToReal(spec.type) || fft::IsComplexToComplex(spec.type));
    const std::size_t out_bytes = spec.OutputElements() * Bytes(spec, !fft::IsComplexToReal(spec.type));
    // In place only where both sides have one layout (always, for a plain
    // complex plan); CheckBuffers refuses the others.
    const bool in_place = fft::IsComplexToComplex(spec.type) && spec.in == spec.out;
    // FFTW_ESTIMATE neither reads nor writes the arrays; they only show the
    // planner the placement.
    std::lock_guard<std::mutex> lock(FftwPlannerMutex());
    void* in = fftw_malloc(in_bytes);
    void* out = fftw_malloc(out_bytes);
    if (in == nullptr || out == nullptr) {
      fftw_free(in);
      fftw_free(out);
      return MakeError(ErrorCode::kResourceExhausted, "CreateFftPlan on {}: out of host memory planning {}",
                       executor->DeviceLabel(), spec.Describe());
    }
    const int sign = fft::IsForward(spec.type) ? FFTW_FORWARD : FFTW_BACKWARD;
    if (fft::IsDouble(spec.type)) {
      auto* ci = static_cast<fftw_complex*>(in);
      auto* co = static_cast<fftw_complex*>(out);
      if (fft::IsComplexToComplex(spec.type)) {
        plan->double_.out_of_place = fftw_plan_many_dft(spec.rank, n, howmany, ci, in_embed, istride, idist, co,
                                                        out_embed, ostride, odist, sign, flags);
        if (in_place) {
          plan->double_.in_place = fftw_plan_many_dft(spec.rank, n, howmany, ci, in_embed, istride, idist, ci, in_embed,
                                                      istride, idist, sign, flags);
        }
      } else if (fft::IsRealToComplex(spec.type)) {
        plan->double_.out_of_place = fftw_plan_many_dft_r2c(spec.rank, n, howmany, static_cast<double*>(in), in_embed,
                                                            istride, idist, co, out_embed, ostride, odist, flags);
      } else {
        plan->double_.out_of_place =
            fftw_plan_many_dft_c2r(spec.rank, n, howmany, ci, in_embed, istride, idist, static_cast<double*>(out),
                                   out_embed, ostride, odist, flags);
      }
    } else {
      auto* ci = static_cast<fftwf_complex*>(in);
      auto* co = static_cast<fftwf_complex*>(out);
      if (fft::IsComplexToComplex(spec.type)) {
        plan->float_.out_of_place = fftwf_plan_many_dft(spec.rank, n, howmany, ci, in_embed, istride, idist, co,
                                                        out_embed, ostride, odist, sign, flags);
        if (in_place) {
          plan->float_.in_place = fftwf_plan_many_dft(spec.rank, n, howmany, ci, in_embed, istride, idist, ci, in_embed,
                                                      istride, idist, sign, flags);
        }
      } else if (fft::IsRealToComplex(spec.type)) {
        plan->float_.out_of_place = fftwf_plan_many_dft_r2c(spec.rank, n, howmany, static_cast<float*>(in), in_embed,
                                                            istride, idist, co, out_embed, ostride, odist, flags);
      } else {
        plan->float_.out_of_place = fftwf_plan_many_dft_c2r(spec.rank, n, howmany, ci, in_embed, istride, idist,
                                                            static_cast<float*>(out), out_embed, ostride, odist, flags);
      }
    }
    fftw_free(in);
    fftw_free(out);
    const bool made = fft::IsDouble(spec.type)
                          ? plan->double_.out_of_place != nullptr && (!in_place || plan->double_.in_place != nullptr)
                          : plan->float_.out_of_place != nullptr && (!in_place || plan->float_.in_place != nullptr);
    if (!made) {
      return MakeError(ErrorCode::kInternal, "CreateFftPlan on {}: FFTW could not plan {}", executor->DeviceLabel(),
                       spec.Describe());
    }
    return StatusOr<std::unique_ptr<FftwPlan>>(std::move(plan));  // spelled out: nvcc does not move implicitly here
  }

  ~FftwPlan() {
    std::lock_guard<std::mutex> lock(FftwPlannerMutex());
    for (fftw_plan p : {double_.out_of_place, double_.in_place}) {
      if (p != nullptr) fftw_destroy_plan(p);
    }
    for (fftwf_plan p : {float_.out_of_place, float_.in_place}) {
      if (p != nullptr) fftwf_destroy_plan(p);
    }
  }
  FftwPlan(const FftwPlan&) = delete;
  FftwPlan& operator=(const FftwPlan&) = delete;

  // The call holds the plan (`self` is this one), so that its owner may
  // destroy it while the transform is queued or recorded.
  Status Enqueue(Stream<host>& stream, const std::shared_ptr<FftwPlan>& self, const DeviceMemoryBase& input,
                 const DeviceMemoryBase& output) {
    auto run = [self, in = host::Address(input), out = host::Address(output)] { self->Execute(in, out); };
    const DeviceMemoryBase operands[] = {input, output};
    return stream.EnqueueCanned("ThenFft", operands, op::HostCall<decltype(run)>{std::move(run)});
  }

 private:
  explicit FftwPlan(const PlanSpec& spec) : spec_(spec) {}

  static std::size_t Bytes(const PlanSpec& spec, bool complex) {
    const std::size_t real = fft::IsDouble(spec.type) ? sizeof(double) : sizeof(float);
    return complex ? 2 * real : real;
  }

  void Execute(void* in, void* out) const {
    const bool in_place = in == out;
    if (fft::IsDouble(spec_.type)) {
      if (fft::IsComplexToComplex(spec_.type)) {
        fftw_execute_dft(in_place ? double_.in_place : double_.out_of_place, static_cast<fftw_complex*>(in),
                         static_cast<fftw_complex*>(out));
      } else if (fft::IsRealToComplex(spec_.type)) {
        fftw_execute_dft_r2c(double_.out_of_place, static_cast<double*>(in), static_cast<fftw_complex*>(out));
      } else {
        fftw_execute_dft_c2r(double_.out_of_place, static_cast<fftw_complex*>(in), static_cast<double*>(out));
      }
    } else {
      if (fft::IsComplexToComplex(spec_.type)) {
        fftwf_execute_dft(in_place ? float_.in_place : float_.out_of_place, static_cast<fftwf_complex*>(in),
                          static_cast<fftwf_complex*>(out));
      } else if (fft::IsRealToComplex(spec_.type)) {
        fftwf_execute_dft_r2c(float_.out_of_place, static_cast<float*>(in), static_cast<fftwf_complex*>(out));
      } else {
        fftwf_execute_dft_c2r(float_.out_of_place, static_cast<fftwf_complex*>(in), static_cast<float*>(out));
      }
    }
  }

  PlanSpec spec_;
  FftwPlans<fftw_plan> double_;
  FftwPlans<fftwf_plan> float_;
};

template <>
struct Adapter<host> {
  static constexpr std::string_view kPluginName = "fftw3";
  using Plan = FftwPlan;
};
#else
// Built without fftw3.h: the plugin exists in name only.
template <>
struct Adapter<host> {
  static constexpr std::string_view kPluginName = "fftw3";
  static constexpr std::string_view kLibrary = "FFTW3", kPackage = "libfftw3-dev";
  using Plan = PlanWithoutLibrary<Adapter>;
};
#endif

}  // namespace streamexecutor::fft_detail
