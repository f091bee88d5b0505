// The OpenCL backend's command buffer. Every recorded operation is kept as a
// value that can be replayed through the backend's Submit overloads. At
// Finalize, where the device has cl_khr_command_buffer, each run of
// operations the extension can record (launches, device-to-device copies,
// fills) becomes one cl_command_buffer_khr, enqueued with one call per
// submission on the stream's own queue. Host copies, host callbacks and
// event records and waits have no command in the extension and are replayed
// between those runs. STREAMEXECUTOR_OPENCL_COMMAND_BUFFER=replay forces the
// replay of everything (for testing that path on devices with the extension).
#pragma once

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/detail/function_ref.hpp"
#include "streamexecutor/opencl/errors.hpp"  // first: it sets CL_TARGET_OPENCL_VERSION for <CL/cl_ext.h>
#include "streamexecutor/opencl/launch.hpp"
#include "streamexecutor/opencl/library_call.hpp"
#include "streamexecutor/opencl/runtime.hpp"

#include <CL/cl_ext.h>

namespace streamexecutor::opencl_detail {

// The extension's entry points, resolved per platform; all null where the
// device does not report the extension with simultaneous use (a buffer is
// enqueued again while its previous submission may still be pending).
struct CommandBufferApi {
  clCreateCommandBufferKHR_fn create = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clCommandCopyBufferKHR_fn copy = nullptr;
  clCommandFillBufferKHR_fn fill = nullptr;
  clCommandNDRangeKernelKHR_fn ndrange = nullptr;
  bool usable() const { return create && finalize && release && enqueue && copy && fill && ndrange; }
};

inline CommandBufferApi LoadCommandBufferApi(cl_device_id device) {
  CommandBufferApi api;
  const char* forced = std::getenv("STREAMEXECUTOR_OPENCL_COMMAND_BUFFER");
  if (forced != nullptr && std::string_view(forced) == "replay") return api;
  const std::string extensions = InfoString(clGetDeviceInfo, device, CL_DEVICE_EXTENSIONS);
  if (extensions.find("cl_khr_command_buffer") == std::string::npos) return api;
  const auto capabilities = Info<cl_device_command_buffer_capabilities_khr>(clGetDeviceInfo, device,
                                                                            CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR);
  if (!(capabilities & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR)) return api;
  const auto platform = Info<cl_platform_id>(clGetDeviceInfo, device, CL_DEVICE_PLATFORM);
  auto resolve = [platform](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(
        clGetExtensionFunctionAddressForPlatform(platform, name));
  };
  resolve(api.create, "clCreateCommandBufferKHR");
  resolve(api.finalize, "clFinalizeCommandBufferKHR");
  resolve(api.release, "clReleaseCommandBufferKHR");
  resolve(api.enqueue, "clEnqueueCommandBufferKHR");
  resolve(api.copy, "clCommandCopyBufferKHR");
  resolve(api.fill, "clCommandFillBufferKHR");
  resolve(api.ndrange, "clCommandNDRangeKernelKHR");
  if (!api.usable()) api = CommandBufferApi{};
  return api;
}

// One recorded operation. `Opencl` is the backend (se::opencl), a template
// parameter so that this header needs only its Submit overloads' names.
struct RecordedOp {
  virtual ~RecordedOp() = default;
  virtual Status Replay(StreamState*& stream) = 0;
  virtual bool native() const { return false; }
  // Adds the operation to `buffer` (only where native()).
  virtual Status Native(const CommandBufferApi&, cl_command_buffer_khr) { return Status(); }
  // A copy with the same values (CommandBuffer::Clone, nesting).
  virtual std::unique_ptr<RecordedOp> Clone() const = 0;
  bool in_native = false;  // a cl_command_buffer_khr holds its command (RecordNative)
};

template <typename Opencl, typename Operation>
struct ReplayedOp final : RecordedOp {
  explicit ReplayedOp(const Operation& o) : operation(o) {}
  Status Replay(StreamState*& stream) override { return Opencl::Submit(stream, operation); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<ReplayedOp>(operation); }
  Operation operation;
};

template <typename Opencl, typename F>
struct ReplayedCall final : RecordedOp {
  template <typename G>
  explicit ReplayedCall(G&& g) : callable(std::forward<G>(g)) {}
  // Submit copies the callable into the stream's job: the buffer may go.
  Status Replay(StreamState*& stream) override { return Opencl::Submit(stream, op::HostCall<F&>{callable}); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<ReplayedCall>(callable); }
  F callable;
};

template <typename Opencl>
struct RecordedCopy final : RecordedOp {
  explicit RecordedCopy(const op::MemcpyD2D& o) : operation(o) {}
  Status Replay(StreamState*& stream) override { return Opencl::Submit(stream, operation); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<RecordedCopy>(operation); }
  bool native() const override { return true; }
  Status Native(const CommandBufferApi& api, cl_command_buffer_khr buffer) override {
    if (operation.bytes == 0) return Status();
    const cl_int error = api.copy(buffer, nullptr, Buffer(operation.src), Buffer(operation.dst), operation.src.offset(),
                                  operation.dst.offset(), operation.bytes, 0, nullptr, nullptr, nullptr);
    if (error != CL_SUCCESS) {
      return ClError("clCommandCopyBufferKHR", error, "recording a copy of {} bytes", operation.bytes);
    }
    return Status();
  }
  op::MemcpyD2D operation;
};

template <typename Opencl, typename Fill>
struct RecordedFill final : RecordedOp {
  explicit RecordedFill(const Fill& o) : operation(o) {}
  Status Replay(StreamState*& stream) override { return Opencl::Submit(stream, operation); }
  std::unique_ptr<RecordedOp> Clone() const override { return std::make_unique<RecordedFill>(operation); }
  bool native() const override { return true; }
  Status Native(const CommandBufferApi& api, cl_command_buffer_khr buffer) override {
    if (operation.bytes == 0) return Status();
    const cl_uint word = Pattern();
    const std::size_t size = std::is_same_v<Fill, op::Memset8> ? 1 : 4;
    if (operation.dst.offset() % size != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "a {}-byte fill pattern needs a view offset that is a multiple "
                       "of {}; this view starts at byte {}",
                       size, size, operation.dst.offset());
    }
    const cl_uchar byte = static_cast<cl_uchar>(word & 0xff);
    const void* pattern = size == 1 ? static_cast<const void*>(&byte) : static_cast<const void*>(&word);
    const cl_int error = api.fill(buffer, nullptr, Buffer(operation.dst), pattern, size, operation.dst.offset(),
                                  operation.bytes, 0, nullptr, nullptr, nullptr);
    if (error != CL_SUCCESS) {
      return ClError("clCommandFillBufferKHR", error, "recording a fill of {} bytes", operation.bytes);
    }
    return Status();
  }
  cl_uint Pattern() const {
    if constexpr (std::is_same_v<Fill, op::Memset8>)
      return operation.value;
    else
      return operation.pattern;
  }
  Fill operation;
};

// RecordedLaunch::Native but for setting the arguments (`set_args`): one
// copy for every signature.
inline Status RecordLaunchCommand(const CommandBufferApi& api, cl_command_buffer_khr buffer, LoadedKernel& loaded,
                                  const ThreadDim& threads, const BlockDim& blocks, std::uint64_t dynamic_local_bytes,
                                  const std::string* name, cl_kernel& clone,
                                  streamexecutor::detail::FunctionRef<Status()> set_args) {
  const std::string_view kernel_name = NameOf(name);
  STREAMEXECUTOR_RETURN_IF_ERROR(CheckSizes(loaded, threads, dynamic_local_bytes, kernel_name));
  const std::size_t global[3] = {blocks.x * threads.x, blocks.y * threads.y, blocks.z * threads.z};
  const std::size_t local[3] = {threads.x, threads.y, threads.z};
  const cl_uint dims = global[2] > 1 ? 3 : global[1] > 1 ? 2 : 1;
  {
    // The command gets a clone of the kernel that carries these arguments:
    // PoCL 3.1 reads a recorded kernel's arguments when the buffer runs,
    // so a later clSetKernelArg on the shared kernel (the next recorded
    // launch, any stream's launch) would change what this command passes.
    std::lock_guard<streamexecutor::detail::SpinLock> lock(loaded.launch_lock);
    STREAMEXECUTOR_RETURN_IF_ERROR(set_args());
    cl_int cloned = CL_SUCCESS;
    if (clone != nullptr) clReleaseKernel(clone);  // recorded again: the old run was waited for
    clone = clCloneKernel(loaded.kernel, &cloned);
    if (cloned != CL_SUCCESS) {
      clone = nullptr;
      return ClError("clCloneKernel", cloned, "recording kernel '{}' on {}", kernel_name, loaded.executor->label);
    }
  }
  const cl_int error =
      api.ndrange(buffer, nullptr, nullptr, clone, dims, nullptr, global, local, 0, nullptr, nullptr, nullptr);
  if (error != CL_SUCCESS) {
    return ClError("clCommandNDRangeKernelKHR", error,
                   "recording kernel '{}' on {}: global size {}x{}x{}, local size "
                   "{}x{}x{}",
                   kernel_name, loaded.executor->label, global[0], global[1], global[2], local[0], local[1], local[2]);
  }
  return Status();
}

// The launch's values, owned: the kernel is retained until the buffer goes.
template <typename Opencl, typename... Params>
struct RecordedLaunch final : RecordedOp {
  using Handle = typename Opencl::KernelHandle;
  explicit RecordedLaunch(const op::Launch<Handle, Params...>& o)
      : kernel(o.kernel), threads(o.threads), blocks(o.blocks), args(o.args), name(o.kernel_name) {
    kernel.impl->Retain();
  }
  ~RecordedLaunch() override {
    if (clone != nullptr) clReleaseKernel(clone);
    kernel.impl->Release();
  }
  RecordedLaunch(const RecordedLaunch&) = delete;
  RecordedLaunch& operator=(const RecordedLaunch&) = delete;

  Status Replay(StreamState*& stream) override {
    return Opencl::Submit(stream, op::Launch<Handle, Params...>{kernel, threads, blocks, args, name});
  }
  std::unique_ptr<RecordedOp> Clone() const override {
    return std::make_unique<RecordedLaunch>(op::Launch<Handle, Params...>{kernel, threads, blocks, args, name});
  }
  bool native() const override { return true; }
  // The extension captures the arguments set at the time of recording.
  Status Native(const CommandBufferApi& api, cl_command_buffer_khr buffer) override {
    return RecordLaunchCommand(
        api, buffer, *kernel.impl, threads, blocks, DynamicLocalBytes<Params...>(args), name, clone,
        [&] { return SetArgs<Params...>(*kernel.impl, args, name, std::index_sequence_for<Params...>{}); });
  }

  Handle kernel;
  cl_kernel clone = nullptr;  // what the native command runs
  ThreadDim threads;
  BlockDim blocks;
  PackedArgs<Params...> args;
  const std::string* name;
};

// The recorded form of each operation kind.
template <typename Opencl, typename Operation>
std::unique_ptr<RecordedOp> MakeRecorded(const Operation& operation) {
  return std::make_unique<ReplayedOp<Opencl, Operation>>(operation);
}
template <typename Opencl>
std::unique_ptr<RecordedOp> MakeRecorded(const op::MemcpyD2D& operation) {
  return std::make_unique<RecordedCopy<Opencl>>(operation);
}
template <typename Opencl>
std::unique_ptr<RecordedOp> MakeRecorded(const op::Memset8& operation) {
  return std::make_unique<RecordedFill<Opencl, op::Memset8>>(operation);
}
template <typename Opencl>
std::unique_ptr<RecordedOp> MakeRecorded(const op::Memset32& operation) {
  return std::make_unique<RecordedFill<Opencl, op::Memset32>>(operation);
}
template <typename Opencl, typename F>
std::unique_ptr<RecordedOp> MakeRecorded(const op::HostCall<F>& call) {
  return std::make_unique<ReplayedCall<Opencl, std::decay_t<F>>>(static_cast<F&&>(call.callable));
}
template <typename Opencl, typename Handle, typename... Params>
std::unique_ptr<RecordedOp> MakeRecorded(const op::Launch<Handle, Params...>& launch) {
  return std::make_unique<RecordedLaunch<Opencl, Params...>>(launch);
}

// A canned operation's library call (CLBlast), made again at each
// submission through the stream's own library-call path.
template <typename Opencl, typename F>
struct RecordedLibraryCall final : RecordedOp {
  RecordedLibraryCall(std::string_view c, std::vector<DeviceMemoryBase> b, const F& f)
      : caller(c), buffers(std::move(b)), call(f) {}
  Status Replay(StreamState*& stream) override { return EnqueueLibraryCall(*stream, caller, buffers, call); }
  std::unique_ptr<RecordedOp> Clone() const override {
    return std::make_unique<RecordedLibraryCall>(caller, buffers, call);
  }
  std::string_view caller;  // the canned operation's name: a static string
  std::vector<DeviceMemoryBase> buffers;
  F call;
};
template <typename Opencl, typename F>
std::unique_ptr<RecordedOp> MakeRecorded(const op::LibraryCall<F>& call) {
  return std::make_unique<RecordedLibraryCall<Opencl, std::decay_t<F>>>(
      call.caller, std::vector<DeviceMemoryBase>(call.buffers.begin(), call.buffers.end()), call.call);
}

// Another buffer's operations, copied when nested, replayed in order.
struct RecordedNested final : RecordedOp {
  Status Replay(StreamState*& stream) override {
    for (const std::unique_ptr<RecordedOp>& op : ops) STREAMEXECUTOR_RETURN_IF_ERROR(op->Replay(stream));
    return Status();
  }
  std::unique_ptr<RecordedOp> Clone() const override {
    auto clone = std::make_unique<RecordedNested>();
    clone->ops.reserve(ops.size());
    for (const std::unique_ptr<RecordedOp>& op : ops) clone->ops.push_back(op->Clone());
    return clone;
  }
  std::vector<std::unique_ptr<RecordedOp>> ops;
};

// ThenIf/ThenWhile: the library's replay loop. Each check of the condition
// reads it back and waits for the stream (no OpenCL extension branches on a
// device value), so the submitting thread blocks until the loop ends.
template <typename Opencl>
struct RecordedConditional final : RecordedOp {
  RecordedConditional(const DeviceMemoryBase& c, bool l) : condition(c), loop(l) {}
  Status Replay(StreamState*& stream) override {
    if (stream->RunsOnCallbackThread()) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "ThenSubmit on {}: a command buffer holding ThenIf or ThenWhile was submitted from a host "
                       "callback of the same stream; its replay would wait for that callback to return",
                       stream->executor->label);
    }
    do {
      std::int32_t value = 0;
      STREAMEXECUTOR_RETURN_IF_ERROR(Opencl::Submit(stream, op::MemcpyD2H{&value, condition, sizeof value}));
      STREAMEXECUTOR_RETURN_IF_ERROR(Opencl::SynchronizeStream(stream));
      if (value == 0) return Status();
      for (const std::unique_ptr<RecordedOp>& op : ops) STREAMEXECUTOR_RETURN_IF_ERROR(op->Replay(stream));
    } while (loop);
    return Status();
  }
  std::unique_ptr<RecordedOp> Clone() const override {
    auto clone = std::make_unique<RecordedConditional>(condition, loop);
    clone->ops.reserve(ops.size());
    for (const std::unique_ptr<RecordedOp>& op : ops) clone->ops.push_back(op->Clone());
    return clone;
  }
  DeviceMemoryBase condition;
  bool loop;
  std::vector<std::unique_ptr<RecordedOp>> ops;
};

class RecordedBuffer {
 public:
  explicit RecordedBuffer(Executor& executor) : executor_(&executor), api_(LoadCommandBufferApi(executor.device)) {}
  RecordedBuffer(const RecordedBuffer&) = delete;
  RecordedBuffer& operator=(const RecordedBuffer&) = delete;
  // Waits for the latest submission of every native run: the driver objects
  // may then go. Replayed operations took copies of what they need.
  ~RecordedBuffer() {
    for (Run& run : runs_) {
      if (run.last != nullptr) {
        clWaitForEvents(1, &run.last);
        clReleaseEvent(run.last);
      }
      if (run.native != nullptr) api_.release(run.native);
    }
    if (queue_ != nullptr) clReleaseCommandQueue(queue_);
  }

  Status Add(std::unique_ptr<RecordedOp> op) {
    try {
      ops_.push_back(std::move(op));
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on {}: out of memory",
                       executor_->label);
    }
    return Status();
  }
  template <typename Make>
  Status AddNew(Make&& make) {
    try {
      return Add(make());
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInternal, "recording into a command buffer on {}: {}", executor_->label, e.what());
    }
  }

  // The index-th operation becomes `make()`'s. Replayed operations copy
  // their values at each submission, so the old one goes at once; a native
  // run that held it is recorded again at the next submission, once its
  // previous submission has finished (the old commands may still run).
  template <typename Make>
  Status Replace(std::size_t index, Make&& make) {
    if (index >= ops_.size()) {
      return MakeError(ErrorCode::kInternal, "updating a command buffer on {}: no operation {}", executor_->label,
                       index);
    }
    std::unique_ptr<RecordedOp> replacement;
    const bool retire = ops_[index]->in_native;
    try {
      replacement = make();
      if (retire && retired_.size() == retired_.capacity()) retired_.reserve(2 * retired_.capacity() + 8);
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kResourceExhausted, "updating a command buffer on {}: {}", executor_->label,
                       e.what());
    }
    for (Run& run : runs_) {
      if (index >= run.begin && index < run.end && (run.native != nullptr || run.stale)) run.stale = true;
    }
    std::swap(ops_[index], replacement);
    // Only an operation a native command buffer holds waits to be freed;
    // one that replaced it before that buffer was recorded again goes now.
    if (retire) retired_.push_back(std::move(replacement));
    return Status();
  }

  // Copies of the operations (not finalized: runs are made at Finalize).
  // Copies may throw std::bad_alloc; the caller turns that into a Status.
  std::vector<std::unique_ptr<RecordedOp>> CopyOps() const {
    std::vector<std::unique_ptr<RecordedOp>> copies;
    copies.reserve(ops_.size());
    for (const std::unique_ptr<RecordedOp>& op : ops_) copies.push_back(op->Clone());
    return copies;
  }
  void TakeOps(std::vector<std::unique_ptr<RecordedOp>> ops) { ops_ = std::move(ops); }
  Executor& executor() const { return *executor_; }

  // How many runs of operations became a cl_command_buffer_khr.
  int native_runs() const {
    int count = 0;
    for (const Run& run : runs_) count += run.native != nullptr;
    return count;
  }

  Status Finalize() {
    std::size_t begin = 0;
    while (begin < ops_.size()) {
      std::size_t end = begin + 1;
      const bool native = api_.usable() && ops_[begin]->native();
      while (end < ops_.size() && native && ops_[end]->native()) ++end;
      runs_.push_back(Run{begin, end, nullptr, nullptr, false});
      if (native) STREAMEXECUTOR_RETURN_IF_ERROR(RecordNative(runs_.back()));
      begin = end;
    }
    return Status();
  }

  Status SubmitTo(StreamState*& stream) {
    // Streams on several threads may submit one finalized buffer: each
    // submission updates the runs' latest events.
    const std::lock_guard<std::mutex> lock(submit_mutex_);
    if (!retired_.empty() || AnyStale()) STREAMEXECUTOR_RETURN_IF_ERROR(RecordStaleRuns());
    for (Run& run : runs_) {
      // Behind a pending host callback (or after a failure) the stream holds
      // or skips commands on the host: the replay goes through that path. So
      // does a stream whose queue profiles (a timer's): the extension runs a
      // buffer only on queues with the properties it was recorded for.
      if (run.native == nullptr || stream->Diverted() || stream->profiling) {
        for (std::size_t i = run.begin; i < run.end; ++i) STREAMEXECUTOR_RETURN_IF_ERROR(ops_[i]->Replay(stream));
        continue;
      }
      cl_event done = nullptr;
      const cl_int error = api_.enqueue(1, &stream->queue, run.native, 0, nullptr, &done);
      if (error != CL_SUCCESS) {
        return ClError("clEnqueueCommandBufferKHR", error, "submitting a command buffer of {} operations on {}",
                       run.end - run.begin, executor_->label);
      }
      if (run.last != nullptr) clReleaseEvent(run.last);
      run.last = done;
    }
    return Status();
  }

 private:
  struct Run {
    std::size_t begin, end;        // ops_[begin, end)
    cl_command_buffer_khr native;  // null: replayed
    cl_event last;                 // the latest submission of `native`
    bool stale;                    // an operation was updated: record `native` again
  };

  bool AnyStale() const {
    for (const Run& run : runs_) {
      if (run.stale) return true;
    }
    return false;
  }
  // Waits for the previous submission of each updated run, then records it
  // again with the operations' new values.
  Status RecordStaleRuns() {
    for (Run& run : runs_) {
      if (!run.stale) continue;
      if (run.last != nullptr) {
        clWaitForEvents(1, &run.last);
        clReleaseEvent(run.last);
        run.last = nullptr;
      }
      if (run.native != nullptr) {
        api_.release(run.native);
        run.native = nullptr;
      }
    }
    retired_.clear();
    for (Run& run : runs_) {
      if (!run.stale) continue;
      run.stale = false;
      if (Status s = RecordNative(run); !s.ok()) {
        if (run.native != nullptr) api_.release(run.native);
        run.native = nullptr;  // replayed from now on: the operations are still right
        return s;
      }
    }
    return Status();
  }

  Status RecordNative(Run& run) {
    cl_int error = CL_SUCCESS;
    if (queue_ == nullptr) {
      // Recorded for a queue like the streams' (the same properties: no
      // profiling until a timer), then enqueued on the submitting stream's
      // queue in its place.
      queue_ = clCreateCommandQueueWithProperties(executor_->context, executor_->device, nullptr, &error);
      if (error != CL_SUCCESS) {
        queue_ = nullptr;
        return ClError("clCreateCommandQueueWithProperties", error, "for recording a command buffer on {}",
                       executor_->label);
      }
    }
    const cl_command_buffer_properties_khr properties[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                                           CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    run.native = api_.create(1, &queue_, properties, &error);
    if (error != CL_SUCCESS) {
      run.native = nullptr;
      return ClError("clCreateCommandBufferKHR", error, "on {}", executor_->label);
    }
    for (std::size_t i = run.begin; i < run.end; ++i) {
      ops_[i]->in_native = true;
      if (Status s = ops_[i]->Native(api_, run.native); !s.ok()) {
        return MakeError(s.code(), "Finalize of a command buffer on {}, operation {}: {}", executor_->label, i,
                         s.message());
      }
    }
    error = api_.finalize(run.native);
    if (error != CL_SUCCESS) return ClError("clFinalizeCommandBufferKHR", error, "on {}", executor_->label);
    return Status();
  }

  Executor* executor_;
  CommandBufferApi api_;
  cl_command_queue queue_ = nullptr;
  std::vector<std::unique_ptr<RecordedOp>> ops_;
  std::vector<Run> runs_;
  std::mutex submit_mutex_;
  std::vector<std::unique_ptr<RecordedOp>> retired_;  // replaced in a native run that may still be running
};

}  // namespace streamexecutor::opencl_detail
