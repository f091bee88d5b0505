// Platform<B>: one per backend per process. Initialises the driver once,
// reports how many devices it sees, and owns one StreamExecutor per device.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

template <Backend B>
class StreamExecutor;

template <Backend B>
class Platform {
 public:
  // The process-wide instance; the driver is initialised on first use.
  static Platform& Get() {
    static Platform instance;
    return instance;
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

  typename B::PlatformState& native_state() { return state_; }

 private:
  Platform() : init_status_(B::InitPlatform(state_)) {}
  ~Platform();

  typename B::PlatformState state_;
  Status init_status_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<StreamExecutor<B>>> executors_;
};

}  // namespace streamexecutor
