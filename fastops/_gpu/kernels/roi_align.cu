// RoIAlign forward (ONNX RoiAlign, MMCV MMCVRoIAlign, torchvision roi_align).
// Preamble defines:
//   T   float or double (float16 arrives as float)
// The arithmetic is the CPU kernel's (fastops/_cpu/include/roi_align.hpp, interp.hpp),
// operation for operation, with explicit round-to-nearest intrinsics so that NVRTC
// cannot contract a*b+c into an FMA: GPU results are bit-identical to the CPU ones.
// One thread per output element (roi, c, ph, pw), grid-stride, 64-bit indices.

#define ROI_GRID_MAX (1LL << 20)

struct AxisLerpT {
  i64 lo, hi;  // element offsets (index * stride)
  T l, h;      // weights of hi and lo
};

// The RoIAlign (Caffe2) edge rule along one axis of length n >= 1, as interp.hpp's
// axis_lerp_roi_offsets: outside [-1, n] (or NaN) -> offsets 0 and weights 0.
__device__ __forceinline__ AxisLerpT axis_lerp_roi(T c, i64 n, i64 stride) {
  AxisLerpT a;
  if (!(c >= (T)-1 && c <= (T)n)) {
    a.lo = a.hi = 0;
    a.l = a.h = (T)0;
    return a;
  }
  if (c <= (T)0) c = (T)0;
  i64 lo = (i64)c;
  i64 hi;
  if (lo >= n - 1) {
    hi = lo = n - 1;
    c = (T)lo;
  } else {
    hi = lo + 1;
  }
  a.l = sub_rn(c, (T)lo);
  a.h = sub_rn((T)1, a.l);
  a.lo = lo * stride;
  a.hi = hi * stride;
  return a;
}

__device__ __forceinline__ i64 roi_grid(T bin, i64 sampling_ratio) {
  if (sampling_ratio > 0) return sampling_ratio;
  double g = ceil((double)bin);  // exact for float bins too
  if (!(g > 0.0)) return 0;
  return g >= (double)ROI_GRID_MAX ? ROI_GRID_MAX : (i64)g;
}

// Sample i of bin p along an axis: start + p * bin + (i + 0.5) * bin / grid (the CPU's
// roi_sample, same operations).
__device__ __forceinline__ T roi_sample(T start, T bin, i64 grid, i64 p, i64 i) {
  return add_rn(add_rn(start, mul_rn((T)p, bin)),
                div_rn(mul_rn(add_rn((T)i, (T)0.5), bin), (T)grid));
}

// The run [first, first + len) of bin p's samples inside [-1, n] (roi_align.hpp's
// roi_inside_run): coordinates are monotone in i, so bisection finds it and a RoI far
// larger than the map costs O(log grid) per bin instead of its area.
__device__ __forceinline__ void roi_inside_run(T start, T bin, i64 grid, i64 p, i64 n,
                                               i64* first, i64* len) {
  *first = *len = 0;
  if (grid <= 0) return;
  const T lo = (T)-1, hi = (T)n;
  const T c0 = roi_sample(start, bin, grid, p, 0);
  const T c1 = roi_sample(start, bin, grid, p, grid - 1);
  if (c0 != c0 || c1 != c1) return;
  const bool up = !(c1 < c0);
  i64 a = 0, b = grid;  // first index not before the inside run
  while (a < b) {
    const i64 m = a + (b - a) / 2;
    const T c = roi_sample(start, bin, grid, p, m);
    if (up ? c < lo : c > hi) a = m + 1;
    else b = m;
  }
  *first = a;
  b = grid;  // first index after the inside run
  while (a < b) {
    const i64 m = a + (b - a) / 2;
    const T c = roi_sample(start, bin, grid, p, m);
    if (up ? c > hi : c < lo) b = m;
    else a = m + 1;
  }
  *len = a - *first;
}

// mode: 0 avg, 1 max of interpolated samples (NaN propagates), 2 onnx_max.
extern "C" __global__ void roi_align_fwd(const T* x, i64 C, i64 H, i64 W, i64 sN, i64 sC,
                                         i64 sH, i64 sW, const T* boxes, const i64* batch,
                                         i64 K, i64 PH, i64 PW, T scale, i64 sampling_ratio,
                                         int mode, int aligned, T* out) {
  const i64 total = K * C * PH * PW;
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (i64)blockDim.x * gridDim.x) {
    const i64 p_w = idx % PW;
    i64 t = idx / PW;
    const i64 p_h = t % PH;
    t /= PH;
    const i64 c = t % C;
    const i64 r = t / C;

    const T* box = boxes + 4 * r;
    const T offset = aligned ? (T)0.5 : (T)0;
    const T start_w = sub_rn(mul_rn(box[0], scale), offset);
    const T start_h = sub_rn(mul_rn(box[1], scale), offset);
    const T end_w = sub_rn(mul_rn(box[2], scale), offset);
    const T end_h = sub_rn(mul_rn(box[3], scale), offset);
    T roi_w = sub_rn(end_w, start_w);
    T roi_h = sub_rn(end_h, start_h);
    if (!aligned) {  // legacy: malformed RoIs become 1x1 (std::max order)
      roi_w = roi_w < (T)1 ? (T)1 : roi_w;
      roi_h = roi_h < (T)1 ? (T)1 : roi_h;
    }
    const T bin_h = div_rn(roi_h, (T)PH);
    const T bin_w = div_rn(roi_w, (T)PW);
    const i64 gh = roi_grid(bin_h, sampling_ratio);
    const i64 gw = roi_grid(bin_w, sampling_ratio);
    const i64 n = gh * gw;
    const T count = (T)(n > 1 ? n : 1);
    i64 fy, ny, fx, nx;
    roi_inside_run(start_h, bin_h, gh, p_h, H, &fy, &ny);
    roi_inside_run(start_w, bin_w, gw, p_w, W, &fx, &nx);

    const T* plane = x + batch[r] * sN + c * sC;
    T acc = (T)0;
    // a bin with an outside sample holds that sample's value (+0) before any other
    bool first = ny == gh && nx == gw;
    for (i64 iy = fy; iy < fy + ny; ++iy) {
      const AxisLerpT ya = axis_lerp_roi(roi_sample(start_h, bin_h, gh, p_h, iy), H, sH);
      const T* lo = plane + ya.lo;
      const T* hi = plane + ya.hi;
      for (i64 ix = fx; ix < fx + nx; ++ix) {
        const AxisLerpT xa = axis_lerp_roi(roi_sample(start_w, bin_w, gw, p_w, ix), W, sW);
        const T t0 = mul_rn(mul_rn(ya.h, xa.h), lo[xa.lo]);
        const T t1 = mul_rn(mul_rn(ya.h, xa.l), lo[xa.hi]);
        const T t2 = mul_rn(mul_rn(ya.l, xa.h), hi[xa.lo]);
        const T t3 = mul_rn(mul_rn(ya.l, xa.l), hi[xa.hi]);
        if (mode == 2) {
          T v = t0;
          if (v < t1) v = t1;
          if (v < t2) v = t2;
          if (v < t3) v = t3;
          acc = (first || acc < v) ? v : acc;
        } else {
          const T v = add_rn(add_rn(add_rn(t0, t1), t2), t3);
          if (mode == 0) acc = add_rn(acc, v);
          else acc = (first || v > acc || v != v) ? v : acc;
        }
        first = false;
      }
    }
    out[idx] = mode == 0 ? div_rn(acc, count) : acc;
  }
}
