// The query side of the cuRAND test double (curand_double.cpp), reached by
// dlsym on the libcurand.so.10 the plugin loaded.
#pragma once

#include <dlfcn.h>

#include <cstddef>

extern "C" {

struct SeCurandDoubleState {
  int rng_type;                 // of the latest curandCreateGenerator
  int live_generators;          // created and not yet destroyed
  unsigned long long seed;      // the latest curandSetPseudoRandomGeneratorSeed
  unsigned long long offset;    // the latest curandSetGeneratorOffset
  void* stream;                 // the latest curandSetStream
  int last_kind;                // 1 uniform, 2 uniform double, 3 normal, 4 normal double
  void* last_output;
  std::size_t last_count;
  double last_mean;
  double last_stddev;
  void* last_generate_stream;   // the stream bound when it ran
};

typedef long (*SeCurandDoubleCallsFn)(const char* name);
typedef void (*SeCurandDoubleStateFn)(SeCurandDoubleState* out);
typedef void (*SeCurandDoubleFailNextFn)(const char* name, int status);
}

namespace se_test {

struct CurandDoubleApi {
  SeCurandDoubleCallsFn calls = nullptr;
  SeCurandDoubleStateFn state = nullptr;
  SeCurandDoubleFailNextFn fail_next = nullptr;

  bool loaded() const { return calls != nullptr && state != nullptr && fail_next != nullptr; }

  // RTLD_NOLOAD: the library the plugin already opened.
  static CurandDoubleApi Find() {
    CurandDoubleApi api;
    void* library = dlopen("libcurand.so.10", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) return api;
    api.calls = reinterpret_cast<SeCurandDoubleCallsFn>(dlsym(library, "se_curand_double_calls"));
    api.state = reinterpret_cast<SeCurandDoubleStateFn>(dlsym(library, "se_curand_double_state"));
    api.fail_next = reinterpret_cast<SeCurandDoubleFailNextFn>(dlsym(library, "se_curand_double_fail_next"));
    dlclose(library);
    return api;
  }
};

}  // namespace se_test
