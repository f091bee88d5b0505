// Two uint buffers and one uint push constant.
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { uint a[]; };
layout(set = 0, binding = 1) buffer B { uint b[]; };
layout(push_constant) uniform Params { uint n; };
void main() { if (gl_GlobalInvocationID.x < n) b[gl_GlobalInvocationID.x] = a[gl_GlobalInvocationID.x]; }
