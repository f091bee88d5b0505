// A Vulkan event that another backend still waits for when the process
// exits. The Vulkan executor's notifier thread (vulkan/foreign_wait.hpp) is
// then inside vkWaitSemaphores, and the driver tears its state down in exit
// handlers of its own: the library's exit handler must take the thread out
// of the driver first.
//
// This program's own exit handler is registered before anything else, so it
// runs last, after the library's and the driver's; it fails the run if the
// notifier thread (named "se-vk-notifier") is still there. Exit 0: it was
// gone; 1: it was not, or it never started (the case would prove nothing);
// 77: no Vulkan device (SKIP).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <streamexecutor/host.hpp>
#include <streamexecutor/vulkan.hpp>

namespace se = streamexecutor;

namespace {

int NotifierThreads() {
  int count = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == "se-vk-notifier") ++count;
  }
  return count;
}

void CheckNotifierGone() {
  const int left = NotifierThreads();
  if (left != 0) {
    std::fprintf(stderr, "notifier_at_exit: %d notifier thread(s) still running after every exit handler\n", left);
    std::fflush(stderr);
    std::_Exit(1);
  }
  std::printf("notifier_at_exit: the notifier left the driver before its exit handlers ran\n");
  std::fflush(stdout);
}

}  // namespace

int main() {
  std::atexit(&CheckNotifierGone);  // first registered: runs last
  se::StatusOr<se::StreamExecutor<se::vulkan>*> vulkan = se::Platform<se::vulkan>::Get().ExecutorForDevice(0);
  if (!vulkan.ok()) {
    std::printf("SKIP: no Vulkan device: %s\n", vulkan.status().ToString().c_str());
    return 77;
  }
  auto* host = se::Platform<se::host>::Get().ExecutorForDevice(0).ValueOrDie();

  // Left to the exit on purpose, like objects at namespace scope: destroying
  // them would wait for the work, and nothing would be pending at exit.
  auto* done = new se::Event<se::vulkan>(vulkan.value());
  if (!done->Init()) {
    std::fprintf(stderr, "notifier_at_exit: Event::Init: %s\n", done->init_status().ToString().c_str());
    return 1;
  }
  // The record is held 10 s behind a callback, far longer than the exit
  // takes, so the host stream's wait is still pending when main returns.
  auto* producer = new se::Stream<se::vulkan>(vulkan.value());
  producer->Init()
      .ThenDoHostCallback([] { std::this_thread::sleep_for(std::chrono::seconds(10)); })
      .ThenRecordEvent(done);
  auto* consumer = new se::Stream<se::host>(host);
  consumer->Init().ThenWaitFor(done);
  if (!producer->ok() || !consumer->ok()) {
    std::fprintf(stderr, "notifier_at_exit: %s / %s\n", producer->status().ToString().c_str(),
                 consumer->status().ToString().c_str());
    return 1;
  }
  // The notifier starts with the first wait; give it a moment to name itself.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (NotifierThreads() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (NotifierThreads() != 1) {
    std::fprintf(stderr, "notifier_at_exit: expected one notifier thread, found %d\n", NotifierThreads());
    return 1;
  }
  std::printf("notifier_at_exit: one notifier thread waits in the driver; exiting\n");
  return 0;
}
