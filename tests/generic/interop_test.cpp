// Raw handle interop on every backend: the native accessors, memory made by
// the driver outside the executor adopted as DeviceMemory (copies, slices,
// launches, and the refusals around Deallocate and ForgetDeviceMemory), and a
// stream adopted from another stream's native queue where the backend has
// stream adoption. tests/opencl/interop_test.cpp and tests/cuda/interop_test.cpp
// check the native objects themselves.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "generic/test_backend.hpp"
#include "generic/test_kernels.hpp"

namespace {

using Native = se::Interop<TestBackend>;

// Memory the backend's driver allocated that the executor has no record of,
// as another library would hand it over. Freed by its destructor, which runs
// after the test forgot it.
struct ExternalMemory {
  explicit ExternalMemory(std::uint64_t bytes)
      : raw(TestBackend::Allocate(TestExecutor()->native_state(), bytes).value()) {}
  ~ExternalMemory() { REQUIRE(TestBackend::Deallocate(TestExecutor()->native_state(), raw).ok()); }
  ExternalMemory(const ExternalMemory&) = delete;
  ExternalMemory& operator=(const ExternalMemory&) = delete;
  Native::NativeMemory native() const { return Native::Memory(raw); }
  se::DeviceMemoryBase raw;
};

// Templates, so that the branch a backend lacks is never instantiated.
template <typename B>
void CheckNativeKernel(se::StreamExecutor<B>* executor) {
  if constexpr (se::NativeKernelBackend<B>) {
    test_kernels::SaxpyKernel kernel(executor);
    se::StatusOr<typename se::Interop<B>::NativeKernel> unloaded = se::NativeKernel(*executor, kernel);
    CHECK(unloaded.status().code() == se::ErrorCode::kFailedPrecondition);
    REQUIRE(executor->GetKernel(test_kernels::SaxpySpec(), &kernel).ok());
    se::StatusOr<typename se::Interop<B>::NativeKernel> loaded = se::NativeKernel(*executor, kernel);
    REQUIRE(loaded.ok());
    CHECK(loaded.value() != nullptr);
  }
}

template <typename B>
void CheckAdoptedStream(se::StreamExecutor<B>* executor) {
  if constexpr (!se::StreamAdoptionBackend<B>) {
    SUCCEED("this backend has no native queue to adopt (host)");
  } else {
    se::Stream owner(executor);
    REQUIRE(owner.Init().ok());
    auto device = executor->template AllocateOwnedArray<int>(32);
    std::vector<int> in(32, 5);
    std::vector<int> out(32, 0);
    {
      se::Stream adopted(executor);
      REQUIRE(adopted.InitAdopted(se::NativeQueue(owner)).ok());
      CHECK(se::NativeQueue(adopted) == se::NativeQueue(owner));
      REQUIRE(adopted.template ThenMemcpyH2D<int>(in, device.ptr()).BlockHostUntilDone().ok());
      // A second initialization fails the stream, as Init does.
      CHECK(adopted.InitAdopted(se::NativeQueue(owner)).status().code() == se::ErrorCode::kFailedPrecondition);
    }
    // The adopted wrapper is gone; the queue is still the owner's and works.
    REQUIRE(owner.template ThenMemcpyD2H<int>(device.cref(), out).BlockHostUntilDone().ok());
    CHECK(out == in);

    se::Stream null_queue(executor);
    se::Status refused = null_queue.InitAdopted(typename se::Interop<B>::NativeQueue{}).status();
    CHECK(refused.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(refused, "null"));
    CHECK(null_queue.ThenMemZero(device.ptr(), 4).status().code() == se::ErrorCode::kInvalidArgument);
  }
}

}  // namespace

TEST_CASE("native accessors return the backend's objects of live wrappers", "[interop]") {
  STATIC_REQUIRE(se::NativeExecutorBackend<TestBackend>);
  STATIC_REQUIRE(se::NativeStreamBackend<TestBackend>);
  auto* executor = TestExecutor();
  CHECK(se::NativeContext(*executor) != nullptr);

  se::Stream stream(executor);
  CHECK(se::NativeQueue(stream) == nullptr);  // not initialized yet
  REQUIRE(stream.Init().ok());
  CHECK(se::NativeQueue(stream) != nullptr);

  auto owned = executor->AllocateOwnedArray<int>(64);
  se::StatusOr<Native::NativeMemory> memory = se::NativeMemory(*executor, owned.cref());
  REQUIRE(memory.ok());
  CHECK(memory.value() == Native::Memory(owned.cref()));
  se::DeviceMemory<int> stale = owned.cref();
  REQUIRE(owned.Reset().ok());
  se::StatusOr<Native::NativeMemory> freed = se::NativeMemory(*executor, stale);
  CHECK(freed.status().code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(freed.status(), "NativeMemory on"));

  CheckNativeKernel(executor);
}

TEST_CASE("adopted memory takes copies, fills and slices like an allocation", "[interop][adopt]") {
  STATIC_REQUIRE(se::MemoryAdoptionBackend<TestBackend>);
  auto* executor = TestExecutor();
  ExternalMemory external(256 * sizeof(int));
  se::StatusOr<se::DeviceMemory<int>> adopted = executor->AdoptDeviceMemory<int>(external.native(), 256);
  REQUIRE(adopted.ok());
  se::DeviceMemory<int> memory = adopted.value();
  CHECK(memory.ElementCount() == 256);
  CHECK(executor->IsLiveView(memory));
  CHECK(se::NativeMemory(*executor, memory).value() == external.native());

  std::vector<int> in(256);
  std::iota(in.begin(), in.end(), 0);
  std::vector<int> out(256, -1);
  auto owned = executor->AllocateOwnedArray<int>(256);
  se::DeviceMemory<int> tail = memory.GetSlice(128, 128);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<int>(in, &memory)
              .ThenMemset32(&tail, 7, 16 * sizeof(int))
              .ThenMemcpyD2D(owned.ptr(), memory)
              .ThenMemcpyD2H<int>(owned.cref(), out)
              .BlockHostUntilDone()
              .ok());
  CHECK(out[127] == 127);
  CHECK(out[128] == 7);
  CHECK(out[143] == 7);
  CHECK(out[144] == 144);

  // Deallocate refuses it and leaves it registered and intact.
  se::DeviceMemoryBase as_base = memory;
  se::Status freed = executor->Deallocate(&as_base);
  CHECK(freed.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(freed, "this executor never frees it; ForgetDeviceMemory unregisters it"));
  CHECK(executor->IsLiveView(memory));
  se::Status whole_only = executor->ForgetDeviceMemory(&tail);
  CHECK(whole_only.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(whole_only, "is a slice"));

  se::DeviceMemory<int> copy_of_view = memory;
  REQUIRE(executor->ForgetDeviceMemory(&memory).ok());
  CHECK(memory.IsNull());
  se::Status after = executor->SynchronousMemcpyD2H<int>(copy_of_view, out);
  CHECK(after.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(after, "not live memory of this executor"));
  se::Status twice = executor->ForgetDeviceMemory(&copy_of_view);
  CHECK(twice.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(twice, "was not adopted by this executor or was already forgotten"));
}

TEST_CASE("a kernel launched on adopted memory computes on it", "[interop][adopt][kernel-results]") {
  auto* executor = TestExecutor();
  ExternalMemory x_memory(64 * sizeof(float));
  ExternalMemory y_memory(64 * sizeof(float));
  se::DeviceMemory<float> x = executor->AdoptDeviceMemory<float>(x_memory.native(), 64).value();
  se::DeviceMemory<float> y = executor->AdoptDeviceMemory<float>(y_memory.native(), 64).value();
  test_kernels::SaxpyKernel kernel(executor);
  REQUIRE(executor->GetKernel(test_kernels::SaxpySpec(), &kernel).ok());
  std::vector<float> ones(64, 1.0f);
  std::vector<float> out(64);
  se::Stream stream(executor);
  REQUIRE(stream.Init()
              .ThenMemcpyH2D<float>(ones, &x)
              .ThenMemcpyH2D<float>(ones, &y)
              .ThenLaunch(se::ThreadDim(16), se::BlockDim(4), kernel, 2.0f, &x, &y, std::uint32_t{64})
              .ThenMemcpyD2H<float>(y, out)
              .BlockHostUntilDone()
              .ok());
  CHECK(out == std::vector<float>(64, 3.0f));
  REQUIRE(executor->ForgetDeviceMemory(&x).ok());
  REQUIRE(executor->ForgetDeviceMemory(&y).ok());
}

TEST_CASE("adoption refuses zero sizes, null handles and memory already registered", "[interop][adopt][errors]") {
  auto* executor = TestExecutor();
  ExternalMemory external(64);
  se::StatusOr<se::DeviceMemory<char>> none = executor->AdoptDeviceMemory<char>(external.native(), 0);
  CHECK(none.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(none.status(), "zero elements"));
  se::StatusOr<se::DeviceMemory<char>> null = executor->AdoptDeviceMemory<char>(Native::NativeMemory{}, 64);
  CHECK(null.status().code() == se::ErrorCode::kInvalidArgument);

  se::DeviceMemory<char> first = executor->AdoptDeviceMemory<char>(external.native(), 64).value();
  se::StatusOr<se::DeviceMemory<char>> again = executor->AdoptDeviceMemory<char>(external.native(), 32);
  CHECK(again.status().code() == se::ErrorCode::kAlreadyExists);
  CHECK(Mentions(again.status(), "an earlier AdoptDeviceMemory registered"));
  REQUIRE(executor->ForgetDeviceMemory(&first).ok());

  auto owned = executor->AllocateOwnedArray<char>(64);
  se::StatusOr<se::DeviceMemory<char>> ours =
      executor->AdoptDeviceMemory<char>(se::NativeMemory(*executor, owned.cref()).value(), 64);
  CHECK(ours.status().code() == se::ErrorCode::kAlreadyExists);
  CHECK(Mentions(ours.status(), "it allocated"));
  se::DeviceMemoryBase owned_view = owned.cref();
  se::Status forget_owned = executor->ForgetDeviceMemory(&owned_view);
  CHECK(forget_owned.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(forget_owned, "not adopted: Deallocate it"));
  CHECK(executor->ForgetDeviceMemory(nullptr).code() == se::ErrorCode::kInvalidArgument);
}

TEST_CASE("a stream adopted from another stream's queue runs work and leaves the queue alive", "[interop][adopt]") {
  CheckAdoptedStream(TestExecutor());
}
