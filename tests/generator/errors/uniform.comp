// A uniform buffer is no kernel parameter: DeviceMemory<T> is a storage buffer.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { float data[]; };
layout(set = 0, binding = 1) uniform Factors { float factor; };  // error-line
void main() {
  data[gl_GlobalInvocationID.x] *= factor;
}
