// CommandBuffer<cuda> against the counting driver double (libcuda.so.1 from
// tests/cuda/counting_double): which graph calls a recording, a finalize and
// the submissions make, and that each failing driver call is named.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "counting_driver_double.hpp"

namespace se = streamexecutor;

namespace {

constexpr const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry scale(.param .u64 scale_param_0, .param .f32 scale_param_1, .param .u32 scale_param_2)
{ ret; }
)";
using ScaleKernel = se::TypedKernel<se::DeviceMemory<float>*, float, std::uint32_t>;

se::StreamExecutor<se::cuda>* Executor() { return se::Platform<se::cuda>::Get().ExecutorForDevice(0).ValueOrDie(); }

se_test::CountingDoubleApi& Double() {
  static se_test::CountingDoubleApi api = se_test::CountingDoubleApi::Find();
  return api;
}

bool Mentions(const se::Status& status, std::string_view text) {
  const bool found = status.message().find(text) != std::string::npos;
  if (!found) UNSCOPED_INFO("status: " << status.ToString() << "\n  does not mention: " << text);
  return found;
}

struct Counts {
  long Of(const char* name) const { return Double().calls(name); }
};

}  // namespace

TEST_CASE("a buffer is one graph: one node per operation, one launch per submission", "[cuda][command-buffer]") {
  auto* executor = Executor();  // loads the driver: the double, here
  REQUIRE(Double().loaded());
  se::MultiKernelLoaderSpec spec(3);
  spec.AddCudaPtxInMemory(kPtx, "scale");
  ScaleKernel kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
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
