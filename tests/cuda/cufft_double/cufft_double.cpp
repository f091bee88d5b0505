// A recording test double of cuFFT, built as libcufft.so.12 in a folder of
// its own: with that folder (and the counting driver double's) first on
// LD_LIBRARY_PATH, se::cuda::kCuFftPlugin runs against it on machines with
// no GPU. It records the plans made (cufftPlanMany's layout arguments too), the stream bound and each exec call's
// arguments; it computes no transform (that is cuFFT's, on a GPU).
#include <cufft.h>

#include <map>
#include <mutex>
#include <string>

#include "../../library_double.hpp"
#include "cufft_double.hpp"

namespace {

struct Record : library_double::CallLog<cufftResult, CUFFT_SUCCESS> {
  SeCufftDoubleState state{};
  int next_handle = 1;
};

Record& TheRecord() {
  static Record record;
  return record;
}

cufftResult Enter(const char* name) { return TheRecord().Enter(name); }

cufftResult Plan(const char* name, cufftHandle* plan, int rank, int nx, int ny, int nz, cufftType type) {
  if (const cufftResult s = Enter(name); s != CUFFT_SUCCESS) return s;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  *plan = r.next_handle++;
  r.state.live_plans += 1;
  r.state.plan_rank = rank;
  r.state.plan_dims[0] = nx;
  r.state.plan_dims[1] = ny;
  r.state.plan_dims[2] = nz;
  r.state.plan_type = static_cast<int>(type);
  return CUFFT_SUCCESS;
}

cufftResult Exec(const char* name, cufftHandle plan, const void* in, const void* out, int direction) {
  if (const cufftResult s = Enter(name); s != CUFFT_SUCCESS) return s;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.exec_handle = plan;
  r.state.exec_input = in;
  r.state.exec_output = out;
  r.state.exec_direction = direction;
  r.state.exec_stream = r.state.stream;
  return CUFFT_SUCCESS;
}

}  // namespace

extern "C" {

cufftResult cufftPlan1d(cufftHandle* plan, int nx, cufftType type, int batch) {
  TheRecord().state.plan_batch = batch;
  return Plan("cufftPlan1d", plan, 1, nx, 0, 0, type);
}
cufftResult cufftPlan2d(cufftHandle* plan, int nx, int ny, cufftType type) {
  return Plan("cufftPlan2d", plan, 2, nx, ny, 0, type);
}
cufftResult cufftPlan3d(cufftHandle* plan, int nx, int ny, int nz, cufftType type) {
  return Plan("cufftPlan3d", plan, 3, nx, ny, nz, type);
}
cufftResult cufftPlanMany(cufftHandle* plan, int rank, int* n, int* inembed, int istride, int idist, int* onembed,
                          int ostride, int odist, cufftType type, int batch) {
  if (const cufftResult s = Enter("cufftPlanMany"); s != CUFFT_SUCCESS) return s;
  if (rank < 1 || rank > 3 || n == nullptr || batch < 1) return CUFFT_INVALID_VALUE;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  *plan = r.next_handle++;
  r.state.live_plans += 1;
  r.state.plan_rank = rank;
  r.state.plan_type = static_cast<int>(type);
  r.state.plan_batch = batch;
  for (int i = 0; i < 3; ++i) {
    r.state.plan_dims[i] = i < rank ? n[i] : 0;
    r.state.many_n[i] = i < rank ? n[i] : 0;
    r.state.many_inembed[i] = inembed == nullptr ? -1 : i < rank ? inembed[i] : 0;
    r.state.many_onembed[i] = onembed == nullptr ? -1 : i < rank ? onembed[i] : 0;
  }
  r.state.many_istride = istride;
  r.state.many_idist = idist;
  r.state.many_ostride = ostride;
  r.state.many_odist = odist;
  return CUFFT_SUCCESS;
}
cufftResult cufftDestroy(cufftHandle) {
  if (const cufftResult s = Enter("cufftDestroy"); s != CUFFT_SUCCESS) return s;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.live_plans -= 1;
  return CUFFT_SUCCESS;
}
cufftResult cufftSetStream(cufftHandle, cudaStream_t stream) {
  if (const cufftResult s = Enter("cufftSetStream"); s != CUFFT_SUCCESS) return s;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.stream = stream;
  return CUFFT_SUCCESS;
}
cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* in, cufftComplex* out, int direction) {
  return Exec("cufftExecC2C", plan, in, out, direction);
}
cufftResult cufftExecR2C(cufftHandle plan, cufftReal* in, cufftComplex* out) {
  return Exec("cufftExecR2C", plan, in, out, 0);
}
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* in, cufftReal* out) {
  return Exec("cufftExecC2R", plan, in, out, 0);
}
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* in, cufftDoubleComplex* out, int direction) {
  return Exec("cufftExecZ2Z", plan, in, out, direction);
}
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal* in, cufftDoubleComplex* out) {
  return Exec("cufftExecD2Z", plan, in, out, 0);
}
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex* in, cufftDoubleReal* out) {
  return Exec("cufftExecZ2D", plan, in, out, 0);
}

void se_cufft_double_state(SeCufftDoubleState* out) { TheRecord().Snapshot(TheRecord().state, out); }

}  // extern "C"

SE_LIBRARY_DOUBLE_EXPORTS(cufft, TheRecord())
