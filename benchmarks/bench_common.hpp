// Shared by the benchmark programs: the naming scheme that report.py pairs
// on, a timer for batches, and (with OpenCL) a hand-written raw OpenCL setup
// that owns its own context and queue, as a program without this library would.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace bench {

// "<pair>/<case>/<side>": report.py groups by everything before the last
// slash and divides the "ours" side by the others.
inline std::string Name(const std::string& pair, const std::string& what, const std::string& side) {
  return pair + "/" + what + "/" + side;
}

inline double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A benchmark whose iteration is a batch of operations says how many:
// report.py divides its time by this counter to get the time per operation.
inline void PerBatch(benchmark::State& state, int batch) { state.counters["batch"] = batch; }

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "benchmark setup failed: %s\n", what.c_str());
  std::exit(1);
}

// The console output, plus each pair's times by side ("<pair>/<side>": the
// median where there are repetitions) for a subclass's Finalize to print ratios.
class PairReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
      const std::string name = run.run_name.function_name;
      const auto slash = name.rfind('/');
      times_[name.substr(0, slash)][name.substr(slash + 1)] = run.GetAdjustedRealTime();
    }
  }

 protected:
  std::map<std::string, std::map<std::string, double>> times_;
};

// An empty one-argument CUDA kernel, `empty(int*)`, for the command-buffer pairs.
inline constexpr const char* kEmptyPtx = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry empty(.param .u64 p) { ret; }
)";

}  // namespace bench

#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include <CL/cl.h>

namespace bench {

// The launch-path kernels, with 1, 3 and 8 arguments. Their bodies are as
// small as possible so that the driver and the library are what is measured.
inline constexpr const char* kLaunchKernels = R"(
__kernel void args1(__global float* a) { if (get_global_id(0) == 0) a[0] += 1.0f; }
__kernel void args3(__global float* a, float b, int c) { if (get_global_id(0) == 0) a[0] += b * c; }
__kernel void args8(__global float* a, __global float* b, __global float* c, __global float* d,
                    float e, float f, int g, int h) {
  if (get_global_id(0) == 0) a[0] += b[0] + c[0] + d[0] + e + f + g + h;
}
)";

inline void Check(cl_int error, const char* call) {
  if (error != CL_SUCCESS) Die(std::string(call) + " returned " + std::to_string(error));
}

// The first device of the first platform that has one: the device the
// library's executor 0 is on.
struct RawOpenCL {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;

  explicit RawOpenCL(const char* source = nullptr, bool profiling = false) {
    cl_uint count = 0;
    Check(clGetPlatformIDs(0, nullptr, &count), "clGetPlatformIDs");
    std::vector<cl_platform_id> platforms(count);
    Check(clGetPlatformIDs(count, platforms.data(), nullptr), "clGetPlatformIDs");
    for (cl_platform_id p : platforms) {
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS) {
        platform = p;
        break;
      }
    }
    if (!platform) Die("no OpenCL device");
    cl_int error = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &error);
    Check(error, "clCreateContext");
    const cl_queue_properties with_profiling[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    queue = clCreateCommandQueueWithProperties(context, device, profiling ? with_profiling : nullptr, &error);
    Check(error, "clCreateCommandQueueWithProperties");
    if (source) {
      program = clCreateProgramWithSource(context, 1, &source, nullptr, &error);
      Check(error, "clCreateProgramWithSource");
      Check(clBuildProgram(program, 1, &device, nullptr, nullptr, nullptr), "clBuildProgram");
    }
  }
  RawOpenCL(const RawOpenCL&) = delete;
  RawOpenCL& operator=(const RawOpenCL&) = delete;
  ~RawOpenCL() {
    clFinish(queue);
    if (program) clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }

  cl_kernel Kernel(const char* name) const {
    cl_int error = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program, name, &error);
    Check(error, "clCreateKernel");
    return kernel;
  }
  cl_mem Buffer(std::size_t bytes) const {
    cl_int error = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &error);
    Check(error, "clCreateBuffer");
    return buffer;
  }
};

}  // namespace bench
#endif
