// NCCL, loaded at run time through the canned plugins' one loader
// (canned/detail/library.hpp), as cuBLAS is: a program built with the CUDA
// backend and collectives must start where NCCL is not installed; there an
// NCCL communicator is UNAVAILABLE, naming the library and the package, and
// se::MakeCommunicator falls back to MPI through staging. nccl.h is needed
// at build time only, for the types and each entry point's prototype.
#pragma once

#include <nccl.h>

#include <string_view>

#include "streamexecutor/canned/detail/library.hpp"
#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor::collectives_detail {

inline constexpr const char* kNcclLibraries[] = {"libnccl.so.2", "libnccl.so"};
inline constexpr canned_detail::RunTimeLibrary kNcclLibrary{
    "cuda", "NCCL", kNcclLibraries,
    "libnccl2 from NVIDIA's CUDA repository (the toolkit's lib directory also holds libnccl.so.2)"};

// Every entry point here exists since NCCL 2.13 (ncclGetLastError); the
// point-to-point calls since 2.7.
#define SE_NCCL_ENTRY_POINTS(X, A) \
  X(A, ncclGetVersion)             \
  X(A, ncclGetUniqueId)            \
  X(A, ncclCommInitRank)           \
  X(A, ncclCommDestroy)            \
  X(A, ncclCommAbort)              \
  X(A, ncclCommGetAsyncError)      \
  X(A, ncclGetErrorString)         \
  X(A, ncclGetLastError)           \
  X(A, ncclAllReduce)              \
  X(A, ncclBroadcast)              \
  X(A, ncclReduce)                 \
  X(A, ncclAllGather)              \
  X(A, ncclReduceScatter)          \
  X(A, ncclSend)                   \
  X(A, ncclRecv)

struct NcclApi {
  SE_NCCL_ENTRY_POINTS(STREAMEXECUTOR_ENTRY_POINT_MEMBER, NcclApi)
};
inline constexpr canned_detail::EntryPoint<NcclApi> kNcclEntryPoints[] = {
    SE_NCCL_ENTRY_POINTS(STREAMEXECUTOR_LISTED_ENTRY_POINT, NcclApi)};
#undef SE_NCCL_ENTRY_POINTS

// Loaded once per process; exported, so that one table serves every shared
// library that includes this header.
STREAMEXECUTOR_EXPORT inline const canned_detail::Loaded<NcclApi>& Nccl() {
  static const canned_detail::Loaded<NcclApi> load = canned_detail::Load(kNcclLibrary, kNcclEntryPoints);
  return load;
}

inline std::string_view NcclResultName(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult_t";
  }
}

// `call` failed with `result`: its name, NCCL's own text and, where a
// communicator is given, NCCL's last message about it (which says which
// argument or which peer).
inline Status NcclError(const NcclApi& api, ncclResult_t result, std::string_view call, ncclComm_t comm,
                        std::string_view context) {
  const char* last = api.ncclGetLastError != nullptr ? api.ncclGetLastError(comm) : nullptr;
  const ErrorCode code = result == ncclInvalidArgument || result == ncclInvalidUsage ? ErrorCode::kInvalidArgument
                         : result == ncclRemoteError                                 ? ErrorCode::kUnavailable
                                                                                     : ErrorCode::kInternal;
  return MakeError(code, "{} failed for {}: {} ({}){}{}", call, context, NcclResultName(result),
                   api.ncclGetErrorString != nullptr ? api.ncclGetErrorString(result) : "",
                   last != nullptr && *last != '\0' ? ": " : "", last != nullptr ? last : "");
}

inline ncclDataType_t NcclType(ElementType type) {
  switch (type) {
    case ElementType::kInt8: return ncclInt8;
    case ElementType::kUint8: return ncclUint8;
    case ElementType::kInt32: return ncclInt32;
    case ElementType::kUint32: return ncclUint32;
    case ElementType::kInt64: return ncclInt64;
    case ElementType::kUint64: return ncclUint64;
    case ElementType::kFloat: return ncclFloat32;
    default: return ncclFloat64;
  }
}

inline ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProduct: return ncclProd;
    case ReduceOp::kMin: return ncclMin;
    default: return ncclMax;
  }
}

}  // namespace streamexecutor::collectives_detail
