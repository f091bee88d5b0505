// y[i] = a * x[i] + y[i] for i < n: SaxpyKernel of test_kernels.hpp. Bindings are
// the parameters' positions (a is 0, x 1, y 2, n 3), so that an untyped load
// reads the same parameter list (docs/vulkan.md).
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
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
