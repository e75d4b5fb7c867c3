// RoIAlign (ONNX RoiAlign 10/16/22, MMCV MMCVRoIAlign, torchvision roi_align forward).
//
// x is an (N, C, H, W) map read through element strides; boxes (K, 4) are
// [x1, y1, x2, y2] in input coordinates, batch (K,) validated image indices; out is
// C-contiguous (K, C, PH, PW).  Coordinates and sums are computed in T, in the same
// order as the peers, so float32 results match ONNX Runtime / the ONNX reference.
//
// Algorithm.  Every bilinear sample of a RoI is separable: its row part depends on
// (ph, iy) only and its column part on (pw, ix) only.  So the sample table of each RoI,
// shared by all channels, is stored per axis: up to PH * grid_h row entries and
// PW * grid_w column entries (AxisLerp from interp.hpp: two neighbour offsets and two weights),
// and the four corner weights are multiplied out per sample exactly as the peers do
// (w1 = hy * hx, ...).  A full per-bin table (torchvision's pre_calc) is 4x-30x larger:
// with this one, every table of every RoI fits in cache together (1000 RoIs at 7x7,
// sampling_ratio 2: 670 KiB), which allows the channel-major loop below.
// Work items are (chunk of RoIs of one image, block of kRoiCB channels): the block's
// planes stay in L2 while every RoI of the chunk reads them, instead of all C planes
// being streamed once per RoI; the kRoiCB channels share each table entry and its
// weights, giving four independent accumulation chains.  Measured with
// fastops._bench.roi_align, box head, on the shared 2-core machine (noisy): RoI-major
// per-bin table 424 ms (2 threads, best of 7) -> channel-major separable 240 ms; then
// 1 thread CPU time 270 ms -> 100 ms with 4-channel blocks (8 measured no better).
// When the sampling work is large against the map (many RoIs, or a small FPN level:
// kRoiLaneRatio), each work item (image, block of kRoiLanes channels) first interleaves
// its block into a (H, W, kRoiLanes) slab and roi_channels samples it: every corner is then
// kRoiLanes consecutive values, one SIMD multiply-add per corner instead of kRoiCB scalar
// loads from planes far apart (box head 130 -> 45 ms; frcnn's 10x13 level 20 -> 6 ms).
// Each output element is computed by one fixed sequence of operations (the same in both
// layouts), so results do not depend on the thread count, the chunking or the layout.
//
// Bounded work.  A sample outside the map ([-1, H] x [-1, W]) contributes exactly 0 to
// its bin, so only samples inside are stored and visited: along each axis the samples
// of a bin are monotone in their index, so the inside ones form one run, found by
// bisection (O(log grid)).  A RoI far larger than the map, or far outside it, then costs
// what the map costs, not what its area would (adaptive grids grow with the RoI; 1e6
// coordinates took minutes per channel before).  The average still divides by every
// sample of the bin; a max bin with an outside sample starts from that sample's value,
// +0.  (The peers compute an outside sample as weight 0 times element 0 of the plane,
// so an inf/NaN there makes their bin NaN; here it is exactly 0.)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common.hpp"
#include "interp.hpp"

#include "parallel.hpp"

namespace fastops {

enum RoiPool : int { kRoiAvg = 0, kRoiMax = 1, kRoiOnnxMax = 2 };

// Channels that share one pass over a RoI's sample tables (4 planes of the benchmark map
// are 870 KiB: they fit the 2 MiB L2 together).
constexpr int kRoiCB = 4;

// Adaptive grids beyond this per axis mean a RoI far larger than any feature map: the
// cap only keeps the integer conversion defined (and sample counts within int64).
constexpr int64_t kRoiGridMax = int64_t(1) << 20;

template <typename T>
struct RoiGeom {
  T start_h, start_w, bin_h, bin_w;
  int64_t grid_h, grid_w;
  T count;
};

template <typename T>
inline int64_t roi_grid(T bin, int64_t sampling_ratio) {
  if (sampling_ratio > 0) return sampling_ratio;
  T g = std::ceil(bin);  // ceil(roi_size / pooled): the peers' adaptive rule
  if (!(g > T(0))) return 0;  // empty or negative RoI (half_pixel): no samples
  return g >= static_cast<T>(kRoiGridMax) ? kRoiGridMax : static_cast<int64_t>(g);
}

// sampling_ratio <= 2^31 - 1 (checked by the public layer): grid_h * grid_w fits int64.
template <typename T>
inline RoiGeom<T> roi_geometry(const T* box, T scale, bool aligned, int64_t ph, int64_t pw,
                               int64_t sampling_ratio) {
  RoiGeom<T> g;
  const T offset = aligned ? T(0.5) : T(0);
  g.start_w = box[0] * scale - offset;
  g.start_h = box[1] * scale - offset;
  T end_w = box[2] * scale - offset;
  T end_h = box[3] * scale - offset;
  T roi_w = end_w - g.start_w;
  T roi_h = end_h - g.start_h;
  if (!aligned) {  // legacy: malformed RoIs become 1x1
    roi_w = std::max(roi_w, T(1));
    roi_h = std::max(roi_h, T(1));
  }
  g.bin_h = roi_h / static_cast<T>(ph);
  g.bin_w = roi_w / static_cast<T>(pw);
  g.grid_h = roi_grid(g.bin_h, sampling_ratio);
  g.grid_w = roi_grid(g.bin_w, sampling_ratio);
  g.count = static_cast<T>(std::max<int64_t>(g.grid_h * g.grid_w, 1));
  return g;
}

// Sample i of bin p along one axis: the peers' expression, evaluated in T,
// start + p * bin + (i + 0.5) * bin / grid.
template <typename T>
inline T roi_sample(T start, T bin, int64_t grid, int64_t p, int64_t i) {
  return start + static_cast<T>(p) * bin +
         (static_cast<T>(i) + T(0.5)) * bin / static_cast<T>(grid);
}

// The samples of bin p (along an axis of length n) that lie inside [-1, n]: the run
// [first, first + len).  Every operation of roi_sample is monotone in i, so the
// coordinates are monotone and the inside samples are contiguous; NaN coordinates
// (a NaN bin makes all of them NaN) are outside.
template <typename T>
inline void roi_inside_run(T start, T bin, int64_t grid, int64_t p, int64_t n,
                           int64_t& first, int64_t& len) {
  first = len = 0;
  if (grid <= 0) return;
  const T lo = T(-1), hi = static_cast<T>(n);
  const T c0 = roi_sample(start, bin, grid, p, 0);
  const T c1 = roi_sample(start, bin, grid, p, grid - 1);
  if (c0 != c0 || c1 != c1) return;
  const bool up = !(c1 < c0);
  // `before(i)` holds for a prefix of the samples, `after(i)` for a suffix
  auto before = [&](int64_t i) {
    const T c = roi_sample(start, bin, grid, p, i);
    return up ? c < lo : c > hi;
  };
  auto after = [&](int64_t i) {
    const T c = roi_sample(start, bin, grid, p, i);
    return up ? c > hi : c < lo;
  };
  int64_t a = 0, b = grid;  // first index with !before
  while (a < b) {
    const int64_t m = a + (b - a) / 2;
    if (before(m)) a = m + 1;
    else b = m;
  }
  first = a;
  b = grid;  // first index >= first with after
  while (a < b) {
    const int64_t m = a + (b - a) / 2;
    if (after(m)) b = m;
    else a = m + 1;
  }
  len = a - first;
}

// Fold sample s into a bin's value a (`first`: s is the bin's first sample).
// avg sums; max keeps the largest interpolated sample and propagates NaN (once a is
// NaN nothing replaces it); onnx_max keeps the larger in std::max order, as ONNX.
template <typename T, int Mode>
inline T roi_fold(T a, T s, bool first) {
  if (Mode == kRoiAvg) return a + s;
  if (first) return s;
  if (Mode == kRoiMax) return (s > a || s != s) ? s : a;
  return a < s ? s : a;
}

// One RoI's inside samples along one axis: bin p's entries are
// tab[beg[p] .. beg[p + 1]) (beg relative to tab), each an AxisLerp with element offsets.
template <typename T>
struct RoiAxis {
  const AxisLerp<T>* tab;
  const int64_t* beg;
  int64_t grid;
  inline int64_t size(int64_t p) const { return beg[p + 1] - beg[p]; }
  inline bool partial(int64_t p) const { return size(p) < grid; }  // has outside samples
};

// One RoI, channels c .. c + CB - 1 (planes sC apart), all bins; the first nc <= CB are
// written.  The channels share each table entry and its four corner weights; every
// channel's arithmetic is exactly the single-channel sequence, so results do not depend
// on CB or the layout.  Lanes: `plane` is a slab of CB channels interleaved, (H, W, CB)
// (roi_interleave), so the channel stride is the constant 1 and the channel loop is one
// SIMD multiply-add chain per corner instead of CB scalar loads from planes far apart.
// Samples are swept one sample row at a time across the whole output row; each bin still
// receives its samples in (iy, ix) order.  acc: CB * PW scratch, started: PW scratch.
template <typename T, int Mode, int CB, bool Lanes = false>
inline void roi_channels(const T* plane, int64_t sC, const RoiGeom<T>& g, RoiAxis<T> ya_,
                         RoiAxis<T> xa_, int64_t PH, int64_t PW, int64_t nc, T* o,
                         int64_t o_stride, T* acc, unsigned char* started) {
  const int64_t cs = Lanes ? 1 : sC;
  // acc[at(k, p_w)]: lanes keep a bin's CB sums adjacent (one vector), planes a channel's
  // row of bins (its output row)
  auto at = [PW](int64_t k, int64_t p_w) { return Lanes ? p_w * CB + k : k * PW + p_w; };
  for (int64_t p_h = 0; p_h < PH; ++p_h) {
    const bool rows_partial = ya_.partial(p_h);
    for (int64_t j = 0; j < CB * PW; ++j) acc[j] = T(0);  // empty bins stay 0
    // a bin with an outside sample holds that sample's value (+0) before any other
    for (int64_t p_w = 0; p_w < PW; ++p_w) started[p_w] = rows_partial || xa_.partial(p_w);
    const AxisLerp<T>* yt = ya_.tab + ya_.beg[p_h];
    for (int64_t iy = 0; iy < ya_.size(p_h); ++iy) {
      const AxisLerp<T> ya = yt[iy];
      const T* lo = plane + ya.lo;
      const T* hi = plane + ya.hi;
      for (int64_t p_w = 0; p_w < PW; ++p_w) {
        const AxisLerp<T>* xs = xa_.tab + xa_.beg[p_w];
        const int64_t nx = xa_.size(p_w);
        T a[CB];
        for (int k = 0; k < CB; ++k) a[k] = acc[at(k, p_w)];
        bool first = !started[p_w];
        for (int64_t ix = 0; ix < nx; ++ix) {
          const AxisLerp<T> xa = xs[ix];
          const T w0 = ya.h * xa.h, w1 = ya.h * xa.l, w2 = ya.l * xa.h, w3 = ya.l * xa.l;
          for (int k = 0; k < CB; ++k) {
            const T* l = lo + k * cs;
            const T* h = hi + k * cs;
            const T t0 = w0 * l[xa.lo], t1 = w1 * l[xa.hi];
            const T t2 = w2 * h[xa.lo], t3 = w3 * h[xa.hi];
            T v;
            if (Mode == kRoiOnnxMax) {  // largest weighted corner, std::max order
              v = t0;
              if (v < t1) v = t1;
              if (v < t2) v = t2;
              if (v < t3) v = t3;
            } else {
              v = t0 + t1 + t2 + t3;  // the interpolated value, summed left to right
            }
            a[k] = roi_fold<T, Mode>(a[k], v, first);
          }
          first = false;
        }
        started[p_w] = started[p_w] || nx > 0;
        for (int k = 0; k < CB; ++k) acc[at(k, p_w)] = a[k];
      }
    }
    for (int64_t k = 0; k < nc; ++k)
      for (int64_t p_w = 0; p_w < PW; ++p_w)
        o[k * o_stride + p_h * PW + p_w] =
            Mode == kRoiAvg ? acc[at(k, p_w)] / g.count : acc[at(k, p_w)];
  }
}

// Channels per interleaved slab (the lanes form of roi_channels).
constexpr int kRoiLanes = 8;

// Slabs are used when sample-channels * kRoiLaneRatio >= the used maps' elements.
// fastops._bench.roi_align on 2 threads, 2x256x200x272 map (samples / map elements:
// planar ms -> interleaved ms): 16 RoIs 7x7 (0.03) 2.9 -> 6.9; 16 RoIs 14x14 (0.12)
// 7.4 -> 8.2; 64 RoIs 7x7 (0.12) 10.5 -> 8.7; 64 RoIs 14x14 (0.46) 26 -> 14; 1000 RoIs
// 7x7 130 -> 45; frcnn's 1x256x10x13 level with 150 RoIs (230) 19.8 -> 6.0.
constexpr int64_t kRoiLaneRatio = 4;

// Channels c0 .. c0 + nc - 1 of one image into a (H, W, kRoiLanes) slab, zero-padded.
template <typename T>
inline void roi_interleave(const T* x, int64_t nc, int64_t H, int64_t W, int64_t sC,
                           int64_t sH, int64_t sW, T* slab) {
  constexpr int L = kRoiLanes;
  for (int64_t h = 0; h < H; ++h) {
    T* row = slab + h * W * L;
    for (int64_t k = 0; k < L; ++k) {
      if (k < nc) {
        const T* src = x + k * sC + h * sH;
        for (int64_t w = 0; w < W; ++w) row[w * L + k] = src[w * sW];
      } else {
        for (int64_t w = 0; w < W; ++w) row[w * L + k] = T(0);
      }
    }
  }
}

// Sample tables of every RoI along one axis (rows: PH bins over H; columns: PW over W).
// beg (K * (P + 1)): per RoI, the P + 1 bin boundaries relative to the RoI's first
// entry; base (K + 1): first entry of each RoI in tab.  Pass 1 finds every bin's inside
// run, pass 2 (after one exact-size allocation outside any parallel region) fills it.
template <typename T>
struct RoiTables {
  std::vector<int64_t> first, beg, base;
  std::vector<AxisLerp<T>> tab;

  template <typename Start, typename Bin, typename Grid>
  void build(int64_t K, int64_t P, int64_t n, int64_t stride, Start start, Bin bin,
             Grid grid, int nt) {
    first.resize(static_cast<size_t>(K * P));
    beg.resize(static_cast<size_t>(K * (P + 1)));
    base.assign(static_cast<size_t>(K + 1), 0);
    parallel_for(K, chunk_for(K, nt), nt, [&](int64_t r_lo, int64_t r_hi, int) {
      for (int64_t r = r_lo; r < r_hi; ++r) {
        int64_t* b = beg.data() + r * (P + 1);
        b[0] = 0;
        for (int64_t p = 0; p < P; ++p) {
          int64_t len;
          roi_inside_run(start(r), bin(r), grid(r), p, n, first[r * P + p], len);
          b[p + 1] = b[p] + len;  // <= P * grid <= P * 2^31: no overflow
        }
      }
    });
    for (int64_t r = 0; r < K; ++r) base[r + 1] = size_add(base[r], beg[r * (P + 1) + P]);
    tab.resize(static_cast<size_t>(base[K]));
    parallel_for(K, chunk_for(K, nt), nt, [&](int64_t r_lo, int64_t r_hi, int) {
      for (int64_t r = r_lo; r < r_hi; ++r) {
        AxisLerp<T>* t = tab.data() + base[r];
        for (int64_t p = 0; p < P; ++p) {
          const int64_t f = first[r * P + p], len = beg[r * (P + 1) + p + 1] - beg[r * (P + 1) + p];
          for (int64_t i = f; i < f + len; ++i)
            *t++ = axis_lerp_roi_offsets(roi_sample(start(r), bin(r), grid(r), p, i), n, stride);
        }
      }
    });
  }
  RoiAxis<T> axis(int64_t r, int64_t P, int64_t grid) const {
    return RoiAxis<T>{tab.data() + base[r], beg.data() + r * (P + 1), grid};
  }
};

template <typename T, int Mode>
void roi_align_mode(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sN,
                    int64_t sC, int64_t sH, int64_t sW, const T* boxes, const int64_t* batch,
                    int64_t K, int64_t PH, int64_t PW, T scale, int64_t sampling_ratio,
                    bool aligned, T* out, int nthreads) {
  const int64_t bins = PH * PW;
  // work estimate for the serial threshold (adaptive grids: assume 2x2 samples per bin)
  const int64_t per_bin = sampling_ratio > 0 ? work_product(sampling_ratio, sampling_ratio) : 4;
  const int nt = threads_for(work_product(work_product(K * C, bins), work_product(per_bin, 4)),
                             nthreads);

  // 1. Geometry of every RoI (read once: the tables below never re-read `boxes`), and
  //    the separable tables of its inside samples (offsets already scaled by strides).
  std::vector<RoiGeom<T>> geo(static_cast<size_t>(K));
  for (int64_t r = 0; r < K; ++r)
    geo[r] = roi_geometry(boxes + 4 * r, scale, aligned, PH, PW, sampling_ratio);
  // 2. RoIs grouped by image (counting sort, stable).
  std::vector<int64_t> order(static_cast<size_t>(K)), start(static_cast<size_t>(N + 1), 0);
  for (int64_t r = 0; r < K; ++r) ++start[batch[r] + 1];
  int64_t images = 0;  // images with at least one RoI
  for (int64_t n = 0; n < N; ++n) images += start[n + 1] > 0;
  for (int64_t n = 0; n < N; ++n) start[n + 1] += start[n];
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t r = 0; r < K; ++r) order[fill[batch[r]]++] = r;
  }

  // Layout.  Interleaving kRoiLanes channels costs one pass over the used images' maps
  // and makes the sampling about 3x faster (SIMD over channels), so it pays
  // once the sample-channel count reaches a fraction of the maps' size (kRoiLaneRatio);
  // it also needs enough (image, channel block) items to keep every thread busy.
  const int64_t lane_blocks = (C + kRoiLanes - 1) / kRoiLanes;
  const bool lanes =
      C >= kRoiLanes / 2 &&
      work_product(work_product(K, C), work_product(bins, work_product(per_bin, kRoiLaneRatio))) >=
          work_product(work_product(images, C), work_product(H, W)) &&
      (nt == 1 || images * lane_blocks >= 2 * static_cast<int64_t>(nt));
  const int64_t tH = lanes ? W * kRoiLanes : sH, tW = lanes ? kRoiLanes : sW;

  const int tnt = threads_for(work_product(K, PH + PW) * 8, nt);
  RoiTables<T> ytab, xtab;
  ytab.build(K, PH, H, tH, [&](int64_t r) { return geo[r].start_h; },
             [&](int64_t r) { return geo[r].bin_h; }, [&](int64_t r) { return geo[r].grid_h; },
             tnt);
  xtab.build(K, PW, W, tW, [&](int64_t r) { return geo[r].start_w; },
             [&](int64_t r) { return geo[r].bin_w; }, [&](int64_t r) { return geo[r].grid_w; },
             tnt);

  if (lanes) {
    // 3a. Items (image, block of kRoiLanes channels): the block is interleaved into the
    //     thread's slab once, then every RoI of the image samples it.
    std::vector<int64_t> used;  // the images with RoIs
    for (int64_t n = 0; n < N; ++n)
      if (start[n + 1] > start[n]) used.push_back(n);
    const int64_t plane = H * W * kRoiLanes;
    ThreadScratch<T> slab_all(plane, nt), acc_all(kRoiLanes * PW, nt);
    ThreadScratch<unsigned char> started_all(PW, nt);
    parallel_for(images * lane_blocks, 1, nt, [&](int64_t item_lo, int64_t item_hi, int tid) {
      T* slab = slab_all(tid);
      T* acc = acc_all(tid);
      unsigned char* started = started_all(tid);
      for (int64_t item = item_lo; item < item_hi; ++item) {
        const int64_t n = used[item / lane_blocks], c0 = (item % lane_blocks) * kRoiLanes;
        const int64_t nc = std::min<int64_t>(kRoiLanes, C - c0);
        roi_interleave(x + n * sN + c0 * sC, nc, H, W, sC, sH, sW, slab);
        for (int64_t i = start[n]; i < start[n + 1]; ++i) {
          const int64_t r = order[i];
          roi_channels<T, Mode, kRoiLanes, true>(
              slab, 1, geo[r], ytab.axis(r, PH, geo[r].grid_h),
              xtab.axis(r, PW, geo[r].grid_w), PH, PW, nc, out + (r * C + c0) * bins, bins,
              acc, started);
        }
      }
    });
    return;
  }

  // 3b. Planar: RoIs cut into chunks of at most `chunk` RoIs that never straddle two
  //     images.  Enough items for dynamic balancing (8 per thread); one chunk per image when the
  // channels alone give that many.
  const int64_t want_chunks =
      (8 * static_cast<int64_t>(nt) * kRoiCB + C - 1) / C;
  const int64_t chunk = std::max<int64_t>(1, (K + want_chunks - 1) / want_chunks);
  std::vector<int64_t> cbeg;  // chunk boundaries in `order`
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = start[n]; s < start[n + 1]; s += chunk) cbeg.push_back(s);
  cbeg.push_back(K);
  const int64_t nchunks = static_cast<int64_t>(cbeg.size()) - 1;

  //     Items (chunk, block of kRoiCB channels): the planes of one block serve every RoI
  //    of the chunk, so they stay in L2 instead of streaming all C planes per RoI.
  //    Per-thread scratch is allocated here, outside the parallel region.
  const int64_t cblocks = (C + kRoiCB - 1) / kRoiCB;
  ThreadScratch<T> acc_all(kRoiCB * PW, nt);
  ThreadScratch<unsigned char> started_all(PW, nt);
  parallel_for(nchunks * cblocks, 1, nt, [&](int64_t item_lo, int64_t item_hi, int tid) {
    T* acc = acc_all(tid);
    unsigned char* started = started_all(tid);
    for (int64_t item = item_lo; item < item_hi; ++item) {
      const int64_t ch = item / cblocks, c0 = (item % cblocks) * kRoiCB;
      const int64_t nc = std::min<int64_t>(kRoiCB, C - c0);
      for (int64_t i = cbeg[ch]; i < cbeg[ch + 1]; ++i) {
        const int64_t r = order[i];
        const T* plane = x + batch[r] * sN + c0 * sC;
        const RoiAxis<T> ya = ytab.axis(r, PH, geo[r].grid_h);
        const RoiAxis<T> xa = xtab.axis(r, PW, geo[r].grid_w);
        T* o = out + (r * C + c0) * bins;
        if (nc == kRoiCB) {
          roi_channels<T, Mode, kRoiCB>(plane, sC, geo[r], ya, xa, PH, PW, kRoiCB, o, bins,
                                        acc, started);
        } else {
          for (int64_t k = 0; k < nc; ++k)
            roi_channels<T, Mode, 1>(plane + k * sC, sC, geo[r], ya, xa, PH, PW, 1,
                                     o + k * bins, bins, acc, started);
        }
      }
    }
  });
}

// H, W >= 1 and batch indices in [0, N) (checked by the public layer).
template <typename T>
void roi_align(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sN, int64_t sC,
               int64_t sH, int64_t sW, const T* boxes, const int64_t* batch, int64_t K,
               int64_t PH, int64_t PW, T scale, int64_t sampling_ratio, int mode,
               bool aligned, T* out, int nthreads) {
  switch (mode) {
    case kRoiMax:
      roi_align_mode<T, kRoiMax>(x, N, C, H, W, sN, sC, sH, sW, boxes, batch, K, PH, PW, scale,
                                 sampling_ratio, aligned, out, nthreads);
      break;
    case kRoiOnnxMax:
      roi_align_mode<T, kRoiOnnxMax>(x, N, C, H, W, sN, sC, sH, sW, boxes, batch, K, PH, PW,
                                     scale, sampling_ratio, aligned, out, nthreads);
      break;
    default:
      roi_align_mode<T, kRoiAvg>(x, N, C, H, W, sN, sC, sH, sW, boxes, batch, K, PH, PW, scale,
                                 sampling_ratio, aligned, out, nthreads);
  }
}

}  // namespace fastops
