// A buffer in descriptor set 1: only set 0 is used.
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 1, binding = 0) buffer B { float b[]; };
void main() { b[0] = a[0]; }
