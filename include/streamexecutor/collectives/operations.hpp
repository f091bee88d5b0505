// The collective operations on a stream, one pipeline for every backend and
// transport:
//
//   [copy the input to a staging buffer]     (where device memory is not host memory)
//   record a marker event                    its completion hands the operation to the transport
//   wait (op::WaitForeign)                   lifted by the transport when the operation is done
//   [copy the result from the staging buffer]
//   a host callback that returns the operation's Status (a failure fails the stream)
//
// No thread waits per operation: the marker's completion notifies the
// transport (B::NotifyWhenComplete), and the transport's completion lifts
// the stream's wait. Each backend needs ForeignWaitBackend and
// EventNotifyBackend (core/backend.hpp).
//
// A transport that drives the stream itself (StreamTransport: NCCL on CUDA)
// replaces everything but the callback: it queues the operation on the
// stream, on the device buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/collectives/communicator.hpp"
#include "streamexecutor/core/backend.hpp"
#include "streamexecutor/core/copy.hpp"
#include "streamexecutor/core/device_memory.hpp"
#include "streamexecutor/core/event.hpp"
#include "streamexecutor/core/stream.hpp"

namespace streamexecutor {

template <typename B>
concept CollectiveBackend = ForeignWaitBackend<B> && EventNotifyBackend<B>;

namespace collectives_detail {

// What one rank passes: its send and receive views (either may be null where
// the operation does not use it on this rank) and their sizes in bytes.
struct Buffers {
  const DeviceMemoryBase* send = nullptr;
  std::uint64_t send_bytes = 0;
  DeviceMemoryBase* recv = nullptr;
  std::uint64_t recv_bytes = 0;
};

inline constexpr std::uint32_t kWhole = ~std::uint32_t{0};

// The marker's notification: hands the task (or one staged piece of it,
// where `piece` is not kWhole) to its transport.
struct Starter {
  std::shared_ptr<Transport> transport;
  std::shared_ptr<Task> task;
  std::uint32_t piece = kWhole;
  static void Fire(void* context) noexcept {
    std::unique_ptr<Starter> self(static_cast<Starter*>(context));
    if (self->piece == kWhole || self->piece == 0) self->task->started = std::chrono::steady_clock::now();
    if (self->piece == kWhole) {
      self->transport->Start(std::move(self->task));
    } else {
      self->transport->StartPiece(std::move(self->task), self->piece);
    }
  }
};

template <CollectiveBackend B>
Status CheckBuffers(const Communicator<B>& comm, const Task& task, const Buffers& buffers) {
  const std::string what = task.Describe();
  const auto need = [&](const char* name, const DeviceMemoryBase* memory, std::uint64_t have,
                        std::uint64_t bytes) -> Status {
    if (memory == nullptr || memory->IsNull()) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on rank {} of {}: the {} buffer is null", what, comm.rank(),
                       comm.size(), name);
    }
    if (have < bytes) {
      return MakeError(ErrorCode::kInvalidArgument, "{} on rank {} of {}: the {} buffer holds {} bytes, {} are needed",
                       what, comm.rank(), comm.size(), name, have, bytes);
    }
    return Status();
  };
  const std::uint64_t element = ElementSize(task.type);
  const std::uint64_t size = static_cast<std::uint64_t>(comm.size());
  const bool root = task.peer == comm.rank();
  switch (task.kind) {
    case Kind::kAllReduce:
      STREAMEXECUTOR_RETURN_IF_ERROR(need("send", buffers.send, buffers.send_bytes, task.count * element));
      return need("receive", buffers.recv, buffers.recv_bytes, task.count * element);
    case Kind::kBroadcast: return need("broadcast", buffers.recv, buffers.recv_bytes, task.count * element);
    case Kind::kReduce:
      STREAMEXECUTOR_RETURN_IF_ERROR(need("send", buffers.send, buffers.send_bytes, task.count * element));
      return root ? need("receive", buffers.recv, buffers.recv_bytes, task.count * element) : Status();
    case Kind::kAllGather:
      STREAMEXECUTOR_RETURN_IF_ERROR(need("send", buffers.send, buffers.send_bytes, task.count * element));
      return need("receive", buffers.recv, buffers.recv_bytes, task.count * size * element);
    case Kind::kReduceScatter:
      STREAMEXECUTOR_RETURN_IF_ERROR(need("send", buffers.send, buffers.send_bytes, task.count * size * element));
      return need("receive", buffers.recv, buffers.recv_bytes, task.count * element);
    case Kind::kSend: return need("send", buffers.send, buffers.send_bytes, task.count * element);
    case Kind::kRecv: return need("receive", buffers.recv, buffers.recv_bytes, task.count * element);
  }
  return Status();
}

// The bytes of the send and receive sides this rank's transport touches.
inline std::uint64_t SendSide(const Task& task, int size) {
  const std::uint64_t bytes = task.count * ElementSize(task.type);
  switch (task.kind) {
    case Kind::kReduceScatter: return bytes * static_cast<std::uint64_t>(size);
    case Kind::kBroadcast:
    case Kind::kRecv: return 0;
    default: return bytes;
  }
}
inline std::uint64_t RecvSide(const Task& task, int size, bool root) {
  const std::uint64_t bytes = task.count * ElementSize(task.type);
  switch (task.kind) {
    case Kind::kAllGather: return bytes * static_cast<std::uint64_t>(size);
    case Kind::kReduce: return root ? bytes : 0;
    case Kind::kSend: return 0;
    default: return bytes;
  }
}

// This rank's turn without data: the transport fails the operation on every
// rank at once (loopback: in the round; MPI: through the ranks' check).
template <CollectiveBackend B>
void TakePartFailed(const Communicator<B>& comm, const Task& prototype) {
  if (!comm.ok()) return;  // no transport: nothing to tell the other ranks
  std::shared_ptr<Task> task;
  try {
    task = std::make_shared<Task>(prototype);
  } catch (const std::bad_alloc&) {
    return;  // the other ranks wait for their timeout
  }
  task->rank = comm.rank();
  task->send = nullptr;
  task->recv = nullptr;
  task->staging.reset();
  task->poisoned = true;
  task->sequence = comm.NextSequence();
  comm.transport().Start(std::move(task));
}

template <CollectiveBackend B>
Stream<B>& Enqueue(Stream<B>& stream, Communicator<B>& comm, Task prototype, Buffers buffers) {
  const std::string_view caller = KindName(prototype.kind);
  // A refused call still takes its turn, so that no other rank waits for it.
  const auto refuse = [&](Status s) -> Stream<B>& {
    TakePartFailed(comm, prototype);
    return stream.CheckCanned(std::move(s));
  };
  if (!stream.ReadyForCanned(caller)) {
    TakePartFailed(comm, prototype);
    return stream;
  }
  if (stream.capturing()) return refuse(stream.NotCapturable(caller));
  if (!comm.ok()) {
    return stream.CheckCanned(
        MakeError(ErrorCode::kInvalidArgument, "{}: the communicator is not usable: {}", caller, comm.status()));
  }
  StreamExecutor<B>* executor = stream.parent();
  if (comm.executor() != executor) {
    return refuse(MakeError(ErrorCode::kInvalidArgument,
                            "{}: the communicator's rank {} belongs to {}, the stream to {}", caller, comm.rank(),
                            comm.executor()->DeviceLabel(), executor->DeviceLabel()));
  }
  prototype.rank = comm.rank();
  const bool peer_used = prototype.kind == Kind::kBroadcast || prototype.kind == Kind::kReduce ||
                         prototype.kind == Kind::kSend || prototype.kind == Kind::kRecv;
  if (peer_used && (prototype.peer < 0 || prototype.peer >= comm.size())) {
    return refuse(MakeError(ErrorCode::kInvalidArgument, "{} on rank {} of {}: rank {} does not exist",
                            prototype.Describe(), comm.rank(), comm.size(), prototype.peer));
  }
  if ((prototype.kind == Kind::kSend || prototype.kind == Kind::kRecv) && prototype.peer == comm.rank()) {
    return refuse(MakeError(ErrorCode::kInvalidArgument, "{} on rank {}: a rank does not {} itself",
                            prototype.Describe(), comm.rank(),
                            prototype.kind == Kind::kSend ? "send to" : "receive from"));
  }
  if (Status s = CheckBuffers(comm, prototype, buffers); !s.ok()) return refuse(std::move(s));
  if (StreamTransport<B>* direct = comm.stream_transport(); direct != nullptr) {
    // The transport queues the operation on the stream itself; the callback
    // after it reports what the transport's watcher saw go wrong.
    prototype.sequence = comm.NextSequence();
    std::shared_ptr<Outcome> outcome;
    if (Status s = direct->Enqueue(stream.native_handle(), prototype, buffers.send, buffers.recv, &outcome); !s.ok()) {
      return stream.CheckCanned(std::move(s));
    }
    return stream.ThenDoHostCallback([outcome]() -> Status { return outcome->Get(); });
  }

  std::shared_ptr<Task> task;
  try {
    task = std::make_shared<Task>(std::move(prototype));
  } catch (const std::bad_alloc&) {
    return stream.CheckCanned(MakeError(ErrorCode::kResourceExhausted, "{}: out of host memory", caller));
  }
  const bool root = task->peer == comm.rank();
  const std::uint64_t send_side = SendSide(*task, comm.size());
  const std::uint64_t recv_side = RecvSide(*task, comm.size(), root);
  // An operation in place (the same memory sent and received) keeps
  // MPI_IN_PLACE's meaning: one staging region serves both.
  const bool in_place = buffers.send != nullptr && buffers.recv != nullptr && send_side != 0 && recv_side != 0 &&
                        buffers.send->opaque() == buffers.recv->opaque() &&
                        buffers.send->offset() == buffers.recv->offset();
  task->pieces = PieceCount(*task);
  if constexpr (DeviceMemoryIsHostMemoryBackend<B>) {
    task->send = send_side != 0 ? B::Address(*buffers.send) : nullptr;
    task->recv = recv_side != 0 ? B::Address(*buffers.recv) : nullptr;
    if (task->kind == Kind::kBroadcast) task->send = task->recv;
  } else {
    std::byte* staged = nullptr;
    const std::uint64_t bytes = in_place ? send_side : send_side + recv_side;
    StatusOr<std::shared_ptr<void>> block = StagingPool<B>::Take(comm.staging(), bytes == 0 ? 1 : bytes, &staged);
    if (!block.ok()) {
      TakePartFailed(comm, *task);
      return stream.CheckCanned(block.status());
    }
    task->staging = std::move(block).value();
    task->send = send_side != 0 ? staged : nullptr;
    task->recv = recv_side != 0 ? (in_place ? staged : staged + send_side) : nullptr;
    if (task->kind == Kind::kBroadcast) {
      // Every rank's buffer is both: the root sends from it, the others receive into it.
      task->recv = staged;
      task->send = staged;
    }
    if (task->pieces > 1) {
      try {
        task->piece_state = std::make_shared<PieceState>();
        task->piece_state->releases.resize(task->pieces);
      } catch (const std::bad_alloc&) {
        TakePartFailed(comm, *task);
        return stream.CheckCanned(MakeError(ErrorCode::kResourceExhausted, "{}: out of host memory", caller));
      }
    }
  }
  // What this rank copies into staging (from `copy_in`) and back out of it.
  const DeviceMemoryBase* copy_in = nullptr;
  if constexpr (!DeviceMemoryIsHostMemoryBackend<B>) {
    copy_in =
        task->kind == Kind::kBroadcast ? (root ? buffers.recv : nullptr) : (send_side != 0 ? buffers.send : nullptr);
  }
  const bool copy_out =
      !DeviceMemoryIsHostMemoryBackend<B> && recv_side != 0 && !(task->kind == Kind::kBroadcast && root);
  task->sequence = comm.NextSequence();
  // From here a failure hands the task to its transport at once, without
  // data: the other ranks fail rather than wait, and the transport's
  // completion lifts the waits already queued.
  const auto start_failed = [&] {
    task->poisoned = true;
    task->send = nullptr;
    task->recv = nullptr;
    comm.transport().Start(task);
  };
  // Piece by piece where the pieces are staged one by one (PieceState):
  // copy a piece in and record a marker, for each piece; then, for each,
  // wait for it and copy it back. Each marker's completion hands its piece
  // to the transport, so the copies of one piece overlap the exchange of
  // the others. Otherwise one marker and one wait for the whole operation.
  // The waits are queued before the markers can notify: a transport that
  // finishes at once then lifts a wait that exists.
  const std::uint32_t staged_pieces = task->piece_state != nullptr ? task->pieces : 1;
  const std::uint64_t element = ElementSize(task->type);
  const auto range = [&](std::uint32_t piece, std::uint64_t whole) -> std::pair<std::uint64_t, std::uint64_t> {
    if (staged_pieces == 1) return {0, whole};
    return {task->PieceOffset(piece) * element, task->PieceElements(piece) * element};
  };
  std::vector<Event<B>> markers;
  try {
    markers.reserve(staged_pieces);
  } catch (const std::bad_alloc&) {
    start_failed();
    return stream.CheckCanned(MakeError(ErrorCode::kResourceExhausted, "{}: out of host memory", caller));
  }
  const std::uint64_t in_bytes = task->kind == Kind::kBroadcast ? recv_side : send_side;
  for (std::uint32_t piece = 0; piece < staged_pieces; ++piece) {
    if (copy_in != nullptr) {
      const auto [offset, length] = range(piece, in_bytes);
      stream.ThenMemcpy(static_cast<std::byte*>(const_cast<void*>(task->send)) + offset,
                        DeviceMemory<std::byte>(*copy_in).GetSlice(offset, length), length);
    }
    Event<B>& marker = markers.emplace_back(executor);
    if (!marker.Init()) {
      start_failed();
      return stream.CheckCanned(marker.init_status());
    }
    stream.ThenRecordEvent(&marker);
    if (!stream.ok()) {
      start_failed();
      return stream;
    }
  }
  for (std::uint32_t piece = 0; piece < staged_pieces; ++piece) {
    op::ForeignRelease* release = staged_pieces == 1 ? &task->release : &task->piece_state->releases[piece];
    if (Status s = B::Submit(stream.native_handle(), op::WaitForeign{release}); !s.ok()) {
      start_failed();  // its completion lifts the waits queued so far
      return stream.CheckCanned(std::move(s));
    }
    if (copy_out) {
      const auto [offset, length] = range(piece, recv_side);
      DeviceMemoryBase out = DeviceMemory<std::byte>(*buffers.recv).GetSlice(offset, length);
      stream.ThenMemcpy(&out, static_cast<const std::byte*>(task->recv) + offset, length);
    }
  }
  for (std::uint32_t piece = 0; piece < staged_pieces; ++piece) {
    auto* starter = new (std::nothrow) Starter{comm.shared_transport(), task, staged_pieces == 1 ? kWhole : piece};
    Status s = starter != nullptr ? B::NotifyWhenComplete(executor->native_state(), markers[piece].native_handle(),
                                                          op::ForeignRelease{&Starter::Fire, starter})
                                  : MakeError(ErrorCode::kResourceExhausted, "{}: out of host memory", caller);
    if (!s.ok()) {
      delete starter;
      if (piece == 0) {
        start_failed();  // its completion lifts the waits
      } else {
        // Earlier pieces are the transport's already: the rest follow at
        // once, so that nothing waits for ever; this rank's stream fails.
        for (std::uint32_t rest = piece; rest < staged_pieces; ++rest) comm.transport().StartPiece(task, rest);
      }
      stream.CheckCanned(std::move(s));
      break;
    }
  }
  // Holds the task (and its staging buffer) until the copies above are done.
  return stream.ThenDoHostCallback([task]() -> Status { return task->status; });
}

// What every rank's call has in common, the rest left to the transport.
template <CollectiveElement T>
Task Describe(Kind kind, std::uint64_t count, ReduceOp op = ReduceOp::kSum, int peer = 0) {
  Task task;
  task.kind = kind;
  task.type = ElementTypeOf<T>();
  task.op = op;
  task.peer = peer;
  task.count = count;
  return task;
}

template <typename T>
std::uint64_t SizeOf(const DeviceMemory<T>* memory) {
  return memory != nullptr ? memory->size() : 0;
}

}  // namespace collectives_detail

// ---- The operations, as Stream members (core/canned_members.hpp) -----------

// recv[i] = send[i] op (the same element on every other rank), on every rank.
// `send` and `recv` may be the same memory.
template <CollectiveBackend B, CollectiveElement T>
Stream<B>& CollectiveAllReduce(Stream<B>& stream, Communicator<B>& comm, const DeviceMemory<T>& send,
                               DeviceMemory<T>* recv, ReduceOp op) {
  namespace cd = collectives_detail;
  return cd::Enqueue(stream, comm, cd::Describe<T>(cd::Kind::kAllReduce, send.ElementCount(), op),
                     {&send, send.size(), recv, cd::SizeOf(recv)});
}

// `buffer` of rank `root` into `buffer` of every rank.
template <CollectiveBackend B, CollectiveElement T>
Stream<B>& CollectiveBroadcast(Stream<B>& stream, Communicator<B>& comm, DeviceMemory<T>* buffer, int root) {
  namespace cd = collectives_detail;
  return cd::Enqueue(stream, comm,
                     cd::Describe<T>(cd::Kind::kBroadcast, cd::SizeOf(buffer) / sizeof(T), ReduceOp::kSum, root),
                     {buffer, cd::SizeOf(buffer), buffer, cd::SizeOf(buffer)});
}

// The reduction of every rank's `send` into `recv` of rank `root` (`recv`
// may be null on the other ranks).
template <CollectiveBackend B, CollectiveElement T>
Stream<B>& CollectiveReduce(Stream<B>& stream, Communicator<B>& comm, const DeviceMemory<T>& send,
                            DeviceMemory<T>* recv, ReduceOp op, int root) {
  namespace cd = collectives_detail;
  return cd::Enqueue(stream, comm, cd::Describe<T>(cd::Kind::kReduce, send.ElementCount(), op, root),
                     {&send, send.size(), recv, cd::SizeOf(recv)});
}

// Every rank's `send` (n elements) into `recv` of every rank, rank r's at
// [r * n, (r + 1) * n).
template <CollectiveBackend B, CollectiveElement T>
Stream<B>& CollectiveAllGather(Stream<B>& stream, Communicator<B>& comm, const DeviceMemory<T>& send,
                               DeviceMemory<T>* recv) {
  namespace cd = collectives_detail;
  return cd::Enqueue(stream, comm, cd::Describe<T>(cd::Kind::kAllGather, send.ElementCount()),
                     {&send, send.size(), recv, cd::SizeOf(recv)});
}

// The reduction of every rank's `send` (size x n elements), rank r keeping
// elements [r * n, (r + 1) * n) in `recv` (n elements).
template <CollectiveBackend B, CollectiveElement T>
Stream<B>& CollectiveReduceScatter(Stream<B>& stream, Communicator<B>& comm, const DeviceMemory<T>& send,
                                   DeviceMemory<T>* recv, ReduceOp op) {
  namespace cd = collectives_detail;
  return cd::Enqueue(stream, comm, cd::Describe<T>(cd::Kind::kReduceScatter, cd::SizeOf(recv) / sizeof(T), op),
                     {&send, send.size(), recv, cd::SizeOf(recv)});
}

// `send` to rank `peer`, which receives it with ThenRecv of as many elements.
template <CollectiveBackend B, CollectiveElement T>
Stream<B>& CollectiveSend(Stream<B>& stream, Communicator<B>& comm, const DeviceMemory<T>& send, int peer) {
  namespace cd = collectives_detail;
  return cd::Enqueue(stream, comm, cd::Describe<T>(cd::Kind::kSend, send.ElementCount(), ReduceOp::kSum, peer),
                     {&send, send.size(), nullptr, 0});
}

template <CollectiveBackend B, CollectiveElement T>
Stream<B>& CollectiveRecv(Stream<B>& stream, Communicator<B>& comm, DeviceMemory<T>* recv, int peer) {
  namespace cd = collectives_detail;
  return cd::Enqueue(stream, comm, cd::Describe<T>(cd::Kind::kRecv, cd::SizeOf(recv) / sizeof(T), ReduceOp::kSum, peer),
                     {nullptr, 0, recv, cd::SizeOf(recv)});
}

}  // namespace streamexecutor
