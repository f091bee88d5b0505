// RNG throughput through the canned operations against Random123 called
// directly, in one process (docs/performance.md, "RNG"):
//   rng_host_uniform_f32/N/{ours,random123}
//       ThenPopulateRandUniform + BlockHostUntilDone on the host backend (its
//       worker threads share the Philox blocks) against a single-threaded loop
//       of r123::Philox4x32 and u01fixedpt_open_closed_32_float into the same
//       kind of buffer: what a program without this library writes
//   rng_host_gaussian_f32/N/{ours,random123}
//       ThenPopulateRandGaussian against a loop of r123::Philox4x32 and
//       Random123's own r123::boxmuller
//   rng_opencl_uniform_f32/N/{ours,raw}
//       the OpenCL plugin against the same OpenCL C kernel enqueued by hand on
//       a raw context (clEnqueueNDRangeKernel + clFinish): the plugin's cost
// N is the number of floats. Throughput ratio: their time / our time.
#include <Random123/philox.h>
#include <Random123/u01fixedpt.h>
#include <Random123/boxmuller.hpp>

#include <streamexecutor/rng.hpp>
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace se = streamexecutor;
using bench::Name;

const std::vector<std::size_t> kCounts = {1 << 16, 1 << 20, 1 << 22};
constexpr std::uint8_t kSeed[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

void Ok(const se::Status& status) {
  if (!status.ok()) bench::Die(status.ToString());
}

template <typename B>
struct Ours {
  se::StreamExecutor<B>* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::ScopedDeviceMemory<float> values = executor->template AllocateOwnedArray<float>(kCounts.back());
  se::Stream<B> stream{executor};
  Ours() {
    if (!values.ok()) bench::Die(values.status().ToString());
    Ok(stream.Init().ThenSetRngSeed(kSeed, sizeof(kSeed)).status());
  }
  void Uniform(std::size_t n) {
    se::DeviceMemory<float> slice = values.ptr()->GetSlice(0, n);
    Ok(stream.ThenPopulateRandUniform(&slice).BlockHostUntilDone());
  }
  void Gaussian(std::size_t n) {
    se::DeviceMemory<float> slice = values.ptr()->GetSlice(0, n);
    Ok(stream.ThenPopulateRandGaussian(0.0f, 1.0f, &slice).BlockHostUntilDone());
  }
};

template <typename B>
Ours<B>& TheOurs() {
  static Ours<B> ours;
  return ours;
}

// The direct loops: Random123 and nothing else, one thread.
struct Direct {
  std::vector<float> values = std::vector<float>(kCounts.back());
  std::uint64_t next_block = 0;

  void Uniform(std::size_t n) {
    r123::Philox4x32 philox;
    const r123::Philox4x32::key_type key = {{0x03020100u, 0x07060504u}};
    for (std::size_t i = 0; i < n; i += 4, ++next_block) {
      const r123::Philox4x32::ctr_type counter = {{static_cast<std::uint32_t>(next_block),
                                                   static_cast<std::uint32_t>(next_block >> 32), 0x0b0a0908u,
                                                   0x0f0e0d0cu}};
      const r123::Philox4x32::ctr_type w = philox(counter, key);
      for (std::size_t j = 0; j < 4 && i + j < n; ++j) values[i + j] = u01fixedpt_open_closed_32_float(w[j]);
    }
    benchmark::DoNotOptimize(values.data());
  }
  void Gaussian(std::size_t n) {
    r123::Philox4x32 philox;
    const r123::Philox4x32::key_type key = {{0x03020100u, 0x07060504u}};
    for (std::size_t i = 0; i < n; i += 4, ++next_block) {
      const r123::Philox4x32::ctr_type counter = {{static_cast<std::uint32_t>(next_block),
                                                   static_cast<std::uint32_t>(next_block >> 32), 0x0b0a0908u,
                                                   0x0f0e0d0cu}};
      const r123::Philox4x32::ctr_type w = philox(counter, key);
      const r123::float2 a = r123::boxmuller(w[0], w[1]);
      const r123::float2 b = r123::boxmuller(w[2], w[3]);
      const float z[4] = {a.x, a.y, b.x, b.y};
      for (std::size_t j = 0; j < 4 && i + j < n; ++j) values[i + j] = z[j];
    }
    benchmark::DoNotOptimize(values.data());
  }
};

Direct& TheDirect() {
  static Direct direct;
  return direct;
}

template <typename Fn>
void Register(const std::string& pair, const std::string& side, Fn fn) {
  for (std::size_t n : kCounts) {
    benchmark::RegisterBenchmark(Name(pair, std::to_string(n), side).c_str(), [fn, n](benchmark::State& state) {
      for (auto _ : state) fn(n);
      state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
    })->UseRealTime();
  }
}

#if defined(STREAMEXECUTOR_WITH_OPENCL)
// The plugin's own kernel and build options, on a context of our own.
struct RawPhilox {
  bench::RawOpenCL cl;
  cl_kernel kernel = nullptr;
  cl_mem buffer = nullptr;
  cl_ulong next_block = 0;
  RawPhilox() {
    const char* source = se::rng_detail::kPhiloxOpenCLSource;
    cl_int error = CL_SUCCESS;
    cl.program = clCreateProgramWithSource(cl.context, 1, &source, nullptr, &error);
    bench::Check(error, "clCreateProgramWithSource");
    const std::string options = se::rng_detail::PhiloxOpenCLOptions();
    bench::Check(clBuildProgram(cl.program, 1, &cl.device, options.c_str(), nullptr, nullptr), "clBuildProgram");
    kernel = cl.Kernel("se_philox_uniform_f32");
    buffer = cl.Buffer(kCounts.back() * sizeof(float));
  }
  ~RawPhilox() {
    clReleaseMemObject(buffer);
    clReleaseKernel(kernel);
  }
  void Uniform(std::size_t n) {
    const cl_ulong key = 0x0706050403020100ull, stream = 0x0f0e0d0c0b0a0908ull, count = n;
    const cl_ulong blocks = (count + 3) / 4;
    bench::Check(clSetKernelArg(kernel, 0, sizeof(key), &key), "clSetKernelArg");
    bench::Check(clSetKernelArg(kernel, 1, sizeof(stream), &stream), "clSetKernelArg");
    bench::Check(clSetKernelArg(kernel, 2, sizeof(next_block), &next_block), "clSetKernelArg");
    bench::Check(clSetKernelArg(kernel, 3, sizeof(count), &count), "clSetKernelArg");
    bench::Check(clSetKernelArg(kernel, 4, sizeof(buffer), &buffer), "clSetKernelArg");
    const std::size_t local = 256, global = (blocks + local - 1) / local * local;
    bench::Check(clEnqueueNDRangeKernel(cl.queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
                 "clEnqueueNDRangeKernel");
    bench::Check(clFinish(cl.queue), "clFinish");
    next_block += blocks;
  }
};
RawPhilox& TheRaw() {
  static RawPhilox raw;
  return raw;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Register("rng_host_uniform_f32", "ours", [](std::size_t n) { TheOurs<se::host>().Uniform(n); });
  Register("rng_host_uniform_f32", "random123", [](std::size_t n) { TheDirect().Uniform(n); });
  Register("rng_host_gaussian_f32", "ours", [](std::size_t n) { TheOurs<se::host>().Gaussian(n); });
  Register("rng_host_gaussian_f32", "random123", [](std::size_t n) { TheDirect().Gaussian(n); });
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  if (se::Platform<se::opencl>::Get().VisibleDeviceCount() > 0) {
    Register("rng_opencl_uniform_f32", "ours", [](std::size_t n) { TheOurs<se::opencl>().Uniform(n); });
    Register("rng_opencl_uniform_f32", "raw", [](std::size_t n) { TheRaw().Uniform(n); });
  }
#endif
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
