// <streamexecutor/fft.hpp> on the CUDA backend without a GPU: the counting
// driver double stands in for libcuda.so.1 and the cuFFT double for
// libcufft.so.12 (both folders on LD_LIBRARY_PATH, see meson.build). What
// it proves: plans are the cuFFT plans of the right rank, sizes and type,
// made once and destroyed with the FftPlan (a batched plan: cufftPlanMany
// with every layout argument given); each ThenFft binds the stream it
// was called on and runs the exec call of its type with the buffers' device
// addresses and the right direction; cuFFT's errors become Statuses that
// name the call; a missing cuFFT is UNAVAILABLE naming the package. What a
// transform computes is cuFFT's, on a GPU.
#include <catch2/catch.hpp>

#include <complex>
#include <cstdint>
#include <memory>
#include <string>

#include <streamexecutor/cuda.hpp>
#include <streamexecutor/fft.hpp>

#include "cufft_double.hpp"

namespace se = streamexecutor;
using se::fft::Type;

namespace {

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

se::StreamExecutor<se::cuda>* Executor() { return se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie(); }

se_test::CufftDoubleApi Double() {
  se_test::CufftDoubleApi api = se_test::CufftDoubleApi::Find();
  REQUIRE(api.loaded());
  return api;
}
SeCufftDoubleState State() {
  SeCufftDoubleState state{};
  Double().state(&state);
  return state;
}
const void* Address(se::StreamExecutor<se::cuda>* executor, const se::DeviceMemoryBase& memory) {
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(se::NativeMemory(*executor, memory).value()));
}

}  // namespace

TEST_CASE("cuFFT plugin: plans, streams and exec calls", "[fft][cuda]") {
  auto* executor = Executor();
  se::ScopedDeviceMemory<std::complex<float>> a = executor->AllocateOwnedArray<std::complex<float>>(4 * 6 * 8);
  se::ScopedDeviceMemory<std::complex<float>> b = executor->AllocateOwnedArray<std::complex<float>>(4 * 6 * 8);
  {
    auto plan = se::fft::Create3dPlan(executor, 4, 6, 8, Type::kC2CInverse);
    INFO(plan.status().ToString());
    REQUIRE(plan.ok());
    SeCufftDoubleState made = State();
    CHECK(made.live_plans == 1);
    CHECK(made.plan_rank == 3);
    CHECK(made.plan_dims[0] == 4);
    CHECK(made.plan_dims[1] == 6);
    CHECK(made.plan_dims[2] == 8);
    CHECK(made.plan_type == CUFFT_C2C);

    se::Stream<se::cuda> stream(executor);
    REQUIRE(stream.Init().ThenFft(&plan.value(), *a.ptr(), b.ptr()).BlockHostUntilDone().ok());
    SeCufftDoubleState ran = State();
    CHECK(Double().calls("cufftExecC2C") == 1);
    CHECK(ran.exec_input == Address(executor, *a.ptr()));
    CHECK(ran.exec_output == Address(executor, *b.ptr()));
    CHECK(ran.exec_direction == CUFFT_INVERSE);
    CHECK(ran.exec_stream == static_cast<void*>(se::NativeQueue(stream)));

    // In place, on another stream: the same plan, that stream bound.
    se::Stream<se::cuda> other(executor);
    REQUIRE(other.Init().ThenFft(&plan.value(), *a.ptr(), a.ptr()).BlockHostUntilDone().ok());
    CHECK(State().exec_output == Address(executor, *a.ptr()));
    CHECK(State().exec_stream == static_cast<void*>(se::NativeQueue(other)));
    CHECK(Double().calls("cufftPlan3d") == 1);
  }
  CHECK(State().live_plans == 0);  // destroyed with the FftPlan
}

TEST_CASE("cuFFT plugin: real and double transforms call their exec", "[fft][cuda]") {
  auto* executor = Executor();
  se::ScopedDeviceMemory<double> reals = executor->AllocateOwnedArray<double>(64);
  se::ScopedDeviceMemory<std::complex<double>> spectrum = executor->AllocateOwnedArray<std::complex<double>>(33);
  auto d2z = se::fft::Create1dPlan(executor, 64, Type::kD2Z);
  auto z2d = se::fft::Create1dPlan(executor, 64, Type::kZ2D);
  REQUIRE(d2z.ok());
  REQUIRE(z2d.ok());
  CHECK(State().plan_type == CUFFT_Z2D);
  CHECK(State().plan_batch == 1);
  se::Stream<se::cuda> stream(executor);
  REQUIRE(stream.Init().ThenFft(&d2z.value(), *reals.ptr(), spectrum.ptr()).BlockHostUntilDone().ok());
  CHECK(Double().calls("cufftExecD2Z") == 1);
  CHECK(State().exec_output == Address(executor, *spectrum.ptr()));
  REQUIRE(stream.ThenFft(&z2d.value(), *spectrum.ptr(), reals.ptr()).BlockHostUntilDone().ok());
  CHECK(Double().calls("cufftExecZ2D") == 1);
  CHECK(State().exec_output == Address(executor, *reals.ptr()));
}

TEST_CASE("cuFFT plugin: batched plans are cufftPlanMany with the layout given", "[fft][cuda]") {
  auto* executor = Executor();
  const long many_before = Double().calls("cufftPlanMany");
  {
    // 2-D 4x6 R2C, 3 transforms: padded real rows (FFTW's 2 (n/2 + 1)) at a
    // distance beyond the transform; the spectrum strided by 2 with a tight
    // (defaulted) embed of 4 x (6/2 + 1).
    se::fft::BatchLayout in{{4, 8, 0}, 1, 40};
    se::fft::BatchLayout out{{0, 0, 0}, 2, 50};
    auto plan = se::CreateBatchedFftPlan(executor, Type::kR2C, 2, {4, 6, 1}, in, out, 3);
    INFO(plan.status().ToString());
    REQUIRE(plan.ok());
    CHECK(Double().calls("cufftPlanMany") == many_before + 1);
    SeCufftDoubleState made = State();
    CHECK(made.live_plans == 1);
    CHECK(made.plan_rank == 2);
    CHECK(made.plan_type == CUFFT_R2C);
    CHECK(made.plan_batch == 3);
    CHECK(made.many_n[0] == 4);
    CHECK(made.many_n[1] == 6);
    CHECK(made.many_inembed[0] == 4);
    CHECK(made.many_inembed[1] == 8);
    CHECK(made.many_istride == 1);
    CHECK(made.many_idist == 40);
    CHECK(made.many_onembed[0] == 4);  // given explicitly, never null: cuFFT would drop the stride
    CHECK(made.many_onembed[1] == 4);
    CHECK(made.many_ostride == 2);
    CHECK(made.many_odist == 50);
    CHECK(plan.value().input_elements() == 2 * 40 + 3 * 8 + 5 + 1);
    CHECK(plan.value().output_elements() == 2 * 50 + (3 * 4 + 3) * 2 + 1);

    se::ScopedDeviceMemory<float> reals = executor->AllocateOwnedArray<float>(plan.value().input_elements());
    se::ScopedDeviceMemory<std::complex<float>> spectrum =
        executor->AllocateOwnedArray<std::complex<float>>(plan.value().output_elements());
    se::Stream<se::cuda> stream(executor);
    const long exec_before = Double().calls("cufftExecR2C");
    REQUIRE(stream.Init().ThenFft(&plan.value(), *reals.ptr(), spectrum.ptr()).BlockHostUntilDone().ok());
    CHECK(Double().calls("cufftExecR2C") == exec_before + 1);  // one exec for the whole batch
    CHECK(State().exec_input == Address(executor, *reals.ptr()));
    CHECK(State().exec_output == Address(executor, *spectrum.ptr()));
    CHECK(State().exec_stream == static_cast<void*>(se::NativeQueue(stream)));

    // A spectrum one element short never reaches cuFFT.
    se::ScopedDeviceMemory<std::complex<float>> short_spectrum =
        executor->AllocateOwnedArray<std::complex<float>>(plan.value().output_elements() - 1);
    se::Stream<se::cuda> other(executor);
    se::Status s = other.Init().ThenFft(&plan.value(), *reals.ptr(), short_spectrum.ptr()).BlockHostUntilDone();
    CHECK(s.code() == se::ErrorCode::kOutOfRange);
    CHECK(Mentions(s,
                   "the R2C 2-D 4x6 batch 3 (input stride 1 distance 40, output stride 2 distance 50) plan reads "
                   "110 input and writes 131 output elements, but the input holds 110 and the output 130"));
    CHECK(Double().calls("cufftExecR2C") == exec_before + 1);
  }
  CHECK(State().live_plans == 0);

  // The seed's signature, double complex in 1-D; a plain plan still uses cufftPlan1d.
  const std::uint64_t n[1] = {64};
  auto z2z = se::fft::CreateBatchedPlan(executor, 1, n, nullptr, 1, 64, nullptr, 1, 64, Type::kZ2ZInverse, 8);
  REQUIRE(z2z.ok());
  CHECK(State().plan_type == CUFFT_Z2Z);
  CHECK(State().plan_batch == 8);
  CHECK(State().many_inembed[0] == 64);
  CHECK(State().many_onembed[0] == 64);
  CHECK(State().many_idist == 64);
  const long plan1d_before = Double().calls("cufftPlan1d");
  auto plain = se::fft::Create1dPlan(executor, 64, Type::kZ2ZInverse);
  REQUIRE(plain.ok());
  CHECK(Double().calls("cufftPlan1d") == plan1d_before + 1);
  CHECK(Double().calls("cufftPlanMany") == many_before + 2);

  // Invalid layouts stop before cuFFT; cuFFT's own refusal is named.
  auto zero = se::CreateBatchedFftPlan(executor, Type::kC2CForward, 1, {16, 1, 1}, se::fft::BatchLayout{},
                                       se::fft::BatchLayout{}, 0);
  CHECK(zero.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Double().calls("cufftPlanMany") == many_before + 2);
  Double().fail_next("cufftPlanMany", CUFFT_INVALID_SIZE);
  auto refused = se::CreateBatchedFftPlan(executor, Type::kC2CForward, 1, {16, 1, 1}, se::fft::BatchLayout{},
                                          se::fft::BatchLayout{}, 4);
  CHECK(refused.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(refused.status(), "cufftPlanMany on cuda:0: CUFFT_INVALID_SIZE"));
}

TEST_CASE("cuFFT plugin: errors name the call", "[fft][cuda]") {
  auto* executor = Executor();
  Double().fail_next("cufftPlan2d", CUFFT_INVALID_SIZE);
  auto failed = se::fft::Create2dPlan(executor, 16, 16, Type::kR2C);
  CHECK(failed.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(failed.status(), "cufftPlan2d on cuda:0: CUFFT_INVALID_SIZE"));

  auto plan = se::fft::Create1dPlan(executor, 16, Type::kC2CForward);
  REQUIRE(plan.ok());
  se::ScopedDeviceMemory<std::complex<float>> data = executor->AllocateOwnedArray<std::complex<float>>(16);
  Double().fail_next("cufftExecC2C", CUFFT_EXEC_FAILED);
  se::Stream<se::cuda> stream(executor);
  se::Status s = stream.Init().ThenFft(&plan.value(), *data.ptr(), data.ptr()).BlockHostUntilDone();
  CHECK(s.code() == se::ErrorCode::kInternal);
  CHECK(Mentions(s, "cufftExecC2C on cuda:0: CUFFT_EXEC_FAILED (6)"));
}

TEST_CASE("cuFFT missing: UNAVAILABLE, naming the library and the package", "[fft][cuda]") {
  const char* const absent[] = {"libcufft_absent_for_this_test.so.12"};
  const auto load = se::canned_detail::Load(se::fft_detail::kCuFftLibrary, se::fft_detail::kCuFftEntryPoints, absent);
  CHECK(load.status.code() == se::ErrorCode::kUnavailable);
  CHECK(Mentions(load.status, "the cuFFT plugin needs cuFFT (libcufft_absent_for_this_test.so.12)"));
  CHECK(Mentions(load.status, "install libcufft-13-0"));
}

TEST_CASE("cuFFT plugin: a captured transform runs cuFFT once on the capture stream; the buffer keeps the plan",
          "[fft][cuda][capture]") {
  auto* executor = Executor();
  auto a = executor->AllocateOwnedArray<std::complex<float>>(16);
  auto b = executor->AllocateOwnedArray<std::complex<float>>(16);
  se::Stream<se::cuda> stream(executor);
  stream.Init();
  auto buffer = std::make_unique<se::CommandBuffer<se::cuda>>(executor);
  buffer->Init();
  const long execs = Double().calls("cufftExecC2C");
  const int live_before = State().live_plans;
  {
    auto plan = se::fft::Create1dPlan(executor, 16, Type::kC2CForward);
    REQUIRE(plan.ok());
    REQUIRE(stream.BeginCapture(buffer.get()).ok());
    stream.ThenFft(&plan.value(), a.cref(), b.ptr());
    REQUIRE(stream.EndCapture(buffer.get()).ok());
    CHECK(Double().calls("cufftExecC2C") == execs + 1);
    CHECK(State().exec_stream != static_cast<void*>(se::NativeQueue(stream)));  // the buffer's capture stream
  }
  // The FftPlan is gone; the cuFFT plan is not: the recorded kernels use its work area.
  CHECK(State().live_plans == live_before + 1);
  REQUIRE(stream.ThenSubmit(buffer.get()).BlockHostUntilDone().ok());
  CHECK(Double().calls("cufftExecC2C") == execs + 1);  // replayed by the graph, not called again
  auto nesting = std::make_unique<se::CommandBuffer<se::cuda>>(executor);
  nesting->Init().ThenSubmit(buffer.get());
  buffer.reset();
  CHECK(State().live_plans == live_before + 1);  // the nesting buffer holds it too
  REQUIRE(stream.ThenSubmit(nesting.get()).BlockHostUntilDone().ok());
  nesting.reset();
  CHECK(State().live_plans == live_before);
}
