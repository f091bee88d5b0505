// Pair 5, OpenCL: the program of se_opencl.cpp written on raw CLHPP.
#include <CL/opencl.hpp>

constexpr const char* kSource = "__kernel void scale(float a, __global float* x) { x[get_global_id(0)] *= a; }";

int main() {
  cl::Context context(CL_DEVICE_TYPE_DEFAULT);
  cl::CommandQueue queue(context);
  cl::Program program(context, kSource, /*build=*/true);
  cl::Buffer x(context, CL_MEM_READ_WRITE, 64 * sizeof(float));
  cl::KernelFunctor<float, cl::Buffer> scale(program, "scale");
  scale(cl::EnqueueArgs(queue, cl::NDRange(64), cl::NDRange(64)), 2.0f, x);
  return queue.finish() == CL_SUCCESS ? 0 : 1;
}
