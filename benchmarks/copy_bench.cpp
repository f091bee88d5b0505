// Pair 3: copies between host and device memory, 64 KiB to 256 MiB.
//   copy_opencl_{sync,then}_{h2d,d2h}/SIZE/{ours,raw}
//       SynchronousMemcpyH2D/D2H, and ThenMemcpy + BlockHostUntilDone, against
//       blocking clEnqueueWriteBuffer/ReadBuffer, and non-blocking + clFinish,
//       on a raw context and plain clCreateBuffer memory of a hand-written program
//   copy_host_{sync,then}_{h2d,d2h}/SIZE/{ours,memcpy}
//       the same calls on the host backend against std::memcpy
// Throughput ratio: raw time / our time (higher is better for us).
#include <streamexecutor/streamexecutor.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace se = streamexecutor;
using bench::Name;

constexpr std::size_t kKiB = 1024;
const std::vector<std::size_t> kSizes = {64 * kKiB, 512 * kKiB, 4096 * kKiB, 32768 * kKiB, 262144 * kKiB};
constexpr std::size_t kMax = 262144 * kKiB;

std::string SizeName(std::size_t bytes) {
  return bytes >= 1024 * kKiB ? std::to_string(bytes / (1024 * kKiB)) + "MiB" : std::to_string(bytes / kKiB) + "KiB";
}

// Host buffers shared by every benchmark, touched once so that no side pays
// for first-touch page faults.
struct HostBuffers {
  std::unique_ptr<std::byte[]> src{new std::byte[kMax]};
  std::unique_ptr<std::byte[]> dst{new std::byte[kMax]};
  HostBuffers() {
    std::memset(src.get(), 1, kMax);
    std::memset(dst.get(), 2, kMax);
  }
};
HostBuffers& Host() {
  static HostBuffers buffers;
  return buffers;
}

void Ok(const se::Status& status) {
  if (!status.ok()) bench::Die(status.ToString());
}

enum class Dir { kH2D, kD2H };
enum class Mode { kSync, kThen };

std::string PairName(const char* backend, Mode mode, Dir dir) {
  return std::string("copy_") + backend + (mode == Mode::kSync ? "_sync" : "_then") +
         (dir == Dir::kH2D ? "_h2d" : "_d2h");
}

// Our side, on any backend: one allocation of the largest size.
template <typename B>
struct OursCopies {
  se::StreamExecutor<B>* executor = se::Platform<B>::Get().ExecutorForDevice(0).ValueOrDie();
  se::ScopedDeviceMemory<std::byte> device = executor->template AllocateOwnedArray<std::byte>(kMax);
  se::Stream<B> stream{executor};
  OursCopies() {
    if (!device.ok()) bench::Die(device.status().ToString());
    Ok(stream.Init().status());
    Ok(executor->SynchronousMemZero(device.ptr(), kMax));
  }

  void Copy(Mode mode, Dir dir, std::size_t bytes) {
    HostBuffers& h = Host();
    if (mode == Mode::kSync) {
      if (dir == Dir::kH2D)
        Ok(executor->SynchronousMemcpyH2D(h.src.get(), bytes, device.ptr()));
      else
        Ok(executor->SynchronousMemcpyD2H(device.cref(), bytes, h.dst.get()));
      return;
    }
    if (dir == Dir::kH2D)
      stream.ThenMemcpy(device.ptr(), h.src.get(), bytes);
    else
      stream.ThenMemcpy(h.dst.get(), device.cref(), bytes);
    Ok(stream.BlockHostUntilDone());
  }
};

template <typename Side>
void Register(const std::string& pair, const std::string& side_name, Side& side, Mode mode, Dir dir) {
  for (std::size_t bytes : kSizes) {
    benchmark::RegisterBenchmark(Name(pair, SizeName(bytes), side_name).c_str(), [&side, mode, dir,
                                                                                  bytes](benchmark::State& state) {
      for (auto _ : state) side.Copy(mode, dir, bytes);
      state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bytes));
    })->UseRealTime();
  }
}

// The host baseline: std::memcpy between the same host buffer and the same
// device allocation (host memory on this backend) as our side, so that both
// sides find the same bytes in the same caches.
struct Memcpy {
  std::byte* device;
  void Copy(Mode, Dir dir, std::size_t bytes) {
    HostBuffers& h = Host();
    if (dir == Dir::kH2D)
      std::memcpy(device, h.src.get(), bytes);
    else
      std::memcpy(h.dst.get(), device, bytes);
    benchmark::ClobberMemory();
  }
};

#if defined(STREAMEXECUTOR_WITH_OPENCL)
struct RawCopies {
  bench::RawOpenCL cl;
  cl_mem buffer = cl.Buffer(kMax);
  RawCopies() {
    const cl_uchar zero = 0;
    bench::Check(clEnqueueFillBuffer(cl.queue, buffer, &zero, 1, 0, kMax, 0, nullptr, nullptr), "clEnqueueFillBuffer");
    bench::Check(clFinish(cl.queue), "clFinish");
  }
  RawCopies(const RawCopies&) = delete;
  RawCopies& operator=(const RawCopies&) = delete;
  ~RawCopies() { clReleaseMemObject(buffer); }

  void Copy(Mode mode, Dir dir, std::size_t bytes) {
    HostBuffers& h = Host();
    const cl_bool blocking = mode == Mode::kSync ? CL_TRUE : CL_FALSE;
    cl_int error = dir == Dir::kH2D
                       ? clEnqueueWriteBuffer(cl.queue, buffer, blocking, 0, bytes, h.src.get(), 0, nullptr, nullptr)
                       : clEnqueueReadBuffer(cl.queue, buffer, blocking, 0, bytes, h.dst.get(), 0, nullptr, nullptr);
    if (error == CL_SUCCESS && !blocking) error = clFinish(cl.queue);
    bench::Check(error, "copy");
  }
};
#endif

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Host();
#if defined(STREAMEXECUTOR_WITH_OPENCL)
  OursCopies<se::opencl> opencl_ours;
  RawCopies opencl_raw;
#endif
#if defined(STREAMEXECUTOR_WITH_HOST)
  OursCopies<se::host> host_ours;
  Memcpy memcpy_side{static_cast<std::byte*>(host_ours.device.ptr()->opaque())};
#endif
  for (Mode mode : {Mode::kSync, Mode::kThen}) {
    for (Dir dir : {Dir::kH2D, Dir::kD2H}) {
#if defined(STREAMEXECUTOR_WITH_OPENCL)
      Register(PairName("opencl", mode, dir), "ours", opencl_ours, mode, dir);
      Register(PairName("opencl", mode, dir), "raw", opencl_raw, mode, dir);
#endif
#if defined(STREAMEXECUTOR_WITH_HOST)
      Register(PairName("host", mode, dir), "ours", host_ours, mode, dir);
      Register(PairName("host", mode, dir), "memcpy", memcpy_side, mode, dir);
#endif
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
