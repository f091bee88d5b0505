// The objects behind the CUDA backend's handles: the per-executor module
// cache and the per-stream state that carries host-callback failures.
#pragma once

#include <cuda.h>

#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "streamexecutor/core/kernel_spec.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/detail/sticky_status.hpp"

namespace streamexecutor::cuda_detail {

// Loaded modules of one executor, keyed by image (format tag + file name or
// contents), so that GetKernel for a second kernel of the same PTX does not
// JIT it again. Unloaded when the executor closes.
struct ModuleCache {
  std::mutex mutex;
  std::map<std::string, CUmodule> modules;
  // CUDA C++ source compiled by NVRTC (nvrtc.hpp), by SourceKey: the PTX and
  // the kernel's lowered name.
  std::map<std::string, std::pair<std::string, std::string>> compiled;
  CudaComputeCapability capability;  // the device's: which PTX entry of a spec loads
};

// One stream. The first failure of a host callback is kept here, because the
// driver has no way to fail a stream from the host; SynchronizeStream reports
// it.
struct WaitRing;
struct WaitRings;

struct StreamState {
  const DriverApi* api = nullptr;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  int ordinal = 0;
  // Waits on other backends (foreign_wait.hpp): the executor's rings, and
  // this stream's, taken on its first such wait.
  WaitRings* wait_rings = nullptr;
  WaitRing* wait_ring = nullptr;
  bool adopted = false;    // Stream::InitAdopted: the CUstream is its creator's to destroy
  bool capturing = false;  // a command buffer's capture stream (RecordedGraph::AddCaptured)
  streamexecutor::detail::StickyStatus error;
  // Set with the first failure: launches, copies, fills and callbacks enqueued
  // after it are skipped, as on every backend (one load on the launch path).
  std::atomic<bool> failed{false};

  void Fail(Status status) {
    error.Fail(std::move(status));
    failed.store(true, std::memory_order_release);
  }
  Status CurrentError() const { return error.Get(); }
  bool Failed() const { return failed.load(std::memory_order_acquire); }
};

// A host callable queued with cuLaunchHostFunc. The driver passes one void*,
// so the callable is moved into a heap box that the trampoline frees after
// the call; an exception it throws fails the stream instead of escaping into
// the driver's thread (which would terminate the process).
template <typename F>
struct CallbackBox {
  StreamState* stream;
  F callable;

  static void CUDA_CB Run(void* user_data) {
    std::unique_ptr<CallbackBox> box(static_cast<CallbackBox*>(user_data));
    if (box->stream->Failed()) return;  // an earlier callback failed: the stream is dead
    const HostFunctionScope inside;
    if (Status status = streamexecutor::detail::InvokeHostCallback(box->callable, "cuda", box->stream->ordinal);
        !status.ok()) {
      box->stream->Fail(std::move(status));
    }
  }
};

}  // namespace streamexecutor::cuda_detail
