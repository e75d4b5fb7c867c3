// TopK, cummax/cummin and NonZero.  Preamble defines:
//   T        element type (float16 arrives as float)
//   KEY      unsigned type of the order key: unsigned int (<= 32-bit T) or u64
//   KEY_BITS 32 or 64
//   KIND     0 unsigned integer, 1 signed integer, 2 floating point
//   U        (nonzero only) unsigned word type the input is read as
// Same rules as the CPU kernels (include/selection.hpp): NaN ranks above every number,
// ties go to the lower index (topk) / the later index (cummax, cummin).

#ifdef KEY
// The low KEY_TOP bits of a key vary, the rest are 0: 8- and 16-bit integers keep only
// their own bits, so the radix select runs 1 or 2 passes instead of 4 (issue 12).
#if KIND == 2
#define KEY_TOP KEY_BITS
#else
#define KEY_TOP (8 * (int)sizeof(T) < KEY_BITS ? 8 * (int)sizeof(T) : KEY_BITS)
#endif
#define KEY_MASK (~(KEY)0 >> (KEY_BITS - KEY_TOP))

// Order-preserving map to unsigned keys: a < b  <=>  key(a) < key(b); every NaN maps
// to the largest key.
__device__ __forceinline__ KEY order_key(T v) {
#if KIND == 0
  return (KEY)v;
#elif KIND == 1
  // T's own bits with their sign bit flipped: the minimum -> 0
  return ((KEY)v & KEY_MASK) ^ ((KEY)1 << (KEY_TOP - 1));
#else
  if (is_nan(v)) return ~(KEY)0;
#if KEY_BITS == 32
  return float_order_key((float)v);
#else
  return float_order_key((double)v);
#endif
#endif
}

// Larger rank key = ranks earlier.  For smallest, NaN (order key max) becomes 0: last.
__device__ __forceinline__ KEY rank_key(T v, int largest) {
  KEY k = order_key(v);
  return largest ? k : (~k & KEY_MASK);
}

__device__ __forceinline__ bool entry_before(KEY ka, i64 ia, KEY kb, i64 ib) {
  return ka > kb || (ka == kb && ia < ib);
}

// One block per row (grid-stride over rows).  Radix select finds the k-th rank key,
// then an ordered pass takes every key above it and the lowest-index equal keys, an
// optional bitonic sort orders the k winners, and the gather writes values/indices.
// The k winners live in P entries, P = next power of two >= k: in dynamic shared memory
// when use_smem (P * (8 + sizeof(KEY)) bytes, indices first), else in the global
// scratch skeys/sidx (P per row; the launcher then sorts there, fastops/_gpu/selection.py).
extern "C" __global__ void topk_rows(const T* x, i64 rows, i64 n, i64 inner, i64 s_outer,
                                     i64 s_n, i64 s_inner, i64 k, int largest, int sorted,
                                     KEY* skeys, i64* sidx, i64 P, int use_smem, T* values,
                                     i64* indices) {
  extern __shared__ u64 topk_smem[];
  __shared__ unsigned long long hist[256];
  __shared__ KEY s_prefix;
  __shared__ i64 s_remaining;
  __shared__ i64 scan_buf[1024];
  const int tid = threadIdx.x, bd = blockDim.x;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const i64 o = r / inner, j = r % inner;
    const T* row = x + o * s_outer + j * s_inner;
    i64* ri = use_smem ? (i64*)topk_smem : sidx + r * P;
    KEY* rk = use_smem ? (KEY*)(topk_smem + P) : skeys + r * P;

    KEY prefix = 0, mask = 0;
    i64 remaining = k;
    for (int shift = KEY_TOP - 8; shift >= 0; shift -= 8) {
      for (int b = tid; b < 256; b += bd) hist[b] = 0;
      __syncthreads();
      for (i64 i = tid; i < n; i += bd) {
        KEY key = rank_key(row[i * s_n], largest);
        if ((key & mask) == prefix) atomicAdd(&hist[(key >> shift) & 255], 1ull);
      }
      __syncthreads();
      // The bin holding the remaining-th key, from the top: thread t takes bin 255 - t,
      // a block scan counts the keys in the bins above it, and the one thread whose bin
      // crosses `remaining` sets the prefix (thread 0 walking 256 bins was most of a
      // short row's time; the launcher runs 256 threads per block).
      {
        const i64 c = tid < 256 ? (i64)hist[255 - tid] : 0;
        const i64 above_incl = block_inclusive_scan<i64>(c, scan_buf);
        const i64 above = above_incl - c;
        if (tid < 256 && above < remaining && remaining <= above_incl) {
          s_prefix = prefix | ((KEY)(255 - tid) << shift);
          s_remaining = remaining - above;
        }
      }
      __syncthreads();
      prefix = s_prefix;
      remaining = s_remaining;
      mask |= (KEY)255 << shift;
      __syncthreads();
    }
    const KEY kth = prefix;
    const i64 take_eq = remaining;
    // Ordered compaction: the winners (every key above the k-th, then the lowest-index
    // keys equal to it) go to their slots in index order, by two block scans per tile,
    // so the unsorted output is deterministic (ascending index, as on the CPU).
    i64 eq_base = 0, sel_base = 0;
    for (i64 base = 0; base < n; base += bd) {
      const i64 i = base + tid;
      KEY key = 0;
      i64 is_eq = 0;
      if (i < n) {
        key = rank_key(row[i * s_n], largest);
        is_eq = key == kth;
      }
      const i64 incl_eq = block_inclusive_scan<i64>(is_eq, scan_buf);
      const i64 sel = i < n && (key > kth || (is_eq && eq_base + incl_eq - is_eq < take_eq));
      const i64 incl_sel = block_inclusive_scan<i64>(sel, scan_buf);
      const i64 slot = sel_base + incl_sel - sel;
      if (sel && slot < k) {  // more only if x changed since the select passes
        rk[slot] = key;
        ri[slot] = i;
      }
      // the block totals are the last thread's inclusive sums
      if (tid == bd - 1) {
        scan_buf[0] = incl_eq;
        scan_buf[1] = incl_sel;
      }
      __syncthreads();
      eq_base += scan_buf[0];
      sel_base += scan_buf[1];
      __syncthreads();
    }
    for (i64 t = k + tid; t < P; t += bd) {  // padding ranks after every real entry
      rk[t] = 0;
      ri[t] = 0x7fffffffffffffffll;
    }
    __syncthreads();
    if (sorted) {
      for (i64 size = 2; size <= P; size <<= 1) {
        for (i64 stride = size >> 1; stride > 0; stride >>= 1) {
          for (i64 t = tid; t < P / 2; t += bd) {
            const i64 lo = 2 * t - (t & (stride - 1)), hi = lo + stride;
            const bool asc = (lo & size) == 0;  // "ascending" = rank order
            const bool swap = asc ? entry_before(rk[hi], ri[hi], rk[lo], ri[lo])
                                  : entry_before(rk[lo], ri[lo], rk[hi], ri[hi]);
            if (swap) {
              KEY tk = rk[lo]; rk[lo] = rk[hi]; rk[hi] = tk;
              i64 ti = ri[lo]; ri[lo] = ri[hi]; ri[hi] = ti;
            }
          }
          __syncthreads();
        }
      }
    }
    T* vo = values + o * k * inner + j;
    i64* io = indices + o * k * inner + j;
    for (i64 t = tid; t < k; t += bd) {
      // a slot left unfilled (x changed during the passes) holds scratch: never read with it
      const i64 idx = (u64)ri[t] < (u64)n ? ri[t] : 0;
      vo[t * inner] = row[idx * s_n];
      io[t * inner] = idx;
    }
    __syncthreads();
  }
}

// Short rows (n <= 32 * kWarpKeys) and k <= 32: one warp per row, the row's rank keys
// in registers (kWarpKeys a lane).  Winner t is the best entry ranked after winner t-1
// (entry_before: larger key, then lower index): each lane offers its best such entry,
// a butterfly of shuffles picks the warp's, and lane t keeps it.  k passes over
// registers instead of a 256-thread block's radix passes and block scans per row
// (rows of 20-91 class scores: issue 12).  Unsorted output is the CPU's ascending index
// order: a winner's slot is the count of winners with a lower index.
#define kWarpKeys 8
extern "C" __global__ void topk_warp(const T* x, i64 rows, i64 n, i64 inner, i64 s_outer,
                                     i64 s_n, i64 s_inner, i64 k, int largest, int sorted,
                                     T* values, i64* indices) {
  const int lane = threadIdx.x & 31;
  const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
  for (i64 r = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
    const i64 o = r / inner, j = r % inner;
    const T* row = x + o * s_outer + j * s_inner;
    KEY key[kWarpKeys];
#pragma unroll
    for (int m = 0; m < kWarpKeys; ++m) {
      const i64 i = lane + 32 * m;
      key[m] = i < n ? rank_key(row[i * s_n], largest) : (KEY)0;
    }
    KEY prev_k = 0;
    i64 prev_i = -1, mine = -1;           // mine: this lane's winner (lane < k)
    for (i64 t = 0; t < k; ++t) {
      KEY bk = 0;
      i64 bi = 0x7fffffffffffffffll;      // no entry: loses to every real one
#pragma unroll
      for (int m = 0; m < kWarpKeys; ++m) {
        const i64 i = lane + 32 * m;
        const bool after = t == 0 || entry_before(prev_k, prev_i, key[m], i);
        if (i < n && after && entry_before(key[m], i, bk, bi)) {
          bk = key[m];
          bi = i;
        }
      }
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) {
        const KEY ok = __shfl_xor_sync(0xffffffffu, bk, d);
        const i64 oi = __shfl_xor_sync(0xffffffffu, bi, d);
        if (entry_before(ok, oi, bk, bi)) {
          bk = ok;
          bi = oi;
        }
      }
      if (lane == t) mine = bi;
      prev_k = bk;
      prev_i = bi;
    }
    i64 slot = lane;
    if (!sorted) {
      slot = 0;
      for (int s = 0; s < 32; ++s) {
        const i64 other = __shfl_sync(0xffffffffu, mine, s);
        slot += s < k && other < mine;
      }
    }
    if (lane < k) {
      values[o * k * inner + slot * inner + j] = row[mine * s_n];
      indices[o * k * inner + slot * inner + j] = mine;
    }
  }
}

// Running (value, index) state of cummax/cummin.  Combining the summary of an earlier
// segment `a` with that of the later segment `b` applies torch's rule to b's result, so
// the combine is associative and a block-wide scan gives the sequential answer.
struct CumState {
  T v;
  i64 i;
};

__device__ __forceinline__ CumState cum_combine(CumState a, CumState b, int is_max) {
  const bool take_b = is_nan(b.v) ||
                      (!is_nan(a.v) && (is_max ? !(b.v < a.v) : !(b.v > a.v)));
  return take_b ? b : a;
}

// The scans below serve fastops.cummax/cummin and the chunked forms of fastops.dask (the
// same contract as the CPU's cumext_from / cumext_last, include/selection.hpp):
//   has_carry: lane c's running pair starts from (carry_v[c], carry_i[c]) (the running
//              pair of the earlier chunks; lanes are c = o * inner + j) instead of its
//              first element.  The carry is combined with cum_combine, the associative
//              form of the take rule, so the result is the whole array's scan bit for bit.
//   offset:    the global position of element 0 (indices written are i + offset).
//   last_only: only the final running pair of each lane is written, to values[c] /
//              indices[c] ((outer, inner) arrays): the read-only summary pass.

// Contiguous-axis scan (inner == 1): one block per row, tiles of blockDim elements, a
// Hillis-Steele scan of CumState per tile plus the carry of the previous tiles.  Reads
// and writes are coalesced, unlike one thread per row.
//   Rows may be chunks of longer rows (few long rows, fastops/_gpu/selection.py): row r
//   is chunk r % period, of n elements, of row r / period, which starts clen * (r %
//   period) elements into that row; its outputs and indices are placed likewise in
//   output rows of out_n elements.  period = 1, out_n = n: plain rows.
extern "C" __global__ void cumext_rows(const T* x, i64 rows, i64 n, i64 s_row, i64 s_n,
                                       i64 period, i64 clen, i64 out_n,
                                       int is_max, const T* carry_v, const i64* carry_i,
                                       int has_carry, i64 offset, int last_only, T* values,
                                       i64* indices) {
  __shared__ T sv[1024];
  __shared__ i64 si[1024];
  __shared__ CumState carry;
  const int tid = threadIdx.x, bd = blockDim.x;
  for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const i64 row = r / period, start = (r % period) * clen;
    const T* xr = x + row * s_row + start * s_n;
    T* vr = values + row * out_n + start;
    i64* ir = indices + row * out_n + start;
    const i64 first = offset + start;  // global index of element 0 of this chunk
    if (tid == 0 && has_carry) {
      carry.v = carry_v[r];
      carry.i = carry_i[r];
    }
    __syncthreads();
    for (i64 base = 0; base < n; base += bd) {
      const i64 i = base + tid;
      const i64 last = (n - base < bd ? n - base : bd) - 1;  // last valid lane
      CumState e;
      e.v = xr[(i < n ? i : n - 1) * s_n];  // lanes past the end only follow the valid ones
      e.i = i + first;
      for (int off = 1; off < bd; off <<= 1) {
        sv[tid] = e.v;
        si[tid] = e.i;
        __syncthreads();
        if (tid >= off) {
          CumState prev;
          prev.v = sv[tid - off];
          prev.i = si[tid - off];
          e = cum_combine(prev, e, is_max);
        }
        __syncthreads();
      }
      if (base > 0 || has_carry) e = cum_combine(carry, e, is_max);
      if (i < n && !last_only) {
        vr[i] = e.v;
        ir[i] = e.i;
      }
      if (i == n - 1 && last_only) {
        values[r] = e.v;
        indices[r] = e.i;
      }
      __syncthreads();  // everyone has read the old carry
      if (tid == last) carry = e;
      __syncthreads();
    }
  }
}

// One thread per (outer, inner) column, scanning along n; coalesced when inner is the
// contiguous axis.  torch's rule: take x if NaN, or if running is not NaN and x >=/<= it.
//   Columns may be chunks of longer columns (few columns, fastops/_gpu/selection.py): o
//   counts (row, chunk) pairs, chunk o % period of n elements starting clen * (o %
//   period) elements into row o / period, placed likewise in outputs of out_n elements
//   per column.  period = 1, out_n = n: plain columns.
extern "C" __global__ void cumext(const T* x, i64 outer, i64 n, i64 inner, i64 s_outer,
                                  i64 s_n, i64 s_inner, i64 period, i64 clen, i64 out_n,
                                  int is_max, const T* carry_v,
                                  const i64* carry_i, int has_carry, i64 offset,
                                  int last_only, T* values, i64* indices) {
  const i64 cols = outer * inner;
  for (i64 c = (i64)blockIdx.x * blockDim.x + threadIdx.x; c < cols;
       c += (i64)gridDim.x * blockDim.x) {
    const i64 o = c / inner, j = c % inner;
    const i64 row = o / period, start = (o % period) * clen;
    const T* xc = x + row * s_outer + start * s_n + j * s_inner;
    T* vc = values + (row * out_n + start) * inner + j;
    i64* ic = indices + (row * out_n + start) * inner + j;
    const i64 first = offset + start;  // global index of element 0 of this chunk
    // without a carry the first element is taken (the rule takes x against itself)
    T cur = has_carry ? carry_v[c] : xc[0];
    i64 ci = has_carry ? carry_i[c] : first;
    for (i64 i = 0; i < n; ++i) {
      const T v = xc[i * s_n];
      const bool take = is_nan(v) ||
                        (!is_nan(cur) && (is_max ? !(v < cur) : !(v > cur)));
      if (take) {
        cur = v;
        ci = i + first;
      }
      if (!last_only) {
        vc[i * inner] = cur;
        ic[i * inner] = ci;
      }
    }
    if (last_only) {
      values[c] = cur;
      indices[c] = ci;
    }
  }
}
#endif  // KEY

#ifdef U
#define NZ_ITEMS 16
// Bit t set when word first + t (< size) is nonzero under mask, for the NZ_ITEMS words a
// thread owns.  1-byte words come in two 8-byte loads when the run is whole and 8-byte
// aligned (16 one-byte loads per thread otherwise; the issue's "wide loads").
__device__ __forceinline__ unsigned nz_bits(const U* x, i64 size, U mask, i64 first) {
  unsigned bits = 0;
  if (sizeof(U) == 1 && first + NZ_ITEMS <= size &&
      ((unsigned long long)(x + first) & 7ull) == 0) {
    const unsigned long long* w = reinterpret_cast<const unsigned long long*>(x + first);
    for (int q = 0; q < 2; ++q) {
      const unsigned long long v = w[q];
      for (int b = 0; b < 8; ++b)
        bits |= (unsigned)((((v >> (8 * b)) & 0xffull) & (unsigned long long)mask) != 0)
                << (8 * q + b);
    }
    return bits;
  }
  for (int t = 0; t < NZ_ITEMS; ++t) {
    const i64 i = first + t;
    if (i < size && (x[i] & mask) != 0) bits |= 1u << t;
  }
  return bits;
}

// Tiles of blockDim.x * NZ_ITEMS consecutive words, one block each; thread j of a tile
// owns words [j * NZ_ITEMS, (j + 1) * NZ_ITEMS) of it (as nonzero_fill does).
extern "C" __global__ void nonzero_count(const U* x, i64 size, U mask, i64* counts) {
  __shared__ i64 buf[1024];
  const i64 tile = (i64)blockDim.x * NZ_ITEMS;
  const i64 first = (i64)blockIdx.x * tile + (i64)threadIdx.x * NZ_ITEMS;
  const i64 c = __popc(nz_bits(x, size, mask, first));
  const i64 total = block_inclusive_scan<i64>(c, buf);
  if (threadIdx.x == blockDim.x - 1) counts[blockIdx.x] = total;
}

// offsets[b]: first output column of tile b.  Each thread owns NZ_ITEMS consecutive
// words so that a block-wide scan of per-thread counts keeps row-major order.
// `ends[b]` closes tile b's range: a tile whose words changed since the count (another
// stream or host thread) never writes past it; a range left short is zero-filled.
// Coordinates: the thread's first word is decomposed once (ndim divisions), then the
// multi-index is carried forward to each nonzero (a division only on a carry).
extern "C" __global__ void nonzero_fill(const U* x, i64 size, U mask, const i64* offsets,
                                        const i64* ends, int ndim, const i64* shape, i64 nnz,
                                        i64* out) {
  __shared__ i64 buf[1024];
  const i64 tile = (i64)blockDim.x * NZ_ITEMS;
  const i64 first = (i64)blockIdx.x * tile + (i64)threadIdx.x * NZ_ITEMS;
  unsigned bits = nz_bits(x, size, mask, first);
  const i64 c = __popc(bits);
  const i64 incl = block_inclusive_scan<i64>(c, buf);
  const i64 end = ends[blockIdx.x];
  i64 pos = offsets[blockIdx.x] + incl - c;
  // this thread's slots; the last thread also owns the tile's uncounted tail
  const i64 stop = threadIdx.x == blockDim.x - 1 ? end : min(pos + c, end);
  if (bits && pos < stop) {
    i64 coord[64];                    // NumPy's and CuPy's rank limit
    i64 rem = first;
    for (int d = ndim - 1; d >= 0; --d) {
      coord[d] = rem % shape[d];
      rem /= shape[d];
    }
    i64 at = first;
    while (bits && pos < stop) {
      const int t = __ffs((int)bits) - 1;
      bits &= bits - 1;
      coord[ndim - 1] += first + t - at;
      at = first + t;
      for (int d = ndim - 1; d > 0 && coord[d] >= shape[d]; --d) {
        coord[d - 1] += coord[d] / shape[d];
        coord[d] %= shape[d];
      }
      for (int d = 0; d < ndim; ++d) out[(i64)d * nnz + pos] = coord[d];
      ++pos;
    }
  }
  for (; pos < stop; ++pos)
    for (int d = 0; d < ndim; ++d) out[(i64)d * nnz + pos] = 0;
}
#endif  // U
