// What the canned families built on CLBlast share: how its
// status codes read and which ErrorCode each becomes, and element offsets of
// views (CLBlast takes a cl_mem and an offset in elements).
#pragma once

#include <clblast.h>

#include <cstddef>
#include <string_view>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor::canned_detail {

inline std::string_view ClBlastStatusName(clblast::StatusCode code) {
  switch (code) {
    case clblast::StatusCode::kSuccess: return "kSuccess";
    case clblast::StatusCode::kOpenCLCompilerNotAvailable: return "kOpenCLCompilerNotAvailable";
    case clblast::StatusCode::kTempBufferAllocFailure: return "kTempBufferAllocFailure";
    case clblast::StatusCode::kOpenCLOutOfResources: return "kOpenCLOutOfResources";
    case clblast::StatusCode::kOpenCLOutOfHostMemory: return "kOpenCLOutOfHostMemory";
    case clblast::StatusCode::kOpenCLBuildProgramFailure: return "kOpenCLBuildProgramFailure";
    case clblast::StatusCode::kInvalidValue: return "kInvalidValue";
    case clblast::StatusCode::kInvalidCommandQueue: return "kInvalidCommandQueue";
    case clblast::StatusCode::kInvalidMemObject: return "kInvalidMemObject";
    case clblast::StatusCode::kNotImplemented: return "kNotImplemented";
    case clblast::StatusCode::kInvalidDimension: return "kInvalidDimension";
    case clblast::StatusCode::kInvalidLeadDimA: return "kInvalidLeadDimA";
    case clblast::StatusCode::kInvalidLeadDimB: return "kInvalidLeadDimB";
    case clblast::StatusCode::kInvalidLeadDimC: return "kInvalidLeadDimC";
    case clblast::StatusCode::kInsufficientMemoryA: return "kInsufficientMemoryA";
    case clblast::StatusCode::kInsufficientMemoryB: return "kInsufficientMemoryB";
    case clblast::StatusCode::kInsufficientMemoryC: return "kInsufficientMemoryC";
    case clblast::StatusCode::kInsufficientMemoryX: return "kInsufficientMemoryX";
    case clblast::StatusCode::kInsufficientMemoryY: return "kInsufficientMemoryY";
    case clblast::StatusCode::kNoDoublePrecision: return "kNoDoublePrecision";
    case clblast::StatusCode::kInvalidLocalMemUsage: return "kInvalidLocalMemUsage";
    case clblast::StatusCode::kUnknownError: return "kUnknownError";
    default: return "a CLBlast or OpenCL status";
  }
}

// Double precision missing on the device is UNIMPLEMENTED; memory shortages
// RESOURCE_EXHAUSTED; the rest are this library's or CLBlast's bugs.
inline ErrorCode ClBlastErrorCode(clblast::StatusCode code) {
  switch (code) {
    case clblast::StatusCode::kNoDoublePrecision: return ErrorCode::kUnimplemented;
    case clblast::StatusCode::kOpenCLOutOfHostMemory:
    case clblast::StatusCode::kTempBufferAllocFailure:
    case clblast::StatusCode::kOpenCLOutOfResources: return ErrorCode::kResourceExhausted;
    default: return ErrorCode::kInternal;
  }
}

template <typename T>
std::size_t Offset(const DeviceMemoryBase& memory) {
  return static_cast<std::size_t>(memory.offset() / sizeof(T));
}

}  // namespace streamexecutor::canned_detail
