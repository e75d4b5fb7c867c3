// CUDA-on-CPU shim: lets an NVRTC-style .cu source (no host headers) compile with g++
// -std=c++20 and run on OS threads.  Test-only (tests/cuda_emu); see fake_cupy.py.
//
// Model: one block at a time; a block is blockDim.x*y*z OS threads, so __syncthreads()
// is a real barrier (std::barrier).  __shared__ variables are function statics (one
// block runs at a time).  Atomics are std::atomic_ref.  Every __syncthreads() call site
// is recorded (__COUNTER__) so that a barrier reached from two different call sites in
// one phase (divergent __syncthreads, undefined behaviour in CUDA) is reported as a
// launch error.  (One call site reached by different iterations is not detected.)
// Warps: __shfl_sync / __shfl_xor_sync with a full mask are an exchange between the
// warp's 32 threads (a per-warp barrier on each side); a partial mask, or reading a lane
// that has exited, is reported as a launch error.  Not modelled: lock-step execution,
// other warp intrinsics,
// CUDA's weak memory model (threads here are sequentially consistent at barriers and
// atomics), concurrent blocks (a kernel relying on inter-block progress would hang),
// resource limits other than block size / grid size / dynamic shared memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// ------------------------------------------------------------------ qualifiers
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static
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

inline void barrier_check();
struct Check {                              // completion step of each barrier phase
  void operator()() noexcept { barrier_check(); }
};

struct Block {
  unsigned nthreads = 0;
  std::vector<int> site;                    // __syncthreads call site per thread, -1 exited
  std::vector<int> line;                    // its source line (for the message)
  std::string error;
  std::mutex err_mu;
  std::unique_ptr<std::barrier<Check>> bar;
  std::vector<std::unique_ptr<std::barrier<>>> warp_bar;   // one per 32 threads
  std::vector<uint64_t> xchg;                              // a shuffle's values, by thread
  std::vector<char> exited;
  void fail(const std::string& msg) {
    std::lock_guard<std::mutex> lock(err_mu);
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

inline void syncthreads(int site, int line) {
  Block* b = cur_block;
  b->site[lin_tid] = site;
  b->line[lin_tid] = line;
  b->bar->arrive_and_wait();
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
  b->warp_bar[warp]->arrive_and_wait();
  const unsigned src = first + ((unsigned)src_lane & 31u);
  V out = v;
  if (src >= b->nthreads || b->exited[src]) b->fail("__shfl_sync reads a lane that has exited");
  else std::memcpy(&out, &b->xchg[src], sizeof(V));
  b->warp_bar[warp]->arrive_and_wait();
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
  cur_block = &blk;
  gridDim = dim3{g[0], g[1], g[2]};
  blockDim = dim3{b[0], b[1], b[2]};
  dyn_smem = smem.data();
  // start/finish handshakes between this thread and the block's threads
  std::barrier<> gate(nt + 1);
  bool done = false;
  std::vector<std::thread> pool;
  pool.reserve(nt);
  for (unsigned t = 0; t < nt; ++t) {
    pool.emplace_back([&, t] {
      lin_tid = t;
      threadIdx = uint3{t % b[0], (t / b[0]) % b[1], t / (b[0] * b[1])};
      for (;;) {
        gate.arrive_and_wait();          // block start
        if (done) return;
        call_with(fn, args, std::index_sequence_for<Ps...>{});
        blk.site[t] = -1;                // exited: drops out of this block's barriers
        blk.exited[t] = 1;
        blk.bar->arrive_and_drop();
        blk.warp_bar[t / 32]->arrive_and_drop();
        gate.arrive_and_wait();          // block end
      }
    });
  }
  for (unsigned z = 0; z < g[2] && blk.error.empty(); ++z)
    for (unsigned y = 0; y < g[1] && blk.error.empty(); ++y)
      for (unsigned x = 0; x < g[0] && blk.error.empty(); ++x) {
        blockIdx = uint3{x, y, z};
        std::memset(smem.data(), 0xA5, smem.size());   // shared memory starts undefined
        blk.site.assign(nt, -1);
        blk.bar = std::make_unique<std::barrier<Check>>(nt);
        blk.warp_bar.clear();
        for (unsigned w0 = 0; w0 < nt; w0 += 32)
          blk.warp_bar.push_back(std::make_unique<std::barrier<>>(std::min(32u, nt - w0)));
        blk.xchg.assign(nt, 0);
        blk.exited.assign(nt, 0);
        gate.arrive_and_wait();
        gate.arrive_and_wait();
      }
  done = true;
  gate.arrive_and_wait();
  for (auto& th : pool) th.join();
  cur_block = nullptr;
  dyn_smem = nullptr;
  if (!blk.error.empty()) {
    std::snprintf(err, errlen, "%s", blk.error.c_str());
    return 1;
  }
  return 0;
}
}  // namespace emu
