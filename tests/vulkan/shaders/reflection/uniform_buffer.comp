// A uniform buffer at binding 0: parameters are storage buffers only.
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform A { vec4 a[4]; };
layout(set = 0, binding = 1) buffer B { vec4 b[]; };
void main() { b[0] = a[0]; }
