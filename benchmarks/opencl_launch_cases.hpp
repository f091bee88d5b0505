// The launch path on OpenCL, both ways, on the same kernels: through the
// library (Ours) and through clSetKernelArg x n + clEnqueueNDRangeKernel
// (Raw), as a hand-written program does it. Shared by the timing benchmark
// and the instruction-counting driver, so both measure exactly this code.
#pragma once

#include <streamexecutor/opencl.hpp>

#include "launch_cases.hpp"

namespace bench {

inline void AddOpenCLLaunchCode(se::MultiKernelLoaderSpec& spec, const char* name) {
  spec.AddOpenCLTextInMemory(kLaunchKernels, name);
}
using Ours = OursLaunch<se::opencl, &AddOpenCLLaunchCode>;

struct Raw {
  RawOpenCL cl;
  cl_mem a, b, c, d;
  cl_kernel k1, k3, k8;
  float e = 0.5f, f = 0.25f;
  int g = 3, h = 4;

  explicit Raw(bool profiling = false)
      : cl(kLaunchKernels, profiling),
        a(cl.Buffer(64)),
        b(cl.Buffer(64)),
        c(cl.Buffer(64)),
        d(cl.Buffer(64)),
        k1(cl.Kernel("args1")),
        k3(cl.Kernel("args3")),
        k8(cl.Kernel("args8")) {
    const float zero = 0;
    for (cl_mem m : {a, b, c, d}) {
      Check(clEnqueueFillBuffer(cl.queue, m, &zero, sizeof(zero), 0, 64, 0, nullptr, nullptr), "clEnqueueFillBuffer");
    }
    Finish();
  }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;
  ~Raw() {
    for (cl_kernel k : {k1, k3, k8}) clReleaseKernel(k);
    for (cl_mem m : {a, b, c, d}) clReleaseMemObject(m);
  }

  // What a careful hand-written program does: every call's error checked.
  template <int N>
  [[gnu::always_inline]] void Launch() {
    LaunchSized<N>(kLaunchThreads, 1);
  }
  template <int N>
  [[gnu::always_inline]] void LaunchSized(std::size_t threads, std::size_t blocks) {
    static_assert(N == 1 || N == 3 || N == 8);
    cl_kernel kernel = N == 1 ? k1 : N == 3 ? k3 : k8;
    Arg(kernel, 0, a);
    if constexpr (N == 3) {
      Arg(kernel, 1, e);
      Arg(kernel, 2, g);
    }
    if constexpr (N == 8) {
      Arg(kernel, 1, b);
      Arg(kernel, 2, c);
      Arg(kernel, 3, d);
      Arg(kernel, 4, e);
      Arg(kernel, 5, f);
      Arg(kernel, 6, g);
      Arg(kernel, 7, h);
    }
    const std::size_t global = blocks * threads, local = threads;
    if (clEnqueueNDRangeKernel(cl.queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr) != CL_SUCCESS) {
      Die("clEnqueueNDRangeKernel");
    }
  }
  void Finish() { Check(clFinish(cl.queue), "clFinish"); }

 private:
  template <typename T>
  static void Arg(cl_kernel kernel, cl_uint index, const T& value) {
    if (clSetKernelArg(kernel, index, sizeof(T), &value) != CL_SUCCESS) Die("clSetKernelArg");
  }
};

}  // namespace bench
