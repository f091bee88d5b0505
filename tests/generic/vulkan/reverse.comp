// One thread per block reverses its block's slice through shared memory sized
// at launch (SharedDeviceMemory<int>, a specialization constant): ReverseKernel.
#version 450
layout(local_size_x_id = 100, local_size_y_id = 101, local_size_z_id = 102) in;
// Position 1 of (data, scratch, width): the constant id is the position.
layout(constant_id = 1) const uint kScratchCount = 1;
layout(set = 0, binding = 0) buffer Data { int data[]; };
shared int scratch[kScratchCount];
layout(push_constant) uniform Scalars { uint width; };
void main() {
  uint base = gl_WorkGroupID.x * width;
  for (uint i = 0; i < width; ++i) scratch[i] = data[base + i];
  for (uint i = 0; i < width; ++i) data[base + i] = scratch[width - 1 - i];
}
