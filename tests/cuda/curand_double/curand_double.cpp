// A recording test double of cuRAND, built as libcurand.so.10 in a folder of
// its own: with that folder (and the counting driver double's) first on
// LD_LIBRARY_PATH, se::cuda::kCuRandPlugin runs against it on machines with
// no GPU. It records the calls the plugin makes and their arguments, and
// fills a generate call's output with a marker (the counting driver double's
// device memory is host memory), so that the test sees where it wrote. It
// computes no random numbers: those are cuRAND's and need a GPU.
#include <curand.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../../library_double.hpp"
#include "curand_double.hpp"

namespace {

struct Generator {
  curandRngType_t type;
};

struct Record : library_double::CallLog<curandStatus_t, CURAND_STATUS_SUCCESS> {
  SeCurandDoubleState state{};
};

Record& TheRecord() {
  static Record record;
  return record;
}

curandStatus_t Enter(const char* name) { return TheRecord().Enter(name); }

template <typename T>
curandStatus_t Generate(const char* name, curandGenerator_t generator, T* out, std::size_t n, int kind, double mean,
                        double stddev, T marker) {
  if (const curandStatus_t s = Enter(name); s != CURAND_STATUS_SUCCESS) return s;
  if (generator == nullptr) return CURAND_STATUS_NOT_INITIALIZED;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.last_kind = kind;
  r.state.last_output = out;
  r.state.last_count = n;
  r.state.last_mean = mean;
  r.state.last_stddev = stddev;
  r.state.last_generate_stream = r.state.stream;
  for (std::size_t i = 0; i < n; ++i) out[i] = marker;
  return CURAND_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

curandStatus_t curandCreateGenerator(curandGenerator_t* generator, curandRngType_t rng_type) {
  if (const curandStatus_t s = Enter("curandCreateGenerator"); s != CURAND_STATUS_SUCCESS) return s;
  *generator = reinterpret_cast<curandGenerator_t>(new Generator{rng_type});
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.rng_type = static_cast<int>(rng_type);
  r.state.live_generators += 1;
  return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandDestroyGenerator(curandGenerator_t generator) {
  if (const curandStatus_t s = Enter("curandDestroyGenerator"); s != CURAND_STATUS_SUCCESS) return s;
  delete reinterpret_cast<Generator*>(generator);
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.live_generators -= 1;
  return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandSetStream(curandGenerator_t, cudaStream_t stream) {
  if (const curandStatus_t s = Enter("curandSetStream"); s != CURAND_STATUS_SUCCESS) return s;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.stream = stream;
  return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t, unsigned long long seed) {
  if (const curandStatus_t s = Enter("curandSetPseudoRandomGeneratorSeed"); s != CURAND_STATUS_SUCCESS) return s;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.seed = seed;
  return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandSetGeneratorOffset(curandGenerator_t, unsigned long long offset) {
  if (const curandStatus_t s = Enter("curandSetGeneratorOffset"); s != CURAND_STATUS_SUCCESS) return s;
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.state.offset = offset;
  return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandGenerateUniform(curandGenerator_t generator, float* out, size_t n) {
  return Generate("curandGenerateUniform", generator, out, n, 1, 0, 1, 0.25f);
}
curandStatus_t curandGenerateUniformDouble(curandGenerator_t generator, double* out, size_t n) {
  return Generate("curandGenerateUniformDouble", generator, out, n, 2, 0, 1, 0.125);
}
curandStatus_t curandGenerateNormal(curandGenerator_t generator, float* out, size_t n, float mean, float stddev) {
  return Generate("curandGenerateNormal", generator, out, n, 3, mean, stddev, mean);
}
curandStatus_t curandGenerateNormalDouble(curandGenerator_t generator, double* out, size_t n, double mean,
                                          double stddev) {
  return Generate("curandGenerateNormalDouble", generator, out, n, 4, mean, stddev, mean);
}

void se_curand_double_state(SeCurandDoubleState* out) { TheRecord().Snapshot(TheRecord().state, out); }

}  // extern "C"

SE_LIBRARY_DOUBLE_EXPORTS(curand, TheRecord())
