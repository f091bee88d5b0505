// The kernel behind CommandBuffer::ThenIf and ThenWhile on CUDA: it sets a
// conditional node's handle from an int32 in device memory, because only
// device code can (cudaGraphSetConditional, from the device runtime). The
// build compiles it for every architecture nvcc knows, links it with
// cudadevrt and embeds the fatbin (tools/se_embed_binary.py) as
// conditional_setter.inc, which cuda/command_buffer.hpp loads per executor.
extern "C" __global__ void se_graph_set_conditional(cudaGraphConditionalHandle handle, const int* condition) {
  cudaGraphSetConditional(handle, *condition != 0 ? 1u : 0u);
}
