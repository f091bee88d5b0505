// se::host — the CPU as a device. Every "driver call" of the host backend is a
// static function of host_detail::HostBackend; the machinery behind them
// (thread pool, command queues, events) is in thread_pool.hpp and
// command_queue.hpp. A HostBackend whose Traits say kSerial has a pool
// without workers: every operation runs on the thread that enqueues it.
#pragma once

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/stream_priority.hpp"
#include "streamexecutor/core/untyped_launch.hpp"
#include "streamexecutor/host/command_buffer_operations.hpp"
#include "streamexecutor/host/describe.hpp"
#include "streamexecutor/host/ipc.hpp"
#include "streamexecutor/host/ipc_events.hpp"
#include "streamexecutor/host/plugins.hpp"
#include "streamexecutor/host/thread_pool.hpp"

namespace streamexecutor {
namespace host_detail {

// Traits: kName, kSerial (no worker threads: operations run as they are
// enqueued) and the canned-operation plugins (PluginIds, DefaultPlugins).
// What every HostBackend has in common, for the specialisations
// they share (Interop, Occupancy).
struct HostBackendBase {};
template <typename B>
concept HostMachinery = std::is_base_of_v<HostBackendBase, B>;

template <typename Traits>
struct HostBackend : Traits, HostBackendBase, host_detail::CommandBufferOperations<HostBackend<Traits>> {
  friend struct host_detail::CommandBufferOperations<HostBackend>;
  static constexpr std::string_view kName = Traits::kName;
  // Core capability constants (core/backend.hpp, Capabilities<B>).
  static constexpr bool kRunsOnEnqueue = Traits::kSerial;
  static constexpr std::array<KernelFormat, 1> kKernelFormats{kernel_formats::kHostFunction};
  // What a host kernel receives first: threadIdx, blockIdx, blockDim, gridDim.
  using KernelContext = host_detail::KernelContext;
  // What a per-block host kernel receives first: blockIdx, blockDim, gridDim.
  using BlockContext = host_detail::BlockContext;
  // What a host kernel with a block barrier receives first: KernelContext's fields and SyncThreads().
  using CooperativeContext = host_detail::CooperativeContext;
  // Memory is aligned like a GPU allocation so that vector loads never straddle.
  static constexpr std::size_t kAlignment = 64;
  // Copies between backends read and write it directly (core/copy.hpp).
  static constexpr bool kDeviceMemoryIsHostMemory = true;
  static constexpr std::uint64_t kSharedMemoryPerBlock = host_detail::Pool::kSharedMemoryPerBlock;

  struct PlatformState {
    std::unique_ptr<host_detail::Pool> pool;
  };
  struct ExecutorState {
    host_detail::Pool* pool = nullptr;
    DeviceLabel label;
    // Every live stream, so that Deallocate can defer a free until the
    // streams have run the work queued before it.
    std::mutex streams_mutex;
    std::vector<host_detail::HostStream*> streams;
  };
  using StreamHandle = host_detail::HostStream*;
  using EventHandle = host_detail::HostEvent*;
  struct KernelHandle {
    host_detail::BlockRunner runner;
    host_detail::AnyFunction function;
    const host_detail::abi::RuntimeAbi* runtime;  // for launches typed at run time
    std::uint64_t max_threads;                    // per block: what the kernel's runner can run
  };

  // ---- Platform and executor -------------------------------------------------

  static Status InitPlatform(PlatformState& platform) {
    const unsigned threads = Traits::kSerial ? 0u : std::max(1u, std::thread::hardware_concurrency());
    try {
      platform.pool = std::make_unique<host_detail::Pool>(threads, Traits::kSerial);
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kUnavailable, "{} platform: could not start {} worker threads: {}", kName, threads,
                       e.what());
    }
    return Status();
  }
  static int DeviceCount(const PlatformState&) { return 1; }
  static Status OpenExecutor(PlatformState& platform, int ordinal, ExecutorState& executor) {
    executor.pool = platform.pool.get();
    executor.label = DeviceLabel{kName, ordinal};
    return Status();
  }
  static void CloseExecutor(ExecutorState&) {}

  static DeviceDescription Describe(const ExecutorState& executor) {
    return host_detail::DescribeCpu(kName, executor.label.ordinal, std::max(1u, executor.pool->size()),
                                    kSharedMemoryPerBlock);
  }

  // ---- Memory ----------------------------------------------------------------

  static StatusOr<DeviceMemoryBase> Allocate(ExecutorState& executor, std::uint64_t bytes) {
    // Whole pages, so that any allocation can be shared with another process alone (host/memory.hpp).
    void* ptr = host_detail::PageAllocations::Get().Allocate(bytes);
    if (ptr == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "allocating {} bytes (whole pages) failed on {}", bytes,
                       executor.label);
    }
    return DeviceMemoryBase(ptr, bytes);
  }
  // Like clReleaseMemObject: the memory is released once the work queued
  // before this call, on every stream of the executor, has run. Each stream
  // takes a share of the release; idle ones drop theirs at once.
  static Status Deallocate(ExecutorState& executor, DeviceMemoryBase memory) {
    std::lock_guard<std::mutex> lock(executor.streams_mutex);
    bool busy = false;
    for (host_detail::HostStream* stream : executor.streams) busy |= stream->HasPendingWork();
    if (!busy) {
      host_detail::FreeAllocation(memory.opaque());
      return Status();
    }
    const int shares = static_cast<int>(executor.streams.size());
    auto* deferred = new (std::nothrow) host_detail::DeferredFree{memory.opaque(), {shares}};
    if (deferred == nullptr) {
      // Freeing now could corrupt queued work; keeping it is the safe failure.
      return MakeError(ErrorCode::kResourceExhausted,
                       "Deallocate on {}: out of memory to defer the release until queued work is done; the "
                       "allocation is kept",
                       executor.label);
    }
    for (host_detail::HostStream* stream : executor.streams) stream->DeferUntilDone(deferred);
    return Status();
  }
  // Memory shared between processes (core/ipc.hpp, host/ipc.hpp). The
  // pages move into a file, so the core first waits for the executor's
  // queued work: no write to them may be lost in the move.
  static constexpr bool kExportWaitsForQueuedWork = true;
  static Status ExportMemory(ExecutorState&, const DeviceMemoryBase& allocation, host_detail::IpcPayload payload) {
    return host_detail::ExportAllocation(allocation, payload);
  }
  static StatusOr<DeviceMemoryBase> ImportMemory(ExecutorState&, host_detail::ConstIpcPayload payload,
                                                 std::uint64_t bytes) {
    return host_detail::ImportAllocation(payload, bytes);
  }
  static Status CloseImportedMemory(ExecutorState&, const DeviceMemoryBase& allocation) {
    return host_detail::CloseImportedAllocation(allocation);
  }
  static StatusOr<DeviceMemoryBase> AllocateUnified(ExecutorState& executor, std::uint64_t bytes) {
    return Allocate(executor, bytes);
  }
  // Device memory is host memory.
  static void* HostAddress(const DeviceMemoryBase& memory) {
    return memory.IsNull() ? nullptr : static_cast<std::byte*>(memory.opaque()) + memory.offset();
  }
  static StatusOr<void*> HostAllocate(ExecutorState& executor, std::uint64_t bytes) {
    StatusOr<DeviceMemoryBase> memory = Allocate(executor, bytes);
    if (!memory.ok()) return memory.status();
    return memory.value().opaque();
  }
  // Deferred like Deallocate: queued kernels may use it through its device
  // view (HostMemoryDeviceView), queued copies read or write it.
  static Status HostDeallocate(ExecutorState& executor, void* ptr) {
    return Deallocate(executor, DeviceMemoryBase(ptr, 0));
  }

  // The address a view denotes: allocation base plus the view's offset.
  static void* Address(const DeviceMemoryBase& memory) {
    return static_cast<std::byte*>(memory.opaque()) + memory.offset();
  }

  // Synchronous operations run on the calling thread: the "device" memory is
  // host memory, so a stream round trip would only add a worker hand-off.
  static Status ExecuteInline(ExecutorState&, const op::MemcpyH2D& copy) {
    if (copy.bytes != 0) std::memcpy(Address(copy.dst), copy.src, copy.bytes);
    return Status();
  }
  static Status ExecuteInline(ExecutorState&, const op::MemcpyD2H& copy) {
    if (copy.bytes != 0) std::memcpy(copy.dst, Address(copy.src), copy.bytes);
    return Status();
  }
  static Status ExecuteInline(ExecutorState&, const op::MemcpyD2D& copy) {
    if (copy.bytes != 0) std::memmove(Address(copy.dst), Address(copy.src), copy.bytes);
    return Status();
  }
  static Status ExecuteInline(ExecutorState&, const op::Memset8& fill) {
    if (fill.bytes != 0) std::memset(Address(fill.dst), fill.value, fill.bytes);
    return Status();
  }
  static Status ExecuteInline(ExecutorState&, const op::Memset32& fill) {
    auto* words = static_cast<std::uint32_t*>(Address(fill.dst));
    std::fill(words, words + fill.bytes / 4, fill.pattern);
    return Status();
  }

  // ---- Streams -----------------------------------------------------------------

  static Status CreateStream(ExecutorState& executor, StreamHandle& stream) {
    return MakeStream(executor, stream, StreamPriority::kNormal);
  }
  // A priority is the order in which the pool's free workers take ready
  // streams (thread_pool.hpp). A serial pool has no workers to order: each
  // operation runs on the thread that enqueues it, so it has no priorities.
  static Status CreateStream(ExecutorState& executor, StreamHandle& stream, StreamPriority priority)
    requires(!Traits::kSerial)
  {
    return MakeStream(executor, stream, priority);
  }
  static Status MakeStream(ExecutorState& executor, StreamHandle& stream, StreamPriority priority) {
    try {
      auto owned = std::make_unique<host_detail::HostStream>(executor.pool, executor.label, priority);
      std::lock_guard<std::mutex> lock(executor.streams_mutex);
      executor.streams.push_back(owned.get());
      stream = owned.release();
    } catch (const std::bad_alloc&) {
      return MakeError(ErrorCode::kResourceExhausted, "creating a stream on {}: out of memory", executor.label);
    }
    return Status();
  }
  static void DestroyStream(ExecutorState& executor, StreamHandle& stream) {
    stream->Quiesce();
    {
      std::lock_guard<std::mutex> lock(executor.streams_mutex);
      std::erase(executor.streams, stream);
    }
    delete std::exchange(stream, nullptr);
  }
  static Status SynchronizeStream(StreamHandle& stream) { return stream->Synchronize(); }
  // What a synchronous operation asks of each stream (core/synchronous.hpp).
  static bool StreamIsIdle(StreamHandle& stream) { return !stream->HasPendingWork(); }
  static bool CallerIsCallbackOf(const StreamHandle& stream) { return stream->IsDrainedByThisThread(); }

  static Status Submit(StreamHandle& stream, const op::MemcpyH2D& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const void* src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    return EnqueueCopy(stream, Address(dst), src, bytes);
  }
  static Status Submit(StreamHandle& stream, const op::MemcpyD2H& operation) {
    void* dst = operation.dst;
    const DeviceMemoryBase& src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    return EnqueueCopy(stream, dst, Address(src), bytes);
  }
  static Status Submit(StreamHandle& stream, const op::MemcpyD2D& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const DeviceMemoryBase& src = operation.src;
    const std::uint64_t bytes = operation.bytes;

    return EnqueueCopy(stream, Address(dst), Address(src), bytes);
  }
  static Status Submit(StreamHandle& stream, const op::Memset8& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const std::uint32_t value = operation.value;
    const std::uint64_t bytes = operation.bytes;

    return EnqueueFill(stream, Address(dst), value, bytes, true);
  }
  static Status Submit(StreamHandle& stream, const op::Memset32& operation) {
    const DeviceMemoryBase& dst = operation.dst;
    const std::uint32_t pattern = operation.pattern;
    const std::uint64_t bytes = operation.bytes;

    return EnqueueFill(stream, Address(dst), pattern, bytes, false);
  }
  // A wait parks only its stream (host_detail::ValueWaits), as on an event.
  static Status Submit(StreamHandle& stream, const op::WaitValue& operation) {
    return EnqueueValue(
        stream, Command::Kind::kWaitValue, "ThenWaitValue",
        host_detail::ValueCommand{Address(operation.word), operation.value, operation.condition, operation.wide});
  }
  static Status Submit(StreamHandle& stream, const op::WriteValue& operation) {
    return EnqueueValue(stream, Command::Kind::kWriteValue, "ThenWriteValue",
                        host_detail::ValueCommand{Address(operation.word), operation.value,
                                                  WaitCondition::kGreaterOrEqual, operation.wide});
  }

  // Small callables live in the command slot; larger ones are boxed on the
  // heap. If constructing the callable (or its box) throws, the slot is given
  // back unpublished and the stream stays usable.
  template <typename Callback>
  static Status Submit(StreamHandle& stream, const op::HostCall<Callback>& operation) {
    Callback&& callback = static_cast<Callback&&>(operation.callable);

    using F = std::decay_t<Callback>;
    Command* command = stream->Reserve();
    if (command == nullptr) return stream->Refused("ThenDoHostCallback");
    try {
      if constexpr (sizeof(F) <= Command::kPayloadBytes && alignof(F) <= alignof(std::max_align_t)) {
        ::new (static_cast<void*>(command->payload)) F(std::forward<Callback>(callback));
        command->callback.invoke = [](void* p) { (*std::launder(static_cast<F*>(p)))(); };
        command->callback.destroy = [](void* p) { std::launder(static_cast<F*>(p))->~F(); };
      } else {
        ::new (static_cast<void*>(command->payload)) F*(new F(std::forward<Callback>(callback)));
        command->callback.invoke = [](void* p) { (**std::launder(static_cast<F**>(p)))(); };
        command->callback.destroy = [](void* p) { delete *std::launder(static_cast<F**>(p)); };
      }
    } catch (const std::exception& e) {
      stream->Cancel();
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on {}: copying the callback threw: {}",
                       stream->label(), e.what());
    } catch (...) {
      stream->Cancel();
      return MakeError(ErrorCode::kInternal,
                       "ThenDoHostCallback on {}: copying the callback threw a non-std::exception", stream->label());
    }
    command->kind = Command::Kind::kCallback;
    stream->Publish();
    return Status();
  }

  // ---- Events ------------------------------------------------------------------

  static Status CreateEvent(ExecutorState& executor, EventHandle& event) {
    event = new (std::nothrow) host_detail::HostEvent();
    if (event == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "creating an event on {}: out of memory", executor.label);
    }
    return Status();
  }
  // Queued records and waits hold their own references to the recordings
  // they target, so the event can go at once.
  static void DestroyEvent(ExecutorState&, EventHandle& event) { delete std::exchange(event, nullptr); }
  static Status Submit(StreamHandle& stream, const op::RecordEvent<EventHandle>& operation) {
    EventHandle& event = *operation.event;
    if (event->shared() != nullptr) [[unlikely]]
      return host_detail::RecordShared(stream, *event);

    auto* token = new (std::nothrow) host_detail::CompletionToken(stream->pool());
    if (token == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "ThenRecordEvent on {}: out of memory", stream->label());
    }
    Command* command = stream->Reserve();
    if (command == nullptr) {
      token->Release();
      return stream->Refused("ThenRecordEvent");
    }
    command->kind = Command::Kind::kRecordEvent;
    command->event = host_detail::EventCommand{token};
    // Installed before publishing, so that a wait enqueued right after this
    // call (from any thread) targets this recording.
    event->SetLatest(token);
    stream->Publish();
    return Status();
  }
  static Status Submit(StreamHandle& stream, const op::WaitEvent<EventHandle>& operation) {
    EventHandle& event = *operation.event;
    if (event->shared() != nullptr) [[unlikely]]
      return host_detail::WaitShared(stream, *event);

    host_detail::CompletionToken* token = event->AcquireLatest();
    if (token == nullptr) return Status();  // never recorded: no-op, as on CUDA
    if (token->done()) {
      token->Release();
      return Status();
    }
    Command* command = stream->Reserve();
    if (command == nullptr) {
      token->Release();
      return stream->Refused("ThenWaitFor");
    }
    command->kind = Command::Kind::kWaitEvent;
    command->event = host_detail::EventCommand{token};
    stream->Publish();
    return Status();
  }
  // Another backend's event lifts this wait: the stream parks on a fresh
  // token, exactly as on a host event, and the release completes it.
  static Status Submit(StreamHandle& stream, const op::WaitForeign& operation) {
    auto* token = new (std::nothrow) host_detail::CompletionToken();
    if (token == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "ThenWaitFor (another backend) on {}: out of memory",
                       stream->label());
    }
    Command* command = stream->Reserve();
    if (command == nullptr) {
      token->Release();
      return stream->Refused("ThenWaitFor");
    }
    token->Retain();  // the release's reference
    command->kind = Command::Kind::kWaitEvent;
    command->event = host_detail::EventCommand{token};
    stream->Publish();
    *operation.release = op::ForeignRelease{&CompleteForeignWait, token};
    return Status();
  }
  // The release fires from the token of the latest recording, on the worker
  // that runs the record command (it runs on failed streams too).
  static Status NotifyWhenComplete(ExecutorState& executor, EventHandle& event, op::ForeignRelease release) {
    if (event->shared() != nullptr) [[unlikely]]
      return host_detail::NotShared("a wait of another backend on it");
    host_detail::CompletionToken* token = event->AcquireLatest();
    if (token == nullptr) {  // never recorded: complete
      release();
      return Status();
    }
    bool pending = false;
    try {
      pending = token->AddNotification(release);
    } catch (const std::bad_alloc&) {
      token->Release();
      return MakeError(ErrorCode::kResourceExhausted,
                       "ThenWaitFor on an event of host:{}: out of memory to register the waiter", executor.label);
    }
    token->Release();
    if (!pending) release();
    return Status();
  }

  static StatusOr<bool> QueryEvent(EventHandle& event) {
    return event->shared() != nullptr ? host_detail::SharedComplete(*event) : event->IsComplete();
  }
  static Status SynchronizeEvent(EventHandle& event) {
    if (event->shared() != nullptr)
      host_detail::SynchronizeShared(*event);
    else
      event->Synchronize();
    return Status();
  }
  // Interprocess events (host/ipc_events.hpp).
  static Status CreateInterprocessEvent(ExecutorState&, EventHandle& event) {
    return host_detail::CreateInterprocessEvent(event);
  }
  static Status ExportEvent(EventHandle& event, host_detail::IpcPayload payload) {
    return host_detail::ExportEvent(event, payload);
  }
  static Status ImportEvent(ExecutorState&, host_detail::ConstIpcPayload payload, EventHandle& event) {
    return host_detail::ImportEvent(payload, event);
  }
  static StatusOr<std::int64_t> EventSteadyClockNanoseconds(EventHandle& event) {
    event->Synchronize();
    return event->timestamp_ns();
  }
  static StatusOr<std::uint64_t> ElapsedNanoseconds(EventHandle& start, EventHandle& stop) {
    start->Synchronize();
    stop->Synchronize();
    const std::int64_t elapsed = stop->timestamp_ns() - start->timestamp_ns();
    if (elapsed < 0) {
      return Status(ErrorCode::kFailedPrecondition, "the stop event completed before the start event");
    }
    return static_cast<std::uint64_t>(elapsed);
  }

  // ---- Kernels -----------------------------------------------------------------

  static std::string_view SpecKernelName(const MultiKernelLoaderSpec& spec) {
    return spec.host_kernel() ? std::string_view(spec.host_kernel()->kernel_name)
                              : std::string_view("<no host kernel>");
  }

  template <typename... Params>
  static Status LoadKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel) {
    if (!spec.host_kernel()) {
      return MakeError(ErrorCode::kNotFound,
                       "GetKernel on {}: the MultiKernelLoaderSpec has no host kernel (add one with "
                       "AddHostKernel){}",
                       executor.label, spec.DescribeEntries());
    }
    const HostKernelLoaderSpec& entry = *spec.host_kernel();
    const std::string actual = entry.entry.signature();
    const std::string expected = host_detail::HostSignature<Params...>();
    if (actual != expected) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: host kernel '{}' takes parameters {} after its context "
                       "but the TypedKernel needs {}",
                       executor.label, entry.kernel_name, actual, expected);
    }
    kernel = EntryHandle(entry.entry);
    return Status();
  }
  // Run-time typed kernels (core/kernel_args.hpp): the parameter list is the
  // host function's own, recorded with it by AddHostKernel.
  static Status LoadUntypedKernel(ExecutorState& executor, const MultiKernelLoaderSpec& spec, KernelHandle& kernel,
                                  std::vector<DeviceParam>& params, bool& shared_is_parameter) {
    if (!spec.host_kernel()) return LoadKernel<>(executor, spec, kernel);  // its "no host kernel" error
    const HostKernelLoaderSpec& entry = *spec.host_kernel();
    STREAMEXECUTOR_RETURN_IF_ERROR(
        host_detail::RuntimeParams(entry, executor.label, host_detail::Command::kPayloadBytes, params));
    shared_is_parameter = true;
    kernel = EntryHandle(entry.entry);
    return Status();
  }
  static void ReleaseKernel(ExecutorState&, KernelHandle&) {}

  template <typename... Params>
  static Status Submit(StreamHandle& stream, const op::Launch<KernelHandle, Params...>& operation) {
    host_detail::Command* command = stream->Reserve();
    if (command == nullptr) [[unlikely]]
      return stream->Refused("ThenLaunch");
    if (Status s = PackLaunch(*command, operation, stream->label()); !s.ok()) [[unlikely]] {
      stream->Cancel();
      return s;
    }
    stream->Publish();
    return Status();
  }

  // A launch typed at run time, checked by the core: the kernel's entry builds
  // the stored arguments from the KernelArgs in the command slot.
  static Status Submit(StreamHandle& stream, const op::UntypedLaunch<KernelHandle>& operation) {
    host_detail::Command* command = stream->Reserve();
    if (command == nullptr) [[unlikely]]
      return stream->Refused("ThenLaunch");
    const std::uint64_t shared = operation.kernel.runtime->assemble(operation.args, command->payload);
    if (Status s = FinishLaunch(*command, operation.kernel, operation.threads, operation.blocks, shared,
                                operation.kernel_name, stream->label());
        !s.ok()) [[unlikely]] {
      stream->Cancel();
      return s;
    }
    stream->Publish();
    return Status();
  }

  // ---- Command buffers: CommandBufferOperations (host/command_buffer_operations.hpp)

 private:
  // A launch as a ring command: the arguments converted in place into the
  // command's payload (memory views become typed pointers).
  template <typename... Params>
  static Status PackLaunch(host_detail::Command& command, const op::Launch<KernelHandle, Params...>& operation,
                           const DeviceLabel& device) {
    const KernelHandle& kernel = operation.kernel;
    const ThreadDim& threads = operation.threads;
    const BlockDim& blocks = operation.blocks;
    const PackedArgs<Params...>& args = operation.args;
    const std::string* kernel_name = operation.kernel_name;

    using Stored = std::tuple<host_detail::abi::StoredT<host_detail::abi::HostParamT<Params>>...>;
    static_assert(sizeof(Stored) <= Command::kPayloadBytes,
                  "host backend: the kernel's arguments take more than 192 bytes; pass large data in DeviceMemory");
    static_assert(std::is_trivially_destructible_v<Stored>);
    const Stored* stored = ::new (static_cast<void*>(command.payload))
        Stored(std::apply([](const auto&... packed) { return Stored(ToStored<Params>(packed)...); }, args));
    // Checked with the layout the runner will carve the scratch with: padding
    // can push arguments that fit in sum past it.
    std::array<std::uint64_t, sizeof...(Params) + 1> offsets{};
    const std::uint64_t shared =
        host_detail::abi::SharedLayout<host_detail::abi::HostParamT<Params>...>(*stored, offsets);
    return FinishLaunch(command, kernel, threads, blocks, shared, kernel_name, device);
  }
  // The rest of a launch command, once its arguments are in the payload.
  static Status FinishLaunch(host_detail::Command& command, const KernelHandle& kernel, const ThreadDim& threads,
                             const BlockDim& blocks, std::uint64_t shared, const std::string* kernel_name,
                             const DeviceLabel& device) {
    if (shared > kSharedMemoryPerBlock) [[unlikely]] {
      return host_detail::SharedTooLarge(device, kernel_name, shared, kSharedMemoryPerBlock);
    }
    if (threads.Count() > kernel.max_threads) [[unlikely]] {
      return host_detail::TooManyThreads(device, kernel_name, threads.Count(), kernel.max_threads);
    }
    command.kind = host_detail::Command::Kind::kLaunch;
    command.launch = host_detail::LaunchCommand{
        kernel.runner, kernel.function, {blocks.x, blocks.y, blocks.z}, {threads.x, threads.y, threads.z},
        shared,        kernel_name};
    return Status();
  }
  static KernelHandle EntryHandle(const host_detail::KernelEntry& entry) {
    const auto* runtime = static_cast<const host_detail::abi::RuntimeAbi*>(entry.runtime_abi);
    return KernelHandle{host_detail::EntryRunner(entry), entry.function, runtime,
                        runtime ? runtime->max_threads_per_block : ~std::uint64_t{0}};
  }
  static host_detail::Command CopyCommand(void* dst, const void* src, std::uint64_t bytes) {
    host_detail::Command command{};
    command.kind = host_detail::Command::Kind::kCopy;
    command.copy = host_detail::CopyCommand{dst, src, bytes};
    return command;
  }
  static host_detail::Command FillCommand(void* dst, std::uint32_t pattern, std::uint64_t bytes, bool byte_fill) {
    host_detail::Command command{};
    command.kind = host_detail::Command::Kind::kFill;
    command.fill = host_detail::FillCommand{dst, pattern, bytes, byte_fill};
    return command;
  }

  static void CompleteForeignWait(void* context) noexcept {
    auto* token = static_cast<host_detail::CompletionToken*>(context);
    host_detail::Pool::CompleteFromOutside(token);
    token->Release();
  }

  template <typename P>
  static auto ToStored(const PackedArgT<P>& packed) {
    using H = host_detail::abi::HostParamT<P>;
    if constexpr (is_device_memory_pointer_v<std::remove_cv_t<P>>) {
      return static_cast<H>(Address(packed));
    } else if constexpr (is_shared_device_memory_v<std::remove_cv_t<P>>) {
      return packed.ElementCount();
    } else {
      return packed;
    }
  }

  static Status EnqueueCopy(StreamHandle& stream, void* dst, const void* src, std::uint64_t bytes) {
    Command* command = stream->Reserve();
    if (command == nullptr) return stream->Refused("ThenMemcpy");
    command->kind = Command::Kind::kCopy;
    command->copy = host_detail::CopyCommand{dst, src, bytes};
    stream->Publish();
    return Status();
  }
  static Status EnqueueValue(StreamHandle& stream, Command::Kind kind, std::string_view caller,
                             const host_detail::ValueCommand& value) {
    Command* command = stream->Reserve();
    if (command == nullptr) return stream->Refused(caller);
    command->kind = kind;
    command->value = value;
    stream->Publish();
    return Status();
  }
  static Status EnqueueFill(StreamHandle& stream, void* dst, std::uint32_t pattern, std::uint64_t bytes,
                            bool byte_fill) {
    Command* command = stream->Reserve();
    if (command == nullptr) return stream->Refused(byte_fill ? "ThenMemZero" : "ThenMemset32");
    command->kind = Command::Kind::kFill;
    command->fill = host_detail::FillCommand{dst, pattern, bytes, byte_fill};
    stream->Publish();
    return Status();
  }
};

// se::host: a worker per core (std::thread::hardware_concurrency).
struct PooledHostTraits : PluginIds {
  static constexpr std::string_view kName = "host";
  static constexpr bool kSerial = false;
};

}  // namespace host_detail

// Exported so that Platform<host> is one per process across shared libraries.
struct STREAMEXECUTOR_EXPORT host : host_detail::HostBackend<host_detail::PooledHostTraits> {};

static_assert(Backend<host>);
static_assert(UnifiedMemoryBackend<host>);
static_assert(PinnedMemoryBackend<host>);
static_assert(ForeignWaitBackend<host> && EventNotifyBackend<host>);
static_assert(CommandBufferBackend<host>);
static_assert(CommandBufferUpdateBackend<host>);
static_assert(CommandBufferCloneBackend<host> && CommandBufferNestingBackend<host>);
static_assert(CommandBufferConditionalBackend<host>);
static_assert(UntypedLaunchBackend<host>);
static_assert(StreamMemoryOperationBackend<host>);
static_assert(IpcMemoryBackend<host> && IpcEventBackend<host>);
static_assert(StreamPriorityBackend<host>);

}  // namespace streamexecutor

// Native objects (Interop<host>), kernel attributes (Occupancy<host>), wherever the backend is.
#include "streamexecutor/host/interop.hpp"
#include "streamexecutor/host/occupancy.hpp"
