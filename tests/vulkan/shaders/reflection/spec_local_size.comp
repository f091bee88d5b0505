// The workgroup size is set by specialization constants 3, 4 and 7.
#version 450
layout(local_size_x_id = 3, local_size_y_id = 4, local_size_z_id = 7) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
void main() { data[gl_LocalInvocationIndex] = gl_WorkGroupSize.x; }
