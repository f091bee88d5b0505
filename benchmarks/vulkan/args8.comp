// args8(a, b, c, d, e, f, g, h): four buffers, two floats and two ints.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) readonly buffer C { float c[]; };
layout(set = 0, binding = 3) readonly buffer D { float d[]; };
layout(push_constant) uniform Scalars {
  float e;
  float f;
  int g;
  int h;
};
void main() {
  uint i = gl_GlobalInvocationID.x % 16;
  a[i] += b[i] * e + c[i] * f + d[i] * float(g + h);
}
