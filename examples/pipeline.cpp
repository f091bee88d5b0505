// A pipeline across backends and devices: the host produces batches, OpenCL
// device 0 squares them, OpenCL device 1 adds one, and the host sums the
// result. Four streams, one per stage; every hand-over is a ThenCopyBetween,
// which orders the two streams it joins (waits across backends and devices,
// no thread blocked) and picks the copy's route. Batches overlap: while
// device 1 works on batch b, device 0 can already square batch b + 1.
//
//   pipeline            (two OpenCL devices with POCL_DEVICES="pthread pthread";
//                        with one, both OpenCL stages run on device 0)
#include <streamexecutor/streamexecutor.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace se = streamexecutor;

static void produce_host(const se::host::KernelContext& ctx, float* out, std::uint32_t first, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) out[i] = static_cast<float>(first + i) * 0.001f;
}

static constexpr const char* STAGES_OPENCL = R"(
__kernel void square(__global float *x, uint n) {
  size_t i = get_global_id(0);
  if (i < n) x[i] = x[i] * x[i];
}
__kernel void add_one(__global float *x, uint n) {
  size_t i = get_global_id(0);
  if (i < n) x[i] = x[i] + 1.0f;
}
)";

using ProduceKernel = se::TypedKernel<se::DeviceMemory<float>*, std::uint32_t, std::uint32_t>;
using StageKernel = se::TypedKernel<se::DeviceMemory<float>*, std::uint32_t>;

constexpr std::uint32_t kBatch = 1 << 18;  // 1 MiB of floats
constexpr int kBatches = 8;
constexpr int kSlots = 2;  // buffers per stage: batch b uses slot b % 2

static int Fail(const char* what, const se::Status& status) {
  std::fprintf(stderr, "pipeline: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

int main() {
  auto* host = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  auto& opencl = se::Platform<se::opencl>::Get();
  if (opencl.VisibleDeviceCount() == 0) return Fail("no OpenCL device", opencl.InitStatus());
  const bool two_devices = opencl.VisibleDeviceCount() >= 2;
  auto* dev0 = opencl.ExecutorForDevice(0).ValueOrDie();
  auto* dev1 = opencl.ExecutorForDevice(two_devices ? 1 : 0).ValueOrDie();
  std::printf("pipeline: host -> %s -> %s -> host%s\n", dev0->DeviceLabel().c_str(), dev1->DeviceLabel().c_str(),
              two_devices ? "" : " (one OpenCL device: both stages on it)");

  se::MultiKernelLoaderSpec produce_spec(3), square_spec(2), add_spec(2);
  produce_spec.AddHostKernel<&produce_host>("produce");
  square_spec.AddOpenCLTextInMemory(STAGES_OPENCL, "square");
  add_spec.AddOpenCLTextInMemory(STAGES_OPENCL, "add_one");
  ProduceKernel produce(host);
  StageKernel square(dev0), add_one(dev1);
  if (se::Status s = host->GetKernel(produce_spec, &produce); !s.ok()) return Fail("produce", s);
  if (se::Status s = dev0->GetKernel(square_spec, &square); !s.ok()) return Fail("square", s);
  if (se::Status s = dev1->GetKernel(add_spec, &add_one); !s.ok()) return Fail("add_one", s);

  std::vector<se::ScopedDeviceMemory<float>> in, mid, out, back;
  for (int s = 0; s < kSlots; ++s) {
    in.push_back(host->AllocateOwnedArray<float>(kBatch));
    mid.push_back(dev0->AllocateOwnedArray<float>(kBatch));
    out.push_back(dev1->AllocateOwnedArray<float>(kBatch));
    back.push_back(host->AllocateOwnedArray<float>(kBatch));
    if (!in.back().ok() || !mid.back().ok() || !out.back().ok() || !back.back().ok()) {
      return Fail("allocation", !mid.back().ok() ? mid.back().status() : out.back().status());
    }
  }

  se::Stream produce_stream(host), sum_stream(host);
  se::Stream square_stream(dev0), add_stream(dev1);
  produce_stream.Init();
  sum_stream.Init();
  square_stream.Init();
  add_stream.Init();

  std::vector<double> sums(kBatches, 0.0);
  const se::ThreadDim threads(256);
  const se::BlockDim blocks(kBatch / 256);
  for (int b = 0; b < kBatches; ++b) {
    const int s = b % kSlots;
    const std::uint32_t first = static_cast<std::uint32_t>(b) * kBatch;
    produce_stream.ThenLaunch(threads, blocks, produce, in[s].ptr(), first, kBatch);
    auto to_dev0 = se::ThenCopyBetween(&produce_stream, in[s].cref(), &square_stream, mid[s].ptr());
    square_stream.ThenLaunch(threads, blocks, square, mid[s].ptr(), kBatch);
    auto to_dev1 = se::ThenCopyBetween(&square_stream, mid[s].cref(), &add_stream, out[s].ptr());
    add_stream.ThenLaunch(threads, blocks, add_one, out[s].ptr(), kBatch);
    auto to_host = se::ThenCopyBetween(&add_stream, out[s].cref(), &sum_stream, back[s].ptr());
    const float* result = static_cast<const float*>(back[s].cref().opaque());  // host memory
    sum_stream.ThenDoHostCallback([&sums, b, result] {
      double sum = 0;
      for (std::uint32_t i = 0; i < kBatch; ++i) sum += result[i];
      sums[static_cast<std::size_t>(b)] = sum;
    });
    if (!to_dev0.ok() || !to_dev1.ok() || !to_host.ok()) {
      return Fail("copy", !to_dev0.ok() ? to_dev0.status() : !to_dev1.ok() ? to_dev1.status() : to_host.status());
    }
    if (b == 0) {
      std::printf("routes: host -> dev0 %s, dev0 -> dev1 %s, dev1 -> host %s\n", se::ToString(to_dev0.value()).data(),
                  se::ToString(to_dev1.value()).data(), se::ToString(to_host.value()).data());
    }
  }
  for (auto* stream : {&produce_stream, &sum_stream}) {
    if (se::Status st = stream->BlockHostUntilDone(); !st.ok()) return Fail("host stage", st);
  }
  if (se::Status st = square_stream.BlockHostUntilDone(); !st.ok()) return Fail("square stage", st);
  if (se::Status st = add_stream.BlockHostUntilDone(); !st.ok()) return Fail("add_one stage", st);

  // sum over i of (x_i^2 + 1), x_i = i * 0.001, computed the same way on the host.
  int wrong = 0;
  double total = 0;
  for (int b = 0; b < kBatches; ++b) {
    double expected = 0;
    for (std::uint32_t i = 0; i < kBatch; ++i) {
      const float x = static_cast<float>(static_cast<std::uint32_t>(b) * kBatch + i) * 0.001f;
      expected += static_cast<double>(x * x + 1.0f);
    }
    const double error = sums[static_cast<std::size_t>(b)] - expected;
    if (error > 1e-6 * expected || error < -1e-6 * expected) {
      std::printf("batch %d: sum %.6e, expected %.6e\n", b, sums[static_cast<std::size_t>(b)], expected);
      ++wrong;
    }
    total += sums[static_cast<std::size_t>(b)];
  }
  std::printf("%d batches of %u floats: sum of x^2 + 1 = %.9e, %s\n", kBatches, kBatch, total,
              wrong == 0 ? "every batch matches the host's reference" : "MISMATCH");
  return wrong == 0 ? 0 : 1;
}
