// CommandBuffer<cuda> against the counting driver double (libcuda.so.1 from
// tests/cuda/counting_double): which graph calls a recording, a finalize and
// the submissions make, and that each failing driver call is named.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

constexpr const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry scale(.param .u64 scale_param_0, .param .f32 scale_param_1, .param .u32 scale_param_2)
{ ret; }
)";
using ScaleKernel = se::TypedKernel<se::DeviceMemory<float>*, float, std::uint32_t>;

struct Counts {
  long Of(const char* name) const { return Double().calls(name); }
};

bool LoadScale(se::StreamExecutor<se::cuda>* executor, ScaleKernel* kernel) {
  se::MultiKernelLoaderSpec spec(3);
  spec.AddCudaPtxInMemory(kPtx, "scale");
  return executor->GetKernel(spec, kernel).ok();
}

}  // namespace

TEST_CASE("a buffer is one graph: one node per operation, one launch per submission", "[cuda][command-buffer]") {
  auto* executor = Executor();  // loads the driver: the double, here
  REQUIRE(Double().loaded());
  ScaleKernel kernel(executor);
  REQUIRE(LoadScale(executor, &kernel));
  auto data = executor->AllocateOwnedArray<float>(16);
  std::vector<float> in(16, 2.0f), out(16, 0.0f);
  se::Event event(executor);
  REQUIRE(event.Init());
  int callbacks = 0;
  const Counts counts;
  const long kernels = counts.Of("cuGraphAddKernelNode"), copies = counts.Of("cuGraphAddMemcpyNode"),
             fills = counts.Of("cuGraphAddMemsetNode"), hosts = counts.Of("cuGraphAddHostNode"),
             records = counts.Of("cuGraphAddEventRecordNode"), waits = counts.Of("cuGraphAddEventWaitNode"),
             instantiations = counts.Of("cuGraphInstantiateWithFlags"), launches = counts.Of("cuGraphLaunch"),
             direct_launches = counts.Of("cuLaunchKernel");
  {
    se::CommandBuffer buffer(executor);
    buffer.Init()
        .ThenMemZero(data.ptr(), 64)
        .ThenMemcpyH2D<float>(in, data.ptr())
        .ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, data.ptr(), 3.0f, 16u)
        .ThenRecordEvent(&event)
        .ThenWaitFor(&event)
        .ThenDoHostCallback([&] { ++callbacks; })
        .ThenMemcpyD2H<float>(data.cref(), out);
    REQUIRE(buffer.ok());
    CHECK(counts.Of("cuGraphAddKernelNode") == kernels + 1);
    CHECK(counts.Of("cuGraphAddMemcpyNode") == copies + 2);
    CHECK(counts.Of("cuGraphAddMemsetNode") == fills + 1);
    CHECK(counts.Of("cuGraphAddHostNode") == hosts + 1);
    CHECK(counts.Of("cuGraphAddEventRecordNode") == records + 1);
    CHECK(counts.Of("cuGraphAddEventWaitNode") == waits + 1);
    se::Stream stream(executor);
    stream.Init();
    for (int i = 0; i < 3; ++i) stream.ThenSubmit(&buffer);
    REQUIRE(stream.BlockHostUntilDone().ok());
    CHECK(counts.Of("cuGraphInstantiateWithFlags") == instantiations + 1);
    CHECK(counts.Of("cuGraphLaunch") == launches + 3);
    CHECK(counts.Of("cuLaunchKernel") == direct_launches);  // the launch is a node, never a direct call
    CHECK(callbacks == 3);
    CHECK(out == in);  // the double runs no kernel: the copies alone
  }
  CHECK(Double().calls_from_host_functions() == 0);
}

TEST_CASE("each failing graph call is named in the Status", "[cuda][command-buffer][errors]") {
  auto* executor = Executor();  // loads the driver: the double, here
  REQUIRE(Double().loaded());
  auto data = executor->AllocateOwnedArray<float>(4);

  SECTION("creating the graph") {
    Double().fail_next("cuGraphCreate", CUDA_ERROR_OUT_OF_MEMORY);
    se::CommandBuffer buffer(executor);
    buffer.Init();
    CHECK(buffer.status().code() == se::ErrorCode::kResourceExhausted);
    CHECK(Mentions(buffer.status(), "cuGraphCreate failed with CUDA_ERROR_OUT_OF_MEMORY"));
  }
  SECTION("adding a node") {
    Double().fail_next("cuGraphAddMemsetNode", CUDA_ERROR_INVALID_VALUE);
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemZero(data.ptr(), 16);
    CHECK(Mentions(buffer.status(), "cuGraphAddMemsetNode failed with CUDA_ERROR_INVALID_VALUE"));
    CHECK(buffer.size() == 0);
  }
  SECTION("instantiating") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemZero(data.ptr(), 16);
    Double().fail_next("cuGraphInstantiateWithFlags", CUDA_ERROR_OUT_OF_MEMORY);
    const se::Status finalized = buffer.Finalize();
    CHECK(Mentions(finalized, "cuGraphInstantiateWithFlags failed with CUDA_ERROR_OUT_OF_MEMORY"));
    se::Stream stream(executor);
    stream.Init().ThenSubmit(&buffer);
    CHECK(Mentions(stream.status(), "failed while recording"));
  }
  SECTION("launching") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenMemZero(data.ptr(), 16);
    se::Stream stream(executor);
    Double().fail_next("cuGraphLaunch", CUDA_ERROR_INVALID_VALUE);
    stream.Init().ThenSubmit(&buffer);
    CHECK(Mentions(stream.status(), "cuGraphLaunch failed with CUDA_ERROR_INVALID_VALUE"));
  }
  SECTION("a host node's callable throws: the submitting stream fails") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenDoHostCallback([] { throw std::runtime_error("recorded failure"); });
    se::Stream stream(executor);
    stream.Init().ThenSubmit(&buffer);
    const se::Status done = stream.BlockHostUntilDone();
    CHECK(done.code() == se::ErrorCode::kAborted);
    CHECK(Mentions(done, "recorded failure"));
  }
  SECTION("a host node's callable returns an error Status: the submitting stream fails with it") {
    se::CommandBuffer buffer(executor);
    buffer.Init().ThenDoHostCallback([]() -> se::Status { return se::Status(se::ErrorCode::kCancelled, "stop"); });
    se::Stream stream(executor);
    stream.Init().ThenSubmit(&buffer);
    const se::Status done = stream.BlockHostUntilDone();
    CHECK(done.code() == se::ErrorCode::kCancelled);
    CHECK(Mentions(done, "host callback on cuda:0 failed: stop"));
  }
}

TEST_CASE("an update sets the node's parameters in the graph and in the instantiated graph",
          "[cuda][command-buffer][command-update]") {
  auto* executor = Executor();  // loads the driver: the double, here
  REQUIRE(Double().loaded());
  ScaleKernel kernel(executor);
  REQUIRE(LoadScale(executor, &kernel));
  auto a = executor->AllocateOwnedArray<float>(16);
  auto b = executor->AllocateOwnedArray<float>(16);
  std::vector<float> ones(16, 1.0f), twos(16, 2.0f), out(16, 0.0f);
  const Counts counts;

  se::CommandBuffer buffer(executor);
  buffer.Init().ThenLaunch(se::ThreadDim(16), se::BlockDim(1), kernel, a.ptr(), 3.0f, 16u);
  const se::CommandId launch = buffer.LastCommand();
  buffer.ThenMemcpyH2D<float>(ones, a.ptr());
  const se::CommandId upload = buffer.LastCommand();
  buffer.ThenMemset32(b.ptr(), 0u, 64);
  const se::CommandId fill = buffer.LastCommand();
  REQUIRE(buffer.ok());

  // Before Finalize: the graph's node only.
  const long graph_sets = counts.Of("cuGraphKernelNodeSetParams");
  const long exec_sets = counts.Of("cuGraphExecKernelNodeSetParams");
  REQUIRE(buffer.UpdateLaunch(launch, se::ThreadDim(8), se::BlockDim(2), kernel, b.ptr(), 5.0f, 8u).ok());
  CHECK(counts.Of("cuGraphKernelNodeSetParams") == graph_sets + 1);
  CHECK(counts.Of("cuGraphExecKernelNodeSetParams") == exec_sets);
  REQUIRE(buffer.Finalize().ok());

  // After: both, and the next launch of the graph passes the new values.
  REQUIRE(buffer.UpdateLaunch(launch, se::ThreadDim(4), se::BlockDim(4), kernel, a.ptr(), 7.0f, 4u).ok());
  CHECK(counts.Of("cuGraphKernelNodeSetParams") == graph_sets + 2);
  CHECK(counts.Of("cuGraphExecKernelNodeSetParams") == exec_sets + 1);
  const long copy_sets = counts.Of("cuGraphExecMemcpyNodeSetParams");
  const long fill_sets = counts.Of("cuGraphExecMemsetNodeSetParams");
  REQUIRE(buffer.UpdateMemcpyH2D<float>(upload, twos, b.ptr()).ok());
  REQUIRE(buffer.UpdateMemset32(fill, a.ptr(), 0x40400000u, 64).ok());  // 3.0f
  CHECK(counts.Of("cuGraphExecMemcpyNodeSetParams") == copy_sets + 1);
  CHECK(counts.Of("cuGraphExecMemsetNodeSetParams") == fill_sets + 1);

  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  SeCountingDoubleLaunch last{};
  REQUIRE(Double().last_launch(&last));
  CHECK(std::string(last.kernel_name) == "scale");
  CHECK(last.grid[0] == 4);
  CHECK(last.block[0] == 4);
  float scale = 0.0f;
  std::memcpy(&scale, last.param_bytes[1], sizeof scale);
  CHECK(scale == 7.0f);
  CUdeviceptr address = 0;
  std::memcpy(&address, last.param_bytes[0], sizeof address);
  CHECK(address == static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(a.ptr()->opaque())));
  REQUIRE(stream.ThenMemcpyD2H<float>(b.cref(), out).BlockHostUntilDone().ok());
  CHECK(out == twos);
  REQUIRE(stream.ThenMemcpyD2H<float>(a.cref(), out).BlockHostUntilDone().ok());
  CHECK(out == std::vector<float>(16, 3.0f));
}

TEST_CASE("a driver that rejects an update is named, and the operation stays as it was",
          "[cuda][command-buffer][command-update][errors]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  auto a = executor->AllocateOwnedArray<float>(4);
  auto b = executor->AllocateOwnedArray<float>(4);
  std::vector<float> out(4, -1.0f);
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemset32(a.ptr(), 0u, 16).ThenMemcpyD2H<float>(a.cref(), out);
  const se::CommandId download = buffer.LastCommand();
  REQUIRE(buffer.Finalize().ok());
  Double().fail_next("cuGraphExecMemcpyNodeSetParams", CUDA_ERROR_INVALID_VALUE);
  const se::Status s = buffer.UpdateMemcpyD2H<float>(download, b.cref(), out);
  CHECK(Mentions(s, "cuGraphExecMemcpyNodeSetParams failed with CUDA_ERROR_INVALID_VALUE"));
  CHECK(Mentions(s, "updating operation 1"));
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  CHECK(out == std::vector<float>(4, 0.0f));  // still a's, filled with zeros
}

TEST_CASE("a clone is cuGraphClone with its own host node data; nesting is a child graph node",
          "[cuda][command-buffer][clone][nested]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  auto data = executor->AllocateOwnedArray<float>(4);
  const Counts counts;
  const long clones = counts.Of("cuGraphClone"), finds = counts.Of("cuGraphNodeFindInClone"),
             host_sets = counts.Of("cuGraphHostNodeSetParams"), children = counts.Of("cuGraphAddChildGraphNode");
  int runs = 0;
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemZero(data.ptr(), 16).ThenDoHostCallback([&] { ++runs; }).ThenMemZero(data.ptr(), 0);
  auto clone = buffer.Clone();
  REQUIRE(clone->ok());
  CHECK(counts.Of("cuGraphClone") == clones + 1);
  CHECK(counts.Of("cuGraphNodeFindInClone") ==
        finds + 4);  // three nodes (the empty fill has an empty one) and the leaf
  CHECK(counts.Of("cuGraphHostNodeSetParams") == host_sets + 1);
  se::CommandBuffer parent(executor);
  parent.Init().ThenSubmit(&buffer);
  REQUIRE(parent.ok());
  CHECK(counts.Of("cuGraphAddChildGraphNode") == children + 1);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(clone.get()).ThenSubmit(&parent).BlockHostUntilDone().ok());
  CHECK(runs == 2);

  Double().fail_next("cuGraphClone", CUDA_ERROR_OUT_OF_MEMORY);
  auto failed = buffer.Clone();
  CHECK(Mentions(failed->status(), "cuGraphClone failed with CUDA_ERROR_OUT_OF_MEMORY"));
  Double().fail_next("cuGraphAddChildGraphNode", CUDA_ERROR_INVALID_VALUE);
  se::CommandBuffer refused(executor);
  refused.Init().ThenSubmit(&buffer);
  CHECK(Mentions(refused.status(), "cuGraphAddChildGraphNode failed with CUDA_ERROR_INVALID_VALUE"));
}

TEST_CASE("After gives a node the dependencies named; other nodes depend on the graph's leaves",
          "[cuda][command-buffer][dependencies]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  auto a = executor->AllocateOwnedArray<float>(4);
  auto b = executor->AllocateOwnedArray<float>(4);
  std::size_t deps[8] = {};
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenMemZero(a.ptr(), 16);  // node 0: a root
  CHECK(Double().last_node_dependencies(deps, 8) == 0);
  buffer.After({}).ThenMemZero(b.ptr(), 16);  // node 1: another root
  CHECK(Double().last_node_dependencies(deps, 8) == 0);
  const se::CommandId second = buffer.LastCommand();
  buffer.After({second}).ThenMemZero(b.ptr(), 0);  // node 2: an empty node after node 1
  REQUIRE(Double().last_node_dependencies(deps, 8) == 1);
  CHECK(deps[0] == 1);
  buffer.ThenMemZero(a.ptr(), 16);  // node 3: after the leaves, nodes 0 and 2
  REQUIRE(Double().last_node_dependencies(deps, 8) == 2);
  CHECK(((deps[0] == 0 && deps[1] == 2) || (deps[0] == 2 && deps[1] == 0)));
  buffer.ThenMemZero(b.ptr(), 16);  // node 4: after node 3 alone
  REQUIRE(Double().last_node_dependencies(deps, 8) == 1);
  CHECK(deps[0] == 3);
  REQUIRE(buffer.ok());
  se::Stream stream(executor);
  CHECK(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
}

#if !defined(STREAMEXECUTOR_CUDA_HAVE_CONDITIONAL_SETTER)
TEST_CASE("without nvcc at build time there is no setter kernel: conditionals are UNIMPLEMENTED, saying why",
          "[cuda][command-buffer][command-conditional]") {
  auto* executor = Executor();  // loads the driver: the double, here
  REQUIRE(Double().loaded());
  auto condition = executor->AllocateOwnedArray<std::int32_t>(1);
  se::CommandBuffer body(executor);
  body.Init().ThenMemZero(condition.ptr(), 4);
  se::CommandBuffer buffer(executor);
  buffer.Init().ThenWhile(condition.cref(), &body);
  CHECK(buffer.status().code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(buffer.status(), "built without nvcc"));
}
#else
TEST_CASE("ThenWhile and ThenIf are conditional nodes driven by the library's setter kernel",
          "[cuda][command-buffer][command-conditional]") {
  auto* executor = Executor();  // loads the driver: the double, here
  REQUIRE(Double().loaded());
  // No kernel runs on the double, so the loop is driven by copies: each
  // iteration shifts `bits` one word left, and the condition is bits[0].
  // Three leading ones end the loop after exactly three iterations.
  auto bits = executor->AllocateOwnedArray<std::int32_t>(5);
  auto shifted = executor->AllocateOwnedArray<std::int32_t>(4);
  auto flag = executor->AllocateOwnedArray<std::int32_t>(1);
  std::vector<std::int32_t> start{1, 1, 1, 0, 0};
  REQUIRE(executor->SynchronousMemcpyH2D<std::int32_t>(start, bits.ptr()).ok());
  REQUIRE(executor->SynchronousMemZero(flag.ptr(), 4).ok());
  se::DeviceMemory<std::int32_t> tail = bits.cref().GetSlice(1, 4), head = bits.cref().GetSlice(0, 4);
  const se::DeviceMemory<std::int32_t> condition = bits.cref().GetSlice(0, 1);

  se::CommandBuffer body(executor);
  body.Init().ThenMemcpyD2D(shifted.ptr(), tail).ThenMemcpyD2D(&head, shifted.cref());
  se::CommandBuffer mark(executor);
  mark.Init().ThenMemset32(flag.ptr(), 7u, 4);
  se::CommandBuffer buffer(executor);
  const Counts counts;
  const long nodes = counts.Of("cuGraphAddKernelNode"), handles = counts.Of("cuGraphConditionalHandleCreate");
  buffer.Init().ThenWhile(condition, &body).ThenIf(flag.cref(), &mark).ThenIf(condition, &mark);
  REQUIRE(buffer.ok());
  CHECK(buffer.size() == 3);
  CHECK(counts.Of("cuGraphConditionalHandleCreate") - handles == 3);
  CHECK(counts.Of("cuGraphAddKernelNode") - nodes == 4);  // a setter before each node, one more in the While's body
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenSubmit(&buffer).BlockHostUntilDone().ok());
  std::vector<std::int32_t> out(5), flag_out(1);
  REQUIRE(executor->SynchronousMemcpyD2H<std::int32_t>(bits.cref(), out).ok());
  REQUIRE(executor->SynchronousMemcpyD2H<std::int32_t>(flag.cref(), flag_out).ok());
  CHECK(out == std::vector<std::int32_t>{0, 0, 0, 0, 0});
  CHECK(flag_out[0] == 0);  // the first If read flag = 0; the second read bits[0] = 0 after the loop

  SECTION("an If taken") {
    REQUIRE(executor->SynchronousMemcpyH2D<std::int32_t>(std::vector<std::int32_t>{1, 0, 0, 0, 0}, bits.ptr()).ok());
    se::CommandBuffer taken(executor);
    taken.Init().ThenIf(condition, &mark);
    REQUIRE(stream.ThenSubmit(&taken).BlockHostUntilDone().ok());
    REQUIRE(executor->SynchronousMemcpyD2H<std::int32_t>(flag.cref(), flag_out).ok());
    CHECK(flag_out[0] == 7);
  }
  SECTION("each failing call is named") {
    // The body is a copy of `body`'s nodes, taken through the driver's getters.
    const char* call = GENERATE("cuGraphConditionalHandleCreate", "cuGraphAddNode", "cuGraphMemcpyNodeGetParams",
                                "cuGraphAddMemcpyNode");
    Double().fail_next(call, CUDA_ERROR_INVALID_VALUE);
    se::CommandBuffer failing(executor);
    failing.Init().ThenWhile(condition, &body);
    CHECK(Mentions(failing.status(), std::string(call) + " "));
    CHECK(Mentions(failing.status(), "CUDA_ERROR_INVALID_VALUE"));
  }
  SECTION("a clone of a buffer holding one is refused") {
    CHECK(buffer.Clone()->status().code() == se::ErrorCode::kUnimplemented);
  }
}

// CUDA refuses a child graph node whose graph holds a conditional node (the
// double does too): a body holding an If, and a nested buffer holding a
// conditional, are copied node by node.
TEST_CASE("conditionals nest on CUDA: bodies and nested buffers holding one are copied node by node",
          "[cuda][command-buffer][command-conditional]") {
  auto* executor = Executor();
  REQUIRE(Double().loaded());
  auto bits = executor->AllocateOwnedArray<std::int32_t>(5);
  auto shifted = executor->AllocateOwnedArray<std::int32_t>(4);
  auto flag = executor->AllocateOwnedArray<std::int32_t>(1);
  auto marked = executor->AllocateOwnedArray<std::int32_t>(1);
  se::DeviceMemory<std::int32_t> tail = bits.cref().GetSlice(1, 4), head = bits.cref().GetSlice(0, 4);
  const se::DeviceMemory<std::int32_t> condition = bits.cref().GetSlice(0, 1);
  auto read = [&](const se::DeviceMemory<std::int32_t>& memory) {
    std::vector<std::int32_t> out(1);
    REQUIRE(executor->SynchronousMemcpyD2H<std::int32_t>(memory, out).ok());
    return out[0];
  };
  auto reset = [&](std::vector<std::int32_t> start) {
    REQUIRE(executor->SynchronousMemcpyH2D<std::int32_t>(start, bits.ptr()).ok());
    REQUIRE(executor->SynchronousMemZero(marked.ptr(), 4).ok());
  };
  REQUIRE(executor->SynchronousMemset32(flag.ptr(), 1u, 4).ok());

  se::CommandBuffer shift(executor);  // no conditional: nested as a child graph node
  shift.Init().ThenMemcpyD2D(shifted.ptr(), tail).ThenMemcpyD2D(&head, shifted.cref());
  se::CommandBuffer mark(executor);
  mark.Init().ThenMemset32(marked.ptr(), 7u, 4);
  se::CommandBuffer body(executor);  // holds an If: the While's body gets a copy of its nodes
  body.Init().ThenSubmit(&shift).ThenIf(flag.cref(), &mark);
  se::CommandBuffer loop(executor);
  const Counts counts;
  const long handles = counts.Of("cuGraphConditionalHandleCreate");
  const long listed = counts.Of("cuGraphGetNodes"), created = counts.Of("cuGraphCreate");
  loop.Init().ThenWhile(condition, &body);
  REQUIRE(loop.ok());
  // The driver will not clone `shift`'s copy in `body` (body holds an If): it
  // is copied from the driver's list of its nodes into a graph of our own.
  CHECK(counts.Of("cuGraphGetNodes") - listed == 2);  // the count, then the nodes
  CHECK(counts.Of("cuGraphCreate") - created == 2);   // the loop's graph and the copy
  // The While, and the body's If again in the While's copy of the body.
  CHECK(counts.Of("cuGraphConditionalHandleCreate") - handles == 2);
  se::Stream stream(executor);
  stream.Init();
  reset({1, 1, 1, 0, 0});
  REQUIRE(stream.ThenSubmit(&loop).BlockHostUntilDone().ok());
  CHECK(read(condition) == 0);
  CHECK(read(marked.cref()) == 7);

  SECTION("a buffer holding a conditional, nested with host work beside it") {
    int called = 0;
    se::CommandBuffer outer(executor);
    outer.Init().ThenDoHostCallback([&called] { ++called; }).ThenSubmit(&loop).ThenSubmit(&loop);
    REQUIRE(outer.ok());
    reset({1, 1, 0, 0, 0});
    REQUIRE(stream.ThenSubmit(&outer).BlockHostUntilDone().ok());
    CHECK(called == 1);
    CHECK(read(condition) == 0);
    CHECK(read(marked.cref()) == 7);
    // Nested once more, with its host node copied too: the callable still runs once per submission.
    se::CommandBuffer outermost(executor);
    outermost.Init().ThenSubmit(&outer);
    REQUIRE(outermost.ok());
    REQUIRE(stream.ThenSubmit(&outermost).BlockHostUntilDone().ok());
    CHECK(called == 2);
  }
  SECTION("each failing call of a copy is named") {
    const char* call = GENERATE("cuGraphChildGraphNodeGetGraph", "cuGraphClone", "cuGraphAddChildGraphNode",
                                "cuGraphMemsetNodeGetParams", "cuGraphAddEmptyNode", "cuGraphGetNodes",
                                "cuGraphGetEdges", "cuGraphNodeGetType", "cuGraphMemcpyNodeGetParams");
    Double().fail_next(call, CUDA_ERROR_INVALID_VALUE);
    se::CommandBuffer outer(executor);
    outer.Init().ThenSubmit(&loop);
    CHECK(Mentions(outer.status(), std::string(call) + " "));
    CHECK(Mentions(outer.status(), "CUDA_ERROR_INVALID_VALUE"));
  }
}
#endif
