// add_mystery_value for the Vulkan backend: compiled at build time into a
// header of SPIR-V words (add_mystery_value.spv.h), loaded from memory.
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer Result { float result_loc[]; };
layout(push_constant) uniform Scalars { float float_literal; };
void main() { result_loc[0] = float_literal + 123.0; }
