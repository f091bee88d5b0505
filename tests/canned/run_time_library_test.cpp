// The loader of the libraries that canned plugins open at run time
// (canned/detail/library.hpp), against a library every Linux machine has:
// the C library, whose strlen and atoi stand in for a plugin's entry
// points. The CUDA libraries' own tables are tested against their doubles
// (tests/cuda/*_double_test.cpp, tests/canned/blas_cuda_double_test.cpp).
#include <streamexecutor/canned/detail/library.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

namespace se = streamexecutor;
using se::canned_detail::EntryPoint;
using se::canned_detail::RunTimeLibrary;

namespace {

using StrlenFn = std::size_t (*)(const char*);

// A plugin's table: members named as the symbols, typed by their prototypes.
struct CApi {
  decltype(&::strlen) strlen = nullptr;
  decltype(&::atoi) atoi = nullptr;
  StrlenFn se_no_such_symbol = nullptr;
  StrlenFn se_no_such_symbol_either = nullptr;
};

constexpr EntryPoint<CApi> kEntryPoints[] = {STREAMEXECUTOR_ENTRY_POINT(CApi, strlen),
                                             STREAMEXECUTOR_ENTRY_POINT(CApi, atoi)};
constexpr EntryPoint<CApi> kWithMissing[] = {STREAMEXECUTOR_ENTRY_POINT(CApi, strlen),
                                             STREAMEXECUTOR_ENTRY_POINT(CApi, se_no_such_symbol),
                                             STREAMEXECUTOR_ENTRY_POINT(CApi, se_no_such_symbol_either)};
constexpr EntryPoint<CApi> kWithOptional[] = {STREAMEXECUTOR_ENTRY_POINT(CApi, strlen),
                                              STREAMEXECUTOR_OPTIONAL_ENTRY_POINT(CApi, se_no_such_symbol)};

constexpr const char* kLibc[] = {"libc.so.6"};
constexpr const char* kAbsentThenLibc[] = {"libse_absent_for_this_test.so.1", "libc.so.6"};
constexpr const char* kAbsent[] = {"libse_absent_for_this_test.so.1", "libse_absent_for_this_test.so.0"};

RunTimeLibrary Library(std::span<const char* const> sonames) {
  return RunTimeLibrary{"cuda", "cuTEST", sonames, "libcutest-13-0 from the test's repository"};
}

bool Mentions(const se::Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST_CASE("the run-time loader resolves a table's entry points", "[loader]") {
  const auto loaded = se::canned_detail::Load<CApi>(Library(kLibc), kEntryPoints);
  REQUIRE(loaded.status.ok());
  CHECK(std::string(loaded.soname) == "libc.so.6");
  REQUIRE(loaded.api.strlen != nullptr);
  CHECK(loaded.api.strlen("four") == 4);
  REQUIRE(loaded.api.atoi != nullptr);
  CHECK(loaded.api.atoi("42") == 42);
}

TEST_CASE("the run-time loader tries the sonames in order", "[loader]") {
  const auto loaded = se::canned_detail::Load<CApi>(Library(kAbsentThenLibc), kEntryPoints);
  REQUIRE(loaded.status.ok());
  CHECK(std::string(loaded.soname) == "libc.so.6");
}

TEST_CASE("a missing library is UNAVAILABLE naming it, why each soname failed, and the package", "[loader]") {
  const auto loaded = se::canned_detail::Load<CApi>(Library(kAbsent), kEntryPoints);
  INFO(loaded.status.ToString());
  CHECK(loaded.status.code() == se::ErrorCode::kUnavailable);
  CHECK(loaded.soname == nullptr);
  CHECK(Mentions(loaded.status,
                 "cuda: the cuTEST plugin needs cuTEST (libse_absent_for_this_test.so.1), which "
                 "could not be loaded: dlopen(\"libse_absent_for_this_test.so.1\"): "));
  CHECK(Mentions(loaded.status, "; dlopen(\"libse_absent_for_this_test.so.0\"): "));
  CHECK(Mentions(loaded.status,
                 "install libcutest-13-0 from the test's repository, or put the directory holding "
                 "libse_absent_for_this_test.so.1 on LD_LIBRARY_PATH"));
  CHECK(loaded.api.strlen == nullptr);
}

TEST_CASE("missing symbols are UNAVAILABLE naming the library, every symbol and the package", "[loader]") {
  const auto loaded = se::canned_detail::Load<CApi>(Library(kLibc), kWithMissing);
  INFO(loaded.status.ToString());
  CHECK(loaded.status.code() == se::ErrorCode::kUnavailable);
  CHECK(loaded.status.message() ==
        "cuda: the loaded cuTEST (libc.so.6) lacks se_no_such_symbol, se_no_such_symbol_either; install "
        "libcutest-13-0 from the test's repository");
}

TEST_CASE("a missing optional symbol is left null and the load succeeds", "[loader]") {
  const auto loaded = se::canned_detail::Load<CApi>(Library(kLibc), kWithOptional);
  REQUIRE(loaded.status.ok());
  CHECK(loaded.api.strlen != nullptr);
  CHECK(loaded.api.se_no_such_symbol == nullptr);
}

}  // namespace
