// The allocation registry without a backend: registration makes views live,
// retiring makes every copy of them stale at once, record slots are reused
// and ids never are, slices and hand-built views are judged against their
// allocation, and all of it holds with several threads at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include <streamexecutor/core/allocation_registry.hpp>

namespace se = streamexecutor;
using se::detail::AllocationRegistry;
using se::detail::RecordKind;

namespace {

// Handles the registry stores; it never dereferences them, but they are real
// addresses, as a host allocation's would be.
alignas(64) std::byte g_storage[64 * 1024];
void* Handle(std::size_t index) { return g_storage + 64 * index; }

// The executor the records name; the registry only compares its address.
struct Owner {
  int unused = 0;
};

// One registry and the executor it answers for.
struct OneRegistry {
  Owner owner;
  AllocationRegistry registry{&owner};
};

se::Status Check(const AllocationRegistry& registry, const se::DeviceMemoryBase& view) {
  return registry.CheckLive(view, [](se::ErrorCode code, std::string_view why) {
    return se::Status(code, "the view is " + std::string(why));
  });
}

se::DeviceMemoryBase Registered(AllocationRegistry& registry, void* handle, std::uint64_t bytes,
                                RecordKind kind = RecordKind::kAllocated) {
  se::StatusOr<se::DeviceMemoryBase> view = registry.Register("test:0", handle, bytes, kind);
  REQUIRE(view.ok());
  return view.value();
}

}  // namespace

TEST_CASE_METHOD(OneRegistry, "a registered view is live and names its owner", "[allocation_registry]") {
  CHECK(registry.owner() == &owner);
  const se::DeviceMemoryBase view = Registered(registry, Handle(0), 256);
  CHECK(view.opaque() == Handle(0));
  CHECK(view.size() == 256);
  CHECK(view.offset() == 0);
  CHECK(view.allocation_id() != se::DeviceMemoryBase::kNoAllocationId);
  CHECK(view.allocation_record()->owner == &owner);
  CHECK(AllocationRegistry::IsLiveView(&owner, view));
  CHECK(registry.IsLiveView(view));
  CHECK(Check(registry, view).ok());
  // A copy of the view is the same view.
  const se::DeviceMemoryBase copy = view;
  CHECK(registry.IsLiveView(copy));
  CHECK(registry.RecordCount() == 1);
  CHECK(registry.FreeRecordCount() == 0);
}

TEST_CASE_METHOD(OneRegistry, "retiring a view makes every copy of it stale", "[allocation_registry]") {
  const se::DeviceMemoryBase view = Registered(registry, Handle(0), 128);
  const se::DeviceMemoryBase copy = view;
  REQUIRE(registry.Retire("Deallocate", "test:0", view, RecordKind::kAllocated).ok());
  CHECK_FALSE(registry.IsLiveView(view));
  CHECK_FALSE(registry.IsLiveView(copy));
  const se::Status stale = Check(registry, copy);
  CHECK(stale.code() == se::ErrorCode::kFailedPrecondition);
  CHECK_THAT(stale.message(), Catch::Contains("not live memory of this executor"));
  CHECK_THAT(stale.message(), Catch::Contains("freed, or memory of another executor"));
  // Freeing it again is an error that names the call and the device, not a second release.
  const se::Status twice = registry.Retire("Deallocate", "test:0", copy, RecordKind::kAllocated);
  CHECK(twice.code() == se::ErrorCode::kFailedPrecondition);
  CHECK_THAT(twice.message(), Catch::Contains("Deallocate on test:0:"));
  CHECK_THAT(twice.message(), Catch::Contains("was not allocated by this executor or was already freed"));
  CHECK(registry.FreeRecordCount() == 1);
}

TEST_CASE_METHOD(OneRegistry, "a stale view is refused after its record holds newer memory at the same address",
                 "[allocation_registry]") {
  const se::DeviceMemoryBase old_view = Registered(registry, Handle(0), 512);
  REQUIRE(registry.Retire("Deallocate", "test:0", old_view, RecordKind::kAllocated).ok());
  // The allocator handed back the same address; the registry reuses the record slot.
  const se::DeviceMemoryBase new_view = Registered(registry, Handle(0), 512);
  CHECK(new_view.allocation_record() == old_view.allocation_record());
  CHECK(new_view.allocation_id() != old_view.allocation_id());
  CHECK(registry.RecordCount() == 1);
  CHECK(registry.IsLiveView(new_view));
  CHECK_FALSE(registry.IsLiveView(old_view));
  CHECK(Check(registry, old_view).code() == se::ErrorCode::kFailedPrecondition);
  // The stale view cannot free the newer allocation.
  CHECK_FALSE(registry.Retire("Deallocate", "test:0", old_view, RecordKind::kAllocated).ok());
  CHECK(registry.IsLiveView(new_view));
  // A view built from the stale one (a typed copy, a slice) is stale too.
  CHECK_FALSE(registry.IsLiveView(se::DeviceMemory<float>(old_view).GetSlice(1, 2)));
}

TEST_CASE("two registries never give the same id, though each takes ids in batches", "[allocation_registry]") {
  Owner first_owner, second_owner;
  AllocationRegistry first(&first_owner), second(&second_owner);
  std::unordered_set<std::uint64_t> ids;
  // Interleaved past several batches, so each registry's next batch starts
  // after the other's.
  for (std::uint64_t i = 0; i < 3 * se::detail::kAllocationIdBatch; ++i) {
    AllocationRegistry& registry = i % 3 == 0 ? first : second;
    const se::DeviceMemoryBase view = Registered(registry, Handle(0), 64);
    CHECK(ids.insert(view.allocation_id()).second);
    REQUIRE(registry.Retire("Deallocate", "test:0", view, RecordKind::kAllocated).ok());
  }
  CHECK(ids.size() == 3 * se::detail::kAllocationIdBatch);
  CHECK(ids.count(se::DeviceMemoryBase::kNoAllocationId) == 0);
}

TEST_CASE_METHOD(OneRegistry, "ids are never reused across many allocate and free cycles", "[allocation_registry]") {
  constexpr int kCycles = 20000;
  std::unordered_set<std::uint64_t> ids;
  std::vector<se::DeviceMemoryBase> retired;
  for (int i = 0; i < kCycles; ++i) {
    // Two live at a time, at alternating addresses, so slots and addresses both repeat.
    const se::DeviceMemoryBase a = Registered(registry, Handle(0), 64);
    const se::DeviceMemoryBase b = Registered(registry, Handle(static_cast<std::size_t>(1 + i % 2)), 64);
    CHECK(ids.insert(a.allocation_id()).second);
    CHECK(ids.insert(b.allocation_id()).second);
    REQUIRE(registry.Retire("Deallocate", "test:0", a, RecordKind::kAllocated).ok());
    REQUIRE(registry.Retire("Deallocate", "test:0", b, RecordKind::kAllocated).ok());
    if (i % 1000 == 0) {
      retired.push_back(a);
      retired.push_back(b);
    }
  }
  CHECK(ids.size() == 2 * kCycles);
  CHECK(registry.RecordCount() == 2);  // slots are reused
  CHECK(registry.FreeRecordCount() == 2);
  const se::DeviceMemoryBase fresh = Registered(registry, Handle(0), 64);
  CHECK(ids.count(fresh.allocation_id()) == 0);
  for (const se::DeviceMemoryBase& view : retired) {
    CHECK_FALSE(registry.IsLiveView(view));
    CHECK_FALSE(Check(registry, view).ok());
  }
}

TEST_CASE_METHOD(OneRegistry, "slices of a live view are live, but only the whole view retires it",
                 "[allocation_registry]") {
  const se::DeviceMemory<float> whole(Registered(registry, Handle(0), 64 * sizeof(float)));
  const se::DeviceMemory<float> slice = whole.GetSlice(16, 8);
  CHECK(slice.offset() == 16 * sizeof(float));
  CHECK(registry.IsLiveView(slice));
  CHECK(Check(registry, slice).ok());
  CHECK(Check(registry, slice.GetSlice(2, 6)).ok());

  const se::Status partial = registry.Retire("Deallocate", "test:0", slice, RecordKind::kAllocated);
  CHECK(partial.code() == se::ErrorCode::kInvalidArgument);
  CHECK_THAT(partial.message(),
             Catch::Contains("this view is a slice (32 bytes at offset 64) of a 256-byte allocation; pass the whole "
                             "allocation"));
  CHECK(registry.IsLiveView(whole));  // a refused retirement leaves it live

  REQUIRE(registry.Retire("Deallocate", "test:0", whole, RecordKind::kAllocated).ok());
  CHECK_FALSE(registry.IsLiveView(slice));
}

TEST_CASE_METHOD(OneRegistry, "views that do not fit their allocation, and null views, say why",
                 "[allocation_registry]") {
  const se::DeviceMemoryBase whole = Registered(registry, Handle(0), 100);
  // Hand-built with the allocation's id and record, but past its end: marked
  // unvouched when made, so the launch path's compare refuses it.
  const se::DeviceMemoryBase past(whole.opaque(), 40, 80, whole.allocation_id(), whole.allocation_record());
  CHECK_FALSE(registry.IsLiveView(past));
  const se::Status too_long = Check(registry, past);
  CHECK(too_long.code() == se::ErrorCode::kOutOfRange);
  CHECK_THAT(too_long.message(),
             Catch::Contains("a view of 40 bytes at offset 80 that runs past its 100-byte allocation"));
  // An offset and size whose sum wraps is refused too, not wrapped into range.
  const se::DeviceMemoryBase wraps(whole.opaque(), ~std::uint64_t{0}, 8, whole.allocation_id(),
                                   whole.allocation_record());
  CHECK(Check(registry, wraps).code() == se::ErrorCode::kOutOfRange);

  const se::Status null = Check(registry, se::DeviceMemoryBase());
  CHECK(null.code() == se::ErrorCode::kInvalidArgument);
  CHECK_THAT(null.message(), Catch::Contains("a null DeviceMemory"));
  const se::Status out_of_range = Check(registry, se::DeviceMemory<char>(whole).GetSlice(90, 20));
  CHECK(out_of_range.code() == se::ErrorCode::kInvalidArgument);
  CHECK_THAT(out_of_range.message(), Catch::Contains("GetSlice of bytes [90, 110) of a 100-byte view"));

  // A view no registry made (a backend's own view) is live nowhere.
  const se::DeviceMemoryBase foreign(Handle(0), 100);
  CHECK_FALSE(registry.IsLiveView(foreign));
  CHECK(Check(registry, foreign).code() == se::ErrorCode::kFailedPrecondition);
  CHECK_FALSE(registry.Retire("Deallocate", "test:0", foreign, RecordKind::kAllocated).ok());
}

TEST_CASE("memory of another registry is not live here", "[allocation_registry]") {
  Owner first_owner;
  Owner second_owner;
  AllocationRegistry first(&first_owner);
  AllocationRegistry second(&second_owner);
  const se::DeviceMemoryBase mine = Registered(first, Handle(0), 64);
  const se::DeviceMemoryBase theirs = Registered(second, Handle(1), 64);
  CHECK(first.IsLiveView(mine));
  CHECK_FALSE(first.IsLiveView(theirs));
  CHECK_FALSE(AllocationRegistry::IsLiveView(&first_owner, theirs));
  CHECK(AllocationRegistry::IsLiveView(&second_owner, theirs));
  CHECK(Check(first, theirs).code() == se::ErrorCode::kFailedPrecondition);
  const se::Status refused = first.Retire("Deallocate", "test:0", theirs, RecordKind::kAllocated);
  CHECK(refused.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(second.IsLiveView(theirs));  // the other registry's memory is untouched
}

TEST_CASE_METHOD(OneRegistry, "each kind of record is let go only by its own call", "[allocation_registry]") {
  const se::DeviceMemoryBase allocated = Registered(registry, Handle(0), 64);
  const se::DeviceMemoryBase adopted = Registered(registry, Handle(1), 64, RecordKind::kAdopted);
  const se::DeviceMemoryBase host_view = Registered(registry, Handle(2), 64, RecordKind::kHostView);

  const se::Status free_adopted = registry.Retire("Deallocate", "test:0", adopted, RecordKind::kAllocated);
  CHECK(free_adopted.code() == se::ErrorCode::kFailedPrecondition);
  CHECK_THAT(free_adopted.message(), Catch::Contains("Deallocate on test:0: "));
  CHECK_THAT(free_adopted.message(), Catch::Contains("was adopted (AdoptDeviceMemory), not allocated"));
  const se::Status forget_allocated = registry.Retire("ForgetDeviceMemory", "test:0", allocated, RecordKind::kAdopted);
  CHECK_THAT(forget_allocated.message(), Catch::Contains("allocated by this executor, not adopted: Deallocate it"));
  const se::Status free_view = registry.Retire("Deallocate", "test:0", host_view, RecordKind::kAllocated);
  CHECK_THAT(free_view.message(), Catch::Contains("the device view of pinned host memory"));
  CHECK(registry.IsLiveView(allocated));
  CHECK(registry.IsLiveView(adopted));
  CHECK(registry.IsLiveView(host_view));

  // A forgotten adopted view, retired again, is named as adopted memory.
  REQUIRE(registry.Retire("ForgetDeviceMemory", "test:0", adopted, RecordKind::kAdopted).ok());
  CHECK_THAT(registry.Retire("ForgetDeviceMemory", "test:0", adopted, RecordKind::kAdopted).message(),
             Catch::Contains("was not adopted by this executor or was already forgotten"));
}

TEST_CASE_METHOD(OneRegistry, "adopting a handle that is already registered is refused", "[allocation_registry]") {
  const se::DeviceMemoryBase allocated = Registered(registry, Handle(0), 64);
  se::StatusOr<se::DeviceMemoryBase> again = registry.Register("test:0", Handle(0), 64, RecordKind::kAdopted);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == se::ErrorCode::kAlreadyExists);
  CHECK_THAT(again.status().message(), Catch::Contains("AdoptDeviceMemory on test:0: "));
  CHECK_THAT(again.status().message(), Catch::Contains("is already registered with this executor (it allocated it)"));

  const se::DeviceMemoryBase adopted = Registered(registry, Handle(1), 64, RecordKind::kAdopted);
  se::StatusOr<se::DeviceMemoryBase> view = registry.Register("test:0", Handle(1), 64, RecordKind::kHostView);
  REQUIRE_FALSE(view.ok());
  CHECK_THAT(view.status().message(), Catch::Contains("HostMemoryDeviceView on test:0: "));
  CHECK_THAT(view.status().message(), Catch::Contains("(an earlier AdoptDeviceMemory registered it)"));
  CHECK(registry.RecordCount() == 2);  // a refusal takes no record

  // Once forgotten, the handle may be adopted again, under a new id.
  REQUIRE(registry.Retire("ForgetDeviceMemory", "test:0", adopted, RecordKind::kAdopted).ok());
  const se::DeviceMemoryBase readopted = Registered(registry, Handle(1), 64, RecordKind::kAdopted);
  CHECK(readopted.allocation_id() != adopted.allocation_id());
  CHECK(registry.IsLiveView(allocated));
}

TEST_CASE_METHOD(OneRegistry, "retiring every adopted record leaves the rest live", "[allocation_registry]") {
  const se::DeviceMemoryBase allocated = Registered(registry, Handle(0), 64);
  const se::DeviceMemoryBase first = Registered(registry, Handle(1), 32, RecordKind::kAdopted);
  const se::DeviceMemoryBase second = Registered(registry, Handle(2), 48, RecordKind::kAdopted);
  const se::DeviceMemoryBase forgotten = Registered(registry, Handle(3), 16, RecordKind::kAdopted);
  REQUIRE(registry.Retire("ForgetDeviceMemory", "test:0", forgotten, RecordKind::kAdopted).ok());

  std::vector<se::DeviceMemoryBase> left = registry.RetireAll(se::detail::RecordKind::kAdopted);
  REQUIRE(left.size() == 2);
  std::sort(left.begin(), left.end(), [](const auto& a, const auto& b) { return a.opaque() < b.opaque(); });
  CHECK(left[0].opaque() == Handle(1));
  CHECK(left[0].size() == 32);
  CHECK(left[1].opaque() == Handle(2));
  CHECK(left[1].size() == 48);
  CHECK_FALSE(registry.IsLiveView(first));
  CHECK_FALSE(registry.IsLiveView(second));
  CHECK(registry.IsLiveView(allocated));
  CHECK(registry.RetireAll(se::detail::RecordKind::kAdopted).empty());
}

TEST_CASE_METHOD(OneRegistry, "counts follow allocated and pooled records, not adopted ones", "[allocation_registry]") {
  se::DeviceMemoryBase allocated = Registered(registry, Handle(0), 100);
  int pool = 0;  // what a MemoryPool registers as the pool of its memory
  se::DeviceMemoryBase pooled;
  {
    std::lock_guard<std::mutex> lock(registry.mutex());
    pooled = registry.RegisterLocked("test:0", Handle(1), 50, RecordKind::kPooled, &pool).value();
    registry.AddPoolReserveLocked(256);
    CHECK(registry.PoolOfLocked(pooled) == &pool);
  }
  Registered(registry, Handle(2), 1000, RecordKind::kAdopted);
  se::detail::AllocationCounts counts = registry.Counts();
  CHECK(counts.bytes_in_use == 150);
  CHECK(counts.allocations_in_use == 2);
  CHECK(counts.peak_bytes_in_use == 150);
  CHECK(counts.bytes_reserved_in_pools == 256);

  // Pooled memory goes back only through its pool's call, and says so.
  const se::Status wrong_call = registry.Retire("Deallocate", "test:0", pooled, RecordKind::kAllocated);
  CHECK(wrong_call.code() == se::ErrorCode::kFailedPrecondition);
  CHECK_THAT(wrong_call.message(), Catch::Contains("free it in stream order with ThenDeallocate"));

  REQUIRE(registry.Retire("Deallocate", "test:0", allocated, RecordKind::kAllocated).ok());
  {
    std::lock_guard<std::mutex> lock(registry.mutex());
    CHECK(registry.PoolOfLocked(allocated) == nullptr);  // not pooled, and retired
    std::vector<std::uint64_t> released;
    // A pool that goes with allocations still live; a second time finds none.
    for (int round = 0; round < 2; ++round) {
      registry.RetireAllOfLocked(&pool, [&](void* opaque, std::uint64_t bytes) {
        CHECK(opaque == Handle(1));
        released.push_back(bytes);
      });
    }
    CHECK(released == std::vector<std::uint64_t>{50});
    CHECK(registry.PoolOfLocked(pooled) == nullptr);
    registry.SubtractPoolReserveLocked(256);
  }
  CHECK_FALSE(registry.IsLiveView(pooled));
  counts = registry.Counts();
  CHECK(counts.bytes_in_use == 0);
  CHECK(counts.allocations_in_use == 0);
  CHECK(counts.peak_bytes_in_use == 150);
  CHECK(counts.bytes_reserved_in_pools == 0);
}

TEST_CASE("sizes in messages", "[allocation_registry]") {
  CHECK(se::detail::FormatBytes(512) == "512 B");
  CHECK(se::detail::FormatBytes(1536) == "1.5 KiB");
  CHECK(se::detail::FormatBytes(std::uint64_t{3435973837}) == "3.2 GiB");
  CHECK(se::detail::FormatBytes(~std::uint64_t{0}) == "16.0 EiB");
}

TEST_CASE_METHOD(OneRegistry, "threads registering, checking and retiring at once", "[allocation_registry][threads]") {
  constexpr std::size_t kThreads = 4;
  constexpr int kRounds = 3000;
  // Live for the whole run and checked by every thread, while one of them
  // is retired half way through by the main thread.
  const se::DeviceMemoryBase shared = Registered(registry, Handle(0), 256);
  const se::DeviceMemoryBase doomed = Registered(registry, Handle(1), 256);

  std::atomic<int> started{0};
  std::vector<std::vector<std::uint64_t>> ids(kThreads);
  std::vector<int> failures(kThreads, 0);
  std::vector<int> doomed_alive_after_death(kThreads, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      started.fetch_add(1);
      bool doomed_seen_dead = false;
      for (int round = 0; round < kRounds; ++round) {
        // Each thread its own addresses; adopted records also walk the list.
        const RecordKind kind = round % 5 == 0 ? RecordKind::kAdopted : RecordKind::kAllocated;
        void* handle = Handle(2 + t * 4 + static_cast<std::size_t>(round % 4));
        se::StatusOr<se::DeviceMemoryBase> made = registry.Register("test:0", handle, 64, kind);
        if (!made.ok()) {
          ++failures[t];
          continue;
        }
        const se::DeviceMemoryBase view = made.value();
        ids[t].push_back(view.allocation_id());
        const se::DeviceMemoryBase slice = se::DeviceMemory<std::uint32_t>(view).GetSlice(4, 4);
        if (!registry.IsLiveView(view) || !registry.IsLiveView(slice) || !Check(registry, slice).ok()) ++failures[t];
        if (!registry.IsLiveView(shared) || !Check(registry, shared).ok()) ++failures[t];
        // Once retired, the doomed view never comes back to life.
        const bool doomed_live = registry.IsLiveView(doomed);
        if (doomed_seen_dead && doomed_live) ++doomed_alive_after_death[t];
        doomed_seen_dead = doomed_seen_dead || !doomed_live;
        if (!registry.Retire(kind == RecordKind::kAdopted ? "ForgetDeviceMemory" : "Deallocate", "test:0", view, kind)
                 .ok()) {
          ++failures[t];
        }
        if (registry.IsLiveView(view) || registry.IsLiveView(slice) || Check(registry, view).ok()) ++failures[t];
      }
    });
  }
  while (started.load() < static_cast<int>(kThreads)) std::this_thread::yield();
  const se::Status retired = registry.Retire("Deallocate", "test:0", doomed, RecordKind::kAllocated);
  for (std::thread& thread : threads) thread.join();

  CHECK(retired.ok());
  CHECK_FALSE(registry.IsLiveView(doomed));
  CHECK(registry.IsLiveView(shared));
  std::unordered_set<std::uint64_t> all;
  for (std::size_t t = 0; t < kThreads; ++t) {
    CHECK(failures[t] == 0);
    CHECK(doomed_alive_after_death[t] == 0);
    CHECK(ids[t].size() == static_cast<std::size_t>(kRounds));
    for (std::uint64_t id : ids[t]) CHECK(all.insert(id).second);
  }
  CHECK(all.size() == kThreads * kRounds);
  // At most one record per thread at a time, plus the two registered first.
  CHECK(registry.RecordCount() <= kThreads + 2);
  CHECK(registry.FreeRecordCount() == registry.RecordCount() - 1);  // only `shared` is live
}
