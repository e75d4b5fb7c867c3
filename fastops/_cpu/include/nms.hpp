// Non-maximum suppression kernels (ONNX NonMaxSuppression, nms, batched_nms),
// templated on the compute type (float or double).
//
// Every problem (one (batch, class) pair, or one class of batched_nms) runs:
//   1. candidates: boxes whose score is not NaN and (with a threshold) > score_threshold;
//   2. one stable LSD radix sort on an order-preserving integer key of the score, which
//      yields the total order (score desc, box index asc) -- the tie rule everywhere;
//   3. a greedy sweep: a candidate is kept unless its IoU with an already kept box is
//      > iou_threshold.  The IoU test is the ONNX reference's arithmetic in T exactly.
//
// Why a greedy sweep against the kept boxes instead of the full IoU bitmask on the CPU:
// on realistic detections most candidates are suppressed by one of the first kept boxes
// they meet, so the sweep touches ~n*K/2 pairs (K kept) with early exit, while the mask
// always costs n^2/2 (5e7 pair tests at n = 10^4: tens of ms even on 2 threads, while
// the greedy sweep takes 4 ms on bench "nms 10000 realistic", 2-core x86-64).  The mask's one advantage -- parallelism
// -- is kept by `greedy_blocked`: candidates are taken in blocks, each block is tested
// against the boxes kept before it in parallel, then resolved within itself serially.
// That is exactly the greedy result and scales when little is suppressed (K ~ n).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common.hpp"
#include "parallel.hpp"

namespace fastops {
namespace nmsk {

// ------------------------------------------------------------------ order keys
// key(a) < key(b)  <=>  a ranks before b in decreasing score order (a > b).
// -0.0 is folded into +0.0 (they compare equal, so the index decides).
inline uint32_t desc_key(float v) {
  if (v == 0.0f) v = 0.0f;
  uint32_t b;
  std::memcpy(&b, &v, 4);
  uint32_t asc = (b >> 31) ? ~b : (b | 0x80000000u);
  return ~asc;
}
inline uint64_t desc_key(double v) {
  if (v == 0.0) v = 0.0;
  uint64_t b;
  std::memcpy(&b, &v, 8);
  uint64_t asc = (b >> 63) ? ~b : (b | 0x8000000000000000ull);
  return ~asc;
}
template <typename T>
using key_t = typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type;

// Stable LSD radix sort of (key, idx) pairs by key ascending, 8-bit digits; a digit
// that is the same for every key is skipped (scores in (0,1) share their top bits).
template <typename K>
void radix_sort(K* key, int64_t* idx, int64_t n, std::vector<K>& tk,
                std::vector<int64_t>& ti) {
  if (n < 2) return;
  if (n <= 64) {  // insertion sort: stable, cheaper than histograms for tiny inputs
    for (int64_t i = 1; i < n; ++i) {
      K k = key[i];
      int64_t x = idx[i], j = i - 1;
      while (j >= 0 && key[j] > k) {
        key[j + 1] = key[j];
        idx[j + 1] = idx[j];
        --j;
      }
      key[j + 1] = k;
      idx[j + 1] = x;
    }
    return;
  }
  constexpr int P = sizeof(K);
  int64_t hist[P][256];
  std::memset(hist, 0, sizeof(hist));
  for (int64_t i = 0; i < n; ++i) {
    K k = key[i];
    for (int p = 0; p < P; ++p) ++hist[p][(k >> (8 * p)) & 255];
  }
  if (static_cast<int64_t>(tk.size()) < n) {
    tk.resize(n);
    ti.resize(n);
  }
  K *src_k = key, *dst_k = tk.data();
  int64_t *src_i = idx, *dst_i = ti.data();
  for (int p = 0; p < P; ++p) {
    int64_t* h = hist[p];
    if (h[(src_k[0] >> (8 * p)) & 255] == n) continue;  // constant digit
    int64_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      int64_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    for (int64_t i = 0; i < n; ++i) {
      int64_t pos = h[(src_k[i] >> (8 * p)) & 255]++;
      dst_k[pos] = src_k[i];
      dst_i[pos] = src_i[i];
    }
    std::swap(src_k, dst_k);
    std::swap(src_i, dst_i);
  }
  if (src_k != key) {
    std::memcpy(key, src_k, sizeof(K) * n);
    std::memcpy(idx, src_i, sizeof(int64_t) * n);
  }
}

// ------------------------------------------------------------------ boxes
// Normalized boxes of one batch, structure of arrays: lo/hi per axis and the area.
// Axis 0 is the box's coordinates 0 and 2, axis 1 its coordinates 1 and 3 (the IoU is
// symmetric in the axes, so [y1,x1,y2,x2] and [x1,y1,x2,y2] need no reordering).
template <typename T>
struct BoxSet {
  const T *lo0, *lo1, *hi0, *hi1, *area;
};

// center == 0: corners in either order (min/max, as ONNX); center == 1: [c0, c1, w, h]
// with lo = c - w/2, hi = c + w/2 (not reordered: a negative size gives area <= 0).
template <typename T>
void normalize_boxes(const T* b, int64_t B, int64_t N, int64_t sb, int64_t sn, int64_t sc,
                     int center, T off, T* buf, int nthreads) {
  const int nt = threads_for(B * N * 8, nthreads);
  parallel_for(B * N, chunk_for(B * N, nt), nt, [&](int64_t r_lo, int64_t r_hi, int) {
    for (int64_t r = r_lo; r < r_hi; ++r) {
      const int64_t bi = r / N, i = r % N;
      const T* p = b + bi * sb + i * sn;
      T c0 = p[0], c1 = p[sc], c2 = p[2 * sc], c3 = p[3 * sc];
      T l0, l1, h0, h1;
      if (center) {
        T hw = c2 / T(2), hh = c3 / T(2);
        l0 = c0 - hw;
        h0 = c0 + hw;
        l1 = c1 - hh;
        h1 = c1 + hh;
      } else {
        l0 = std::min(c0, c2);
        h0 = std::max(c0, c2);
        l1 = std::min(c1, c3);
        h1 = std::max(c1, c3);
      }
      T* o = buf + bi * 5 * N;
      o[i] = l0;
      o[N + i] = l1;
      o[2 * N + i] = h0;
      o[3 * N + i] = h1;
      o[4 * N + i] = (h0 - l0 + off) * (h1 - l1 + off);
    }
  });
}

template <typename T>
inline BoxSet<T> box_set(const T* buf, int64_t bi, int64_t N) {
  const T* o = buf + bi * 5 * N;
  return BoxSet<T>{o, o + N, o + 2 * N, o + 3 * N, o + 4 * N};
}

// The kept boxes that can suppress (area > 0), as contiguous arrays for the inner loop.
template <typename T>
struct Kept {
  std::vector<T> l0, l1, h0, h1, a;
  int64_t n = 0;
  void reset(int64_t cap) {
    if (static_cast<int64_t>(a.size()) < cap) {
      l0.resize(cap);
      l1.resize(cap);
      h0.resize(cap);
      h1.resize(cap);
      a.resize(cap);
    }
    n = 0;
  }
  inline void push(const BoxSet<T>& bx, int64_t b) {
    l0[n] = bx.lo0[b];
    l1[n] = bx.lo1[b];
    h0[n] = bx.hi0[b];
    h1[n] = bx.hi1[b];
    a[n] = bx.area[b];
    ++n;
  }
};

// Is box b suppressed by kept boxes [from, to)?  ONNX reference arithmetic: the
// intersection must be non-empty on both axes and positive, both areas and the union
// positive, and inter / union > thr.  Branch-free over chunks of 8 so it vectorizes.
template <typename T>
inline bool suppressed(const Kept<T>& k, int64_t from, int64_t to, const BoxSet<T>& bx,
                       int64_t b, T off, T thr) {
  const T bl0 = bx.lo0[b], bl1 = bx.lo1[b], bh0 = bx.hi0[b], bh1 = bx.hi1[b],
          ba = bx.area[b];
  const T *K0 = k.l0.data(), *K1 = k.l1.data(), *H0 = k.h0.data(), *H1 = k.h1.data(),
          *A = k.a.data();
  auto test = [&](int64_t j) -> int {
    T iw = std::min(bh0, H0[j]) - std::max(bl0, K0[j]) + off;
    T ih = std::min(bh1, H1[j]) - std::max(bl1, K1[j]) + off;
    T inter = iw * ih;
    T uni = ba + A[j] - inter;
    return (iw > T(0)) & (ih > T(0)) & (inter > T(0)) & (uni > T(0)) & (inter / uni > thr);
  };
  int64_t j = from;
  for (; j + 8 <= to; j += 8) {
    int hit = 0;
    for (int u = 0; u < 8; ++u) hit |= test(j + u);
    if (hit) return true;
  }
  for (; j < to; ++j)
    if (test(j)) return true;
  return false;
}

// Greedy sweep over sorted candidates cand[0:n); kept box indices -> out, returns count.
// Boxes with area <= 0 (or NaN) are never suppressed and never suppress (ONNX reference).
template <typename T>
int64_t greedy(const BoxSet<T>& bx, const int64_t* cand, int64_t n, int64_t max_out, T thr,
               T off, Kept<T>& kept, int64_t* out) {
  kept.reset(std::min(n, max_out));
  int64_t cnt = 0;
  for (int64_t i = 0; i < n && cnt < max_out; ++i) {
    const int64_t b = cand[i];
    const bool solid = bx.area[b] > T(0);
    if (solid && suppressed(kept, 0, kept.n, bx, b, off, thr)) continue;
    out[cnt++] = b;
    if (solid) kept.push(bx, b);
  }
  return cnt;
}

// The same result as `greedy`, using `nt` threads on one problem.  Serial while few
// boxes are kept (each test is cheap and early exits); once kKeptParallel boxes are
// kept, candidates go in blocks: each block is tested in parallel against the boxes
// kept before it, then its survivors are resolved serially against the boxes kept
// inside the block.  A block holds about 2^21 pair tests, so the join per block
// stays small against the work even when other processes share the cores.
constexpr int64_t kKeptParallel = 1024;

template <typename T>
int64_t greedy_blocked(const BoxSet<T>& bx, const int64_t* cand, int64_t n, int64_t max_out,
                       T thr, T off, Kept<T>& kept, int64_t* out, int nt) {
  kept.reset(std::min(n, max_out));
  int64_t cnt = 0, i0 = 0;
  for (; i0 < n && cnt < max_out && kept.n < kKeptParallel; ++i0) {
    const int64_t b = cand[i0];
    const bool solid = bx.area[b] > T(0);
    if (solid && suppressed(kept, 0, kept.n, bx, b, off, thr)) continue;
    out[cnt++] = b;
    if (solid) kept.push(bx, b);
  }
  if (i0 >= n || cnt >= max_out) return cnt;
  std::vector<unsigned char> alive(std::max<int64_t>(64 * nt, (int64_t(1) << 21) / kKeptParallel));
  int64_t s = i0;
  while (s < n && cnt < max_out) {
    const int64_t k0 = kept.n;
    const int64_t bs = std::min<int64_t>(static_cast<int64_t>(alive.size()),
                                         std::max<int64_t>(64 * nt, (int64_t(1) << 21) / k0));
    const int64_t e = std::min(n, s + bs);
    parallel_for(e - s, chunk_for(e - s, nt), nt, [&](int64_t lo, int64_t hi, int) {
      for (int64_t i = s + lo; i < s + hi; ++i) {
        const int64_t b = cand[i];
        alive[i - s] = !(bx.area[b] > T(0) && suppressed(kept, 0, k0, bx, b, off, thr));
      }
    });
    for (int64_t i = s; i < e && cnt < max_out; ++i) {
      if (!alive[i - s]) continue;
      const int64_t b = cand[i];
      const bool solid = bx.area[b] > T(0);
      if (solid && suppressed(kept, k0, kept.n, bx, b, off, thr)) continue;
      out[cnt++] = b;
      if (solid) kept.push(bx, b);
    }
    s = e;
  }
  return cnt;
}

// Problems with fewer candidates than this always run the serial sweep.  Measured with
// bench "nms 10000": on an idle 2-core machine greedy_blocked gained 1.3x only when
// little is suppressed (sparse boxes, 50 -> 37 ms) and nothing on realistic boxes
// (4.0 ms both); with the cores shared by other processes its barriers cost 3-10x
// (sparse 68 -> 150 ms).  So one problem goes parallel only when it is large.
constexpr int64_t kBlockedMin = 16384;

template <typename T>
struct Scratch {
  std::vector<key_t<T>> key, tk;
  std::vector<int64_t> idx, ti;
  Kept<T> kept;
  void reserve(int64_t n) {
    if (static_cast<int64_t>(key.size()) < n) {
      key.resize(n);
      idx.resize(n);
    }
  }
};

// Candidates of one score row (strided), sorted by (score desc, index asc).
template <typename T>
int64_t sorted_candidates(const T* s, int64_t N, int64_t ss, bool has_thr, T sthr,
                          Scratch<T>& w) {
  w.reserve(N);
  int64_t m = 0;
  for (int64_t i = 0; i < N; ++i) {
    T v = s[i * ss];
    if (v != v || (has_thr && !(v > sthr))) continue;
    w.key[m] = desc_key(v);
    w.idx[m] = i;
    ++m;
  }
  radix_sort(w.key.data(), w.idx.data(), m, w.tk, w.ti);
  return m;
}

}  // namespace nmsk

// ONNX NonMaxSuppression over B batches x C classes.  boxes (B, N, 4) and scores
// (B, C, N) with element strides; `buf` holds B*5*N normalized coordinates.  Problem
// p = b*C + c writes its kept box indices to sel[p*cap : p*cap + counts[p]].
template <typename T>
void nms_onnx(const T* boxes, int64_t B, int64_t N, int64_t sb0, int64_t sb1, int64_t sb2,
              const T* scores, int64_t C, int64_t ss0, int64_t ss1, int64_t ss2, int center,
              T off, int64_t max_out, T iou_thr, bool has_sthr, T sthr, T* buf, int64_t cap,
              int64_t* sel, int64_t* counts, int nthreads) {
  using namespace nmsk;
  normalize_boxes(boxes, B, N, sb0, sb1, sb2, center, off, buf, nthreads);
  const int64_t P = B * C;
  // Few problems and many threads: one problem at a time, each sweep on all threads.
  if (P < nthreads && nthreads > 1) {
    Scratch<T> w;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t bi = p / C, c = p % C;
      int64_t m = sorted_candidates(scores + bi * ss0 + c * ss1, N, ss2, has_sthr, sthr, w);
      BoxSet<T> bx = box_set(buf, bi, N);
      int64_t* out = sel + p * cap;
      counts[p] = m >= kBlockedMin
                      ? greedy_blocked(bx, w.idx.data(), m, max_out, iou_thr, off, w.kept,
                                       out, nthreads)
                      : greedy(bx, w.idx.data(), m, max_out, iou_thr, off, w.kept, out);
    }
    return;
  }
  const int nt = threads_for(P * N * 16, nthreads);
  std::vector<Padded<Scratch<T>>> scratch(static_cast<size_t>(nt));  // sort and sweep
  parallel_for(P, 1, nt, [&](int64_t p_lo, int64_t p_hi, int slot) {
    Scratch<T>& w = scratch[slot].v;
    for (int64_t p = p_lo; p < p_hi; ++p) {
      const int64_t bi = p / C, c = p % C;
      int64_t m = sorted_candidates(scores + bi * ss0 + c * ss1, N, ss2, has_sthr, sthr, w);
      counts[p] = greedy(box_set(buf, bi, N), w.idx.data(), m, max_out, iou_thr, off, w.kept,
                         sel + p * cap);
    }
  });
}

// torchvision batched_nms: boxes (N, 4) [x1,y1,x2,y2], scores (N,), classes (N,) int64.
// Each class is suppressed on its own; keep receives the kept indices in (score desc,
// index asc) order; returns their number.
template <typename T>
int64_t nms_batched(const T* boxes, int64_t N, int64_t sb1, int64_t sb2, const T* scores,
                    int64_t ss, const int64_t* cls, int64_t sc, T iou_thr, T* buf,
                    int64_t* keep, int nthreads) {
  using namespace nmsk;
  normalize_boxes(boxes, int64_t(1), N, N * sb1, sb1, sb2, 0, T(0), buf, nthreads);
  BoxSet<T> bx = box_set(buf, 0, N);
  // score order (stable), then a stable sort by class on top: (class, score desc, idx asc)
  Scratch<T> w;
  const int64_t m = sorted_candidates(scores, N, ss, false, T(0), w);
  std::vector<int64_t> by_score(w.idx.begin(), w.idx.begin() + m);
  std::vector<uint64_t> ck(m), tk;
  std::vector<int64_t> order(by_score), ti;
  for (int64_t i = 0; i < m; ++i)
    ck[i] = static_cast<uint64_t>(cls[order[i] * sc]) ^ 0x8000000000000000ull;
  radix_sort(ck.data(), order.data(), m, tk, ti);
  std::vector<int64_t> seg;  // segment starts, then m
  for (int64_t i = 0; i < m; ++i)
    if (i == 0 || ck[i] != ck[i - 1]) seg.push_back(i);
  seg.push_back(m);
  const int64_t G = static_cast<int64_t>(seg.size()) - 1;
  std::vector<unsigned char> kept_flag(N, 0);
  std::vector<int64_t> out(m);
  auto flag = [&](int64_t g, int64_t cnt) {
    for (int64_t i = 0; i < cnt; ++i) kept_flag[out[seg[g] + i]] = 1;
  };
  const int64_t unlimited = std::numeric_limits<int64_t>::max();
  if (G < 2 * nthreads && nthreads > 1) {  // few classes: each sweep on all threads
    for (int64_t g = 0; g < G; ++g) {
      const int64_t len = seg[g + 1] - seg[g];
      int64_t cnt = len >= kBlockedMin
                        ? greedy_blocked(bx, order.data() + seg[g], len, unlimited, iou_thr,
                                         T(0), w.kept, out.data() + seg[g], nthreads)
                        : greedy(bx, order.data() + seg[g], len, unlimited, iou_thr, T(0),
                                 w.kept, out.data() + seg[g]);
      flag(g, cnt);
    }
  } else {
    const int nt = threads_for(m * 16, nthreads);
    std::vector<Padded<Kept<T>>> kept(static_cast<size_t>(nt));  // grown while it runs
    parallel_for(G, 1, nt, [&](int64_t g_lo, int64_t g_hi, int slot) {
      for (int64_t g = g_lo; g < g_hi; ++g) {
        int64_t cnt = greedy(bx, order.data() + seg[g], seg[g + 1] - seg[g], unlimited,
                             iou_thr, T(0), kept[slot].v, out.data() + seg[g]);
        flag(g, cnt);
      }
    });
  }
  int64_t n = 0;
  for (int64_t i = 0; i < m; ++i)
    if (kept_flag[by_score[i]]) keep[n++] = by_score[i];
  return n;
}

}  // namespace fastops
