// Buffers of vec4, of a struct and of vec3: they stand for C++ types of the
// same stride (a vec3 array has a stride of 16 bytes).
#version 450
layout(local_size_x = 1) in;
struct Particle { vec3 position; float mass; };
layout(set = 0, binding = 0) buffer A { vec4 a[]; };
layout(set = 0, binding = 1) buffer B { Particle particles[]; };
layout(set = 0, binding = 2) buffer C { vec3 c[]; };
void main() {
  a[0] = vec4(particles[0].position, particles[0].mass);
  c[0] = a[1].xyz;
}
