// 160 bytes of push constants: over the 128 that every device has.
#version 450
layout(local_size_x = 1) in;
layout(push_constant) uniform Params { float coefficients[40]; };
layout(set = 0, binding = 0) buffer Out { float result[]; };
void main() { result[0] = coefficients[39]; }
