// The generator's GLSL kernel (tests/generator/generator_vulkan_test.cpp): every
// push-constant scalar width lavapipe has, with the one buffer bound at its
// position in the parameter list, so that the scalars come on either side of it:
// (int a, double* out, uint b, int64_t c, uint64_t d, float e, double f, int16_t g, uint8_t h).
// The block is 43 bytes: the backend pads its push-constant range to whole words.
// se:kernel glsl_scalars
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 1) buffer Out { double out_values[]; };
layout(push_constant) uniform Scalars {
  int a;
  uint b;
  int64_t c;
  uint64_t d;
  float e;
  double f;
  int16_t g;
  uint8_t h;
};
void main() {
  if (gl_GlobalInvocationID.x != 0) return;
  out_values[0] = double(a);
  out_values[1] = double(b);
  out_values[2] = double(c);
  out_values[3] = double(d);
  out_values[4] = double(e);
  out_values[5] = f;
  out_values[6] = double(g);
  out_values[7] = double(h);
}
