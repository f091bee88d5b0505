// saxpy for the Vulkan backend: y[i] = a * x[i] + y[i] for i < n. The block
// size is chosen at launch (local_size_x_id); x and y are the storage buffers,
// a and n the push constants, in the TypedKernel's order.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Scalars {
  float a;
  uint n;
};
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
