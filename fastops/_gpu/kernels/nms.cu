// Non-maximum suppression on the device.  Preamble defines:
//   T         compute type (float or double; float16 arrives as float)
//   KEY       unsigned sort key of T's width, KEY_BITS 32 or 64
// Same rules and arithmetic as the CPU kernels (fastops/_cpu/include/nms.hpp):
// candidates have a non-NaN score > score_threshold, the order is (score desc, index
// asc), a pair suppresses when both areas, the intersection on each axis and the union
// are positive and inter / union > thr.  Products use the _rn intrinsics so that NVRTC
// never contracts them into FMAs: the IoU is bit-identical to the CPU's.
//
// Pipeline (launchers in fastops/_gpu/nms.py): nms_prepare (normalized boxes), nms_keys
// (order keys, candidate counts), a stable sort per problem, nms_mask (the 64-bit IoU
// bitmask of each problem's candidates, 64x64 tiles), nms_sweep (one block per problem
// unwraps the mask on the device), nms_emit (output rows).

// std::min / std::max semantics (NaN handling included), as the CPU kernels use
__device__ __forceinline__ T mn(T a, T b) { return (b < a) ? b : a; }
__device__ __forceinline__ T mx(T a, T b) { return (a < b) ? b : a; }

// key(a) < key(b)  <=>  a > b; -0.0 folds into +0.0.  NaN never gets here.
__device__ __forceinline__ KEY desc_key(T v) { return ~float_order_key(v); }

// buf (B, 5, N): lo0, lo1, hi0, hi1, area.  center 0: corners in either order;
// center 1: [c0, c1, w, h] -> c -/+ size / 2, not reordered.
extern "C" __global__ void nms_prepare(const T* boxes, i64 B, i64 N, i64 sb0, i64 sb1,
                                       i64 sb2, int center, T off, T* buf) {
  const i64 total = B * N;
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < total;
       r += (i64)gridDim.x * blockDim.x) {
    const i64 b = r / N, i = r % N;
    const T* p = boxes + b * sb0 + i * sb1;
    T c0 = p[0], c1 = p[sb2], c2 = p[2 * sb2], c3 = p[3 * sb2];
    T l0, l1, h0, h1;
    if (center) {
      T hw = c2 / (T)2, hh = c3 / (T)2;
      l0 = sub_rn(c0, hw);
      h0 = add_rn(c0, hw);
      l1 = sub_rn(c1, hh);
      h1 = add_rn(c1, hh);
    } else {
      l0 = mn(c0, c2);
      h0 = mx(c0, c2);
      l1 = mn(c1, c3);
      h1 = mx(c1, c3);
    }
    T* o = buf + b * 5 * N;
    o[i] = l0;
    o[N + i] = l1;
    o[2 * N + i] = h0;
    o[3 * N + i] = h1;
    o[4 * N + i] = mul_rn(add_rn(sub_rn(h0, l0), off), add_rn(sub_rn(h1, l1), off));
  }
}

// keys (P, N), P = B*C: the order key of each candidate, ~0 (sorts last) otherwise;
// counts[p] += number of candidates.
extern "C" __global__ void nms_keys(const T* scores, i64 B, i64 C, i64 N, i64 ss0, i64 ss1,
                                    i64 ss2, int has_thr, T thr, KEY* keys, u64* counts) {
  const i64 total = B * C * N;
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < total;
       r += (i64)gridDim.x * blockDim.x) {
    const i64 p = r / N, i = r % N;
    const T v = scores[(p / C) * ss0 + (p % C) * ss1 + i * ss2];
    const bool ok = !is_nan(v) && (!has_thr || v > thr);
    keys[r] = ok ? desc_key(v) : ~(KEY)0;
    if (ok) atomicAdd(counts + p, 1ull);
  }
}

// Does the earlier box (row) suppress the later box (col)?  Same expression order as
// nms.hpp's `suppressed` (later box first in min/max).
__device__ __forceinline__ bool iou_gt(T bl0, T bl1, T bh0, T bh1, T ba, T kl0, T kl1,
                                       T kh0, T kh1, T ka, T off, T thr) {
  T iw = add_rn(sub_rn(mn(bh0, kh0), mx(bl0, kl0)), off);
  T ih = add_rn(sub_rn(mn(bh1, kh1), mx(bl1, kl1)), off);
  T inter = mul_rn(iw, ih);
  T uni = sub_rn(add_rn(ba, ka), inter);
  return (iw > (T)0) & (ih > (T)0) & (inter > (T)0) & (uni > (T)0) & (ba > (T)0) &
         (ka > (T)0) & (inter / uni > thr);
}

// A launch group's problems q = 0..z-1 (problem p = p0 + q) are described by rows of
// `tab` (i64, kTab columns, built by fastops/_gpu/nms.py _suppress):
//   ord_start  its first position in `order` (its candidates follow in sorted order)
//   cw         64-bit mask words per row: ceil(rows / 64), rows >= its candidate count
//   mask_off   its first word in `mask` (rows * cw words)
//   tile_off   its first 64x64 tile in the launch (cw * cw tiles)
//   out_off    its first slot in `sel`
//   rem_off    its first word of `removed_g` (cw words)
// counts[p] is its candidate count on the device.  Masks are sized by the candidates
// that pass the score threshold (or by N where the host may not wait for the counts),
// and batched_nms gives each class its own problem: no N x N mask across classes.
#define kTab 6

// One block of 64 threads per tile.  Tile (rb, cb) of problem q sets, for row
// i = rb*64 + t (sorted position), bit k of word cb when the candidate at sorted position
// j = cb*64 + k > i is suppressed by it.  Only tiles with cb >= rb and rows/cols below the
// problem's count are written: the sweep reads nothing else.
extern "C" __global__ void nms_mask(const T* buf, i64 N, i64 C, const i64* order,
                                    const u64* counts, i64 p0, const i64* tab, i64 z, T thr,
                                    T off, u64* mask) {
  const i64 tile = blockIdx.x;
  i64 lo = 0, hi = z - 1;                 // the last problem whose tiles start <= tile
  while (lo < hi) {
    const i64 mid = (lo + hi + 1) / 2;
    if (tab[mid * kTab + 3] <= tile) lo = mid; else hi = mid - 1;
  }
  const i64* row = tab + lo * kTab;
  const i64 p = p0 + lo, cw = row[1], t_in = tile - row[3];
  const i64 rb = t_in / cw, cb = t_in % cw;
  if (cb < rb) return;
  const i64 n = (i64)counts[p];
  const i64 r0 = rb * 64, c0 = cb * 64;
  if (r0 >= n || c0 >= n) return;
  __shared__ T sl0[64], sl1[64], sh0[64], sh1[64], sa[64];
  const T* bx = buf + (p / C) * 5 * N;
  const i64* ord = order + row[0];
  const int t = threadIdx.x;
  const i64 j = c0 + t;
  if (j < n) {
    const i64 bj = ord[j];
    sl0[t] = bx[bj];
    sl1[t] = bx[N + bj];
    sh0[t] = bx[2 * N + bj];
    sh1[t] = bx[3 * N + bj];
    sa[t] = bx[4 * N + bj];
  }
  __syncthreads();
  const i64 i = r0 + t;
  if (i >= n) return;
  const i64 bi = ord[i];
  const T l0 = bx[bi], l1 = bx[N + bi], h0 = bx[2 * N + bi], h1 = bx[3 * N + bi],
          a = bx[4 * N + bi];
  const i64 rem = n - c0;
  const int cols = rem < 64 ? (int)rem : 64;
  u64 bits = 0;
  for (int k = (rb == cb) ? t + 1 : 0; k < cols; ++k)
    if (iou_gt(sl0[k], sl1[k], sh0[k], sh1[k], sa[k], l0, l1, h0, h1, a, off, thr))
      bits |= 1ull << k;
  mask[row[2] + i * cw + cb] = bits;
}

// One block per problem q of the group: the greedy sweep over its mask, 64 rows at a
// time.  Thread 0 resolves a 64-row block with its removed word and the diagonal mask
// words; then all threads OR the kept rows' mask rows into the later removed words.
// removed: shared memory (cw words) when use_shared, else `removed_g` at rem_off.
// Writes at most `limit` kept box indices to sel[out_off:] and their count to
// out_counts[p].
extern "C" __global__ void nms_sweep(const u64* mask, const i64* order, const u64* counts,
                                     i64 p0, const i64* tab, i64 limit, i64* sel,
                                     i64* out_counts, u64* removed_g, int use_shared) {
  extern __shared__ u64 smem[];
  __shared__ u64 s_kept;
  __shared__ i64 s_cnt;
  const i64 q = blockIdx.x, p = p0 + q;
  const i64* row = tab + q * kTab;
  const i64 cw = row[1];
  const int tid = threadIdx.x, bd = blockDim.x;
  u64* rem = use_shared ? smem : removed_g + row[5];
  const i64 n = (i64)counts[p];
  const i64 nblk = (n + 63) / 64;
  const u64* M = mask + row[2];
  const i64* ord = order + row[0];
  i64* out = sel + row[4];
  for (i64 w = tid; w < nblk; w += bd) rem[w] = 0;
  if (tid == 0) s_cnt = 0;
  __syncthreads();
  for (i64 rb = 0; rb < nblk; ++rb) {
    if (tid == 0) {
      u64 r = rem[rb], kept = 0;
      i64 cnt = s_cnt;
      const i64 left = n - rb * 64;
      const int rows = left < 64 ? (int)left : 64;
      for (int k = 0; k < rows && cnt < limit; ++k) {
        if ((r >> k) & 1ull) continue;
        const i64 r_i = rb * 64 + k;
        out[cnt++] = ord[r_i];
        kept |= 1ull << k;
        r |= M[r_i * cw + rb];
      }
      s_kept = kept;
      s_cnt = cnt;
    }
    __syncthreads();
    const u64 kept = s_kept;
    if (s_cnt >= limit) break;            // uniform: every thread reads the same value
    if (kept) {
      for (i64 w = rb + 1 + tid; w < nblk; w += bd) {
        u64 acc = 0, kb = kept;
        while (kb) {
          const int k = __ffsll((long long)kb) - 1;
          kb &= kb - 1;
          acc |= M[(rb * 64 + k) * cw + w];
        }
        rem[w] |= acc;
      }
    }
    __syncthreads();
  }
  if (tid == 0) out_counts[p] = s_cnt;
}

// ONNX rows: problem p's k-th kept box goes to row offsets[p] + k as [p / C, p % C, box].
extern "C" __global__ void nms_emit(const i64* sel, const i64* out_counts, const i64* offsets,
                                    i64 P, i64 C, i64 cap_out, i64* out) {
  const i64 total = P * cap_out;
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < total;
       r += (i64)gridDim.x * blockDim.x) {
    const i64 p = r / cap_out, k = r % cap_out;
    if (k >= out_counts[p]) continue;
    i64* o = out + (offsets[p] + k) * 3;
    o[0] = p / C;
    o[1] = p % C;
    o[2] = sel[r];
  }
}
