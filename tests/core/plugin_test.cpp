// PluginConfig and the per-executor plugin choice: defaults, merging of later
// requests, and the errors for a foreign or conflicting plugin.
#include <catch2/catch.hpp>

#include <string>

#include <streamexecutor/core/plugin.hpp>

namespace se = streamexecutor;

namespace {

constexpr se::BlasPluginId kFastBlas{"test", "fast-blas"};
constexpr se::BlasPluginId kOtherBlas{"test", "other-blas"};
constexpr se::RngPluginId kPhilox{"test", "philox"};
constexpr se::RngPluginId kVendorRng{"test", "vendor-rng"};
constexpr se::RngPluginId kForeignRng{"elsewhere", "philox"};

se::PluginConfig Defaults() {
  se::PluginConfig defaults;
  defaults.SetBlas(kFastBlas).SetRng(kPhilox);
  return defaults;
}

bool Mentions(const se::Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("a PluginConfig keeps one plugin per kind; unset kinds are empty", "[plugin]") {
  se::PluginConfig config;
  CHECK(config.rng().is_default());
  config.SetRng(kVendorRng).SetBlas(kOtherBlas);
  CHECK(config.rng() == kVendorRng);
  CHECK(config.blas() == kOtherBlas);
  CHECK(config.fft().is_default());
  CHECK(config.dnn().is_default());
  config.SetRng(se::kDefaultPlugin);
  CHECK(config.rng().is_default());
  CHECK(se::PluginKindName(se::PluginKind::kFft) == "FFT");
}

TEST_CASE("an executor starts with its backend's defaults", "[plugin]") {
  se::detail::PluginSelection selection(Defaults());
  CHECK(selection.Current() == Defaults());
  CHECK(selection.Use<se::PluginKind::kRng>() == kPhilox);
  CHECK(selection.Use<se::PluginKind::kFft>().is_default());  // this backend has no FFT plugin
}

TEST_CASE("a requested plugin replaces the default until the kind is used", "[plugin]") {
  se::detail::PluginSelection selection(Defaults());
  se::PluginConfig request;
  request.SetRng(kVendorRng);
  REQUIRE(selection.Adopt(request, "test", "test:0").ok());
  CHECK(selection.Current().rng() == kVendorRng);
  CHECK(selection.Current().blas() == kFastBlas);  // kinds left unset keep their plugin

  SECTION("asking again for the same plugin is fine") { CHECK(selection.Adopt(request, "test", "test:0").ok()); }
  SECTION("an empty request changes nothing") {
    CHECK(selection.Adopt(se::PluginConfig(), "test", "test:0").ok());
    CHECK(selection.Current().rng() == kVendorRng);
  }
  SECTION("switching a chosen kind is FAILED_PRECONDITION naming both plugins") {
    se::PluginConfig other;
    other.SetRng(kPhilox);
    const se::Status status = selection.Adopt(other, "test", "test:0");
    CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
    CHECK(Mentions(status, "test:0 already uses RNG plugin 'vendor-rng'"));
    CHECK(Mentions(status, "cannot switch to 'philox'"));
    CHECK(selection.Current().rng() == kVendorRng);
  }
}

TEST_CASE("a default plugin is fixed once an operation of its kind ran", "[plugin]") {
  se::detail::PluginSelection selection(Defaults());
  CHECK(selection.Use<se::PluginKind::kBlas>() == kFastBlas);
  se::PluginConfig request;
  request.SetBlas(kOtherBlas);
  const se::Status status = selection.Adopt(request, "test", "test:0");
  CHECK(status.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(status, "BLAS plugin 'fast-blas'"));
  request.SetBlas(kFastBlas);  // naming the plugin already in use is no switch
  CHECK(selection.Adopt(request, "test", "test:0").ok());
}

TEST_CASE("a plugin of another platform is INVALID_ARGUMENT and changes nothing", "[plugin]") {
  se::detail::PluginSelection selection(Defaults());
  se::PluginConfig request;
  request.SetBlas(kOtherBlas).SetRng(kForeignRng);
  const se::Status status = selection.Adopt(request, "test", "test:0");
  CHECK(status.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(status, "RNG plugin 'philox' belongs to the 'elsewhere' platform, not to test:0"));
  CHECK(selection.Current() == Defaults());  // the valid BLAS part was not applied either
}
