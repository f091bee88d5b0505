// Adds `value` to every element: AddKernel (GetSlice arguments).
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) buffer Data { int data[]; };
layout(push_constant) uniform Scalars { int value; };
void main() { data[gl_GlobalInvocationID.x] += value; }
