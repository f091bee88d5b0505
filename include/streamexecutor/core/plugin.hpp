// PluginConfig: which library serves each kind of canned operation (BLAS,
// FFT, RNG, DNN) on one executor. The seed's spelling:
//
//   se::PluginConfig plugin_config;
//   plugin_config.SetRng(se::cuda::kCuRandPlugin);
//   auto* executor = platform->ExecutorForDeviceWithPluginConfig(0, plugin_config).ValueOrDie();
//
// Plugin constants are defined by the canned-operation headers
// (<streamexecutor/rng.hpp> and friends), so a plugin whose library was not
// built in does not compile. A kind left unset keeps the backend's default
// plugin for it (B::DefaultPlugins()).
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <string_view>

#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

// kCount is not a kind: it counts them, and sizes every per-kind array, so
// that a new family is one enumerator (and its name below).
enum class PluginKind : unsigned char { kBlas, kFft, kRng, kDnn, kCount };
inline constexpr std::size_t kPluginKindCount = static_cast<std::size_t>(PluginKind::kCount);

constexpr std::string_view PluginKindName(PluginKind kind) {
  switch (kind) {
    case PluginKind::kBlas: return "BLAS";
    case PluginKind::kFft: return "FFT";
    case PluginKind::kRng: return "RNG";
    case PluginKind::kDnn: return "DNN";
    case PluginKind::kCount: break;
  }
  return "?";
}

// One plugin of one kind for one backend. The kind is part of the type, so
// SetRng(a BLAS plugin) does not compile. An empty name means "the backend's
// default".
template <PluginKind Kind>
struct PluginId {
  std::string_view backend;
  std::string_view name;

  static constexpr PluginKind kKind = Kind;
  constexpr bool is_default() const { return name.empty(); }
  friend constexpr bool operator==(const PluginId&, const PluginId&) = default;
};

using BlasPluginId = PluginId<PluginKind::kBlas>;
using FftPluginId = PluginId<PluginKind::kFft>;
using RngPluginId = PluginId<PluginKind::kRng>;
using DnnPluginId = PluginId<PluginKind::kDnn>;

// Leaves a kind to the backend's default: PluginConfig().SetRng(kDefaultPlugin).
inline constexpr struct DefaultPluginTag {
  template <PluginKind Kind>
  constexpr operator PluginId<Kind>() const {
    return {};
  }
} kDefaultPlugin{};

namespace detail {
class PluginSelection;
}

class PluginConfig {
 public:
  PluginConfig& SetBlas(BlasPluginId plugin) { return Set(plugin); }
  PluginConfig& SetFft(FftPluginId plugin) { return Set(plugin); }
  PluginConfig& SetRng(RngPluginId plugin) { return Set(plugin); }
  PluginConfig& SetDnn(DnnPluginId plugin) { return Set(plugin); }

  BlasPluginId blas() const { return Get<PluginKind::kBlas>(); }
  FftPluginId fft() const { return Get<PluginKind::kFft>(); }
  RngPluginId rng() const { return Get<PluginKind::kRng>(); }
  DnnPluginId dnn() const { return Get<PluginKind::kDnn>(); }

  friend bool operator==(const PluginConfig&, const PluginConfig&) = default;

 private:
  friend class detail::PluginSelection;
  struct Entry {
    std::string_view backend;
    std::string_view name;
    friend constexpr bool operator==(const Entry&, const Entry&) = default;
  };
  static constexpr std::size_t Index(PluginKind kind) { return static_cast<std::size_t>(kind); }

  template <PluginKind Kind>
  PluginConfig& Set(PluginId<Kind> plugin) {
    entries_[Index(Kind)] = Entry{plugin.backend, plugin.name};
    return *this;
  }
  template <PluginKind Kind>
  PluginId<Kind> Get() const {
    const Entry& entry = entries_[Index(Kind)];
    return PluginId<Kind>{entry.backend, entry.name};
  }

  std::array<Entry, kPluginKindCount> entries_{};
};

namespace detail {

// The plugin choice of one executor: starts as the backend's defaults. A kind
// may be chosen once, and only until a canned operation of that kind first
// runs (Use): the library state made for it lives on in the executor.
class PluginSelection {
 public:
  explicit PluginSelection(const PluginConfig& defaults) : config_(defaults) {}

  // Merges the kinds `requested` sets into the choice made so far; asking a
  // chosen or used kind for another plugin is an error, the same one is not.
  Status Adopt(const PluginConfig& requested, std::string_view backend, std::string_view device) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < requested.entries_.size(); ++i) {
      const PluginConfig::Entry& entry = requested.entries_[i];
      if (entry.name.empty()) continue;
      const auto kind = static_cast<PluginKind>(i);
      if (entry.backend != backend) {
        return MakeError(ErrorCode::kInvalidArgument, "{} plugin '{}' belongs to the '{}' platform, not to {}",
                         PluginKindName(kind), entry.name, entry.backend, device);
      }
      const PluginConfig::Entry& current = config_.entries_[i];
      if (current == entry) continue;
      if (chosen_[i] || used_[i]) {
        return MakeError(ErrorCode::kFailedPrecondition,
                         "{} already uses {} plugin '{}'; it cannot switch to '{}' (one plugin per kind per device)",
                         device, PluginKindName(kind), current.name.empty() ? "<none>" : current.name, entry.name);
      }
    }
    for (std::size_t i = 0; i < requested.entries_.size(); ++i) {
      if (requested.entries_[i].name.empty()) continue;
      config_.entries_[i] = requested.entries_[i];
      chosen_[i] = true;
    }
    return Status();
  }

  // The plugin of `Kind` (empty name: the backend has none), fixed from now on.
  template <PluginKind Kind>
  PluginId<Kind> Use() {
    std::lock_guard<std::mutex> lock(mutex_);
    used_[PluginConfig::Index(Kind)] = true;
    return config_.Get<Kind>();
  }

  PluginConfig Current() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return config_;
  }

 private:
  mutable std::mutex mutex_;
  PluginConfig config_;
  std::array<bool, kPluginKindCount> chosen_{};
  std::array<bool, kPluginKindCount> used_{};
};

}  // namespace detail
}  // namespace streamexecutor
