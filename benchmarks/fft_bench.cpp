// FFT time through the canned operations against the library called
// directly, in one process (docs/performance.md, "FFT"):
//   fft_host_c2c/2^K/{ours,fftw}
//       ThenFft + BlockHostUntilDone of a 1-D complex float forward plan on the
//       host backend (FFTW3 in a host callback) against fftwf_execute_dft of a
//       plan made with the same flags (FFTW_ESTIMATE | FFTW_UNALIGNED)
//   fft_opencl_c2c/2^K/{ours,clfft}
//       the clFFT plugin against clfftEnqueueTransform + clFinish of a plan
//       baked the same way on a raw context
//   fft_host_batched_c2c/<n>x<batch>[pad]/{ours,fftw}
//       a batched plan (CreateBatchedFftPlan: <batch> 1-D complex float forward
//       transforms of <n> points; "pad": each transform n + 8 elements apart
//       on both sides) against fftwf_execute_dft of fftwf_plan_many_dft made
//       with the same layout and flags
// Throughput ratio: their time / our time (goal >= 0.98, issue 11).
#include <fftw3.h>

#include <streamexecutor/fft.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <complex>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"

#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include <clFFT.h>
#endif

namespace {

namespace se = streamexecutor;
using bench::Name;

const std::vector<int> kLog2Sizes = {10, 14, 18, 22};

void Ok(const se::Status& status) {
  if (!status.ok()) bench::Die(status.ToString());
}

template <typename B>
struct Ours {
  se::StreamExecutor<B>* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  std::size_t n;
  se::FftPlan<B> plan;
  se::ScopedDeviceMemory<std::complex<float>> in, out;
  se::Stream<B> stream{executor};
  explicit Ours(std::size_t size)
      : n(size),
        in(executor->template AllocateOwnedArray<std::complex<float>>(size)),
        out(executor->template AllocateOwnedArray<std::complex<float>>(size)) {
    auto made = se::fft::Create1dPlan(executor, n, se::fft::Type::kC2CForward);
    if (!made.ok()) bench::Die(made.status().ToString());
    plan = std::move(made).value();
    Ok(stream.Init().status());
    std::vector<std::complex<float>> data(n, {1.0f, 0.5f});
    Ok(executor->SynchronousMemcpyH2D(data.data(), n * sizeof(data[0]), in.ptr()));
  }
  void Run() { Ok(stream.ThenFft(&plan, *in.ptr(), out.ptr()).BlockHostUntilDone()); }
};

struct DirectFftw {
  std::size_t n;
  fftwf_complex* in;
  fftwf_complex* out;
  fftwf_plan plan;
  explicit DirectFftw(std::size_t size)
      : n(size),
        in(fftwf_alloc_complex(size)),
        out(fftwf_alloc_complex(size)),
        plan(fftwf_plan_dft_1d(static_cast<int>(size), in, out, FFTW_FORWARD, FFTW_ESTIMATE | FFTW_UNALIGNED)) {
    for (std::size_t i = 0; i < n; ++i) {
      in[i][0] = 1.0f;
      in[i][1] = 0.5f;
    }
  }
  ~DirectFftw() {
    fftwf_destroy_plan(plan);
    fftwf_free(in);
    fftwf_free(out);
  }
  void Run() { fftwf_execute_dft(plan, in, out); }
};

// A batch of 1-D transforms: `count` of `n` points, `distance` apart.
struct Batch {
  std::size_t n, count, distance;
  std::size_t Extent() const { return (count - 1) * distance + n; }
};

struct OursBatched {
  se::StreamExecutor<se::host>* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  Batch batch;
  se::FftPlan<se::host> plan;
  se::ScopedDeviceMemory<std::complex<float>> in, out;
  se::Stream<se::host> stream{executor};
  explicit OursBatched(Batch b)
      : batch(b),
        in(executor->AllocateOwnedArray<std::complex<float>>(b.Extent())),
        out(executor->AllocateOwnedArray<std::complex<float>>(b.Extent())) {
    const se::fft::BatchLayout layout{{0, 0, 0}, 1, static_cast<std::int64_t>(b.distance)};
    auto made = se::CreateBatchedFftPlan(executor, se::fft::Type::kC2CForward, 1, {b.n, 1, 1}, layout, layout,
                                         static_cast<std::int64_t>(b.count));
    if (!made.ok()) bench::Die(made.status().ToString());
    plan = std::move(made).value();
    Ok(stream.Init().status());
    std::vector<std::complex<float>> data(b.Extent(), {1.0f, 0.5f});
    Ok(executor->SynchronousMemcpyH2D(data.data(), data.size() * sizeof(data[0]), in.ptr()));
  }
  void Run() { Ok(stream.ThenFft(&plan, *in.ptr(), out.ptr()).BlockHostUntilDone()); }
};

struct DirectFftwMany {
  Batch batch;
  fftwf_complex* in;
  fftwf_complex* out;
  fftwf_plan plan;
  explicit DirectFftwMany(Batch b)
      : batch(b), in(fftwf_alloc_complex(b.Extent())), out(fftwf_alloc_complex(b.Extent())) {
    int n[1] = {static_cast<int>(b.n)};
    const int distance = static_cast<int>(b.distance);
    plan = fftwf_plan_many_dft(1, n, static_cast<int>(b.count), in, n, 1, distance, out, n, 1, distance, FFTW_FORWARD,
                               FFTW_ESTIMATE | FFTW_UNALIGNED);
    for (std::size_t i = 0; i < b.Extent(); ++i) {
      in[i][0] = 1.0f;
      in[i][1] = 0.5f;
    }
  }
  ~DirectFftwMany() {
    fftwf_destroy_plan(plan);
    fftwf_free(in);
    fftwf_free(out);
  }
  void Run() { fftwf_execute_dft(plan, in, out); }
};

#if defined(STREAMEXECUTOR_WITH_OPENCL)
struct DirectClFft {
  bench::RawOpenCL cl;
  std::size_t n;
  cl_mem in, out;
  clfftPlanHandle plan{};
  explicit DirectClFft(std::size_t size) : n(size) {
    in = cl.Buffer(size * 8);
    out = cl.Buffer(size * 8);
    clfftSetupData setup;
    clfftInitSetupData(&setup);
    if (clfftSetup(&setup) != CLFFT_SUCCESS) bench::Die("clfftSetup");
    std::size_t lengths[1] = {size};
    if (clfftCreateDefaultPlan(&plan, cl.context, CLFFT_1D, lengths) != CLFFT_SUCCESS) bench::Die("clfftCreate");
    clfftSetPlanPrecision(plan, CLFFT_SINGLE);
    clfftSetLayout(plan, CLFFT_COMPLEX_INTERLEAVED, CLFFT_COMPLEX_INTERLEAVED);
    clfftSetResultLocation(plan, CLFFT_OUTOFPLACE);
    if (clfftBakePlan(plan, 1, &cl.queue, nullptr, nullptr) != CLFFT_SUCCESS) bench::Die("clfftBakePlan");
    std::vector<float> data(2 * size, 0.5f);
    bench::Check(clEnqueueWriteBuffer(cl.queue, in, CL_TRUE, 0, size * 8, data.data(), 0, nullptr, nullptr), "write");
  }
  ~DirectClFft() {
    clfftDestroyPlan(&plan);
    clReleaseMemObject(in);
    clReleaseMemObject(out);
  }
  void Run() {
    if (clfftEnqueueTransform(plan, CLFFT_FORWARD, 1, &cl.queue, 0, nullptr, nullptr, &in, &out, nullptr) !=
        CLFFT_SUCCESS) {
      bench::Die("clfftEnqueueTransform");
    }
    bench::Check(clFinish(cl.queue), "clFinish");
  }
};
#endif

// Each side's state is made at its first iteration, so that a size one
// library cannot plan does not stop the others. The sides are released at
// the end of main: a raw clFFT plan destroyed after clFFT's own repository (a
// static that the first clfftSetup makes, after these vectors exist) would
// crash the process at exit.
std::vector<std::function<void()>>& Releases() {
  static std::vector<std::function<void()>> all;
  return all;
}

template <typename Side>
std::vector<std::unique_ptr<Side>>& Made() {
  static std::vector<std::unique_ptr<Side>> made;
  static const bool registered = (Releases().push_back([] { made.clear(); }), true);
  (void)registered;
  return made;
}

template <typename Side>
void Register(const std::string& pair, const std::string& side) {
  for (int log2 : kLog2Sizes) {
    const std::size_t n = std::size_t{1} << log2;
    benchmark::RegisterBenchmark(Name(pair, "2^" + std::to_string(log2), side).c_str(), [n](benchmark::State& state) {
      std::vector<std::unique_ptr<Side>>& made = Made<Side>();
      Side* it = nullptr;
      for (auto& m : made) {
        if (m->n == n) it = m.get();
      }
      if (it == nullptr) it = made.emplace_back(std::make_unique<Side>(n)).get();
      for (auto _ : state) it->Run();
      state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
    })->UseRealTime();
  }
}

const std::vector<Batch> kBatches = {{256, 1024, 256}, {256, 1024, 256 + 8}, {4096, 64, 4096}, {4096, 64, 4096 + 8}};

template <typename Side>
void RegisterBatched(const std::string& pair, const std::string& side) {
  for (const Batch& b : kBatches) {
    const std::string what = std::to_string(b.n) + "x" + std::to_string(b.count) + (b.distance == b.n ? "" : "pad");
    benchmark::RegisterBenchmark(Name(pair, what, side).c_str(), [b](benchmark::State& state) {
      std::vector<std::unique_ptr<Side>>& made = Made<Side>();
      Side* it = nullptr;
      for (auto& m : made) {
        if (m->batch.n == b.n && m->batch.distance == b.distance) it = m.get();
      }
      if (it == nullptr) it = made.emplace_back(std::make_unique<Side>(b)).get();
      for (auto _ : state) it->Run();
      state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * b.n * b.count));
    })->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  Register<Ours<se::host>>("fft_host_c2c", "ours");
  Register<DirectFftw>("fft_host_c2c", "fftw");
  RegisterBatched<OursBatched>("fft_host_batched_c2c", "ours");
  RegisterBatched<DirectFftwMany>("fft_host_batched_c2c", "fftw");
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  if (se::Platform<se::opencl>::Get().VisibleDeviceCount() > 0) {
    Register<Ours<se::opencl>>("fft_opencl_c2c", "ours");
    Register<DirectClFft>("fft_opencl_c2c", "clfft");
  }
#endif
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  for (auto& release : Releases()) release();
  benchmark::Shutdown();
  return 0;
}
