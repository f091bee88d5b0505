// A shader that fixes its work-group size (8 threads): launches must use it.
#version 450
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Data { int data[]; };
layout(push_constant) uniform Scalars { int value; };
void main() { data[gl_GlobalInvocationID.x] += value; }
