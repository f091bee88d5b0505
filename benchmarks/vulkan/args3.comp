// args3(a, e, g): one buffer, a float and an int as push constants.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(push_constant) uniform Scalars {
  float e;
  int g;
};
void main() { a[gl_GlobalInvocationID.x % 16] += e * float(g); }
