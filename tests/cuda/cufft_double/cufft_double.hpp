// The query side of the cuFFT test double (cufft_double.cpp), reached by
// dlsym on the libcufft.so.12 the plugin loaded.
#pragma once

#include "../../library_double.hpp"

extern "C" {

struct SeCufftDoubleState {
  int live_plans;  // made and not yet destroyed
  int plan_rank;   // of the latest cufftPlan{1,2,3}d
  int plan_dims[3];
  int plan_type;    // cufftType
  int plan_batch;   // of the latest cufftPlan1d
  void* stream;     // the latest cufftSetStream
  int exec_handle;  // of the latest cufftExec*
  const void* exec_input;
  const void* exec_output;
  int exec_direction;  // CUFFT_FORWARD (-1), CUFFT_INVERSE (1), 0 for real transforms
  void* exec_stream;   // the stream bound when it ran
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

typedef void (*SeCufftDoubleStateFn)(SeCufftDoubleState* out);
}

namespace se_test {

struct CufftDoubleApi : library_double::QueryApi {
  SeCufftDoubleStateFn state = nullptr;

  bool loaded() const { return common_loaded() && state != nullptr; }

  static CufftDoubleApi Find() {
    const library_double::Query query("libcufft.so.12", "cufft");
    CufftDoubleApi api;
    api.FindCommon(query);
    query.Find("state", api.state);
    return api;
  }
};

}  // namespace se_test
