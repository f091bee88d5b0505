// NVTX on the CUDA backend (docs/cuda.md, "NVTX"): under a profiler that
// injects itself into NVTX (Nsight Systems sets NVTX_INJECTION64_PATH), every
// stream operation and every se::trace::Range becomes an NVTX range of the
// domain "streamexecutor", and Stream::SetName names the CUstream.
//
// NVTX 3 is header-only and ships with the toolkit (<nvtx3/...>): its calls
// cost a pointer test while no tool is attached, and this backend does not
// even make them then, since the annotation sink (core/trace.hpp) is set only
// when the environment names a tool. Where the toolkit's NVTX headers are not
// found (or STREAMEXECUTOR_CUDA_NO_NVTX is defined), the backend compiles
// without NVTX: no ranges, and Stream::SetName names the stream in traces only.
#pragma once

#include <cuda.h>

#include <cstdlib>
#include <string>

#include "streamexecutor/core/trace.hpp"
#include "streamexecutor/cuda/state.hpp"

#if !defined(STREAMEXECUTOR_CUDA_NO_NVTX) && __has_include(<nvtx3/nvToolsExt.h>) && \
    __has_include(<nvtx3/nvToolsExtCuda.h>)
// NVTX's own warnings are not the consumer's business, whatever -I path found it.
#if !defined(NVTX_AS_SYSTEM_HEADER)
#define NVTX_AS_SYSTEM_HEADER
#define STREAMEXECUTOR_NVTX_AS_SYSTEM_HEADER_SET
#endif
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>
#if defined(STREAMEXECUTOR_NVTX_AS_SYSTEM_HEADER_SET)
#undef NVTX_AS_SYSTEM_HEADER
#undef STREAMEXECUTOR_NVTX_AS_SYSTEM_HEADER_SET
#endif
#define STREAMEXECUTOR_CUDA_WITH_NVTX 1
#endif

namespace streamexecutor::cuda_detail {

#if defined(STREAMEXECUTOR_CUDA_WITH_NVTX)

// The library's domain, made once when a tool is attached; null when the
// tool has no domains, and the default domain's calls are used instead.
inline nvtxDomainHandle_t& NvtxDomain() {
  static nvtxDomainHandle_t domain = nullptr;
  return domain;
}

inline void NvtxDomainPush(const char* name) noexcept {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name;
  nvtxDomainRangePushEx(NvtxDomain(), &attributes);
}
inline void NvtxDomainPop() noexcept { nvtxDomainRangePop(NvtxDomain()); }
inline void NvtxPush(const char* name) noexcept { nvtxRangePushA(name); }
inline void NvtxPop() noexcept { nvtxRangePop(); }

// Called once, by cuda::InitPlatform. Without a tool named in the
// environment nothing is set, so the launch path keeps its one test.
inline void AttachNvtx() {
  const char* tool = std::getenv(sizeof(void*) == 4 ? "NVTX_INJECTION32_PATH" : "NVTX_INJECTION64_PATH");
  if (tool == nullptr || tool[0] == '\0') return;
  nvtxInitialize(nullptr);  // loads the tool here, on the cold path, not inside the first launch
  NvtxDomain() = nvtxDomainCreateA("streamexecutor");
  trace::detail::AnnotationSink sink;
  sink.push = NvtxDomain() != nullptr ? &NvtxDomainPush : &NvtxPush;
  sink.pop = NvtxDomain() != nullptr ? &NvtxDomainPop : &NvtxPop;
  trace::detail::SetAnnotationSink(sink);
}

// se::cuda derives from this: StreamNameBackend<cuda>.
struct NvtxOperations {
  // The name the tool shows for the stream's row; without a tool, NVTX
  // makes the call a no-op.
  static void SetStreamName(StreamState*& stream, const std::string& name) {
    if (stream != nullptr) nvtxNameCuStreamA(stream->stream, name.c_str());
  }
};

#else

inline void AttachNvtx() {}
struct NvtxOperations {};

#endif  // STREAMEXECUTOR_CUDA_WITH_NVTX

}  // namespace streamexecutor::cuda_detail
