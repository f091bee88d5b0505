// A buffer block with two members: parameters need blocks of one array.
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { uint count; float a[]; };
void main() { a[0] = float(count); }
