// RoIAlign (ONNX RoiAlign 10/16/22, MMCV MMCVRoIAlign, torchvision roi_align forward).
//
// x is an (N, C, H, W) map read through element strides; boxes (K, 4) are
// [x1, y1, x2, y2] in input coordinates, batch (K,) validated image indices; out is
// C-contiguous (K, C, PH, PW).  Coordinates and sums are computed in T, in the same
// order as the peers, so float32 results match ONNX Runtime / the ONNX reference.
//
// Algorithm.  Every bilinear sample of a RoI is separable: its row part depends on
// (ph, iy) only and its column part on (pw, ix) only.  So the sample table of each RoI,
// shared by all channels, is stored per axis: PH * grid_h row entries and PW * grid_w
// column entries (AxisLerp from interp.hpp: two neighbour offsets and two weights),
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
// Each output element is computed by one fixed sequence of operations, so results do
// not depend on the thread count or on the chunking.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common.hpp"
#include "interp.hpp"

namespace fastops {

enum RoiPool : int { kRoiAvg = 0, kRoiMax = 1, kRoiOnnxMax = 2 };

// Channels that share one pass over a RoI's sample tables (4 planes of the benchmark map
// are 870 KiB: they fit the 2 MiB L2 together).
constexpr int kRoiCB = 4;

// Adaptive grids beyond this per axis mean a RoI far larger than any feature map: the
// cap only keeps the integer conversion defined.
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

// Sample (iy, ix) of bin (p_h, p_w): the peers' expression, evaluated in T.
template <typename T>
inline T roi_sample_y(const RoiGeom<T>& g, int64_t p_h, int64_t iy) {
  return g.start_h + static_cast<T>(p_h) * g.bin_h +
         (static_cast<T>(iy) + T(0.5)) * g.bin_h / static_cast<T>(g.grid_h);
}
template <typename T>
inline T roi_sample_x(const RoiGeom<T>& g, int64_t p_w, int64_t ix) {
  return g.start_w + static_cast<T>(p_w) * g.bin_w +
         (static_cast<T>(ix) + T(0.5)) * g.bin_w / static_cast<T>(g.grid_w);
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

// One RoI, channels c .. c + CB - 1 (planes sC apart), all bins.  The channels share
// each table entry and its four corner weights; every channel's arithmetic is exactly
// the single-channel sequence, so results do not depend on CB.  Samples are swept one
// sample row (iy) at a time across the whole output row; each bin still receives its
// samples in (iy, ix) order.  acc: CB * PW scratch.
template <typename T, int Mode, int CB>
inline void roi_channels(const T* plane, int64_t sC, const RoiGeom<T>& g,
                         const AxisLerp<T>* yt, const AxisLerp<T>* xt, int64_t PH,
                         int64_t PW, T* o, int64_t o_stride, T* acc) {
  const int64_t gh = g.grid_h, gw = g.grid_w;
  for (int64_t p_h = 0; p_h < PH; ++p_h, yt += gh) {
    for (int64_t j = 0; j < CB * PW; ++j) acc[j] = T(0);  // empty bins stay 0
    for (int64_t iy = 0; iy < gh; ++iy) {
      const AxisLerp<T> ya = yt[iy];
      const T* lo = plane + ya.lo;
      const T* hi = plane + ya.hi;
      const AxisLerp<T>* xs = xt;
      for (int64_t p_w = 0; p_w < PW; ++p_w, xs += gw) {
        T a[CB];
        for (int k = 0; k < CB; ++k) a[k] = acc[k * PW + p_w];
        for (int64_t ix = 0; ix < gw; ++ix) {
          const AxisLerp<T> xa = xs[ix];
          const T w0 = ya.h * xa.h, w1 = ya.h * xa.l, w2 = ya.l * xa.h, w3 = ya.l * xa.l;
          const bool first = iy == 0 && ix == 0;
          for (int k = 0; k < CB; ++k) {
            const T* l = lo + k * sC;
            const T* h = hi + k * sC;
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
        }
        for (int k = 0; k < CB; ++k) acc[k * PW + p_w] = a[k];
      }
    }
    for (int k = 0; k < CB; ++k)
      for (int64_t p_w = 0; p_w < PW; ++p_w)
        o[k * o_stride + p_h * PW + p_w] =
            Mode == kRoiAvg ? acc[k * PW + p_w] / g.count : acc[k * PW + p_w];
  }
}

template <typename T, int Mode>
void roi_align_mode(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sN,
                    int64_t sC, int64_t sH, int64_t sW, const T* boxes, const int64_t* batch,
                    int64_t K, int64_t PH, int64_t PW, T scale, int64_t sampling_ratio,
                    bool aligned, T* out, int nthreads) {
  const int64_t bins = PH * PW;
  // work estimate for the serial threshold (adaptive grids: assume 2x2 samples per bin)
  const int64_t per_bin = sampling_ratio > 0 ? sampling_ratio * sampling_ratio : 4;
  const int nt = threads_for(K * C * bins * per_bin * 4, nthreads);

  // 1. Geometry and the separable sample tables of every RoI: PH * grid_h row entries
  //    and PW * grid_w column entries (offsets already scaled by the strides).
  std::vector<RoiGeom<T>> geo(static_cast<size_t>(K));
  std::vector<int64_t> ybeg(static_cast<size_t>(K + 1), 0), xbeg(static_cast<size_t>(K + 1), 0);
  for (int64_t r = 0; r < K; ++r) {
    geo[r] = roi_geometry(boxes + 4 * r, scale, aligned, PH, PW, sampling_ratio);
    ybeg[r + 1] = ybeg[r] + PH * geo[r].grid_h;
    xbeg[r + 1] = xbeg[r] + PW * geo[r].grid_w;
  }
  std::vector<AxisLerp<T>> ytab(static_cast<size_t>(ybeg[K]));
  std::vector<AxisLerp<T>> xtab(static_cast<size_t>(xbeg[K]));
#pragma omp parallel for num_threads(threads_for(ybeg[K] + xbeg[K], nt)) schedule(static)
  for (int64_t r = 0; r < K; ++r) {
    const RoiGeom<T>& g = geo[r];
    AxisLerp<T>* yt = ytab.data() + ybeg[r];
    for (int64_t p_h = 0; p_h < PH; ++p_h)
      for (int64_t iy = 0; iy < g.grid_h; ++iy)
        *yt++ = axis_lerp_roi_offsets(roi_sample_y(g, p_h, iy), H, sH);
    AxisLerp<T>* xt = xtab.data() + xbeg[r];
    for (int64_t p_w = 0; p_w < PW; ++p_w)
      for (int64_t ix = 0; ix < g.grid_w; ++ix)
        *xt++ = axis_lerp_roi_offsets(roi_sample_x(g, p_w, ix), W, sW);
  }

  // 2. RoIs grouped by image (counting sort, stable), cut into chunks of at most
  //    `chunk` RoIs that never straddle two images.
  std::vector<int64_t> order(static_cast<size_t>(K)), start(static_cast<size_t>(N + 1), 0);
  for (int64_t r = 0; r < K; ++r) ++start[batch[r] + 1];
  for (int64_t n = 0; n < N; ++n) start[n + 1] += start[n];
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t r = 0; r < K; ++r) order[fill[batch[r]]++] = r;
  }
  // Enough items for dynamic balancing (8 per thread); one chunk per image when the
  // channels alone give that many.
  const int64_t want_chunks =
      (8 * static_cast<int64_t>(nt) * kRoiCB + C - 1) / C;
  const int64_t chunk = std::max<int64_t>(1, (K + want_chunks - 1) / want_chunks);
  std::vector<int64_t> cbeg;  // chunk boundaries in `order`
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = start[n]; s < start[n + 1]; s += chunk) cbeg.push_back(s);
  cbeg.push_back(K);
  const int64_t nchunks = static_cast<int64_t>(cbeg.size()) - 1;

  // 3. Items (chunk, block of kRoiCB channels): the planes of one block serve every RoI
  //    of the chunk, so they stay in L2 instead of streaming all C planes per RoI.
  const int64_t cblocks = (C + kRoiCB - 1) / kRoiCB;
#pragma omp parallel num_threads(nt)
  {
    std::vector<T> acc(static_cast<size_t>(kRoiCB * PW));
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < nchunks * cblocks; ++item) {
      const int64_t ch = item / cblocks, c0 = (item % cblocks) * kRoiCB;
      const int64_t nc = std::min<int64_t>(kRoiCB, C - c0);
      for (int64_t i = cbeg[ch]; i < cbeg[ch + 1]; ++i) {
        const int64_t r = order[i];
        const T* plane = x + batch[r] * sN + c0 * sC;
        const AxisLerp<T>* yt = ytab.data() + ybeg[r];
        const AxisLerp<T>* xt = xtab.data() + xbeg[r];
        T* o = out + (r * C + c0) * bins;
        if (nc == kRoiCB) {
          roi_channels<T, Mode, kRoiCB>(plane, sC, geo[r], yt, xt, PH, PW, o, bins, acc.data());
        } else {
          for (int64_t k = 0; k < nc; ++k)
            roi_channels<T, Mode, 1>(plane + k * sC, sC, geo[r], yt, xt, PH, PW, o + k * bins,
                                     bins, acc.data());
        }
      }
    }
  }
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
