// OpenCL error codes as names, and the helpers that turn a failing OpenCL call
// into a Status naming the call, the error and what was being done.
#pragma once

// The backend calls the C API only, so it includes <CL/cl.h>: the C++ wrapper
// <CL/opencl.hpp> would add about 0.4 s to every consumer's unit. Consumers
// who want CLHPP include it themselves (interop handles wrap into cl:: types);
// these defaults let it compile after us without flags of its own.
#if !defined(CL_TARGET_OPENCL_VERSION)
#define CL_TARGET_OPENCL_VERSION 300
#endif
#if !defined(CL_HPP_TARGET_OPENCL_VERSION)
#define CL_HPP_TARGET_OPENCL_VERSION 300
#endif
#if !defined(CL_HPP_MINIMUM_OPENCL_VERSION)
// 120 does not compile with Debian's CLHPP 2023.02 (detail::getContextPlatformVersion is missing).
#define CL_HPP_MINIMUM_OPENCL_VERSION 200
#endif
#include <CL/cl.h>

#include <string>
#include <string_view>
#include <vector>

#include "streamexecutor/core/status.hpp"

namespace streamexecutor::opencl_detail {

constexpr std::string_view ErrorName(cl_int code) {
  switch (code) {
#define SE_CL_ERROR(name) \
  case name: return #name;
    SE_CL_ERROR(CL_SUCCESS)
    SE_CL_ERROR(CL_DEVICE_NOT_FOUND)
    SE_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    SE_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    SE_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    SE_CL_ERROR(CL_OUT_OF_RESOURCES)
    SE_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    SE_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    SE_CL_ERROR(CL_MEM_COPY_OVERLAP)
    SE_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    SE_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    SE_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    SE_CL_ERROR(CL_MAP_FAILURE)
    SE_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    SE_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    SE_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    SE_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    SE_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    SE_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    SE_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    SE_CL_ERROR(CL_INVALID_VALUE)
    SE_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    SE_CL_ERROR(CL_INVALID_PLATFORM)
    SE_CL_ERROR(CL_INVALID_DEVICE)
    SE_CL_ERROR(CL_INVALID_CONTEXT)
    SE_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    SE_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    SE_CL_ERROR(CL_INVALID_HOST_PTR)
    SE_CL_ERROR(CL_INVALID_MEM_OBJECT)
    SE_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    SE_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    SE_CL_ERROR(CL_INVALID_SAMPLER)
    SE_CL_ERROR(CL_INVALID_BINARY)
    SE_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    SE_CL_ERROR(CL_INVALID_PROGRAM)
    SE_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    SE_CL_ERROR(CL_INVALID_KERNEL_NAME)
    SE_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    SE_CL_ERROR(CL_INVALID_KERNEL)
    SE_CL_ERROR(CL_INVALID_ARG_INDEX)
    SE_CL_ERROR(CL_INVALID_ARG_VALUE)
    SE_CL_ERROR(CL_INVALID_ARG_SIZE)
    SE_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    SE_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    SE_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    SE_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    SE_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    SE_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    SE_CL_ERROR(CL_INVALID_EVENT)
    SE_CL_ERROR(CL_INVALID_OPERATION)
    SE_CL_ERROR(CL_INVALID_GL_OBJECT)
    SE_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    SE_CL_ERROR(CL_INVALID_MIP_LEVEL)
    SE_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    SE_CL_ERROR(CL_INVALID_PROPERTY)
    SE_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    SE_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    SE_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    SE_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
    SE_CL_ERROR(CL_INVALID_PIPE_SIZE)
    SE_CL_ERROR(CL_INVALID_DEVICE_QUEUE)
    SE_CL_ERROR(CL_INVALID_SPEC_ID)
    SE_CL_ERROR(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
#undef SE_CL_ERROR
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "an unknown OpenCL error";
  }
}

// Out-of-memory codes map to kResourceExhausted so callers can tell them apart.
constexpr ErrorCode CodeFor(cl_int error) {
  switch (error) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY: return ErrorCode::kResourceExhausted;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_COMPILER_NOT_AVAILABLE:
    case -1001: return ErrorCode::kUnavailable;
    case CL_INVALID_KERNEL_NAME: return ErrorCode::kNotFound;
    case CL_INVALID_VALUE:
    case CL_INVALID_BINARY:
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE:
    case CL_INVALID_BUILD_OPTIONS:
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE:
    case CL_INVALID_BUFFER_SIZE:
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return ErrorCode::kInvalidArgument;
    default: return ErrorCode::kInternal;
  }
}

// "clCreateBuffer failed with CL_INVALID_BUFFER_SIZE (-61) <context>".
template <typename... Args>
Status ClError(std::string_view call, cl_int error, ::streamexecutor::detail::FormatString<Args...> context,
               Args&&... args) {
  return Status(CodeFor(error), ::streamexecutor::detail::Format(
                                    "{} failed with {} ({}) {}", call, ErrorName(error), error,
                                    ::streamexecutor::detail::Format(context, std::forward<Args>(args)...)));
}

// Fixed-size clGet*Info queries; a failure leaves `fallback`. Every cl_*_info
// type is a cl_uint, while the CL_* names are int literals: hence the casts.
template <typename T, typename Getter, typename Object, typename Param>
T Info(Getter getter, Object object, Param param, T fallback = T{}) {
  T value{};
  return getter(object, static_cast<cl_uint>(param), sizeof(T), &value, nullptr) == CL_SUCCESS ? value : fallback;
}
template <typename Getter, typename Object, typename Param>
std::string InfoString(Getter getter, Object object, Param param) {
  std::size_t size = 0;
  if (getter(object, static_cast<cl_uint>(param), 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string value(size, '\0');
  if (getter(object, static_cast<cl_uint>(param), size, value.data(), nullptr) != CL_SUCCESS) return {};
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}
template <typename T, typename Getter, typename Object, typename Param>
std::vector<T> InfoVector(Getter getter, Object object, Param param) {
  std::size_t size = 0;
  if (getter(object, static_cast<cl_uint>(param), 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::vector<T> value(size / sizeof(T));
  if (getter(object, static_cast<cl_uint>(param), size, value.data(), nullptr) != CL_SUCCESS) return {};
  return value;
}

}  // namespace streamexecutor::opencl_detail
