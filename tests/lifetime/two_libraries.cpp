// Two shared libraries, each built with -fvisibility=hidden and each
// including the headers, must share one Platform (and so one executor, one
// thread pool, one set of live allocations) per process.
#include <cstdio>

#include <streamexecutor/core/device_memory.hpp>

namespace se = streamexecutor;

extern "C" void* platform_address_a();
extern "C" void* platform_address_b();
extern "C" bool allocate_a(se::DeviceMemory<int>* out);
extern "C" bool free_b(se::DeviceMemory<int>* memory);

int main() {
  if (platform_address_a() != platform_address_b()) {
    std::printf("FAIL: the two libraries see different Platform<host> instances (%p, %p)\n", platform_address_a(),
                platform_address_b());
    return 1;
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
  std::printf("one Platform<host> at %p across both libraries\n", platform_address_a());
  return 0;
}
