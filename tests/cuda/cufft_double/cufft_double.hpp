// The query side of the cuFFT test double (cufft_double.cpp), reached by
// dlsym on the libcufft.so.12 the plugin loaded.
#pragma once

#include <dlfcn.h>

extern "C" {

struct SeCufftDoubleState {
  int live_plans;       // made and not yet destroyed
  int plan_rank;        // of the latest cufftPlan{1,2,3}d
  int plan_dims[3];
  int plan_type;        // cufftType
  int plan_batch;       // of the latest cufftPlan1d
  void* stream;         // the latest cufftSetStream
  int exec_handle;      // of the latest cufftExec*
  const void* exec_input;
  const void* exec_output;
  int exec_direction;   // CUFFT_FORWARD (-1), CUFFT_INVERSE (1), 0 for real transforms
  void* exec_stream;    // the stream bound when it ran
  // The latest cufftPlanMany's arguments, as given (also sets plan_rank,
  // plan_dims from n[], plan_type and plan_batch); embeds are 0 past the rank,
  // and all -1 where the call passed a null embed.
  int many_n[3];
  int many_inembed[3];
  int many_istride;
  int many_idist;
  int many_onembed[3];
  int many_ostride;
  int many_odist;
};

typedef long (*SeCufftDoubleCallsFn)(const char* name);
typedef void (*SeCufftDoubleStateFn)(SeCufftDoubleState* out);
typedef void (*SeCufftDoubleFailNextFn)(const char* name, int result);
}

namespace se_test {

struct CufftDoubleApi {
  SeCufftDoubleCallsFn calls = nullptr;
  SeCufftDoubleStateFn state = nullptr;
  SeCufftDoubleFailNextFn fail_next = nullptr;

  bool loaded() const { return calls != nullptr && state != nullptr && fail_next != nullptr; }

  static CufftDoubleApi Find() {
    CufftDoubleApi api;
    void* library = dlopen("libcufft.so.12", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) return api;
    api.calls = reinterpret_cast<SeCufftDoubleCallsFn>(dlsym(library, "se_cufft_double_calls"));
    api.state = reinterpret_cast<SeCufftDoubleStateFn>(dlsym(library, "se_cufft_double_state"));
    api.fail_next = reinterpret_cast<SeCufftDoubleFailNextFn>(dlsym(library, "se_cufft_double_fail_next"));
    dlclose(library);
    return api;
  }
};

}  // namespace se_test
