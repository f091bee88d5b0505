// The kernels the generic suite launches, in every kernel language: host C++,
// OpenCL C and (where built) CUDA PTX and Vulkan SPIR-V, all with the same
// parameter lists. The CUDA versions are in test_kernels.cu; the build compiles
// them to PTX and passes the file's path as SE_CUDA_TEST_KERNELS_PTX. The
// Vulkan ones are GLSL in vulkan/<kernel>.comp, compiled by glslangValidator
// (entry point named after the kernel) into the folder SE_VULKAN_TEST_KERNELS_DIR.
#pragma once

#include <cstdint>
#include <span>

#include "generic/test_backend.hpp"

namespace test_kernels {

// y[i] = a * x[i] + y[i] for i < n.
using SaxpyKernel = se::TypedKernel<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>;

inline void saxpy_host(const se::host::KernelContext& ctx, float a, const float* x, float* y, std::uint32_t n) {
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

inline constexpr const char* kSaxpyOpenCL = R"(
__kernel void saxpy(float a, __global const float* x, __global float* y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

inline se::MultiKernelLoaderSpec SaxpySpec() {
  se::MultiKernelLoaderSpec spec(4);
  spec.AddHostKernel<&saxpy_host>("saxpy");
  spec.AddOpenCLTextInMemory(kSaxpyOpenCL, "saxpy");
#ifdef SE_CUDA_TEST_KERNELS_PTX
  spec.AddCudaPtxOnDisk(SE_CUDA_TEST_KERNELS_PTX, "saxpy");
#endif
#ifdef SE_VULKAN_TEST_KERNELS_DIR
  spec.AddSpirvOnDisk(SE_VULKAN_TEST_KERNELS_DIR "/saxpy.spv", "saxpy");
#endif
  return spec;
}

// The saxpy launch the launch-preparation cases share: 1000 elements in blocks
// of 64 threads.
namespace saxpy_grid {
inline constexpr std::uint32_t kN = 1000;
inline constexpr std::uint64_t kThreads = 64;
inline const se::BlockDim kBlocks((kN + kThreads - 1) / kThreads);
}  // namespace saxpy_grid

// out[linear thread id] = packed (block, thread) coordinates, for checking the
// mapping of ThreadDim/BlockDim onto the backend in three dimensions.
using CoordinatesKernel = se::TypedKernel<se::DeviceMemory<std::uint32_t>*>;

inline void coordinates_host(const se::host::KernelContext& ctx, std::uint32_t* out) {
  const std::uint64_t block = (ctx.blockIdx.z * ctx.gridDim.y + ctx.blockIdx.y) * ctx.gridDim.x + ctx.blockIdx.x;
  const std::uint64_t thread = (ctx.threadIdx.z * ctx.blockDim.y + ctx.threadIdx.y) * ctx.blockDim.x + ctx.threadIdx.x;
  const std::uint64_t threads_per_block = ctx.blockDim.x * ctx.blockDim.y * ctx.blockDim.z;
  out[block * threads_per_block + thread] =
      static_cast<std::uint32_t>((ctx.blockIdx.x << 24) | (ctx.blockIdx.y << 20) | (ctx.blockIdx.z << 16) |
                                 (ctx.threadIdx.x << 8) | (ctx.threadIdx.y << 4) | ctx.threadIdx.z);
}

inline constexpr const char* kCoordinatesOpenCL = R"(
__kernel void coordinates(__global uint* out) {
  size_t block = (get_group_id(2) * get_num_groups(1) + get_group_id(1)) * get_num_groups(0) + get_group_id(0);
  size_t thread = (get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0) + get_local_id(0);
  size_t per_block = get_local_size(0) * get_local_size(1) * get_local_size(2);
  out[block * per_block + thread] = (uint)((get_group_id(0) << 24) | (get_group_id(1) << 20) |
      (get_group_id(2) << 16) | (get_local_id(0) << 8) | (get_local_id(1) << 4) | get_local_id(2));
}
)";

inline se::MultiKernelLoaderSpec CoordinatesSpec() {
  se::MultiKernelLoaderSpec spec(1);
  spec.AddHostKernel<&coordinates_host>("coordinates");
  spec.AddOpenCLTextInMemory(kCoordinatesOpenCL, "coordinates");
#ifdef SE_CUDA_TEST_KERNELS_PTX
  spec.AddCudaPtxOnDisk(SE_CUDA_TEST_KERNELS_PTX, "coordinates");
#endif
#ifdef SE_VULKAN_TEST_KERNELS_DIR
  spec.AddSpirvOnDisk(SE_VULKAN_TEST_KERNELS_DIR "/coordinates.spv", "coordinates");
#endif
  return spec;
}

// One thread per block reverses its block's slice of `data` through shared
// memory (no barrier needed with one thread, so it runs on every backend).
using ReverseKernel = se::TypedKernel<se::DeviceMemory<int>*, se::SharedDeviceMemory<int>, std::uint32_t>;

inline void reverse_host(const se::host::KernelContext& ctx, int* data, std::span<int> scratch, std::uint32_t width) {
  int* slice = data + ctx.blockIdx.x * width;
  for (std::uint32_t i = 0; i < width; ++i) scratch[i] = slice[i];
  for (std::uint32_t i = 0; i < width; ++i) slice[i] = scratch[width - 1 - i];
}

inline constexpr const char* kReverseOpenCL = R"(
__kernel void reverse(__global int* data, __local int* scratch, uint width) {
  __global int* slice = data + get_group_id(0) * width;
  for (uint i = 0; i < width; ++i) scratch[i] = slice[i];
  for (uint i = 0; i < width; ++i) slice[i] = scratch[width - 1 - i];
}
)";

inline se::MultiKernelLoaderSpec ReverseSpec() {
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<&reverse_host>("reverse");
  spec.AddOpenCLTextInMemory(kReverseOpenCL, "reverse");
#ifdef SE_CUDA_TEST_KERNELS_PTX
  spec.AddCudaPtxOnDisk(SE_CUDA_TEST_KERNELS_PTX, "reverse");
#endif
#ifdef SE_VULKAN_TEST_KERNELS_DIR
  spec.AddSpirvOnDisk(SE_VULKAN_TEST_KERNELS_DIR "/reverse.spv", "reverse");
#endif
  return spec;
}

// Adds `value` to every element of a slice: for checking GetSlice arguments.
using AddKernel = se::TypedKernel<se::DeviceMemory<int>*, int>;

inline void add_host(const se::host::KernelContext& ctx, int* data, int value) {
  data[ctx.blockIdx.x * ctx.blockDim.x + ctx.threadIdx.x] += value;
}

inline constexpr const char* kAddOpenCL = R"(
__kernel void add(__global int* data, int value) { data[get_global_id(0)] += value; }
)";

inline se::MultiKernelLoaderSpec AddSpec() {
  se::MultiKernelLoaderSpec spec(2);
  spec.AddHostKernel<&add_host>("add");
  spec.AddOpenCLTextInMemory(kAddOpenCL, "add");
#ifdef SE_CUDA_TEST_KERNELS_PTX
  spec.AddCudaPtxOnDisk(SE_CUDA_TEST_KERNELS_PTX, "add");
#endif
#ifdef SE_VULKAN_TEST_KERNELS_DIR
  spec.AddSpirvOnDisk(SE_VULKAN_TEST_KERNELS_DIR "/add.spv", "add");
#endif
  return spec;
}

// out[block] = the sum of the block's slice of in (zero past n), by a tree
// over a *static* block-shared array of kBlockSumMaxThreads floats with a
// barrier per step: any block size up to that limit works.
using BlockSumKernel = se::TypedKernel<se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>;
inline constexpr std::uint64_t kBlockSumMaxThreads = 256;

inline void block_sum_host(const se::host::CooperativeContext& ctx, const float* in, float* out, std::uint32_t n) {
  // Host kernels declare no shared memory, but a block's threads are fibers
  // of one worker thread, one block at a time (docs/host.md): a thread_local
  // array is the block's, as a __shared__ one is.
  thread_local float tile[kBlockSumMaxThreads];
  const std::uint64_t t = ctx.threadIdx.x;
  const std::uint64_t i = ctx.blockIdx.x * ctx.blockDim.x + t;
  tile[t] = i < n ? in[i] : 0.0f;
  ctx.SyncThreads();
  for (std::uint64_t stride = 1; stride < ctx.blockDim.x; stride *= 2) {
    if (t % (2 * stride) == 0 && t + stride < ctx.blockDim.x) tile[t] += tile[t + stride];
    ctx.SyncThreads();
  }
  if (t == 0) out[ctx.blockIdx.x] = tile[0];
}

inline constexpr const char* kBlockSumOpenCL = R"(
__kernel void block_sum(__global const float* in, __global float* out, uint n) {
  __local float tile[256];
  size_t t = get_local_id(0), size = get_local_size(0), i = get_global_id(0);
  tile[t] = i < n ? in[i] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t stride = 1; stride < size; stride *= 2) {
    if (t % (2 * stride) == 0 && t + stride < size) tile[t] += tile[t + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) out[get_group_id(0)] = tile[0];
}
)";

inline se::MultiKernelLoaderSpec BlockSumSpec() {
  se::MultiKernelLoaderSpec spec(3);
  spec.AddHostKernel<&block_sum_host>("block_sum");
  spec.AddOpenCLTextInMemory(kBlockSumOpenCL, "block_sum");
#ifdef SE_CUDA_TEST_KERNELS_PTX
  spec.AddCudaPtxOnDisk(SE_CUDA_TEST_KERNELS_PTX, "block_sum");
#endif
#ifdef SE_VULKAN_TEST_KERNELS_DIR
  spec.AddSpirvOnDisk(SE_VULKAN_TEST_KERNELS_DIR "/block_sum.spv", "block_sum");
#endif
  return spec;
}

}  // namespace test_kernels
