// Pair 3: copies between host and device memory, 64 KiB to 256 MiB.
//   copy_opencl_{sync,then}_{h2d,d2h}/SIZE/{ours,raw}
//       SynchronousMemcpyH2D/D2H, and ThenMemcpy + BlockHostUntilDone, against
//       blocking clEnqueueWriteBuffer/ReadBuffer, and non-blocking + clFinish,
//       on a raw context and plain clCreateBuffer memory of a hand-written program
//   copy_host_{sync,then}_{h2d,d2h}/SIZE/{ours,memcpy}
//       the same calls on the host backend against std::memcpy
//   copy_vulkan_{sync,then}_{h2d,d2h}/SIZE/{ours,raw}
//       the same calls on Vulkan (pageable host memory, staged by the library)
//       against a hand-written program's staging: memcpy into a mapped buffer,
//       vkCmdCopyBuffer, vkQueueSubmit with a fence, wait (and back for D2H)
//   copy_vulkan_pinned_{sync,then}_{h2d,d2h}/SIZE/{ours,raw}
//       from and to HostAllocate'd memory (one device copy, no staging) against
//       vkCmdCopyBuffer straight from and to a mapped buffer
// Throughput ratio: raw time / our time (higher is better for us).
#include <streamexecutor/streamexecutor.hpp>

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "bench_common.hpp"

#if defined(STREAMEXECUTOR_WITH_VULKAN)
#include <vulkan/vulkan.h>
#endif

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

#if defined(STREAMEXECUTOR_WITH_VULKAN)
void VkOk(VkResult result, const char* call) {
  if (result != VK_SUCCESS) bench::Die(std::string(call) + " returned " + std::to_string(static_cast<int>(result)));
}

// Ours from and to HostAllocate'd memory, on the device memory and stream of
// the staged side: the backend finds the pinned buffer and copies directly.
struct OursPinnedVulkan {
  OursCopies<se::vulkan>& ours;
  se::PinnedHostMemory<std::byte> host = ours.executor->HostAllocate<std::byte>(kMax);
  explicit OursPinnedVulkan(OursCopies<se::vulkan>& staged) : ours(staged) {
    if (!host.ok()) bench::Die(host.status().ToString());
    std::memset(host.data(), 1, kMax);
  }
  void Copy(Mode mode, Dir dir, std::size_t bytes) {
    if (mode == Mode::kSync) {
      if (dir == Dir::kH2D)
        Ok(ours.executor->SynchronousMemcpyH2D(host.data(), bytes, ours.device.ptr()));
      else
        Ok(ours.executor->SynchronousMemcpyD2H(ours.device.cref(), bytes, host.data()));
      return;
    }
    if (dir == Dir::kH2D)
      ours.stream.ThenMemcpy(ours.device.ptr(), host.data(), bytes);
    else
      ours.stream.ThenMemcpy(host.data(), ours.device.cref(), bytes);
    Ok(ours.stream.BlockHostUntilDone());
  }
};

// What a Vulkan programmer writes for the same copies, on our executor's
// device and queue (so that both sides reach the same driver thread), with
// entry points from vkGetDeviceProcAddr: a device-local buffer of the memory
// type our allocations use, persistently mapped coherent staging buffers of
// the types our staging uses, one command buffer and a fence. Sync and then
// are the same program: Vulkan has no blocking copy.
struct RawVulkanCopies {
  struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;
  };
  struct Fns {
#define SE_BENCH_VK(name) PFN_##name name = nullptr;
#define SE_BENCH_VK_ALL(X)         \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkResetCommandBuffer)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkCmdCopyBuffer)               \
  X(vkCmdFillBuffer)               \
  X(vkCmdPipelineBarrier)          \
  X(vkQueueSubmit)                 \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkWaitForFences)               \
  X(vkResetFences)
    SE_BENCH_VK_ALL(SE_BENCH_VK)
#undef SE_BENCH_VK
  };

  se::StreamExecutor<se::vulkan>* executor = se::Platform<se::vulkan>::Get().ExecutorForDevice(0).ValueOrDie();
  VkDevice device = se::NativeContext(*executor);
  VkQueue queue = executor->native_state().impl->queue;
  Fns vk;
  Buffer on_device, upload, readback;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;

  RawVulkanCopies() {
#define SE_BENCH_VK_LOAD(name)                                                \
  vk.name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name)); \
  if (vk.name == nullptr) bench::Die("no " #name);
    SE_BENCH_VK_ALL(SE_BENCH_VK_LOAD)
#undef SE_BENCH_VK_LOAD
#undef SE_BENCH_VK_ALL
    const auto& types = executor->native_state().impl->memory_types;
    on_device = MakeBuffer(types.device, false);
    upload = MakeBuffer(types.upload, true);
    readback = MakeBuffer(types.readback, true);
    // Touched once, as the library's warm-up touches its staging buffers.
    std::memset(upload.mapped, 1, kMax);
    std::memset(readback.mapped, 2, kMax);
    VkCommandPoolCreateInfo pool_info{};
    pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = executor->native_state().impl->queue_family;
    VkOk(vk.vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    allocate.commandPool = pool;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    VkOk(vk.vkAllocateCommandBuffers(device, &allocate, &commands), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{};
    fence_info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    VkOk(vk.vkCreateFence(device, &fence_info, nullptr, &fence), "vkCreateFence");
    Run([&] { vk.vkCmdFillBuffer(commands, on_device.buffer, 0, kMax, 0); }, false);
  }
  RawVulkanCopies(const RawVulkanCopies&) = delete;
  RawVulkanCopies& operator=(const RawVulkanCopies&) = delete;
  ~RawVulkanCopies() {
    vk.vkDestroyFence(device, fence, nullptr);
    vk.vkDestroyCommandPool(device, pool, nullptr);
    for (Buffer* b : {&on_device, &upload, &readback}) {
      vk.vkDestroyBuffer(device, b->buffer, nullptr);
      vk.vkFreeMemory(device, b->memory, nullptr);  // unmaps it
    }
  }

  void Copy(Mode, Dir dir, std::size_t bytes) {
    HostBuffers& h = Host();
    if (dir == Dir::kH2D) {
      std::memcpy(upload.mapped, h.src.get(), bytes);
      Transfer(upload.buffer, on_device.buffer, bytes, false);
    } else {
      Transfer(on_device.buffer, readback.buffer, bytes, true);
      std::memcpy(h.dst.get(), readback.mapped, bytes);
    }
  }
  void Transfer(VkBuffer from, VkBuffer to, std::size_t bytes, bool to_host) {
    Run(
        [&] {
          const VkBufferCopy region{0, 0, bytes};
          vk.vkCmdCopyBuffer(commands, from, to, 1, &region);
        },
        to_host);
  }

 private:
  Buffer MakeBuffer(std::uint32_t memory_type, bool map) {
    Buffer b;
    VkBufferCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    info.size = kMax;
    info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VkOk(vk.vkCreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements requirements{};
    vk.vkGetBufferMemoryRequirements(device, b.buffer, &requirements);
    VkMemoryAllocateInfo allocate{};
    allocate.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = memory_type;
    VkOk(vk.vkAllocateMemory(device, &allocate, nullptr, &b.memory), "vkAllocateMemory");
    VkOk(vk.vkBindBufferMemory(device, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (map) VkOk(vk.vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    return b;
  }
  // One submission, waited for. A fence wait makes device writes available
  // to the device only: the host reads them after a barrier to the host stage.
  template <typename Record>
  void Run(Record record, bool to_host) {
    VkOk(vk.vkResetCommandBuffer(commands, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkOk(vk.vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
    record();
    if (to_host) {
      VkMemoryBarrier barrier{};
      barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
      barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vk.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                              nullptr, 0, nullptr);
    }
    VkOk(vk.vkEndCommandBuffer(commands), "vkEndCommandBuffer");
    VkSubmitInfo submit{};
    submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands;
    {
      // Our streams submit to the same queue, which is externally synchronized.
      std::lock_guard lock(se::Interop<se::vulkan>::QueueMutex(executor->native_state()));
      VkOk(vk.vkQueueSubmit(queue, 1, &submit, fence), "vkQueueSubmit");
    }
    VkOk(vk.vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    VkOk(vk.vkResetFences(device, 1, &fence), "vkResetFences");
  }
};

// The raw side's pinned program: the host's bytes live in a mapped buffer of
// the memory type HostAllocate uses, and the device copies straight from and to it.
struct RawPinnedVulkan {
  RawVulkanCopies& raw;
  void Copy(Mode, Dir dir, std::size_t bytes) {
    if (dir == Dir::kH2D)
      raw.Transfer(raw.readback.buffer, raw.on_device.buffer, bytes, false);
    else
      raw.Transfer(raw.on_device.buffer, raw.readback.buffer, bytes, true);
  }
};

struct VulkanSides {
  OursCopies<se::vulkan> ours;
  OursPinnedVulkan pinned_ours{ours};
  RawVulkanCopies raw;
  RawPinnedVulkan pinned_raw{raw};
  VulkanSides() {
    // The library's staging buffers, one per size class and direction, exist
    // before the first timing, as the raw side's do.
    for (std::size_t bytes : kSizes) {
      for (Dir dir : {Dir::kH2D, Dir::kD2H}) ours.Copy(Mode::kSync, dir, bytes);
    }
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
#if defined(STREAMEXECUTOR_WITH_VULKAN)
  // A build with Vulkan may run where no driver is installed: the other pairs still run.
  std::unique_ptr<VulkanSides> vulkan;
  if (se::Platform<se::vulkan>::Get().VisibleDeviceCount() > 0) vulkan = std::make_unique<VulkanSides>();
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
#if defined(STREAMEXECUTOR_WITH_VULKAN)
      if (vulkan) {
        Register(PairName("vulkan", mode, dir), "ours", vulkan->ours, mode, dir);
        Register(PairName("vulkan", mode, dir), "raw", vulkan->raw, mode, dir);
        Register(PairName("vulkan_pinned", mode, dir), "ours", vulkan->pinned_ours, mode, dir);
        Register(PairName("vulkan_pinned", mode, dir), "raw", vulkan->pinned_raw, mode, dir);
      }
#endif
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
