#include <catch2/catch.hpp>

#include <cstdint>

#include <streamexecutor/core/device_memory.hpp>
#include <streamexecutor/core/dims.hpp>

namespace se = streamexecutor;

TEST_CASE("DeviceMemory counts elements and slices within bounds", "[device_memory]") {
  alignas(8) static char storage[80];
  se::DeviceMemory<double> memory(se::DeviceMemoryBase(storage, 80));
  CHECK(memory.ElementCount() == 10);
  CHECK(memory.size() == 80);
  CHECK_FALSE(memory.IsNull());

  se::DeviceMemory<double> slice = memory.GetSlice(2, 5);
  CHECK(slice.opaque() == memory.opaque());
  CHECK(slice.offset() == 16);
  CHECK(slice.ElementCount() == 5);
  se::DeviceMemory<double> nested = slice.GetSlice(1, 4);
  CHECK(nested.offset() == 24);
  CHECK(nested.ElementCount() == 4);
  CHECK(slice.GetSlice(1, 5).IsNull());
  CHECK(memory.GetSlice(10, 0).ElementCount() == 0);
}

TEST_CASE("a view's start address is its handle plus its offset", "[device_memory]") {
  // The word a CUDA launch hands the driver as the parameter (cuda/kernel_params.hpp).
  alignas(8) static char storage[80];
  const auto base = reinterpret_cast<std::uintptr_t>(storage);
  se::DeviceMemory<double> memory(se::DeviceMemoryBase(storage, 80));
  CHECK(memory.start_address() == base);
  CHECK(memory.GetSlice(2, 5).start_address() == base + 16);
  CHECK(memory.GetSlice(2, 5).GetSlice(1, 4).start_address() == base + 24);
  CHECK(se::DeviceMemoryBase(storage, 8, 40).start_address() == base + 40);
  se::DeviceMemory<double> copy = memory.GetSlice(3, 1);
  CHECK(copy.start_address() == base + 24);
  CHECK(se::DeviceMemory<double>().start_address() == 0);
  // Out of range: null, with no address; the word holds the size of the view it was cut from.
  CHECK(memory.GetSlice(9, 2).IsOutOfRangeSlice());
  CHECK(memory.GetSlice(9, 2).sliced_view_size() == 80);
}

TEST_CASE("untyped memory is truncated to whole elements", "[device_memory]") {
  static char storage[10];
  se::DeviceMemory<int> memory(se::DeviceMemoryBase(storage, 10));
  CHECK(memory.ElementCount() == 2);
  CHECK(memory.size() == 8);
}

TEST_CASE("null memory and shared memory requests", "[device_memory]") {
  se::DeviceMemory<float> null;
  CHECK(null.IsNull());
  CHECK(null.ElementCount() == 0);
  CHECK(null.GetSlice(0, 0).IsNull());
  se::SharedDeviceMemory<float> shared(256);
  CHECK(shared.ElementCount() == 256);
  CHECK(shared.size() == 1024);
}

TEST_CASE("a view without an allocation has the record that no executor owns", "[device_memory]") {
  // Never a null record: the launch path's liveness compare reads the owner
  // without a null test, and this record's null owner matches no executor.
  alignas(8) static char storage[16];
  constexpr se::DeviceMemoryBase kDefault;
  const se::DeviceMemoryBase hand_built(storage, 16);
  const se::DeviceMemory<float> null;
  for (const se::DeviceMemoryBase* view : {&kDefault, &hand_built, static_cast<const se::DeviceMemoryBase*>(&null)}) {
    REQUIRE(view->allocation_record() == &se::detail::kNoAllocationRecord);
    CHECK(view->allocation_record()->owner == nullptr);
    CHECK(view->allocation_record()->id.load() == 0);
    // Not marked unvouched: there was no record to disagree with.
    CHECK(view->allocation_id() == se::DeviceMemoryBase::kNoAllocationId);
  }
  const se::DeviceMemory<float> as_floats(hand_built);
  CHECK(as_floats.GetSlice(1, 2).allocation_record() == &se::detail::kNoAllocationRecord);
  CHECK(as_floats.GetSlice(1, 2).allocation_id() == se::DeviceMemoryBase::kNoAllocationId);
  CHECK(as_floats.GetSlice(3, 2).allocation_record() == &se::detail::kNoAllocationRecord);  // out of range
}

TEST_CASE("dimensions default to one and count their product", "[dims]") {
  CHECK(se::ThreadDim().Count() == 1);
  CHECK(se::BlockDim(4, 3, 2).Count() == 24);
  CHECK(se::ThreadDim(7) == se::Dim3{7, 1, 1});
}
