// Catch2's implementation and main(), compiled once for every test executable.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

// A suite that may find no device defines this: a return value >= 0 ends the
// run with that exit code before any test runs (77 is Meson's SKIP).
int SeTestPreflight() __attribute__((weak));
// A suite whose cases do not all apply to its backend defines this: the test
// spec used when the command line names none (nullptr: every case).
const char* SeTestDefaultSpec() __attribute__((weak));

int main(int argc, char* argv[]) {
  if (SeTestPreflight) {
    if (const int exit_code = SeTestPreflight(); exit_code >= 0) return exit_code;
  }
  const char* spec = SeTestDefaultSpec ? SeTestDefaultSpec() : nullptr;
  if (argc == 1 && spec != nullptr) {
    char* with_spec[] = {argv[0], const_cast<char*>(spec), nullptr};
    return Catch::Session().run(2, with_spec);
  }
  return Catch::Session().run(argc, argv);
}
