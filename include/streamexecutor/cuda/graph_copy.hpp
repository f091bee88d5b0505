// What a command buffer recorded into its CUDA graph, kept so that the same
// nodes can be added to another graph. CUDA refuses a child graph node whose
// graph holds a conditional node, so a conditional's body, and a nested
// buffer that holds a conditional, are copied node by node instead: each
// node from the driver's own copy of its parameters (cuGraph*NodeGetParams),
// and a conditional from what was recorded (a CUDA 13.0 driver cannot say
// what a conditional node's body holds).
#pragma once

#include <cuda.h>

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
      const CUgraphNode* after = deps.empty() ? nullptr : deps.data();
      std::string_view call;
      CUresult r = CUDA_SUCCESS;
      switch (from.kind) {
        case GraphEntry::Kind::kKernel: {
          CUDA_KERNEL_NODE_PARAMS params{};
          call = "cuGraphKernelNodeGetParams";
          r = api_->cuGraphKernelNodeGetParams(from.node, &params);
          if (r == CUDA_SUCCESS) {
            call = "cuGraphAddKernelNode";
            r = api_->cuGraphAddKernelNode(&to.node, target, after, deps.size(), &params);
          }
          break;
        }
        case GraphEntry::Kind::kCopy: {
          CUDA_MEMCPY3D params{};
          call = "cuGraphMemcpyNodeGetParams";
          r = api_->cuGraphMemcpyNodeGetParams(from.node, &params);
          if (r == CUDA_SUCCESS) {
            call = "cuGraphAddMemcpyNode";
            r = api_->cuGraphAddMemcpyNode(&to.node, target, after, deps.size(), &params, context_);
          }
          break;
        }
        case GraphEntry::Kind::kFill: {
          CUDA_MEMSET_NODE_PARAMS params{};
          call = "cuGraphMemsetNodeGetParams";
          r = api_->cuGraphMemsetNodeGetParams(from.node, &params);
          if (r == CUDA_SUCCESS) {
            call = "cuGraphAddMemsetNode";
            r = api_->cuGraphAddMemsetNode(&to.node, target, after, deps.size(), &params, context_);
          }
          break;
        }
        case GraphEntry::Kind::kEmpty:
          call = "cuGraphAddEmptyNode";
          r = api_->cuGraphAddEmptyNode(&to.node, target, after, deps.size());
          break;
        case GraphEntry::Kind::kHost: {
          // The same user data: the copy runs the recording buffer's callable
          // and reports to it, as a child graph node's host node does.
          CUDA_HOST_NODE_PARAMS params{};
          call = "cuGraphHostNodeGetParams";
          r = api_->cuGraphHostNodeGetParams(from.node, &params);
          if (r == CUDA_SUCCESS) {
            call = "cuGraphAddHostNode";
            r = api_->cuGraphAddHostNode(&to.node, target, after, deps.size(), &params);
          }
          break;
        }
        case GraphEntry::Kind::kEventRecord:
        case GraphEntry::Kind::kEventWait: {
          const bool record = from.kind == GraphEntry::Kind::kEventRecord;
          CUevent event = nullptr;
          call = record ? "cuGraphEventRecordNodeGetEvent" : "cuGraphEventWaitNodeGetEvent";
          r = record ? api_->cuGraphEventRecordNodeGetEvent(from.node, &event)
                     : api_->cuGraphEventWaitNodeGetEvent(from.node, &event);
          if (r == CUDA_SUCCESS) {
            call = record ? "cuGraphAddEventRecordNode" : "cuGraphAddEventWaitNode";
            r = record ? api_->cuGraphAddEventRecordNode(&to.node, target, after, deps.size(), event)
                       : api_->cuGraphAddEventWaitNode(&to.node, target, after, deps.size(), event);
          }
          break;
        }
        case GraphEntry::Kind::kChild: {
          // Holds no conditional (those are copied node by node): the
          // driver's copy of the child graph nests as it is. That copy
          // belongs to its node; a clone of it is a graph of its own, as
          // every other child graph node here is made from.
          CUgraph embedded = nullptr, child = nullptr;
          call = "cuGraphChildGraphNodeGetGraph";
          r = api_->cuGraphChildGraphNodeGetGraph(from.node, &embedded);
          if (r == CUDA_SUCCESS) {
            call = "cuGraphClone";
            r = api_->cuGraphClone(&child, embedded);
          }
          if (r == CUDA_SUCCESS) {
            call = "cuGraphAddChildGraphNode";
            r = api_->cuGraphAddChildGraphNode(&to.node, target, after, deps.size(), child);
            api_->cuGraphDestroy(child);  // the node holds a copy
          }
          break;
        }
        case GraphEntry::Kind::kConditional:
          STREAMEXECUTOR_RETURN_IF_ERROR(AddConditionalNodes(target, deps, from.condition, from.loop, from.body, to));
          break;
      }
      if (r != CUDA_SUCCESS) return Failed(r, call);
      out.push_back(std::move(to));
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
