// Kernel attributes and occupancy on CUDA against the counting driver double
// (counting_double/occupancy_double.inc says how it answers): the backend
// asks cuFuncGetAttribute for the right attributes and maps each answer to
// its field, passes the caller's block size, shared memory and limit to
// cuOccupancy* unchanged, refuses bad queries before the driver sees them,
// and names the call when the driver fails. The device's typed limits too.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <streamexecutor/cuda.hpp>

#include "double_test.hpp"

namespace se = streamexecutor;

namespace {

using se_test::Calls;
using se_test::Double;
using se_test::Executor;
using se_test::Mentions;

// `tiled`: 40 registers (.reg counts 2 + 30 + 8), at most 256 threads
// (.maxntid), 4 KiB of static shared memory, 48 bytes of local memory; the
// module has 64 bytes of constant memory and is PTX 8.5. `plain`: 32
// registers, no limit of its own.
constexpr const char* kPtx = R"(
.version 8.5
.target sm_90
.address_size 64
.const .align 4 .b8 coefficients[64];

.visible .entry tiled(.param .u64 tiled_param_0, .param .u32 tiled_param_1)
.maxntid 256, 1, 1
{
  .reg .pred %p<2>;
  .reg .b32 %r<30>;
  .reg .b64 %rd<8>;
  .local .align 8 .b8 __local_depot0[48];
  .shared .align 4 .b8 tile[4096];
  st.shared.u32 [tile], %r1;
  ret;
}

.visible .entry plain(.param .u64 plain_param_0)
{
  .reg .b32 %r<16>;
  .reg .b64 %rd<16>;
  ret;
}
)";

SeCountingDoubleOccupancyCall LastCall(const char* entry_point) {
  SeCountingDoubleOccupancyCall call{};
  REQUIRE(Double().last_occupancy_call(entry_point, &call));
  return call;
}

using TiledKernel = se::TypedKernel<se::DeviceMemory<float>*, std::uint32_t>;
using PlainKernel = se::TypedKernel<se::DeviceMemory<float>*>;

template <typename Kernel>
void Load(Kernel& kernel, const char* name) {
  se::MultiKernelLoaderSpec spec(Kernel::kArity);
  spec.AddCudaPtxInMemory(kPtx, name);
  const se::Status loaded = Executor()->GetKernel(spec, &kernel);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
}

constexpr CUfunction_attribute kAsked[] = {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                           CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                           CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
                                           CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                           CU_FUNC_ATTRIBUTE_NUM_REGS,
                                           CU_FUNC_ATTRIBUTE_PTX_VERSION,
                                           CU_FUNC_ATTRIBUTE_BINARY_VERSION,
                                           CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES};

}  // namespace

int SeTestPreflight() {
  auto& platform = se::Platform<se::cuda>::Get();
  if (!platform.InitStatus().ok() || !Double().loaded()) {
    fmt::print("SKIPPED: libcuda.so.1 is not the counting driver double ({})\n", platform.InitStatus().ToString());
    return 77;
  }
  return -1;
}

TEST_CASE("GetKernelAttributes asks each attribute once and maps the answers", "[cuda][double][occupancy]") {
  TiledKernel kernel(Executor());
  Load(kernel, "tiled");
  std::vector<long> before;
  for (int which = 0; which < CU_FUNC_ATTRIBUTE_MAX; ++which) before.push_back(Double().func_attribute_calls(which));

  auto attributes = Executor()->GetKernelAttributes(kernel);
  INFO(attributes.status().ToString());
  REQUIRE(attributes.ok());
  for (int which = 0; which < CU_FUNC_ATTRIBUTE_MAX; ++which) {
    const bool asked = std::find(std::begin(kAsked), std::end(kAsked), which) != std::end(kAsked);
    INFO("CUfunction_attribute " << which);
    CHECK(Double().func_attribute_calls(which) - before[static_cast<std::size_t>(which)] == (asked ? 1 : 0));
  }
  const se::KernelAttributes& a = attributes.value();
  CHECK(a.max_threads_per_block == 256);
  CHECK(a.static_shared_memory_bytes == 4096);
  CHECK(a.constant_memory_bytes == 64);
  CHECK(a.local_memory_per_thread_bytes == 48);
  CHECK(a.registers_per_thread == 40);
  CHECK(a.ptx_version == 85);
  CHECK(a.binary_version == 90);
  CHECK(a.max_dynamic_shared_memory_bytes == 48 * 1024 - 4096);
  CHECK(a.preferred_block_size_multiple == 32);  // the warp
  CHECK(a.stack_bytes_per_thread == 0);
  CHECK_FALSE(a.HasRequiredBlockDims());
  CHECK(a.ToString().find("PTX 8.5, binary sm_90") != std::string::npos);
}

TEST_CASE("MaxActiveBlocksPerMultiprocessor passes the block and shared sizes and returns the driver's answer",
          "[cuda][double][occupancy]") {
  TiledKernel tiled(Executor());
  PlainKernel plain(Executor());
  Load(tiled, "tiled");
  Load(plain, "plain");
  const long calls = Calls("cuOccupancyMaxActiveBlocksPerMultiprocessor");

  // 100 threads take 128: registers allow 65536 / (40 x 128) = 12 blocks.
  auto registers = Executor()->MaxActiveBlocksPerMultiprocessor(tiled, 100, 2048);
  REQUIRE(registers.ok());
  CHECK(registers.value() == 12);
  SeCountingDoubleOccupancyCall call = LastCall("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  CHECK(std::string_view(call.kernel_name) == "tiled");
  CHECK(call.block_size == 100);
  CHECK(call.dynamic_shared_bytes == 2048);
  CHECK(Calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") == calls + 1);

  // Shared memory: 100 KiB per SM over the static 4 KiB plus the dynamic.
  auto small = Executor()->MaxActiveBlocksPerMultiprocessor(tiled, 32, 0);
  auto large = Executor()->MaxActiveBlocksPerMultiprocessor(tiled, 32, 48 * 1024 - 4096);
  REQUIRE((small.ok() && large.ok()));
  CHECK(small.value() == 25);
  CHECK(large.value() == 2);
  CHECK(LastCall("cuOccupancyMaxActiveBlocksPerMultiprocessor").dynamic_shared_bytes == 48 * 1024 - 4096);

  auto threads = Executor()->MaxActiveBlocksPerMultiprocessor(plain, 256);
  REQUIRE(threads.ok());
  CHECK(threads.value() == 8);  // 2048 threads per SM; 65536 / (32 x 256) registers
  CHECK(std::string_view(LastCall("cuOccupancyMaxActiveBlocksPerMultiprocessor").kernel_name) == "plain");
}

TEST_CASE("SuggestBlockSize is cuOccupancyMaxPotentialBlockSize with the caller's shared memory and limit",
          "[cuda][double][occupancy]") {
  TiledKernel tiled(Executor());
  Load(tiled, "tiled");
  const long calls = Calls("cuOccupancyMaxPotentialBlockSize");
  // Registers bound every size; 96 threads keep 17 blocks (1632 threads)
  // resident, more than any other multiple of 32 up to 256.
  auto best = Executor()->SuggestBlockSize(tiled, 1024);
  INFO(best.status().ToString());
  REQUIRE(best.ok());
  CHECK(best.value().threads_per_block == 96);
  CHECK(best.value().active_blocks_per_multiprocessor == 17);
  CHECK(best.value().min_blocks_for_full_occupancy == 17 * 4);
  CHECK(Calls("cuOccupancyMaxPotentialBlockSize") == calls + 1);
  SeCountingDoubleOccupancyCall call = LastCall("cuOccupancyMaxPotentialBlockSize");
  CHECK(std::string_view(call.kernel_name) == "tiled");
  CHECK(call.dynamic_shared_bytes == 1024);
  CHECK(call.block_size_limit == 256);  // the kernel's limit when the caller gives none
  CHECK_FALSE(call.with_callback);
  // The active blocks are the driver's answer for the size it chose.
  CHECK(LastCall("cuOccupancyMaxActiveBlocksPerMultiprocessor").block_size == 96);

  auto limited = Executor()->SuggestBlockSize(tiled, 0, 64);
  REQUIRE(limited.ok());
  CHECK(LastCall("cuOccupancyMaxPotentialBlockSize").block_size_limit == 64);
  CHECK(limited.value().threads_per_block == 64);
  CHECK(limited.value().active_blocks_per_multiprocessor == 25);
  CHECK(limited.value().min_blocks_for_full_occupancy == 100);
}

TEST_CASE("the per-size form asks the driver's occupancy of each candidate", "[cuda][double][occupancy]") {
  TiledKernel tiled(Executor());
  Load(tiled, "tiled");
  const long potential = Calls("cuOccupancyMaxPotentialBlockSize");
  const long active = Calls("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  std::vector<std::uint64_t> asked;
  auto best = Executor()->SuggestBlockSize(tiled, [&](std::uint64_t threads) {
    asked.push_back(threads);
    return threads * 64;
  });
  INFO(best.status().ToString());
  REQUIRE(best.ok());
  CHECK(asked == std::vector<std::uint64_t>{256, 224, 192, 160, 128, 96, 64, 32});
  CHECK(Calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") == active + 8);
  CHECK(Calls("cuOccupancyMaxPotentialBlockSize") == potential);  // the driver's form takes no per-size memory here
  const SeCountingDoubleOccupancyCall last = LastCall("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  CHECK(last.block_size == 32);
  CHECK(last.dynamic_shared_bytes == 32 * 64);
  // 256 threads with 16 KiB: 100 KiB / 20 KiB = 5 blocks, 1280 threads.
  CHECK(best.value().threads_per_block == 256);
  CHECK(best.value().active_blocks_per_multiprocessor == 5);
  CHECK(best.value().min_blocks_for_full_occupancy == 20);
}

TEST_CASE("bad occupancy queries never reach the driver", "[cuda][double][occupancy][errors]") {
  TiledKernel tiled(Executor());
  Load(tiled, "tiled");
  const long active = Calls("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  const long potential = Calls("cuOccupancyMaxPotentialBlockSize");
  CHECK(Executor()->MaxActiveBlocksPerMultiprocessor(tiled, 0).status().code() == se::ErrorCode::kInvalidArgument);
  auto big = Executor()->MaxActiveBlocksPerMultiprocessor(tiled, 257);
  CHECK(Mentions(big.status(), "257 threads per block; the kernel runs at most 256"));
  auto shared = Executor()->MaxActiveBlocksPerMultiprocessor(tiled, 32, 48 * 1024 - 4096 + 1);
  CHECK(Mentions(shared.status(), "the kernel may have at most 45056"));
  CHECK_FALSE(Executor()->SuggestBlockSize(tiled, 48 * 1024).ok());
  CHECK(Calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") == active);
  CHECK(Calls("cuOccupancyMaxPotentialBlockSize") == potential);
}

TEST_CASE("driver failures name the call and the query", "[cuda][double][occupancy][errors]") {
  TiledKernel tiled(Executor());
  Load(tiled, "tiled");
  Double().fail_next("cuFuncGetAttribute", CUDA_ERROR_INVALID_HANDLE);
  auto attributes = Executor()->GetKernelAttributes(tiled);
  REQUIRE_FALSE(attributes.ok());
  CHECK(Mentions(attributes.status(),
                 "GetKernelAttributes of kernel 'tiled' on cuda:0: cuFuncGetAttribute failed "
                 "with CUDA_ERROR_INVALID_HANDLE"));
  CHECK(Mentions(attributes.status(), "reading CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"));

  Double().fail_next("cuOccupancyMaxActiveBlocksPerMultiprocessor", CUDA_ERROR_INVALID_VALUE);
  auto active = Executor()->MaxActiveBlocksPerMultiprocessor(tiled, 64, 512);
  REQUIRE_FALSE(active.ok());
  CHECK(active.status().code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(active.status(),
                 "MaxActiveBlocksPerMultiprocessor of kernel 'tiled' on cuda:0: "
                 "cuOccupancyMaxActiveBlocksPerMultiprocessor failed with CUDA_ERROR_INVALID_VALUE"));
  CHECK(Mentions(active.status(), "for 64 threads per block and 512 bytes of dynamic shared memory"));

  Double().fail_next("cuOccupancyMaxPotentialBlockSize", CUDA_ERROR_INVALID_VALUE);
  auto best = Executor()->SuggestBlockSize(tiled, 256, 128);
  REQUIRE_FALSE(best.ok());
  CHECK(Mentions(best.status(),
                 "SuggestBlockSize of kernel 'tiled' on cuda:0: cuOccupancyMaxPotentialBlockSize "
                 "failed"));
  CHECK(Mentions(best.status(), "for 256 bytes of dynamic shared memory and blocks of at most 128 threads"));

  // The next queries work again.
  CHECK(Executor()->GetKernelAttributes(tiled).ok());
  CHECK(Executor()->SuggestBlockSize(tiled).ok());
}

TEST_CASE("a host callback may not ask the driver for occupancy either", "[cuda][double][occupancy][errors]") {
  TiledKernel tiled(Executor());
  Load(tiled, "tiled");
  const long calls = Calls("cuFuncGetAttribute");
  se::Status inside;
  se::Stream stream(Executor());
  REQUIRE(stream.Init()
              .ThenDoHostCallback([&] { inside = Executor()->GetKernelAttributes(tiled).status(); })
              .BlockHostUntilDone()
              .ok());
  CHECK(inside.code() == se::ErrorCode::kFailedPrecondition);
  CHECK(Mentions(inside, "a host callback (ThenDoHostCallback) may not call the CUDA driver"));
  CHECK(Calls("cuFuncGetAttribute") == calls);
}

TEST_CASE("the description's typed limits are the driver's attributes", "[cuda][double][occupancy]") {
  const se::DeviceDescription& d = Executor()->GetDeviceDescription();
  INFO(d.ToString());
  CHECK(d.threads_per_multiprocessor == 2048);
  CHECK(d.blocks_per_multiprocessor == 32);
  CHECK(d.shared_memory_per_multiprocessor == 100 * 1024);
  CHECK(d.registers_per_multiprocessor == 65536);
  CHECK(d.registers_per_block == 65536);
  CHECK(d.shared_memory_per_block_optin == 99 * 1024);
  CHECK(d.constant_memory_size == 64 * 1024);
  CHECK(d.l2_cache_size == 6 * 1024 * 1024);
  CHECK(d.memory_bus_width_bits == 384);
  CHECK(d.memory_clock_rate_khz == 1215000);
  CHECK(d.async_engine_count == 2);
  CHECK(d.concurrent_kernels);
  CHECK(d.ecc_enabled);
  CHECK_FALSE(d.integrated);
  for (const auto& [key, value] : d.extra) {
    INFO(key);
    CHECK(key.find("per SM") == std::string::npos);
    CHECK(key.find("L2") == std::string::npos);
    CHECK(key.find("constant memory") == std::string::npos);
  }
}
