// CUDA interop against the counting driver double (counting_double/): the
// native handles, a CUstream and CUdeviceptrs the test makes through the
// driver as another library would, adopted and used without being destroyed
// or freed by us; the refusals of other contexts, null and default-stream
// handles and oversized ranges; and pinned host memory through the executor,
// counted at the driver calls it must make (and must not make, when the
// executor's records refuse a call first).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Calls;
using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

constexpr const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry fill(.param .u64 fill_param_0, .param .u32 fill_param_1)
{ ret; }
)";

// The double's hooks for objects of the other library's context.
CUstream ForeignStream() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library != nullptr);
  auto make = reinterpret_cast<CUstream (*)()>(dlsym(library, "se_counting_double_foreign_stream"));
  dlclose(library);
  REQUIRE(make != nullptr);
  return make();
}
CUdeviceptr ForeignAllocation(std::size_t bytes) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(library != nullptr);
  auto make = reinterpret_cast<CUdeviceptr (*)(std::size_t)>(dlsym(library, "se_counting_double_foreign_allocation"));
  dlclose(library);
  REQUIRE(make != nullptr);
  return make(bytes);
}

// The driver table the backend loaded, used here as another library would
// use the driver, with the executor's primary context current.
const se::cuda_detail::DriverApi& Driver(se::StreamExecutor<se::cuda>* executor) {
  const se::cuda_detail::DriverApi& api = *executor->native_state().api;
  REQUIRE(api.cuCtxSetCurrent(se::NativeContext(*executor)) == CUDA_SUCCESS);
  return api;
}

}  // namespace

TEST_CASE("the double is loaded", "[cuda][interop]") {
  REQUIRE(Double().loaded());
  auto* executor = Executor();
  CHECK(se::NativeContext(*executor) == executor->native_state().context);
  CHECK(se::NativeDevice(*executor) == 0);
}

TEST_CASE("an adopted CUstream is synchronized but never destroyed by us", "[cuda][interop]") {
  auto* executor = Executor();
  const auto& api = Driver(executor);
  CUstream native = nullptr;
  REQUIRE(api.cuStreamCreate(&native, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  const long destroyed = Calls("cuStreamDestroy");
  const long synchronized = Calls("cuStreamSynchronize");
  std::vector<int> in(16, 3), out(16, 0);
  {
    se::Stream stream(executor);
    REQUIRE(stream.InitAdopted(native).ok());
    CHECK(se::NativeQueue(stream) == native);
    auto device = executor->AllocateOwnedArray<int>(16);
    REQUIRE(stream.ThenMemcpyH2D<int>(in, device.ptr()).ThenMemcpyD2H<int>(device.cref(), out).ok());
  }
  CHECK(out == in);
  CHECK(Calls("cuStreamSynchronize") > synchronized);  // waited for before the wrapper went
  CHECK(Calls("cuStreamDestroy") == destroyed);
  CHECK(api.cuStreamDestroy(native) == CUDA_SUCCESS);  // the test's to destroy

  // Our own streams are still destroyed by us.
  {
    se::Stream own(executor);
    REQUIRE(own.Init().ok());
  }
  CHECK(Calls("cuStreamDestroy") == destroyed + 2);
}

TEST_CASE("stream adoption refuses null, default-stream and foreign handles", "[cuda][interop][errors]") {
  auto* executor = Executor();
  for (CUstream special : {CUstream{nullptr}, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD}) {
    se::Stream stream(executor);
    se::Status refused = stream.InitAdopted(special).status();
    CHECK(refused.code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(refused, "adopt a stream made by cuStreamCreate"));
  }
  CUstream foreign = ForeignStream();
  const long get_ctx = Calls("cuStreamGetCtx");
  se::Stream stream(executor);
  se::Status refused = stream.InitAdopted(foreign).status();
  CHECK(Calls("cuStreamGetCtx") == get_ctx + 1);
  CHECK(refused.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(refused, "not to this executor's primary context"));

  Double().fail_next("cuStreamGetCtx", CUDA_ERROR_INVALID_HANDLE);
  se::Stream failing(executor);
  se::Status failed = failing.InitAdopted(foreign).status();
  CHECK(Mentions(failed, "cuStreamGetCtx failed with CUDA_ERROR_INVALID_HANDLE"));
  CHECK(Mentions(failed, "adopting a CUstream on cuda:0"));
  CHECK(Driver(executor).cuStreamDestroy(foreign) == CUDA_SUCCESS);
}

TEST_CASE("an adopted CUdeviceptr is copied to, launched on and never freed by us", "[cuda][interop]") {
  auto* executor = Executor();
  const auto& api = Driver(executor);
  CUdeviceptr native = 0;
  REQUIRE(api.cuMemAlloc(&native, 64 * sizeof(int)) == CUDA_SUCCESS);
  const long frees = Calls("cuMemFree");
  // From an interior pointer on: 32 of the allocation's 64 ints.
  se::StatusOr<se::DeviceMemory<int>> adopted = executor->AdoptDeviceMemory<int>(native + 32 * sizeof(int), 32);
  REQUIRE(adopted.ok());
  se::DeviceMemory<int> memory = adopted.value();
  CHECK(se::NativeMemory(*executor, memory).value() == native + 32 * sizeof(int));
  CHECK(se::NativeMemory(*executor, memory.GetSlice(4, 4)).value() == native + 36 * sizeof(int));

  std::vector<int> in(32, 9);
  REQUIRE(executor->SynchronousMemcpyH2D<int>(in, &memory).ok());
  int word = 0;
  std::memcpy(&word, reinterpret_cast<const void*>(native + 40 * sizeof(int)),
              sizeof(word));  // the double's memory is host memory
  CHECK(word == 9);

  se::MultiKernelLoaderSpec spec(2);
  spec.AddCudaPtxInMemory(kPtx, "fill");
  se::TypedKernel<se::DeviceMemory<int>*, std::uint32_t> kernel(executor);
  REQUIRE(executor->GetKernel(spec, &kernel).ok());
  CHECK(se::NativeKernel(*executor, kernel).value() != nullptr);
  se::DeviceMemory<int> slice = memory.GetSlice(8, 8);
  se::Stream stream(executor);
  REQUIRE(stream.Init().ThenLaunch(se::ThreadDim(8), se::BlockDim(1), kernel, &slice, 8u).BlockHostUntilDone().ok());
  SeCountingDoubleLaunch launch{};
  REQUIRE(Double().last_launch(&launch));
  CUdeviceptr passed = 0;
  std::memcpy(&passed, launch.param_bytes[0], sizeof(passed));
  CHECK(passed == native + 40 * sizeof(int));

  se::DeviceMemoryBase as_base = memory;
  CHECK(executor->Deallocate(&as_base).code() == se::ErrorCode::kFailedPrecondition);
  REQUIRE(executor->ForgetDeviceMemory(&memory).ok());
  CHECK(Calls("cuMemFree") == frees);
  CHECK(api.cuMemFree(native) == CUDA_SUCCESS);
}

TEST_CASE("memory adoption refuses foreign, unknown and oversized pointers", "[cuda][interop][errors]") {
  auto* executor = Executor();
  const auto& api = Driver(executor);
  CHECK(executor->AdoptDeviceMemory<int>(CUdeviceptr{0}, 4).status().code() == se::ErrorCode::kInvalidArgument);

  CUdeviceptr foreign = ForeignAllocation(256);
  REQUIRE(foreign != 0);
  se::Status other_context = executor->AdoptDeviceMemory<int>(foreign, 4).status();
  CHECK(other_context.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(other_context, "not to this executor's primary context"));
  CHECK(api.cuMemFree(foreign) == CUDA_SUCCESS);

  std::vector<int> host(4);
  se::Status not_cuda = executor->AdoptDeviceMemory<int>(reinterpret_cast<CUdeviceptr>(host.data()), 4).status();
  CHECK(Mentions(not_cuda, "cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_CONTEXT) failed with CUDA_ERROR_INVALID_VALUE"));

  CUdeviceptr native = 0;
  REQUIRE(api.cuMemAlloc(&native, 64) == CUDA_SUCCESS);
  se::Status too_long = executor->AdoptDeviceMemory<char>(native + 16, 49).status();
  CHECK(too_long.code() == se::ErrorCode::kOutOfRange);
  CHECK(Mentions(too_long, "48 of them from the pointer on"));
  CHECK(executor->AdoptDeviceMemory<char>(native + 16, 48).ok());
  se::DeviceMemory<char> whole = executor->AdoptDeviceMemory<char>(native, 16).value();
  Double().fail_next("cuMemGetAddressRange", CUDA_ERROR_INVALID_CONTEXT);
  CUdeviceptr other = 0;
  REQUIRE(api.cuMemAlloc(&other, 64) == CUDA_SUCCESS);
  CHECK(Mentions(executor->AdoptDeviceMemory<char>(other, 8).status(), "cuMemGetAddressRange failed"));
  CHECK(api.cuMemFree(other) == CUDA_SUCCESS);
  REQUIRE(executor->ForgetDeviceMemory(&whole).ok());
  // The adoption of native + 16 is left registered: the executor forgets it
  // when it is destroyed (never during the process, as executors live on).
}

TEST_CASE("pinned memory through the executor makes exactly the driver calls it needs", "[cuda][pinned]") {
  auto* executor = Executor();
  const long allocs = Calls("cuMemHostAlloc");
  const long frees = Calls("cuMemFreeHost");
  {
    se::PinnedHostMemory<double> pinned = executor->HostAllocate<double>(128);
    REQUIRE(pinned.ok());
    CHECK(Calls("cuMemHostAlloc") == allocs + 1);
  }
  CHECK(Calls("cuMemFreeHost") == frees + 1);

  Double().fail_next("cuMemHostAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  se::PinnedHostMemory<double> failed = executor->HostAllocate<double>(128);
  CHECK(failed.status().code() == se::ErrorCode::kResourceExhausted);
  CHECK(Mentions(failed.status(), "cuMemHostAlloc failed with CUDA_ERROR_OUT_OF_MEMORY"));

  std::vector<char> memory(4096);
  const long registers = Calls("cuMemHostRegister");
  const long unregisters = Calls("cuMemHostUnregister");
  REQUIRE(executor->HostMemoryRegister(memory.data(), 4096).ok());
  CHECK(executor->HostMemoryRegister(memory.data() + 100, 8).code() == se::ErrorCode::kAlreadyExists);
  CHECK(Calls("cuMemHostRegister") == registers + 1);  // the overlap never reached the driver
  REQUIRE(executor->HostMemoryUnregister(memory.data()).ok());
  CHECK(executor->HostMemoryUnregister(memory.data()).code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Calls("cuMemHostUnregister") == unregisters + 1);

  Double().fail_next("cuMemHostRegister", CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  se::Status refused = executor->HostMemoryRegister(memory.data(), 4096);
  CHECK(Mentions(refused, "cuMemHostRegister failed"));
  CHECK_FALSE(executor->IsPinnedHostMemory(memory.data(), 1));  // not recorded when the driver refused
}
