// Platform<B>: one per backend per process. Initialises the driver once,
// reports how many devices it sees, and owns one StreamExecutor per device.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/export.hpp"

namespace streamexecutor {

template <Backend B>
class StreamExecutor;
class PluginConfig;

// Exported so that two shared libraries that include these headers (even
// built with -fvisibility=hidden) share one Platform per backend per process.
template <Backend B>
class STREAMEXECUTOR_EXPORT Platform {
 public:
  // The process-wide instance; the driver is initialised on first use.
  //
  // It is never destroyed: streams, buffers and events that users keep at
  // namespace scope (or in other statics) are destroyed at exit in an order
  // nobody controls, and each of them needs its executor and the driver
  // state behind it. The operating system reclaims everything at exit.
  static Platform& Get() {
    static Platform* const instance = new Platform();
    return *instance;
  }

  Platform(const Platform&) = delete;
  Platform& operator=(const Platform&) = delete;

  std::string_view Name() const { return B::kName; }
  // Why the driver is unusable (e.g. no CUDA driver installed), or OK.
  const Status& InitStatus() const { return init_status_; }
  int VisibleDeviceCount() const { return init_status_.ok() ? B::DeviceCount(state_) : 0; }

  // The executor for device `ordinal`, created on first request and owned by
  // the platform.
  StatusOr<StreamExecutor<B>*> ExecutorForDevice(int ordinal);
  // The same executor, with the canned-operation plugins of `config`
  // (core/plugin.hpp). Kinds `config` leaves unset keep the device's choice.
  StatusOr<StreamExecutor<B>*> ExecutorForDeviceWithPluginConfig(int ordinal, const PluginConfig& config);

  typename B::PlatformState& native_state() { return state_; }
  // The executor of this platform at `address` (an allocation record's
  // owner), or null: for messages about memory of another executor.
  StreamExecutor<B>* ExecutorAt(const void* address) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& executor : executors_) {
      if (executor != nullptr && executor.get() == address) return executor.get();
    }
    return nullptr;
  }

 private:
  Platform() : init_status_(B::InitPlatform(state_)) {}
  ~Platform() = delete;

  typename B::PlatformState state_;
  Status init_status_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<StreamExecutor<B>>> executors_;
};

}  // namespace streamexecutor
