// ScatterElements, ScatterND, GatherElements and GatherND kernels, templated on the
// element type T and the index type I (int32_t or int64_t).
//
// Conventions (the Python layer fastops/scatter.py prepares them):
// * `idx` and `upd` are C-contiguous; `out` is a new C-contiguous array.
// * Elements layout: indices viewed as (O, m, In) around the axis.  The output (scatter)
//   or data (gather) element of indices position (o, j, i) is
//       outer(o) + v * s_axis + inner(i),  v = idx[o, j, i] (+ n_axis when negative)
//   where outer(o) = outer_off ? outer_off[o] : o * s_outer, and likewise inner(i).
//   The tables cover indices that are smaller than data in the non-axis dimensions and
//   strided data; both are offsets in elements.
// * ND layout: data viewed as rows of S elements; an index tuple of depth k selects a row.
// * The functions return the row-major position of the first bad index in `idx`, or -1.
//   Into a new output (the caller drops it on a bad index) indices are checked where
//   they are used; into the caller's data (scatter_elements in place, scatter_nd's rows
//   pass) the check comes first, so a bad index writes nothing.  Every pass checks each
//   index where it uses it: another Python thread may change `idx` meanwhile (the GIL
//   is released), and such a race must never read or write out of bounds (an index
//   gone bad is skipped, or gathers 0; the result is unspecified).
// * Reductions run in a fixed order, so results never depend on the thread count:
//   every output element is owned by one thread, which applies its updates in
//   row-major order of `idx` (duplicates: the last "none" update wins).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <unistd.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "common.hpp"
#include "npy_types.hpp"
#include "parallel.hpp"

namespace fastops {

// max/min follow np.maximum / np.minimum bit for bit, including which of two equal
// values (+0.0 and -0.0) and which of two NaNs wins.  NumPy's float32/float64 loops (x86)
// return the second argument on ties (the update, here) and the first NaN; its float16
// loop returns the first argument on ties.  kRedMaxKeep/kRedMinKeep are that float16 rule
// (float16 is reduced in float32).  Integers: the two rules agree.
enum ScatterReduction {
  kRedNone = 0, kRedAdd = 1, kRedMul = 2, kRedMax = 3, kRedMin = 4, kRedMaxKeep = 5,
  kRedMinKeep = 6
};

// Integer add/mul wrap around (NumPy): computed in an unsigned type at least as wide as
// int, which is defined behaviour (signed overflow is not, and uint16*uint16 promotes to
// int and could overflow).
template <typename T>
using wrap_t = typename std::conditional<(sizeof(T) <= 4), unsigned int, unsigned long long>::type;

template <typename T, int Red>
inline T reduce_op(T o, T u) {
  if constexpr (Red == kRedNone) {
    return u;
  } else if constexpr (Red == kRedAdd) {
    if constexpr (std::is_integral<T>::value)
      return static_cast<T>(static_cast<wrap_t<T>>(o) + static_cast<wrap_t<T>>(u));
    else
      return o + u;
  } else if constexpr (Red == kRedMul) {
    if constexpr (std::is_integral<T>::value)
      return static_cast<T>(static_cast<wrap_t<T>>(o) * static_cast<wrap_t<T>>(u));
    else
      return o * u;
  } else if constexpr (Red == kRedMax) {  // np.maximum (float32/64): first NaN, ties -> u
    return is_nan(o) ? o : (is_nan(u) ? u : (o > u ? o : u));
  } else if constexpr (Red == kRedMin) {
    return is_nan(o) ? o : (is_nan(u) ? u : (o < u ? o : u));
  } else if constexpr (Red == kRedMaxKeep) {  // np.maximum (float16): ties -> o
    return (o >= u || is_nan(o)) ? o : u;
  } else {  // kRedMinKeep
    return (o <= u || is_nan(o)) ? o : u;
  }
}

// The (element type, reduction) pairs fastops.scatter sends (_kernel_types): "none" moves
// bits, so it comes as an unsigned word, and so do integer add/mul (they wrap around to
// the same bits signed or not); the float16 tie rule comes as float32.  Only these are
// compiled: every other pair repeated a hot loop that nothing calls, a third of this
// family's instantiations (and of its build, the longest of the package), and the
// signed add/mul pairs a sixth of the rest.
template <typename T, int Red>
constexpr bool reduction_sent() {
  if constexpr (Red == kRedNone)
    return std::is_unsigned<T>::value;
  else if constexpr (Red == kRedAdd || Red == kRedMul)
    return !std::is_integral<T>::value || std::is_unsigned<T>::value;
  else if constexpr (Red == kRedMaxKeep || Red == kRedMinKeep)
    return std::is_same<T, float>::value;
  else
    return true;
}

// Calls f(std::integral_constant<int, Red>{}) for the runtime reduction code, so each
// reduction gets its own instantiation of the hot loop; std::invalid_argument (ValueError
// through Cython's `except +`) for a code or a pair that reduction_sent leaves out.
template <typename T, typename F>
inline void with_reduction(int reduction, F&& f) {
  auto call = [&](auto red) {
    if constexpr (reduction_sent<T, decltype(red)::value>())
      f(red);
    else
      throw std::invalid_argument("scatter kernel: reduction not compiled for this element type");
  };
  switch (reduction) {
    case kRedNone: call(std::integral_constant<int, kRedNone>{}); break;
    case kRedAdd: call(std::integral_constant<int, kRedAdd>{}); break;
    case kRedMul: call(std::integral_constant<int, kRedMul>{}); break;
    case kRedMax: call(std::integral_constant<int, kRedMax>{}); break;
    case kRedMin: call(std::integral_constant<int, kRedMin>{}); break;
    case kRedMaxKeep: call(std::integral_constant<int, kRedMaxKeep>{}); break;
    case kRedMinKeep: call(std::integral_constant<int, kRedMinKeep>{}); break;
    default: throw std::invalid_argument("scatter kernel: unknown reduction code");
  }
}

// Normalized index, or -1 when out of [-n, n).
template <typename I>
inline int64_t norm_index(I raw, int64_t n) {
  int64_t v = static_cast<int64_t>(raw);
  v += v < 0 ? n : 0;
  return static_cast<uint64_t>(v) < static_cast<uint64_t>(n) ? v : -1;
}

// Columns per task in scatter_elements: tasks are (o, column block), each walking all m
// rows of indices over its block, so duplicates stay in one task and in order.  Each
// target is prefetched kGatherAhead elements early (the updates are read-modify-writes
// of random rows).  Blocks of about kScatterBlock columns, narrower where the thread
// count needs more tasks (O = 1, 2 threads: two blocks).  Measured with the 2000x2000
// float32 / 500x2000 axis-0 workloads (fastops/_bench/scatter.py), 2 threads, after a
// pause, ms, "none" / "add", 2026-12-02: blocks of 256 without the prefetch 3.8 / 5.5;
// with it 3.7 / 4.3; blocks of 512 3.3-3.5 / 3.4-3.8; of 1000 (two tasks) 3.1 /
// 3.4-3.8.  (Earlier, without the prefetch, on one thread: 256 beat 64, 128, 512 and
// whole rows.)
constexpr int64_t kScatterBlock = 1024;

inline int64_t col_block(int64_t In, int64_t O, int nt) {
  const int64_t nblk = std::max<int64_t>({(In + kScatterBlock - 1) / kScatterBlock,
                                          (nt + O - 1) / O, 1});
  return std::max<int64_t>((In + nblk - 1) / nblk, 1);
}

constexpr int64_t kNoBad = std::numeric_limits<int64_t>::max();

// threads_for's work units per random element read or update: one costs about what 8
// copied elements do (1.7-2.6 ns against 0.2-0.3, one thread, data in cache), so counted
// as one unit, 42k gathered elements (gather_elements 8400x80 idx 8400x5 axis 1) ran on
// one thread in 110 us where torch.gather took 42 on two.  The cold-pool check still
// counts them once (threads_for's `cheap`).
constexpr int64_t kRandomAccessUnits = 8;
// Elements between a random target's prefetch and its use (scatter_elements; gathers:
// ReadAhead), and rows in the ND kernels (gather_nd, scatter_nd).
constexpr int64_t kGatherAhead = 32;
constexpr int64_t kRowsAhead = 32;

// Index rows shorter than kFlatRow elements (a small trailing extent In; the last axis
// with few indices) run flat: positions of idx in row-major order, (o, j, i) carried as
// counters (gather: FlatPos; scatter: scatter_flat_rows), where a call per row cost more
// than its few elements (torch.gather, 2 threads, hot: 8400x80 idx 8400x5 axis 1 0.131
// against 0.032 ms; 1000x2000x2 idx 1000x500x2 axis 1 3.0 against 1.26).  (Prefetching
// each read 32 positions early, as gather_span did, through a second FlatPos:
// about 2x slower on those two, whose data is in cache: 0.151 against 0.077 ms, 2.30
// against 1.23.)
constexpr int64_t kFlatRow = 16;

// Prefetch a row of S elements by its first and last line (the lines between follow
// the copy's own stream); Write = 1 for a row about to be modified; Locality as
// __builtin_prefetch's (3: PREFETCHT0, into L1; 2: PREFETCHT1, into L2).
template <int Write, int Locality = 3, typename T>
inline void prefetch_row(const T* row, int64_t S) {
  const char* p = reinterpret_cast<const char*>(row);
  __builtin_prefetch(p, Write, Locality);
  __builtin_prefetch(p + sizeof(T) * S - 1, Write, Locality);
}

// First position of idx[b:e] out of [-n, n), else kNoBad.  A branch-free OR over a block
// first (vectorizes), the exact position only for a block that has a bad one.
template <typename I>
inline int64_t first_bad_in(const I* idx, int64_t b, int64_t e, int64_t n) {
  const int64_t block = 1024;
  for (int64_t p = b; p < e; p += block) {
    const int64_t q = std::min(e, p + block);
    bool bad = false;
    for (int64_t t = p; t < q; ++t) {
      int64_t v = static_cast<int64_t>(idx[t]);
      v += v < 0 ? n : 0;
      bad |= static_cast<uint64_t>(v) >= static_cast<uint64_t>(n);
    }
    if (bad)
      for (int64_t t = p; t < q; ++t)
        if (norm_index(idx[t], n) < 0) return t;
  }
  return kNoBad;
}

// Part t of nt of a parallel copy of `size` elements (first touch of a fresh output in
// parallel too) over a contiguous page-aligned range.  Outputs of kStreamBytes or more
// go out with non-temporal stores (stream_copy): glibc 2.36's memcpy of 32 MB parts ran
// at 2.85-3.2 ms on 2 threads against 2.1-2.2 streamed (64 MB float32, the EPYC VM).
template <typename T>
inline void copy_part(const T* src, T* dst, int64_t size, int64_t t, int64_t nt) {
  const int64_t align = 4096 / static_cast<int64_t>(sizeof(T));
  int64_t len = (size + nt - 1) / nt;
  len = (len + align - 1) / align * align;
  const int64_t b = std::min(size, t * len), e = std::min(size, b + len);
  if (e <= b) return;
  if (size * static_cast<int64_t>(sizeof(T)) >= kStreamBytes) {
    stream_copy(dst + b, src + b, sizeof(T) * (e - b));
    stream_fence();
  } else {
    std::memcpy(dst + b, src + b, sizeof(T) * (e - b));
  }
}

// A short slice (own_slices in scatter_elements_apply) copied by 32-byte moves and then
// element by element, inline, before its updates load from it.  A libc memcpy call per
// 320-byte slice cost more than the copy (scatter_slices).
template <typename T>
inline void copy_short(T* dst, const T* src, int64_t n) {
  constexpr int64_t V = 32 / static_cast<int64_t>(sizeof(T));
  int64_t k = 0;
  for (; k + V <= n; k += V) __builtin_memcpy(dst + k, src + k, 32);
  for (; k < n; ++k) dst[k] = src[k];
}

// The first bad index position of a check split in parts: each part keeps its own
// (positions increase within a part), the minimum is taken after the join.
class FirstBad {
 public:
  explicit FirstBad(int64_t parts) : v_(static_cast<size_t>(parts), kNoBad) {}
  void note(int64_t part, int64_t pos) { v_[part] = std::min(v_[part], pos); }
  bool seen(int64_t part) const { return v_[part] != kNoBad; }
  int64_t first() const { return *std::min_element(v_.begin(), v_.end()); }

 private:
  std::vector<int64_t> v_;
};

// ------------------------------------------------------------------ ScatterElements
// True when idx[0 .. len) are all the same value (a branch-free OR of differences, which
// vectorizes), after a look at the second and last, which settles random indices without
// the pass: it read each idx row twice and took ~10 % of scatter_elements' time on the
// 2000x2000 idx 500x2000 workload (perf).
template <typename I>
inline bool uniform_run(const I* idx, int64_t len) {
  if (len > 1 && (idx[1] != idx[0] || idx[len - 1] != idx[0])) return false;
  I diff = 0;
  for (int64_t i = 1; i < len; ++i) diff |= static_cast<I>(idx[i] ^ idx[0]);
  return diff == 0;
}

// The updates of one index row over columns [i0, i1): base[idx * s_axis + inner(i)],
// inner(i) = inner_i[i] or i * s_i, each target prefetched kGatherAhead elements early.
// Arguments by value, as in gather_span: captured by reference, the strides were
// reloaded after every store (extensions build with -fno-strict-aliasing).  Returns
// row + the first bad i, else kNoBad.  (Forming each offset once and keeping it in a
// ring until its update was slower: 2.78 -> 3.3 ms.)
template <bool Unit, typename T, typename I, int Red, bool Ahead = true>
inline int64_t scatter_span(T* base, const I* ij, const T* uj, int64_t i0, int64_t i1,
                            int64_t s_axis, int64_t s_i, const int64_t* inner_i,
                            int64_t n_axis, int64_t row) {
  auto at = [&](int64_t i, int64_t v) {
    return v * s_axis + (Unit ? i : inner_i ? inner_i[i] : i * s_i);
  };
  int64_t first_bad = kNoBad;
  for (int64_t i = i0; i < i1; ++i) {
    if (Ahead && i + kGatherAhead < i1) {
      const int64_t a = i + kGatherAhead;
      __builtin_prefetch(base + at(a, std::max<int64_t>(norm_index(ij[a], n_axis), 0)), 1, 2);
    }
    const int64_t v = norm_index(ij[i], n_axis);
    if (v < 0) {  // never write outside; the caller raises
      first_bad = std::min(first_bad, row + i);
      continue;
    }
    T* p = base + at(i, v);
    *p = reduce_op<T, Red>(*p, uj[i]);
  }
  return first_bad;
}

// One index row's updates over columns [i0, i1) with unit inner stride: a row of one
// repeated index (an index expanded along the other axes, as torchvision's multi-level
// RoIAlign exports its merge) as a contiguous vector loop, the same operation per
// element (frcnn's ScatterElements, 150x256x7x7 axis 0, 2 threads, hot: 4.4 -> 2.9 ms;
// onnxruntime 7.4-8.9); else element by element.  Returns row + the first bad i.
template <typename T, typename I, int Red, bool Ahead>
inline int64_t scatter_unit_row(T* base, const I* ij, const T* uj, int64_t i0, int64_t i1,
                                int64_t s_axis, int64_t n_axis, int64_t row) {
  if (!uniform_run(ij + i0, i1 - i0))
    return scatter_span<true, T, I, Red, Ahead>(base, ij, uj, i0, i1, s_axis, 1, nullptr,
                                                n_axis, row);
  const int64_t v = norm_index(ij[i0], n_axis);
  if (v < 0) return row + i0;
  T* p = base + v * s_axis;
  for (int64_t i = i0; i < i1; ++i) p[i] = reduce_op<T, Red>(p[i], uj[i]);
  return kNoBad;
}

// A last-axis slice that fits one core's L2 (sysconf; 512 KiB where it does not say)
// stays there while its updates land, on one thread, with no prefetches (they cost more
// than they hide: 1-D 100k float32, idx 1M "add", a C++ harness, one thread, 1.31 ms
// without, 2.0 with).  Larger ones are bucketed (scatter_slices_bucketed).  On the Intel
// VM (2 MiB L2), 1-D float32 idx 1M "add", 2 threads, harness, back to back / after a
// pause, ms: 200k (800 KB) bucketed 1.69 / 2.86, cached 1.09 / 1.72; 500k (2 MB) both
// 1.59 / 2.82; 1M bucketed 1.64 / 2.99 (each thread applying its half, prefetched, 1.75
// / 3.16).
inline int64_t cached_slice_bytes() {
  static const int64_t bytes = [] {
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 > 0) return static_cast<int64_t>(l2);
#endif
    return int64_t(512) << 10;
  }();
  return bytes;
}

// A cached slice with many updates (kLongSpan or more): own (or null) is its data, copied
// in first.  Apart from scatter_elements_apply's loop (noinline): the loop of short
// slices stays as it was (with this path inlined, 8400x80 float32, idx 8400x5 axis 1
// "add", hot, ran 1.16-1.23x slower).
constexpr int64_t kLongSpan = 4096;

template <typename T, typename I, int Red>
__attribute__((noinline)) int64_t scatter_slice(T* base, const I* ir, const T* ur, int64_t m,
                                                int64_t s_axis, int64_t n_axis, const T* own,
                                                int64_t row) {
  if (own) std::memcpy(base, own, sizeof(T) * static_cast<size_t>(n_axis));
  return scatter_span<false, T, I, Red, false>(base, ir, ur, 0, m, s_axis, 0, nullptr, n_axis,
                                               row);
}

// Slices [o0, o1) along the last axis (scatter_elements_apply, In 1): the indices of
// slice o as one span, in order, after the copy of its data (own, or null) where given.
// Arguments by value, as in scatter_span: the lambda's captures were reloaded for every
// slice.  Short spans (kGatherAhead or fewer) skip the prefetch.  8400x80 float32, idx
// 8400x5 axis 1 "add", one thread, C++ harness, ms: a memcpy call per slice and the loop
// in the lambda of task (o, block) 0.15; copy_short 0.116; this function 0.094; without
// the prefetch 0.088.  In Python, hot, 2 threads: 0.091-0.103 -> 0.054 (torch 0.058-0.063).
template <typename T, typename I, int Red>
int64_t scatter_slices(T* out, const T* own, const I* idx, const T* upd, int64_t o0, int64_t o1,
                       int64_t m, const int64_t* outer_off, int64_t s_outer, int64_t inner,
                       int64_t s_axis, int64_t n_axis) {
  int64_t first_bad = kNoBad;
  for (int64_t o = o0; o < o1; ++o) {
    T* base = out + (outer_off ? outer_off[o] : o * s_outer);
    const T* src = own ? own + o * s_outer : nullptr;
    int64_t b;
    if (m >= kLongSpan) {
      b = scatter_slice<T, I, Red>(base + inner, idx + o * m, upd + o * m, m, s_axis, n_axis, src,
                                   o * m);
    } else {
      if (src) copy_short(base, src, n_axis);
      b = m > kGatherAhead
              ? scatter_span<false, T, I, Red>(base + inner, idx + o * m, upd + o * m, 0, m,
                                               s_axis, 0, nullptr, n_axis, o * m)
              : scatter_span<false, T, I, Red, false>(base + inner, idx + o * m, upd + o * m, 0,
                                                      m, s_axis, 0, nullptr, n_axis, o * m);
    }
    first_bad = std::min(first_bad, b);
  }
  return first_bad;
}

// The updates of index rows (o, j, 0 .. In) for j in [0, m), In < kFlatRow, into
// base[v * s_axis + i]: one walk over the m * In positions in row-major order, the column
// i carried in a counter, so each target still sees its updates in row order.  (A call
// of scatter_unit_row per row of In = 2 ran at 1.8-2.2 ms on 1000x2000x2 float32, idx
// 1000x500x2 axis 1 "add", hot.)
template <typename T, typename I, int Red>
inline int64_t scatter_flat_rows(T* base, const I* ir, const T* ur, int64_t m, int64_t In,
                                 int64_t s_axis, int64_t n_axis, int64_t row) {
  int64_t first_bad = kNoBad;
  const int64_t count = m * In;
  for (int64_t p = 0, i = 0; p < count; ++p) {
    const int64_t v = norm_index(ir[p], n_axis);
    if (v < 0) {
      first_bad = std::min(first_bad, row + p);
    } else {
      T* t = base + v * s_axis + i;
      *t = reduce_op<T, Red>(*t, ur[p]);
    }
    i = i + 1 == In ? 0 : i + 1;
  }
  return first_bad;
}

// Duplicates can only meet inside one (o, i) column of the indices (the target keeps o
// and i), so columns are split among threads and each walks j in order: deterministic,
// row-major "last wins", with no duplicate detection.  Tasks are (o, block of i): a
// block of columns keeps the reads of idx/upd rows contiguous.  Along the last axis (In
// 1, and 1-D arrays) a column is a whole slice, scattered as one span: per index row a
// call for one element was 1.9-3.2x torch's scatter_add (2000x2000 float32, idx
// 2000x500 axis 1; 1-D 100k, idx 1M).  own_slices: data, whose contiguous slices (of a
// contiguous out) each task copies in before its updates, or null.
// Returns the first bad position (row-major in idx) that it skipped, else kNoBad.
template <typename T, typename I, int Red>
int64_t scatter_elements_apply(T* out, const I* idx, const T* upd,
                               int64_t O, int64_t m, int64_t In, const int64_t* outer_off,
                               const int64_t* inner_off, int64_t s_outer, int64_t s_inner,
                               int64_t s_axis, int64_t n_axis, const T* own_slices, int nt) {
  const int64_t bi = col_block(In, O, nt);
  const int64_t nblk = (In + bi - 1) / bi;   // blocks of columns (one along the last axis)
  const int64_t tasks = O * nblk;
  const int64_t grain = chunk_for(tasks, nt);
  const bool unit = !inner_off && s_inner == 1;   // the common contiguous case, compiled apart
  FirstBad bad(std::max<int64_t>((tasks + grain - 1) / grain, 1));   // per chunk of tasks
  if (In == 1) {  // the last axis: each slice's indices as one span, in order
    const int64_t inner = inner_off ? inner_off[0] : 0;
    parallel_for(O, grain, nt, [&](int64_t o0, int64_t o1, int) {
      bad.note(o0 / grain, scatter_slices<T, I, Red>(out, own_slices, idx, upd, o0, o1, m,
                                                      outer_off, s_outer, inner, s_axis, n_axis));
    });
    return bad.first();
  }
  parallel_for(tasks, grain, nt, [&](int64_t t0, int64_t t1, int) {
    int64_t first_bad = kNoBad;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t o = task / nblk, i0 = (task % nblk) * bi, i1 = std::min(In, i0 + bi);
      T* base = out + (outer_off ? outer_off[o] : o * s_outer);
      const I* ir = idx + o * m * In;
      const T* ur = upd + o * m * In;
      if (unit && In < kFlatRow && nblk == 1) {
        first_bad = std::min(first_bad, scatter_flat_rows<T, I, Red>(base, ir, ur, m, In, s_axis,
                                                                     n_axis, o * m * In));
        continue;
      }
      for (int64_t j = 0; j < m; ++j) {
        const I* ij = ir + j * In;
        const T* uj = ur + j * In;
        const int64_t row = (o * m + j) * In;   // idx position of (o, j, 0)
        const int64_t b =
            unit ? scatter_unit_row<T, I, Red, true>(base, ij, uj, i0, i1, s_axis, n_axis, row)
                 : scatter_span<false, T, I, Red>(base, ij, uj, i0, i1, s_axis, s_inner,
                                                  inner_off, n_axis, row);
        first_bad = std::min(first_bad, b);
      }
    }
    bad.note(t0 / grain, first_bad);
  });
  return bad.first();
}

// Into a new output that the tasks' blocks tile, each task works in a tile: an
// L2-resident copy of its block (n_axis rows of w columns, kTileBytes at most) in
// per-thread scratch.  The block of data is copied in, every index row's updates land in
// the tile, and the tile goes out to `out` with non-temporal stores, so each line of out
// is written once and never read (no read-for-ownership) and the random writes hit L2.
// Before, the updates landed in out itself, in L3 or memory, and the scatter loop
// waited on its stores (perf: 53 % of the time, against the copy's 17 %).  Tiles start
// on out's line boundaries (row 0's; every row's where a row is a whole number of
// lines), so the streamed lines are whole.
// Measured with the 2000x2000 float32 idx 500x2000 axis-0 workloads
// (fastops/_bench/scatter.py), 2 threads, after a pause, medians of 41, "none" / "add":
// the copy pass then the updates in out 2.76-2.88 / 2.96-3.36 ms; tiles 2.0-2.1 /
// 2.1-2.4 with the copy-in prefetching 16 rows ahead, 1.55-1.85 / 1.55-1.8 with 64
// (32: 1.7-2.2, 128-256 no better).  Tiles of 128 KiB 2.5 ms; 192-512 KiB within the
// noise of 256, which also fits the 512 KiB L2 of older cores with the streams beside
// it.  Also tried: prefetching the next tile's data during the updates (no gain), plain
// stores for the drain (1.77-1.83 against 1.55-1.78 ms).  The tiles' streams and the
// update targets (scatter_span) are prefetched into L2 (PREFETCHT1): on the Intel Xeon
// VM, modules alternating in one process, 2 threads, "none" / "add" after a pause
// 0.89-0.91 / 0.89-0.90, back to back 0.98-1.01 / 1.01-1.02 (docs/performance.md,
// twenty-fourth run).
constexpr int64_t kTileBytes = int64_t(256) << 10;
constexpr int64_t kTileRowsAhead = 8;    // idx/upd row segments prefetched this many rows early
constexpr int64_t kTileFillAhead = 64;   // data row segments prefetched in the copy-in

// Columns of a tile: whole lines, n_axis rows in kTileBytes, and narrow enough that
// every thread gets a tile where O < nt.  0 (the caller scatters in out instead) where
// the rows of a tile would be narrower than kTileMinBytes: one-line rows copied in and
// out at a 16 KB stride ran at less than half the copy's speed (4096x4096 float32, 2
// threads: idx 64x4096 4.9-5.1 -> 11.3-11.8 ms; idx 1024x4096, where the updates
// dominate, 15.3-17.1 -> 14.3-14.6), two-line rows at its speed (2000x2000, idx 25x2000:
// 1.29-1.44 -> 1.24-1.44 ms).
constexpr int64_t kTileMinBytes = 128;
// Along the last axis (In 1) a tile is a whole slice of n_axis elements: below
// kTileMinSlice bytes the copy in and the streamed copy out cost more than the updates
// save (8400x80 float32, idx 8400x5 axis 1 "add", 2 threads, hot: tiles 0.30 ms, torch
// 0.20), and the slices of the output copy stay in L1 while their updates land anyway.
constexpr int64_t kTileMinSlice = 4096;

template <typename T>
inline int64_t tile_width(int64_t n_axis, int64_t O, int64_t In, int nt) {
  if (In == 1 && n_axis * static_cast<int64_t>(sizeof(T)) < kTileMinSlice) return 0;
  const int64_t line = std::max<int64_t>(64 / static_cast<int64_t>(sizeof(T)), 1);
  const int64_t fit = kTileBytes / static_cast<int64_t>(sizeof(T)) /
                      std::max<int64_t>(n_axis, 1) / line * line;
  if (fit * static_cast<int64_t>(sizeof(T)) < kTileMinBytes) return 0;
  const int64_t per_o = (nt + O - 1) / std::max<int64_t>(O, 1);     // tiles each o needs
  const int64_t share = ((In + per_o - 1) / per_o + line - 1) / line * line;
  return std::min(fit, std::max(share, line));
}

// Prefetch every line of n elements from p (a segment of a strided row: a tile's or a
// gather strip's); Locality as in prefetch_row.
template <int Write, int Locality = 3, typename T>
inline void prefetch_segment(const T* p, int64_t n) {
  const uintptr_t e = reinterpret_cast<uintptr_t>(p + n);
  for (uintptr_t l = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63); l < e; l += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(l), Write, Locality);
}

template <typename T, typename I, int Red>
int64_t scatter_elements_tiles(const T* data, T* out, const I* idx, const T* upd, int64_t O,
                               int64_t m, int64_t In, int64_t n_axis, int64_t w, int nt) {
  // tile k of a row covers [k * w - off, (k + 1) * w - off), clipped to [0, In)
  const int64_t off = static_cast<int64_t>(reinterpret_cast<uintptr_t>(out) % 64 / sizeof(T));
  const int64_t ntile = (In + off + w - 1) / w;
  const int64_t tasks = O * ntile;
  const int64_t grain = chunk_for(tasks, nt);
  ThreadScratch<T> tiles(n_axis * std::min(w, In), nt, false);   // tw <= min(w, In)
  FirstBad bad(std::max<int64_t>((tasks + grain - 1) / grain, 1));
  parallel_for(tasks, grain, nt, [&](int64_t t0, int64_t t1, int slot) {
    T* tile = tiles(slot);
    int64_t first_bad = kNoBad;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t o = task / ntile, k = task % ntile;
      const int64_t i0 = std::max<int64_t>(0, k * w - off);
      const int64_t tw = std::min(In, (k + 1) * w - off) - i0;
      const T* src = data + o * n_axis * In + i0;
      T* dst = out + o * n_axis * In + i0;
      // the block's rows, copied in and streamed out; a whole-width block (axis -1: In
      // is 1) is one contiguous row
      const int64_t rows = tw == In ? 1 : n_axis, len = tw == In ? n_axis * In : tw;
      for (int64_t v = 0; v < rows; ++v) {
        if (v + kTileFillAhead < rows) prefetch_segment<0, 2>(src + (v + kTileFillAhead) * In, len);
        std::memcpy(tile + v * len, src + v * In, sizeof(T) * len);
      }
      const I* ir = idx + o * m * In + i0;
      const T* ur = upd + o * m * In + i0;
      if (In == 1)    // the last axis: the slice's indices as one span (see _apply)
        first_bad = std::min(first_bad, scatter_span<false, T, I, Red, false>(
                                            tile, ir, ur, 0, m, 1, 0, nullptr, n_axis, o * m));
      else if (tw == In && In < kFlatRow)   // short whole rows
        first_bad = std::min(first_bad, scatter_flat_rows<T, I, Red>(tile, ir, ur, m, In, In,
                                                                     n_axis, o * m * In));
      else
        for (int64_t j = 0; j < m; ++j) {
          if (j + kTileRowsAhead < m) {
            prefetch_segment<0, 2>(ir + (j + kTileRowsAhead) * In, tw);
            prefetch_segment<0, 2>(ur + (j + kTileRowsAhead) * In, tw);
          }
          const int64_t b = scatter_unit_row<T, I, Red, false>(
              tile, ir + j * In, ur + j * In, 0, tw, tw, n_axis, (o * m + j) * In + i0);
          first_bad = std::min(first_bad, b);
        }
      for (int64_t v = 0; v < rows; ++v)
        stream_copy(dst + v * In, tile + v * len, sizeof(T) * len);
    }
    stream_fence();
    bad.note(t0 / grain, first_bad);
  });
  return bad.first();
}

// Last-axis slices (In 1) larger than cached_slice_bytes(): random updates there miss L2,
// so they are first bucketed by target chunk (rows of kTileBytes at most), and then each
// chunk takes its updates while it sits in L2.  Per round of at most kBucketRound
// positions of idx, each part of the round appends (row in chunk, value) to its bucket
// of each chunk (a chain of blocks, so idx is read once: no count pass) and stops at its
// first bad index (then nothing is applied); then each chunk is a task that applies its
// buckets part after part, so every target sees its updates in row-major order: in an L2
// tile that own (data, for contiguous slices in a new output) was copied into and that
// is then streamed out (no read-for-ownership of out's lines; plain stores into the
// fresh pages ran slower in Python: 10M idx 1M 7.9 / 5.1 ms after a pause / back to
// back against 7.7 / 4.8, idx 10k 4.4 / 2.6 against 3.4 / 1.7), or in out.  1-D 10M
// float32, idx 1M "add", 2 threads, in Python, after a pause / back to back: each thread
// applying the updates of its half of the slice, prefetched, 9.6 / 7.7 ms; bucketed 7.5
// / 4.3 (docs/performance.md, thirty-sixth session).
constexpr int64_t kBucketRound = int64_t(1) << 20;

// One part's buckets: entries in blocks of 2^block_shift; per chunk its chain's first and
// last block (-1: empty) and the entries used in the last; per block the next of its
// chain.  A part of len positions takes at most len / block + chunks blocks.
template <typename T>
struct BucketChains {
  uint16_t* at;    // row in chunk (chunks have at most 2^16 rows)
  T* val;
  int32_t* next;
  int32_t* head;   // per chunk
  int32_t* tail;
  int32_t* used;
};

// Positions [b, e) of idx, slice by slice (slice o's indices are positions [o m, o m + m)),
// appended to their chunks' chains.  Returns the first bad position, else kNoBad.
template <typename T, typename I>
inline int64_t bucket_fill(const I* idx, const T* upd, int64_t b, int64_t e, int64_t m,
                           int64_t n_axis, int64_t per_slice, int shift, int block_shift,
                           BucketChains<T> c) {
  const uint32_t low = static_cast<uint32_t>((int64_t(1) << shift) - 1);
  const int32_t block = int32_t(1) << block_shift;
  // entries in a line of val or of at, the shorter; each new line prefetches the next two
  // for writing (the chains' lines are not in cache after a pause, and the L2 streamer
  // does not follow some 300 streams): 1-D 10M float32, idx 1M "add", 2 threads, a
  // harness, after evicting the caches 7.2-7.9 -> 6.7-7.0 ms, back to back the same
  constexpr int32_t kLine = 64 / sizeof(T) < 32 ? 64 / sizeof(T) : 32;
  int32_t blocks = 0;
  for (int64_t s0 = b / m * m; s0 < e; s0 += m) {
    const int64_t k0 = s0 / m * per_slice;
    for (int64_t p = std::max(b, s0), q = std::min(e, s0 + m); p < q; ++p) {
      const int64_t v = norm_index(idx[p], n_axis);
      if (v < 0) return p;
      const int64_t k = k0 + (v >> shift);
      int32_t u = c.used[k];
      if (u == block) {   // the chain's last block is full (or there is none)
        if (c.head[k] < 0) c.head[k] = blocks; else c.next[c.tail[k]] = blocks;
        c.next[blocks] = -1;
        c.tail[k] = blocks++;
        u = 0;
      }
      const int64_t i = (static_cast<int64_t>(c.tail[k]) << block_shift) + u;
      if ((u & (kLine - 1)) == 0) {   // a new line: the RFO of the chain's next lines starts
        __builtin_prefetch(c.val + i + 128 / sizeof(T), 1, 3);
        __builtin_prefetch(c.at + i + 64, 1, 3);
      }
      c.at[i] = static_cast<uint16_t>(static_cast<uint32_t>(v) & low);
      c.val[i] = upd[p];
      c.used[k] = u + 1;
    }
  }
  return kNoBad;
}

// tile[at * s_axis] = reduce(tile[at * s_axis], val) along chunk k's chain, in order
template <typename T, int Red>
inline void bucket_apply(T* tile, int64_t s_axis, const BucketChains<T>& c, int64_t k,
                         int block_shift) {
  for (int32_t blk = c.head[k]; blk >= 0; blk = c.next[blk]) {
    const int64_t i0 = static_cast<int64_t>(blk) << block_shift;
    const int64_t i1 = i0 + (blk == c.tail[k] ? c.used[k] : int32_t(1) << block_shift);
    for (int64_t i = i0; i < i1; ++i) {
      T* p = tile + static_cast<int64_t>(c.at[i]) * s_axis;
      *p = reduce_op<T, Red>(*p, c.val[i]);
    }
  }
}

// The chains' storage, `bytes` of it: kept by each calling thread between calls,
// because a fresh allocation of this size is a fresh mapping whose page faults cost more
// than the bucketing saves (1-D 1M float32, idx 1M, 2 threads: 8.3 ms with new arrays
// per call, against 3.4 unbucketed).  About kBucketRound * (2 + sizeof(T)) bytes.
inline char* bucket_storage(size_t bytes) {
  static thread_local std::unique_ptr<char[]> buf;
  static thread_local size_t size = 0;
  if (bytes > size) {
    buf.reset();
    size = 0;   // (a failed allocation leaves none)
    buf.reset(new char[bytes]);
    size = bytes;
  }
  return buf.get();
}

inline size_t line_up(size_t bytes) { return (bytes + 63) / 64 * 64; }

template <typename T, typename I, int Red>
int64_t scatter_slices_bucketed(T* out, const T* own, const I* idx, const T* upd, int64_t O,
                                int64_t m, const int64_t* outer_off, int64_t s_outer,
                                int64_t s_axis, int64_t n_axis, int64_t out_size, int nt) {
  int shift = 0;   // chunks of 2^shift rows
  const int64_t row_bytes = s_axis * static_cast<int64_t>(sizeof(T));
  while (shift < 16 && (int64_t(2) << shift) * row_bytes <= kTileBytes) ++shift;
  const int64_t rows = int64_t(1) << shift, per_slice = ((n_axis - 1) >> shift) + 1;
  const int64_t chunks = size_mul(O, per_slice), total = size_mul(O, m);
  const int parts = static_cast<int>(std::max<int64_t>(std::min<int64_t>(nt, total), 1));
  const int64_t round_len = std::min(total, kBucketRound), part_max = round_len / parts + 1;
  // blocks of about a quarter of a chunk's share of a part's updates, 16 to 1024 entries:
  // the chains' partly used last blocks stay a small part of the storage
  int block_shift = 4;
  while (block_shift < 10 && (int64_t(4) << block_shift) * chunks <= part_max) ++block_shift;
  const int64_t blocks = size_add(part_max >> block_shift, chunks + 1);
  const int64_t entries = size_mul(blocks, int64_t(1) << block_shift);
  const size_t at_bytes = line_up(sizeof(uint16_t) * static_cast<size_t>(entries));
  const size_t val_bytes = line_up(sizeof(T) * static_cast<size_t>(entries));
  const size_t next_bytes = line_up(sizeof(int32_t) * static_cast<size_t>(blocks));
  const size_t part_bytes = at_bytes + val_bytes + next_bytes;
  char* store = bucket_storage(part_bytes * static_cast<size_t>(parts));
  ThreadScratch<int32_t> ends(size_mul(3, chunks), parts, false);   // head, tail, used
  std::vector<BucketChains<T>> chain(static_cast<size_t>(parts));
  for (int t = 0; t < parts; ++t) {
    char* base = store + part_bytes * static_cast<size_t>(t);
    chain[t] = {reinterpret_cast<uint16_t*>(base), reinterpret_cast<T*>(base + at_bytes),
                reinterpret_cast<int32_t*>(base + at_bytes + val_bytes), ends(t),
                ends(t) + chunks, ends(t) + 2 * chunks};
  }
  const bool stream = out_size * static_cast<int64_t>(sizeof(T)) >= kStreamBytes;
  std::optional<ThreadScratch<T>> tiles;
  if (own) tiles.emplace(rows, nt, false);
  for (int64_t r0 = 0; r0 < total; r0 += round_len) {
    const int64_t r1 = std::min(total, r0 + round_len);
    auto part_begin = [&](int64_t t) { return r0 + (r1 - r0) * t / parts; };
    FirstBad bad(parts);
    parallel_parts(parts, [&](int64_t t) {
      const BucketChains<T>& c = chain[t];
      std::fill_n(c.head, chunks, -1);
      std::fill_n(c.used, chunks, int32_t(1) << block_shift);
      bad.note(t, bucket_fill(idx, upd, part_begin(t), part_begin(t + 1), m, n_axis, per_slice,
                              shift, block_shift, c));
    });
    if (bad.first() != kNoBad) return bad.first();
    const T* src = r0 == 0 ? own : nullptr;
    parallel_for(chunks, chunk_for(chunks, nt), nt, [&](int64_t k0, int64_t k1, int slot) {
      for (int64_t k = k0; k < k1; ++k) {
        const int64_t o = k / per_slice, v0 = (k % per_slice) << shift;
        const int64_t len = std::min(rows, n_axis - v0);
        const int64_t off = (outer_off ? outer_off[o] : o * s_outer) + v0 * s_axis;
        bool any = false;
        for (const BucketChains<T>& c : chain) any |= c.head[k] >= 0;
        T* dst = out + off;
        T* tile = src && any ? (*tiles)(slot) : dst;
        if (src && any) std::memcpy(tile, src + off, sizeof(T) * static_cast<size_t>(len));
        for (const BucketChains<T>& c : chain)
          bucket_apply<T, Red>(tile, s_axis, c, k, block_shift);
        if (src) {
          const T* from = any ? tile : src + off;
          if (stream)
            stream_copy(dst, from, sizeof(T) * static_cast<size_t>(len));
          else
            std::memcpy(dst, from, sizeof(T) * static_cast<size_t>(len));
        }
      }
      if (stream) stream_fence();
    });
  }
  return kNoBad;
}

template <typename T, typename I>
int64_t scatter_elements(const T* data, T* out, int64_t out_size, const I* idx, const T* upd,
                         int64_t O, int64_t m, int64_t In, const int64_t* outer_off,
                         const int64_t* inner_off, int64_t s_outer, int64_t s_inner,
                         int64_t s_axis, int64_t n_axis, int reduction, int nthreads) {
  const int64_t count = O * m * In;
  const int nt = threads_for(work_product(count, kRandomAccessUnits) + out_size, nthreads,
                             kRandomAccessUnits);
  // Into a new output whose blocks the tasks tile (indices of data's shape outside the
  // axis, the usual case) the updates land in L2 tiles where they fit
  // (scatter_elements_tiles).  (O == 1 has s_outer 0 from the Python layer.)
  const bool tiles_fit = data && !outer_off && !inner_off && s_inner == 1 && s_axis == In &&
                         (O == 1 || s_outer == n_axis * In) && O * n_axis * In == out_size;
  const int64_t w = tiles_fit ? tile_width<T>(n_axis, O, In, nt) : 0;
  // Last-axis slices too small for tiles (kTileMinSlice) are copied by their own task
  // just before its updates: one pass, each slice in L1 (8400x80 float32, idx 8400x5
  // axis 1 "add", 2 threads, hot: the copy pass first 0.216 ms, torch 0.187).
  const T* own_slices = tiles_fit && w == 0 && In == 1 ? data : nullptr;
  const bool long_slices =
      In == 1 && n_axis * s_axis * static_cast<int64_t>(sizeof(T)) > cached_slice_bytes();
  if (data && w == 0 && !own_slices) {
    // Else a new output (the caller drops it when an index is bad) is copied first
    // (copy_part), then the updates land in it; they check each index where they read
    // it, so idx is read once.  A separate check pass read its 8 MB again:
    // scatter_elements 2000x2000 float32 idx 500x2000 (int64), 2 threads, after a pause,
    // "none" / "add" 4.3 / 5.7-6.2 -> 3.75 / 5.45 ms.  (Each task copying its own block
    // just before its updates, with plain stores, was slower on tall axes: 4096x4096
    // float32 idx 1x4096 4.6 against 3.6-3.9 ms, 20000x500 idx 2000x500 5.1-5.5 against
    // 4.3-5.2.)
    parallel_parts(nt, [&](int64_t t) { copy_part(data, out, out_size, t, nt); });
  } else if (!data) {
    // In place (out is the caller's data): nothing is written unless every index is good.
    const int64_t chunk = 1 << 14;
    const int64_t nchunks = (count + chunk - 1) / chunk;
    FirstBad bad(nt);
    const int64_t per = (nchunks + nt - 1) / nt;
    parallel_parts(nt, [&](int64_t t) {
      for (int64_t c = t * per; c < std::min(nchunks, (t + 1) * per) && !bad.seen(t); ++c)
        bad.note(t, first_bad_in(idx, c * chunk, std::min(count, (c + 1) * chunk), n_axis));
    });
    if (bad.first() != kNoBad) return bad.first();
  }
  int64_t first_bad = kNoBad;
  with_reduction<T>(reduction, [&](auto red) {
    constexpr int Red = decltype(red)::value;
    if (w > 0)
      first_bad = scatter_elements_tiles<T, I, Red>(data, out, idx, upd, O, m, In, n_axis, w, nt);
    else if (long_slices)
      first_bad = scatter_slices_bucketed<T, I, Red>(
          out + (inner_off ? inner_off[0] : 0), own_slices, idx, upd, O, m, outer_off, s_outer,
          s_axis, n_axis, out_size, nt);
    else
      first_bad = scatter_elements_apply<T, I, Red>(out, idx, upd, O, m, In, outer_off, inner_off,
                                                    s_outer, s_inner, s_axis, n_axis, own_slices,
                                                    nt);
  });
  return first_bad == kNoBad ? -1 : first_bad;
}

// ------------------------------------------------------------------- GatherElements
// Reads may go anywhere (data strided), writes are the contiguous output.  Each index
// is checked where it is read, and the first bad position (the lowest, whatever the
// thread count) is returned: the output is a fresh array that the caller drops when an
// index is bad, so no separate validation pass over idx is needed (that pass read idx,
// twice the output's bytes in int64, once more: gather_elements 2000x2000 float32,
// fastops/_bench/scatter.py).  A bad index gathers 0, so nothing is read out of bounds
// even when another thread rewrites idx meanwhile.
//
// The reads are random rows and the loop is bound by how many of them are in flight, so
// each element's read was prefetched 32 elements early (now: ReadAhead).  Measured with that
// workload (2000x2000 float32, idx 500x2000 axis=0, data in L3, medians, 2026-12-02):
// one thread 3.1-4.8 ms without the prefetch, 2.2-2.9 with it (16: ~2.4, 32 and 64:
// 2.1-2.4); the column stripes of col_block() that the kernel walked before (for L2
// reuse) gained nothing once the reads were prefetched (256 columns 2.2-2.7 ms on two
// threads, whole rows 2.0-2.2), so tasks are spans of whole rows, except over slabs far
// bigger than L2 where one-line strips with the next strip streamed in pay (below).
constexpr int64_t kGatherSpan = 4096;    // columns per task: long rows still split
// Rows of the last-axis view of at most this many bytes (gather_elements) are prefetched
// one row early instead of element by element (see gather_elements), spread over the
// steps of the row before (SpreadLines).
constexpr int64_t kShortRow = int64_t(16) << 10;

// The lines of a span of memory prefetched into L2 a few per step of a loop over other
// data, the rest at the end: gather_elements' next short row over the steps of this one.
// Issued all at once (up to kShortRow / 64 = 256 prefetches) they overran the core's
// outstanding misses on the AMD Zen 1 VM: 2000x2000 float32, idx 2000x500 axis 1, C++
// harness, 2 threads, hot / caches flushed, ms: whole row 4.2 / 5.1, spread 2.3-2.6 /
// 2.4-2.6 (AVX2 gathers, since replaced by load_at_offsets; each element prefetched 32
// ahead instead 3.1 / 3.3, no prefetch 3.7-3.9 / 4.2-4.5).
class SpreadLines {
 public:
  SpreadLines(const void* p, int64_t bytes, int64_t steps)
      : l_(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63)),
        end_(bytes > 0 ? reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes) : l_) {
    const int64_t lines = static_cast<int64_t>((end_ - l_ + 63) / 64);
    per_ = (lines + std::max<int64_t>(steps, 1) - 1) / std::max<int64_t>(steps, 1);
  }
  void step() {
    for (int64_t k = 0; k < per_ && l_ < end_; ++k, l_ += 64) fetch();
  }
  void rest() {
    for (; l_ < end_; l_ += 64) fetch();
  }

 private:
  void fetch() const { __builtin_prefetch(reinterpret_cast<const void*>(l_), 0, 2); }
  uintptr_t l_, end_;
  int64_t per_;
};

// out[i] = base[idx[i] * s_axis + inner(i)] for i in [i0, i1), inner(i) = inner_i[i] or
// i * s_i.  Arguments by value so that the stores to out do not make the compiler
// reload them (extensions build with -fno-strict-aliasing).  Returns the first bad i,
// else kNoBad.
// Ahead: each element's read prefetched as pf says; else `next`, where given, has a line
// prefetched per kSpreadStep elements.
constexpr int64_t kSpreadStep = 8;

// The prefetch of a gather's random reads: none where the slice one index row reads from
// fits one core's L2 (cached_slice_bytes), else into L2 (PREFETCHT1) kFarAhead elements
// early.  (Before: into L1, PREFETCHT0, 32 early everywhere; L1's few outstanding misses
// bound the loop while lines come from DRAM, L2 has many.)  gather_elements float32 idx
// 1M axis 0, AMD Zen 4 VM, 2 threads, ms, A/B in one process against the L1 prefetch:
//   data      after a pause         back to back
//   40 MB     3.47-3.57 -> 1.97-2.04  2.26-2.36 -> 1.69-1.71
//   16 MB     2.47 -> 1.33            1.21 -> 0.94
//   4 MB      1.32 -> 0.97            0.61 -> 0.58
//   2 MB      1.05 -> 0.91            0.55 -> 0.57
//   0.4 MB    0.94 -> 0.87 (none)     0.43 -> 0.38 (none)
// A C++ loop of the 40 MB reads, caches flushed before each call: L1 32 ahead 2.94-3.02,
// L2 32 ahead 2.00-2.19, L2 128 ahead 1.77-1.84 (64 and 256 alike).  Into L2 at 0.8 MB
// (in L2) lost back to back, 0.45 -> 0.52, as both prefetches at once did everywhere
// under 16 MB (0.45-0.63 -> 0.67-0.77).
constexpr int64_t kFarAhead = 128;
struct ReadAhead {
  int64_t dist;  // 0: no prefetch
  explicit ReadAhead(double slice_bytes)
      : dist(slice_bytes > static_cast<double>(cached_slice_bytes()) ? kFarAhead : 0) {}
  void operator()(const void* p) const { __builtin_prefetch(p, 0, 2); }
};

template <bool Unit, typename T, typename I, bool Ahead = true>
inline int64_t gather_span(const T* base, const I* ir, T* orow, int64_t i0, int64_t i1,
                           int64_t s_axis, int64_t s_i, const int64_t* inner_i,
                           int64_t n_axis, ReadAhead pf, SpreadLines* next = nullptr) {
  auto at = [&](int64_t i, int64_t v) {
    return v * s_axis + (Unit ? i : inner_i ? inner_i[i] : i * s_i);
  };
  int64_t first_bad = kNoBad;
  for (int64_t i = i0; i < i1; ++i) {
    if (!Ahead && next && (i - i0) % kSpreadStep == 0) next->step();
    if (Ahead && pf.dist && i + pf.dist < i1) {  // a bad index prefetches row 0 (never faults)
      const int64_t ahead = i + pf.dist;
      pf(base + at(ahead, std::max<int64_t>(norm_index(ir[ahead], n_axis), 0)));
    }
    const int64_t v = norm_index(ir[i], n_axis);
    if (v >= 0) {
      orow[i] = base[at(i, v)];
    } else {
      orow[i] = T(0);
      first_bad = std::min(first_bad, i);
    }
  }
  if (next) next->rest();
  return first_bad;
}

// Whether IndexOffsets (below, x86-64-v3) can form this axis' offsets: a 32x32 -> 64-bit
// multiply of the index by a stride of 0 to 2^31 - 1.
inline bool index_offsets_fit(int64_t n_axis, int64_t s_axis) {
  const int64_t k31 = int64_t(1) << 31;
  return n_axis < k31 && s_axis >= 0 && s_axis < k31;
}

#if defined(__AVX2__)
// dst[0:8] = base[off[0:8]] for two vectors of 4 offsets: scalar loads through the
// offsets, not AVX2 gathers (vpgatherqd / vpgatherqq: microcoded on AMD Zen 1, and slowed
// by Intel's gather-data-sampling fix), 4- and 8-byte elements put together in a vector
// register and stored at once (a store per element stalled on misses: 1.0-1.2x the
// vector).  AMD Zen 1 VM, C++ harness, one thread, in-process alternation, this / the
// gathers: gather_elements float32 8400x80 idx 8400x5 axis 1 0.77, 20000x91 idx k=10
// 0.63, float64 8400x40 0.71, 16800x80 0.86.  1- and 2-byte elements (no gather
// instruction; gather_flat before) are stored one by one: 8400x80 uint8 0.49, int16 0.43.
template <typename T>
inline void load_at_offsets(const T* base, __m256i off0, __m256i off1, T* dst) {
  alignas(32) int64_t o[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(o), off0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(o + 4), off1);
  if constexpr (sizeof(T) == 8) {
    const double* b = reinterpret_cast<const double*>(base);
    double* d = reinterpret_cast<double*>(dst);
    _mm256_storeu_pd(d, _mm256_set_pd(b[o[3]], b[o[2]], b[o[1]], b[o[0]]));
    _mm256_storeu_pd(d + 4, _mm256_set_pd(b[o[7]], b[o[6]], b[o[5]], b[o[4]]));
  } else if constexpr (sizeof(T) == 4) {
    const float* b = reinterpret_cast<const float*>(base);
    _mm256_storeu_ps(reinterpret_cast<float*>(dst),
                     _mm256_set_ps(b[o[7]], b[o[6]], b[o[5]], b[o[4]], b[o[3]], b[o[2]],
                                   b[o[1]], b[o[0]]));
  } else {
    for (int l = 0; l < 8; ++l) dst[l] = base[o[l]];
  }
}

// The 8 indices at ir as two vectors of 4 int64 lanes.
template <typename I>
inline void load_index8(const I* ir, __m256i& v0, __m256i& v1) {
  if constexpr (sizeof(I) == 8) {
    v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ir));
    v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ir + 4));
  } else {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ir));
    v0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(w));
    v1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(w, 1));
  }
}

// The data offsets v * s_axis + inner of 4 indices v (negative ones counted from n_axis),
// a bad lane's 0 (in bounds); returns the bad lanes.  Only where index_offsets_fit.
struct IndexOffsets {
  __m256i n, last, zero, stride;
  IndexOffsets(int64_t n_axis, int64_t s_axis)
      : n(_mm256_set1_epi64x(n_axis)), last(_mm256_set1_epi64x(n_axis - 1)),
        zero(_mm256_setzero_si256()), stride(_mm256_set1_epi64x(s_axis)) {}
  __m256i operator()(__m256i v, __m256i inner, __m256i& off) const {
    v = _mm256_add_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(zero, v), n));
    const __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi64(zero, v), _mm256_cmpgt_epi64(v, last));
    off = _mm256_andnot_si256(bad, _mm256_add_epi64(_mm256_mul_epu32(v, stride), inner));
    return bad;
  }
};

// The x86-64-v3 build's unit-stride span for 4- and 8-byte elements: 8 indices checked
// per step in vector registers, their 64-bit offsets formed there and the elements read
// through them (load_at_offsets; 1- and 2-byte elements lost on this path: uint8 1.1-1.6x
// gather_span, 2000x2000 idx 500x2000 axis 0).  A step with a bad index goes through
// gather_span instead (it writes 0 and reports the position).  The offsets v * s_axis + i
// are formed with a 32x32 -> 64-bit multiply, so the caller passes only n_axis, s_axis <
// 2^31.
// Each step prefetches the elements pf.dist ahead from their vector offsets (ReadAhead;
// without a prefetch, 16 MB of data: 3.6 -> 5.6 ns per element, one thread).
// gather_elements 2000x2000 float32 idx 500x2000 axis 0, scripts/simd_ab.py, AVX2 /
// baseline build: 0.91 on one thread, 0.90 on two (2.77 -> 2.53 ms, 1.59 -> 1.44);
// data of 500 KB (in L2): 1.9 -> 1.7 ns per element.  Step is the inner stride: 1, or 0
// for the last-axis view (gather_elements: every element of the span in one data row).
template <int Step, typename T, typename I, bool Ahead = true>
inline int64_t gather_span_avx2(const T* base, const I* ir, T* orow, int64_t i0, int64_t i1,
                                int64_t s_axis, int64_t n_axis, ReadAhead pf,
                                SpreadLines* next = nullptr) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte elements");
  const IndexOffsets index_offsets(n_axis, s_axis);
  const __m256i step = _mm256_set_epi64x(3, 2, 1, 0);
  int64_t first_bad = kNoBad, i = i0;
  // the offsets of 4 indices from position `at`, a bad lane's 0; returns the bad lanes
  auto offsets = [&](__m256i v, int64_t at, __m256i& off) {
    const __m256i inner = Step ? _mm256_add_epi64(_mm256_set1_epi64x(at), step)
                               : _mm256_setzero_si256();
    return index_offsets(v, inner, off);
  };
  auto load = [&](int64_t at, __m256i& v0, __m256i& v1) { load_index8(ir + at, v0, v1); };
  alignas(32) int64_t ahead[8];
  static_assert(kSpreadStep == 8, "a spread step per vector step");
  for (; i + 8 <= i1; i += 8) {
    __m256i v0, v1, off0, off1;
    if (!Ahead && next) next->step();
    if (Ahead && pf.dist && i + pf.dist + 8 <= i1) {   // (a bad lane prefetches base)
      load(i + pf.dist, v0, v1);
      offsets(v0, i + pf.dist, off0);
      offsets(v1, i + pf.dist + 4, off1);
      _mm256_store_si256(reinterpret_cast<__m256i*>(ahead), off0);
      _mm256_store_si256(reinterpret_cast<__m256i*>(ahead + 4), off1);
      for (int l = 0; l < 8; ++l) pf(base + ahead[l]);
    }
    load(i, v0, v1);
    const __m256i bad = _mm256_or_si256(offsets(v0, i, off0), offsets(v1, i + 4, off1));
    if (!_mm256_testz_si256(bad, bad)) {
      first_bad = std::min(first_bad, gather_span<Step == 1>(base, ir, orow, i, i + 8, s_axis,
                                                             Step, nullptr, n_axis, pf));
      continue;
    }
    load_at_offsets(base, off0, off1, orow + i);
  }
  if (i < i1)
    first_bad = std::min(first_bad, gather_span<Step == 1>(base, ir, orow, i, i1, s_axis, Step,
                                                           nullptr, n_axis, pf));
  if (next) next->rest();
  return first_bad;
}
#endif

// Column strips: where the reads land on random rows of a slab far bigger than L2 and
// each line is read several times (m index rows over n_axis data rows), tasks walk
// strips of one line (kStripBytes) of every data row through all m index rows, so each
// line comes from memory once and is then read from L2; the next strip's lines stream
// in (n_axis / m row prefetches per index row) while this one is gathered, and the
// strided idx/out segments are prefetched kStripRowsAhead rows early (the hardware
// prefetchers stop at page ends; 4 and 16 measured the same).  2 threads, data
// n_axis x In float32, m index rows, after a pause / back to back, ms, medians of 41,
// the row walk -> strips, in one window: 512 x 20000 (41 MB), m 128: 7.6-9.2 / 6.7-8.3
// -> 3.2-3.6 / 2.8 (fastops/_bench/scatter.py's slab workload); 64 x 200000, m 16:
// 9.6-12.2 / 8.6-10.6 -> 5.5-6.0 / 4.8-5.4; 2000 x 2000 (16 MB), m 500 (the issue's
// workload): 2.7-2.9 / 1.66-1.77 -> 2.4-2.7 / 1.67-1.9; but a slab that stays in L3
// (2000 x 250, 2 MB, m 4000) lost back to back, 0.87 -> 1.2, hence kStripSlab.  The
// other thresholds come from a one-thread C++ prototype (rows -> strips, hot / caches
// flushed, ms, n_axis x m x In): 32 x 64 x 50000 5.0 / 5.3 -> 5.4 / 6.0 and 8 x 64 x
// 200000 16.6 -> 21 (few data rows: the row walk's streams are sequential), 2000 x 125
// x 2000 (each line read once per strip) even.  The AVX2 span (gather_span_avx2) in the
// strips was 1.06x slower (scripts/simd_ab.py); the x86-64-v3 build's rows take
// gather_strip_row_avx2, 8 lanes a step without the span's per-step work.  The streamed
// lines and the idx/out segments are prefetched into L2 (PREFETCHT1; the strip in use is in L2
// anyway): on the Intel Xeon (Emerald Rapids) VM, modules alternating in one process,
// 2 threads, after a pause / back to back: 2000 x 2000 0.89-0.90 / 0.98-1.02, the 512 x
// 20000 slab 0.80-0.91 / 0.81-0.87 (C++ harness with the caches flushed: 0.84).
constexpr int64_t kStripBytes = 64;
constexpr double kStripSlab = 8 << 20;
constexpr int64_t kStripRowsAhead = 8;

template <typename T>
inline bool strips_pay(int64_t n_axis, int64_t m, int64_t In, int64_t s_axis) {
  const int64_t w = kStripBytes / static_cast<int64_t>(sizeof(T));
  return w >= 2 && n_axis >= 64 && m * w >= 2 * n_axis && In >= 2 * w &&
         static_cast<double>(n_axis) * std::abs(static_cast<double>(s_axis)) * sizeof(T) >
             kStripSlab;
}

// Task t of O * nstrip (unit inner stride): strip [c0, c1) of outer slice o, the strips
// aligned to the lines of data's first row (which starts `off` elements into a line).
template <typename T>
struct Strips {
  int64_t w, off, nstrip, In;
  Strips(const T* data, int64_t In_) : w(kStripBytes / static_cast<int64_t>(sizeof(T))), In(In_) {
    off = static_cast<int64_t>(reinterpret_cast<uintptr_t>(data) % kStripBytes / sizeof(T));
    nstrip = (In + off + w - 1) / w;
  }
  void at(int64_t t, int64_t& o, int64_t& c0, int64_t& c1) const {
    o = t / nstrip;
    const int64_t k = t % nstrip;
    c0 = std::max<int64_t>(0, k * w - off);
    c1 = std::min(In, (k + 1) * w - off);
  }
};

// A full strip's row, unrolled and without a branch per element: a bad index reads row
// 0 (in bounds) and makes it return true, and the caller redoes the row with
// gather_span, which writes 0 there and finds the position.  2000x2000 idx 500x2000, 2
// threads, after a pause / back to back: 2.41-2.69 / 1.79-1.90 -> 2.24-2.44 / 1.66-1.73 ms.
template <typename T, typename I>
inline bool gather_strip_row(const T* base, const I* ir, T* orow, int64_t c0, int64_t s_axis,
                             int64_t n_axis) {
  constexpr int W = kStripBytes / sizeof(T);
  bool bad = false;
#pragma GCC unroll 64
  for (int k = 0; k < W; ++k) {
    int64_t v = static_cast<int64_t>(ir[k]);
    v += v < 0 ? n_axis : 0;
    const bool ok = static_cast<uint64_t>(v) < static_cast<uint64_t>(n_axis);
    bad |= !ok;
    orow[k] = base[(ok ? v : 0) * s_axis + c0 + k];
  }
  return bad;
}

#if defined(__AVX2__)
// The x86-64-v3 build's full strip row of 4-byte elements: the indices checked and
// their offsets formed 4 at a time in vector registers, the elements read through them
// and stored 8 at a time (load_at_offsets), where the scalar row spends about 10
// instructions and a store per element.  AMD Zen 3 VM, back to back, alternating with
// the scalar row in one process, 2 / 1 threads (docs/performance.md, fifty-third
// session): float32 2000x2000 idx 500x2000 0.83-0.92 / 0.89, 512x20000 idx 128x20000
// 0.85-0.92 / 0.88, 64x200000 idx 16x200000 0.78-0.88 / 0.94, int32 indices 0.85-0.88.
// float64 (one step a row) read 0.99-1.04 and stays scalar.  Bad lanes as
// gather_strip_row's.
template <typename T, typename I>
inline bool gather_strip_row_avx2(const T* base, const I* ir, T* orow, int64_t c0,
                                  const IndexOffsets& offsets) {
  constexpr int W = kStripBytes / sizeof(T);
  static_assert(sizeof(T) == 4 && W % 8 == 0, "4-byte elements, whole steps of 8");
  const __m256i step = _mm256_set_epi64x(3, 2, 1, 0), four = _mm256_set1_epi64x(4);
  __m256i bad = _mm256_setzero_si256();
  for (int k = 0; k < W; k += 8) {
    __m256i v0, v1, off0, off1;
    load_index8(ir + k, v0, v1);
    const __m256i at = _mm256_add_epi64(_mm256_set1_epi64x(c0 + k), step);
    bad = _mm256_or_si256(bad, offsets(v0, at, off0));
    bad = _mm256_or_si256(bad, offsets(v1, _mm256_add_epi64(at, four), off1));
    load_at_offsets(base, off0, off1, orow + k);
  }
  return !_mm256_testz_si256(bad, bad);
}
#endif

template <typename T, typename I>
int64_t gather_strips(const T* data, const I* idx, int64_t O, int64_t m, int64_t In,
                      const int64_t* outer_off, int64_t s_outer, int64_t s_axis,
                      int64_t n_axis, T* out, int nt) {
  const Strips<T> st(data, In);
  const int64_t tasks = O * st.nstrip;
  // few chunks: each chunk's first strip is not streamed in ahead
  const int64_t grain = chunk_for(tasks, nt, 2);
  const int64_t per = (n_axis + m - 1) / m;   // next strip's rows to stream per index row
  const int64_t ahead = kStripRowsAhead * In;
  FirstBad bad(std::max<int64_t>((tasks + grain - 1) / grain, 1));  // per chunk of tasks
#if defined(__AVX2__)
  const bool vec_row = sizeof(T) == 4 && index_offsets_fit(n_axis, s_axis);
  const IndexOffsets offsets(n_axis, s_axis);
#endif
  // a full strip's row; true where it holds a bad index
  auto strip_row = [&](const T* base, const I* ir, T* orow, int64_t c0) {
#if defined(__AVX2__)
    if constexpr (sizeof(T) == 4)
      if (vec_row) return gather_strip_row_avx2(base, ir, orow, c0, offsets);
#endif
    return gather_strip_row(base, ir, orow, c0, s_axis, n_axis);
  };
  parallel_for(tasks, grain, nt, [&, per, ahead](int64_t t0, int64_t t1, int) {
    int64_t first_bad = kNoBad;
    for (int64_t t = t0; t < t1; ++t) {
      int64_t o, c0, c1, no = 0, n0 = 0, n1 = 0;
      st.at(t, o, c0, c1);
      const T* base = data + (outer_off ? outer_off[o] : o * s_outer);
      if (t == t0)
        for (int64_t v = 0; v < n_axis; ++v) prefetch_segment<0>(base + v * s_axis + c0, c1 - c0);
      const bool next = t + 1 < t1;
      if (next) st.at(t + 1, no, n0, n1);
      const T* nbase = data + (outer_off ? outer_off[no] : no * s_outer) + n0;
      const int64_t nlen = n1 - n0, len = c1 - c0;
      int64_t sv = next ? 0 : n_axis;   // next strip's rows streamed so far
      for (int64_t r = 0; r < m; ++r) {
        const int64_t row = (o * m + r) * In;
        for (const int64_t e = std::min(n_axis, sv + per); sv < e; ++sv)
          prefetch_segment<0, 2>(nbase + sv * s_axis, nlen);
        if (r + kStripRowsAhead < m) {
          prefetch_segment<0, 2>(idx + row + ahead + c0, len);
          prefetch_segment<1, 2>(out + row + ahead + c0, len);
        }
        if (len == st.w && !strip_row(base, idx + row + c0, out + row + c0, c0)) continue;
        const int64_t b = gather_span<true>(base, idx + row, out + row, c0, c1, s_axis, 1,
                                            nullptr, n_axis, ReadAhead(0));  // (in L2)
        if (b != kNoBad) first_bad = std::min(first_bad, row + b);
      }
    }
    bad.note(t0 / grain, first_bad);
  });
  return bad.first() == kNoBad ? -1 : bad.first();
}

// Position p of a flat walk over idx viewed as (O, m, In): the offset of its data slice
// (outer) and its inner index i.
struct FlatPos {
  int64_t i, j, o, outer;
  const int64_t *outer_off;
  int64_t m, In, s_outer;
  FlatPos(int64_t p, int64_t m_, int64_t In_, const int64_t* outer_off_, int64_t s_outer_)
      : i(p % In_), j(p / In_ % m_), o(p / In_ / m_), outer_off(outer_off_), m(m_), In(In_),
        s_outer(s_outer_) {
    outer = at(o);
  }
  int64_t at(int64_t q) const { return outer_off ? outer_off[q] : q * s_outer; }
  // to position p + 1, which must exist (outer_off has O entries)
  void next() {
    if (++i < In) return;
    i = 0;
    if (++j < m) return;
    j = 0;
    outer = at(++o);
  }
};

template <typename T, typename I>
int64_t gather_flat(const T* data, const I* idx, T* out, int64_t p0, int64_t p1, int64_t m,
                    int64_t In, const int64_t* outer_off, const int64_t* inner_off,
                    int64_t s_outer, int64_t s_inner, int64_t s_axis, int64_t n_axis,
                    SpreadLines* next = nullptr) {
  FlatPos at(p0, m, In, outer_off, s_outer);
  int64_t first_bad = kNoBad;
  for (int64_t p = p0; p < p1; ++p) {
    if (next && (p - p0) % kSpreadStep == 0) next->step();
    const int64_t v = norm_index(idx[p], n_axis);
    if (v >= 0) {
      out[p] = data[at.outer + v * s_axis + (inner_off ? inner_off[at.i] : at.i * s_inner)];
    } else {
      out[p] = T(0);
      first_bad = std::min(first_bad, p);
    }
    if (p + 1 < p1) at.next();
  }
  if (next) next->rest();
  return first_bad;
}

#if defined(__AVX2__)
// gather_flat over the last-axis view (gather_elements: m 1, inner stride 0) of
// contiguous rows of L < kFlatRow elements, 8 positions per step (load_at_offsets): lane
// offsets outer + v * s_axis.  Positions repeat their rows' pattern every lcm(8, L)
// positions (S = L / gcd(L, 8) steps, the rows moving on by 8 / gcd(L, 8)), so the lanes'
// row offsets come from a table of S steps made per call.  (Each lane's place in its row,
// advanced by 8 and wrapped into rows by a loop of compares per step, ran 0.026 ms
// against torch.gather's 0.025: 8400x80 float32 idx 8400x5 axis 1, 2 threads, hot.)  A
// step with a bad index goes through gather_flat.  n_axis and s_axis < 2^31 (32x32 ->
// 64-bit multiplies).
template <typename T, typename I>
int64_t gather_rows_avx2(const T* data, const I* idx, T* out, int64_t p0, int64_t p1,
                         int64_t L, int64_t s_outer, int64_t s_axis, int64_t n_axis) {
  const IndexOffsets offsets(n_axis, s_axis);
  const int64_t g = std::gcd(L, int64_t(8)), S = L / g, r0 = p0 / L;
  alignas(32) int64_t rows[kFlatRow][8];  // step k, lane l: row of p0 + 8k + l, from r0
  for (int64_t k = 0; k < S; ++k)
    for (int64_t l = 0; l < 8; ++l) rows[k][l] = ((p0 + 8 * k + l) / L - r0) * s_outer;
  const int64_t period = 8 / g * s_outer;
  int64_t base = r0 * s_outer, k = 0;
  int64_t first_bad = kNoBad, p = p0;
  for (; p + 8 <= p1; p += 8) {
    __m256i v[2], off[2], bad = _mm256_setzero_si256();
    load_index8(idx + p, v[0], v[1]);
    const __m256i outer = _mm256_set1_epi64x(base);
    for (int h = 0; h < 2; ++h) {
      const __m256i row = _mm256_add_epi64(
          outer, _mm256_load_si256(reinterpret_cast<const __m256i*>(rows[k] + 4 * h)));
      bad = _mm256_or_si256(bad, offsets(v[h], row, off[h]));
    }
    if (!_mm256_testz_si256(bad, bad)) {
      first_bad = std::min(first_bad, gather_flat(data, idx, out, p, p + 8, 1, L, nullptr,
                                                  nullptr, s_outer, 0, s_axis, n_axis));
    } else {
      load_at_offsets(data, off[0], off[1], out + p);
    }
    if (++k == S) {
      k = 0;
      base += period;
    }
  }
  if (p < p1)
    first_bad = std::min(first_bad, gather_flat(data, idx, out, p, p1, 1, L, nullptr, nullptr,
                                                s_outer, 0, s_axis, n_axis));
  return first_bad;
}

// gather_flat for 4- and 8-byte elements over outer slices of at least 8 positions (m *
// In), 8 positions per step (load_at_offsets): lane offsets outer(o) + v * s_axis +
// inner(i), inner from a table of the In / gcd(In, 8) steps after which it repeats.  A
// step that crosses into the next slice, or holds a bad index, goes through gather_flat.
// next: as gather_flat's (a step of 8 positions is kSpreadStep).  n_axis and s_axis <
// 2^31.  AMD Zen 3 VM, back to back, alternating with gather_flat in one process, 2
// threads (docs/performance.md, fifty-third session): 1000x2000x2 idx 1000x500x2 axis 1
// (the spread slices) float32 0.67, with int32 indices 0.58, float64 0.65; float32
// 200x3000x5 idx 200x1000x5 axis 1 0.86, 4000x3 idx 1000000x3 axis 0 0.82.
template <typename T, typename I>
int64_t gather_flat_avx2(const T* data, const I* idx, T* out, int64_t p0, int64_t p1,
                         int64_t m, int64_t In, const int64_t* outer_off,
                         const int64_t* inner_off, int64_t s_outer, int64_t s_inner,
                         int64_t s_axis, int64_t n_axis, SpreadLines* next = nullptr) {
  static_assert(kSpreadStep == 8, "a spread step per vector step");
  const IndexOffsets offsets(n_axis, s_axis);
  const int64_t R = m * In, S = In / std::gcd(In, int64_t(8));
  alignas(32) int64_t inner[kFlatRow][8];  // step k, lane l: inner(i) of p0 + 8k + l
  for (int64_t k = 0; k < S; ++k)
    for (int64_t l = 0; l < 8; ++l) {
      const int64_t i = (p0 + 8 * k + l) % In;
      inner[k][l] = inner_off ? inner_off[i] : i * s_inner;
    }
  auto flat = [&](int64_t a, int64_t b) {
    return gather_flat(data, idx, out, a, b, m, In, outer_off, inner_off, s_outer, s_inner,
                       s_axis, n_axis);
  };
  int64_t first_bad = kNoBad, p = p0, k = 0, end = p0;  // end: where slice `outer` ends
  __m256i outer = _mm256_setzero_si256();
  for (; p + 8 <= p1; p += 8, k = k + 1 == S ? 0 : k + 1) {
    if (next) next->step();
    if (p >= end) {
      const int64_t o = p / R;
      end = (o + 1) * R;
      outer = _mm256_set1_epi64x(outer_off ? outer_off[o] : o * s_outer);
    }
    __m256i v0, v1, off0, off1;
    load_index8(idx + p, v0, v1);
    const __m256i* in = reinterpret_cast<const __m256i*>(inner[k]);
    const __m256i bad =
        _mm256_or_si256(offsets(v0, _mm256_add_epi64(outer, _mm256_load_si256(in)), off0),
                        offsets(v1, _mm256_add_epi64(outer, _mm256_load_si256(in + 1)), off1));
    if (p + 8 > end || !_mm256_testz_si256(bad, bad))
      first_bad = std::min(first_bad, flat(p, p + 8));
    else
      load_at_offsets(data, off0, off1, out + p);
  }
  if (p < p1) first_bad = std::min(first_bad, flat(p, p1));
  if (next) next->rest();
  return first_bad;
}
#endif

template <typename T, typename I>
int64_t gather_elements(const T* data, const I* idx, int64_t O, int64_t m, int64_t In,
                        const int64_t* outer_off, const int64_t* inner_off, int64_t s_outer,
                        int64_t s_inner, int64_t s_axis, int64_t n_axis, T* out,
                        int nthreads) {
  if (In == 1 && m > 1) {
    // The last axis (and 1-D arrays): index rows of one element, a task and a call
    // each (2000x2000 float32, idx 2000x500 axis 1: 5.0 ms, torch.gather 0.68).  Viewed
    // as (O, 1, m) with inner stride 0, an outer slice's indices are one row of spans.
    return gather_elements(inner_off ? data + inner_off[0] : data, idx, O, 1, m, outer_off,
                           nullptr, s_outer, 0, s_axis, n_axis, out, nthreads);
  }
  const int64_t rows = O * m, nspan = (In + kGatherSpan - 1) / kGatherSpan;
  const int64_t tasks = rows * nspan;   // (row, span of columns), row-major
  const int nt = threads_for(work_product(rows * In, kRandomAccessUnits), nthreads,
                             kRandomAccessUnits);
  const bool small_axis = index_offsets_fit(n_axis, s_axis);  // AVX2 offsets
  if (In < kFlatRow) {
    const int64_t count = rows * In, grain = chunk_for(count, nt, 2);
    const bool rows_view = m == 1 && !outer_off && !inner_off && s_inner == 0 && small_axis;
    // Slices of data whose lines are few against their positions (1000x2000x2 float32,
    // idx 1000x500x2 axis 1: 250 lines of a 16 KB slice for its 1000 gathers) have the
    // next slice's lines prefetched over this one's positions (SpreadLines): the reads
    // are random within a slice, which the hardware prefetchers cannot follow.
    const int64_t per_slice = m * In;
    const int64_t span_bytes =
        ((n_axis - 1) * s_axis + (In - 1) * s_inner + 1) * int64_t(sizeof(T));
    const bool spread = !rows_view && !outer_off && !inner_off && s_axis > 0 &&
                        s_inner >= 0 && s_outer > 0 && span_bytes <= kShortRow &&
                        span_bytes / 64 * 2 <= per_slice;
    FirstBad bad(std::max<int64_t>((count + grain - 1) / grain, 1));
    parallel_for(count, grain, nt, [&](int64_t p0, int64_t p1, int) {
#if defined(__AVX2__)
      if (rows_view) {
        bad.note(p0 / grain, gather_rows_avx2(data, idx, out, p0, p1, In, s_outer, s_axis,
                                              n_axis));
        return;
      }
#endif
      (void)rows_view;
      // gather_flat, or its 8-position steps where the build has them
      auto flat = [&](int64_t q0, int64_t q1, const int64_t* oo, const int64_t* io,
                      SpreadLines* nx) {
#if defined(__AVX2__)
        if constexpr (sizeof(T) == 4 || sizeof(T) == 8)
          if (small_axis && per_slice >= 8)
            return gather_flat_avx2(data, idx, out, q0, q1, m, In, oo, io, s_outer, s_inner,
                                    s_axis, n_axis, nx);
#endif
        return gather_flat(data, idx, out, q0, q1, m, In, oo, io, s_outer, s_inner, s_axis,
                           n_axis, nx);
      };
      if (!spread) {
        bad.note(p0 / grain, flat(p0, p1, outer_off, inner_off, nullptr));
        return;
      }
      int64_t first_bad = kNoBad;
      for (int64_t q0 = p0; q0 < p1;) {   // slice by slice, the next one's lines streamed
        const int64_t o = q0 / per_slice, q1 = std::min(p1, (o + 1) * per_slice);
        const bool last = o + 1 == O;
        SpreadLines nx(last ? data : data + (o + 1) * s_outer, last ? 0 : span_bytes,
                       (q1 - q0) / kSpreadStep);
        first_bad = std::min(first_bad, flat(q0, q1, nullptr, nullptr, &nx));
        q0 = q1;
      }
      bad.note(p0 / grain, first_bad);
    });
    return bad.first() == kNoBad ? -1 : bad.first();
  }
  const bool unit = !inner_off && s_inner == 1;   // the common contiguous case, compiled apart
  if (unit && strips_pay<T>(n_axis, m, In, s_axis))
    return gather_strips(data, idx, O, m, In, outer_off, s_outer, s_axis, n_axis, out, nt);
  const int64_t grain = chunk_for(tasks, nt);
  const bool same_row = !inner_off && s_inner == 0;   // the last-axis view above
  // a short contiguous row of the last-axis view: the next row's lines prefetched while
  // this one is gathered (SpreadLines), not each element by ReadAhead
  const bool short_row = same_row && s_axis == 1 && n_axis * int64_t(sizeof(T)) <= kShortRow;
#if defined(__AVX2__)
  const bool vec = (unit || same_row) && small_axis;  // gather_span_avx2
#endif
  const ReadAhead pf(static_cast<double>(n_axis) * std::abs(static_cast<double>(s_axis)) *
                     sizeof(T));
  FirstBad bad(std::max<int64_t>((tasks + grain - 1) / grain, 1));  // per chunk of tasks
  parallel_for(tasks, grain, nt, [&](int64_t t0, int64_t t1, int) {
    int64_t first_bad = kNoBad;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / nspan, o = r / m;
      const int64_t i0 = (t % nspan) * kGatherSpan, i1 = std::min(In, i0 + kGatherSpan);
      const T* base = data + (outer_off ? outer_off[o] : o * s_outer);
      int64_t b;
      if (short_row) {
        // the next row, during the last span of this one
        const bool ahead = !outer_off && r + 1 < rows && t % nspan == nspan - 1;
        SpreadLines next(ahead ? base + s_outer : base, ahead ? n_axis * int64_t(sizeof(T)) : 0,
                         (i1 - i0) / kSpreadStep);
#if defined(__AVX2__)
        if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
          if (vec) {
            b = gather_span_avx2<0, T, I, false>(base, idx + r * In, out + r * In, i0, i1,
                                                 s_axis, n_axis, pf, &next);
            if (b != kNoBad) first_bad = std::min(first_bad, r * In + b);
            continue;
          }
        }
#endif
        b = gather_span<false, T, I, false>(base, idx + r * In, out + r * In, i0, i1, s_axis, 0,
                                            nullptr, n_axis, pf, &next);
        if (b != kNoBad) first_bad = std::min(first_bad, r * In + b);
        continue;
      }
#if defined(__AVX2__)
      if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
        if (vec) {
          b = unit ? gather_span_avx2<1>(base, idx + r * In, out + r * In, i0, i1, s_axis, n_axis,
                                         pf)
                   : gather_span_avx2<0>(base, idx + r * In, out + r * In, i0, i1, s_axis, n_axis,
                                         pf);
          if (b != kNoBad) first_bad = std::min(first_bad, r * In + b);
          continue;
        }
      }
#endif
      b = unit ? gather_span<true>(base, idx + r * In, out + r * In, i0, i1, s_axis, 1,
                                   nullptr, n_axis, pf)
               : gather_span<false>(base, idx + r * In, out + r * In, i0, i1, s_axis,
                                    s_inner, inner_off, n_axis, pf);
      if (b != kNoBad) first_bad = std::min(first_bad, r * In + b);
    }
    bad.note(t0 / grain, first_bad);
  });
  return bad.first() == kNoBad ? -1 : bad.first();
}

// ------------------------------------------------------------------------ ND helpers
// Row of index tuple n (depth k): batch * batch_rows + row-major position in dims[0:k].
// Returns -1 and sets *bad_d when a component is out of range.
template <typename I>
inline int64_t nd_row(const I* tuple, int k, const int64_t* dims, int64_t* bad_d) {
  int64_t row = 0;
  for (int d = 0; d < k; ++d) {
    const int64_t v = norm_index(tuple[d], dims[d]);
    if (v < 0) {
      *bad_d = d;
      return -1;
    }
    row = row * dims[d] + v;
  }
  return row;
}

// ------------------------------------------------------------------------- ScatterND
// Pass 1 turns index tuples into rows (and finds the first bad one); pass 2 copies data;
// pass 3 applies updates.  Pass 3 keeps duplicates in order by ownership: with short
// rows each thread owns blocks of rows (block-cyclic, at least 4 KiB per block so
// threads never share a cache line) and applies only its own ("none": only the last
// update of each); with long rows every thread walks all N rows over its own column
// range.
// Measured on the 2-core machine (fastops/_bench/scatter.py, 200k rows of 16 float32
// into 1M x 16, one thread): 14.4 ms for the fresh 64 MB output and its copy, ~6 ms for
// the rows pass and the 200k random row writes; the owner test is a small part of it.
template <typename T, int Red>
inline void apply_row(T* o, const T* u, int64_t len) {
  if constexpr (Red == kRedNone) {
    std::memcpy(o, u, sizeof(T) * len);
  } else {
    for (int64_t s = 0; s < len; ++s) o[s] = reduce_op<T, Red>(o[s], u[s]);
  }
}

// Short rows (S < kNdSplitCols) go to owners: thread o owns the blocks of 2^shift rows
// (>= 4 KiB, so threads never share a cache line) with (block % nt) == o, and applies
// its rows' updates in n order (the order of a row's updates, hence its sums' bits and
// the last write of "none", is the serial one).  The index pass sorts each part's
// updates into one bucket per owner (a stable counting sort of its own range of n), so
// an owner walks only its own updates.  Walking all N and skipping the others' rows, a
// branch that mispredicts on half the updates, made two threads slower than one (1Mx16
// float32 200k rows "add" into 16 distinct rows: 4.0 ms on one thread, 5.6 on two; with
// the buckets 2 threads, after a pause / A/B medians: 7.7 -> 6.0 ms, and 8.0 -> 6.5 on
// random rows).  "none" walked all N until the owner counts stopped sharing a cache
// line (it ran slower from the buckets then: 16 distinct rows 5.9 -> 6.8 ms); now, back
// to back, 2 threads, walk -> buckets: 16 distinct rows 4.1-4.4 -> 3.3-3.7 ms, 20000
// distinct 4.8-5.2 -> 3.8-4.7, random rows equal (5.2-5.6).  Long rows split the
// columns instead, which balances perfectly (not tuned by measurement: the workloads
// have S = 16).
constexpr int64_t kNdSplitCols = 4096;

struct NdOwners {
  int shift = 0;
  int64_t mask = -1;   // nt - 1 for a power-of-two team (no division per row), else -1
  int64_t nt = 1;
  int64_t owner(int64_t r) const {
    return mask >= 0 ? (r >> shift) & mask : (r >> shift) % nt;
  }
};

inline NdOwners nd_owners(int64_t S, int64_t itemsize, int64_t nt) {
  NdOwners w;
  while (S > 0 && (int64_t(1) << w.shift) * S * itemsize < 4096) ++w.shift;
  w.nt = nt;
  w.mask = (nt & (nt - 1)) == 0 ? nt - 1 : -1;
  return w;
}

// Writes each row's last update only ("none"), walking updates from the last: the
// first one met for a row (marked in `seen`, a bitmap of out's rows) is its last.
template <typename T>
inline void write_last(T* out, const T* upd, int64_t r, int64_t n, int64_t S, uint64_t* seen) {
  const uint64_t bit = uint64_t(1) << (r & 63);
  if (seen[r >> 6] & bit) return;
  seen[r >> 6] |= bit;
  std::memcpy(out + r * S, upd + n * S, sizeof(T) * S);
}

// Owner o's updates: for each part s, order[bucket (s, o)], bucket (s, o) being
// [start[s * nt + o], start[s * nt + o + 1]) inside part s's range of n; "none" walks
// them backwards (write_last).  Each target row is prefetched kRowsAhead updates early
// ("none" too since it walks buckets: random rows, back to back, 5.3-6.9 -> 4.6-5.1 ms
// in three alternating rounds; the forward walk over all N had lost with it), into L2
// (PREFETCHT1: on the Intel Xeon VM, 1Mx16 200k rows, "none" / "add", 2 threads, after
// a pause 0.92-0.98 / 0.97-1.01, back to back 0.97-1.01 / 0.99-1.0: kept for the one
// rule with the gathers and scatter_elements).
template <typename T, int Red>
void scatter_nd_owner(T* out, const T* upd, const int64_t* rows, const int64_t* order,
                      const int64_t* start, int64_t S, int64_t o, int64_t nt, uint64_t* seen) {
  if constexpr (Red == kRedNone) {
    for (int64_t s = nt - 1; s >= 0; --s) {
      const int64_t b = start[s * nt + o];
      for (int64_t i = start[s * nt + o + 1] - 1; i >= b; --i) {
        if (i - kRowsAhead >= b) prefetch_row<1, 2>(out + rows[order[i - kRowsAhead]] * S, S);
        write_last(out, upd, rows[order[i]], order[i], S, seen);
      }
    }
    return;
  }
  for (int64_t s = 0; s < nt; ++s) {
    const int64_t b = start[s * nt + o], e = start[s * nt + o + 1];
    for (int64_t i = b; i < e; ++i) {
      // A reduction reads its target row: the one kRowsAhead updates ahead is
      // prefetched (1Mx16 float32 200k rows "add", 2 threads, after a pause / hot:
      // 9.2-9.35 / 7.3-8.0 -> 7.05-7.2 / 6.8-7.0 ms).
      if (i + kRowsAhead < e) prefetch_row<1, 2>(out + rows[order[i + kRowsAhead]] * S, S);
      const int64_t n = order[i];
      apply_row<T, Red>(out + rows[n] * S, upd + n * S, S);
    }
  }
}

// rows: scratch of 2N int64 (N where nthreads is 1): each tuple's row, then the
// owners' order of the updates.
template <typename T, typename I>
int64_t scatter_nd(const T* data, T* out, int64_t out_size, const I* idx, int64_t N, int k,
                   const int64_t* dims, const T* upd, int64_t S, int64_t* rows, int reduction,
                   int nthreads) {
  const int nt = threads_for(out_size + N * (S + k), nthreads);
  const bool short_rows = S > 0 && S < kNdSplitCols;
  const bool owners = short_rows && nt > 1;
  const bool last_only = short_rows && reduction == kRedNone;
  const NdOwners w = nd_owners(S, sizeof(T), nt);
  int64_t* order = rows + N;
  std::vector<int64_t> start(owners ? static_cast<size_t>(nt) * nt + 1 : 0);
  // each part's owner counts on their own lines: packed into one vector, the two parts'
  // increments shared a line, and "add" ran slower on 2 threads than on 1 (1Mx16 float32
  // 200k rows into 16 distinct rows, back to back: 6.1 against 4.0 ms)
  ThreadScratch<int64_t> counts(owners ? nt + 1 : 0, owners ? nt : 0);
  // part t: its range of index tuples into rows (and its owner buckets), and its range
  // of the copy
  FirstBad bad(nt);
  const int64_t per = (N + nt - 1) / nt;
  parallel_parts(nt, [&](int64_t t) {
    const int64_t n0 = std::min(N, t * per), n1 = std::min(N, n0 + per);
    int64_t* at = owners ? counts(static_cast<int>(t)) : nullptr;
    for (int64_t n = n0; n < n1; ++n) {
      int64_t d = 0;
      const int64_t r = nd_row(idx + n * k, k, dims, &d);
      if (r < 0) bad.note(t, n * k + d);
      else if (owners) ++at[w.owner(r) + 1];
      rows[n] = r;
    }
    if (owners && !bad.seen(t)) {
      at[0] = n0;
      for (int64_t o = 0; o < nt; ++o) at[o + 1] += at[o];
      for (int64_t o = 0; o < nt; ++o) start[t * nt + o] = at[o];
      if (t == nt - 1) start[nt * nt] = N;
      for (int64_t n = n0; n < n1; ++n) order[at[w.owner(rows[n])]++] = n;
    }
    if (data) copy_part(data, out, out_size, t, nt);
  });
  if (bad.first() != kNoBad) return bad.first();
  if (S == 0) return -1;
  // "none" with short rows: each owner (every row on one thread) walks its updates
  // backwards and writes only the first it meets for each of its rows, the last in n
  // order, marked in a bitmap of out's rows.  Walking forwards it copied every update: 1Mx16
  // float32 200k rows, 2 threads, after a pause, medians of 21 in three alternating
  // rounds: into 16 distinct rows 6.05-6.48 -> 5.47-5.78 ms, 20000 distinct 6.11-6.46 ->
  // 5.71-6.11, random rows unchanged (6.6-7.3 / 5.8-7.1).  (Tiles as in
  // scatter_elements, the rows copied through L2 scratch and streamed out, lost to the
  // copy pass, then glibc's memcpy: 6.5-7.6 ms for 256 KiB tiles, 7.3-9.4 for 8-64 KiB.)
  ThreadScratch<uint64_t> marks(last_only ? (out_size / S + 63) / 64 : 0, last_only ? nt : 0);
  with_reduction<T>(reduction, [&](auto red) {
    constexpr int Red = decltype(red)::value;
    parallel_parts(nt, [&](int64_t t) {
      if (owners) {
        scatter_nd_owner<T, Red>(out, upd, rows, order, start.data(), S, t, nt,
                                 last_only ? marks(static_cast<int>(t)) : nullptr);
        return;
      }
      if (last_only) {   // one thread
        for (int64_t n = N - 1; n >= 0; --n) write_last(out, upd, rows[n], n, S, marks(0));
        return;
      }
      const int64_t len = (S + nt - 1) / nt;  // long rows, or a reduction on one thread: split columns
      const int64_t c0 = std::min(S, t * len), c1 = std::min(S, c0 + len);
      for (int64_t n = 0; n < N && c0 < c1; ++n)
        apply_row<T, Red>(out + rows[n] * S + c0, upd + n * S + c0, c1 - c0);
    });
  });
  return -1;
}

// -------------------------------------------------------------------------- GatherND
// out[n] = row (n / per_batch) * batch_rows + tuple(n) of data (rows of S elements).
//
// Each row is resolved and its first and last lines prefetched kRowsAhead rows before
// it is copied, so that many random reads stay in flight: one index per row without
// batches resolves each row twice (the shorter loop, twenty-ninth session), deeper
// tuples and batches keep a ring of resolved rows (the history below is the ring's)
// (gather_nd 1Mx16 float32 200k rows, fastops/_bench/scatter.py: 64-byte rows 16
// bytes off a line, two lines each).  Before, rows went in blocks of 32, all
// prefetched, then all copied (best of a 4-128 sweep, 2 threads 1.8 ms); the ring
// keeps the misses in flight across the copies: 2 threads, after a pause / hot,
// 2.2-2.3 / 1.7 ms -> 1.7 / 1.3 (16 rows ahead 1.85 / 1.45, 64 2.1 / 1.45).  The rows
// are prefetched into L2 (PREFETCHT1): on the Intel Xeon (Emerald Rapids) VM with the
// table out of the cache, C++ harness, 2 threads, medians of 31 after a 512 MB write
// and a 20 ms sleep, ms: PREFETCHT0 2.1-2.35, only the last line PREFETCHT1 2.0-2.1,
// both 1.77-1.91 (16 rows ahead 1.85-1.94, 48 1.86-2.0, 64 1.82-1.88); back to back
// (the table in L3) all 0.85-0.91.  (The EPYC VM had shown no change, eleventh run.)
//
// With the table in the cache (back to back) the loop's own instructions count: the
// batch of row n is carried from row to row instead of divided out (a 64-bit division
// per row), and rows of 1-128 bytes (powers of two) are copied at a size known to the
// compiler instead of by a call to memcpy (with_row_bytes).  Both together, against
// the division and the call, fastops' modules alternating in one process, 2 threads:
// back to back 0.86-0.87, after a pause 0.975-0.98 (docs/performance.md, twenty-fourth
// run).
template <int64_t RowBytes, typename T, typename I>
int64_t gather_nd_rows(const T* data, const I* idx, int64_t N, int k, const int64_t* dims,
                       int64_t per_batch, int64_t batch_rows, int64_t S, T* out, int nt) {
  const int64_t grain = chunk_for(N, nt), parts = (N + grain - 1) / grain;
  const int64_t row_bytes = RowBytes ? RowBytes : static_cast<int64_t>(sizeof(T)) * S;
  FirstBad bad(std::max<int64_t>(parts, 1));
  // One index per row and no batch dimensions (the common gather_nd): each index is
  // normalized twice, for the prefetch kRowsAhead rows early and for the copy, instead
  // of going through the ring below; the loop is shorter and more rows stay in flight
  // (1Mx16 float32 200k rows, 2 threads, against the ring in one process: 0.83 back to
  // back, 0.91 after a pause).
  if (k == 1 && per_batch >= N && S > 0) {
    const int64_t n_rows = dims[0];
    parallel_for(N, grain, nt, [&](int64_t n0, int64_t n1, int) {
      for (int64_t n = n0; n < n1; ++n) {
        if (n + kRowsAhead < n1) {
          const int64_t a = norm_index(idx[n + kRowsAhead], n_rows);
          prefetch_row<0, 2>(data + std::max<int64_t>(a, 0) * S, S);
        }
        const int64_t v = norm_index(idx[n], n_rows);
        if (v < 0) {
          bad.note(n0 / grain, n);
          continue;
        }
        std::memcpy(out + n * S, data + v * S, static_cast<size_t>(row_bytes));
      }
    });
    return bad.first() == kNoBad ? -1 : bad.first();
  }
  parallel_for(N, grain, nt, [&](int64_t n0, int64_t n1, int) {
    int64_t src_row[kRowsAhead];   // ring: row of n at n % kRowsAhead
    // the batch of the next row to resolve, and where the following batch starts
    int64_t batch = n0 / per_batch, batch_end = (batch + 1) * per_batch;
    auto resolve = [&](int64_t n) {   // (called for n0, n0 + 1, ... in turn)
      if (n >= batch_end) {
        batch = n / per_batch;
        batch_end = (batch + 1) * per_batch;
      }
      int64_t d = 0;
      const int64_t r = nd_row(idx + n * k, k, dims, &d);
      if (r < 0) bad.note(n0 / grain, n * k + d);
      const int64_t row = r < 0 ? -1 : batch * batch_rows + r;
      src_row[n % kRowsAhead] = row;
      if (row >= 0 && S > 0) prefetch_row<0, 2>(data + row * S, S);
    };
    for (int64_t n = n0; n < std::min(n1, n0 + kRowsAhead); ++n) resolve(n);
    for (int64_t n = n0; n < n1; ++n) {
      const int64_t row = src_row[n % kRowsAhead];
      if (n + kRowsAhead < n1) resolve(n + kRowsAhead);
      if (row < 0 || S == 0) continue;   // empty rows: data may be NULL
      std::memcpy(out + n * S, data + row * S, static_cast<size_t>(row_bytes));
    }
  });
  return bad.first() == kNoBad ? -1 : bad.first();
}

// f(std::integral_constant<int64_t, bytes>) for a power of two from B up to 128 bytes,
// else f(std::integral_constant<int64_t, 0>): a row size the copy may take as a constant
template <int64_t B, typename F>
inline int64_t with_row_bytes(int64_t bytes, F&& f) {
  if constexpr (B > 128)
    return f(std::integral_constant<int64_t, 0>{});
  else
    return bytes == B ? f(std::integral_constant<int64_t, B>{}) : with_row_bytes<2 * B>(bytes, f);
}

template <typename T, typename I>
int64_t gather_nd(const T* data, const I* idx, int64_t N, int k, const int64_t* dims,
                  int64_t per_batch, int64_t batch_rows, int64_t S, T* out, int nthreads) {
  const int nt = threads_for(N * (S + k), nthreads);
  return with_row_bytes<sizeof(T)>(static_cast<int64_t>(sizeof(T)) * S, [&](auto bytes) {
    return gather_nd_rows<decltype(bytes)::value>(data, idx, N, k, dims, per_batch, batch_rows,
                                                  S, out, nt);
  });
}

// ------------------------------------------------------- compiled fast-path entries
// For the fast_* functions of scatter.pyx (fastops/_cpu/_fast.pxd): C-contiguous data,
// indices and updates, nthreads threads; in the elements ops, indices have data's shape
// outside the axis.  Elements are words of `itemsize` bytes for bit moves (gathers,
// reduction "none") and the C type of NumPy type number `typenum` for reductions.
// Each returns the kernel's result (-1, or the first bad index position), or
// kFastUnsupported with nothing done when visit_* leaves a type to the general path.
constexpr int64_t kFastUnsupported = -2;

// The kernel's element type for a dtype and reduction, as _kernel_types picks it.
template <typename F>
inline void visit_elements(int typenum, int itemsize, int reduction, F&& f) {
  bool integer = false;
  visit_real(typenum, [&](auto t) { integer = std::is_integral_v<decltype(t)>; });
  if (reduction == kRedNone || (integer && (reduction == kRedAdd || reduction == kRedMul)))
    visit_word(itemsize, f);
  else
    visit_real(typenum, f);
}

inline int64_t scatter_elements_contiguous(int typenum, int itemsize, int index_typenum,
                                           const void* data, void* out, const void* idx,
                                           const void* upd, int64_t O, int64_t m, int64_t In,
                                           int64_t n_axis, int reduction, int nthreads) {
  int64_t r = kFastUnsupported;
  visit_index(index_typenum, [&](auto i) {
    using I = decltype(i);
    visit_elements(typenum, itemsize, reduction, [&](auto t) {
      using T = decltype(t);
      r = scatter_elements(static_cast<const T*>(data), static_cast<T*>(out), O * n_axis * In,
                           static_cast<const I*>(idx), static_cast<const T*>(upd), O, m, In,
                           nullptr, nullptr, n_axis * In, 1, In, n_axis, reduction, nthreads);
    });
  });
  return r;
}

inline int64_t gather_elements_contiguous(int itemsize, int index_typenum, const void* data,
                                          const void* idx, int64_t O, int64_t m, int64_t In,
                                          int64_t n_axis, void* out, int nthreads) {
  int64_t r = kFastUnsupported;
  visit_index(index_typenum, [&](auto i) {
    using I = decltype(i);
    visit_word(itemsize, [&](auto t) {
      using T = decltype(t);
      r = gather_elements(static_cast<const T*>(data), static_cast<const I*>(idx), O, m, In,
                          nullptr, nullptr, n_axis * In, 1, In, n_axis, static_cast<T*>(out),
                          nthreads);
    });
  });
  return r;
}

inline int64_t scatter_nd_contiguous(int typenum, int itemsize, int index_typenum,
                                     const void* data, void* out, int64_t out_size,
                                     const void* idx, int64_t N, int k, const int64_t* dims,
                                     const void* upd, int64_t S, int reduction, int nthreads) {
  int64_t r = kFastUnsupported;
  // (scatter_nd takes 2N: the row of each tuple, then their order by owner)
  std::vector<int64_t> rows(static_cast<size_t>(std::max<int64_t>(size_mul(N, 2), 1)));
  visit_index(index_typenum, [&](auto i) {
    using I = decltype(i);
    visit_elements(typenum, itemsize, reduction, [&](auto t) {
      using T = decltype(t);
      r = scatter_nd(static_cast<const T*>(data), static_cast<T*>(out), out_size,
                     static_cast<const I*>(idx), N, k, dims, static_cast<const T*>(upd), S,
                     rows.data(), reduction, nthreads);
    });
  });
  return r;
}

inline int64_t gather_nd_contiguous(int itemsize, int index_typenum, const void* data,
                                    const void* idx, int64_t N, int k, const int64_t* dims,
                                    int64_t S, void* out, int nthreads) {
  int64_t r = kFastUnsupported;
  int64_t batch_rows = 1;
  for (int d = 0; d < k; ++d) batch_rows *= dims[d];
  visit_index(index_typenum, [&](auto i) {
    using I = decltype(i);
    visit_word(itemsize, [&](auto t) {
      using T = decltype(t);
      r = gather_nd(static_cast<const T*>(data), static_cast<const I*>(idx), N, k, dims, N,
                    batch_rows, S, static_cast<T*>(out), nthreads);
    });
  });
  return r;
}

}  // namespace fastops
