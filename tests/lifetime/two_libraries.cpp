// Two shared libraries, each built with -fvisibility=hidden and each
// including the headers, must share one Platform (and so one executor, one
// thread pool, one set of live allocations) per process.
#include <cstdio>

#include <streamexecutor/core/device_memory.hpp>

namespace se = streamexecutor;

extern "C" void* platform_address_a();
extern "C" void* platform_address_b();
extern "C" void* other_platform_address_a(int which, const char** name);
extern "C" void* other_platform_address_b(int which, const char** name);
extern "C" bool allocate_a(se::DeviceMemory<int>* out);
extern "C" bool free_b(se::DeviceMemory<int>* memory);
extern "C" bool run_callback_a();
extern "C" bool self_wait_refused_b();

int main() {
  if (platform_address_a() != platform_address_b()) {
    std::printf("FAIL: the two libraries see different Platform<host> instances (%p, %p)\n", platform_address_a(),
                platform_address_b());
    return 1;
  }
  // Every backend of the build (se::EnabledBackends), in registry order.
  const char* name = nullptr;
  for (int which = 0; other_platform_address_a(which, &name) != nullptr; ++which) {
    const char* name_b = nullptr;
    if (other_platform_address_a(which, &name) != other_platform_address_b(which, &name_b)) {
      std::printf("FAIL: the two libraries see different Platform<%s> instances\n", name);
      return 1;
    }
    std::printf("one Platform<%s> across both\n", name);
  }
  se::DeviceMemory<int> memory;
  if (!allocate_a(&memory)) {
    std::printf("FAIL: allocation through library a\n");
    return 1;
  }
  if (!free_b(&memory)) {
    std::printf("FAIL: library b could not free what library a allocated\n");
    return 1;
  }
  // Workers started by library a's code, a self-wait from library b's.
  if (!run_callback_a() || !self_wait_refused_b()) {
    std::printf("FAIL: a callback of library b waiting for its own stream was not refused\n");
    return 1;
  }
  std::printf("one Platform<host> at %p across both libraries\n", platform_address_a());
  return 0;
}
