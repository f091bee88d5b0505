// A program that leaves its trace to the exit (tests/tools/trace_run_test.py):
// a stream at namespace scope, made before the trace starts, and one in main;
// `open PATH` starts a trace with trace::Start and returns without Stop,
// `env` relies on STREAMEXECUTOR_TRACE alone. Either way the trace must be a
// valid file once main returns, with a message saying where it went.
#include <streamexecutor/host.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

namespace se = streamexecutor;

namespace {
se::Stream<se::host> early(se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie());
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "open") == 0 && argc < 3)) {
    std::fprintf(stderr, "usage: trace_at_exit open PATH | env\n");
    return 2;
  }
  auto* executor = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();
  early.Init().SetName("early");
  if (std::strcmp(argv[1], "open") == 0) {
    if (const se::Status s = se::trace::Start(argv[2]); !s.ok()) {
      std::fprintf(stderr, "trace_at_exit: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  auto memory = executor->AllocateOwnedArray<int>(1024);
  std::vector<int> host(1024, 5);
  se::Stream late(executor);
  late.Init().SetName("late");
  early.ThenMemcpyH2D<int>(host, memory.ptr());
  late.ThenWaitFor(&early).ThenMemcpyD2H<int>(memory.cref(), host);
  if (!late.BlockHostUntilDone().ok()) return 1;
  // Work still queued at exit: the early stream's last callback.
  early.ThenDoHostCallback([] {});
  std::printf("trace_at_exit: done\n");
  return 0;
}
