// Bindings neither count the buffers (0, 1) nor are their positions in the
// parameter list (2 buffers and 1 push constant: positions 0 to 2).
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer In { float source[]; };
layout(set = 0, binding = 5) buffer Out { float result[]; };  // error-line
layout(push_constant) uniform Params {
  uint n;
};
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < n) result[i] = source[i];
}
