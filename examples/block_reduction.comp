// block_sum for the Vulkan backend: each block sums its slice of `src` into
// partial[block] through shared memory sized at launch (the SharedDeviceMemory
// parameter is the array sized by constant 1) with a barrier per step.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint kShared = 1;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Partial { float partial[]; };
layout(push_constant) uniform Scalars { uint n; };
shared float sh[kShared];
void main() {
  uint t = gl_LocalInvocationID.x;
  uint i = gl_GlobalInvocationID.x;
  sh[t] = i < n ? src[i] : 0.0;
  barrier();
  for (uint stride = gl_WorkGroupSize.x / 2; stride > 0; stride /= 2) {
    if (t < stride) sh[t] += sh[t + stride];
    barrier();
  }
  if (t == 0) partial[gl_WorkGroupID.x] = sh[0];
}
