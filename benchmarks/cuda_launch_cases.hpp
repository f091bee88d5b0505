// Pair 4, the CUDA launch path, three ways against the same libcuda.so.1:
//   Ours        stream.ThenLaunch(...) through the library (launch_cases.hpp);
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

#include <cstdint>
#include <string>

#include <streamexecutor/cuda.hpp>

#include "launch_cases.hpp"

namespace bench {

// The three kernels, as PTX (the double parses the parameter lists; the
// library checks the TypedKernels against them at load time).
inline constexpr const char* kCudaLaunchPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry args1(.param .u64 p0) { ret; }
.visible .entry args3(.param .u64 p0, .param .f32 p1, .param .s32 p2) { ret; }
.visible .entry args8(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3, .param .f32 p4,
                      .param .f32 p5, .param .s32 p6, .param .s32 p7) { ret; }
)";

inline void AddCudaLaunchCode(se::MultiKernelLoaderSpec& spec, const char* name) {
  spec.AddCudaPtxInMemory(kCudaLaunchPtx, name);
}
using CudaOurs = OursLaunch<se::cuda, &AddCudaLaunchCode>;

// A program on the driver API alone, loading libcuda.so.1 at run time as the
// library does, with its own module, memory and stream.
struct CudaRaw {
  PFN_cuLaunchKernel_v4000 launch = nullptr;
  PFN_cuStreamSynchronize_v2000 synchronize = nullptr;
  CUfunction k1 = nullptr, k3 = nullptr, k8 = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr a = 0, b = 0, c = 0, d = 0;
  float e = 0.5f, f = 0.25f;
  int g = 3, h = 4;

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
  [[gnu::always_inline]] void Launch() {
    static_assert(N == 1 || N == 3 || N == 8);
    CUresult r;
    if constexpr (N == 1) {
      void* params[] = {&a};
      r = launch(k1, 1, 1, 1, kLaunchThreads, 1, 1, 0, stream, params, nullptr);
    } else if constexpr (N == 3) {
      void* params[] = {&a, &e, &g};
      r = launch(k3, 1, 1, 1, kLaunchThreads, 1, 1, 0, stream, params, nullptr);
    } else {
      void* params[] = {&a, &b, &c, &d, &e, &f, &g, &h};
      r = launch(k8, 1, 1, 1, kLaunchThreads, 1, 1, 0, stream, params, nullptr);
    }
    if (r != CUDA_SUCCESS) [[unlikely]]
      Die("cuLaunchKernel");
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
    raw.launch(k, 1, 1, 1, kLaunchThreads, 1, 1, 0, raw.stream, p, nullptr);
  }
  void Finish() { raw.Finish(); }
};

}  // namespace bench
