// What a command buffer recorded into its CUDA graph, kept so that the same
// nodes can be added to another graph. CUDA refuses a child graph node whose
// graph holds a conditional node, so a conditional's body, and a nested
// buffer that holds a conditional, are copied node by node instead: each
// node from the driver's own copy of its parameters (cuGraph*NodeGetParams),
// and a conditional from what was recorded (a CUDA 13.0 driver cannot say
// what a conditional node's body holds). A child graph node is copied from a
// clone of its graph, or, where the driver will not clone it, from a copy of
// that graph node by node as the driver lists it.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/cuda/driver.hpp"

namespace streamexecutor::cuda_detail {

struct GraphEntry {
  enum class Kind : std::uint8_t {
    kKernel,
    kCopy,
    kFill,
    kEmpty,
    kHost,
    kEventRecord,
    kEventWait,
    kChild,
    kConditional
  };
  Kind kind = Kind::kEmpty;
  CUgraphNode node = nullptr;       // in the graph the entries describe; a conditional's is its conditional node
  std::vector<std::uint32_t> deps;  // earlier entries of that graph; none: a root
  CUdeviceptr condition = 0;        // a conditional's int32
  bool loop = false;                // a While
  std::vector<GraphEntry> body;     // a conditional's body, without a While's trailing setter node
};

// The entries from `first` on that no later entry depends on.
inline std::vector<std::uint32_t> LeafEntries(const std::vector<GraphEntry>& entries, std::size_t first) {
  std::vector<bool> used(entries.size() - first, false);
  for (std::size_t i = first; i < entries.size(); ++i) {
    for (const std::uint32_t dep : entries[i].deps) {
      if (dep >= first) used[dep - first] = true;
    }
  }
  std::vector<std::uint32_t> leaves;
  for (std::size_t i = first; i < entries.size(); ++i) {
    if (!used[i - first]) leaves.push_back(static_cast<std::uint32_t>(i));
  }
  return leaves;
}

// The entries of `nodes`, nodes of the graph `entries` describe (the latest
// are looked for first: dependencies are nearly always among them).
inline Status EntryIndices(const std::vector<GraphEntry>& entries, int ordinal, const std::vector<CUgraphNode>& nodes,
                           std::vector<std::uint32_t>& out) {
  try {
    out.clear();
    out.reserve(nodes.size());
    for (const CUgraphNode node : nodes) {
      std::size_t i = entries.size();
      while (i > 0 && entries[i - 1].node != node) --i;
      if (i == 0) {
        return MakeError(ErrorCode::kInternal, "a dependency that a command buffer on cuda:{} did not record", ordinal);
      }
      out.push_back(static_cast<std::uint32_t>(i - 1));
    }
  } catch (...) {
    return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                     ordinal);
  }
  return Status();
}

class GraphCopier {
 public:
  // `setter`: the kernel that sets a conditional handle (conditional_setter.hpp).
  GraphCopier(const DriverApi& api, CUcontext context, int ordinal, CUfunction setter)
      : api_(&api), context_(context), ordinal_(ordinal), setter_(setter) {}

  // Adds copies of `source`'s nodes to `target`, whose entries are `out`
  // (appended to): a root of `source` depends on out's entries `roots`.
  // The caller holds the context current.
  Status Copy(const std::vector<GraphEntry>& source, CUgraph target, std::span<const std::uint32_t> roots,
              std::vector<GraphEntry>& out) const {
    try {
      return CopyEntries(source, target, roots, out);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                       ordinal_);
    }
  }

  // A conditional in `target` after `deps`: a one-thread setter node that
  // reads the int32 at `condition` into a new handle, the conditional node,
  // and in its body a copy of `body`, followed for a While by the setter
  // again. `entry` gets the conditional node and a record of its body.
  Status AddConditional(CUgraph target, std::span<const CUgraphNode> deps, CUdeviceptr condition, bool loop,
                        const std::vector<GraphEntry>& body, GraphEntry& entry) const {
    try {
      return AddConditionalNodes(target, deps, condition, loop, body, entry);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on cuda:{}: out of memory",
                       ordinal_);
    }
  }

 private:
  Status Failed(CUresult r, std::string_view call) const {
    return api_->Error(r, call, "recording into a command buffer on cuda:{}", ordinal_);
  }

  Status CopyEntries(const std::vector<GraphEntry>& source, CUgraph target, std::span<const std::uint32_t> roots,
                     std::vector<GraphEntry>& out) const {
    const std::size_t base = out.size();
    std::vector<CUgraphNode> deps;
    for (const GraphEntry& from : source) {
      GraphEntry to;
      to.kind = from.kind;
      if (from.deps.empty()) {
        to.deps.assign(roots.begin(), roots.end());
      } else {
        for (const std::uint32_t dep : from.deps) to.deps.push_back(static_cast<std::uint32_t>(base + dep));
      }
      deps.clear();
      for (const std::uint32_t dep : to.deps) deps.push_back(out[dep].node);
      if (from.kind == GraphEntry::Kind::kConditional) {
        STREAMEXECUTOR_RETURN_IF_ERROR(AddConditionalNodes(target, deps, from.condition, from.loop, from.body, to));
      } else {
        STREAMEXECUTOR_RETURN_IF_ERROR(CopyNode(from.kind, from.node, target, deps, to.node));
      }
      out.push_back(std::move(to));
    }
    return Status();
  }

  // A copy of `from`, a node of kind `kind` but not a conditional, in `target` after `deps`.
  Status CopyNode(GraphEntry::Kind kind, CUgraphNode from, CUgraph target, std::span<const CUgraphNode> deps,
                  CUgraphNode& to) const {
    const CUgraphNode* after = deps.empty() ? nullptr : deps.data();
    std::string_view call;
    CUresult r = CUDA_SUCCESS;
    switch (kind) {
      case GraphEntry::Kind::kKernel: {
        CUDA_KERNEL_NODE_PARAMS params{};
        call = "cuGraphKernelNodeGetParams";
        r = api_->cuGraphKernelNodeGetParams(from, &params);
        if (r == CUDA_SUCCESS) {
          call = "cuGraphAddKernelNode";
          r = api_->cuGraphAddKernelNode(&to, target, after, deps.size(), &params);
        }
        break;
      }
      case GraphEntry::Kind::kCopy: {
        CUDA_MEMCPY3D params{};
        call = "cuGraphMemcpyNodeGetParams";
        r = api_->cuGraphMemcpyNodeGetParams(from, &params);
        if (r == CUDA_SUCCESS) {
          call = "cuGraphAddMemcpyNode";
          r = api_->cuGraphAddMemcpyNode(&to, target, after, deps.size(), &params, context_);
        }
        break;
      }
      case GraphEntry::Kind::kFill: {
        CUDA_MEMSET_NODE_PARAMS params{};
        call = "cuGraphMemsetNodeGetParams";
        r = api_->cuGraphMemsetNodeGetParams(from, &params);
        if (r == CUDA_SUCCESS) {
          call = "cuGraphAddMemsetNode";
          r = api_->cuGraphAddMemsetNode(&to, target, after, deps.size(), &params, context_);
        }
        break;
      }
      case GraphEntry::Kind::kEmpty:
        call = "cuGraphAddEmptyNode";
        r = api_->cuGraphAddEmptyNode(&to, target, after, deps.size());
        break;
      case GraphEntry::Kind::kHost: {
        // The same user data: the copy runs the recording buffer's callable
        // and reports to it, as a child graph node's host node does.
        CUDA_HOST_NODE_PARAMS params{};
        call = "cuGraphHostNodeGetParams";
        r = api_->cuGraphHostNodeGetParams(from, &params);
        if (r == CUDA_SUCCESS) {
          call = "cuGraphAddHostNode";
          r = api_->cuGraphAddHostNode(&to, target, after, deps.size(), &params);
        }
        break;
      }
      case GraphEntry::Kind::kEventRecord:
      case GraphEntry::Kind::kEventWait: {
        const bool record = kind == GraphEntry::Kind::kEventRecord;
        CUevent event = nullptr;
        call = record ? "cuGraphEventRecordNodeGetEvent" : "cuGraphEventWaitNodeGetEvent";
        r = record ? api_->cuGraphEventRecordNodeGetEvent(from, &event)
                   : api_->cuGraphEventWaitNodeGetEvent(from, &event);
        if (r == CUDA_SUCCESS) {
          call = record ? "cuGraphAddEventRecordNode" : "cuGraphAddEventWaitNode";
          r = record ? api_->cuGraphAddEventRecordNode(&to, target, after, deps.size(), event)
                     : api_->cuGraphAddEventWaitNode(&to, target, after, deps.size(), event);
        }
        break;
      }
      case GraphEntry::Kind::kChild: {
        CUgraph embedded = nullptr;
        if (r = api_->cuGraphChildGraphNodeGetGraph(from, &embedded); r != CUDA_SUCCESS) {
          return Failed(r, "cuGraphChildGraphNodeGetGraph");
        }
        return AddChild(target, deps, embedded, to);
      }
      case GraphEntry::Kind::kConditional:
        return MakeError(ErrorCode::kInternal, "a conditional node copied as a plain node on cuda:{}", ordinal_);
    }
    if (r != CUDA_SUCCESS) return Failed(r, call);
    return Status();
  }

  // A child graph node in `target` running what `embedded` (the graph a
  // child graph node owns) holds. The node is made from a graph of our own:
  // a clone where the driver clones it, else a copy node by node, because a
  // 580 driver refuses to clone a child graph whose parent holds a
  // conditional node (CUDA_ERROR_NOT_SUPPORTED; seen on an H200, docs/cuda.md).
  Status AddChild(CUgraph target, std::span<const CUgraphNode> deps, CUgraph embedded, CUgraphNode& node) const {
    CUgraph child = nullptr;
    if (const CUresult r = api_->cuGraphClone(&child, embedded); r == CUDA_ERROR_NOT_SUPPORTED) {
      if (const CUresult created = api_->cuGraphCreate(&child, 0); created != CUDA_SUCCESS) {
        return Failed(created, "cuGraphCreate");
      }
      if (Status copied = CopyDriverGraph(embedded, child); !copied.ok()) {
        api_->cuGraphDestroy(child);
        return copied;
      }
    } else if (r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphClone");
    }
    const CUresult r =
        api_->cuGraphAddChildGraphNode(&node, target, deps.empty() ? nullptr : deps.data(), deps.size(), child);
    api_->cuGraphDestroy(child);  // the node holds a copy
    if (r != CUDA_SUCCESS) return Failed(r, "cuGraphAddChildGraphNode");
    return Status();
  }

  // Every node of `from` into the empty graph `to`, from what the driver says
  // `from` holds. Each edge becomes a full dependency: one with a port (a
  // programmatic launch's early trigger) is kept, only waited on in full.
  Status CopyDriverGraph(CUgraph from, CUgraph to) const {
    std::size_t count = 0, edges = 0;
    if (const CUresult r = api_->cuGraphGetNodes(from, nullptr, &count); r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphGetNodes");
    }
    std::vector<CUgraphNode> nodes(count);
    if (const CUresult r = api_->cuGraphGetNodes(from, nodes.data(), &count); r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphGetNodes");
    }
    nodes.resize(count);
    if (api_->cuGraphGetEdges == nullptr) {  // older than 12.3, and so than conditional nodes
      return MakeError(ErrorCode::kUnimplemented, "the CUDA driver on cuda:{} has no cuGraphGetEdges (CUDA 12.3)",
                       ordinal_);
    }
    if (const CUresult r = api_->cuGraphGetEdges(from, nullptr, nullptr, nullptr, &edges); r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphGetEdges");
    }
    std::vector<CUgraphNode> sources(edges), sinks(edges);
    std::vector<CUgraphEdgeData> data(edges);
    if (const CUresult r = api_->cuGraphGetEdges(from, sources.data(), sinks.data(), data.data(), &edges);
        r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphGetEdges");
    }
    auto index_of = [&nodes](CUgraphNode node) {
      return static_cast<std::size_t>(std::find(nodes.begin(), nodes.end(), node) - nodes.begin());
    };
    // Kahn's order: a node is added once everything it depends on has been.
    std::vector<std::vector<std::size_t>> before(count);
    std::vector<std::size_t> waiting(count, 0);
    for (std::size_t e = 0; e < std::min(edges, sources.size()); ++e) {
      const std::size_t source = index_of(sources[e]), sink = index_of(sinks[e]);
      if (source >= count || sink >= count) {
        return MakeError(ErrorCode::kInternal, "cuGraphGetEdges named a node cuGraphGetNodes did not, on cuda:{}",
                         ordinal_);
      }
      before[sink].push_back(source);
      ++waiting[sink];
    }
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < count; ++i) {
      if (waiting[i] == 0) order.push_back(i);
    }
    std::vector<CUgraphNode> copies(count, nullptr), deps;
    for (std::size_t next = 0; next < order.size(); ++next) {
      const std::size_t i = order[next];
      deps.clear();
      for (const std::size_t source : before[i]) {
        if (std::find(deps.begin(), deps.end(), copies[source]) == deps.end()) deps.push_back(copies[source]);
      }
      CUgraphNodeType type{};
      if (const CUresult r = api_->cuGraphNodeGetType(nodes[i], &type); r != CUDA_SUCCESS) {
        return Failed(r, "cuGraphNodeGetType");
      }
      GraphEntry::Kind kind{};
      switch (type) {
        case CU_GRAPH_NODE_TYPE_KERNEL: kind = GraphEntry::Kind::kKernel; break;
        case CU_GRAPH_NODE_TYPE_MEMCPY: kind = GraphEntry::Kind::kCopy; break;
        case CU_GRAPH_NODE_TYPE_MEMSET: kind = GraphEntry::Kind::kFill; break;
        case CU_GRAPH_NODE_TYPE_HOST: kind = GraphEntry::Kind::kHost; break;
        case CU_GRAPH_NODE_TYPE_GRAPH: kind = GraphEntry::Kind::kChild; break;
        case CU_GRAPH_NODE_TYPE_EMPTY: kind = GraphEntry::Kind::kEmpty; break;
        case CU_GRAPH_NODE_TYPE_WAIT_EVENT: kind = GraphEntry::Kind::kEventWait; break;
        case CU_GRAPH_NODE_TYPE_EVENT_RECORD: kind = GraphEntry::Kind::kEventRecord; break;
        default:
          return MakeError(ErrorCode::kUnimplemented,
                           "a nested graph holds a node of type {} (CUgraphNodeType), which a command buffer on "
                           "cuda:{} cannot copy into a conditional's body",
                           static_cast<int>(type), ordinal_);
      }
      STREAMEXECUTOR_RETURN_IF_ERROR(CopyNode(kind, nodes[i], to, deps, copies[i]));
      for (std::size_t later = 0; later < count; ++later) {
        for (const std::size_t source : before[later]) {
          if (source == i && --waiting[later] == 0) order.push_back(later);
        }
      }
    }
    if (order.size() != count) {
      return MakeError(ErrorCode::kInternal, "a nested graph on cuda:{} has a cycle", ordinal_);
    }
    return Status();
  }

  Status AddConditionalNodes(CUgraph target, std::span<const CUgraphNode> deps, CUdeviceptr condition, bool loop,
                             const std::vector<GraphEntry>& body, GraphEntry& entry) const {
    CUgraphConditionalHandle handle = 0;
    if (const CUresult r =
            api_->cuGraphConditionalHandleCreate(&handle, target, context_, 0, CU_GRAPH_COND_ASSIGN_DEFAULT);
        r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphConditionalHandleCreate");
    }
    void* arguments[] = {&handle, &condition};
    CUDA_KERNEL_NODE_PARAMS set{};
    set.func = setter_;
    set.gridDimX = set.gridDimY = set.gridDimZ = 1;
    set.blockDimX = set.blockDimY = set.blockDimZ = 1;
    set.kernelParams = arguments;
    CUgraphNode set_node = nullptr;
    if (const CUresult r =
            api_->cuGraphAddKernelNode(&set_node, target, deps.empty() ? nullptr : deps.data(), deps.size(), &set);
        r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphAddKernelNode (a conditional's setter)");
    }
    CUgraphNodeParams params{};
    params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    params.conditional.handle = handle;
    params.conditional.type = loop ? CU_GRAPH_COND_TYPE_WHILE : CU_GRAPH_COND_TYPE_IF;
    params.conditional.size = 1;
    params.conditional.ctx = context_;
    if (const CUresult r = api_->cuGraphAddNode(&entry.node, target, &set_node, 1, &params); r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphAddNode (a conditional node)");
    }
    entry.kind = GraphEntry::Kind::kConditional;
    entry.condition = condition;
    entry.loop = loop;
    entry.body.clear();
    const CUgraph inner = params.conditional.phGraph_out[0];
    STREAMEXECUTOR_RETURN_IF_ERROR(CopyEntries(body, inner, {}, entry.body));
    if (!loop) return Status();
    std::vector<CUgraphNode> last;
    for (const std::uint32_t leaf : LeafEntries(entry.body, 0)) last.push_back(entry.body[leaf].node);
    CUgraphNode again = nullptr;
    if (const CUresult r =
            api_->cuGraphAddKernelNode(&again, inner, last.empty() ? nullptr : last.data(), last.size(), &set);
        r != CUDA_SUCCESS) {
      return Failed(r, "cuGraphAddKernelNode (a While's setter, in its body)");
    }
    return Status();
  }

  const DriverApi* api_;
  CUcontext context_;
  int ordinal_;
  CUfunction setter_;
};

}  // namespace streamexecutor::cuda_detail
