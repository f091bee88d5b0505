// A working test double of NCCL, built as libnccl.so.2 in a folder of its
// own: with that folder (and the counting driver double's, whose "device
// memory" is host memory) first on LD_LIBRARY_PATH, the NCCL collectives run
// on machines with no GPU. Its ranks are threads of one process: the
// communicators of one id meet in the double, and each operation is done on
// the host when every rank has called it, at the call (the counting double's
// streams run nothing later either). Where real NCCL would wait for ever (a
// rank that never calls, calls that differ) the double returns
// ncclInvalidUsage after 10 s or at once, so a wrong test fails instead of
// hanging. It records what it was asked (SeNcclDoubleState).
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../../library_double.hpp"
#include "nccl_double.hpp"

namespace {

constexpr auto kPatience = std::chrono::seconds(10);

enum class Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };

struct Call {
  Kind kind;
  const void* send;
  void* recv;
  std::size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int root;
};

struct Message {
  const void* data;
  std::size_t count;
  ncclDataType_t type;
  bool taken = false;
  bool mismatched = false;
};

struct Group {
  int size = 0;
  std::vector<bool> joined;
  std::vector<Call> calls;
  std::vector<bool> posted;
  int arrived = 0;
  std::uint64_t round = 0;
  ncclResult_t result = ncclSuccess;                                             // of the latest finished round
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<Message>>> channels;  // (from, to)
};

struct Record : library_double::CallLog<ncclResult_t, ncclSuccess> {
  SeNcclDoubleState state{};
  std::condition_variable changed;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, Group> groups;
  ncclResult_t async_error = ncclSuccess;
};

Record& TheRecord() {
  static Record record;
  return record;
}

}  // namespace

struct ncclComm {
  std::uint64_t id;
  int rank;
  int size;
};

namespace {

std::size_t SizeOf(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

template <typename T>
void Combine(T* acc, const T* in, std::size_t n, ncclRedOp_t op) {
  for (std::size_t i = 0; i < n; ++i) {
    switch (op) {
      case ncclSum: acc[i] = static_cast<T>(acc[i] + in[i]); break;
      case ncclProd: acc[i] = static_cast<T>(acc[i] * in[i]); break;
      case ncclMin: acc[i] = std::min(acc[i], in[i]); break;
      default: acc[i] = std::max(acc[i], in[i]); break;
    }
  }
}

void Combine(ncclDataType_t type, void* acc, const void* in, std::size_t n, ncclRedOp_t op) {
  switch (type) {
    case ncclInt8: return Combine(static_cast<std::int8_t*>(acc), static_cast<const std::int8_t*>(in), n, op);
    case ncclUint8: return Combine(static_cast<std::uint8_t*>(acc), static_cast<const std::uint8_t*>(in), n, op);
    case ncclInt32: return Combine(static_cast<std::int32_t*>(acc), static_cast<const std::int32_t*>(in), n, op);
    case ncclUint32: return Combine(static_cast<std::uint32_t*>(acc), static_cast<const std::uint32_t*>(in), n, op);
    case ncclInt64: return Combine(static_cast<std::int64_t*>(acc), static_cast<const std::int64_t*>(in), n, op);
    case ncclUint64: return Combine(static_cast<std::uint64_t*>(acc), static_cast<const std::uint64_t*>(in), n, op);
    case ncclFloat32: return Combine(static_cast<float*>(acc), static_cast<const float*>(in), n, op);
    default: return Combine(static_cast<double*>(acc), static_cast<const double*>(in), n, op);
  }
}

// The reduction over the ranks of `part` of each rank's send buffer, the
// elements [offset, offset + count).
std::vector<unsigned char> Reduce(const Group& g, std::size_t offset, std::size_t count) {
  const Call& first = g.calls[0];
  const std::size_t element = SizeOf(first.type);
  std::vector<unsigned char> acc(count * element);
  std::memcpy(acc.data(), static_cast<const unsigned char*>(first.send) + offset * element, acc.size());
  for (int r = 1; r < g.size; ++r) {
    Combine(first.type, acc.data(),
            static_cast<const unsigned char*>(g.calls[static_cast<std::size_t>(r)].send) + offset * element, count,
            first.op);
  }
  return acc;
}

// Every rank has called: check that the calls agree, then move the data.
ncclResult_t Finish(Group& g) {
  const Call& first = g.calls[0];
  for (const Call& c : g.calls) {
    if (c.kind != first.kind || c.count != first.count || c.type != first.type || c.op != first.op ||
        c.root != first.root) {
      return ncclInvalidUsage;  // real NCCL would hang
    }
  }
  const std::size_t element = SizeOf(first.type);
  const std::size_t bytes = first.count * element;
  switch (first.kind) {
    case Kind::kAllReduce: {
      const std::vector<unsigned char> sum = Reduce(g, 0, first.count);
      for (const Call& c : g.calls) std::memcpy(c.recv, sum.data(), bytes);
      break;
    }
    case Kind::kReduce: {
      const std::vector<unsigned char> sum = Reduce(g, 0, first.count);
      std::memcpy(g.calls[static_cast<std::size_t>(first.root)].recv, sum.data(), bytes);
      break;
    }
    case Kind::kBroadcast: {
      const Call& root = g.calls[static_cast<std::size_t>(first.root)];
      const std::vector<unsigned char> data(static_cast<const unsigned char*>(root.send),
                                            static_cast<const unsigned char*>(root.send) + bytes);
      for (const Call& c : g.calls) std::memcpy(c.recv, data.data(), bytes);
      break;
    }
    case Kind::kAllGather: {
      std::vector<unsigned char> all(bytes * static_cast<std::size_t>(g.size));
      for (int r = 0; r < g.size; ++r) {
        std::memcpy(all.data() + static_cast<std::size_t>(r) * bytes, g.calls[static_cast<std::size_t>(r)].send, bytes);
      }
      for (const Call& c : g.calls) std::memcpy(c.recv, all.data(), all.size());
      break;
    }
    case Kind::kReduceScatter: {
      std::vector<std::vector<unsigned char>> parts;
      for (int r = 0; r < g.size; ++r)
        parts.push_back(Reduce(g, static_cast<std::size_t>(r) * first.count, first.count));
      for (int r = 0; r < g.size; ++r)
        std::memcpy(g.calls[static_cast<std::size_t>(r)].recv, parts[static_cast<std::size_t>(r)].data(), bytes);
      break;
    }
  }
  return ncclSuccess;
}

void Note(Record& r, const char* name, cudaStream_t stream, std::size_t count, ncclDataType_t type, int op, int peer) {
  std::snprintf(r.state.last_call, sizeof(r.state.last_call), "%s", name);
  r.state.last_stream = static_cast<void*>(stream);
  r.state.last_count = count;
  r.state.last_type = static_cast<int>(type);
  r.state.last_op = op;
  r.state.last_peer = peer;
}

ncclResult_t Collective(const char* name, ncclComm_t comm, const Call& call, cudaStream_t stream) {
  Record& r = TheRecord();
  std::unique_lock<std::mutex> lock(r.mutex);
  if (const ncclResult_t armed = r.EnterLocked(name); armed != ncclSuccess) return armed;
  if (comm == nullptr || call.type < ncclInt8 || call.type > ncclFloat64) return ncclInvalidArgument;
  Note(r, name, stream, call.count, call.type,
       call.kind == Kind::kBroadcast || call.kind == Kind::kAllGather ? -1 : static_cast<int>(call.op),
       call.kind == Kind::kBroadcast || call.kind == Kind::kReduce ? call.root : -1);
  Group& g = r.groups[comm->id];
  const auto me = static_cast<std::size_t>(comm->rank);
  // The previous round must be over for this rank's call to join the next.
  if (!r.changed.wait_for(lock, kPatience, [&] { return !g.posted[me]; })) return ncclInvalidUsage;
  g.calls[me] = call;
  g.posted[me] = true;
  const std::uint64_t round = g.round;
  if (++g.arrived == g.size) {
    g.result = Finish(g);
    g.arrived = 0;
    std::fill(g.posted.begin(), g.posted.end(), false);
    ++g.round;
    r.changed.notify_all();
    return g.result;
  }
  if (!r.changed.wait_for(lock, kPatience, [&] { return g.round != round; })) {
    g.posted[me] = false;
    --g.arrived;
    return ncclInvalidUsage;  // a rank never called
  }
  return g.result;
}

}  // namespace

SE_LIBRARY_DOUBLE_EXPORTS(nccl, TheRecord())

extern "C" {

void se_nccl_double_state(SeNcclDoubleState* out) { TheRecord().Snapshot(TheRecord().state, out); }

void se_nccl_double_set_async_error(int result) {
  Record& r = TheRecord();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.async_error = static_cast<ncclResult_t>(result);
}

ncclResult_t ncclGetVersion(int* version) {
  if (const ncclResult_t s = TheRecord().Enter("ncclGetVersion"); s != ncclSuccess) return s;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  Record& r = TheRecord();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (const ncclResult_t s = r.EnterLocked("ncclGetUniqueId"); s != ncclSuccess) return s;
  std::memset(id, 0, sizeof(*id));
  const std::uint64_t n = r.next_id++;
  std::memcpy(id->internal, &n, sizeof(n));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  Record& r = TheRecord();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (const ncclResult_t s = r.EnterLocked("ncclCommInitRank"); s != ncclSuccess) return s;
  std::uint64_t n = 0;
  std::memcpy(&n, id.internal, sizeof(n));
  if (nranks < 1 || rank < 0 || rank >= nranks || n == 0)
    return ncclInvalidArgument;  // ids of other processes are fine
  Group& g = r.groups[n];
  if (g.size == 0) {
    g.size = nranks;
    g.joined.assign(static_cast<std::size_t>(nranks), false);
    g.calls.resize(static_cast<std::size_t>(nranks));
    g.posted.assign(static_cast<std::size_t>(nranks), false);
  }
  if (g.size != nranks || g.joined[static_cast<std::size_t>(rank)]) return ncclInvalidUsage;
  g.joined[static_cast<std::size_t>(rank)] = true;
  *comm = new ncclComm{n, rank, nranks};
  r.state.live_comms += 1;
  r.state.last_init_rank = rank;
  r.state.last_init_size = nranks;
  r.state.last_init_id = n;
  return ncclSuccess;
}

static ncclResult_t Release(const char* name, ncclComm_t comm) {
  Record& r = TheRecord();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (const ncclResult_t s = r.EnterLocked(name); s != ncclSuccess) return s;
  if (comm == nullptr) return ncclInvalidArgument;
  r.state.live_comms -= 1;
  if (std::strcmp(name, "ncclCommAbort") == 0) r.state.aborts += 1;
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return Release("ncclCommDestroy", comm); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return Release("ncclCommAbort", comm); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  Record& r = TheRecord();
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (const ncclResult_t s = r.EnterLocked("ncclCommGetAsyncError"); s != ncclSuccess) return s;
  if (comm == nullptr) return ncclInvalidArgument;
  *error = r.async_error;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    default: return "unhandled error";
  }
}

const char* ncclGetLastError(ncclComm_t) { return "the NCCL double's last error"; }

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return Collective("ncclAllReduce", comm, Call{Kind::kAllReduce, send, recv, count, type, op, 0}, stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return Collective("ncclBroadcast", comm, Call{Kind::kBroadcast, send, recv, count, type, ncclSum, root}, stream);
}

ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return Collective("ncclReduce", comm, Call{Kind::kReduce, send, recv, count, type, op, root}, stream);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  return Collective("ncclAllGather", comm, Call{Kind::kAllGather, send, recv, count, type, ncclSum, 0}, stream);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return Collective("ncclReduceScatter", comm, Call{Kind::kReduceScatter, send, recv, count, type, op, 0}, stream);
}

// A send waits until its receive has taken the message.
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  Record& r = TheRecord();
  std::unique_lock<std::mutex> lock(r.mutex);
  if (const ncclResult_t s = r.EnterLocked("ncclSend"); s != ncclSuccess) return s;
  if (comm == nullptr || peer < 0 || peer >= comm->size || peer == comm->rank) return ncclInvalidArgument;
  Note(r, "ncclSend", stream, count, type, -1, peer);
  auto message = std::make_shared<Message>(Message{send, count, type});
  r.groups[comm->id].channels[{comm->rank, peer}].push_back(message);
  r.changed.notify_all();
  if (!r.changed.wait_for(lock, kPatience, [&] { return message->taken; })) return ncclInvalidUsage;
  return message->mismatched ? ncclInvalidUsage : ncclSuccess;
}

ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t stream) {
  Record& r = TheRecord();
  std::unique_lock<std::mutex> lock(r.mutex);
  if (const ncclResult_t s = r.EnterLocked("ncclRecv"); s != ncclSuccess) return s;
  if (comm == nullptr || peer < 0 || peer >= comm->size || peer == comm->rank) return ncclInvalidArgument;
  Note(r, "ncclRecv", stream, count, type, -1, peer);
  auto& channel = r.groups[comm->id].channels[{peer, comm->rank}];
  if (!r.changed.wait_for(lock, kPatience, [&] { return !channel.empty(); })) return ncclInvalidUsage;
  std::shared_ptr<Message> message = channel.front();
  channel.pop_front();
  message->taken = true;
  message->mismatched = message->count != count || message->type != type;
  if (!message->mismatched) std::memcpy(recv, message->data, count * SizeOf(type));
  r.changed.notify_all();
  return message->mismatched ? ncclInvalidUsage : ncclSuccess;
}

}  // extern "C"
