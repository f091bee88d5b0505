// out[linear thread id] = packed (block, thread) coordinates: CoordinatesKernel.
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) writeonly buffer Out { uint result[]; };
void main() {
  uvec3 b = gl_WorkGroupID;
  uvec3 t = gl_LocalInvocationID;
  uint block = (b.z * gl_NumWorkGroups.y + b.y) * gl_NumWorkGroups.x + b.x;
  uint thread = (t.z * gl_WorkGroupSize.y + t.y) * gl_WorkGroupSize.x + t.x;
  uint per_block = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
  result[block * per_block + thread] = (b.x << 24) | (b.y << 20) | (b.z << 16) | (t.x << 8) | (t.y << 4) | t.z;
}
