// tests/cuda_emu/include/strata_emu.h — the emulated GPU (tests only): what a kernel sees. CUDA's
// qualifiers as macros, threadIdx / blockIdx / blockDim / gridDim as thread-locals, block and warp
// barriers, warp exchanges, per-block __shared__ memory, and the launch that the preprocessing
// step (cuda_emu_rewrite.py) writes in place of `kernel<<<grid, block, shmem, stream>>>(args)`.
// Depends on the C++ standard library only; the runtime behind it is emu_runtime.cpp.
#pragma once

#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "strata_emu_types.h"

// ---- qualifiers -------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __constant__ static
#define __managed__
// __shared__ declarations are rewritten by cuda_emu_rewrite.py (STRATA_EMU_SHARED below); one
// that reaches the compiler unrewritten is an error, not a silently process-wide variable.
#define __shared__ static_assert(false, "__shared__ must be rewritten by tests/cuda_emu/cuda_emu_rewrite.py");

extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
constexpr int warpSize = 32;

namespace strata_emu {

// ---- per-block shared memory --------------------------------------------------------------
// A `__shared__ T name[N]...;` in a kernel becomes a reference into the running block's arena.
// Each declaration site owns one SharedSite (a function-local static, so one per template
// instantiation); the block places each site it meets at the next free, aligned offset.
struct SharedSite {
  int unused = 0;
};
void* block_shared_bytes(const SharedSite* site, size_t bytes, size_t align);
void* block_dynamic_shared();  // extern __shared__: the launch's dynamic bytes, 16-aligned

template <class T, size_t Align = alignof(T)>
inline T& block_shared(const SharedSite& site) {
  static_assert(std::is_trivially_destructible_v<T>, "__shared__ of a trivial type");
  return *static_cast<T*>(block_shared_bytes(&site, sizeof(T), Align > alignof(T) ? Align : alignof(T)));
}

// ---- barriers and warp exchanges (the calling CUDA thread's block / warp) ---------------------
void syncthreads();
int syncthreads_count(int pred);
int syncthreads_or(int pred);
int syncthreads_and(int pred);
void syncwarp(unsigned mask);
// Every lane of `mask` publishes `mine` and gets the value of lane src(lane); lanes whose source is
// outside [0, 32) or not in the exchange get their own value. Returns the exchanged bits.
enum class Shfl { kIdx, kUp, kDown, kXor };
uint64_t warp_exchange(unsigned mask, uint64_t mine, Shfl kind, int arg, int width);
unsigned warp_ballot(unsigned mask, int pred);
unsigned active_mask();
int lane_id();

// ---- launch -----------------------------------------------------------------------------------
using BlockBody = std::function<void()>;
// Queues a launch on `stream` (null: the current device's default stream). Sets the calling
// thread's last error on an invalid configuration, as a real launch does.
void enqueue_launch(BlockBody body, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream, const char* name);

template <class... P, class... A>
void launch(void (*kernel)(P...), const char* name, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
            A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
  // The arguments are copied at the launch, as CUDA copies them into the launch's parameter space.
  auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
  enqueue_launch([kernel, params] { std::apply(kernel, *params); }, grid, block, shmem, stream, name);
}
template <class... P, class... A>
void launch(void (*kernel)(P...), const char* name, dim3 grid, dim3 block, size_t shmem, int stream, A&&... args) {
  launch(kernel, name, grid, block, shmem, static_cast<cudaStream_t>(nullptr), std::forward<A>(args)...);
  (void)stream;  // a literal 0: the default stream
}

template <class T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp exchanges move at most 8 bytes");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T>
inline T from_bits(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

}  // namespace strata_emu

#define STRATA_EMU_SHARED(name, type_with_dims, align)                                   \
  static const ::strata_emu::SharedSite strata_emu_site_##name{};                      \
  auto& name = ::strata_emu::block_shared<type_with_dims, align>(strata_emu_site_##name)
#define STRATA_EMU_EXTERN_SHARED(name, elem_type) \
  elem_type* const name = static_cast<elem_type*>(::strata_emu::block_dynamic_shared())

// ---- kernel-side intrinsics -------------------------------------------------------------------
inline void __syncthreads() { strata_emu::syncthreads(); }
inline int __syncthreads_count(int p) { return strata_emu::syncthreads_count(p); }
inline int __syncthreads_or(int p) { return strata_emu::syncthreads_or(p); }
inline int __syncthreads_and(int p) { return strata_emu::syncthreads_and(p); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { strata_emu::syncwarp(mask); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return strata_emu::from_bits<T>(strata_emu::warp_exchange(mask, strata_emu::to_bits(v), strata_emu::Shfl::kIdx, src, width));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return strata_emu::from_bits<T>(strata_emu::warp_exchange(mask, strata_emu::to_bits(v), strata_emu::Shfl::kUp, static_cast<int>(d), width));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return strata_emu::from_bits<T>(strata_emu::warp_exchange(mask, strata_emu::to_bits(v), strata_emu::Shfl::kDown, static_cast<int>(d), width));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return strata_emu::from_bits<T>(strata_emu::warp_exchange(mask, strata_emu::to_bits(v), strata_emu::Shfl::kXor, lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int pred) { return strata_emu::warp_ballot(mask, pred); }
inline int __any_sync(unsigned mask, int pred) { return strata_emu::warp_ballot(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) {
  return (strata_emu::warp_ballot(mask, pred) & mask & strata_emu::active_mask()) ==
         (mask & strata_emu::active_mask());
}
inline unsigned __activemask() { return strata_emu::active_mask(); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
inline int __ffs(int v) { return __builtin_ffs(v); }

// Read-only cache loads are plain loads here.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// Bit casts.
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
inline unsigned __float_as_uint(float f) { return std::bit_cast<unsigned>(f); }
inline float __int_as_float(int u) { return std::bit_cast<float>(u); }
inline int __float_as_int(float f) { return std::bit_cast<int>(f); }

// Correctly rounded single operations (the emulation is compiled with -ffp-contract=off, so these
// are never fused into FMAs, which is the guarantee the _rn forms give on the device).
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
// The fast-math intrinsics: the device approximates them (about 2 ulp); the host's correctly
// rounded-ish libm is within that, so a test tolerance set for the device holds here too.
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline void sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline void sincos(double x, double* s, double* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
// fmaxf, fminf, expf, exp2f, sqrtf, tanhf, ... come from <cmath> (global namespace in glibc).

// Atomics on plain memory: real atomic read-modify-writes (GCC builtins work on any aligned
// object, so kernels keep their plain `float*` / `int*` pointers).
template <class T>
inline T strata_emu_atomic_add(T* p, T v) {
  if constexpr (std::is_integral_v<T>) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T desired;
    do {
      desired = old + v;
    } while (!__atomic_compare_exchange(p, &old, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
  }
}
inline int atomicAdd(int* p, int v) { return strata_emu_atomic_add(p, v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return strata_emu_atomic_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return strata_emu_atomic_add(p, v); }
inline float atomicAdd(float* p, float v) { return strata_emu_atomic_add(p, v); }
inline double atomicAdd(double* p, double v) { return strata_emu_atomic_add(p, v); }
inline int atomicSub(int* p, int v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicSub(unsigned* p, unsigned v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicExch(unsigned* p, unsigned v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
template <class T, class Pick>
inline T strata_emu_atomic_pick(T* p, T v, Pick pick) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, pick(old, v), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
inline int atomicMax(int* p, int v) { return strata_emu_atomic_pick(p, v, [](int a, int b) { return a > b ? a : b; }); }
inline unsigned atomicMax(unsigned* p, unsigned v) {
  return strata_emu_atomic_pick(p, v, [](unsigned a, unsigned b) { return a > b ? a : b; });
}
inline int atomicMin(int* p, int v) { return strata_emu_atomic_pick(p, v, [](int a, int b) { return a < b ? a : b; }); }
inline unsigned atomicMin(unsigned* p, unsigned v) {
  return strata_emu_atomic_pick(p, v, [](unsigned a, unsigned b) { return a < b ? a : b; });
}
inline int atomicOr(int* p, int v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
inline int atomicAnd(int* p, int v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
inline unsigned atomicAnd(unsigned* p, unsigned v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
inline int atomicCAS(int* p, int cmp, int v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp;
}
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return cmp;
}
