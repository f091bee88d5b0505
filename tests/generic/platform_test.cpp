// Platform, executor and device description, on the suite's backend.
#include <catch2/catch.hpp>

#include <cctype>
#include <string>
#include <utility>

#include "generic/test_backend.hpp"

TEST_CASE("platform reports its name and devices", "[platform]") {
  auto& platform = se::Platform<TestBackend>::Get();
  CHECK(platform.Name() == TestBackend::kName);
  CHECK(platform.InitStatus().ok());
  CHECK(platform.VisibleDeviceCount() >= 1);
}

TEST_CASE("ExecutorForDevice returns one executor per ordinal", "[platform]") {
  auto& platform = se::Platform<TestBackend>::Get();
  auto first = platform.ExecutorForDevice(0);
  REQUIRE(first.ok());
  auto again = platform.ExecutorForDevice(0);
  REQUIRE(again.ok());
  CHECK(first.value() == again.value());
  CHECK(first.value()->device_ordinal() == 0);
  CHECK(first.value()->platform() == &platform);
  CHECK(first.value()->DeviceLabel() == fmt::format("{}:0", TestBackend::kName));
}

TEST_CASE("an out-of-range device ordinal is an error naming the range", "[platform][errors]") {
  auto& platform = se::Platform<TestBackend>::Get();
  const int count = platform.VisibleDeviceCount();
  for (int bad : {count, count + 5, -1}) {
    auto executor = platform.ExecutorForDevice(bad);
    REQUIRE_FALSE(executor.ok());
    CHECK(executor.status().code() == se::ErrorCode::kOutOfRange);
    CHECK(Mentions(executor.status(), fmt::format("device ordinal {} is out of range", bad)));
    CHECK(Mentions(executor.status(), fmt::format("has {} device(s)", count)));
  }
}

TEST_CASE("the device description is filled from the driver", "[platform]") {
  const se::DeviceDescription& d = TestExecutor()->GetDeviceDescription();
  CHECK(d.platform_name == TestBackend::kName);
  CHECK_FALSE(d.name.empty());
  CHECK_FALSE(d.vendor.empty());
  CHECK(d.device_memory_size > 0);
  CHECK(d.max_allocation_size > 0);
  CHECK(d.max_allocation_size <= d.device_memory_size);
  CHECK(d.compute_units >= 1);
  CHECK(d.max_threads_per_block >= 1);
  CHECK(d.max_block_dims.x >= 1);
  CHECK(d.max_grid_dims.x >= 1);
  CHECK(d.ToString().find(d.name) != std::string::npos);
}

TEST_CASE("MultiPlatformManager finds platforms by name and type", "[platform]") {
  auto found = se::MultiPlatformManager::PlatformWithName(TestBackend::kName);
  REQUIRE(found.ok());
  auto* platform = std::get<se::Platform<TestBackend>*>(found.value());
  CHECK(platform == se::MultiPlatformManager::PlatformFor<TestBackend>());
  CHECK(se::MultiPlatformManager::AvailablePlatformNames().find(TestBackend::kName) != std::string::npos);
}

TEST_CASE("an unknown platform name lists the available ones", "[platform][errors]") {
  auto missing = se::MultiPlatformManager::PlatformWithName("tpu");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(missing.status(), "no platform named 'tpu'"));
  CHECK(Mentions(missing.status(), se::MultiPlatformManager::AvailablePlatformNames()));
}

TEST_CASE("platform names match without case, as the seed and XLA spell them", "[platform]") {
  const std::string_view name = TestBackend::kName;
  // The spellings of LLVM's StreamExecutor and XLA, and two more.
  // How the seed and XLA spell the platforms they share with us; others get their own name.
  std::string seed(name);
  for (const auto& [ours, theirs] :
       {std::pair<std::string_view, std::string_view>{"cuda", "CUDA"}, {"opencl", "OpenCL"}, {"host", "Host"}}) {
    if (ours == name) seed = theirs;
  }
  std::string upper(name), mixed(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  mixed[0] = upper[0];
  for (const std::string& spelling : {seed, upper, mixed, std::string(name)}) {
    auto found = se::MultiPlatformManager::PlatformWithName(spelling);
    INFO(spelling);
    REQUIRE(found.ok());
    CHECK(std::get<se::Platform<TestBackend>*>(found.value()) == se::MultiPlatformManager::PlatformFor<TestBackend>());
  }
  // Case only: a name that is a prefix, or has a space, is still unknown.
  CHECK(se::MultiPlatformManager::PlatformWithName(name.substr(0, name.size() - 1)).status().code() ==
        se::ErrorCode::kNotFound);
  CHECK(se::MultiPlatformManager::PlatformWithName(std::string(name) + " ").status().code() ==
        se::ErrorCode::kNotFound);
  CHECK(se::MultiPlatformManager::PlatformWithName("").status().code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(se::MultiPlatformManager::PlatformWithName("tpu").status(), "match without case"));
}

namespace {
struct LibraryState {
  explicit LibraryState(std::string device) : label(std::move(device)) {}
  std::string label;
};
}  // namespace

TEST_CASE("an executor keeps one extension state per kind for libraries", "[platform][extensions]") {
  auto* executor = TestExecutor();
  int made = 0;
  auto make = [&]() -> se::StatusOr<std::unique_ptr<LibraryState>> {
    ++made;
    return std::make_unique<LibraryState>(executor->DeviceLabel());
  };
  auto first = executor->GetOrCreateExtension<LibraryState>(make);
  REQUIRE(first.ok());
  auto again = executor->GetOrCreateExtension<LibraryState>(make);
  REQUIRE(again.ok());
  CHECK(first.value() == again.value());
  CHECK(made == 1);
  CHECK(first.value()->label == executor->DeviceLabel());
  CHECK(executor->FindExtension<LibraryState>() == first.value());
}

TEST_CASE("ExecutorForDeviceWithPluginConfig returns the device's executor with its plugins", "[platform][plugin]") {
  auto& platform = se::Platform<TestBackend>::Get();
  const se::PluginConfig defaults = TestBackend::DefaultPlugins();
  se::PluginConfig config;
  config.SetRng(defaults.rng());
  auto executor = platform.ExecutorForDeviceWithPluginConfig(0, config);
  REQUIRE(executor.ok());
  CHECK(executor.value() == platform.ExecutorForDevice(0).value());
  CHECK(executor.value()->plugin_config().rng() == defaults.rng());
  CHECK(executor.value()->plugin_config().blas() == defaults.blas());

  se::PluginConfig foreign;
  foreign.SetRng(se::RngPluginId{"no-such-platform", "philox"});
  auto rejected = platform.ExecutorForDeviceWithPluginConfig(0, foreign);
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(rejected.status(),
                 fmt::format("belongs to the 'no-such-platform' platform, not to {}:0", TestBackend::kName)));

  auto out_of_range = platform.ExecutorForDeviceWithPluginConfig(-1, config);
  CHECK(out_of_range.status().code() == se::ErrorCode::kOutOfRange);
}
