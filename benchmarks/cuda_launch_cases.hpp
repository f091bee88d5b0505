// Pair 4, the CUDA launch path, three ways against the same libcuda.so.1:
//   Ours        stream.ThenLaunch(...) through the library;
//   Raw         a careful hand-written driver-API program: a void* array of
//               argument addresses built per launch, cuLaunchKernel, result
//               checked;
//   DriverOnly  cuLaunchKernel alone with an argument array built once: the
//               cost of the driver call itself, which is subtracted.
// No GPU exists where this runs: libcuda.so.1 is the counting driver double
// (tests/cuda/counting_double), so "the driver" costs what the double costs,
// the same on every side. Both the timing benchmark and the
// instruction-counting program use exactly this code.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include <streamexecutor/cuda.hpp>

#include "bench_common.hpp"

namespace bench {

namespace se = streamexecutor;

// The three kernels, as PTX (the double parses the parameter lists; the
// library checks the TypedKernels against them at load time).
inline constexpr const char* kCudaLaunchPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry args1(.param .u64 p0) { ret; }
.visible .entry args3(.param .u64 p0, .param .f32 p1, .param .u32 p2) { ret; }
.visible .entry args8(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3, .param .f32 p4,
                      .param .f32 p5, .param .u32 p6, .param .u32 p7) { ret; }
)";

// One block of 64 threads, as on OpenCL.
inline constexpr unsigned kCudaThreads = 64;

using CudaMem = se::DeviceMemory<float>;
using CudaKernel1 = se::TypedKernel<CudaMem*>;
using CudaKernel3 = se::TypedKernel<CudaMem*, float, std::uint32_t>;
using CudaKernel8 = se::TypedKernel<CudaMem*, CudaMem*, CudaMem*, CudaMem*, float, float, std::uint32_t, std::uint32_t>;

// Nothing on the launch path is polymorphic, so no call on it can be virtual.
static_assert(!std::is_polymorphic_v<se::Stream<se::cuda>> && !std::is_polymorphic_v<se::StreamExecutor<se::cuda>> &&
              !std::is_polymorphic_v<CudaKernel8> && !std::is_polymorphic_v<se::cuda> &&
              !std::is_polymorphic_v<se::DeviceMemory<float>>);

template <typename K>
K LoadCudaKernel(se::StreamExecutor<se::cuda>* executor, const char* name, std::size_t arity) {
  se::MultiKernelLoaderSpec spec(arity);
  spec.AddCudaPtxInMemory(kCudaLaunchPtx, name);
  K kernel(executor);
  if (se::Status s = executor->GetKernel(spec, &kernel); !s.ok()) Die(s.ToString());
  return kernel;
}

struct CudaOurs {
  se::StreamExecutor<se::cuda>* executor = Executor();
  se::ScopedDeviceMemory<float> a = executor->AllocateOwnedArray<float>(16);
  se::ScopedDeviceMemory<float> b = executor->AllocateOwnedArray<float>(16);
  se::ScopedDeviceMemory<float> c = executor->AllocateOwnedArray<float>(16);
  se::ScopedDeviceMemory<float> d = executor->AllocateOwnedArray<float>(16);
  CudaKernel1 k1 = LoadCudaKernel<CudaKernel1>(executor, "args1", 1);
  CudaKernel3 k3 = LoadCudaKernel<CudaKernel3>(executor, "args3", 3);
  CudaKernel8 k8 = LoadCudaKernel<CudaKernel8>(executor, "args8", 8);
  se::Stream<se::cuda> stream{executor};
  float e = 0.5f, f = 0.25f;
  std::uint32_t g = 3, h = 4;

  CudaOurs() {
    if (!stream.Init().ok()) Die(stream.status().ToString());
  }
  static se::StreamExecutor<se::cuda>* Executor() {
    auto executor = se::Platform<se::cuda>::Get().ExecutorForDevice(0);
    if (!executor.ok()) Die("no CUDA device (is the counting driver double on LD_LIBRARY_PATH?): " +
                            executor.status().ToString());
    return executor.ValueOrDie();
  }

  template <int N>
  void Launch() {
    static_assert(N == 1 || N == 3 || N == 8);
    if constexpr (N == 1) stream.ThenLaunch(se::ThreadDim(kCudaThreads), se::BlockDim(1), k1, a.ptr());
    if constexpr (N == 3) stream.ThenLaunch(se::ThreadDim(kCudaThreads), se::BlockDim(1), k3, a.ptr(), e, g);
    if constexpr (N == 8) {
      stream.ThenLaunch(se::ThreadDim(kCudaThreads), se::BlockDim(1), k8, a.ptr(), b.ptr(), c.ptr(), d.ptr(), e, f, g,
                        h);
    }
  }
  void Finish() {
    if (se::Status s = stream.BlockHostUntilDone(); !s.ok()) Die(s.ToString());
  }
};

// A program on the driver API alone, loading libcuda.so.1 at run time as the
// library does, with its own module, memory and stream.
struct CudaRaw {
  PFN_cuLaunchKernel_v4000 launch = nullptr;
  PFN_cuStreamSynchronize_v2000 synchronize = nullptr;
  CUfunction k1 = nullptr, k3 = nullptr, k8 = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr a = 0, b = 0, c = 0, d = 0;
  float e = 0.5f, f = 0.25f;
  std::uint32_t g = 3, h = 4;

  CudaRaw() {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) Die("dlopen(libcuda.so.1) failed");
    auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"));
    auto init = reinterpret_cast<PFN_cuInit_v2000>(dlsym(library, "cuInit"));
    if (get_proc == nullptr || init == nullptr) Die("libcuda.so.1 has no cuInit/cuGetProcAddress_v2");
    Check(init(0), "cuInit");
    auto resolve = [&](auto& slot, const char* name, int version) {
      Check(get_proc(name, reinterpret_cast<void**>(&slot), version, CU_GET_PROC_ADDRESS_DEFAULT, nullptr), name);
    };
    PFN_cuDevicePrimaryCtxRetain_v7000 retain = nullptr;
    PFN_cuCtxSetCurrent_v4000 set_current = nullptr;
    PFN_cuModuleLoadDataEx_v2010 load = nullptr;
    PFN_cuModuleGetFunction_v2000 get_function = nullptr;
    PFN_cuMemAlloc_v3020 alloc = nullptr;
    PFN_cuStreamCreate_v2000 create_stream = nullptr;
    resolve(retain, "cuDevicePrimaryCtxRetain", 7000);
    resolve(set_current, "cuCtxSetCurrent", 4000);
    resolve(load, "cuModuleLoadDataEx", 2010);
    resolve(get_function, "cuModuleGetFunction", 2000);
    resolve(alloc, "cuMemAlloc", 3020);
    resolve(create_stream, "cuStreamCreate", 2000);
    resolve(launch, "cuLaunchKernel", 4000);
    resolve(synchronize, "cuStreamSynchronize", 2000);
    CUcontext context = nullptr;
    Check(retain(&context, 0), "cuDevicePrimaryCtxRetain");
    Check(set_current(context), "cuCtxSetCurrent");
    CUmodule module = nullptr;
    Check(load(&module, kCudaLaunchPtx, 0, nullptr, nullptr), "cuModuleLoadDataEx");
    Check(get_function(&k1, module, "args1"), "cuModuleGetFunction");
    Check(get_function(&k3, module, "args3"), "cuModuleGetFunction");
    Check(get_function(&k8, module, "args8"), "cuModuleGetFunction");
    for (CUdeviceptr* m : {&a, &b, &c, &d}) Check(alloc(m, 64), "cuMemAlloc");
    Check(create_stream(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  template <int N>
  void Launch() {
    static_assert(N == 1 || N == 3 || N == 8);
    CUresult r;
    if constexpr (N == 1) {
      void* params[] = {&a};
      r = launch(k1, 1, 1, 1, kCudaThreads, 1, 1, 0, stream, params, nullptr);
    } else if constexpr (N == 3) {
      void* params[] = {&a, &e, &g};
      r = launch(k3, 1, 1, 1, kCudaThreads, 1, 1, 0, stream, params, nullptr);
    } else {
      void* params[] = {&a, &b, &c, &d, &e, &f, &g, &h};
      r = launch(k8, 1, 1, 1, kCudaThreads, 1, 1, 0, stream, params, nullptr);
    }
    if (r != CUDA_SUCCESS) [[unlikely]] Die("cuLaunchKernel");
  }
  void Finish() { Check(synchronize(stream), "cuStreamSynchronize"); }

  static void Check(CUresult result, const char* call) {
    if (result != CUDA_SUCCESS) Die(std::string(call) + " returned " + std::to_string(static_cast<int>(result)));
  }
};

// The driver call alone: the same kernels and values, the argument array
// built once, the result ignored. What a launch cannot cost less than.
struct CudaDriverOnly {
  CudaRaw& raw;
  void* p1[1] = {&raw.a};
  void* p3[3] = {&raw.a, &raw.e, &raw.g};
  void* p8[8] = {&raw.a, &raw.b, &raw.c, &raw.d, &raw.e, &raw.f, &raw.g, &raw.h};

  explicit CudaDriverOnly(CudaRaw& r) : raw(r) {}

  template <int N>
  void Launch() {
    CUfunction k = N == 1 ? raw.k1 : N == 3 ? raw.k3 : raw.k8;
    void** p = N == 1 ? p1 : N == 3 ? p3 : p8;
    raw.launch(k, 1, 1, 1, kCudaThreads, 1, 1, 0, raw.stream, p, nullptr);
  }
  void Finish() { raw.Finish(); }
};

}  // namespace bench
