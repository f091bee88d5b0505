// The query side of the NCCL test double (nccl_double.cpp), reached by dlsym
// on the libnccl.so.2 the collectives loaded.
#pragma once

#include "../../library_double.hpp"

extern "C" {

struct SeNcclDoubleState {
  int live_comms;      // initialized and not yet destroyed or aborted
  int aborts;          // ncclCommAbort calls
  int last_init_rank;  // of the latest ncclCommInitRank
  int last_init_size;
  unsigned long long last_init_id;  // the id's number (ncclGetUniqueId counts from 1)
  char last_call[32];               // the latest operation: "ncclAllReduce", ...
  void* last_stream;                // the cudaStream_t it was queued on
  unsigned long long last_count;
  int last_type;  // ncclDataType_t
  int last_op;    // ncclRedOp_t, -1 for operations without one
  int last_peer;  // root or peer, -1 for operations without one
};

typedef void (*SeNcclDoubleStateFn)(SeNcclDoubleState* out);
// From now on ncclCommGetAsyncError reports `result` for every communicator
// (ncclSuccess: none), as NCCL does when a peer fails during an operation.
typedef void (*SeNcclDoubleSetAsyncErrorFn)(int result);
}

namespace se_test {

struct NcclDoubleApi : library_double::QueryApi {
  SeNcclDoubleStateFn state = nullptr;
  SeNcclDoubleSetAsyncErrorFn set_async_error = nullptr;

  bool loaded() const { return common_loaded() && state != nullptr && set_async_error != nullptr; }

  static NcclDoubleApi Find() {
    const library_double::Query query("libnccl.so.2", "nccl");
    NcclDoubleApi api;
    api.FindCommon(query);
    query.Find("state", api.state);
    query.Find("set_async_error", api.set_async_error);
    return api;
  }
};

}  // namespace se_test
