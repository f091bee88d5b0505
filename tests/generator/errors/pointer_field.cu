// Valid CUDA that a generated header cannot mirror: a pointer inside a struct
// taken by value has no DeviceMemory counterpart.
struct View {
  float* data;  // error-line
  int n;
};
extern "C" __global__ void uses_view(View v) { v.data[0] = 0; }
