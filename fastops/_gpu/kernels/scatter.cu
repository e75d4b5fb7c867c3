// ScatterElements, ScatterND, GatherElements, GatherND.  Preamble defines:
//   T     element type (the "none" reduction and the gathers run on unsigned words of
//         the element's width; float16 reductions arrive as float)
//   KIND  0 unsigned integer, 1 signed integer, 2 floating point
// Kernels that read indices exist for int32 and int64 (suffix _i32 / _i64); the
// reduction is a runtime argument (0 none, 1 add, 2 mul, 3 max, 4 min), uniform across a
// launch.  All index math is 64-bit and every loop is grid-stride.  Indices are checked
// first (check_elements / nd_rows record the lowest bad position with atomicMin); the
// launchers run the writing kernels only after the host saw no bad index.

template <bool Cond, typename IfTrue, typename IfFalse>
struct pick_type { typedef IfTrue type; };
template <typename IfTrue, typename IfFalse>
struct pick_type<false, IfTrue, IfFalse> { typedef IfFalse type; };
// integer add/mul wrap around: computed in an unsigned type at least as wide as int
typedef typename pick_type<(sizeof(T) <= 4), unsigned int, u64>::type WIDE;

template <typename ToType, typename FromType>
__device__ __forceinline__ ToType bits_as(FromType f) {
  union { FromType from; ToType to; } u;
  u.from = f;
  return u.to;
}

template <typename Idx>
__device__ __forceinline__ i64 norm_index(Idx raw, i64 n) {
  i64 v = (i64)raw;
  v += v < 0 ? n : 0;
  return (u64)v < (u64)n ? v : -1;
}

__device__ __forceinline__ i64 grid_start() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ i64 grid_step() { return (i64)gridDim.x * blockDim.x; }

// Same rules as the CPU (include/scatter.hpp): max/min let a NaN on either side win
// (np.maximum / np.minimum).
__device__ __forceinline__ T combine(T o, T u, int red) {
  if (red == 1) {
#if KIND == 2
    return o + u;
#else
    return (T)((WIDE)o + (WIDE)u);
#endif
  }
  if (red == 2) {
#if KIND == 2
    return o * u;
#else
    return (T)((WIDE)o * (WIDE)u);
#endif
  }
  // max/min: np.maximum / np.minimum (include/scatter.hpp): 3/4 ties -> u (float32/64,
  // integers), 5/6 ties -> o (NumPy's float16 rule); the first NaN wins
  if (red == 3) return is_nan(o) ? o : (is_nan(u) ? u : (o > u ? o : u));
  if (red == 4) return is_nan(o) ? o : (is_nan(u) ? u : (o < u ? o : u));
  if (red == 5) return (o >= u || is_nan(o)) ? o : u;
  if (red == 6) return (o <= u || is_nan(o)) ? o : u;
  return u;
}

// out[0] = combine(out[0], u) atomically.  Native atomics where they have the same
// result (float add; integer add, which wraps the same in two's complement; integer
// max/min); otherwise an atomicCAS loop on the element's word, or on the aligned 32-bit
// word holding an 8/16-bit element (CuPy allocations are 512-byte granular, so that
// word is always inside the allocation).
__device__ __forceinline__ void atomic_combine(T* addr, T u, int red) {
  if (red == 0) {
    *addr = u;  // plain store: duplicates race, one of them wins
    return;
  }
#if KIND == 2
  if (red == 1) {
    atomicAdd(addr, u);
    return;
  }
#else  // integers: 5/6 equal 3/4
  if (red == 5) red = 3;
  if (red == 6) red = 4;
  if constexpr (sizeof(T) == 4) {
    if (red == 1) { atomicAdd((unsigned int*)addr, (unsigned int)u); return; }
#if KIND == 1
    if (red == 3) { atomicMax((int*)addr, (int)u); return; }
    if (red == 4) { atomicMin((int*)addr, (int)u); return; }
#else
    if (red == 3) { atomicMax((unsigned int*)addr, (unsigned int)u); return; }
    if (red == 4) { atomicMin((unsigned int*)addr, (unsigned int)u); return; }
#endif
  }
  if constexpr (sizeof(T) == 8) {
    if (red == 1) { atomicAdd((u64*)addr, (u64)u); return; }
#if KIND == 1
    if (red == 3) { atomicMax((long long*)addr, (long long)u); return; }
    if (red == 4) { atomicMin((long long*)addr, (long long)u); return; }
#else
    if (red == 3) { atomicMax((u64*)addr, (u64)u); return; }
    if (red == 4) { atomicMin((u64*)addr, (u64)u); return; }
#endif
  }
#endif
  if constexpr (sizeof(T) == 8) {
    u64* a = (u64*)addr;
    u64 old = *a, assumed;
    do {
      assumed = old;
      u64 nb = bits_as<u64>(combine(bits_as<T>(assumed), u, red));
      if (nb == assumed) return;
      old = atomicCAS(a, assumed, nb);
    } while (old != assumed);
  } else if constexpr (sizeof(T) == 4) {
    unsigned int* a = (unsigned int*)addr;
    unsigned int old = *a, assumed;
    do {
      assumed = old;
      unsigned int nb = bits_as<unsigned int>(combine(bits_as<T>(assumed), u, red));
      if (nb == assumed) return;
      old = atomicCAS(a, assumed, nb);
    } while (old != assumed);
  } else {  // 8/16-bit integers
    unsigned int* a = (unsigned int*)((size_t)addr & ~(size_t)3);
    const unsigned int shift = (unsigned int)((size_t)addr & 3) * 8;
    const unsigned int lane = sizeof(T) == 1 ? 0xffu : 0xffffu;
    const unsigned int mask = lane << shift;
    unsigned int old = *a, assumed;
    do {
      assumed = old;
      T cur = (T)((assumed >> shift) & lane);
      T nv = combine(cur, u, red);
      unsigned int nb = (assumed & ~mask) | ((((unsigned int)nv) & lane) << shift);
      if (nb == assumed) return;
      old = atomicCAS(a, assumed, nb);
    } while (old != assumed);
  }
}

// ------------------------------------------------------------- elements (along axis)
// Indices viewed as (O, m, In); the element at flat position p = (o, j, i) goes to
// outer(o) + v * s_axis + inner(i), outer(o) = outer_off ? outer_off[o] : o * s_outer.
__device__ __forceinline__ i64 elem_offset(i64 p, i64 v, i64 m, i64 In, const i64* outer_off,
                                           const i64* inner_off, i64 s_outer, i64 s_inner,
                                           i64 s_axis) {
  const i64 o = p / (m * In), i = p % In;
  return (outer_off ? outer_off[o] : o * s_outer) + v * s_axis +
         (inner_off ? inner_off[i] : i * s_inner);
}

template <typename Idx>
__device__ void check_elements_t(const Idx* idx, i64 count, i64 n, u64* bad) {
  for (i64 p = grid_start(); p < count; p += grid_step())
    if (norm_index(idx[p], n) < 0) atomicMin(bad, (u64)p);
}

template <typename Idx>
__device__ void scatter_elements_t(T* out, const Idx* idx, const T* upd, i64 count, i64 m,
                                   i64 In, const i64* outer_off, const i64* inner_off,
                                   i64 s_outer, i64 s_inner, i64 s_axis, i64 n_axis, int red) {
  for (i64 p = grid_start(); p < count; p += grid_step()) {
    // checked before this launch, and again here: another stream (or host thread) may
    // have changed idx since, and that must never write out of bounds
    const i64 v = norm_index(idx[p], n_axis);
    if (v < 0) continue;
    atomic_combine(out + elem_offset(p, v, m, In, outer_off, inner_off, s_outer, s_inner, s_axis),
                   upd[p], red);
  }
}

template <typename Idx>
__device__ void gather_elements_t(const T* data, const Idx* idx, i64 count, i64 m, i64 In,
                                  const i64* outer_off, const i64* inner_off, i64 s_outer,
                                  i64 s_inner, i64 s_axis, i64 n_axis, T* out, u64* bad) {
  for (i64 p = grid_start(); p < count; p += grid_step()) {
    const i64 v = norm_index(idx[p], n_axis);
    if (v < 0) {  // never read out of bounds; the host raises IndexError
      atomicMin(bad, (u64)p);
      continue;
    }
    out[p] = data[elem_offset(p, v, m, In, outer_off, inner_off, s_outer, s_inner, s_axis)];
  }
}

// ----------------------------------------------------------------------- ND (tuples)
// rows[n] = row-major position of tuple n (depth k) in dims[0:k], or -1 if bad.
template <typename Idx>
__device__ void nd_rows_t(const Idx* idx, i64 N, int k, const i64* dims, i64* rows, u64* bad) {
  for (i64 n = grid_start(); n < N; n += grid_step()) {
    i64 row = 0;
    for (int d = 0; d < k; ++d) {
      const i64 v = norm_index(idx[n * k + d], dims[d]);
      if (v < 0) {
        atomicMin(bad, (u64)(n * k + d));
        row = -1;
        break;
      }
      row = row * dims[d] + v;
    }
    rows[n] = row;
  }
}

extern "C" __global__ void scatter_nd_apply(T* out, const T* upd, const i64* rows, i64 N, i64 S,
                                            int red) {
  const i64 count = N * S;
  for (i64 p = grid_start(); p < count; p += grid_step()) {
    const i64 n = p / S, s = p - n * S;
    if (rows[n] < 0) continue;  // rows is private scratch; a bad tuple was reported
    atomic_combine(out + rows[n] * S + s, upd[p], red);
  }
}

// out[n, s] = data[(n / per_batch) * batch_rows + rows[n], s]
extern "C" __global__ void gather_nd_apply(const T* data, const i64* rows, i64 N, i64 per_batch,
                                           i64 batch_rows, i64 S, T* out) {
  const i64 count = N * S;
  for (i64 p = grid_start(); p < count; p += grid_step()) {
    const i64 n = p / S, s = p - n * S;
    out[p] = rows[n] < 0 ? (T)0 : data[((n / per_batch) * batch_rows + rows[n]) * S + s];
  }
}

// ------------------------------------------- float reductions in row-major order (red 1-6)
// Atomics apply duplicates in arrival order, and for floats max/min that order shows:
// +0.0 vs -0.0 ties and NaN payloads.  The CPU applies np.maximum/np.minimum in
// row-major order of the updates (include/scatter.hpp), which has a closed form: the
// result is the largest value by rank (NaN above all, +-0 equal); among ties the last
// update (red 3/4: NumPy's float32/64 rule) or the first value, the data counting as
// first (red 5/6: NumPy's float16 rule; and for NaN under every rule).  So: each
// update's target (targets[p], -1 to skip), atomicMax of the rank key per element, then
// atomicMax/atomicMin of the positions that tie with it, then one pass writes the winner.
#if KIND == 2
__device__ __forceinline__ u64 rank_key(T v, int red) {
  if (is_nan(v)) return ~0ull;
  u64 k = (u64)float_order_key(v);  // -0.0 and +0.0 share a key
  const bool is_min = red == 4 || red == 6;
  if (is_min) k = sizeof(T) == 4 ? (u64)(~(u32)k) : ~k;  // never ~0: that is NaN's
  return k;
}
__device__ __forceinline__ bool first_wins(u64 best, int red) { return best == ~0ull || red >= 5; }

extern "C" __global__ void minmax_init(const T* out, i64 n, int red, u64* best, i64* first,
                                       i64* last) {
  for (i64 e = grid_start(); e < n; e += grid_step()) {
    best[e] = rank_key(out[e], red);
    first[e] = 0x7fffffffffffffffll;
    last[e] = -1;
  }
}
extern "C" __global__ void minmax_best(const i64* targets, const T* upd, i64 count, int red,
                                       u64* best) {
  for (i64 p = grid_start(); p < count; p += grid_step())
    if (targets[p] >= 0) atomicMax(best + targets[p], rank_key(upd[p], red));
}
extern "C" __global__ void minmax_pos(const i64* targets, const T* upd, i64 count, int red,
                                      const u64* best, i64* first, i64* last) {
  for (i64 p = grid_start(); p < count; p += grid_step()) {
    const i64 e = targets[p];
    if (e < 0 || rank_key(upd[p], red) != best[e]) continue;
    if (first_wins(best[e], red)) atomicMin(first + e, p);
    else atomicMax(last + e, p);
  }
}
extern "C" __global__ void minmax_finish(T* out, i64 n, const T* upd, int red, const u64* best,
                                         const i64* first, const i64* last) {
  for (i64 e = grid_start(); e < n; e += grid_step()) {
    if (first_wins(best[e], red)) {
      if (rank_key(out[e], red) != best[e]) out[e] = upd[first[e]];  // the data ties: it wins
    } else if (last[e] >= 0) {
      out[e] = upd[last[e]];
    }
  }
}
#endif

// Float add/mul in row-major order: the update positions sorted (stably) by target, so
// each target's updates are one run in row-major order; the thread at a run's start
// applies the run sequentially, exactly the CPU's sequence of roundings.
// order: positions sorted by target; st[i] = targets[order[i]] (-1: skipped).
#if KIND == 2
extern "C" __global__ void segmented_apply(T* out, const T* upd, const i64* order,
                                           const i64* st, i64 count, int red) {
  for (i64 i = grid_start(); i < count; i += grid_step()) {
    const i64 t = st[i];
    if (t < 0 || (i > 0 && st[i - 1] == t)) continue;
    T acc = out[t];
    for (i64 j = i; j < count && st[j] == t; ++j) acc = combine(acc, upd[order[j]], red);
    out[t] = acc;
  }
}
#endif

// targets[n * S + s] of ScatterND (rows from nd_rows; -1 rows are skipped)
extern "C" __global__ void nd_targets(const i64* rows, i64 N, i64 S, i64* targets) {
  const i64 count = N * S;
  for (i64 p = grid_start(); p < count; p += grid_step()) {
    const i64 n = p / S;
    targets[p] = rows[n] < 0 ? -1 : rows[n] * S + (p - n * S);
  }
}

template <typename Idx>
__device__ void elements_targets_t(const Idx* idx, i64 count, i64 m, i64 In,
                                   const i64* outer_off, const i64* inner_off, i64 s_outer,
                                   i64 s_inner, i64 s_axis, i64 n_axis, i64* targets) {
  for (i64 p = grid_start(); p < count; p += grid_step()) {
    const i64 v = norm_index(idx[p], n_axis);  // re-checked: idx may have changed
    targets[p] = v < 0 ? -1
                       : elem_offset(p, v, m, In, outer_off, inner_off, s_outer, s_inner, s_axis);
  }
}

#define FASTOPS_INDEX_KERNELS(SUFFIX, IDX_TYPE)                                               \
  extern "C" __global__ void check_elements##SUFFIX(const IDX_TYPE* idx, i64 count, i64 n,      \
                                                     u64* bad) {                                \
    check_elements_t<IDX_TYPE>(idx, count, n, bad);                                             \
  }                                                                                             \
  extern "C" __global__ void scatter_elements##SUFFIX(                                          \
      T* out, const IDX_TYPE* idx, const T* upd, i64 count, i64 m, i64 In, const i64* outer_off, \
      const i64* inner_off, i64 s_outer, i64 s_inner, i64 s_axis, i64 n_axis, int red) {        \
    scatter_elements_t<IDX_TYPE>(out, idx, upd, count, m, In, outer_off, inner_off, s_outer,    \
                                 s_inner, s_axis, n_axis, red);                                 \
  }                                                                                             \
  extern "C" __global__ void gather_elements##SUFFIX(                                           \
      const T* data, const IDX_TYPE* idx, i64 count, i64 m, i64 In, const i64* outer_off,        \
      const i64* inner_off, i64 s_outer, i64 s_inner, i64 s_axis, i64 n_axis, T* out,           \
      u64* bad) {                                                                               \
    gather_elements_t<IDX_TYPE>(data, idx, count, m, In, outer_off, inner_off, s_outer,         \
                                s_inner, s_axis, n_axis, out, bad);                             \
  }                                                                                             \
  extern "C" __global__ void elements_targets##SUFFIX(                                          \
      const IDX_TYPE* idx, i64 count, i64 m, i64 In, const i64* outer_off, const i64* inner_off,  \
      i64 s_outer, i64 s_inner, i64 s_axis, i64 n_axis, i64* targets) {                         \
    elements_targets_t<IDX_TYPE>(idx, count, m, In, outer_off, inner_off, s_outer, s_inner,     \
                                 s_axis, n_axis, targets);                                      \
  }                                                                                             \
  extern "C" __global__ void nd_rows##SUFFIX(const IDX_TYPE* idx, i64 N, int k, const i64* dims, \
                                              i64* rows, u64* bad) {                            \
    nd_rows_t<IDX_TYPE>(idx, N, k, dims, rows, bad);                                            \
  }

FASTOPS_INDEX_KERNELS(_i32, int)
FASTOPS_INDEX_KERNELS(_i64, long long)
