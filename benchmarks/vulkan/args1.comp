// The launch-path pairs' kernels on Vulkan (launch_cases.hpp): args1(a).
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer A { float a[]; };
void main() { a[gl_GlobalInvocationID.x % 16] += 1.0; }
