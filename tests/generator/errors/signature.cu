// A syntax error in a kernel's parameter list: libclang reports it.
extern "C" __global__ void broken(float* x, ) {}  // error-line
