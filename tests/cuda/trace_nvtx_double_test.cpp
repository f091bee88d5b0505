// Tracing on the CUDA backend against the counting driver double (no GPU):
// - NVTX (cuda/nvtx.hpp): NVTX 3's injection is real and runs on the CPU, so
//   Meson runs the [nvtx] cases with NVTX_INJECTION64_PATH naming a recording
//   tool (nvtx_injection/), as Nsight Systems names its own, and checks what
//   reached the tool: a range per stream operation named by the kernel or the
//   call, a range per se::trace::Range, the stream's name on its CUstream.
//   The [no-nvtx] case runs without the variable: no tool, nothing annotated.
// - The JSON trace (core/trace.hpp) of a few operations on two streams, read
//   back: kinds, order, the launch's grid, the flow from a record to its wait,
//   device times from the double's events, the counters.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"
#include "json_reader.hpp"

namespace se = streamexecutor;
namespace json = se_test::json;

namespace {

using se_test::Executor;

constexpr const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry scale(.param .u64 scale_param_0, .param .f32 scale_param_1, .param .u32 scale_param_2)
{ ret; }
)";
using ScaleKernel = se::TypedKernel<se::DeviceMemory<float>*, float, std::uint32_t>;

void LoadScale(se::StreamExecutor<se::cuda>* executor, ScaleKernel* kernel) {
  se::MultiKernelLoaderSpec spec(3);
  spec.AddCudaPtxInMemory(kPtx, "scale");
  REQUIRE(executor->GetKernel(spec, kernel).ok());
}

const char* ToolPath() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return path != nullptr && path[0] != '\0' ? path : nullptr;
}

// The recording tool, as NVTX loaded it (RTLD_NOLOAD: never a copy of our own).
struct Tool {
  const char* (*calls)() = nullptr;
  void (*clear)() = nullptr;

  static Tool Find() {
    Tool tool;
    const char* path = ToolPath();
    if (path == nullptr) return tool;
    void* library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) return tool;
    tool.calls = reinterpret_cast<const char* (*)()>(dlsym(library, "se_nvtx_injection_calls"));
    tool.clear = reinterpret_cast<void (*)()>(dlsym(library, "se_nvtx_injection_clear"));
    dlclose(library);  // drops only the reference NOLOAD added
    return tool;
  }
  bool loaded() const { return calls != nullptr && clear != nullptr; }

  // The calls since the last Take, one a line.
  std::vector<std::string> Take() const {
    std::vector<std::string> lines;
    std::istringstream in(calls());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    clear();
    return lines;
  }
};

std::string Address(const void* pointer) { return fmt::format("{}", pointer); }

}  // namespace

// Not the double: say so and stop, rather than test a real driver.
int SeTestPreflight() {
  auto& platform = se::Platform<se::cuda>::Get();
  if (!platform.InitStatus().ok() || !se_test::CountingDoubleApi::Find().loaded()) {
    fmt::print("SKIPPED: libcuda.so.1 is not the counting driver double ({})\n", platform.InitStatus().ToString());
    return 77;
  }
  return -1;
}

// First of the [nvtx] cases: what the platform's initialization did.
TEST_CASE("the platform attaches NVTX when the environment names a tool", "[cuda][nvtx]") {
  REQUIRE(ToolPath() != nullptr);  // Meson sets NVTX_INJECTION64_PATH for the [nvtx] cases
  const Tool tool = Tool::Find();
  REQUIRE(tool.loaded());  // NVTX loaded the tool named by the variable
  // Once, at the platform's initialization (SeTestPreflight): the library's domain.
  CHECK(tool.Take() == std::vector<std::string>{"attached", "domain streamexecutor"});
  CHECK(se::trace::detail::Annotations().push != nullptr);
  CHECK(se::trace::detail::Annotations().pop != nullptr);
  CHECK(se::trace::detail::Observing());  // every operation takes the annotated path
}

TEST_CASE("under an NVTX tool, stream operations and ranges are NVTX ranges of the library's domain", "[cuda][nvtx]") {
  REQUIRE(ToolPath() != nullptr);
  auto* executor = Executor();
  const Tool tool = Tool::Find();
  REQUIRE(tool.loaded());
  ScaleKernel kernel(executor);
  LoadScale(executor, &kernel);
  auto x = executor->AllocateOwnedArray<float>(8);
  std::vector<float> host(8, 1.0f);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ok());
  tool.Take();

  SECTION("a launch is one range named by its kernel, around the driver's launch") {
    se_test::CountingDoubleApi double_api = se_test::CountingDoubleApi::Find();
    const long before = double_api.calls("cuLaunchKernel");
    stream.ThenLaunch(se::ThreadDim(32), se::BlockDim(2), kernel, x.ptr(), 2.0f, 8u);
    CHECK(double_api.calls("cuLaunchKernel") == before + 1);
    CHECK(tool.Take() == std::vector<std::string>{"push streamexecutor scale", "pop streamexecutor"});
  }
  SECTION("copies and fills are ranges named by their calls") {
    stream.ThenMemcpyH2D(std::span<const float>(host), x.ptr())
        .ThenMemcpyD2H(x.cref(), std::span<float>(host))
        .ThenMemZero(x.ptr(), 4 * sizeof(float));
    CHECK(tool.Take() == std::vector<std::string>{"push streamexecutor ThenMemcpyH2D", "pop streamexecutor",
                                                  "push streamexecutor ThenMemcpyD2H", "pop streamexecutor",
                                                  "push streamexecutor ThenMemZero", "pop streamexecutor"});
  }
  SECTION("a host callback's range holds what the callback annotates") {
    // The double runs a host function inside cuLaunchHostFunc, so inside the range.
    stream.ThenDoHostCallback([] { se::trace::Range inner("in callback"); });
    CHECK(tool.Take() == std::vector<std::string>{"push streamexecutor host callback",
                                                  "push streamexecutor in callback", "pop streamexecutor",
                                                  "pop streamexecutor"});
  }
  SECTION("a user's Range is a push at its start and a pop at its end") {
    {
      se::trace::Range user("user");
      CHECK(tool.Take() == std::vector<std::string>{"push streamexecutor user"});
      stream.ThenMemcpyH2D(std::span<const float>(host), x.ptr());
    }
    CHECK(tool.Take() ==
          std::vector<std::string>{"push streamexecutor ThenMemcpyH2D", "pop streamexecutor", "pop streamexecutor"});
  }
  SECTION("Stream::SetName names the stream's CUstream, before Init too") {
    stream.SetName("decode");
    const std::string cu_stream = Address(stream.native_handle()->stream);
    CHECK(tool.Take() == std::vector<std::string>{"name stream " + cu_stream + " decode"});

    se::Stream early(executor);
    early.SetName("early");
    CHECK(tool.Take().empty());  // no CUstream yet
    REQUIRE(early.Init().ok());
    CHECK(tool.Take() == std::vector<std::string>{"name stream " + Address(early.native_handle()->stream) + " early"});
  }
  REQUIRE(stream.BlockHostUntilDone().ok());
}

TEST_CASE("without an NVTX tool nothing is annotated", "[cuda][no-nvtx]") {
  REQUIRE(ToolPath() == nullptr);  // Meson runs this case without NVTX_INJECTION64_PATH
  auto* executor = Executor();
  CHECK(se::trace::detail::Annotations().push == nullptr);
  CHECK(se::trace::detail::Annotations().pop == nullptr);
  ScaleKernel kernel(executor);
  LoadScale(executor, &kernel);
  auto x = executor->AllocateOwnedArray<float>(8);
  se::Stream stream(executor);
  {
    se::trace::Range user("user");
    stream.Init().SetName("decode").ThenLaunch(se::ThreadDim(32), se::BlockDim(2), kernel, x.ptr(), 2.0f, 8u);
    // Nothing observes: the launch took the plain path, no trace part was made.
    CHECK_FALSE(se::trace::detail::Observing());
  }
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(stream.trace_counters().enqueued == 0);
#if defined(SE_NVTX_INJECTION_LIBRARY)
  // No tool was loaded for NVTX's calls (SetName's) to reach.
  void* tool = dlopen(SE_NVTX_INJECTION_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  CHECK(tool == nullptr);
  if (tool != nullptr) dlclose(tool);
#endif
}

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The lane (tid) whose thread_name mentions `name`.
std::int64_t LaneNamed(const json::Value& events, const std::string& name) {
  for (const json::Value& e : events.array) {
    if (e["ph"].str() == "M" && e["name"].str() == "thread_name" &&
        e["args"]["name"].str().find("'" + name + "'") != std::string::npos) {
      return e["tid"].integer();
    }
  }
  FAIL("no lane named " << name);
  return -1;
}

// The operations of one lane, in enqueue order (args.op).
std::vector<const json::Value*> Operations(const json::Value& events, std::int64_t tid) {
  std::vector<const json::Value*> ops;
  for (const json::Value& e : events.array) {
    const std::string& ph = e["ph"].str();
    if ((ph == "X" || ph == "i") && e["tid"].integer() == tid) ops.push_back(&e);
  }
  std::sort(ops.begin(), ops.end(), [](const json::Value* a, const json::Value* b) {
    return (*a)["args"]["op"].num() < (*b)["args"]["op"].num();
  });
  return ops;
}

}  // namespace

TEST_CASE("a JSON trace on CUDA: operations in order on their lanes, a flow from record to wait, counters",
          "[cuda][json]") {
  auto* executor = Executor();
  ScaleKernel kernel(executor);
  LoadScale(executor, &kernel);
  auto x = executor->AllocateOwnedArray<float>(256);
  std::vector<float> in(256, 1.0f), out(256, 0.0f);
  se::Stream compute(executor), copy(executor);
  REQUIRE(compute.Init().SetName("compute").ok());
  REQUIRE(copy.Init().SetName("copy").ok());
  se::Event done(executor);
  REQUIRE(done.Init());
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = fmt::format("{}/se_trace_cuda_double_{}.json", tmp != nullptr ? tmp : "/tmp", getpid());

  REQUIRE(se::trace::Start(path).ok());
  bool ran = false;
  compute.ThenMemcpyH2D(std::span<const float>(in), x.ptr())
      .ThenLaunch(se::ThreadDim(32, 2, 1), se::BlockDim(4, 1, 2), kernel, x.ptr(), 2.5f, 256u)
      .ThenMemcpyD2H(x.cref(), std::span<float>(out))
      .ThenRecordEvent(&done);
  copy.ThenWaitFor(&done).ThenDoHostCallback([&ran] { ran = true; });
  REQUIRE(compute.BlockHostUntilDone().ok());
  REQUIRE(copy.BlockHostUntilDone().ok());
  // The counters through the API, while the trace records.
  CHECK(compute.trace_counters().enqueued == 4);
  CHECK(compute.trace_counters().bytes_h2d == 1024);
  CHECK(copy.trace_counters().enqueued == 2);
  CHECK(executor->trace_counters().enqueued == 6);
  REQUIRE(se::trace::Stop().ok());
  CHECK(ran);

  const std::string text = ReadFile(path);
  std::remove(path.c_str());
  INFO(text);
  const json::Value trace = json::Parse(text);
  const json::Value& events = trace["traceEvents"];
  REQUIRE(events.is_array());

  const std::int64_t compute_lane = LaneNamed(events, "compute");
  const std::int64_t copy_lane = LaneNamed(events, "copy");
  CHECK(compute_lane != copy_lane);
  const std::vector<const json::Value*> on_compute = Operations(events, compute_lane);
  const std::vector<const json::Value*> on_copy = Operations(events, copy_lane);
  REQUIRE(on_compute.size() == 4);
  REQUIRE(on_copy.size() == 2);
  auto kinds = [](const std::vector<const json::Value*>& ops) {
    std::vector<std::string> cats;
    for (const json::Value* e : ops) cats.push_back((*e)["cat"].str());
    return cats;
  };
  CHECK(kinds(on_compute) == std::vector<std::string>{"memcpy_h2d", "launch", "memcpy_d2h", "record_event"});
  CHECK(kinds(on_copy) == std::vector<std::string>{"wait", "host_callback"});
  // Enqueue order: numbered in the order enqueued, at nondecreasing host times.
  const std::vector<const json::Value*> all = {on_compute[0], on_compute[1], on_compute[2],
                                               on_compute[3], on_copy[0],    on_copy[1]};
  for (std::size_t i = 1; i < all.size(); ++i) {
    CHECK((*all[i])["args"]["op"].num() > (*all[i - 1])["args"]["op"].num());
    CHECK((*all[i])["args"]["enqueue_us"].num() >= (*all[i - 1])["args"]["enqueue_us"].num());
  }
  // Every operation has its device times, from the double's timing events.
  for (const json::Value* e : all) {
    CHECK((*e)["ph"].str() == "X");
    CHECK((*e)["dur"].num() >= 0);
    CHECK_FALSE((*e)["args"].has("device_time"));
    CHECK((*e)["pid"].integer() == (*on_compute[0])["pid"].integer());  // one executor, one process
  }

  const json::Value& launch = *on_compute[1];
  CHECK(launch["name"].str() == "scale");
  CHECK(launch["args"]["grid"].array.size() == 3);
  CHECK(launch["args"]["grid"][0].integer() == 4);
  CHECK(launch["args"]["grid"][1].integer() == 1);
  CHECK(launch["args"]["grid"][2].integer() == 2);
  CHECK(launch["args"]["block"][0].integer() == 32);
  CHECK(launch["args"]["block"][1].integer() == 2);
  CHECK(launch["args"]["block"][2].integer() == 1);
  CHECK((*on_compute[0])["name"].str() == "ThenMemcpyH2D");
  CHECK((*on_compute[0])["args"]["bytes"].integer() == 1024);
  CHECK((*on_compute[2])["args"]["bytes"].integer() == 1024);

  // The flow: from the record's lane to the wait's, one id, in time order.
  const json::Value* start = nullptr;
  const json::Value* finish = nullptr;
  for (const json::Value& e : events.array) {
    if (e["ph"].str() == "s") start = &e;
    if (e["ph"].str() == "f") finish = &e;
  }
  REQUIRE(start != nullptr);
  REQUIRE(finish != nullptr);
  CHECK((*start)["id"].integer() == (*finish)["id"].integer());
  CHECK((*start)["tid"].integer() == compute_lane);
  CHECK((*finish)["tid"].integer() == copy_lane);
  CHECK((*finish)["bp"].str() == "e");
  CHECK((*start)["ts"].num() == Approx((*on_compute[3])["ts"].num() + (*on_compute[3])["dur"].num()).margin(0.0015));
  CHECK((*start)["ts"].num() <= (*finish)["ts"].num());

  // The counters: per executor (pid only) and per lane (pid and tid).
  const json::Value& counters = trace["otherData"]["counters"];
  const json::Value* of_executor = nullptr;
  const json::Value* of_compute = nullptr;
  const json::Value* of_copy = nullptr;
  for (const json::Value& c : counters.array) {
    if (!c.has("tid")) of_executor = &c;
    if (c.has("tid") && c["tid"].integer() == compute_lane) of_compute = &c;
    if (c.has("tid") && c["tid"].integer() == copy_lane) of_copy = &c;
  }
  REQUIRE(of_executor != nullptr);
  REQUIRE(of_compute != nullptr);
  REQUIRE(of_copy != nullptr);
  CHECK((*of_executor)["enqueued"].integer() == 6);
  CHECK((*of_executor)["completed"].integer() == 6);
  CHECK((*of_executor)["failed"].integer() == 0);
  CHECK((*of_executor)["bytes_h2d"].integer() == 1024);
  CHECK((*of_executor)["bytes_d2h"].integer() == 1024);
  CHECK((*of_executor)["bytes_d2d"].integer() == 0);
  CHECK((*of_compute)["enqueued"].integer() == 4);
  CHECK((*of_compute)["bytes_h2d"].integer() == 1024);
  CHECK((*of_copy)["enqueued"].integer() == 2);
  CHECK((*of_copy)["bytes_h2d"].integer() == 0);
  CHECK((*of_copy)["device_wait_ns"].integer() >= 0);
  // The same through the API, after the trace stopped.
  CHECK(compute.trace_counters().enqueued == 4);
  CHECK(copy.trace_counters().completed == 2);
  CHECK(executor->trace_counters().bytes_d2h == 1024);
}
