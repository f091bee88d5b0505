// Host kernels with a block barrier (CUDA's __syncthreads, OpenCL's
// barrier(CLK_LOCAL_MEM_FENCE)). A thread that waits at a barrier must stop in
// the middle of its body while the block's other threads run up to it, so each
// thread of such a block gets a stack of its own: a fiber, switched on the one
// OS thread that runs the block. Only kernels whose first parameter is
// `const se::host::CooperativeContext&` run here; per-thread and per-block
// kernels keep their plain loops (kernel_abi.hpp), which a fiber switch per
// thread would slow down many times over.
//
// The fibers are Boost.Context's (docs/host.md compares them with ucontext).
// Their stacks are mapped once per thread that runs blocks and reused by every
// later block, so launches allocate nothing once each thread has run its
// largest block.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include <boost/context/fiber.hpp>

#include "streamexecutor/core/dims.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define STREAMEXECUTOR_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STREAMEXECUTOR_FIBER_ASAN 1
#endif
#endif
#if defined(STREAMEXECUTOR_FIBER_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

namespace streamexecutor::host_detail {

class FiberBlock;

// What a cooperative kernel receives first: CUDA's built-in variables, named
// as in CUDA (and KernelContext), and the block's barrier.
class CooperativeContext {
 public:
  Dim3 threadIdx{0, 0, 0};
  Dim3 blockIdx{0, 0, 0};
  Dim3 blockDim;
  Dim3 gridDim;

  // __syncthreads(): returns once every thread of this block that is still
  // running its body has called it; what each wrote before (shared memory,
  // device memory) is visible to all after. A thread that has returned no
  // longer takes part (docs/host.md, "Block barriers").
  void SyncThreads() const;

 private:
  friend class FiberBlock;
  FiberBlock* block_ = nullptr;
};

// The fiber stacks of one thread that runs blocks: one mapping with a guard
// page below each stack, grown (never shrunk) to the largest block the thread
// has run, and unmapped when the thread ends.
class FiberStacks {
 public:
  // Per fiber. A kernel's frame is small; 64 KiB leaves room for what a body
  // may call (an exception's unwinding takes a few KiB). Overflowing it hits
  // the guard page: a crash, never another thread's stack.
  static constexpr std::size_t kStackBytes = std::size_t{64} << 10;
  // Threads per block of a cooperative kernel, as on CUDA devices; the launch
  // is refused above it (host/backend.hpp). It also bounds the mappings: each
  // guard page splits the mapping, and Linux allows about 65,000 per process.
  static constexpr std::uint64_t kMaxThreads = 1024;

  static FiberStacks& ForThisThread() {
    thread_local FiberStacks stacks;
    return stacks;
  }

  FiberStacks() = default;
  FiberStacks(const FiberStacks&) = delete;
  FiberStacks& operator=(const FiberStacks&) = delete;
  ~FiberStacks() { Unmap(); }

  // Room for `threads` fibers. Maps only when the block is larger than every
  // earlier one (rounded up to a power of two, so that growing blocks remap
  // rarely); throws when the memory cannot be had. The fibers' handles live in
  // the mapping too, so that no launch ever calls operator new.
  void Reserve(std::uint64_t threads) {
    if (threads <= count_) return;
    const std::size_t count = std::max<std::size_t>(32, std::bit_ceil(static_cast<std::size_t>(threads)));
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t slot = kStackBytes + page;
    const std::size_t handles = (count * (sizeof(boost::context::fiber) + 1) + page - 1) / page * page;
    // Reserved, not committed: a fiber uses the pages it touches, usually one or two.
    void* mapped = mmap(nullptr, handles + slot * count, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (mapped == MAP_FAILED) {
      throw std::runtime_error("could not map " + std::to_string(count) + " fiber stacks of " +
                               std::to_string(kStackBytes >> 10) + " KiB for a cooperative kernel's block");
    }
    Unmap();
    base_ = static_cast<std::byte*>(mapped);
    bytes_ = handles + slot * count;
    stacks_ = base_ + handles;
    slot_ = slot;
    guard_ = page;
    count_ = count;
    fibers_ = reinterpret_cast<boost::context::fiber*>(base_);
    for (std::size_t i = 0; i < count; ++i) ::new (static_cast<void*>(fibers_ + i)) boost::context::fiber();
    finished_ = reinterpret_cast<unsigned char*>(base_ + count * sizeof(boost::context::fiber));
    // Without a guard (mprotect failing) the stacks still work; an overflow
    // would then go unnoticed, as on a thread without one.
    for (std::size_t i = 0; i < count; ++i) (void)mprotect(stacks_ + i * slot, page, PROT_NONE);
  }

  std::byte* Bottom(std::size_t i) const { return stacks_ + i * slot_ + guard_; }
  std::byte* Top(std::size_t i) const { return Bottom(i) + kStackBytes; }
  boost::context::fiber* fibers() { return fibers_; }
  unsigned char* finished() { return finished_; }  // per fiber: done with the current block

  // Set while this thread schedules a block's fibers: a second run on the same
  // thread (a kernel that waits for a stream, and so helps run other blocks)
  // would reuse stacks in use.
  bool busy = false;

 private:
  // Every fiber has ended by then (FiberBlock never leaves one suspended):
  // their handles are empty and need no destructor.
  void Unmap() {
    if (base_ != nullptr) (void)munmap(base_, bytes_);
    base_ = nullptr;
    count_ = 0;
  }

  std::byte* base_ = nullptr;  // the handles, then the stacks
  std::size_t bytes_ = 0;
  std::byte* stacks_ = nullptr;
  std::size_t slot_ = 0;
  std::size_t guard_ = 0;
  std::size_t count_ = 0;
  boost::context::fiber* fibers_ = nullptr;
  unsigned char* finished_ = nullptr;
};

// Runs blocks of a cooperative launch on the calling thread. Each thread of a
// block is a fiber; the scheduler resumes them in threadIdx order, and each
// runs until it reaches a barrier or returns (one "round"). When a round ends,
// every thread still running waits at a barrier, so all are released: the next
// round resumes them. The fibers are made at the first block and loop over the
// blocks of the run, so a block costs two switches per thread, plus two per
// thread per barrier.
class FiberBlock {
 public:
  // body(CooperativeContext& ctx, std::uint64_t block): thread ctx.threadIdx's
  // call of the kernel in linear block `block` (it sets ctx.blockIdx).
  template <typename Body>
  static void Run(const Dim3& block_dim, const Dim3& grid, std::uint64_t first, std::uint64_t end, Body& body) {
    FiberStacks& stacks = FiberStacks::ForThisThread();
    if (stacks.busy) {
      throw std::logic_error(
          "a cooperative host kernel's block was started on a thread already running one (did a kernel wait for "
          "a stream?)");
    }
    stacks.Reserve(block_dim.Count());
    FiberBlock block(stacks, block_dim, grid);
    block.Schedule(first, end, body);
  }

  // SyncThreads, on the calling thread's fiber.
  void Arrive() {
    at_barrier_ = true;
    SwitchToScheduler();
    if (unwinding_) [[unlikely]]
      throw Unwind{};
  }

 private:
  // Thrown at a barrier into the threads of a block abandoned because one of
  // them threw. Not a std::exception, so that a kernel's `catch (const
  // std::exception&)` lets it pass and the thread's destructors run.
  struct Unwind {};

  // The stacks are mapped by FiberStacks; a fiber's end frees nothing.
  struct KeepStack {
    void deallocate(boost::context::stack_context&) noexcept {}
  };

  template <typename Body>
  struct Main {
    FiberBlock* block;
    Body* body;
    Dim3 thread;
    boost::context::fiber operator()(boost::context::fiber&& scheduler) {
      return block->RunThread(std::move(scheduler), *body, thread);
    }
  };

  FiberBlock(FiberStacks& stacks, const Dim3& block_dim, const Dim3& grid)
      : stacks_(stacks), block_dim_(block_dim), grid_(grid), threads_(static_cast<std::size_t>(block_dim.Count())) {
    stacks_.busy = true;
  }
  ~FiberBlock() { stacks_.busy = false; }
  FiberBlock(const FiberBlock&) = delete;
  FiberBlock& operator=(const FiberBlock&) = delete;

  template <typename Body>
  void Schedule(std::uint64_t first, std::uint64_t end, Body& body) {
    boost::context::fiber* fibers = stacks_.fibers();
    unsigned char* finished = stacks_.finished();
    for (block_ = first; block_ < end; ++block_) {
      std::fill_n(finished, threads_, static_cast<unsigned char>(0));
      for (std::size_t running = threads_; running > 0;) {
        for (std::size_t i = 0; i < threads_; ++i) {
          if (finished[i]) continue;
          if (fibers[i]) [[likely]] {
            Resume(i);
          } else {
            Start(i, body);
          }
          if (error_) [[unlikely]] {
            Abandon();
            std::rethrow_exception(error_);
          }
          if (!at_barrier_) {
            finished[i] = 1;
            --running;
          }
        }
      }
    }
    stop_ = true;  // each fiber leaves its loop over the blocks
    for (std::size_t i = 0; i < threads_; ++i) {
      if (fibers[i]) Resume(i);
    }
  }

  // One thread of the block, for every block of the run.
  template <typename Body>
  boost::context::fiber RunThread(boost::context::fiber&& scheduler, Body& body, const Dim3& thread) {
    scheduler_ = std::move(scheduler);
    EnteredFiber();
    CooperativeContext ctx;
    ctx.threadIdx = thread;
    ctx.blockDim = block_dim_;
    ctx.gridDim = grid_;
    ctx.block_ = this;
    try {
      while (!stop_) {
        body(ctx, block_);
        at_barrier_ = false;
        SwitchToScheduler();
      }
    } catch (const boost::context::detail::forced_unwind&) {
      throw;  // Boost.Context's own unwinding of a fiber destroyed while suspended
    } catch (const Unwind&) {
    } catch (...) {
      if (!error_) error_ = std::current_exception();
    }
    LeavingFiber();
    return std::move(scheduler_);
  }

  // Unwinds every thread still suspended (their destructors run), then lets
  // them end. A kernel that swallows Unwind meets it again at its next barrier.
  void Abandon() {
    stop_ = true;
    unwinding_ = true;
    boost::context::fiber* fibers = stacks_.fibers();
    for (bool left = true; left;) {
      left = false;
      for (std::size_t i = 0; i < threads_; ++i) {
        if (!fibers[i]) continue;
        Resume(i);
        left = left || static_cast<bool>(fibers[i]);
      }
    }
  }

  template <typename Body>
  void Start(std::size_t i, Body& body) {
    boost::context::stack_context stack;
    stack.sp = stacks_.Top(i);
    stack.size = FiberStacks::kStackBytes;
    const std::uint64_t x = block_dim_.x, y = block_dim_.y;
    const Dim3 thread{i % x, (i / x) % y, i / (x * y)};
    stacks_.fibers()[i] =
        boost::context::fiber(std::allocator_arg, boost::context::preallocated(stack.sp, stack.size, stack),
                              KeepStack{}, Main<Body>{this, &body, thread});
    Resume(i);
  }

  void Resume(std::size_t i) {
    boost::context::fiber& fiber = stacks_.fibers()[i];
#if defined(STREAMEXECUTOR_FIBER_ASAN)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, stacks_.Bottom(i), FiberStacks::kStackBytes);
    fiber = std::move(fiber).resume();
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
    fiber = std::move(fiber).resume();
#endif
  }

  // AddressSanitizer must know which stack runs, or an exception thrown on a
  // fiber's stack makes it report false errors.
  void SwitchToScheduler() {
#if defined(STREAMEXECUTOR_FIBER_ASAN)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, scheduler_bottom_, scheduler_size_);
    scheduler_ = std::move(scheduler_).resume();
    __sanitizer_finish_switch_fiber(fake_stack, &scheduler_bottom_, &scheduler_size_);
#else
    scheduler_ = std::move(scheduler_).resume();
#endif
  }
  void EnteredFiber() {
#if defined(STREAMEXECUTOR_FIBER_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &scheduler_bottom_, &scheduler_size_);
#endif
  }
  void LeavingFiber() {
#if defined(STREAMEXECUTOR_FIBER_ASAN)
    __sanitizer_start_switch_fiber(nullptr, scheduler_bottom_, scheduler_size_);
#endif
  }

  FiberStacks& stacks_;
  Dim3 block_dim_;
  Dim3 grid_;
  std::size_t threads_;
  std::uint64_t block_ = 0;          // the linear block being run
  boost::context::fiber scheduler_;  // while a fiber runs: how it returns to the scheduler
  bool at_barrier_ = false;          // why the fiber that just ran gave control back
  bool stop_ = false;
  bool unwinding_ = false;
  std::exception_ptr error_;
#if defined(STREAMEXECUTOR_FIBER_ASAN)
  const void* scheduler_bottom_ = nullptr;
  std::size_t scheduler_size_ = 0;
#endif
};

inline void CooperativeContext::SyncThreads() const { block_->Arrive(); }

}  // namespace streamexecutor::host_detail
