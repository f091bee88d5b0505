// The host backend's command buffer: the ring commands a stream would get,
// packed once at record time (launch arguments already converted, memory
// views already turned into addresses) and copied into a stream's ring in
// batches at each submission. A submission allocates nothing for launches,
// copies and fills; an event record makes its completion token, as
// ThenRecordEvent does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "streamexecutor/core/status.hpp"
#include "streamexecutor/detail/stored_callback.hpp"
#include "streamexecutor/host/thread_pool.hpp"

namespace streamexecutor::host_detail {

class RecordedCommands {
 public:
  explicit RecordedCommands(DeviceLabel label) : label_(label) {}
  RecordedCommands(const RecordedCommands&) = delete;
  RecordedCommands& operator=(const RecordedCommands&) = delete;

  // The buffer holds one reference; every callback command a submission
  // queues holds another, so the callables outlive the CommandBuffer while
  // queued work still runs them.
  void Retain() { references_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  const DeviceLabel& label() const { return label_; }

  Status Add(const Command& command) { return Append(Entry{Entry::Kind::kCommand, command, nullptr, nullptr}); }
  // The index-th recorded operation, a launch, copy or fill, runs `command`
  // from the next submission on.
  Status Replace(std::size_t index, const Command& command) {
    if (index >= first_entry_.size() || entries_[first_entry_[index]].kind != Entry::Kind::kCommand) {
      return MakeError(ErrorCode::kInternal, "updating a command buffer on {}: operation {} is no launch, copy or fill",
                       label_, index);
    }
    entries_[first_entry_[index]].command = command;
    return Status();
  }
  // `child`'s entries as one operation; its callables stay the child's, which
  // this buffer holds on to.
  Status AddNested(RecordedCommands* child) {
    try {
      held_.reserve(held_.size() + 1);
      first_entry_.push_back(entries_.size());
      entries_.insert(entries_.end(), child->entries_.begin(), child->entries_.end());
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on {}: out of memory", label_);
    }
    child->Retain();
    held_.push_back(child);
    return Status();
  }
  // `child`'s operations as the body of an If (loop false) or a While, as
  // ring commands made now; the callables stay the child's.
  Status AddConditional(RecordedCommands* child, const std::int32_t* condition, bool loop) {
    Command command{};
    try {
      auto body = std::make_unique<std::vector<Command>>();
      body->reserve(child->entries_.size());
      for (const Entry& entry : child->entries_) {
        if (entry.kind == Entry::Kind::kRecordEvent || entry.kind == Entry::Kind::kWaitEvent) {
          return MakeError(ErrorCode::kInternal, "a conditional body on {} holds an event", label_);
        }
        Command& slot = body->emplace_back(entry.command);
        if (entry.kind == Entry::Kind::kCallback) {
          ::new (static_cast<void*>(slot.payload)) CallbackRef{child, entry.callback};
          slot.callback.invoke = [](void* p) { std::launder(static_cast<CallbackRef*>(p))->callback->Invoke(); };
          slot.callback.destroy = [](void*) {};  // the body's commands run many times
          slot.kind = Command::Kind::kCallback;
        }
      }
      command.kind = Command::Kind::kConditional;
      command.conditional = ConditionalCommand{condition, body->data(), body->size(), loop, nullptr, nullptr};
      held_.reserve(held_.size() + 1);
      bodies_.push_back(std::move(body));
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on {}: out of memory", label_);
    }
    child->Retain();
    held_.push_back(child);
    return Append(Entry{Entry::Kind::kConditional, command, nullptr, nullptr});
  }
  // A copy with the same operations; the callables stay this buffer's.
  RecordedCommands* Clone() {
    auto* clone = new (std::nothrow) RecordedCommands(label_);
    if (clone == nullptr) return nullptr;
    try {
      clone->entries_ = entries_;
      clone->first_entry_ = first_entry_;
      clone->held_.reserve(1);
    } catch (...) {
      clone->Release();
      return nullptr;
    }
    Retain();
    clone->held_.push_back(this);
    return clone;
  }
  Status AddEvent(bool record, HostEvent** event) {
    return Append(Entry{record ? Entry::Kind::kRecordEvent : Entry::Kind::kWaitEvent, Command{}, event, nullptr});
  }
  template <typename Callback>
  Status AddCallback(Callback&& callback) {
    try {
      callbacks_.reserve(callbacks_.size() + 1);  // so that the push below cannot throw
      callbacks_.push_back(streamexecutor::detail::StoredCallback::Make(std::forward<Callback>(callback)));
    } catch (const std::exception& e) {
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on {}: copying the callback threw: {}", label_,
                       e.what());
    } catch (...) {
      return MakeError(ErrorCode::kInternal, "ThenDoHostCallback on {}: copying the callback threw", label_);
    }
    return Append(Entry{Entry::Kind::kCallback, Command{}, nullptr, callbacks_.back().get()});
  }

  // Copies the commands into `stream`'s ring, as many per batch as there is
  // room for. A failure (out of memory for an event token, or a callback of
  // the stream submitting into its own full ring) leaves the commands queued
  // so far in place; the Stream fails, so what follows is not enqueued.
  Status SubmitTo(HostStream* stream) {
    std::size_t next = 0;
    while (next < entries_.size()) {
      const std::uint64_t room = stream->ReserveBatch(entries_.size() - next);
      if (room == 0) return stream->Refused("ThenSubmit");
      std::uint64_t used = 0;
      Status failure;
      for (; used < room && next < entries_.size() && failure.ok(); ++next) {
        if (Fill(entries_[next], stream->BatchSlot(used), stream->pool(), failure)) ++used;
      }
      stream->PublishBatch(used);
      if (!failure.ok()) return failure;
    }
    return Status();
  }

 private:
  using StoredCallback = streamexecutor::detail::StoredCallback;
  // What a callback command carries in its payload.
  struct CallbackRef {
    RecordedCommands* owner;
    StoredCallback* callback;
  };
  static_assert(sizeof(CallbackRef) <= Command::kPayloadBytes);

  struct Entry {
    enum class Kind : std::uint8_t { kCommand, kRecordEvent, kWaitEvent, kCallback, kConditional };
    Kind kind;
    Command command;           // kCommand: copied as is
    HostEvent** event;         // the Event's handle: read at each submission
    StoredCallback* callback;  // owned by callbacks_
  };

  Status Append(const Entry& entry) {  // by reference: Entry is 64-byte aligned
    try {
      first_entry_.reserve(first_entry_.size() + 1);
      entries_.push_back(entry);
      first_entry_.push_back(entries_.size() - 1);
    } catch (...) {
      return MakeError(ErrorCode::kResourceExhausted, "recording into a command buffer on {}: out of memory", label_);
    }
    return Status();
  }

  // Writes `entry` into `slot`; false when it needs no slot (a wait on a
  // recording that already completed) or on failure.
  bool Fill(const Entry& entry, Command& slot, Pool* pool, Status& failure) {
    switch (entry.kind) {
      case Entry::Kind::kCommand: slot = entry.command; return true;
      case Entry::Kind::kConditional:
        Retain();
        slot = entry.command;
        slot.conditional.owner = this;
        slot.conditional.release = [](void* owner) { static_cast<RecordedCommands*>(owner)->Release(); };
        return true;
      case Entry::Kind::kCallback: {
        Retain();
        ::new (static_cast<void*>(slot.payload)) CallbackRef{this, entry.callback};
        slot.callback.invoke = [](void* p) { std::launder(static_cast<CallbackRef*>(p))->callback->Invoke(); };
        slot.callback.destroy = [](void* p) { std::launder(static_cast<CallbackRef*>(p))->owner->Release(); };
        slot.kind = Command::Kind::kCallback;
        return true;
      }
      case Entry::Kind::kRecordEvent: {
        auto* token = new (std::nothrow) CompletionToken(pool);
        if (token == nullptr) {
          failure =
              MakeError(ErrorCode::kResourceExhausted, "ThenSubmit on {}: out of memory for an event record", label_);
          return false;
        }
        slot.kind = Command::Kind::kRecordEvent;
        slot.event = EventCommand{token};
        (*entry.event)->SetLatest(token);
        return true;
      }
      case Entry::Kind::kWaitEvent: {
        CompletionToken* token = (*entry.event)->AcquireLatest();
        if (token == nullptr) return false;  // never recorded: nothing to wait for
        if (token->done()) {
          token->Release();
          return false;
        }
        slot.kind = Command::Kind::kWaitEvent;
        slot.event = EventCommand{token};
        return true;
      }
    }
    return false;
  }

  ~RecordedCommands() {  // through Release only
    for (RecordedCommands* held : held_) held->Release();
  }

  std::atomic<int> references_{1};
  DeviceLabel label_;
  std::vector<Entry> entries_;
  std::vector<std::size_t> first_entry_;  // per operation: its first entry (a nested buffer has several)
  std::vector<streamexecutor::detail::StoredCallbackPtr> callbacks_;
  std::vector<RecordedCommands*> held_;                        // nested or cloned buffers whose callables entries_ run
  std::vector<std::unique_ptr<std::vector<Command>>> bodies_;  // of the conditionals in entries_
};

static_assert(std::is_trivially_copyable_v<Command>, "recorded commands are copied into the ring as they are");

}  // namespace streamexecutor::host_detail
