// Two shared arrays sized by specialization constants (5 declared before 2,
// so the order of the parameters comes from the constant ids), and one of
// fixed size that is no parameter.
#version 450
layout(local_size_x = 16, local_size_y = 4, local_size_z = 2) in;
layout(constant_id = 5) const uint kScratchCount = 1;
layout(constant_id = 2) const uint kTileCount = 1;
shared int scratch[kScratchCount];
shared float tile[kTileCount];
shared vec4 fixed_part[8];
layout(set = 0, binding = 0) buffer Out { float result[]; };
void main() {
  uint i = gl_LocalInvocationIndex;
  scratch[i % kScratchCount] = int(i);
  tile[i % kTileCount] = float(i);
  fixed_part[i % 8] = vec4(i);
  barrier();
  result[i] = tile[0] + float(scratch[0]) + fixed_part[0].x;
}
