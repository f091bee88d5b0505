// Bindings 0 and 2: binding 1 is missing.
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
layout(set = 0, binding = 2) buffer C { float c[]; };
void main() { c[0] = a[0]; }
