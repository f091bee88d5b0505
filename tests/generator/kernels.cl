// Kernels for the generated-header tests (generator_opencl_test.cpp): every
// scalar width, every address space, structs and vectors by value.

typedef struct {
  float scale;
  int offset;
} Affine;

struct Pair {
  double weight;
  uint index;
  short tag[3];
};

// Each scalar, widened to double, into out[0..9].
__kernel void scalars(char c, uchar uc, short s, ushort us, int i, uint ui, long l, ulong ul, float f, double d,
                      __global double* out) {
  out[0] = c;
  out[1] = uc;
  out[2] = s;
  out[3] = us;
  out[4] = i;
  out[5] = ui;
  out[6] = l;
  out[7] = ul;
  out[8] = f;
  out[9] = d;
}

// out[i] = in[i] + table[i % 4], staged through __local memory.
__kernel void address_spaces(__global const int* in, __constant int* table, __local int* scratch,
                             __global int* restrict out) {
  const size_t i = get_global_id(0);
  const size_t l = get_local_id(0);
  scratch[l] = in[i] + table[i % 4];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[i] = scratch[l];
}

__kernel void structs(Affine a, struct Pair p, float4 v, __global float* out) {
  out[0] = a.scale * 2.0f + (float)a.offset;
  out[1] = (float)(p.weight * (double)p.index);
  out[2] = (float)(p.tag[0] + p.tag[1] + p.tag[2]);
  out[3] = v.x + v.y + v.z + v.w;
}

// half needs cl_khr_fp16 as a value, not behind a pointer.
__kernel void halves(__global const half* in, __global float* out) {
  const size_t i = get_global_id(0);
  out[i] = vload_half(i, in);
}
