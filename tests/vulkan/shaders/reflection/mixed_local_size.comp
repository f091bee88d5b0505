// A literal x with a specialized y: only y is set by a constant (id 1).
#version 450
layout(local_size_x = 8, local_size_y_id = 1) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
void main() { data[gl_LocalInvocationIndex] = gl_WorkGroupSize.y; }
