// Launch dimensions with the seed's meaning: ThreadDim is threads per block,
// BlockDim is blocks per grid. Both default to 1 x 1 x 1.
#pragma once

#include <cstdint>

namespace streamexecutor {

struct Dim3 {
  std::uint64_t x = 1, y = 1, z = 1;
  constexpr std::uint64_t Count() const { return x * y * z; }
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

struct ThreadDim : Dim3 {
  constexpr ThreadDim(std::uint64_t x_ = 1, std::uint64_t y_ = 1, std::uint64_t z_ = 1) : Dim3{x_, y_, z_} {}
};

struct BlockDim : Dim3 {
  constexpr BlockDim(std::uint64_t x_ = 1, std::uint64_t y_ = 1, std::uint64_t z_ = 1) : Dim3{x_, y_, z_} {}
};

}  // namespace streamexecutor
