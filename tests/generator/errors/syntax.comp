// A GLSL syntax error: glslangValidator's ERROR: FILE:LINE: becomes FILE:LINE: error:.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { float data[]; };
void main() {
  data[gl_GlobalInvocationID.x] = ;  // error-line
}
