// What every communicator shares: the element types and reductions that MPI
// and NCCL both have, one collective operation as a transport performs it
// (host-visible buffers, a completion to fire), and the reductions done on
// the host by the loopback transport.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "streamexecutor/core/operations.hpp"
#include "streamexecutor/core/status.hpp"

namespace streamexecutor {

enum class ReduceOp { kSum, kProduct, kMin, kMax };

// The element types of both MPI (MPI_INT8_T ... MPI_DOUBLE) and NCCL
// (ncclInt8 ... ncclFloat64).
template <typename T>
concept CollectiveElement =
    std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

namespace collectives_detail {

enum class ElementType : std::uint8_t { kInt8, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat, kDouble };

template <CollectiveElement T>
constexpr ElementType ElementTypeOf() {
  if constexpr (std::is_same_v<T, std::int8_t>)
    return ElementType::kInt8;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return ElementType::kUint8;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return ElementType::kInt32;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return ElementType::kUint32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return ElementType::kInt64;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return ElementType::kUint64;
  else if constexpr (std::is_same_v<T, float>)
    return ElementType::kFloat;
  else
    return ElementType::kDouble;
}

constexpr std::size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kInt8:
    case ElementType::kUint8: return 1;
    case ElementType::kInt32:
    case ElementType::kUint32:
    case ElementType::kFloat: return 4;
    default: return 8;
  }
}

constexpr std::string_view ElementName(ElementType type) {
  switch (type) {
    case ElementType::kInt8: return "int8";
    case ElementType::kUint8: return "uint8";
    case ElementType::kInt32: return "int32";
    case ElementType::kUint32: return "uint32";
    case ElementType::kInt64: return "int64";
    case ElementType::kUint64: return "uint64";
    case ElementType::kFloat: return "float";
    default: return "double";
  }
}

constexpr std::string_view OpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProduct: return "product";
    case ReduceOp::kMin: return "min";
    default: return "max";
  }
}

enum class Kind : std::uint8_t { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kSend, kRecv };

constexpr std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kAllReduce: return "ThenAllReduce";
    case Kind::kBroadcast: return "ThenBroadcast";
    case Kind::kReduce: return "ThenReduce";
    case Kind::kAllGather: return "ThenAllGather";
    case Kind::kReduceScatter: return "ThenReduceScatter";
    case Kind::kSend: return "ThenSend";
    default: return "ThenRecv";
  }
}

// How a large operation is split where it is staged: an all-reduce,
// broadcast or reduce of more than kPieceBytes goes in pieces of that size,
// each copied to staging, exchanged and copied back on its own, so that the
// copies of one piece overlap the exchange of another. The split depends on
// the call alone, so every rank (staged or not) splits alike and posts the
// same MPI calls.
inline constexpr std::uint64_t kPieceBytes = std::uint64_t{4} << 20;

// The pieces of a staged operation: one wait per piece, lifted as the piece
// arrives (before its copy back), and how many pieces are staged.
struct PieceState {
  std::vector<op::ForeignRelease> releases;
  std::atomic<std::uint32_t> ready{0};
};

// One operation of one rank, as its transport performs it. `send` and
// `recv` are host addresses (the device memory itself on host backends, a
// staging buffer elsewhere); `count` is in elements, per rank as MPI counts
// it (a gather's and a scatter's share of one rank). `peer` is the root of a
// broadcast or reduce and the other rank of a send or receive.
struct Task {
  Kind kind = Kind::kAllReduce;
  ElementType type = ElementType::kFloat;
  ReduceOp op = ReduceOp::kSum;
  int rank = 0;
  int peer = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  std::uint64_t count = 0;
  std::uint64_t sequence = 0;  // the rank's n-th collective on its communicator (sends and receives too)
  // Lifts the stream's wait (op::WaitForeign), once; `status` is set first
  // and read by the stream's check after the wait.
  op::ForeignRelease release;
  Status status;
  std::shared_ptr<void> staging;  // what `send` and `recv` point into, where they are staged
  // This rank cannot take part (its stream had failed, or the call was
  // refused): it still takes its turn, without data, so that the other ranks
  // fail at once instead of waiting for it.
  bool poisoned = false;
  std::chrono::steady_clock::time_point started{};
  std::uint32_t pieces = 1;                 // PieceCount: the same on every rank
  std::shared_ptr<PieceState> piece_state;  // where the pieces are staged one by one

  std::uint64_t SendBytes() const { return count * ElementSize(type); }
  // What this rank's call was, for messages: "ThenAllReduce of 16 float (sum)".
  std::string Describe() const;
  // Elements before piece `piece`, and in it.
  std::uint64_t PieceOffset(std::uint32_t piece) const { return piece * (kPieceBytes / ElementSize(type)); }
  std::uint64_t PieceElements(std::uint32_t piece) const {
    return std::min(count - PieceOffset(piece), kPieceBytes / ElementSize(type));
  }
  // Lifts piece `piece`'s wait, once; only the transport's one thread does.
  void Deliver(std::uint32_t piece) {
    if (piece_state == nullptr || piece >= piece_state->releases.size()) return;
    op::ForeignRelease lift = piece_state->releases[piece];
    piece_state->releases[piece] = {};
    if (lift.fire != nullptr) lift();
  }
  void Complete(Status result) {
    status = std::move(result);
    op::ForeignRelease lift = release;
    release = {};
    if (lift.fire != nullptr) lift();
    for (std::uint32_t piece = 0; piece_state != nullptr && piece < piece_state->releases.size(); ++piece) {
      Deliver(piece);
    }
  }
};

// The pieces `t` goes in (kPieceBytes).
inline std::uint32_t PieceCount(const Task& t) {
  if (t.kind != Kind::kAllReduce && t.kind != Kind::kBroadcast && t.kind != Kind::kReduce) return 1;
  const std::uint64_t per = kPieceBytes / ElementSize(t.type);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, (t.count + per - 1) / per));
}

inline std::string Task::Describe() const {
  std::string text =
      std::string(KindName(kind)) + " of " + std::to_string(count) + " " + std::string(ElementName(type));
  if (kind == Kind::kAllReduce || kind == Kind::kReduce || kind == Kind::kReduceScatter) {
    text += " (" + std::string(OpName(op)) + ")";
  }
  if (kind == Kind::kBroadcast || kind == Kind::kReduce) text += " with root " + std::to_string(peer);
  if (kind == Kind::kSend) text += " to rank " + std::to_string(peer);
  if (kind == Kind::kRecv) text += " from rank " + std::to_string(peer);
  return text;
}

// What a rank called, in 64 bits (kind, element type, count, reduction,
// root), for the ranks' comparison of their calls before a collective: a
// rank's signature s goes out as (s, -s, poisoned), and the maximum over the
// ranks gives max(s), -min(s) and whether any rank could not take part.
inline std::int64_t CallSignature(const Task& t) {
  const auto kind = static_cast<std::int64_t>(t.kind), type = static_cast<std::int64_t>(t.type),
             op = static_cast<std::int64_t>(t.op);
  const bool reduces = t.kind == Kind::kAllReduce || t.kind == Kind::kReduce || t.kind == Kind::kReduceScatter;
  const bool rooted = t.kind == Kind::kBroadcast || t.kind == Kind::kReduce;
  // count < 2^40 elements; the rest in the top bits.
  return static_cast<std::int64_t>(t.count & 0xffffffffffULL) | (kind << 40) | (type << 44) |
         ((reduces ? op : 0) << 48) | (static_cast<std::int64_t>(rooted ? t.peer : 0) << 51);
}

// The ranks' comparison, given this rank's (s, -s, poisoned) and their
// maximum over the ranks: INVALID_ARGUMENT when the calls differ,
// FAILED_PRECONDITION when a rank could not take part.
inline Status CompareCalls(const Task& t, const std::int64_t (&mine)[3], const std::int64_t (&agreed)[3], int rank,
                           int size, std::string_view transport) {
  if (agreed[2] != 0) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "{} ({}, call {} of rank {} of {}): {} could not take part (its stream had failed, or its call "
                     "was refused): that rank's Status says why",
                     t.Describe(), transport, t.sequence, rank, size, t.poisoned ? "this rank" : "another rank");
  }
  if (agreed[0] != mine[0] || agreed[1] != mine[1]) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "mismatched collective operations ({}, call {} of rank {} of {}): this rank called {}, another "
                     "rank called something else (kind, element type, count, reduction or root)",
                     transport, t.sequence, rank, size, t.Describe());
  }
  return Status();
}

// How long an operation may take before it fails with DEADLINE_EXCEEDED:
// STREAMEXECUTOR_COLLECTIVE_TIMEOUT seconds, 300 when unset.
inline std::chrono::milliseconds CollectiveTimeout() {
  std::chrono::milliseconds timeout{300'000};
  if (const char* text = std::getenv("STREAMEXECUTOR_COLLECTIVE_TIMEOUT"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end != nullptr && *end == '\0' && seconds > 0)
      timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  }
  return timeout;
}

// STREAMEXECUTOR_COLLECTIVE_CHECK=0: no comparison of the ranks' calls (one
// round trip less per operation, for programs known to be right).
inline bool CollectiveCheckEnabled() {
  const char* check = std::getenv("STREAMEXECUTOR_COLLECTIVE_CHECK");
  return check == nullptr || std::string_view(check) != "0";
}

// The ranks' comparison of their calls, over a channel of its own (MPI
// beside NCCL), for a transport whose own library cannot report a mismatch.
// Blocking: it returns once every rank involved made the same call, or with
// the Status of the difference, or after the timeout.
class Agreement {
 public:
  virtual ~Agreement() = default;
  virtual Status Agree(const Task& task) = 0;
};

// A communicator's way to the other ranks, chosen at run time (loopback,
// MPI, NCCL): one indirect call per collective operation, never per launch.
class Transport {
 public:
  virtual ~Transport() = default;
  // `task` is ready (its inputs are in place): perform it, then Complete it,
  // from any thread, exactly once.
  virtual void Start(std::shared_ptr<Task> task) = 0;
  // Piece `piece` of a task staged piece by piece is in place (the pieces
  // come in order). The default starts the task once all are.
  virtual void StartPiece(std::shared_ptr<Task> task, std::uint32_t piece) {
    (void)piece;
    if (task->piece_state->ready.fetch_add(1, std::memory_order_acq_rel) + 1 == task->pieces) Start(std::move(task));
  }
  virtual int size() const = 0;
  virtual std::string_view name() const = 0;
};

// dst[i] = dst[i] op src[i], for the host reductions of the loopback transport.
template <typename T>
void ReduceInto(T* dst, const T* src, std::uint64_t count, ReduceOp op) {
  for (std::uint64_t i = 0; i < count; ++i) {
    switch (op) {
      case ReduceOp::kSum: dst[i] = static_cast<T>(dst[i] + src[i]); break;
      case ReduceOp::kProduct: dst[i] = static_cast<T>(dst[i] * src[i]); break;
      case ReduceOp::kMin: dst[i] = std::min(dst[i], src[i]); break;
      case ReduceOp::kMax: dst[i] = std::max(dst[i], src[i]); break;
    }
  }
}

inline void ReduceInto(ElementType type, void* dst, const void* src, std::uint64_t count, ReduceOp op) {
  switch (type) {
    case ElementType::kInt8:
      return ReduceInto(static_cast<std::int8_t*>(dst), static_cast<const std::int8_t*>(src), count, op);
    case ElementType::kUint8:
      return ReduceInto(static_cast<std::uint8_t*>(dst), static_cast<const std::uint8_t*>(src), count, op);
    case ElementType::kInt32:
      return ReduceInto(static_cast<std::int32_t*>(dst), static_cast<const std::int32_t*>(src), count, op);
    case ElementType::kUint32:
      return ReduceInto(static_cast<std::uint32_t*>(dst), static_cast<const std::uint32_t*>(src), count, op);
    case ElementType::kInt64:
      return ReduceInto(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(src), count, op);
    case ElementType::kUint64:
      return ReduceInto(static_cast<std::uint64_t*>(dst), static_cast<const std::uint64_t*>(src), count, op);
    case ElementType::kFloat: return ReduceInto(static_cast<float*>(dst), static_cast<const float*>(src), count, op);
    case ElementType::kDouble: return ReduceInto(static_cast<double*>(dst), static_cast<const double*>(src), count, op);
  }
}

}  // namespace collectives_detail
}  // namespace streamexecutor
