// Launch attributes: what a launch asks of the device beyond its grid, as
// CUDA's cuLaunchKernelEx takes them.
//
//   stream.ThenLaunch(se::LaunchAttributes().Cooperative(), threads, blocks, kernel, args...);
//   stream.ThenLaunch(se::LaunchAttributes().Clusters(se::ClusterDim(2)), threads, blocks, kernel, args...);
//   stream.ThenLaunch(se::LaunchAttributes().ProgrammaticDependent(), threads, blocks, kernel, args...);
//
// - Cooperative: every block of the grid is resident at once, so that the
//   kernel may synchronize the whole grid (cooperative_groups::grid_group::
//   sync). The grid must fit the device at once; the driver refuses a larger one.
// - Clusters: blocks are scheduled in clusters of ClusterDim blocks that
//   share distributed shared memory (compute capability 9.0). Each grid
//   dimension must be a multiple of the cluster's, and a cluster holds at
//   most 8 blocks (CUDA's portable size).
// - Programmatic dependent launch: the kernel may start before the previous
//   kernel on the stream has finished, where that one triggers it
//   (griddepcontrol; compute capability 9.0).
//
// A backend that launches with attributes is a LaunchAttributeBackend; on
// any other one (host, OpenCL) a launch with an attribute is UNIMPLEMENTED,
// naming it, and a launch with none is an ordinary launch. Device support and
// the cluster's shape are checked before the driver is called.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/dims.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

struct ClusterDim : Dim3 {
  constexpr ClusterDim(std::uint64_t x_ = 1, std::uint64_t y_ = 1, std::uint64_t z_ = 1) : Dim3{x_, y_, z_} {}
};

class LaunchAttributes {
 public:
  // A cluster holds at most this many blocks (CUDA's portable cluster size).
  static constexpr std::uint64_t kMaxClusterBlocks = 8;

  constexpr LaunchAttributes& Cooperative(bool on = true) {
    cooperative_ = on;
    return *this;
  }
  constexpr LaunchAttributes& Clusters(ClusterDim cluster) {
    cluster_ = cluster;
    return *this;
  }
  constexpr LaunchAttributes& ProgrammaticDependent(bool on = true) {
    programmatic_ = on;
    return *this;
  }

  constexpr bool cooperative() const { return cooperative_; }
  constexpr const ClusterDim& cluster() const { return cluster_; }
  constexpr bool clustered() const { return !(cluster_ == Dim3{}); }
  constexpr bool programmatic_dependent() const { return programmatic_; }
  constexpr bool none() const { return !cooperative_ && !clustered() && !programmatic_; }

  // "cooperative, clusters of 2x1x1 blocks", for messages.
  std::string Describe() const {
    std::string out;
    auto add = [&out](const std::string& what) { out += (out.empty() ? "" : ", ") + what; };
    if (cooperative_) add("cooperative");
    if (clustered()) {
      add("clusters of " + std::to_string(cluster_.x) + "x" + std::to_string(cluster_.y) + "x" +
          std::to_string(cluster_.z) + " blocks");
    }
    if (programmatic_) add("programmatic dependent launch");
    return out.empty() ? std::string("no attributes") : out;
  }

 private:
  bool cooperative_ = false;
  ClusterDim cluster_{};
  bool programmatic_ = false;
};

// A backend that launches typed kernels with attributes:
//   B::CheckLaunchAttributes(ExecutorState&, const LaunchAttributes&, ThreadDim, BlockDim)
//     whether the device can (a Status naming what it lacks);
//   B::SubmitWithAttributes<Params...>(StreamHandle&, const op::LaunchSite<KernelHandle>&,
//                                      const LaunchAttributes&, const Args&...)
template <typename B>
concept LaunchAttributeBackend = Backend<B> && requires { requires B::kLaunchAttributes; };

namespace detail {

// What every backend checks before its own checks: the cluster's shape.
inline Status CheckClusterShape(const LaunchAttributes& attributes, const BlockDim& blocks,
                                std::string_view kernel_name, std::string_view device) {
  if (!attributes.clustered()) return Status();
  const ClusterDim& c = attributes.cluster();
  if (c.x == 0 || c.y == 0 || c.z == 0 || blocks.x % c.x != 0 || blocks.y % c.y != 0 || blocks.z % c.z != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenLaunch of kernel '{}' on {}: a grid of {}x{}x{} blocks does not divide into clusters of "
                     "{}x{}x{} blocks (each grid dimension must be a multiple of the cluster's)",
                     kernel_name, device, blocks.x, blocks.y, blocks.z, c.x, c.y, c.z);
  }
  if (c.Count() > LaunchAttributes::kMaxClusterBlocks) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "ThenLaunch of kernel '{}' on {}: a cluster of {}x{}x{} blocks holds {} blocks, more than the {} "
                     "a cluster may hold",
                     kernel_name, device, c.x, c.y, c.z, c.Count(), LaunchAttributes::kMaxClusterBlocks);
  }
  return Status();
}

template <typename B>
Status UnsupportedLaunchAttributes(const LaunchAttributes& attributes, std::string_view kernel_name,
                                   std::string_view device) {
  return MakeError(ErrorCode::kUnimplemented,
                   "ThenLaunch of kernel '{}' on {}: the {} backend has no launch attributes ({} asked); see "
                   "LaunchAttributeBackend in docs/api.md",
                   kernel_name, device, B::kName, attributes.Describe());
}

}  // namespace detail
}  // namespace streamexecutor
