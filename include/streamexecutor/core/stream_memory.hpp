// Stream memory operations: a stream waits until a 32- or 64-bit word in
// device memory meets a condition, or writes a value to one, in stream order
// (CUDA's cuStreamWaitValue32/64 and cuStreamWriteValue32/64).
//
//   producer.ThenLaunch(...).ThenWriteValue(&flag, 1);
//   consumer.ThenWaitValue(flag, 1).ThenLaunch(...);
//
// The word is the first element of the DeviceMemory given. Another
// stream's ThenWriteValue (of any executor or process that maps the memory)
// writes it; on CUDA a copy, a kernel or host code may too, and on the host
// backends a kernel or host code with an atomic store. A wait blocks only its
// own stream, and waits as long as the condition does not hold:
// BlockHostUntilDone, a synchronous operation (which waits for busy streams)
// and the Stream's destructor then wait too, as cuStreamSynchronize does on
// CUDA. Write the value the wait expects before any of these.
//
// A wait holds from the moment it reads the word meeting the condition; work
// after it sees what the writer wrote before the value (a write is ordered
// after the work before it on its stream, and is visible to a wait as a
// release store is to an acquire load).
//
// A backend that runs them is a StreamMemoryOperationBackend; elsewhere
// (OpenCL has no such command) they are UNIMPLEMENTED, after the same checks
// of the word. A capture refuses them.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

// When a wait lets its stream go on; `word` is the value read, `value` the
// one given. GEQ compares as CUDA does, cyclically: (signed)(word - value) >= 0,
// so that a counter that wraps around still counts as having passed.
enum class WaitCondition : std::uint8_t {
  kGreaterOrEqual,  // (signed)(word - value) >= 0
  kEqual,           // word == value
  kAnd,             // (word & value) != 0: any of the bits in value is set
  kNor,             // ~(word | value) != 0: some bit is clear in both
};

inline constexpr std::string_view WaitConditionName(WaitCondition condition) {
  switch (condition) {
    case WaitCondition::kGreaterOrEqual: return "greater-or-equal";
    case WaitCondition::kEqual: return "equal";
    case WaitCondition::kAnd: return "and";
    case WaitCondition::kNor: return "nor";
  }
  return "unknown";
}

namespace op {

// `wide`: a 64-bit word, else 32-bit. The value of a 32-bit operation fits in 32 bits.
struct WaitValue {
  DeviceMemoryBase word;
  std::uint64_t value;
  WaitCondition condition;
  bool wide;
};
struct WriteValue {
  DeviceMemoryBase word;
  std::uint64_t value;
  bool wide;
};

namespace detail {
template <typename Executor>
Status CheckWord(const Executor& executor, std::string_view caller, const DeviceMemoryBase& word, bool wide) {
  const std::uint64_t bytes = wide ? 8 : 4;
  if (Status s = executor.CheckDeviceRange(caller, "word", word, bytes); !s.ok()) return s;
  if (word.offset() % bytes != 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} on {}: the word's view starts at byte offset {}, which is not a multiple of {} (a {}-bit "
                     "word is aligned to its size)",
                     caller, executor.DeviceLabel(), word.offset(), bytes, bytes * 8);
  }
  return Status();
}
}  // namespace detail

template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const WaitValue& wait) {
  if (static_cast<unsigned>(wait.condition) > static_cast<unsigned>(WaitCondition::kNor)) {
    return MakeError(ErrorCode::kInvalidArgument, "{} on {}: {} is not a WaitCondition", caller, executor.DeviceLabel(),
                     static_cast<unsigned>(wait.condition));
  }
  return detail::CheckWord(executor, caller, wait.word, wait.wide);
}
template <typename Executor>
Status Validate(const Executor& executor, std::string_view caller, const WriteValue& write) {
  return detail::CheckWord(executor, caller, write.word, write.wide);
}

}  // namespace op

// A backend that runs stream memory operations:
//   B::Submit(StreamHandle&, const op::WaitValue&), B::Submit(StreamHandle&, const op::WriteValue&).
template <typename B>
concept StreamMemoryOperationBackend =
    Backend<B> && requires(typename B::StreamHandle& stream, const op::WaitValue& wait, const op::WriteValue& write) {
      { B::Submit(stream, wait) } -> std::same_as<Status>;
      { B::Submit(stream, write) } -> std::same_as<Status>;
    };

namespace detail {

// The element types a word may have: 32- and 64-bit integers.
template <typename T>
concept StreamMemoryWord = std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8);
template <StreamMemoryWord T>
constexpr std::uint64_t WordBits(T value) {
  return static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(value));
}

// Whether `word` meets `condition` against `value`, as CUDA defines the conditions.
constexpr bool WaitConditionHolds(std::uint64_t word, std::uint64_t value, WaitCondition condition, bool wide) {
  const std::uint64_t mask = wide ? ~std::uint64_t{0} : std::uint64_t{0xffffffffu};
  word &= mask;
  value &= mask;
  switch (condition) {
    case WaitCondition::kGreaterOrEqual: {
      const std::uint64_t difference = (word - value) & mask;
      const std::uint64_t sign = wide ? std::uint64_t{1} << 63 : std::uint64_t{1} << 31;
      return (difference & sign) == 0;
    }
    case WaitCondition::kEqual: return word == value;
    case WaitCondition::kAnd: return (word & value) != 0;
    case WaitCondition::kNor: return (~(word | value) & mask) != 0;
  }
  return false;
}

template <typename B>
Status UnsupportedStreamMemoryOperation(std::string_view caller, std::string_view device) {
  return MakeError(ErrorCode::kUnimplemented,
                   "{} on {}: the {} backend has no stream memory operations; see StreamMemoryOperationBackend in "
                   "docs/api.md",
                   caller, device, B::kName);
}

}  // namespace detail
}  // namespace streamexecutor
