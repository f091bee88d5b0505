// The saxpy kernel in OpenCL C, for saxpy_generated.cpp: tools/se_kernel_header.py
// embeds it, with saxpy.cu's PTX and fatbin, in saxpy.gpu.h at build time.
__kernel void saxpy(float a, __global const float *x, __global float *y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
