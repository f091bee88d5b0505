// out[block] = the sum of the block's slice of src (zero past n), by a tree
// over a static shared array with a barrier per step: BlockSumKernel.
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Scalars { uint n; };
shared float tile[256];
void main() {
  uint t = gl_LocalInvocationID.x;
  uint size = gl_WorkGroupSize.x;
  uint i = gl_GlobalInvocationID.x;
  tile[t] = i < n ? src[i] : 0.0;
  barrier();
  for (uint stride = 1; stride < size; stride *= 2) {
    if (t % (2 * stride) == 0 && t + stride < size) tile[t] += tile[t + stride];
    barrier();
  }
  if (t == 0) dst[gl_WorkGroupID.x] = tile[0];
}
