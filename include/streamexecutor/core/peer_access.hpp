// Peer access between two executors of one platform: once
// `a->EnablePeerAccessTo(b)` succeeded, kernels launched on `a` may take
// memory of `b` as arguments (CUDA: after cuCtxEnablePeerAccess, unified
// addressing makes b's CUdeviceptr valid in a's context).
//
// The launch path's liveness check stays one compare of the view's record
// owner with the launching executor (StreamExecutor::IsLiveView); a view of
// another executor fails it, and only then, on the launch's cold path
// (CheckLaunchMemory), is it looked up among the executors this one enabled
// peer access to. A backend without peer access (PeerAccessBackend is false:
// host, OpenCL) answers CanEnablePeerAccessTo with false, refuses
// EnablePeerAccessTo, and its launches refuse another executor's memory;
// ThenCopyBetween copies it instead, on every backend. Copies and fills on a
// stream (ThenMemcpy and friends) take only the stream's own executor's
// memory, peer access or not: ThenCopyBetween is the copy between two.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/platform.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor::detail {

// The executors whose memory kernels of one executor may take. A member of
// StreamExecutor, its last, rather than of the base below: a base's members
// come before the executor's own, and this keeps the offsets of those the
// launch path reads (the description, the records) as they were.
struct PeerList {
  mutable std::mutex mutex;
  std::vector<const void*> executors;
};

// StreamExecutor's peer-access calls (a base class without data, so that
// executor.hpp only asks it on the launch's cold path).
template <typename B>
class PeerAccessApi {
 public:
  // Whether EnablePeerAccessTo(other) can succeed: the driver says this
  // device can reach the other's memory. False for a null or the same
  // executor, and on backends without peer access.
  bool CanEnablePeerAccessTo(StreamExecutor<B>* other) {
    if constexpr (PeerAccessBackend<B>) {
      if (other == nullptr || other == &Self()) return false;
      return B::CanEnablePeerAccess(Self().native_state(), other->native_state());
    } else {
      return false;
    }
  }

  // Lets kernels launched on this executor take memory of `other` (one way:
  // `other`'s kernels need their own call). Enabling it again is OK and
  // calls the driver no more.
  Status EnablePeerAccessTo(StreamExecutor<B>* other) {
    StreamExecutor<B>& self = Self();
    if (other == nullptr || other == &self) {
      return MakeError(ErrorCode::kInvalidArgument, "EnablePeerAccessTo on {}: {}", self.DeviceLabel(),
                       other == nullptr ? "the other StreamExecutor is null"
                                        : "that is this executor, whose kernels always take its own memory");
    }
    if constexpr (PeerAccessBackend<B>) {
      if (IsPeer(other)) return Status();
      if (!B::CanEnablePeerAccess(self.native_state(), other->native_state())) {
        return MakeError(ErrorCode::kUnimplemented,
                         "EnablePeerAccessTo on {}: the driver says this device cannot access memory of {} "
                         "(CanEnablePeerAccessTo is false); ThenCopyBetween copies memory between them",
                         self.DeviceLabel(), other->DeviceLabel());
      }
      STREAMEXECUTOR_RETURN_IF_ERROR(B::EnablePeerAccess(self.native_state(), other->native_state()));
      try {
        PeerList& peers = self.peers_;
        std::lock_guard<std::mutex> lock(peers.mutex);
        if (std::find(peers.executors.begin(), peers.executors.end(), other) == peers.executors.end()) {
          peers.executors.push_back(other);  // else a call on another thread won
        }
      } catch (...) {
        return MakeError(ErrorCode::kResourceExhausted, "EnablePeerAccessTo on {}: out of host memory to record {}",
                         self.DeviceLabel(), other->DeviceLabel());
      }
      return Status();
    } else {
      return MakeError(ErrorCode::kUnimplemented,
                       "EnablePeerAccessTo on {}: the {} backend has no peer access: its kernels take only memory "
                       "of their own executor; ThenCopyBetween copies memory of {} to this one",
                       self.DeviceLabel(), B::kName, other->DeviceLabel());
    }
  }

  // The launch checks' cold path: whether `view` is live memory of an
  // executor this one enabled peer access to.
  [[gnu::noinline]] bool IsEnabledPeerView(const DeviceMemoryBase& view) const {
    if constexpr (PeerAccessBackend<B>) {
      const void* owner = view.allocation_record()->owner;
      if (owner == nullptr || owner == &Self() || !IsPeer(owner)) return false;
      // A record's owner is the StreamExecutor that made it, and peers_
      // holds only executors of this backend.
      return static_cast<const StreamExecutor<B>*>(owner)->IsLiveView(view);
    } else {
      return false;
    }
  }

  // Why a launch argument that is live memory of another executor of this
  // platform is refused; OK for anything else (freed or unknown memory),
  // which the general liveness message describes.
  [[gnu::cold]] Status RefuseOtherExecutorMemory(const std::string& kernel_name, std::size_t index,
                                                 const DeviceMemoryBase& view) const {
    const StreamExecutor<B>& self = Self();
    const StreamExecutor<B>* owner = self.platform()->ExecutorAt(view.allocation_record()->owner);
    if (owner == nullptr || owner == &self || !owner->IsLiveView(view)) return Status();
    constexpr bool kPeers = PeerAccessBackend<B>;
    return MakeError(
        ErrorCode::kFailedPrecondition,
        "ThenLaunch of kernel '{}' on {}: argument {} is not live memory of this executor: it is memory "
        "of {}, another executor; {}; ThenCopyBetween copies it here",
        kernel_name, self.DeviceLabel(), index, owner->DeviceLabel(),
        kPeers
            ? ::streamexecutor::detail::Format("kernels on {} take it once EnablePeerAccessTo({}) succeeded (where "
                                               "CanEnablePeerAccessTo says the devices can)",
                                               self.DeviceLabel(), owner->DeviceLabel())
            : ::streamexecutor::detail::Format("the {} backend has no peer access, so its kernels take only their own "
                                               "executor's memory",
                                               B::kName));
  }

 private:
  const StreamExecutor<B>& Self() const { return static_cast<const StreamExecutor<B>&>(*this); }
  StreamExecutor<B>& Self() { return static_cast<StreamExecutor<B>&>(*this); }
  bool IsPeer(const void* executor) const {
    const PeerList& peers = Self().peers_;
    std::lock_guard<std::mutex> lock(peers.mutex);
    return std::find(peers.executors.begin(), peers.executors.end(), executor) != peers.executors.end();
  }
};

}  // namespace streamexecutor::detail
