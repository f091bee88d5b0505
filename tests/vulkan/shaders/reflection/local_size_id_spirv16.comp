// Compiled for SPIR-V 1.6 (glslc --target-env=vulkan1.3, as every
// *_spirv16.comp here), where glslang writes the workgroup size as
// LocalSizeId operands instead of the WorkgroupSize built-in.
#version 450
layout(local_size_x_id = 3, local_size_y_id = 4, local_size_z_id = 7) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
void main() { data[gl_LocalInvocationIndex] = gl_WorkGroupSize.x; }
