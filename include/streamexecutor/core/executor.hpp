// StreamExecutor<B>: one device. Memory management, synchronous copies and
// kernel loading; streams, events and timers are created from it.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "streamexecutor/core/allocation_registry.hpp"
#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/extensions.hpp"
#include "streamexecutor/core/interop.hpp"
#include "streamexecutor/core/ipc.hpp"
#include "streamexecutor/core/kernel.hpp"
#include "streamexecutor/core/occupancy.hpp"
#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/peer_access.hpp"
#include "streamexecutor/core/pinned_memory.hpp"
#include "streamexecutor/core/platform.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/scoped_device_memory.hpp"
#include "streamexecutor/core/synchronous.hpp"
#include "streamexecutor/core/trace.hpp"
#include "streamexecutor/core/untyped_launch.hpp"

namespace streamexecutor {

template <Backend B>
class MemoryPool;

// Pinned host memory (core/pinned_memory.hpp), adoption of memory allocated
// elsewhere (core/interop.hpp), memory shared between processes (core/ipc.hpp), peer access (core/peer_access.hpp), how
// synchronous operations run (core/synchronous.hpp) and kernel attributes and
// occupancy (core/occupancy.hpp) are kept in base classes.
template <Backend B>
class StreamExecutor : public detail::PinnedHostMemoryApi<B>,
                       public detail::AdoptionApi<B>,
                       public detail::IpcApi<B>,
                       public detail::PeerAccessApi<B>,
                       public detail::SynchronousOperations<B>,
                       public detail::OccupancyApi<B> {
 public:
  StreamExecutor(const StreamExecutor&) = delete;
  StreamExecutor& operator=(const StreamExecutor&) = delete;
  ~StreamExecutor() {
    extensions_.Clear();  // library state may hold driver objects of this device
    this->CloseSynchronous(state_);
    this->ForgetAllAdopted();
    this->CloseAllImported();
    this->ReleaseAllHostMemory();
    B::CloseExecutor(state_);
  }

  Platform<B>* platform() const { return platform_; }
  int device_ordinal() const { return ordinal_; }
  const DeviceDescription& GetDeviceDescription() const { return description_; }
  // "host:0", "opencl:1": how messages name this device.
  const std::string& DeviceLabel() const { return label_; }
  // What this executor's streams did while the latest trace recorded (core/trace.hpp).
  TraceCounters trace_counters() const { return trace::detail::CountersOfExecutor(this); }

  // ---- Memory -------------------------------------------------------------

  template <typename T>
  StatusOr<DeviceMemory<T>> TryAllocateArray(std::uint64_t element_count) {
    StatusOr<DeviceMemoryBase> raw = AllocateBytes(element_count, sizeof(T), detail::TypeName<T>());
    if (!raw.ok()) return raw.status();
    return DeviceMemory<T>(raw.value());
  }
  // Seed form: a null DeviceMemory on failure (use TryAllocateArray for the reason).
  template <typename T>
  DeviceMemory<T> AllocateArray(std::uint64_t element_count) {
    return TryAllocateArray<T>(element_count).value_or(DeviceMemory<T>());
  }
  // Memory that host code and kernels can both dereference (host memory,
  // OpenCL fine-grained SVM, CUDA managed memory), registered like any other
  // allocation: copies, launches and Deallocate accept it.
  template <typename T>
    requires UnifiedMemoryBackend<B>
  StatusOr<DeviceMemory<T>> TryAllocateUnifiedArray(std::uint64_t element_count) {
    StatusOr<DeviceMemoryBase> raw =
        AllocateBytes(element_count, sizeof(T), detail::TypeName<T>(), MemoryKind::kUnified);
    if (!raw.ok()) return raw.status();
    return DeviceMemory<T>(raw.value());
  }
  template <typename T>
  DeviceMemory<T> AllocateScalar() {
    return AllocateArray<T>(1);
  }
  // Owning forms; on failure the result is null and its status() says why.
  template <typename T>
  ScopedDeviceMemory<T> AllocateOwnedArray(std::uint64_t element_count) {
    StatusOr<DeviceMemory<T>> memory = TryAllocateArray<T>(element_count);
    if (!memory.ok()) return ScopedDeviceMemory<T>(memory.status());
    return ScopedDeviceMemory<T>(this, &FreeOwned, memory.value());
  }
  template <typename T>
  ScopedDeviceMemory<T> AllocateOwnedScalar() {
    return AllocateOwnedArray<T>(1);
  }

  // Bytes and allocations live on this executor (GetMemoryStatistics in
  // core/memory_pool.hpp gives them with the pools' figures).
  detail::AllocationCounts AllocationCounts() const { return registry_.Counts(); }

  // Frees the allocation `memory` views and nulls the view. Freeing a slice,
  // a foreign or an already-freed view is an error, not a crash. Work already
  // queued that uses the memory still runs on it: every backend defers the
  // release until that work is done.
  Status Deallocate(DeviceMemoryBase* memory) {
    if (memory == nullptr || memory->IsNull()) {
      return MakeError(ErrorCode::kInvalidArgument, "Deallocate on {}: the DeviceMemory is {}", label_,
                       memory == nullptr ? "a null pointer" : detail::DescribeNullMemory(*memory));
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(RetireRecord("Deallocate", *memory, detail::RecordKind::kAllocated));
    Status status = B::Deallocate(state_, DeviceMemoryBase(memory->opaque(), memory->size()));
    if (trace::detail::Observing()) [[unlikely]]
      trace::detail::RecordAllocation(this, label_, "Deallocate", memory->size(), status);
    *memory = DeviceMemoryBase();
    return status;
  }

  // Checks that [view, view+bytes) is live memory of this executor. Used by
  // every copy and fill, so that freed or undersized memory is an error.
  Status CheckDeviceRange(std::string_view caller, std::string_view role, const DeviceMemoryBase& memory,
                          std::uint64_t bytes) const {
    if (memory.IsNull()) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} is {}", caller, label_, role,
                       detail::DescribeNullMemory(memory));
    }
    if (bytes > memory.size()) {
      return MakeError(ErrorCode::kOutOfRange, "{} on {}: {} bytes do not fit in the {} DeviceMemory of {} bytes",
                       caller, label_, bytes, role, memory.size());
    }
    return registry_.CheckLive(memory, [&](ErrorCode code, std::string_view why) {
      return MakeError(code, "{} on {}: the {} DeviceMemory is {}", caller, label_, role, why);
    });
  }

  // The launch path's check, inline, no Status: the view's id still names a
  // live allocation of this executor. The rest (handle, range) was checked
  // when the view was made (DeviceMemoryBase's constructor).
  // CheckLaunchMemory says why one is refused.
  [[gnu::always_inline]] bool IsLiveView(const DeviceMemoryBase& memory) const noexcept {
    return detail::AllocationRegistry::IsLiveView(this, memory);
  }

  // The launch-time form, for every DeviceMemory argument. Null entries are
  // parameters that are not DeviceMemory. Memory of a peer passes (core/peer_access.hpp).
  Status CheckLaunchMemory(const std::string& kernel_name, std::span<const DeviceMemoryBase* const> args) const {
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == nullptr || this->IsEnabledPeerView(*args[i])) continue;
      STREAMEXECUTOR_RETURN_IF_ERROR(this->RefuseOtherExecutorMemory(kernel_name, i, *args[i]));
      Status status = registry_.CheckLive(*args[i], [&](ErrorCode code, std::string_view why) {
        return MakeError(code, "ThenLaunch of kernel '{}' on {}: argument {} is {}", kernel_name, label_, i, why);
      });
      if (!status.ok()) [[unlikely]]
        return status;
    }
    return Status();
  }

  // ---- Synchronous copies ---------------------------------------------------
  // Typed forms copy whole arrays: the source's element count must fit in the
  // destination, and the error names both counts.

  template <typename T>
  Status SynchronousMemcpyH2D(std::span<const std::type_identity_t<T>> host_src, DeviceMemory<T>* device_dst) {
    if (device_dst == nullptr) return NullArgument("SynchronousMemcpyH2D", "destination");
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckElementCounts<T>("SynchronousMemcpyH2D", host_src.size(), *device_dst));
    return SynchronousMemcpyH2D(host_src.data(), host_src.size_bytes(), device_dst);
  }
  template <typename T>
  Status SynchronousMemcpyD2H(const DeviceMemory<T>& device_src, std::span<std::type_identity_t<T>> host_dst) {
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckElementCounts<T>("SynchronousMemcpyD2H", device_src, host_dst.size()));
    return SynchronousMemcpyD2H(device_src, device_src.size(), host_dst.data());
  }
  template <typename T>
  Status SynchronousMemcpyD2D(const DeviceMemory<T>& device_src, DeviceMemory<T>* device_dst) {
    if (device_dst == nullptr) return NullArgument("SynchronousMemcpyD2D", "destination");
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckElementCounts<T>("SynchronousMemcpyD2D", device_src, *device_dst));
    return SynchronousMemcpyD2D(device_src, device_src.size(), device_dst);
  }

  // Byte forms, as in the seed.
  Status SynchronousMemcpyH2D(const void* host_src, std::uint64_t size, DeviceMemoryBase* device_dst) {
    constexpr std::string_view caller = "SynchronousMemcpyH2D";
    if (device_dst == nullptr) return NullArgument(caller, "destination");
    return RunSynchronously(caller, op::MemcpyH2D{*device_dst, host_src, size});
  }
  Status SynchronousMemcpyD2H(const DeviceMemoryBase& device_src, std::uint64_t size, void* host_dst) {
    constexpr std::string_view caller = "SynchronousMemcpyD2H";
    return RunSynchronously(caller, op::MemcpyD2H{host_dst, device_src, size});
  }
  Status SynchronousMemcpyD2D(const DeviceMemoryBase& device_src, std::uint64_t size, DeviceMemoryBase* device_dst) {
    constexpr std::string_view caller = "SynchronousMemcpyD2D";
    if (device_dst == nullptr) return NullArgument(caller, "destination");
    return RunSynchronously(caller, op::MemcpyD2D{*device_dst, device_src, size});
  }
  // The seed's overloaded spellings.
  Status SynchronousMemcpy(DeviceMemoryBase* device_dst, const void* host_src, std::uint64_t size) {
    return SynchronousMemcpyH2D(host_src, size, device_dst);
  }
  Status SynchronousMemcpy(void* host_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return SynchronousMemcpyD2H(device_src, size, host_dst);
  }
  Status SynchronousMemcpy(DeviceMemoryBase* device_dst, const DeviceMemoryBase& device_src, std::uint64_t size) {
    return SynchronousMemcpyD2D(device_src, size, device_dst);
  }

  Status SynchronousMemZero(DeviceMemoryBase* location, std::uint64_t size) {
    constexpr std::string_view caller = "SynchronousMemZero";
    if (location == nullptr) return NullArgument(caller, "destination");
    return RunSynchronously(caller, op::Memset8{*location, 0, size});
  }
  // Fills `size` bytes (a multiple of 4) with a 32-bit pattern.
  Status SynchronousMemset32(DeviceMemoryBase* location, std::uint32_t pattern, std::uint64_t size) {
    constexpr std::string_view caller = "SynchronousMemset32";
    if (location == nullptr) return NullArgument(caller, "destination");
    return RunSynchronously(caller, op::Memset32{*location, pattern, size});
  }

  // Blocks until the work queued on this executor's streams before the call
  // has run (the seed's call). Returns only a failure of the waiting itself:
  // a stream's own error is that stream's (BlockHostUntilDone). Called from a
  // host callback, it does not wait for the callback's own stream.
  Status SynchronizeAllActivity() {
    STREAMEXECUTOR_RETURN_IF_ERROR(this->RefuseWhileCapturing("SynchronizeAllActivity", label_));
    return this->AwaitStreams(state_);
  }

  // ---- Kernels --------------------------------------------------------------

  // Loads the code for B from `spec` and binds `kernel` to it, checking the
  // spec's arity and (where the backend can) the real parameter list against
  // TypedKernel's.
  template <typename... Params>
  Status GetKernel(const MultiKernelLoaderSpec& spec, TypedKernel<Params...>* kernel) {
    // Only the backend's load depends on the parameter types; the checks
    // around it are shared by every signature (and compiled once under
    // separate compilation).
    STREAMEXECUTOR_RETURN_IF_ERROR(CheckGetKernel(spec, kernel, detail::kParamInfos<Params...>));
    typename B::KernelHandle handle{};
    STREAMEXECUTOR_RETURN_IF_ERROR(B::template LoadKernel<Params...>(state_, spec, handle));
    return BindLoaded(std::string(B::SpecKernelName(spec)), handle, *kernel);
  }

  // A kernel launched with arguments typed at run time (core/kernel_args.hpp):
  // the backend reads the device code's parameter list, which every launch
  // checks its KernelArgs against.
  template <UntypedLaunchBackend Backend = B>
  Status GetUntypedKernel(const MultiKernelLoaderSpec& spec, UntypedKernel* kernel) {
    if (kernel == nullptr)
      return MakeError(ErrorCode::kInvalidArgument, "GetUntypedKernel on {}: kernel is null", label_);
    if (!spec.status().ok()) return SpecRefused("GetUntypedKernel", spec);
    const std::string name(B::SpecKernelName(spec));
    if (kernel->executor() != this) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetUntypedKernel on {}: kernel '{}' was constructed for a different StreamExecutor", label_,
                       name);
    }
    typename B::KernelHandle handle{};
    std::vector<DeviceParam> params;
    bool shared_is_parameter = true;
    STREAMEXECUTOR_RETURN_IF_ERROR(B::LoadUntypedKernel(state_, spec, handle, params, shared_is_parameter));
    STREAMEXECUTOR_RETURN_IF_ERROR(BindLoaded(name, handle, *kernel));
    kernel->params_ = std::move(params);
    kernel->shared_is_parameter_ = shared_is_parameter;
    return Status();
  }

  [[gnu::cold]] Status SpecRefused(std::string_view caller, const MultiKernelLoaderSpec& spec) const {
    return Status(spec.status().code(),
                  ::streamexecutor::detail::Format("{} on {}: {}", caller, label_, spec.status().message()));
  }
  // Out of line, as BindLoaded: once per unit (or in the compiled part), not
  // inside every signature's GetKernel.
  [[gnu::noinline]] Status CheckGetKernel(const MultiKernelLoaderSpec& spec, const KernelBase* kernel,
                                          std::span<const KernelParamInfo> params) const {
    if (kernel == nullptr) return MakeError(ErrorCode::kInvalidArgument, "GetKernel on {}: kernel is null", label_);
    if (!spec.status().ok()) return SpecRefused("GetKernel", spec);
    const std::string_view name = B::SpecKernelName(spec);
    if (kernel->executor() != this) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: kernel '{}' was constructed for a different StreamExecutor", label_, name);
    }
    if (spec.arity() != params.size()) {
      std::string declared = "(";
      for (const KernelParamInfo& param : params) {
        if (declared.size() > 1) declared += ", ";
        declared += param.declared_type;
      }
      declared += ")";
      return MakeError(ErrorCode::kInvalidArgument,
                       "GetKernel on {}: MultiKernelLoaderSpec for kernel '{}' declares arity {}, but the TypedKernel "
                       "has {} parameter(s) {}",
                       label_, name, spec.arity(), params.size(), declared);
    }
    return Status();
  }

 public:
  // ---- Library state ----------------------------------------------------------

  // State that a library built on the core keeps per device (a BLAS handle, an
  // FFT plan cache), made by `make()` -> StatusOr<std::unique_ptr<State>> on
  // first use and owned by this executor. `make` must not ask for another
  // extension of this executor.
  template <typename State, typename Make>
  StatusOr<State*> GetOrCreateExtension(Make&& make) {
    return extensions_.template GetOrCreate<State>(std::forward<Make>(make));
  }
  // The State if it was created, else null.
  template <typename State>
  State* FindExtension() const {
    return extensions_.template Find<State>();
  }

  // The canned-operation plugins chosen for this device (core/plugin.hpp).
  PluginConfig plugin_config() const { return plugins_.Current(); }
  // For canned-operation libraries: the plugin of `Kind` to use, fixed from
  // the first call on.
  template <PluginKind Kind>
  PluginId<Kind> UsePlugin() {
    return plugins_.template Use<Kind>();
  }

  typename B::ExecutorState& native_state() { return state_; }
  const typename B::ExecutorState& native_state() const { return state_; }

  // 32-bit fills write whole, aligned words on every backend (OpenCL and
  // CUDA require it; the host backend would otherwise store misaligned).
  Status CheckMemset32(std::string_view caller, const DeviceMemoryBase& location, std::uint64_t size) const {
    if (size % 4 != 0) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: size {} is not a multiple of 4 bytes", caller, label_,
                       size);
    }
    if (location.offset() % 4 != 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{} on {}: the destination view starts at byte offset {}, which is not a multiple of 4", caller,
                       label_, location.offset());
    }
    return Status();
  }
  Status CheckHostPointer(std::string_view caller, const void* host, std::uint64_t size) const {
    if (host == nullptr && size != 0) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the host pointer is null for a {}-byte copy", caller,
                       label_, size);
    }
    return Status();
  }
  // Typed copies compare element counts first; a null view has none, and the
  // byte form's check says why it is null (freed, out-of-range slice), so
  // those skip the comparison.
  template <typename T, typename Src, typename Dst>
  Status CheckElementCounts(std::string_view caller, const Src& source, const Dst& destination) const {
    if constexpr (std::is_base_of_v<DeviceMemoryBase, Src>) {
      if (source.IsNull()) return Status();
    }
    if constexpr (std::is_base_of_v<DeviceMemoryBase, Dst>) {
      if (destination.IsNull()) return Status();
    }
    return CheckElementCounts<T>(caller, Count(source), Count(destination));
  }
  template <typename T>
  Status CheckElementCounts(std::string_view caller, std::uint64_t source_count,
                            std::uint64_t destination_count) const {
    if (source_count > destination_count) {
      return MakeError(ErrorCode::kOutOfRange,
                       "{} on {}: the source holds {} elements of {} ({} bytes) but the destination only {} ({} "
                       "bytes)",
                       caller, label_, source_count, detail::TypeName<T>(), detail::SaturatingBytes<T>(source_count),
                       destination_count, detail::SaturatingBytes<T>(destination_count));
    }
    return Status();
  }
  template <typename V>
  static std::uint64_t Count(const V& value) {
    if constexpr (std::is_base_of_v<DeviceMemoryBase, V>)
      return value.ElementCount();
    else
      return value;
  }
  // Synchronous operations, for every backend: validated like their Then*
  // forms, then run after the work already queued on this executor's streams
  // (core/synchronous.hpp).
  template <typename Operation>
  Status RunSynchronously(std::string_view caller, const Operation& operation) {
    STREAMEXECUTOR_RETURN_IF_ERROR(op::Validate(*this, caller, operation));
    STREAMEXECUTOR_RETURN_IF_ERROR(this->RefuseWhileCapturing(caller, label_));
    if (trace::detail::Observing()) [[unlikely]]
      return RunTraced(caller, operation);
    return this->RunValidated(state_, operation);
  }
  // On the executor's "synchronous" lane, timed by the host's clock: the
  // caller's wait is what a synchronous call costs it (core/trace.hpp).
  template <typename Operation>
  [[gnu::cold, gnu::noinline]] Status RunTraced(std::string_view caller, const Operation& operation) {
    const trace::detail::SynchronousStart start = trace::detail::BeginSynchronous();
    Status status = this->RunValidated(state_, operation);
    trace::detail::RecordSynchronous(this, label_, trace::detail::Describe(caller, operation), start, status);
    return status;
  }

  Status NullArgument(std::string_view caller, std::string_view role) const {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the {} pointer is null", caller, label_, role);
  }

 private:
  friend class Platform<B>;
  friend class detail::AdoptionApi<B>;
  friend class detail::IpcApi<B>;
  friend class detail::PinnedHostMemoryApi<B>;
  friend class detail::PeerAccessApi<B>;
  friend class MemoryPool<B>;

  StreamExecutor(Platform<B>* platform, int ordinal) : platform_(platform), ordinal_(ordinal) {}

  // Two-step construction so that Platform can report OpenExecutor's Status.
  Status Open() {
    label_ = ::streamexecutor::detail::Format("{}:{}", B::kName, ordinal_);
    STREAMEXECUTOR_RETURN_IF_ERROR(B::OpenExecutor(platform_->native_state(), ordinal_, state_));
    description_ = B::Describe(state_);
    detail::RaiseZeroLaunchLimits(description_);  // detail::FitsDevice relies on it
    return Status();
  }

  enum class MemoryKind { kDevice, kUnified };
  StatusOr<DeviceMemoryBase> AllocateBytes(std::uint64_t count, std::size_t element_size, std::string_view element_type,
                                           MemoryKind kind = MemoryKind::kDevice) {
    if (count == 0) {
      return MakeError(ErrorCode::kInvalidArgument, "allocation on {}: zero elements of {} requested", label_,
                       element_type);
    }
    const std::uint64_t limit = description_.max_allocation_size;
    if (count > limit / element_size) {
      return MakeError(ErrorCode::kResourceExhausted,
                       "allocation on {}: {} elements of {} exceed the device's largest allocation of {} bytes", label_,
                       count, element_type, limit);
    }
    const std::uint64_t bytes = count * element_size;
    StatusOr<DeviceMemoryBase> memory = [&]() -> StatusOr<DeviceMemoryBase> {
      if constexpr (UnifiedMemoryBackend<B>) {
        if (kind == MemoryKind::kUnified) return B::AllocateUnified(state_, bytes);
      }
      return B::Allocate(state_, bytes);
    }();
    if (!memory.ok()) return DescribeExhaustion(memory.status(), "allocation", bytes);
    StatusOr<DeviceMemoryBase> registered = RegisterAllocation(memory.value().opaque(), bytes);
    if (!registered.ok()) B::Deallocate(state_, memory.value()).IgnoreError();
    if (trace::detail::Observing()) [[unlikely]]
      trace::detail::RecordAllocation(this, label_, kind == MemoryKind::kUnified ? "AllocateUnified" : "Allocate",
                                      bytes, registered.status());
    return registered;
  }

  // An out-of-memory Status says what holds the device's memory: "allocation
  // on host:0 of 3.2 GiB: ...; 10.1 GiB in use by 412 allocations, 2.0 GiB
  // reserved in memory pools". Other errors pass unchanged.
  Status DescribeExhaustion(Status status, std::string_view caller, std::uint64_t bytes) const {
    if (status.code() != ErrorCode::kResourceExhausted) return status;
    const detail::AllocationCounts counts = registry_.Counts();
    return MakeError(ErrorCode::kResourceExhausted,
                     "{} on {} of {}: {}; {} in use by {} allocations, {} reserved in memory pools", caller, label_,
                     detail::FormatBytes(bytes), status.message(), detail::FormatBytes(counts.bytes_in_use),
                     counts.allocations_in_use, detail::FormatBytes(counts.bytes_reserved_in_pools));
  }

  // The registry's calls with this executor's label for their messages
  // (core/interop.hpp and core/pinned_memory.hpp make them too).
  StatusOr<DeviceMemoryBase> RegisterAllocation(void* opaque, std::uint64_t bytes,
                                                detail::RecordKind kind = detail::RecordKind::kAllocated) {
    return registry_.Register(label_, opaque, bytes, kind);
  }
  Status RetireRecord(std::string_view caller, const DeviceMemoryBase& memory, detail::RecordKind kind) {
    return registry_.Retire(caller, label_, memory, kind);
  }
  std::vector<DeviceMemoryBase> RetireAll(detail::RecordKind kind) { return registry_.RetireAll(kind); }

  static Status FreeOwned(void* owner, DeviceMemoryBase* memory) {
    return static_cast<StreamExecutor*>(owner)->Deallocate(memory);
  }
  // Interns the kernel's name (launch messages point to it) and hands the
  // loaded handle to `kernel`.
  [[gnu::noinline]] Status BindLoaded(const std::string& name, typename B::KernelHandle& handle, KernelBase& kernel) {
    const std::string* interned = nullptr;
    try {
      std::lock_guard<std::mutex> lock(kernel_names_mutex_);
      interned = &*kernel_names_.insert(name).first;
    } catch (...) {
      B::ReleaseKernel(state_, handle);
      return MakeError(ErrorCode::kResourceExhausted, "GetKernel on {}: out of host memory for kernel '{}'", label_,
                       name);
    }
    kernel.Bind(handle, &ReleaseKernel, interned, &label_);
    return Status();
  }
  static void ReleaseKernel(const void* owner, std::byte* handle) {
    auto* self = static_cast<StreamExecutor*>(const_cast<void*>(owner));
    B::ReleaseKernel(self->state_, *std::launder(reinterpret_cast<typename B::KernelHandle*>(handle)));
  }

  Platform<B>* platform_;
  int ordinal_;
  std::string label_;
  typename B::ExecutorState state_{};
  DeviceDescription description_;
  detail::ExtensionSlots extensions_;
  detail::PluginSelection plugins_{B::DefaultPlugins()};
  // What makes views of this executor's memory live (core/allocation_registry.hpp).
  detail::AllocationRegistry registry_{this};
  // Node-based, so that the strings never move: launches keep pointers to them.
  std::mutex kernel_names_mutex_;
  std::unordered_set<std::string> kernel_names_;
  detail::PeerList peers_;  // last: the launch path's members keep their offsets (core/peer_access.hpp)
};

template <Backend B>
StatusOr<StreamExecutor<B>*> Platform<B>::ExecutorForDevice(int ordinal) {
  if (!init_status_.ok()) {
    return MakeError(init_status_.code() == ErrorCode::kOk ? ErrorCode::kUnavailable : init_status_.code(),
                     "platform '{}' is unavailable: {}", B::kName, init_status_.message());
  }
  const int count = VisibleDeviceCount();
  if (ordinal < 0 || ordinal >= count) {
    return MakeError(
        ErrorCode::kOutOfRange, "device ordinal {} is out of range: platform '{}' has {} device(s){}", ordinal,
        B::kName, count,
        count > 0 ? ::streamexecutor::detail::Format(" (valid ordinals 0..{})", count - 1) : std::string());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (executors_.size() < static_cast<std::size_t>(count)) executors_.resize(static_cast<std::size_t>(count));
  auto& slot = executors_[static_cast<std::size_t>(ordinal)];
  if (!slot) {
    std::unique_ptr<StreamExecutor<B>> executor(new StreamExecutor<B>(this, ordinal));
    STREAMEXECUTOR_RETURN_IF_ERROR(executor->Open());
    slot = std::move(executor);
  }
  return slot.get();
}

template <Backend B>
StatusOr<StreamExecutor<B>*> Platform<B>::ExecutorForDeviceWithPluginConfig(int ordinal, const PluginConfig& config) {
  StatusOr<StreamExecutor<B>*> executor = ExecutorForDevice(ordinal);
  if (!executor.ok()) return executor;
  STREAMEXECUTOR_RETURN_IF_ERROR(executor.value()->plugins_.Adopt(config, B::kName, executor.value()->DeviceLabel()));
  return executor;
}

}  // namespace streamexecutor
