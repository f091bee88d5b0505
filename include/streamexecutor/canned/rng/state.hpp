// The generator's state on one executor, shared by every plugin: the seed and
// the position in the Philox block sequence.
//
// It lives with the executor, not with a stream: the seed's design has one
// RNG per device (ThenSetRngSeed on any stream reseeds it), and the counter
// must advance across streams so that two streams never draw the same
// numbers. Both change when a Then* call is made, not when the device runs
// it, so the numbers a call gets depend only on the seed and on the calls
// made on that executor before it, in call order.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>

#include "streamexecutor/core/status.hpp"

namespace streamexecutor::rng_detail {

// Seed rule: 8 to 16 bytes. Bytes 0..7 are the 64-bit Philox key; bytes
// 8..15 (zero-padded) select one of 2^64 independent streams (the high half
// of the counter). Fewer than 8 would leave key bits to chance, more than 16
// would be bytes the generator silently ignores, so both are errors.
inline constexpr std::uint64_t kMinSeedBytes = 8;
inline constexpr std::uint64_t kMaxSeedBytes = 16;

struct Seed {
  std::uint64_t key = 0;
  std::uint64_t stream = 0;
};

inline StatusOr<Seed> ParseSeed(std::string_view caller, std::string_view device, const std::uint8_t* seed,
                                std::uint64_t seed_bytes) {
  if (seed == nullptr) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: the seed pointer is null", caller, device);
  }
  if (seed_bytes < kMinSeedBytes || seed_bytes > kMaxSeedBytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the seed is {} bytes; it must be {} to {} bytes (bytes 0-7: the Philox key, 8-15: "
                     "the stream)",
                     caller, device, seed_bytes, kMinSeedBytes, kMaxSeedBytes);
  }
  Seed parsed;
  for (std::uint64_t i = 0; i < 8; ++i) parsed.key |= static_cast<std::uint64_t>(seed[i]) << (8 * i);
  for (std::uint64_t i = 8; i < seed_bytes; ++i) parsed.stream |= static_cast<std::uint64_t>(seed[i]) << (8 * (i - 8));
  return parsed;
}

// Where one call's values start.
struct Reservation {
  Seed seed;
  std::uint64_t first_block = 0;
};

class Generator {
 public:
  void Reseed(const Seed& seed) {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
    seeded_ = true;
    next_block_ = 0;
  }

  // Takes `blocks` Philox blocks for one call. No default seed: a program
  // that forgot ThenSetRngSeed would otherwise get the same "random"
  // numbers on every run without being told.
  StatusOr<Reservation> Reserve(std::string_view caller, std::string_view device, std::uint64_t blocks) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!seeded_) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{} on {}: no RNG seed was set on this device (call ThenSetRngSeed first)", caller, device);
    }
    // 2^64 blocks are 2^66 floats: a wrap would repeat numbers, so it is
    // refused rather than assumed impossible.
    if (blocks > ~next_block_) {
      return MakeError(ErrorCode::kOutOfRange, "{} on {}: the Philox counter of this seed is exhausted; reseed", caller,
                       device);
    }
    Reservation reservation{seed_, next_block_};
    next_block_ += blocks;
    return reservation;
  }

 private:
  std::mutex mutex_;
  Seed seed_;
  bool seeded_ = false;
  std::uint64_t next_block_ = 0;
};

}  // namespace streamexecutor::rng_detail
