// Objects at namespace scope that outlive main(): a stream with work still
// queued, an owned buffer that work uses, an event and a loaded kernel, all
// declared before anything touched the Platform, so that static destruction
// runs their destructors after the Platform would have been destroyed had it
// been an ordinary static. Must exit 0 with no crash or hang (run under ASan
// in the sanitizer build). Argument: the backend name.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;

namespace {

template <typename B>
struct Globals {
  std::optional<se::Stream<B>> stream;
  se::ScopedDeviceMemory<int> buffer;
  std::optional<se::Event<B>> event;
  std::optional<se::TypedKernel<se::DeviceMemory<int>*, int>> kernel;
};

template <typename B>
Globals<B> globals;  // constructed before main, destroyed after it

template <typename B>
int Run() {
  auto executor = se::Platform<B>::Get().ExecutorForDevice(0);
  if (!executor.ok()) {
    std::printf("%s\n", executor.status().ToString().c_str());
    return 77;
  }
  auto* exec = executor.value();
  Globals<B>& g = globals<B>;
  g.buffer = exec->template AllocateOwnedArray<int>(1 << 20);
  g.stream.emplace(exec);
  g.event.emplace(exec);
  if (!g.event->Init()) return 1;
  g.stream->Init()
      .ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); })
      .ThenMemZero(g.buffer.ptr(), g.buffer.cref().size())
      .ThenRecordEvent(&*g.event);
  if (!g.stream->ok()) {
    std::printf("%s\n", g.stream->status().ToString().c_str());
    return 1;
  }
  std::printf("%s: returning from main with work queued\n", std::string(B::kName).c_str());
  return 0;  // no BlockHostUntilDone: the globals' destructors meet the queued work
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view name = argc > 1 ? argv[1] : "host";
  int result = -1;
  se::EnabledBackends::ForEach([&]<typename B>() {
    if (result < 0 && name == B::kName) result = Run<B>();
  });
  if (result >= 0) return result;
  std::printf("backend '%s' is not in this build\n", std::string(name).c_str());
  return 77;
}
