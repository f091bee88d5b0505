// An error in a CUDA kernel body, which libclang skips: nvcc reports it and
// the generator rewrites its FILE(LINE) into FILE:LINE.
extern "C" __global__ void broken(float* x) {
  x[0] = not_declared_anywhere;  // error-line
}
