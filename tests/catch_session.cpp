// Catch2's implementation and main(), compiled once for every test executable.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

// A suite that may find no device defines this: a return value >= 0 ends the
// run with that exit code before any test runs (77 is Meson's SKIP).
int SeTestPreflight() __attribute__((weak));

int main(int argc, char* argv[]) {
  if (SeTestPreflight) {
    if (const int exit_code = SeTestPreflight(); exit_code >= 0) return exit_code;
  }
  return Catch::Session().run(argc, argv);
}
