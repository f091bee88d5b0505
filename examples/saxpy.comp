// saxpy for the Vulkan backend: y[i] = a * x[i] + y[i] for i < n. The block
// size is chosen at launch (local_size_x_id); x and y are the storage buffers,
// bound at their positions in saxpy(a, x, y, n), and a and n the push
// constants, in order. Those positions let tools/se_kernel_header.py (and an
// untyped load) read the parameter list of saxpy_kernels.cl from the shader.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) buffer Y { float y[]; };
layout(push_constant) uniform Scalars {
  float a;
  uint n;
};
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
