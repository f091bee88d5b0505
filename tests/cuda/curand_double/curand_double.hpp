// The query side of the cuRAND test double (curand_double.cpp), reached by
// dlsym on the libcurand.so.10 the plugin loaded.
#pragma once

#include <cstddef>

#include "../../library_double.hpp"

extern "C" {

struct SeCurandDoubleState {
  int rng_type;               // of the latest curandCreateGenerator
  int live_generators;        // created and not yet destroyed
  unsigned long long seed;    // the latest curandSetPseudoRandomGeneratorSeed
  unsigned long long offset;  // the latest curandSetGeneratorOffset
  void* stream;               // the latest curandSetStream
  int last_kind;              // 1 uniform, 2 uniform double, 3 normal, 4 normal double
  void* last_output;
  std::size_t last_count;
  double last_mean;
  double last_stddev;
  void* last_generate_stream;  // the stream bound when it ran
};

typedef void (*SeCurandDoubleStateFn)(SeCurandDoubleState* out);
}

namespace se_test {

struct CurandDoubleApi : library_double::QueryApi {
  SeCurandDoubleStateFn state = nullptr;

  bool loaded() const { return common_loaded() && state != nullptr; }

  static CurandDoubleApi Find() {
    const library_double::Query query("libcurand.so.10", "curand");
    CurandDoubleApi api;
    api.FindCommon(query);
    query.Find("state", api.state);
    return api;
  }
};

}  // namespace se_test
