// Bilinear sampling helpers shared by the interpolating CPU kernels (roi_align now;
// resize, grid_sample and deform_conv are meant to reuse the same pieces).
//
// A bilinear sample is separable: each axis gives two neighbours and two weights
// (AxisLerp), and the four corner weights are products of the axis weights.  Kernels
// that sample a regular grid (RoIAlign, resize) tabulate AxisLerp per output row and
// column once and combine them per sample; the corner weights are computed exactly as
// the peers compute them (w1 = hy * hx, ...), so results stay bit-identical to them.
#pragma once
#include <cstdint>

namespace fastops {

template <typename T>
struct AxisLerp {
  int64_t lo, hi;  // neighbour indices (or element offsets, once scaled by a stride)
  T l, h;          // weight of hi (the fraction) and of lo (1 - fraction)
};

// The RoIAlign edge rule (Caffe2/Detectron, torchvision, MMCV, ONNX Runtime and the ONNX
// reference all use it) along one axis of length n >= 1: a coordinate below -1 or
// above n lies outside the map (returns false: the sample counts as 0); otherwise it is
// clamped into [0, n - 1] and split into its two neighbours.  NaN lies outside (the
// peers would cast NaN to int: undefined behaviour).  Arithmetic in T, in the peers'
// order.
template <typename T>
inline bool axis_lerp_roi(T c, int64_t n, AxisLerp<T>& a) {
  if (!(c >= T(-1) && c <= static_cast<T>(n))) return false;
  if (c <= T(0)) c = T(0);
  int64_t lo = static_cast<int64_t>(c);  // c >= 0: truncation is floor
  int64_t hi;
  if (lo >= n - 1) {
    hi = lo = n - 1;
    c = static_cast<T>(lo);
  } else {
    hi = lo + 1;
  }
  a.lo = lo;
  a.hi = hi;
  a.l = c - static_cast<T>(lo);
  a.h = T(1) - a.l;
  return true;
}

// axis_lerp_roi with neighbours scaled to element offsets (index * stride); a coordinate
// outside the map gives offsets 0 and weights 0, so the sample reads in bounds and
// contributes 0 (for finite data), whatever the other axis says.
template <typename T>
inline AxisLerp<T> axis_lerp_roi_offsets(T c, int64_t n, int64_t stride) {
  AxisLerp<T> a;
  if (axis_lerp_roi(c, n, a)) {
    a.lo *= stride;
    a.hi *= stride;
  } else {
    a.lo = a.hi = 0;
    a.l = a.h = T(0);
  }
  return a;
}

// The four weighted corner terms of a sample: (lo_y, lo_x), (lo_y, hi_x), (hi_y, lo_x),
// (hi_y, hi_x).  row_lo / row_hi point at the plane shifted by y.lo / y.hi.
template <typename T>
inline void bilinear_terms(const T* row_lo, const T* row_hi, const AxisLerp<T>& y,
                           const AxisLerp<T>& x, T t[4]) {
  t[0] = (y.h * x.h) * row_lo[x.lo];
  t[1] = (y.h * x.l) * row_lo[x.hi];
  t[2] = (y.l * x.h) * row_hi[x.lo];
  t[3] = (y.l * x.l) * row_hi[x.hi];
}

// The interpolated value: w1*v1 + w2*v2 + w3*v3 + w4*v4, summed left to right.
template <typename T>
inline T bilinear_at(const T* row_lo, const T* row_hi, const AxisLerp<T>& y,
                     const AxisLerp<T>& x) {
  T t[4];
  bilinear_terms(row_lo, row_hi, y, x, t);
  return t[0] + t[1] + t[2] + t[3];
}

}  // namespace fastops
