// Pair 5, CUDA: the program of se_cuda.cpp written on raw cuda.h.
#include <cuda.h>

extern const char* const kPtx;  // the kernel's PTX; compile-only unit

int main() {
  CUdevice device;
  CUcontext context;
  CUmodule module;
  CUfunction scale;
  CUstream stream;
  CUdeviceptr x;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS || cuCtxSetCurrent(context) != CUDA_SUCCESS ||
      cuModuleLoadData(&module, kPtx) != CUDA_SUCCESS || cuModuleGetFunction(&scale, module, "scale") != CUDA_SUCCESS ||
      cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      cuMemAlloc(&x, 64 * sizeof(float)) != CUDA_SUCCESS) {
    return 1;
  }
  float a = 2.0f;
  void* params[] = {&a, &x};
  if (cuLaunchKernel(scale, 1, 1, 1, 64, 1, 1, 0, stream, params, nullptr) != CUDA_SUCCESS) return 1;
  return cuStreamSynchronize(stream) == CUDA_SUCCESS ? 0 : 1;
}
