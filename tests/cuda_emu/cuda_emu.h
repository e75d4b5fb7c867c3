// CUDA-on-CPU shim: lets an NVRTC-style .cu source (no host headers) compile with g++
// -std=c++20 and run on the CPU.  Test-only (tests/cuda_emu); see fake_cupy.py.
//
// Model: one block at a time; a block is blockDim.x*y*z fibers (ucontext) on the calling
// OS thread, each running until it reaches a barrier or returns, so __syncthreads() is a
// real barrier: it completes when every thread that has not exited reached it.  (One OS
// thread per CUDA thread with std::barrier cost the suite ~4 minutes of futex wake-ups on
// two cores.)  The runnable fibers are resumed in thread order and in reverse thread
// order on alternate rounds, so a missing barrier between a write and another thread's
// read shows in either direction.  __shared__ variables are function statics (one block
// runs at a time) in a section of their own, filled with 0xA5 bytes at every block start
// as dynamic shared memory is.  Atomics are std::atomic_ref.  Every __syncthreads() call
// site is recorded (__COUNTER__) so that a barrier reached from two different call sites
// in one phase (divergent __syncthreads, undefined behaviour in CUDA) is reported as a
// launch error.  (One call site reached by different iterations is not detected.)  Threads
// waiting at barriers that can never complete (a deadlock on a GPU) are a launch error.
// Warps: __shfl_sync / __shfl_xor_sync with a full mask are an exchange between the
// warp's 32 threads (a per-warp barrier on each side); a partial mask, or reading a lane
// that has exited, is reported as a launch error.  Not modelled: lock-step execution,
// other warp intrinsics, concurrency inside a block (a thread spinning on another's
// write without a barrier would hang), CUDA's weak memory model, concurrent blocks (a
// kernel relying on inter-block progress would hang), resource limits other than block
// size / grid size / dynamic shared memory; each fiber has a 1 MiB stack with a guard
// page below it.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <ucontext.h>

// ------------------------------------------------------------------ qualifiers
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
// __shared__ variables: statics in their own section, which every block start fills with
// 0xA5 (shared memory starts undefined; the linker defines the section's bounds)
#define __shared__ __attribute__((section("emu_shared"))) static
#define __constant__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// __restrict__ is a g++ keyword already.

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x = 1, y = 1, z = 1; };

inline thread_local uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
constexpr int warpSize = 32;

namespace emu {
inline unsigned char* dyn_smem = nullptr;   // extern __shared__ arrays point here
extern "C" unsigned char __start_emu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" unsigned char __stop_emu_shared[] __attribute__((weak, visibility("hidden")));

struct Block {
  unsigned nthreads = 0;
  std::vector<int> site;                    // __syncthreads call site per thread, -1 exited
  std::vector<int> line;                    // its source line (for the message)
  std::string error;
  std::vector<uint64_t> xchg;               // a shuffle's values, by thread
  std::vector<char> exited;
  // fibers: what each thread waits for (kRun: nothing, it can be resumed)
  enum Wait : char { kRun, kBlock, kWarp };
  std::vector<Wait> wait;
  std::vector<ucontext_t> ctx;              // one per fiber; lin_tid is the running one
  ucontext_t sched;                         // the launching thread's context
  std::function<void()> body;               // the kernel with its arguments
  void fail(const std::string& msg) {
    if (error.empty()) error = msg;
  }
};
inline Block* cur_block = nullptr;
inline thread_local unsigned lin_tid = 0;

inline void barrier_check() {               // completion step of each __syncthreads phase
  Block* b = cur_block;
  int first = -2;
  for (unsigned t = 0; t < b->nthreads; ++t) {
    int s = b->site[t];
    if (s < 0) continue;
    if (first == -2) first = (int)t;
    else if (s != b->site[first] && b->error.empty()) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "divergent __syncthreads: block (%u,%u,%u) threads reached lines %d and %d",
                    blockIdx.x, blockIdx.y, blockIdx.z, b->line[first], b->line[t]);
      b->error = buf;
    }
  }
}

// The running fiber waits for w; back to the scheduler until the barrier completes.
inline void wait_at(Block::Wait w) {
  Block* b = cur_block;
  b->wait[lin_tid] = w;
  swapcontext(&b->ctx[lin_tid], &b->sched);
}

inline void syncthreads(int site, int line) {
  Block* b = cur_block;
  b->site[lin_tid] = site;
  b->line[lin_tid] = line;
  wait_at(Block::kBlock);
}
}  // namespace emu

#define __syncthreads() ::emu::syncthreads(__COUNTER__, __LINE__)

namespace emu {
template <typename V>
inline V shfl(unsigned mask, V v, int src_lane) {
  static_assert(sizeof(V) <= 8, "emulated shuffles move up to 8 bytes");
  Block* b = cur_block;
  const unsigned warp = lin_tid / 32, first = warp * 32;
  if (mask != 0xffffffffu) b->fail("__shfl_sync with a partial mask (not emulated)");
  std::memcpy(&b->xchg[lin_tid], &v, sizeof(V));
  wait_at(Block::kWarp);
  const unsigned src = first + ((unsigned)src_lane & 31u);
  V out = v;
  if (src >= b->nthreads || b->exited[src]) b->fail("__shfl_sync reads a lane that has exited");
  else std::memcpy(&out, &b->xchg[src], sizeof(V));
  wait_at(Block::kWarp);
  return out;
}
}  // namespace emu
template <typename V>
inline V __shfl_sync(unsigned mask, V v, int src_lane, int width = 32) {
  (void)width;
  return ::emu::shfl(mask, v, (int)(::emu::lin_tid % 32 / width * width) + src_lane % width);
}
template <typename V>
inline V __shfl_xor_sync(unsigned mask, V v, int lane_mask, int width = 32) {
  (void)width;
  return ::emu::shfl(mask, v, (int)(::emu::lin_tid % 32) ^ lane_mask);
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ------------------------------------------------------------------ atomics
// Exactly CUDA's overload set (so that a call NVRTC would reject does not compile here).
#define EMU_ATOMIC_RMW(NAME, TYPE, EXPR)                                   \
  inline TYPE NAME(TYPE* a, TYPE v) {                                      \
    std::atomic_ref<TYPE> r(*a);                                           \
    TYPE old = r.load();                                                   \
    while (!r.compare_exchange_weak(old, (EXPR))) {}                       \
    return old;                                                            \
  }
EMU_ATOMIC_RMW(atomicAdd, int, old + v)
EMU_ATOMIC_RMW(atomicAdd, unsigned int, old + v)
EMU_ATOMIC_RMW(atomicAdd, unsigned long long, old + v)
EMU_ATOMIC_RMW(atomicAdd, float, old + v)
EMU_ATOMIC_RMW(atomicAdd, double, old + v)
EMU_ATOMIC_RMW(atomicSub, int, old - v)
EMU_ATOMIC_RMW(atomicSub, unsigned int, old - v)
EMU_ATOMIC_RMW(atomicMax, int, old < v ? v : old)
EMU_ATOMIC_RMW(atomicMax, unsigned int, old < v ? v : old)
EMU_ATOMIC_RMW(atomicMax, long long, old < v ? v : old)
EMU_ATOMIC_RMW(atomicMax, unsigned long long, old < v ? v : old)
EMU_ATOMIC_RMW(atomicMin, int, v < old ? v : old)
EMU_ATOMIC_RMW(atomicMin, unsigned int, v < old ? v : old)
EMU_ATOMIC_RMW(atomicMin, long long, v < old ? v : old)
EMU_ATOMIC_RMW(atomicMin, unsigned long long, v < old ? v : old)
EMU_ATOMIC_RMW(atomicExch, int, v)
EMU_ATOMIC_RMW(atomicExch, unsigned int, v)
EMU_ATOMIC_RMW(atomicExch, unsigned long long, v)
EMU_ATOMIC_RMW(atomicExch, float, v)
EMU_ATOMIC_RMW(atomicOr, int, old | v)
EMU_ATOMIC_RMW(atomicOr, unsigned int, old | v)
EMU_ATOMIC_RMW(atomicOr, unsigned long long, old | v)
EMU_ATOMIC_RMW(atomicAnd, int, old & v)
EMU_ATOMIC_RMW(atomicAnd, unsigned int, old & v)
EMU_ATOMIC_RMW(atomicAnd, unsigned long long, old & v)
EMU_ATOMIC_RMW(atomicXor, int, old ^ v)
EMU_ATOMIC_RMW(atomicXor, unsigned int, old ^ v)
EMU_ATOMIC_RMW(atomicXor, unsigned long long, old ^ v)
#undef EMU_ATOMIC_RMW

#define EMU_ATOMIC_CAS(TYPE)                                               \
  inline TYPE atomicCAS(TYPE* a, TYPE cmp, TYPE v) {                       \
    std::atomic_ref<TYPE> r(*a);                                           \
    r.compare_exchange_strong(cmp, v);                                     \
    return cmp;                                                            \
  }
EMU_ATOMIC_CAS(int)
EMU_ATOMIC_CAS(unsigned int)
EMU_ATOMIC_CAS(unsigned long long)
EMU_ATOMIC_CAS(unsigned short)
#undef EMU_ATOMIC_CAS

// ------------------------------------------------------------------ intrinsics
// The _rn arithmetic goes through an empty asm so that g++ (which this harness runs
// with -mfma -ffp-contract=fast, like NVRTC's default --fmad=true) cannot fuse it.
template <typename F> inline F emu_opaque(F v) { asm volatile("" : "+x"(v)); return v; }
inline float __fadd_rn(float a, float b) { return emu_opaque(a + b); }
inline float __fsub_rn(float a, float b) { return emu_opaque(a - b); }
inline float __fmul_rn(float a, float b) { return emu_opaque(a * b); }
inline float __fdiv_rn(float a, float b) { return emu_opaque(a / b); }
inline double __dadd_rn(double a, double b) { return emu_opaque(a + b); }
inline double __dsub_rn(double a, double b) { return emu_opaque(a - b); }
inline double __dmul_rn(double a, double b) { return emu_opaque(a * b); }
inline double __ddiv_rn(double a, double b) { return emu_opaque(a / b); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }

inline unsigned int __float_as_uint(float v) { return std::bit_cast<unsigned int>(v); }
inline int __float_as_int(float v) { return std::bit_cast<int>(v); }
inline float __uint_as_float(unsigned int v) { return std::bit_cast<float>(v); }
inline float __int_as_float(int v) { return std::bit_cast<float>(v); }
inline long long __double_as_longlong(double v) { return std::bit_cast<long long>(v); }
inline double __longlong_as_double(long long v) { return std::bit_cast<double>(v); }

inline int __popc(unsigned int v) { return std::popcount(v); }
inline int __popcll(unsigned long long v) { return std::popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline int __clz(int v) { return std::countl_zero((unsigned int)v); }
inline int __clzll(long long v) { return std::countl_zero((unsigned long long)v); }
inline unsigned int __brev(unsigned int v) {
  unsigned int r = 0;
  for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
  return r;
}

// CUDA's device math library lives in the global namespace (ceil, floor, fminf, ...):
// <cmath> from glibc provides those.  min/max: CUDA has overloads for each type pair;
// the common same-type ones are enough here.
#define EMU_MINMAX(TYPE)                                                   \
  inline TYPE min(TYPE a, TYPE b) { return b < a ? b : a; }                \
  inline TYPE max(TYPE a, TYPE b) { return a < b ? b : a; }
EMU_MINMAX(int)
EMU_MINMAX(unsigned int)
EMU_MINMAX(long long)
EMU_MINMAX(unsigned long long)
#undef EMU_MINMAX
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// ------------------------------------------------------------------ launching
namespace emu {

// Parameter type code: [p]<kind><bytes>, kind f float, i signed, u unsigned, b bool,
// v void (pointee only).  fake_cupy validates launch arguments against these.
template <typename P> std::string type_code() {
  using V = std::remove_cv_t<P>;
  if constexpr (std::is_pointer_v<V>) {
    using E = std::remove_cv_t<std::remove_pointer_t<V>>;
    if constexpr (std::is_void_v<E>) return "pv0";
    else return "p" + type_code<E>();
  } else if constexpr (std::is_same_v<V, bool>) {
    return "b1";
  } else if constexpr (std::is_floating_point_v<V>) {
    return "f" + std::to_string(sizeof(V));
  } else if constexpr (std::is_integral_v<V>) {
    return (std::is_signed_v<V> ? "i" : "u") + std::to_string(sizeof(V));
  } else {
    return "s" + std::to_string(sizeof(V));   // struct by value
  }
}

template <typename... Ps> std::string signature(void (*)(Ps...)) {
  std::string s;
  ((s += type_code<Ps>() + ","), ...);
  return s;
}

template <typename... Ps, std::size_t... I>
void call_with(void (*fn)(Ps...), void** args, std::index_sequence<I...>) {
  fn(*static_cast<std::remove_cv_t<Ps>*>(args[I])...);
}

// Fiber stacks (1 MiB each, a guard page below), kept for the next launch.
inline unsigned char* fiber_stack(unsigned t) {
  constexpr size_t kGuard = 4096, kStack = size_t(1) << 20;
  static std::vector<unsigned char*> stacks;
  while (stacks.size() <= t) {
    void* p = mmap(nullptr, kGuard + kStack, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    mprotect(p, kGuard, PROT_NONE);
    stacks.push_back(static_cast<unsigned char*>(p) + kGuard);
  }
  return stacks[t];
}

inline void fiber_main() {
  Block* b = cur_block;
  const unsigned t = lin_tid;
  b->body();
  b->site[t] = -1;                          // exited: drops out of this block's barriers
  b->exited[t] = 1;
  b->wait[t] = Block::kRun;
}                                           // returns to b->sched (uc_link)

// Runs one block's fibers to the end; false (with b.error set) on a deadlock.
inline bool run_block(Block& b, const unsigned* bd) {
  const unsigned nt = b.nthreads;
  for (unsigned t = 0; t < nt; ++t) {
    getcontext(&b.ctx[t]);
    b.ctx[t].uc_stack.ss_sp = fiber_stack(t);
    b.ctx[t].uc_stack.ss_size = size_t(1) << 20;
    b.ctx[t].uc_link = &b.sched;
    makecontext(&b.ctx[t], fiber_main, 0);
  }
  b.wait.assign(nt, Block::kRun);
  for (bool reverse = false;; reverse = !reverse) {
    for (unsigned i = 0; i < nt; ++i) {     // resume every runnable fiber once
      const unsigned t = reverse ? nt - 1 - i : i;
      if (b.exited[t] || b.wait[t] != Block::kRun) continue;
      lin_tid = t;
      threadIdx = uint3{t % bd[0], (t / bd[0]) % bd[1], t / (bd[0] * bd[1])};
      swapcontext(&b.sched, &b.ctx[t]);
    }
    // every live fiber now waits: complete the barriers that can complete
    bool live = false, all_block = true, released = false;
    for (unsigned w0 = 0; w0 < nt; w0 += 32) {
      const unsigned w1 = std::min(nt, w0 + 32);
      bool any = false, all_warp = true;
      for (unsigned t = w0; t < w1; ++t) {
        if (b.exited[t]) continue;
        any = true;
        all_warp &= b.wait[t] == Block::kWarp;
        all_block &= b.wait[t] == Block::kBlock;
      }
      live |= any;
      if (any && all_warp) {
        for (unsigned t = w0; t < w1; ++t) b.wait[t] = Block::kRun;
        released = true;
      }
    }
    if (!live) return true;
    if (released) continue;
    if (!all_block) {
      b.fail("deadlock: the block's threads wait at barriers that cannot complete "
             "(__syncthreads and a warp shuffle at once)");
      return false;
    }
    barrier_check();
    for (unsigned t = 0; t < nt; ++t) b.wait[t] = Block::kRun;
  }
}

// Runs the grid block by block; returns 0, or 1 with a message in err.
template <typename... Ps>
int launch(void (*fn)(Ps...), const unsigned* g, const unsigned* b, unsigned long long shmem,
           void** args, char* err, unsigned long long errlen) {
  const unsigned nt = b[0] * b[1] * b[2];
  std::vector<unsigned char> smem(shmem ? shmem + 16 : 16);
  Block blk;
  blk.nthreads = nt;
  blk.site.assign(nt, -1);
  blk.line.assign(nt, 0);
  blk.ctx.resize(nt);
  blk.body = [&] { call_with(fn, args, std::index_sequence_for<Ps...>{}); };
  for (unsigned t = 0; t < nt; ++t)
    if (!fiber_stack(t)) {
      std::snprintf(err, errlen, "cannot map fiber stacks for %u threads", nt);
      return 1;
    }
  cur_block = &blk;
  gridDim = dim3{g[0], g[1], g[2]};
  blockDim = dim3{b[0], b[1], b[2]};
  dyn_smem = smem.data();
  for (unsigned z = 0; z < g[2] && blk.error.empty(); ++z)
    for (unsigned y = 0; y < g[1] && blk.error.empty(); ++y)
      for (unsigned x = 0; x < g[0] && blk.error.empty(); ++x) {
        blockIdx = uint3{x, y, z};
        std::memset(smem.data(), 0xA5, smem.size());   // shared memory starts undefined
        if (__start_emu_shared != __stop_emu_shared)
          std::memset(__start_emu_shared, 0xA5, __stop_emu_shared - __start_emu_shared);
        blk.site.assign(nt, -1);
        blk.xchg.assign(nt, 0);
        blk.exited.assign(nt, 0);
        if (!run_block(blk, b)) break;
      }
  cur_block = nullptr;
  dyn_smem = nullptr;
  if (!blk.error.empty()) {
    std::snprintf(err, errlen, "%s", blk.error.c_str());
    return 1;
  }
  return 0;
}
}  // namespace emu
