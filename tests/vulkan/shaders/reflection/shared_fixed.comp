// A shared array of fixed size: it cannot stand for a SharedDeviceMemory parameter.
#version 450
layout(local_size_x = 64) in;
shared float tile[64];
layout(set = 0, binding = 0) buffer Out { float result[]; };
void main() {
  tile[gl_LocalInvocationIndex] = 1.0;
  barrier();
  result[gl_LocalInvocationIndex] = tile[0];
}
