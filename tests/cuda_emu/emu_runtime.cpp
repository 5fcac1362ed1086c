// tests/cuda_emu/emu_runtime.cpp — the emulated GPU (tests only): devices, memory, streams, events
// and kernel execution on CPU threads. Depends on the C++ standard library only (x86-64: the fiber
// switch is a few lines of assembly).
//
// Execution model (docs/backends.md, "The emulated GPU"):
//   - every stream is a worker thread that runs its queue in order (kernels, copies, event
//     records and waits, cuBLAS and NCCL work), so two streams really run at the same time and a
//     missing event shows up as a race (ThreadSanitizer) or a wrong value, not by luck;
//   - the blocks of a launch run on the stream's worker and a few helper threads at once; the
//     CUDA threads of a block are fibers on one of them (BlockRunner below);
//   - __syncthreads is a barrier of the block's live threads; a warp operation is a barrier and an
//     exchange among the lanes of its mask (lanes that returned count as gone); a thread that
//     returns leaves both;
//   - __shared__ memory is a per-block arena, poisoned (0xFF bytes, NaN as floats) before each block.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "emu_internal.h"

thread_local uint3 threadIdx{0, 0, 0};
thread_local uint3 blockIdx{0, 0, 0};
thread_local dim3 blockDim{1, 1, 1};
thread_local dim3 gridDim{1, 1, 1};

namespace strata_emu {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStaticSharedBytes = 48 * 1024;    // CUDA's static __shared__ limit
constexpr size_t kDynamicSharedBytes = 227 * 1024;  // sm_90's opt-in maximum per block
constexpr size_t kPoisonLimit = 16u << 20;          // allocations up to this size are poisoned

// ---- block and warp state -------------------------------------------------------------------
//
// The CUDA threads of a block are fibers on one OS thread: a fiber runs until it waits
// at a barrier or returns, then the next runnable one of the block runs. So a barrier costs a
// user-space context switch, not a trip through the OS scheduler, and a deadlock (no fiber
// runnable, some not finished) is seen at once. The blocks of a launch run on several OS threads
// at once (the stream's worker and its helpers), so blocks really are concurrent, as on a GPU.
// Under ThreadSanitizer every fiber is announced to it, switches carry no synchronisation, and
// each barrier is a release by every arriving thread and an acquire by every departing one, so
// TSan sees exactly the happens-before that CUDA's barriers give.

#if defined(__SANITIZE_THREAD__)
#define STRATA_EMU_TSAN 1
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void* fiber);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}
constexpr unsigned kTsanNoSync = 1;  // __tsan_switch_to_fiber_no_sync
inline void hb_release(void* a) { __tsan_release(a); }
inline void hb_acquire(void* a) { __tsan_acquire(a); }
#else
inline void hb_release(void*) {}
inline void hb_acquire(void*) {}
#endif
// The scheduler's and the barriers' own bookkeeping (counters, flags, the fiber list) is shared by
// the fibers of a block with no synchronisation TSan could see (they take turns on one OS thread),
// so it is not instrumented; the happens-before it implements is announced explicitly above.
#define STRATA_EMU_NO_TSAN __attribute__((no_sanitize("thread")))

#if !defined(__x86_64__)
#error "the CUDA emulation's fiber switch is written for x86-64"
#endif
// strata_emu_switch(from, to): saves the callee-saved registers, MXCSR and the x87 control word on
// the current stack, stores the stack pointer in *from and resumes the context whose stack
// pointer is `to` (a fiber switch without a system call, unlike swapcontext's signal-mask save).
// strata_emu_fiber_start: where a new fiber begins: calls strata_emu_fiber_main(r12, r13).
extern "C" void strata_emu_switch(void** from, void* to);
extern "C" void strata_emu_fiber_start();
asm(R"(
  .text
  .globl strata_emu_switch
  .type strata_emu_switch,@function
strata_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size strata_emu_switch,.-strata_emu_switch

  .globl strata_emu_fiber_start
  .type strata_emu_fiber_start,@function
strata_emu_fiber_start:
  movq %r12, %rdi
  movq %r13, %rsi
  call strata_emu_fiber_main
  ud2
  .size strata_emu_fiber_start,.-strata_emu_fiber_start
)");
extern "C" void strata_emu_fiber_main(void* runner, long tid);

struct WarpState {
  uint32_t live = 0;     // lanes that have not returned
  uint32_t arrived = 0;  // lanes waiting in the current operation
  uint32_t op_mask = 0;  // the mask of the current operation
  uint32_t gen = 0;
  uint32_t participants[2] = {0, 0};  // lanes of the operation of generation g, at [g & 1]
  uint64_t slot[2][32] = {};
  char hb[2] = {0, 0};  // ThreadSanitizer sync addresses, one per generation parity
};

struct BlockState {
  int n = 0;  // threads of the block
  int live = 0;
  int arrived = 0;
  uint32_t gen = 0;
  int pred_acc_count = 0, pred_acc_or = 0, pred_acc_and = 1;
  int result_count = 0, result_or = 0, result_and = 1;
  char hb[2] = {0, 0};
  char hb_start = 0, hb_end = 0;
  WarpState warps[32];

  // __shared__ declaration sites met by the block and their offsets (plain arrays: touched only by
  // uninstrumented code, see STRATA_EMU_NO_TSAN).
  static constexpr int kMaxSites = 64;
  const SharedSite* site_keys[kMaxSites] = {};
  size_t site_offsets[kMaxSites] = {};
  int n_sites = 0;
  size_t shm_used = 0;
  alignas(128) unsigned char arena[kStaticSharedBytes];
  std::unique_ptr<unsigned char[]> dynamic;
  size_t dynamic_bytes = 0;

  bool aborted = false;
  std::string reason;
  cudaError_t abort_error = cudaSuccess;
};

// Thrown inside a CUDA thread to leave the kernel when its block is aborted (a deadlock, a misuse
// of a warp operation, shared memory over the limit). Caught at the bottom of the fiber.
struct BlockAbort {};

class BlockRunner;
thread_local BlockRunner* t_runner = nullptr;
void fiber_main(BlockRunner* r, int tid);
thread_local BlockState* t_block = nullptr;
thread_local int t_tid = 0;

constexpr size_t kFiberStack = 256 * 1024;

// Runs blocks, one at a time, as fibers on the calling OS thread.
class BlockRunner {
 public:
  ~BlockRunner() {
#if defined(STRATA_EMU_TSAN)
    for (auto& f : fibers_)
      if (f->tsan) __tsan_destroy_fiber(f->tsan);  // NOLINT
#endif
  }

  // Runs block `idx` of `body`; false (with the reason) when it was aborted.
  STRATA_EMU_NO_TSAN bool run(const std::function<void()>& body, dim3 grid, dim3 block, uint3 idx, size_t shmem, std::string* why,
           cudaError_t* err) {
    const int n = static_cast<int>(block.x * block.y * block.z);
    grow(n);
    reset(n, shmem);
    body_ = &body;
    t_runner = this;
    t_block = &state_;
    blockIdx = idx;
    blockDim = block;
    gridDim = grid;
    for (int i = 0; i < n; ++i) {
      Fiber& f = *fib_[i];
      f.idx = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
      f.waiting = false;
      f.done = false;
      // A fresh stack as strata_emu_switch leaves one: [fp control][r15 r14 r13 r12 rbx rbp][return
      // address = strata_emu_fiber_start], the top 16-aligned, r12 = this runner, r13 = the thread.
      auto* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(f.stack.get()) + kFiberStack) & ~uintptr_t{15});
      uint64_t* sp = top;
      *--sp = reinterpret_cast<uint64_t>(&strata_emu_fiber_start);
      *--sp = 0;                                  // rbp
      *--sp = 0;                                  // rbx
      *--sp = reinterpret_cast<uint64_t>(this);  // r12
      *--sp = static_cast<uint64_t>(i);          // r13
      *--sp = 0;                                  // r14
      *--sp = 0;                                  // r15
      *--sp = 0x1F80u | (uint64_t{0x037F} << 32); // MXCSR and x87 control word at their defaults
      f.sp = sp;
    }
    hb_release(&state_.hb_start);
    done_ = 0;
    cur_ = -1;
#if defined(STRATA_EMU_TSAN)
    main_tsan_ = __tsan_get_current_fiber();
#endif
    switch_to(0, &main_sp_);
    // Back here when every fiber finished, or none can run (a deadlock).
    if (done_ < n && !state_.aborted) {
      abort_block(cudaErrorLaunchTimeout, deadlock_description());
    }
    if (done_ < n) {  // unwind the waiting fibers: each throws BlockAbort at its barrier
      for (int i = 0; i < n; ++i)
        if (!fib_[i]->done) {
          fib_[i]->waiting = false;
          switch_to(i, &main_sp_);
        }
    }
    hb_acquire(&state_.hb_end);
    t_block = nullptr;
    if (state_.aborted) {
      *why = state_.reason;
      *err = state_.abort_error;
      return false;
    }
    return true;
  }

  // Called by a fiber that must wait: runs the next runnable fiber (or returns to the runner
  // when none can run). Returns when this fiber is resumed.
  STRATA_EMU_NO_TSAN void wait() {
    Fiber& me = *fib_[cur_];
    me.waiting = true;
    const int next = next_runnable(cur_);
    if (next < 0) {
      swap_to_main(&me.sp);
    } else if (next != cur_) {
      switch_to(next, &me.sp);
    }
    restore(me);
  }

  // Makes the waiting lanes / threads runnable again.
  STRATA_EMU_NO_TSAN void wake_warp(int warp, uint32_t lanes) {
    for (int l = 0; l < 32; ++l)
      if (lanes & (1u << l)) {
        const int t = warp * 32 + l;
        if (t < state_.n) fib_[t]->waiting = false;
      }
  }
  STRATA_EMU_NO_TSAN void wake_all() {
    for (int t = 0; t < state_.n; ++t) fib_[t]->waiting = false;
  }

  STRATA_EMU_NO_TSAN void abort_block(cudaError_t err, const std::string& why) {
    if (!state_.aborted) {
      state_.aborted = true;
      state_.reason = why;
      state_.abort_error = err;
    }
    wake_all();
  }

 private:
  friend void fiber_main(BlockRunner* r, int tid);
  struct Fiber {
    void* sp = nullptr;  // saved stack pointer while switched out
    std::unique_ptr<char[]> stack;
    uint3 idx{0, 0, 0};
    bool waiting = false;
    bool done = false;
    void* tsan = nullptr;
    const char* where = "";  // what it waits at, for a deadlock report
  };

  STRATA_EMU_NO_TSAN static void entry(BlockRunner* r, int tid) {
    hb_acquire(&r->state_.hb_start);  // the block's set-up (poisoned shared memory) before its threads
    Fiber& me = *r->fib_[tid];
    r->restore(me);
    try {
      (*r->body_)();
    } catch (const BlockAbort&) {
    } catch (...) {
      r->abort_block(cudaErrorLaunchFailure, "a CUDA thread threw a C++ exception");
    }
    r->thread_exit();
    me.done = true;
    ++r->done_;
    hb_release(&r->state_.hb_end);  // the thread's writes before the next block's set-up
    const int next = r->next_runnable(tid);
    void* dead = nullptr;
    if (next < 0) r->swap_to_main(&dead);
    else r->switch_to(next, &dead);
    // Never resumed.
  }

  STRATA_EMU_NO_TSAN void restore(Fiber& me) {
    threadIdx = me.idx;
    t_tid = tid_of(me);
    t_block = &state_;
    t_runner = this;
  }
  STRATA_EMU_NO_TSAN int tid_of(const Fiber& f) const { return static_cast<int>(f.idx.x + f.idx.y * blockDim.x + f.idx.z * blockDim.x * blockDim.y); }

  STRATA_EMU_NO_TSAN void switch_to(int next, void** save) {
    cur_ = next;
    void* to = fib_[next]->sp;
#if defined(STRATA_EMU_TSAN)
    __tsan_switch_to_fiber(fib_[next]->tsan, kTsanNoSync);
#endif
    strata_emu_switch(save, to);
  }
  STRATA_EMU_NO_TSAN void swap_to_main(void** save) {
    cur_ = -1;
#if defined(STRATA_EMU_TSAN)
    __tsan_switch_to_fiber(main_tsan_, kTsanNoSync);
#endif
    strata_emu_switch(save, main_sp_);
  }

  // The next fiber after `from` (round robin) that is neither done nor waiting; -1 when none.
  STRATA_EMU_NO_TSAN int next_runnable(int from) const {
    const int n = state_.n;
    for (int k = 1; k <= n; ++k) {
      const int i = (from + k) % n;
      if (!fib_[i]->done && !fib_[i]->waiting) return i;
    }
    return -1;
  }

  STRATA_EMU_NO_TSAN std::string deadlock_description() const {
    int at_block = 0, at_warp = 0;
    for (int i = 0; i < state_.n; ++i)
      if (!fib_[i]->done) (std::strcmp(fib_[i]->where, "__syncthreads") == 0 ? at_block : at_warp) += 1;
    return "deadlock: " + std::to_string(state_.n - done_) + " threads wait forever (" + std::to_string(at_block) +
           " at __syncthreads, " + std::to_string(at_warp) +
           " at warp operations): a barrier that not every thread reaches";
  }

 public:
  STRATA_EMU_NO_TSAN void set_where(const char* w) { fib_[cur_]->where = w; }

 private:
  STRATA_EMU_NO_TSAN void grow(int n) {
    while (static_cast<int>(fibers_.size()) < n) {
      auto f = std::make_unique<Fiber>();
      f->stack.reset(new char[kFiberStack]);
#if defined(STRATA_EMU_TSAN)
      f->tsan = __tsan_create_fiber(0);
#endif
      fibers_.push_back(std::move(f));
    }
    raw_.clear();
    for (auto& f : fibers_) raw_.push_back(f.get());
    fib_ = raw_.data();
  }

  STRATA_EMU_NO_TSAN void reset(int n, size_t shmem) {
    BlockState& b = state_;
    b.n = n;
    b.live = n;
    b.arrived = 0;
    b.pred_acc_count = 0;
    b.pred_acc_or = 0;
    b.pred_acc_and = 1;
    for (int wi = 0; wi < 32; ++wi) {
      WarpState& w = b.warps[wi];
      const int lanes = std::clamp(n - 32 * wi, 0, 32);
      w.live = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
      w.arrived = 0;
      w.op_mask = 0;
    }
    b.n_sites = 0;
    b.shm_used = 0;
    // Shared memory is not zero on a GPU: poison it (0xFF bytes read as NaN floats).
    std::memset(b.arena, 0xff, sizeof b.arena);
    if (shmem > b.dynamic_bytes) {
      b.dynamic.reset(new unsigned char[shmem + 16]);
      b.dynamic_bytes = shmem;
    }
    if (shmem > 0) std::memset(b.dynamic.get(), 0xff, shmem + 16);
    b.aborted = false;
    b.reason.clear();
    b.abort_error = cudaSuccess;
  }

  STRATA_EMU_NO_TSAN void thread_exit();

  std::vector<std::unique_ptr<Fiber>> fibers_;  // owns the fibers; grown only between blocks
  std::vector<Fiber*> raw_;
  Fiber** fib_ = nullptr;  // raw_.data(): what the uninstrumented bookkeeping indexes
  void* main_sp_ = nullptr;
  void* main_tsan_ = nullptr;
  const std::function<void()>* body_ = nullptr;
  BlockState state_;
  int done_ = 0;
  int cur_ = -1;
};

void fiber_main(BlockRunner* r, int tid) { BlockRunner::entry(r, tid); }

STRATA_EMU_NO_TSAN void block_release(BlockState& b) {
  b.result_count = b.pred_acc_count;
  b.result_or = b.pred_acc_or;
  b.result_and = b.pred_acc_and;
  b.pred_acc_count = 0;
  b.pred_acc_or = 0;
  b.pred_acc_and = 1;
  b.arrived = 0;
  ++b.gen;
  t_runner->wake_all();
}

STRATA_EMU_NO_TSAN void block_barrier(int pred, int* count, int* any, int* all) {
  BlockState& b = *t_block;
  if (b.aborted) throw BlockAbort{};
  const uint32_t my_gen = b.gen;
  hb_release(&b.hb[my_gen & 1]);
  b.pred_acc_count += pred != 0;
  b.pred_acc_or |= pred != 0;
  b.pred_acc_and &= pred != 0;
  if (++b.arrived == b.live) {
    block_release(b);
  } else {
    t_runner->set_where("__syncthreads");
    while (b.gen == my_gen) {
      t_runner->wait();
      if (b.aborted) throw BlockAbort{};
    }
  }
  hb_acquire(&b.hb[my_gen & 1]);
  if (count) *count = b.result_count;
  if (any) *any = b.result_or;
  if (all) *all = b.result_and;
}

STRATA_EMU_NO_TSAN void warp_release(int warp, WarpState& w) {
  w.participants[w.gen & 1] = w.arrived;
  const uint32_t lanes = w.arrived;
  w.arrived = 0;
  ++w.gen;
  t_runner->wake_warp(warp, lanes);
}

// One warp operation: publish `mine`, wait for the lanes of `mask` that are still live, then read
// the generation's slots.
struct WarpOpResult {
  uint32_t participants;
  const uint64_t* slots;
};

template <class Read>
STRATA_EMU_NO_TSAN auto warp_op(unsigned mask, uint64_t mine, const char* what, Read read) {
  BlockState& b = *t_block;
  if (b.aborted) throw BlockAbort{};
  const int warp = t_tid / 32, lane = t_tid % 32;
  WarpState& w = b.warps[warp];
  const uint32_t bit = 1u << lane;
  if ((mask & bit) == 0) {
    t_runner->abort_block(cudaErrorLaunchFailure, std::string(what) + ": lane " + std::to_string(lane) +
                                                      " calls it with a mask that excludes itself");
    throw BlockAbort{};
  }
  const uint32_t my_gen = w.gen;
  if (w.arrived == 0) {
    w.op_mask = mask;
  } else if (w.op_mask != mask) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s: warp %d lanes wait with masks 0x%08x and 0x%08x at once", what, warp,
                  w.op_mask, mask);
    t_runner->abort_block(cudaErrorLaunchFailure, buf);
    throw BlockAbort{};
  }
  w.slot[my_gen & 1][lane] = mine;
  hb_release(&w.hb[my_gen & 1]);
  w.arrived |= bit;
  const uint32_t need = mask & w.live;
  if ((w.arrived & need) == need) {
    warp_release(warp, w);
  } else {
    t_runner->set_where(what);
    while (w.gen == my_gen) {
      t_runner->wait();
      if (b.aborted) throw BlockAbort{};
    }
  }
  hb_acquire(&w.hb[my_gen & 1]);
  return read(WarpOpResult{w.participants[my_gen & 1], w.slot[my_gen & 1]}, lane);
}

// A CUDA thread returned: it leaves the block barrier and its warp's barriers.
STRATA_EMU_NO_TSAN void BlockRunner::thread_exit() {
  BlockState& b = state_;
  const int warp = t_tid / 32, lane = t_tid % 32;
  WarpState& w = b.warps[warp];
  w.live &= ~(1u << lane);
  const uint32_t need = w.op_mask & w.live;
  if (w.arrived != 0 && (w.arrived & need) == need) warp_release(warp, w);
  --b.live;
  if (b.arrived > 0 && b.arrived == b.live) block_release(b);
}

// ---- the block pool of a stream -------------------------------------------------------------

struct Launch {
  BlockBody body;
  dim3 grid, block;
  size_t shmem = 0;
  std::string name;
};

// Runs the blocks of a launch on the stream's worker and up to kHelpers helper threads, each
// taking the next block index until none is left.
class BlockPool {
 public:
  ~BlockPool() {
    for (auto& h : helpers_) {
      h->stop = true;
      h->go.release();
    }
    for (auto& h : helpers_) h->thread.join();
  }

  bool run(const Launch& l, std::string* why, cudaError_t* err) {
    const uint64_t blocks = uint64_t{l.grid.x} * l.grid.y * l.grid.z;
    const int helpers = static_cast<int>(std::min<uint64_t>(blocks - 1, helper_count()));
    while (static_cast<int>(helpers_.size()) < helpers) {
      auto h = std::make_unique<Helper>();
      Helper* raw = h.get();
      h->thread = std::thread([this, raw] {
        for (;;) {
          raw->go.acquire();
          if (raw->stop) return;
          work(raw->runner);
          raw->done.release();
        }
      });
      helpers_.push_back(std::move(h));
    }
    launch_ = &l;
    next_.store(0);
    blocks_ = blocks;
    failed_.store(false);
    failure_.clear();
    for (int i = 0; i < helpers; ++i) helpers_[i]->go.release();
    work(own_);
    for (int i = 0; i < helpers; ++i) helpers_[i]->done.acquire();
    if (failed_.load()) {
      std::lock_guard<std::mutex> lk(m_);
      *why = failure_;
      *err = failure_error_;
      return false;
    }
    return true;
  }

 private:
  struct Helper {
    std::thread thread;
    std::binary_semaphore go{0}, done{0};
    bool stop = false;
    BlockRunner runner;
  };

  static unsigned helper_count() {
    static const unsigned n = [] {
      const char* v = std::getenv("STRATA_CUDA_EMU_BLOCK_THREADS");  // OS threads per launch
      unsigned t = v != nullptr ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : 0;
      if (t == 0) t = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
      return t - 1;
    }();
    return n;
  }

  void work(BlockRunner& r) {
    const Launch& l = *launch_;
    for (;;) {
      if (failed_.load()) return;
      const uint64_t b = next_.fetch_add(1);
      if (b >= blocks_) return;
      const uint3 idx{static_cast<unsigned>(b % l.grid.x), static_cast<unsigned>((b / l.grid.x) % l.grid.y),
                      static_cast<unsigned>(b / (uint64_t{l.grid.x} * l.grid.y))};
      std::string why;
      cudaError_t err = cudaSuccess;
      if (!r.run(l.body, l.grid, l.block, idx, l.shmem, &why, &err)) {
        std::lock_guard<std::mutex> lk(m_);
        if (!failed_.load()) {
          char buf[96];
          std::snprintf(buf, sizeof buf, " (block %u,%u,%u)", idx.x, idx.y, idx.z);
          failure_ = why + buf;
          failure_error_ = err;
          failed_.store(true);
        }
        return;
      }
    }
  }

  std::vector<std::unique_ptr<Helper>> helpers_;
  BlockRunner own_;
  const Launch* launch_ = nullptr;
  std::atomic<uint64_t> next_{0};
  uint64_t blocks_ = 0;
  std::atomic<bool> failed_{false};
  std::mutex m_;
  std::string failure_;
  cudaError_t failure_error_ = cudaSuccess;
};

// ---- devices, streams, events -----------------------------------------------------------------

struct DeviceState;

}  // namespace

class Stream {
 public:
  Stream(int device, bool is_default) : device_(device), default_(is_default) {
    worker_ = std::thread([this] { loop(); });
  }
  ~Stream() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  int device() const { return device_; }
  bool is_default() const { return default_; }

  // `after` (optional) runs once the item counts as complete: an event record signals there, so
  // that a stream whose last item is a record queries idle once the event has completed.
  void push(std::function<void()> f, std::function<void()> after = nullptr) {
    {
      std::lock_guard<std::mutex> lk(m_);
      q_.push_back({std::move(f), std::move(after)});
      ++submitted_;
    }
    cv_.notify_all();
  }
  void synchronize() {
    std::unique_lock<std::mutex> lk(m_);
    const uint64_t target = submitted_;
    idle_cv_.wait(lk, [&] { return finished_ >= target; });  // events recorded on it have fired too
  }
  bool idle() {
    std::lock_guard<std::mutex> lk(m_);
    return completed_ == submitted_;
  }
  BlockPool& pool() { return pool_; }

 private:
  void loop() {
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;
        item = std::move(q_.front());
        q_.pop_front();
      }
      if (item.work) item.work();
      {
        std::lock_guard<std::mutex> lk(m_);
        ++completed_;
      }
      if (item.after) item.after();
      {
        std::lock_guard<std::mutex> lk(m_);
        ++finished_;
      }
      idle_cv_.notify_all();
    }
  }

  int device_;
  bool default_;
  std::mutex m_;
  std::condition_variable cv_, idle_cv_;
  struct Item {
    std::function<void()> work, after;
  };
  std::deque<Item> q_;
  uint64_t submitted_ = 0, completed_ = 0, finished_ = 0;  // completed: work done; finished: and its events
  bool stop_ = false;
  BlockPool pool_;
  std::thread worker_;
};

struct EventState {
  std::mutex m;
  std::condition_variable cv;
  uint64_t recorded = 0;   // records issued
  uint64_t completed = 0;  // the latest record that the stream reached
  Clock::time_point when{};
};

class Event {
 public:
  explicit Event(unsigned flags) : timing((flags & cudaEventDisableTiming) == 0), state(std::make_shared<EventState>()) {}
  bool timing;
  std::shared_ptr<EventState> state;
};

namespace {

struct Allocation {
  size_t bytes;      // as requested: a copy past them is an error even inside the rounding
  size_t charged;    // rounded up to 256 bytes, as the device's allocator does
  int device;        // -1: pinned host memory
};

struct DeviceState {
  size_t capacity = 0;
  std::atomic<size_t> used{0};
  std::atomic<int> sticky{cudaSuccess};
  std::mutex m;
  std::vector<Stream*> streams;  // every live stream of the device, the default one first
  Stream* default_stream = nullptr;
  std::vector<bool> peer_enabled;
};

struct Runtime {
  std::mutex m;  // devices' configuration, the allocation map
  bool configured = false;
  std::vector<std::unique_ptr<DeviceState>> devices;
  std::map<uintptr_t, Allocation> allocations;
  bool p2p = true;
};

Runtime& rt() {
  static Runtime* r = new Runtime;  // never destroyed: stream threads may outlive static destruction
  return *r;
}

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

// "2x24GiB", "24GiB,16GiB", "1x512MiB": device capacities.
std::vector<size_t> parse_devices(const char* spec) {
  std::vector<size_t> out;
  std::string s = spec == nullptr || *spec == 0 ? "1x24GiB" : spec;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? s.size() + 1 : comma + 1;
    if (item.empty()) continue;
    size_t count = 1;
    const size_t x = item.find('x');
    if (x != std::string::npos) {
      count = std::strtoull(item.substr(0, x).c_str(), nullptr, 10);
      item = item.substr(x + 1);
    }
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    const std::string unit = end;
    double mult = 1;
    if (unit == "GiB" || unit == "G" || unit == "GB") mult = 1024.0 * 1024 * 1024;
    else if (unit == "MiB" || unit == "M" || unit == "MB") mult = 1024.0 * 1024;
    else if (unit == "KiB" || unit == "K" || unit == "KB") mult = 1024.0;
    for (size_t i = 0; i < count && i < 64; ++i) out.push_back(static_cast<size_t>(v * mult));
  }
  return out;
}

Runtime& configured() {
  Runtime& r = rt();
  std::lock_guard<std::mutex> lk(r.m);
  if (!r.configured) {
    const std::vector<size_t> caps = parse_devices(std::getenv("STRATA_CUDA_EMU_DEVICES"));
    for (size_t c : caps) {
      auto d = std::make_unique<DeviceState>();
      d->capacity = c;
      d->peer_enabled.assign(caps.size(), false);
      r.devices.push_back(std::move(d));
    }
    const char* p2p = std::getenv("STRATA_CUDA_EMU_P2P");
    r.p2p = !(p2p != nullptr && std::strcmp(p2p, "0") == 0);
    r.configured = true;
  }
  return r;
}

int device_count() { return static_cast<int>(configured().devices.size()); }

DeviceState* device(int d) {
  Runtime& r = configured();
  if (d < 0 || d >= static_cast<int>(r.devices.size())) return nullptr;
  return r.devices[d].get();
}

Stream* default_stream(int d) {
  DeviceState* dev = device(d);
  if (dev == nullptr) return nullptr;
  std::lock_guard<std::mutex> lk(dev->m);
  if (dev->default_stream == nullptr) {
    dev->default_stream = new Stream(d, true);
    dev->streams.insert(dev->streams.begin(), dev->default_stream);
  }
  return dev->default_stream;
}

Stream* resolve(cudaStream_t s) { return s != nullptr ? s : default_stream(t_device); }

cudaError_t sticky(int d) {
  DeviceState* dev = device(d);
  return dev == nullptr ? cudaErrorInvalidDevice : static_cast<cudaError_t>(dev->sticky.load());
}

void sync_device(int d) {
  DeviceState* dev = device(d);
  if (dev == nullptr) return;
  std::vector<Stream*> streams;
  {
    std::lock_guard<std::mutex> lk(dev->m);
    streams = dev->streams;
  }
  for (Stream* s : streams) s->synchronize();
}

}  // namespace

// ---- kernel-side entry points ---------------------------------------------------------------

STRATA_EMU_NO_TSAN void* block_shared_bytes(const SharedSite* site, size_t bytes, size_t align) {
  BlockState& b = *t_block;
  for (int i = 0; i < b.n_sites; ++i)
    if (b.site_keys[i] == site) return b.arena + b.site_offsets[i];
  const size_t off = (b.shm_used + align - 1) / align * align;
  if (b.n_sites == BlockState::kMaxSites) {
    t_runner->abort_block(cudaErrorLaunchOutOfResources, "more than 64 __shared__ declarations in one kernel");
    throw BlockAbort{};
  }
  if (off + bytes > kStaticSharedBytes) {
    t_runner->abort_block(cudaErrorLaunchOutOfResources,
                          "static __shared__ memory over 48 KiB (" + std::to_string(off + bytes) + " bytes)");
    throw BlockAbort{};
  }
  b.site_keys[b.n_sites] = site;
  b.site_offsets[b.n_sites] = off;
  ++b.n_sites;
  b.shm_used = off + bytes;
  return b.arena + off;
}

STRATA_EMU_NO_TSAN void* block_dynamic_shared() {
  BlockState& b = *t_block;
  return b.dynamic ? reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(b.dynamic.get()) + 15) & ~uintptr_t{15})
                   : nullptr;
}

void syncthreads() { block_barrier(0, nullptr, nullptr, nullptr); }
int syncthreads_count(int pred) {
  int c = 0;
  block_barrier(pred, &c, nullptr, nullptr);
  return c;
}
int syncthreads_or(int pred) {
  int c = 0;
  block_barrier(pred, nullptr, &c, nullptr);
  return c;
}
int syncthreads_and(int pred) {
  int c = 0;
  block_barrier(pred, nullptr, nullptr, &c);
  return c;
}

void syncwarp(unsigned mask) {
  warp_op(mask, 0, "__syncwarp", [](const WarpOpResult&, int) { return 0; });
}

uint64_t warp_exchange(unsigned mask, uint64_t mine, Shfl kind, int arg, int width) {
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0) width = 32;
  return warp_op(mask, mine, "__shfl_sync", [&](const WarpOpResult& r, int lane) -> uint64_t {
    const int base = lane & ~(width - 1);
    int src = lane;
    switch (kind) {
      case Shfl::kIdx: src = base + (arg & (width - 1)); break;
      case Shfl::kUp: src = lane - arg < base ? lane : lane - arg; break;
      case Shfl::kDown: src = lane + arg >= base + width ? lane : lane + arg; break;
      case Shfl::kXor: {
        const int x = lane ^ arg;
        src = x < base || x >= base + width ? lane : x;
        break;
      }
    }
    // A source lane outside the exchange (not in the mask, or returned): the device's value is
    // undefined; the emulation gives the caller's own.
    if (src < 0 || src >= 32 || (r.participants & (1u << src)) == 0) return mine;
    return r.slots[src];
  });
}

unsigned warp_ballot(unsigned mask, int pred) {
  return warp_op(mask, pred != 0 ? 1 : 0, "__ballot_sync", [](const WarpOpResult& r, int) {
    unsigned out = 0;
    for (int l = 0; l < 32; ++l)
      if ((r.participants & (1u << l)) && r.slots[l] != 0) out |= 1u << l;
    return out;
  });
}

STRATA_EMU_NO_TSAN unsigned active_mask() { return t_block->warps[t_tid / 32].live; }

STRATA_EMU_NO_TSAN int lane_id() { return t_tid % 32; }

void enqueue_launch(BlockBody body, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream, const char* name) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535 ||
      shmem > kDynamicSharedBytes) {
    set_error(cudaErrorInvalidConfiguration);
    return;
  }
  Stream* s = resolve(stream);
  if (s == nullptr) {
    set_error(cudaErrorInvalidDevice);
    return;
  }
  const int dev = s->device();
  if (cudaError_t e = sticky(dev); e != cudaSuccess) {
    set_error(e);
    return;
  }
  auto l = std::make_shared<Launch>();
  l->body = std::move(body);
  l->grid = grid;
  l->block = block;
  l->shmem = shmem;
  l->name = name;
  static const bool trace = std::getenv("STRATA_CUDA_EMU_TRACE") != nullptr;
  s->push([s, l, dev] {
    if (sticky(dev) != cudaSuccess) return;  // a failed device runs nothing more
    const auto t0 = Clock::now();
    std::string why;
    cudaError_t err = cudaSuccess;
    if (!s->pool().run(*l, &why, &err)) {
      std::fprintf(stderr, "cuda emulation: kernel %s failed on device %d: %s\n", l->name.c_str(), dev, why.c_str());
      fail_device(dev, err);
    }
    if (trace)
      std::fprintf(stderr, "cuda emulation: device %d %s grid (%u,%u,%u) block (%u,%u,%u) shmem %zu: %.3f ms\n", dev,
                   l->name.c_str(), l->grid.x, l->grid.y, l->grid.z, l->block.x, l->block.y, l->block.z, l->shmem,
                   std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  });
}

cudaError_t enqueue_host_work(cudaStream_t stream, std::function<void()> work) {
  Stream* s = resolve(stream);
  if (s == nullptr) return cudaErrorInvalidDevice;
  const int dev = s->device();
  if (cudaError_t e = sticky(dev); e != cudaSuccess) return e;
  s->push([dev, w = std::move(work)] {
    if (sticky(dev) == cudaSuccess) w();
  });
  return cudaSuccess;
}

int stream_device(cudaStream_t stream) {
  Stream* s = resolve(stream);
  return s == nullptr ? -1 : s->device();
}

void fail_device(int d, cudaError_t err) {
  if (DeviceState* dev = device(d)) {
    int expected = cudaSuccess;
    dev->sticky.compare_exchange_strong(expected, err);
  }
}

bool is_device_range(const void* p, size_t bytes, int dev) {
  Runtime& r = configured();
  std::lock_guard<std::mutex> lk(r.m);
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = r.allocations.upper_bound(a);
  if (it == r.allocations.begin()) return false;
  --it;
  if (it->second.device < 0 || (dev >= 0 && it->second.device != dev)) return false;
  return a >= it->first && a + bytes <= it->first + it->second.bytes;
}

}  // namespace strata_emu

using namespace strata_emu;

namespace {

bool host_side(const void* p, size_t bytes) { return !is_device_range(p, bytes); }

// Checks the pointers of a copy against its kind: device sides must lie in a device allocation.
cudaError_t check_kind(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return cudaErrorInvalidValue;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return is_device_range(dst, bytes) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost:
      return is_device_range(src, bytes) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice:
      return is_device_range(src, bytes) && is_device_range(dst, bytes) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyHostToHost:
      return host_side(dst, bytes) && host_side(src, bytes) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDefault:
      return cudaSuccess;
  }
  return cudaErrorInvalidMemcpyDirection;
}

cudaError_t api_error(cudaError_t e) { return set_error(e); }

}  // namespace

// ---- errors -----------------------------------------------------------------------------------

cudaError_t cudaGetLastError() {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  if (e != cudaSuccess) return e;
  return cudaSuccess;
}
cudaError_t cudaPeekAtLastError() { return t_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define STRATA_EMU_NAME(x) \
  case x:                  \
    return #x;
    STRATA_EMU_NAME(cudaSuccess)
    STRATA_EMU_NAME(cudaErrorInvalidValue)
    STRATA_EMU_NAME(cudaErrorMemoryAllocation)
    STRATA_EMU_NAME(cudaErrorInitializationError)
    STRATA_EMU_NAME(cudaErrorInvalidConfiguration)
    STRATA_EMU_NAME(cudaErrorInvalidDevicePointer)
    STRATA_EMU_NAME(cudaErrorInvalidMemcpyDirection)
    STRATA_EMU_NAME(cudaErrorInsufficientDriver)
    STRATA_EMU_NAME(cudaErrorDevicesUnavailable)
    STRATA_EMU_NAME(cudaErrorNoDevice)
    STRATA_EMU_NAME(cudaErrorInvalidDevice)
    STRATA_EMU_NAME(cudaErrorECCUncorrectable)
    STRATA_EMU_NAME(cudaErrorNvlinkUncorrectable)
    STRATA_EMU_NAME(cudaErrorContained)
    STRATA_EMU_NAME(cudaErrorInvalidResourceHandle)
    STRATA_EMU_NAME(cudaErrorNotReady)
    STRATA_EMU_NAME(cudaErrorIllegalAddress)
    STRATA_EMU_NAME(cudaErrorLaunchOutOfResources)
    STRATA_EMU_NAME(cudaErrorLaunchTimeout)
    STRATA_EMU_NAME(cudaErrorPeerAccessAlreadyEnabled)
    STRATA_EMU_NAME(cudaErrorPeerAccessNotEnabled)
    STRATA_EMU_NAME(cudaErrorContextIsDestroyed)
    STRATA_EMU_NAME(cudaErrorAssert)
    STRATA_EMU_NAME(cudaErrorHardwareStackError)
    STRATA_EMU_NAME(cudaErrorIllegalInstruction)
    STRATA_EMU_NAME(cudaErrorMisalignedAddress)
    STRATA_EMU_NAME(cudaErrorInvalidAddressSpace)
    STRATA_EMU_NAME(cudaErrorInvalidPc)
    STRATA_EMU_NAME(cudaErrorLaunchFailure)
    STRATA_EMU_NAME(cudaErrorTensorMemoryLeak)
    STRATA_EMU_NAME(cudaErrorNotSupported)
    STRATA_EMU_NAME(cudaErrorMpsClientTerminated)
    STRATA_EMU_NAME(cudaErrorExternalDevice)
    STRATA_EMU_NAME(cudaErrorUnknown)
#undef STRATA_EMU_NAME
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorPeerAccessAlreadyEnabled: return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled: return "peer access has not been enabled";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    default: return cudaGetErrorName(e);
  }
}

// ---- versions and devices ---------------------------------------------------------------------

cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == nullptr) return api_error(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  if (v == nullptr) return api_error(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* n) {
  if (n == nullptr) return api_error(cudaErrorInvalidValue);
  *n = device_count();
  return *n == 0 ? api_error(cudaErrorNoDevice) : cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= device_count()) return api_error(cudaErrorInvalidDevice);
  t_device = d;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  if (d == nullptr) return api_error(cudaErrorInvalidValue);
  *d = t_device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  DeviceState* dev = device(d);
  if (p == nullptr) return api_error(cudaErrorInvalidValue);
  if (dev == nullptr) return api_error(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "NVIDIA H200 (emulated)");  // what `strata-engine devices` shows
  p->totalGlobalMem = dev->capacity;
  p->sharedMemPerBlock = kStaticSharedBytes;
  p->sharedMemPerBlockOptin = kDynamicSharedBytes;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->multiProcessorCount = 132;
  p->major = 9;
  p->minor = 0;
  p->memoryBusWidth = 6144;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->unifiedAddressing = 1;
  p->pciBusID = d + 1;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int d) {
  if (value == nullptr) return api_error(cudaErrorInvalidValue);
  if (device(d) == nullptr) return api_error(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrClockRate: *value = 1980000; break;         // kHz
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrMemoryClockRate: *value = 3201000; break;   // kHz: 4.8 TB/s at 6144 bits
    case cudaDevAttrGlobalMemoryBusWidth: *value = 6144; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    default: return api_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() {
  sync_device(t_device);
  return api_error(sticky(t_device));
}
cudaError_t cudaDeviceReset() {
  sync_device(t_device);
  if (DeviceState* dev = device(t_device)) dev->sticky.store(cudaSuccess);
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  if (can == nullptr) return api_error(cudaErrorInvalidValue);
  if (device(d) == nullptr || device(peer) == nullptr) return api_error(cudaErrorInvalidDevice);
  *can = d != peer && configured().p2p ? 1 : 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  DeviceState* dev = device(t_device);
  if (flags != 0) return api_error(cudaErrorInvalidValue);
  if (dev == nullptr || device(peer) == nullptr || peer == t_device || !configured().p2p)
    return api_error(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lk(dev->m);
  if (dev->peer_enabled[peer]) return api_error(cudaErrorPeerAccessAlreadyEnabled);
  dev->peer_enabled[peer] = true;
  return cudaSuccess;
}
cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  DeviceState* dev = device(t_device);
  if (dev == nullptr || device(peer) == nullptr) return api_error(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lk(dev->m);
  if (!dev->peer_enabled[peer]) return api_error(cudaErrorPeerAccessNotEnabled);
  dev->peer_enabled[peer] = false;
  return cudaSuccess;
}

// ---- memory -------------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (p == nullptr) return api_error(cudaErrorInvalidValue);
  DeviceState* dev = device(t_device);
  if (dev == nullptr) return api_error(cudaErrorInvalidDevice);
  if (cudaError_t e = sticky(t_device); e != cudaSuccess) return api_error(e);
  const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  size_t used = dev->used.load();
  do {
    if (used + rounded > dev->capacity) return api_error(cudaErrorMemoryAllocation);
  } while (!dev->used.compare_exchange_weak(used, used + rounded));
  void* mem = std::aligned_alloc(256, rounded);
  if (mem == nullptr) {
    dev->used.fetch_sub(rounded);
    return api_error(cudaErrorMemoryAllocation);
  }
  // Fresh device memory is not zero on a GPU: poison it (0xFF bytes read as NaN floats and f16s)
  // so a kernel that reads what nobody wrote gives a visibly wrong result.
  if (rounded <= kPoisonLimit) std::memset(mem, 0xff, rounded);
  {
    Runtime& r = configured();
    std::lock_guard<std::mutex> lk(r.m);
    r.allocations[reinterpret_cast<uintptr_t>(mem)] = Allocation{bytes, rounded, t_device};
  }
  *p = mem;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  Runtime& r = configured();
  Allocation a{};
  {
    std::lock_guard<std::mutex> lk(r.m);
    auto it = r.allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == r.allocations.end() || it->second.device < 0) return api_error(cudaErrorInvalidValue);
    a = it->second;
    r.allocations.erase(it);
  }
  // cudaFree synchronizes the device: no kernel still uses the memory.
  sync_device(a.device);
  device(a.device)->used.fetch_sub(a.charged);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  DeviceState* dev = device(t_device);
  if (dev == nullptr) return api_error(cudaErrorInvalidDevice);
  if (free_bytes == nullptr || total_bytes == nullptr) return api_error(cudaErrorInvalidValue);
  const size_t used = dev->used.load();
  *total_bytes = dev->capacity;
  *free_bytes = used < dev->capacity ? dev->capacity - used : 0;
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int flags) {
  if (p == nullptr) return api_error(cudaErrorInvalidValue);
  (void)flags;  // pinned memory is plain host memory here
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void* mem = std::aligned_alloc(64, rounded);
  if (mem == nullptr) return api_error(cudaErrorMemoryAllocation);
  Runtime& r = configured();
  std::lock_guard<std::mutex> lk(r.m);
  r.allocations[reinterpret_cast<uintptr_t>(mem)] = Allocation{bytes, rounded, -1};
  *p = mem;
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocDefault); }
cudaError_t cudaFreeHost(void* p) {
  if (p == nullptr) return cudaSuccess;
  Runtime& r = configured();
  {
    std::lock_guard<std::mutex> lk(r.m);
    auto it = r.allocations.find(reinterpret_cast<uintptr_t>(p));
    if (it == r.allocations.end() || it->second.device >= 0) return api_error(cudaErrorInvalidValue);
    r.allocations.erase(it);
  }
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (cudaError_t e = check_kind(dst, src, bytes, kind); e != cudaSuccess) return api_error(e);
  if (bytes == 0) return cudaSuccess;
  return api_error(enqueue_host_work(stream, [dst, src, bytes] { std::memmove(dst, src, bytes); }));
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (cudaError_t e = check_kind(dst, src, bytes, kind); e != cudaSuccess) return api_error(e);
  // The legacy default stream: waits for the device's other work first.
  sync_device(t_device);
  if (cudaError_t e = sticky(t_device); e != cudaSuccess) return api_error(e);
  if (bytes != 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  if (width > dpitch || width > spitch) return api_error(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  const size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
  if (cudaError_t e = check_kind(dst, src, std::min(dspan, sspan), kind); e != cudaSuccess) return api_error(e);
  if ((kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice) && !is_device_range(dst, dspan))
    return api_error(cudaErrorInvalidValue);
  if ((kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice) && !is_device_range(src, sspan))
    return api_error(cudaErrorInvalidValue);
  return api_error(enqueue_host_work(stream, [=] {
    for (size_t r = 0; r < height; ++r)
      std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  }));
}

cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  sync_device(t_device);
  const cudaError_t e = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, nullptr);
  if (e != cudaSuccess) return e;
  default_stream(t_device)->synchronize();
  return api_error(sticky(t_device));
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes,
                                cudaStream_t stream) {
  if (device(dst_dev) == nullptr || device(src_dev) == nullptr) return api_error(cudaErrorInvalidDevice);
  if (bytes == 0) return cudaSuccess;
  if (!is_device_range(dst, bytes, dst_dev) || !is_device_range(src, bytes, src_dev))
    return api_error(cudaErrorInvalidValue);
  return api_error(enqueue_host_work(stream, [dst, src, bytes] { std::memmove(dst, src, bytes); }));
}

cudaError_t cudaMemcpyPeer(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes) {
  sync_device(src_dev);
  sync_device(dst_dev);
  const cudaError_t e = cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, nullptr);
  if (e != cudaSuccess) return e;
  default_stream(t_device)->synchronize();
  return api_error(sticky(t_device));
}

cudaError_t cudaMemcpy3DPeerAsync(const cudaMemcpy3DPeerParms* p, cudaStream_t stream) {
  if (p == nullptr || p->srcArray != nullptr || p->dstArray != nullptr) return api_error(cudaErrorInvalidValue);
  if (device(p->srcDevice) == nullptr || device(p->dstDevice) == nullptr) return api_error(cudaErrorInvalidDevice);
  const cudaExtent e = p->extent;
  if (e.width == 0 || e.height == 0 || e.depth == 0) return cudaSuccess;
  const cudaPitchedPtr s = p->srcPtr, d = p->dstPtr;
  if (e.width > s.pitch || e.width > d.pitch) return api_error(cudaErrorInvalidValue);
  const size_t s_rows = s.ysize == 0 ? e.height : s.ysize, d_rows = d.ysize == 0 ? e.height : d.ysize;
  char* sp = static_cast<char*>(s.ptr) + (p->srcPos.z * s_rows + p->srcPos.y) * s.pitch + p->srcPos.x;
  char* dp = static_cast<char*>(d.ptr) + (p->dstPos.z * d_rows + p->dstPos.y) * d.pitch + p->dstPos.x;
  const size_t s_span = ((e.depth - 1) * s_rows + (e.height - 1)) * s.pitch + e.width;
  const size_t d_span = ((e.depth - 1) * d_rows + (e.height - 1)) * d.pitch + e.width;
  if (!is_device_range(sp, s_span, p->srcDevice) || !is_device_range(dp, d_span, p->dstDevice))
    return api_error(cudaErrorInvalidValue);
  return api_error(enqueue_host_work(stream, [=] {
    for (size_t z = 0; z < e.depth; ++z)
      for (size_t y = 0; y < e.height; ++y)
        std::memmove(dp + (z * d_rows + y) * d.pitch, sp + (z * s_rows + y) * s.pitch, e.width);
  }));
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (!is_device_range(p, bytes)) return api_error(cudaErrorInvalidValue);
  return api_error(enqueue_host_work(stream, [p, value, bytes] { std::memset(p, value, bytes); }));
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  sync_device(t_device);
  const cudaError_t e = cudaMemsetAsync(p, value, bytes, nullptr);
  if (e != cudaSuccess) return e;
  default_stream(t_device)->synchronize();
  return api_error(sticky(t_device));
}

// ---- streams and events -------------------------------------------------------------------------

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  if (s == nullptr || flags > cudaStreamNonBlocking) return api_error(cudaErrorInvalidValue);
  DeviceState* dev = device(t_device);
  if (dev == nullptr) return api_error(cudaErrorInvalidDevice);
  auto* st = new Stream(t_device, false);
  {
    std::lock_guard<std::mutex> lk(dev->m);
    dev->streams.push_back(st);
  }
  *s = st;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (s == nullptr || s->is_default()) return api_error(cudaErrorInvalidResourceHandle);
  DeviceState* dev = device(s->device());
  {
    std::lock_guard<std::mutex> lk(dev->m);
    auto it = std::find(dev->streams.begin(), dev->streams.end(), s);
    if (it == dev->streams.end()) return api_error(cudaErrorInvalidResourceHandle);
    dev->streams.erase(it);
  }
  s->synchronize();  // its work completes first, as CUDA lets it
  delete s;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  Stream* st = resolve(s);
  if (st == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  st->synchronize();
  return api_error(sticky(st->device()));
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
  Stream* st = resolve(s);
  if (st == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = sticky(st->device()); e != cudaSuccess) return api_error(e);
  return st->idle() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  if (fn == nullptr) return api_error(cudaErrorInvalidValue);
  if (s != nullptr && resolve(s) == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  return strata_emu::enqueue_host_work(s, [fn, data] { fn(data); });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  if (e == nullptr || flags != 0) return api_error(cudaErrorInvalidResourceHandle);
  std::shared_ptr<EventState> st = e->state;
  uint64_t target;
  {
    std::lock_guard<std::mutex> lk(st->m);
    target = st->recorded;
  }
  if (target == 0) return cudaSuccess;  // never recorded: nothing to wait for
  Stream* str = resolve(s);
  if (str == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  // The wait runs on the stream even when its device has failed, so later waits never hang.
  str->push([st, target] {
    std::unique_lock<std::mutex> lk(st->m);
    st->cv.wait(lk, [&] { return st->completed >= target; });
  });
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (e == nullptr) return api_error(cudaErrorInvalidValue);
  *e = new Event(flags);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (e == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  delete e;  // queued records and waits hold the state
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (e == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  Stream* str = resolve(s);
  if (str == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  std::shared_ptr<EventState> st = e->state;
  uint64_t r;
  {
    std::lock_guard<std::mutex> lk(st->m);
    r = ++st->recorded;
  }
  // Runs even on a failed device, so that nobody waits forever on it.
  str->push(nullptr, [st, r] {
    {
      std::lock_guard<std::mutex> lk(st->m);
      if (r > st->completed) {
        st->completed = r;
        st->when = Clock::now();
      }
    }
    st->cv.notify_all();
  });
  return api_error(sticky(str->device()));
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (e == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  std::shared_ptr<EventState> st = e->state;
  std::unique_lock<std::mutex> lk(st->m);
  const uint64_t target = st->recorded;
  st->cv.wait(lk, [&] { return st->completed >= target; });
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (e == nullptr) return api_error(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lk(e->state->m);
  return e->state->completed >= e->state->recorded ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr || start == nullptr || end == nullptr) return api_error(cudaErrorInvalidValue);
  if (!start->timing || !end->timing) return api_error(cudaErrorInvalidResourceHandle);
  Clock::time_point a, b;
  {
    std::lock_guard<std::mutex> lk(start->state->m);
    if (start->state->recorded == 0) return api_error(cudaErrorInvalidResourceHandle);
    if (start->state->completed < start->state->recorded) return api_error(cudaErrorNotReady);
    a = start->state->when;
  }
  {
    std::lock_guard<std::mutex> lk(end->state->m);
    if (end->state->recorded == 0) return api_error(cudaErrorInvalidResourceHandle);
    if (end->state->completed < end->state->recorded) return api_error(cudaErrorNotReady);
    b = end->state->when;
  }
  *ms = std::chrono::duration<float, std::milli>(b - a).count();
  return cudaSuccess;
}

// The C entry of a new fiber (called from strata_emu_fiber_start, with the runner and the thread).
extern "C" void strata_emu_fiber_main(void* runner, long tid) {
  strata_emu::fiber_main(static_cast<strata_emu::BlockRunner*>(runner), static_cast<int>(tid));
}
