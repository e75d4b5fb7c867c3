// Shared helpers for the CPU kernels (included by every family header).
#pragma once
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fastops {

// The one parser of FASTOPS_SIMD: the newest instruction set the kernels may use, 0
// baseline (SSE2), 1 x86-64-v3 (AVX2), 2 x86-64-v4 (AVX-512; unset or empty), -1 for a
// value it does not know (case and surrounding blanks ignored).  fastops/_dispatch.py
// picks the SIMD build of each family with it (_runtime.simd_cap, which raises on -1),
// and the run-time dispatched steps (resample.hpp) cap themselves with simd_cap(), so
// one setting governs both.
inline int simd_cap_of(const char* env) {
  std::string v = env != nullptr ? env : "";
  const size_t a = v.find_first_not_of(" \t\r\n"), b = v.find_last_not_of(" \t\r\n");
  v = a == std::string::npos ? "" : v.substr(a, b - a + 1);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v.empty() || v == "x86-64-v4") return 2;
  if (v == "x86-64-v3") return 1;
  return v == "baseline" ? 0 : -1;
}

// The environment's cap, read at the first run-time dispatch of the process.
inline int simd_cap() {
  static const int cap = simd_cap_of(std::getenv("FASTOPS_SIMD"));
  return cap;
}

// AMD CPUs, where the x86-64-v4 build's 512-bit steps cost more than the lanes suggest:
// Zen 4 runs a 512-bit operation as two 256-bit halves and its vector gathers are slower
// than scalar loads (grid_sample.hpp linear2_direct_any, selection.hpp rank_pays).  A
// read of libgcc's CPU model (initialised before any call reaches here), no cpuid.
#if defined(__x86_64__) || defined(__i386__)
inline bool amd_cpu() { return __builtin_cpu_is("amd"); }
#endif

// The lane mask of lanes [0, n) for a mask type of 8, 16 or 64 lanes (__mmask8,
// __mmask16, uint64_t byte masks), n clamped to [0, lanes]: the one helper of every
// masked tail step.
template <typename M>
inline M first_lanes(int64_t n) {
  constexpr int64_t kLanes = 8 * sizeof(M);
  if (n <= 0) return M(0);
  if (n >= kLanes) return static_cast<M>(~uint64_t{0});
  return static_cast<M>((uint64_t{1} << n) - 1);
}

// NaN test that folds to `false` for integer types.
template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point<T>::value) return v != v;
  else return false;
}

// Work (in elements touched) below which a loop runs on one thread: waking the pool's
// workers costs a few microseconds, about what 32k simple element operations cost here.
constexpr int64_t kParallelGrain = 1 << 15;

// Work below which a loop also runs on one thread when the pool's workers sleep and
// nothing ran within the pool's spin time (a call after a pause; parallel.hpp,
// Pool::cold): waking a sleeping worker costs the caller ~20 us and the worker 40-180 us
// to arrive, more than such a loop takes alone (cv.resize 224x224x3 halved, 150k: after
// a pause 65-78 us on 2 threads, 38-45 on one).  8 grains: the work units are elements,
// not time, and topk's cost more (8400x80, 672k units, is 2.3 ms alone, 1.4 on two
// threads after a pause; 1 << 20 here made it lose to onnxruntime).
constexpr int64_t kWakeWork = kParallelGrain * 8;
inline bool pool_cold();  // parallel.hpp

// cheap: how many of the kernel's work units cost what one unit of kWakeWork's does, for
// the cold check only (a loop of calls splits `work` as before).  Kernels whose units
// are far cheaper than topk's pass it, measured after a pause: see the kernel.
inline int threads_for(int64_t work, int nthreads, int64_t cheap = 1) {
  if (work < kParallelGrain || nthreads < 1) return 1;
  if (work / cheap < kWakeWork && nthreads > 1 && pool_cold()) return 1;
  int64_t useful = work / kParallelGrain;
  return useful < nthreads ? static_cast<int>(useful) : nthreads;
}

// Work estimates that may exceed int64 (huge sampling ratios, broadcast inputs): the
// product saturates instead of wrapping, which only matters for threads_for.
inline int64_t work_product(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

// Sizes of scratch that the kernels allocate themselves (tables whose length depends on
// the data): overflow means the request cannot be met, reported like a failed allocation
// (std::bad_alloc -> MemoryError at the Cython boundary).
inline int64_t size_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw std::bad_alloc();
  return r;
}
inline int64_t size_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw std::bad_alloc();
  return r;
}

#if defined(__SSE2__)
// SSE2 operations on float and double lanes, shared by the kernels that write their
// vector loops once for both types (selection.hpp extreme_value and cum_row_step,
// norm.hpp norm_apply).
template <typename T>
struct Sse;
template <>
struct Sse<float> {
  using V = __m128;
  static constexpr int64_t kWidth = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static void stream(float* p, V v) { _mm_stream_ps(p, v); }  // p 16-byte aligned
  static V set1(float v) { return _mm_set1_ps(v); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static V sub(V a, V b) { return _mm_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static V max(V a, V b) { return _mm_max_ps(a, b); }
  static V min(V a, V b) { return _mm_min_ps(a, b); }
  static V unord(V v) { return _mm_cmpunord_ps(v, v); }
  static V ge(V a, V b) { return _mm_cmpge_ps(a, b); }
  static V le(V a, V b) { return _mm_cmple_ps(a, b); }
  static V bor(V a, V b) { return _mm_or_ps(a, b); }
  static V select(V m, V a, V b) { return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b)); }
  static bool any(V v) { return _mm_movemask_ps(v) != 0; }
  // the lanes' masks widened to 64 bits, two lanes at a time: f(mask, first lane)
  template <typename F>
  static void each_pair(V m, F f) {
    const __m128i t = _mm_castps_si128(m);
    f(_mm_unpacklo_epi32(t, t), 0);
    f(_mm_unpackhi_epi32(t, t), 2);
  }
};
template <>
struct Sse<double> {
  using V = __m128d;
  static constexpr int64_t kWidth = 2;
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
  static void stream(double* p, V v) { _mm_stream_pd(p, v); }  // p 16-byte aligned
  static V set1(double v) { return _mm_set1_pd(v); }
  static V add(V a, V b) { return _mm_add_pd(a, b); }
  static V sub(V a, V b) { return _mm_sub_pd(a, b); }
  static V mul(V a, V b) { return _mm_mul_pd(a, b); }
  static V max(V a, V b) { return _mm_max_pd(a, b); }
  static V min(V a, V b) { return _mm_min_pd(a, b); }
  static V unord(V v) { return _mm_cmpunord_pd(v, v); }
  static V ge(V a, V b) { return _mm_cmpge_pd(a, b); }
  static V le(V a, V b) { return _mm_cmple_pd(a, b); }
  static V bor(V a, V b) { return _mm_or_pd(a, b); }
  static V select(V m, V a, V b) { return _mm_or_pd(_mm_and_pd(m, a), _mm_andnot_pd(m, b)); }
  static bool any(V v) { return _mm_movemask_pd(v) != 0; }
  template <typename F>
  static void each_pair(V m, F f) {
    f(_mm_castpd_si128(m), 0);
  }
};
#endif

// dst[0:bytes) = src[0:bytes), the 16-byte-aligned part of dst with non-temporal stores
// (x86): the lines go to memory without being read first (no read-for-ownership) and
// without evicting the cache's working set.  Only for data nobody reads soon; the writer
// calls stream_fence() before its part of the work counts as done (the stores are weakly
// ordered).  Elsewhere a plain copy.
inline void stream_copy(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if defined(__SSE2__)
  const size_t head = std::min<size_t>((16 - reinterpret_cast<uintptr_t>(d) % 16) % 16, bytes);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  for (; bytes >= 16; bytes -= 16, d += 16, s += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
#endif
  std::memcpy(d, s, bytes);
}

// Outputs of at least this many bytes go out with non-temporal stores where a kernel can
// (norm_apply, resample's vertical step): they do not stay in the cache anyway, and the
// stores skip the read-for-ownership of their lines.
constexpr int64_t kStreamBytes = int64_t(1) << 24;

inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace fastops
