// The CUDA backend's command buffer: a CUDA graph built node by node as the
// operations are recorded (each node depends on everything before it, which
// is stream order, unless CommandBuffer::After names its dependencies), instantiated at Finalize and launched with
// cuGraphLaunch at each submission. Kernel parameters are copied by the driver when the node is added; host callables
// are kept here, run by host nodes.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/conditional_setter.hpp"
#include "streamexecutor/cuda/driver.hpp"
#include "streamexecutor/cuda/graph_copy.hpp"
#include "streamexecutor/cuda/state.hpp"
#include "streamexecutor/detail/stored_callback.hpp"

namespace streamexecutor::cuda_detail {

class RecordedGraph {
 public:
  RecordedGraph(const DriverApi& api, CUcontext context, int ordinal, ModuleCache* modules)
      : api_(&api), context_(context), ordinal_(ordinal), modules_(modules) {}
  RecordedGraph(const RecordedGraph&) = delete;
  RecordedGraph& operator=(const RecordedGraph&) = delete;

  Status Create() {
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    if (const CUresult r = api_->cuGraphCreate(&graph_, 0); r != CUDA_SUCCESS) {
      graph_ = nullptr;
      return api_->Error(r, "cuGraphCreate", "for a command buffer on cuda:{}", ordinal_);
    }
    return Status();
  }
  // The buffer's end. The driver objects go at once (an executable graph
  // destroyed while launched is freed by the driver when the launch
  // completes); the callables stay until the last submission that runs them
  // is done, since each such submission holds a reference.
  void Release() {
    if (const ContextScope scope(*api_, context_); scope.ok()) {
      if (exec_ != nullptr) api_->cuGraphExecDestroy(exec_);
      if (graph_ != nullptr) api_->cuGraphDestroy(graph_);
    }
    exec_ = nullptr;
    graph_ = nullptr;
    Unref();
  }

  int ordinal() const { return ordinal_; }
  ModuleCache* modules() const { return modules_; }
  CUcontext context() const { return context_; }
  const DriverApi* api() const { return api_; }

  // Adds a node: `add(node, graph, dependencies, count)` is the
  // cuGraphAdd*Node call, named `call` in errors. A node depends on the
  // graph's leaves (everything before it, as on a stream) unless
  // SetNextDependencies named its dependencies. Every recorded operation
  // has its node in nodes_ (an empty copy or fill an empty node), so that an
  // update or a dependency finds it by the operation's index. `kind` is
  // what the node is, for a copy of this graph (graph_copy.hpp).
  template <typename Add>
  Status AddNode(const std::string_view& call, GraphEntry::Kind kind,
                 Add&& add) {  // by reference: `add` may say which call failed
    if (Status s = MakeRoom(); !s.ok()) return s;
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    const std::vector<CUgraphNode>& dependencies = Dependencies();
    GraphEntry entry;
    entry.kind = kind;
    STREAMEXECUTOR_RETURN_IF_ERROR(EntryIndices(entries_, ordinal_, dependencies, entry.deps));
    const CUresult r =
        add(&entry.node, graph_, dependencies.empty() ? nullptr : dependencies.data(), dependencies.size());
    if (r != CUDA_SUCCESS) return api_->Error(r, call, "recording into a command buffer on cuda:{}", ordinal_);
    Placed(std::move(entry));
    return Status();
  }
  Status AddEmpty() {
    return AddNode("cuGraphAddEmptyNode", GraphEntry::Kind::kEmpty,
                   [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                     return api_->cuGraphAddEmptyNode(node, graph, deps, n);
                   });
  }
  // The next node depends on the index-th operations' nodes only.
  Status SetNextDependencies(std::span<const std::size_t> operations) {
    try {
      next_.clear();
      for (std::size_t index : operations) {
        if (index >= nodes_.size()) {
          return MakeError(ErrorCode::kInternal, "a dependency on operation {} of a command buffer on cuda:{}", index,
                           ordinal_);
        }
        if (std::find(next_.begin(), next_.end(), nodes_[index]) == next_.end()) next_.push_back(nodes_[index]);
      }
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                       ordinal_);
    }
    has_next_ = true;
    return Status();
  }

  Status AddKernel(const CUDA_KERNEL_NODE_PARAMS& params) {
    return AddNode("cuGraphAddKernelNode", GraphEntry::Kind::kKernel,
                   [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                     return api_->cuGraphAddKernelNode(node, graph, deps, n, &params);
                   });
  }
  static CUDA_MEMCPY3D CopyParams(CUmemorytype src_type, CUdeviceptr src_device, const void* src_host,
                                  CUmemorytype dst_type, CUdeviceptr dst_device, void* dst_host, std::uint64_t bytes) {
    CUDA_MEMCPY3D copy{};
    copy.srcMemoryType = src_type;
    copy.srcDevice = src_device;
    copy.srcHost = src_host;
    copy.dstMemoryType = dst_type;
    copy.dstDevice = dst_device;
    copy.dstHost = dst_host;
    copy.WidthInBytes = bytes;
    copy.Height = 1;
    copy.Depth = 1;
    return copy;
  }
  Status AddCopy(const CUDA_MEMCPY3D& copy) {
    if (copy.WidthInBytes == 0) return AddEmpty();
    return AddNode("cuGraphAddMemcpyNode", GraphEntry::Kind::kCopy,
                   [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                     return api_->cuGraphAddMemcpyNode(node, graph, deps, n, &copy, context_);
                   });
  }
  // `count` elements of `element_size` (1 or 4) bytes.
  static CUDA_MEMSET_NODE_PARAMS FillParams(CUdeviceptr dst, unsigned value, unsigned element_size,
                                            std::uint64_t count) {
    CUDA_MEMSET_NODE_PARAMS fill{};
    fill.dst = dst;
    fill.value = value;
    fill.elementSize = element_size;
    fill.width = count;
    fill.height = 1;
    return fill;
  }
  Status AddFill(const CUDA_MEMSET_NODE_PARAMS& fill) {
    if (fill.width == 0) return AddEmpty();
    return AddNode("cuGraphAddMemsetNode", GraphEntry::Kind::kFill,
                   [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                     return api_->cuGraphAddMemsetNode(node, graph, deps, n, &fill, context_);
                   });
  }

  // Updates: the graph's node (what a clone or a new instantiation starts
  // from) and, once finalized, the executable graph's, which later launches
  // run. An empty copy or fill has no node and stays empty (the core checks).
  Status SetKernel(std::size_t index, const CUDA_KERNEL_NODE_PARAMS& params) {
    return Set(
        index, "cuGraphKernelNodeSetParams", "cuGraphExecKernelNodeSetParams",
        [&](CUgraphNode node) { return api_->cuGraphKernelNodeSetParams(node, &params); },
        [&](CUgraphNode node) { return api_->cuGraphExecKernelNodeSetParams(exec_, node, &params); });
  }
  Status SetCopy(std::size_t index, const CUDA_MEMCPY3D& copy) {
    return Set(
        index, "cuGraphMemcpyNodeSetParams", "cuGraphExecMemcpyNodeSetParams",
        [&](CUgraphNode node) { return api_->cuGraphMemcpyNodeSetParams(node, &copy); },
        [&](CUgraphNode node) { return api_->cuGraphExecMemcpyNodeSetParams(exec_, node, &copy, context_); });
  }
  Status SetFill(std::size_t index, const CUDA_MEMSET_NODE_PARAMS& fill) {
    return Set(
        index, "cuGraphMemsetNodeSetParams", "cuGraphExecMemsetNodeSetParams",
        [&](CUgraphNode node) { return api_->cuGraphMemsetNodeSetParams(node, &fill); },
        [&](CUgraphNode node) { return api_->cuGraphExecMemsetNodeSetParams(exec_, node, &fill, context_); });
  }
  Status AddEvent(bool record, CUevent event) {
    if (record) {
      return AddNode("cuGraphAddEventRecordNode", GraphEntry::Kind::kEventRecord,
                     [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                       return api_->cuGraphAddEventRecordNode(node, graph, deps, n, event);
                     });
    }
    return AddNode("cuGraphAddEventWaitNode", GraphEntry::Kind::kEventWait,
                   [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                     return api_->cuGraphAddEventWaitNode(node, graph, deps, n, event);
                   });
  }

  template <typename Callback>
  Status AddHostCall(Callback&& callback) {
    try {
      owned_.reserve(owned_.size() + 1);
      host_nodes_.reserve(host_nodes_.size() + 1);
      owned_.push_back(streamexecutor::detail::StoredCallback::Make(std::forward<Callback>(callback)));
      callbacks_.push_back(HostNode{this, owned_.back().get()});
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on cuda:{}: copying the callback threw: {}", ordinal_,
                       e.what());
    } catch (...) {
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on cuda:{}: copying the callback threw", ordinal_);
    }
    CUDA_HOST_NODE_PARAMS params{};
    params.fn = &HostNode::Run;
    params.userData = &callbacks_.back();
    STREAMEXECUTOR_RETURN_IF_ERROR(
        AddNode("cuGraphAddHostNode", GraphEntry::Kind::kHost,
                [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                  return api_->cuGraphAddHostNode(node, graph, deps, n, &params);
                }));
    host_nodes_.emplace_back(nodes_.size() - 1, &callbacks_.back());
    return Status();
  }

  // Nesting: a child graph node made from `child`'s graph as it is now (the
  // driver copies it). Its host nodes run `child`'s callables and report to
  // it, so this buffer holds on to `child` and reports its failures too.
  // CUDA refuses a child graph holding a conditional node: such a `child`'s
  // nodes are copied into this graph instead (AddCopied).
  Status AddNested(RecordedGraph& child) {
    try {
      held_.reserve(held_.size() + 1);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                       ordinal_);
    }
    if (child.holds_conditional_) {
      STREAMEXECUTOR_RETURN_IF_ERROR(AddCopied(child.entries_));
      holds_conditional_ = true;
    } else {
      STREAMEXECUTOR_RETURN_IF_ERROR(
          AddNode("cuGraphAddChildGraphNode", GraphEntry::Kind::kChild,
                  [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                    return api_->cuGraphAddChildGraphNode(node, graph, deps, n, child.graph_);
                  }));
    }
    child.references_.fetch_add(1, std::memory_order_relaxed);
    held_.push_back(&child);
    return Status();
  }

  // A canned operation (Stream::EnqueueCanned): `call` enqueues its library's
  // work on a stream of our own in capture mode, and the captured graph
  // becomes a child graph node. The library runs once, here; its work is
  // replayed by each submission.
  template <typename Call>
  Status AddCaptured(std::string_view caller, Call& call) {
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    StreamState capture;
    capture.api = api_;
    capture.context = context_;
    capture.ordinal = ordinal_;
    capture.capturing = true;
    if (const CUresult r = api_->cuStreamCreate(&capture.stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS) {
      return api_->Error(r, "cuStreamCreate", "capturing {} into a command buffer on cuda:{}", caller, ordinal_);
    }
    CUgraph captured = nullptr;
    Status called;
    if (const CUresult r = api_->cuStreamBeginCapture(capture.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        r != CUDA_SUCCESS) {
      called =
          api_->Error(r, "cuStreamBeginCapture", "capturing {} into a command buffer on cuda:{}", caller, ordinal_);
    } else {
      called = call(capture);
      if (const CUresult ended = api_->cuStreamEndCapture(capture.stream, &captured);
          ended != CUDA_SUCCESS && called.ok()) {
        called =
            api_->Error(ended, "cuStreamEndCapture", "capturing {} into a command buffer on cuda:{}", caller, ordinal_);
      }
    }
    api_->cuStreamDestroy(capture.stream);
    if (called.ok()) {
      called = AddNode("cuGraphAddChildGraphNode", GraphEntry::Kind::kChild,
                       [&](CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, std::size_t n) {
                         return api_->cuGraphAddChildGraphNode(node, graph, deps, n, captured);
                       });
    }
    if (captured != nullptr) api_->cuGraphDestroy(captured);  // a child graph node holds a copy
    return called;
  }

  // ThenIf/ThenWhile: a conditional node (CUDA 12.3) whose body holds a
  // copy of `child`'s nodes as they are now (graph_copy.hpp: not a child
  // graph node, which could not hold a conditional of its own). Only device
  // code can set a conditional handle, so a one-thread setter kernel reads
  // the int32 at `condition` into it: a node before the conditional node,
  // and for a While a node at the end of the body.
  Status AddConditional(RecordedGraph& child, CUdeviceptr condition, bool loop) {
    if (api_->cuGraphConditionalHandleCreate == nullptr || api_->cuGraphAddNode == nullptr) {
      return MakeError(ErrorCode::kUnimplemented,
                       "ThenIf/ThenWhile on cuda:{}: the CUDA driver (version {}) has no conditional graph nodes "
                       "(cuGraphConditionalHandleCreate, CUDA 12.3)",
                       ordinal_, api_->driver_version);
    }
    try {
      held_.reserve(held_.size() + 1);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                       ordinal_);
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(MakeRoom());
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    CUfunction setter = nullptr;
    STREAMEXECUTOR_RETURN_IF_ERROR(Setter(&setter));
    GraphEntry entry;
    STREAMEXECUTOR_RETURN_IF_ERROR(EntryIndices(entries_, ordinal_, Dependencies(), entry.deps));
    STREAMEXECUTOR_RETURN_IF_ERROR(GraphCopier(*api_, context_, ordinal_, setter)
                                       .AddConditional(graph_, Dependencies(), condition, loop, child.entries_, entry));
    Placed(std::move(entry));
    holds_conditional_ = true;
    child.references_.fetch_add(1, std::memory_order_relaxed);
    held_.push_back(&child);
    return Status();
  }

  // A copy of this graph (cuGraphClone), not instantiated, whose nodes are
  // found by the same operation indices. Its host nodes get user data of
  // its own, so that its failures are its own; the callables stay this
  // buffer's, which the clone holds on to.
  Status CloneInto(RecordedGraph& clone) {
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    if (const CUresult r = api_->cuGraphClone(&clone.graph_, graph_); r != CUDA_SUCCESS) {
      clone.graph_ = nullptr;
      return api_->Error(r, "cuGraphClone", "cloning a command buffer on cuda:{}", ordinal_);
    }
    auto find = [&](CUgraphNode node, CUgraphNode* found) -> Status {
      *found = nullptr;
      if (node == nullptr) return Status();
      if (const CUresult r = api_->cuGraphNodeFindInClone(found, node, clone.graph_); r != CUDA_SUCCESS) {
        return api_->Error(r, "cuGraphNodeFindInClone", "cloning a command buffer on cuda:{}", ordinal_);
      }
      return Status();
    };
    try {
      clone.nodes_.resize(nodes_.size());
      clone.held_.reserve(held_.size() + 1);
      clone.host_nodes_.reserve(host_nodes_.size());
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "cloning a command buffer on cuda:{}: out of memory", ordinal_);
    }
    // Held first, so that the clone's Release lets go of them whatever fails next.
    for (RecordedGraph* held : held_) {
      held->references_.fetch_add(1, std::memory_order_relaxed);
      clone.held_.push_back(held);
    }
    references_.fetch_add(1, std::memory_order_relaxed);
    clone.kept_ = this;
    for (std::size_t i = 0; i < nodes_.size(); ++i) STREAMEXECUTOR_RETURN_IF_ERROR(find(nodes_[i], &clone.nodes_[i]));
    // The core clones no buffer holding a conditional, and only such a
    // buffer has nodes copied from another: one entry per operation here.
    if (holds_conditional_ || entries_.size() != nodes_.size()) {
      return MakeError(ErrorCode::kUnimplemented, "cloning a command buffer on cuda:{} that holds a conditional",
                       ordinal_);
    }
    try {
      clone.entries_ = entries_;
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "cloning a command buffer on cuda:{}: out of memory", ordinal_);
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) clone.entries_[i].node = clone.nodes_[i];
    try {
      clone.leaves_.resize(leaves_.size());
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "cloning a command buffer on cuda:{}: out of memory", ordinal_);
    }
    for (std::size_t i = 0; i < leaves_.size(); ++i)
      STREAMEXECUTOR_RETURN_IF_ERROR(find(leaves_[i], &clone.leaves_[i]));
    for (const auto& [index, node] : host_nodes_) {
      try {
        clone.callbacks_.push_back(HostNode{&clone, node->callback});
      } catch (...) {
        return MakeError(ErrorCode::kResourceExhausted, "cloning a command buffer on cuda:{}: out of memory", ordinal_);
      }
      CUDA_HOST_NODE_PARAMS params{};
      params.fn = &HostNode::Run;
      params.userData = &clone.callbacks_.back();
      if (const CUresult r = api_->cuGraphHostNodeSetParams(clone.nodes_[index], &params); r != CUDA_SUCCESS) {
        return api_->Error(r, "cuGraphHostNodeSetParams", "cloning a command buffer on cuda:{}", ordinal_);
      }
      clone.host_nodes_.emplace_back(index, &clone.callbacks_.back());
    }
    return Status();
  }

  template <typename InGraph, typename InExec>
  Status Set(std::size_t index, std::string_view graph_call, std::string_view exec_call, InGraph&& in_graph,
             InExec&& in_exec) {
    if (index >= nodes_.size()) {
      return MakeError(ErrorCode::kInternal, "updating a command buffer on cuda:{}: no operation {}", ordinal_, index);
    }
    CUgraphNode node = nodes_[index];
    if (node == nullptr) return Status();
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    // The executable graph first: if the driver rejects the update, the
    // operation stays as it was in both.
    if (exec_ != nullptr) {
      if (const CUresult r = in_exec(node); r != CUDA_SUCCESS) {
        return api_->Error(r, exec_call, "updating operation {} of a command buffer on cuda:{}", index, ordinal_);
      }
    }
    if (const CUresult r = in_graph(node); r != CUDA_SUCCESS) {
      return api_->Error(r, graph_call, "updating operation {} of a command buffer on cuda:{}", index, ordinal_);
    }
    return Status();
  }

  Status Finalize() {
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    if (const CUresult r = api_->cuGraphInstantiateWithFlags(&exec_, graph_, 0); r != CUDA_SUCCESS) {
      exec_ = nullptr;
      return api_->Error(r, "cuGraphInstantiateWithFlags", "finalizing a command buffer on cuda:{}", ordinal_);
    }
    return Status();
  }

  Status SubmitTo(StreamState& stream) {
    if (stream.Failed()) [[unlikely]]
      return Status();  // skipped after a failure, as on every backend
    // Streams on several threads may submit one finalized buffer, and the
    // driver wants calls on one executable graph serialized.
    const std::lock_guard<std::mutex> lock(submit_mutex_);
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) [[unlikely]]
      return scope.status();
    if (const CUresult r = api_->cuGraphLaunch(exec_, stream.stream); r != CUDA_SUCCESS) {
      return api_->Error(r, "cuGraphLaunch", "submitting a command buffer on cuda:{}", ordinal_);
    }
    if (callbacks_.empty() && held_.empty()) return Status();
    // After the graph: hands a host node's failure to this stream and drops
    // the submission's reference.
    auto* done = new (std::nothrow) Submission{this, &stream};
    if (done == nullptr) {
      return MakeError(ErrorCode::kResourceExhausted, "ThenSubmit on cuda:{}: out of memory", ordinal_);
    }
    references_.fetch_add(1, std::memory_order_relaxed);
    if (const CUresult r = api_->cuLaunchHostFunc(stream.stream, &Submission::Run, done); r != CUDA_SUCCESS) {
      delete done;
      references_.fetch_sub(1, std::memory_order_relaxed);
      return api_->Error(r, "cuLaunchHostFunc", "after a command buffer on cuda:{}", ordinal_);
    }
    return Status();
  }

 private:
  ~RecordedGraph() {  // through Release only
    for (RecordedGraph* held : held_) held->Unref();
    if (kept_ != nullptr) kept_->Unref();
  }
  // The first failure of a host node of this buffer or of one it nests.
  Status Failure() const {
    Status failed = failure_.Get();
    for (const RecordedGraph* held : held_) {
      if (!failed.ok()) break;
      failed = held->Failure();
    }
    return failed;
  }
  const std::vector<CUgraphNode>& Dependencies() const { return has_next_ ? next_ : leaves_; }
  // An operation's node is in place: it is a leaf, and what it depends on
  // no longer is. Room made by MakeRoom.
  void Placed(GraphEntry&& entry) {
    if (has_next_) {
      has_next_ = false;
      std::erase_if(leaves_,
                    [&](CUgraphNode leaf) { return std::find(next_.begin(), next_.end(), leaf) != next_.end(); });
    } else {
      leaves_.clear();
    }
    leaves_.push_back(entry.node);
    nodes_.push_back(entry.node);
    entries_.push_back(std::move(entry));
  }
  // `source`'s nodes copied into graph_ after the next operation's
  // dependencies, then an empty node after all of them: the operation's node.
  Status AddCopied(const std::vector<GraphEntry>& source) {
    STREAMEXECUTOR_RETURN_IF_ERROR(MakeRoom());
    const ContextScope scope(*api_, context_);
    if (!scope.ok()) return scope.status();
    CUfunction setter = nullptr;
    STREAMEXECUTOR_RETURN_IF_ERROR(Setter(&setter));
    GraphEntry join;
    std::vector<std::uint32_t> roots;
    STREAMEXECUTOR_RETURN_IF_ERROR(EntryIndices(entries_, ordinal_, Dependencies(), roots));
    const std::size_t first = entries_.size();
    STREAMEXECUTOR_RETURN_IF_ERROR(
        GraphCopier(*api_, context_, ordinal_, setter).Copy(source, graph_, roots, entries_));
    std::vector<CUgraphNode> after;
    try {
      join.deps = entries_.size() > first ? LeafEntries(entries_, first) : roots;
      for (const std::uint32_t dep : join.deps) after.push_back(entries_[dep].node);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                       ordinal_);
    }
    if (const CUresult r =
            api_->cuGraphAddEmptyNode(&join.node, graph_, after.empty() ? nullptr : after.data(), after.size());
        r != CUDA_SUCCESS) {
      return api_->Error(r, "cuGraphAddEmptyNode", "recording into a command buffer on cuda:{}", ordinal_);
    }
    STREAMEXECUTOR_RETURN_IF_ERROR(MakeRoom());
    Placed(std::move(join));
    return Status();
  }
  Status Setter(CUfunction* setter) const {
    if (modules_ == nullptr) {
      return MakeError(ErrorCode::kInternal, "a command buffer on cuda:{} has no module cache", ordinal_);
    }
    return ConditionalSetter(*api_, *modules_, ordinal_, setter);
  }
  Status MakeRoom() {
    try {
      nodes_.reserve(nodes_.size() + 1);
      leaves_.reserve(leaves_.size() + 1);
      entries_.reserve(entries_.size() + 1);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                       ordinal_);
    }
    return Status();
  }
  void Unref() {
    if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // A recorded host callback and the graph whose failure it reports; the
  // host node's user data (a deque: its address never moves).
  struct HostNode {
    RecordedGraph* owner;
    streamexecutor::detail::StoredCallback* callback;  // owned_ of this buffer or of the one it was cloned from
    static void CUDA_CB Run(void* user_data) {
      auto* self = static_cast<HostNode*>(user_data);
      // A submission launched before an earlier one's callback failed still
      // runs its device nodes (the driver cannot cancel them); its callbacks
      // are skipped, as a stream's are.
      if (!self->owner->failure_.Get().ok()) return;
      const HostFunctionScope inside;
      struct Call {
        HostNode* self;
        void operator()() const { self->callback->Invoke(); }
      };
      Call call{self};
      if (Status status = streamexecutor::detail::InvokeHostCallback(call, "cuda", self->owner->ordinal_);
          !status.ok()) {
        self->owner->failure_.Fail(std::move(status));
      }
    }
  };
  struct Submission {
    RecordedGraph* graph;
    StreamState* stream;
    static void CUDA_CB Run(void* user_data) {
      std::unique_ptr<Submission> self(static_cast<Submission*>(user_data));
      if (Status failed = self->graph->Failure(); !failed.ok()) self->stream->Fail(std::move(failed));
      self->graph->Unref();  // frees no driver object: allowed in a host function
    }
  };

  const DriverApi* api_;
  CUcontext context_;
  int ordinal_;
  ModuleCache* modules_;  // the executor's: where the conditional setter is loaded
  std::atomic<int> references_{1};
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<CUgraphNode> leaves_;  // the nodes nothing depends on yet: a new node's default dependencies
  std::vector<CUgraphNode> next_;    // SetNextDependencies's, for the next node
  bool has_next_ = false;
  std::vector<CUgraphNode> nodes_;   // per recorded operation; null: none (an empty copy or fill)
  std::vector<GraphEntry> entries_;  // every node of graph_, for a copy of it (graph_copy.hpp)
  bool holds_conditional_ = false;   // itself or a buffer it nests: it cannot be a child graph
  std::deque<HostNode> callbacks_;
  std::vector<streamexecutor::detail::StoredCallbackPtr> owned_;  // the callables recorded here
  std::vector<std::pair<std::size_t, HostNode*>> host_nodes_;     // operation index, its user data
  std::mutex submit_mutex_;
  std::vector<RecordedGraph*> held_;              // nested buffers: their host nodes run in this graph
  RecordedGraph* kept_ = nullptr;                 // the buffer this one was cloned from: its callables
  streamexecutor::detail::StickyStatus failure_;  // the first host node that threw
};

}  // namespace streamexecutor::cuda_detail
