// A syntax error in a kernel body: libclang reports it.
__kernel void broken(__global float* x) {
  x[0] = 1.0f +;  // error-line
}
