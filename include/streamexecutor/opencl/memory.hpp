// Buffer allocation, copies and fills on a command queue. Views carry their
// offset separately from the cl_mem (DeviceMemoryBase::offset), which the
// read/write/copy/fill calls take as a parameter directly.
#pragma once

#include <cstdint>
#include <string>

#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/opencl/runtime.hpp"

namespace streamexecutor::opencl_detail {

inline cl_mem Buffer(const DeviceMemoryBase& memory) { return static_cast<cl_mem>(memory.opaque()); }

// SVM storage wrapped in a buffer (CL_MEM_USE_HOST_PTR on an SVM pointer is
// defined by OpenCL 2.0 to use the SVM as the buffer's storage). Copies use
// the buffer; kernels get base + offset through clSetKernelArgSVMPointer, so
// slices work at any offset. The SVM is freed when the buffer is destroyed,
// that is after the last command using it.
inline StatusOr<DeviceMemoryBase> AllocateSvm(Executor& e, std::uint64_t bytes, cl_svm_mem_flags flags,
                                              std::string_view call) {
  if (bytes > e.max_allocation) {
    return MakeError(ErrorCode::kResourceExhausted,
                     "{} of {} bytes on {}: larger than CL_DEVICE_MAX_MEM_ALLOC_SIZE ({} bytes)", call, bytes, e.label,
                     e.max_allocation);
  }
  void* ptr = clSVMAlloc(e.context, flags, bytes, 0);
  if (ptr == nullptr) {
    return MakeError(ErrorCode::kResourceExhausted, "{} of {} bytes on {} returned null", call, bytes, e.label);
  }
  cl_int error = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(e.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, ptr, &error);
  if (error != CL_SUCCESS) {
    clSVMFree(e.context, ptr);
    return ClError("clCreateBuffer(CL_MEM_USE_HOST_PTR)", error, "wrapping {} bytes of SVM on {}", bytes, e.label);
  }
  struct Owner {
    cl_context context;
    void* ptr;
    static void CL_CALLBACK Free(cl_mem, void* user) {
      auto* owner = static_cast<Owner*>(user);
      clSVMFree(owner->context, owner->ptr);
      clReleaseContext(owner->context);
      delete owner;
    }
  };
  clRetainContext(e.context);
  auto* owner = new Owner{e.context, ptr};
  error = clSetMemObjectDestructorCallback(buffer, &Owner::Free, owner);
  if (error != CL_SUCCESS) {
    clReleaseMemObject(buffer);
    Owner::Free(nullptr, owner);
    return ClError("clSetMemObjectDestructorCallback", error, "for {} bytes of SVM on {}", bytes, e.label);
  }
  return DeviceMemoryBase(buffer, bytes);
}

inline Status Write(cl_command_queue queue, cl_bool blocking, const DeviceMemoryBase& dst, const void* src,
                    std::uint64_t bytes, const std::string& label) {
  if (bytes == 0) return Status();  // OpenCL rejects empty transfers
  const cl_int error =
      clEnqueueWriteBuffer(queue, Buffer(dst), blocking, dst.offset(), bytes, src, 0, nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return ClError("clEnqueueWriteBuffer", error, "copying {} bytes to device offset {} on {}", bytes, dst.offset(),
                   label);
  }
  return Status();
}

inline Status Read(cl_command_queue queue, cl_bool blocking, void* dst, const DeviceMemoryBase& src,
                   std::uint64_t bytes, const std::string& label) {
  if (bytes == 0) return Status();
  const cl_int error = clEnqueueReadBuffer(queue, Buffer(src), blocking, src.offset(), bytes, dst, 0, nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return ClError("clEnqueueReadBuffer", error, "copying {} bytes from device offset {} on {}", bytes, src.offset(),
                   label);
  }
  return Status();
}

inline Status Copy(cl_command_queue queue, const DeviceMemoryBase& dst, const DeviceMemoryBase& src,
                   std::uint64_t bytes, const std::string& label) {
  if (bytes == 0) return Status();
  const cl_int error =
      clEnqueueCopyBuffer(queue, Buffer(src), Buffer(dst), src.offset(), dst.offset(), bytes, 0, nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return ClError("clEnqueueCopyBuffer", error, "copying {} bytes from offset {} to offset {} on {}", bytes,
                   src.offset(), dst.offset(), label);
  }
  return Status();
}

inline Status Fill(cl_command_queue queue, const DeviceMemoryBase& dst, const void* pattern, std::size_t pattern_size,
                   std::uint64_t bytes, const std::string& label) {
  if (bytes == 0) return Status();
  if (dst.offset() % pattern_size != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "a {}-byte fill pattern on {} needs a view offset that is a multiple of {} (clEnqueueFillBuffer); "
                     "this view starts at byte {}",
                     pattern_size, label, pattern_size, dst.offset());
  }
  const cl_int error =
      clEnqueueFillBuffer(queue, Buffer(dst), pattern, pattern_size, dst.offset(), bytes, 0, nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return ClError("clEnqueueFillBuffer", error, "filling {} bytes at offset {} with a {}-byte pattern on {}", bytes,
                   dst.offset(), pattern_size, label);
  }
  return Status();
}
inline Status Fill8(cl_command_queue queue, const DeviceMemoryBase& dst, std::uint32_t value, std::uint64_t bytes,
                    const std::string& label) {
  const auto pattern = static_cast<cl_uchar>(value & 0xff);
  return Fill(queue, dst, &pattern, sizeof(pattern), bytes, label);
}
inline Status Fill32(cl_command_queue queue, const DeviceMemoryBase& dst, std::uint32_t value, std::uint64_t bytes,
                     const std::string& label) {
  const cl_uint pattern = value;
  return Fill(queue, dst, &pattern, sizeof(pattern), bytes, label);
}

// ThenPrefetch: migrates the whole buffer (OpenCL migrates memory objects,
// not ranges) to the queue's device or to the host, without moving its
// contents' meaning (CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED is never set).
inline Status Migrate(cl_command_queue queue, const DeviceMemoryBase& memory, bool to_host, const std::string& label) {
  cl_mem buffer = Buffer(memory);
  const cl_mem_migration_flags flags = to_host ? CL_MIGRATE_MEM_OBJECT_HOST : 0;
  const cl_int error = clEnqueueMigrateMemObjects(queue, 1, &buffer, flags, 0, nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return ClError("clEnqueueMigrateMemObjects", error, "migrating a buffer of {} bytes to {} on {}", memory.size(),
                   to_host ? "the host" : "the device", label);
  }
  return Status();
}

// Completes a synchronous operation that was enqueued without blocking.
inline Status Finish(cl_command_queue queue, Status enqueued, const std::string& label) {
  if (!enqueued.ok()) return enqueued;
  const cl_int error = clFinish(queue);
  if (error != CL_SUCCESS) return ClError("clFinish", error, "on {}", label);
  return Status();
}

}  // namespace streamexecutor::opencl_detail
