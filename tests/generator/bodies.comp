// The generator's second GLSL kernel (tests/generator/generator_vulkan_test.cpp),
// named after its file: a struct and a vector in buffers, and a shared array.
// Its bindings count the buffers (0, 1) and the shared array's constant id
// would collide with them as a position, so the generated parameter list is
// the buffers, the push constants, then the shared array:
// (Body* items, vec4* moments, float scale, uint n, shared float scratch[]).
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint kScratch = 1;
struct Body {
  vec4 position;
  float mass;
  uint id;
};
layout(set = 0, binding = 0) readonly buffer Bodies { Body items[]; };
layout(set = 0, binding = 1) writeonly buffer Moments { vec4 moments[]; };
layout(push_constant) uniform Params {
  float scale;
  uint n;
};
shared float scratch[kScratch];
void main() {
  uint i = gl_GlobalInvocationID.x;
  uint lane = gl_LocalInvocationID.x;
  scratch[lane] = i < n ? items[i].mass : 0.0;
  barrier();
  if (i >= n) return;
  // The neighbour's mass went through shared memory: the array is really there.
  float neighbour = scratch[(lane + 1) % gl_WorkGroupSize.x];
  moments[i] = vec4(items[i].position.xyz * items[i].mass * scale, neighbour + float(items[i].id));
}
