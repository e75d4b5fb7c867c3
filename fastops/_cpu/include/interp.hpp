// Sampling helpers shared by the interpolating CPU kernels (roi_align, resize; grid_sample
// and deform_conv are meant to reuse the same pieces): bilinear axis weights, the cubic
// convolution coefficients and the rounding of interpolated integer outputs.
//
// A bilinear sample is separable: each axis gives two neighbours and two weights
// (AxisLerp), and the four corner weights are products of the axis weights.  Kernels
// that sample a regular grid (RoIAlign, resize) tabulate AxisLerp per output row and
// column once and combine them per sample; the corner weights are computed exactly as
// the peers compute them (w1 = hy * hx, ...), so results stay bit-identical to them.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

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

// ------------------------------------------------------------------ cubic convolution
// Keys' cubic convolution kernel with parameter a (ONNX cubic_coeff_a, torch's A = -0.75,
// OpenCV's -0.75, TensorFlow's -0.5), the four weights of the taps at distances
// 1 + t, t, 1 - t, 2 - t from a sample at fraction t in [0, 1] past its left neighbour.
// The expressions are the ONNX reference's (_cubic_coeffs) and torch's
// (get_cubic_upsample_coefficients) operation for operation, evaluated in T, so that a
// kernel computing in T agrees with them bit for bit (build without FMA contraction).
template <typename T>
inline void cubic_coeffs(T t, T a, T c[4]) {
  const T x1 = t + T(1);
  c[0] = ((a * x1 - T(5) * a) * x1 + T(8) * a) * x1 - T(4) * a;
  c[1] = ((a + T(2)) * t - (a + T(3))) * t * t + T(1);
  const T x2 = T(1) - t;
  c[2] = ((a + T(2)) * x2 - (a + T(3))) * x2 * x2 + T(1);
  const T x3 = x2 + T(1);
  c[3] = ((a * x3 - T(5) * a) * x3 + T(8) * a) * x3 - T(4) * a;
}

// The same weights in the order torch's grid_sample computes them (GridSamplerKernel.cpp
// get_cubic_coefficients): the last tap's distance is 2 - t, not (1 - t) + 1, which
// rounds differently; grid_sample matches torch bit for bit with this one.
template <typename T>
inline void cubic_coeffs_grid(T t, T a, T c[4]) {
  T v = t + T(1);
  c[0] = ((a * v - T(5) * a) * v + T(8) * a) * v - T(4) * a;
  v = t;
  c[1] = ((a + T(2)) * v - (a + T(3))) * v * v + T(1);
  v = T(1) - t;
  c[2] = ((a + T(2)) * v - (a + T(3))) * v * v + T(1);
  v = T(2) - t;
  c[3] = ((a * v - T(5) * a) * v + T(8) * a) * v - T(4) * a;
}

// The same kernel as a function of a signed distance x (the ONNX reference's
// _cubic_coeffs_antialias / Pillow's bicubic filter form): 0 beyond |x| >= 2.
template <typename T>
inline T cubic_kernel(T x, T a) {
  x = std::fabs(x);
  const T x2 = x * x;
  const T x3 = x * x2;
  if (x <= T(1)) return (a + T(2)) * x3 - (a + T(3)) * x2 + T(1);
  if (x < T(2)) return a * x3 - T(5) * a * x2 + T(8) * a * x - T(4) * a;
  return T(0);
}

// ------------------------------------------------------------------ exact rounding
// floor / trunc / round-half-to-even without SSE4.1 (the baseline x86-64 build would call
// libm for std::floor and std::nearbyint once per coordinate); exact for every input.
template <typename T>
constexpr T integral_threshold() {  // 2^23 (float), 2^52 (double): larger values are integers
  return T(1) / std::numeric_limits<T>::epsilon();
}

template <typename T>
inline T exact_trunc(T v) {
  if (!(std::fabs(v) < integral_threshold<T>())) return v;  // NaN, inf, integral
  return std::copysign(static_cast<T>(static_cast<int64_t>(v)), v);
}

template <typename T>
inline T exact_floor(T v) {
  const T t = exact_trunc(v);
  return t > v ? t - T(1) : t;
}

// Round half to even (std::nearbyint in the default rounding mode, torch's Vec::round).
template <typename T>
inline T exact_rint(T v) {
  const T big = integral_threshold<T>();
  const T a = std::fabs(v);
  if (!(a < big)) return v;
  return std::copysign((a + big) - big, v);
}

// ------------------------------------------------------------------ integer outputs
// An interpolated value v (computed in float or double) stored to the element type Out:
// floats are cast; integers are rounded half away from zero and saturated to Out's
// range (API.md), NaN becomes 0.  Every step is exact: r = trunc(v) and
// v - r are representable, so the result is the correctly rounded value of v.
template <typename Out, typename W>
inline Out round_saturate(W v) {
  if constexpr (std::is_floating_point<Out>::value) {
    return static_cast<Out>(v);
  } else if (v != v) {
    return Out(0);
  } else if constexpr (sizeof(Out) < 8) {
    // clamp in W first, convert, round, clamp again in the integer type
    // (hi may round up in W, e.g. 2^31 - 1 in float)
    using I = typename std::conditional<(sizeof(Out) <= 2), int32_t, int64_t>::type;
    const W lo = static_cast<W>(std::numeric_limits<Out>::min());
    const W hi = static_cast<W>(std::numeric_limits<Out>::max());
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    I i = static_cast<I>(v);  // truncation
    const W d = v - static_cast<W>(i);
    i += static_cast<I>(d >= W(0.5)) - static_cast<I>(d <= W(-0.5));
    const I omin = static_cast<I>(std::numeric_limits<Out>::min());
    const I omax = static_cast<I>(std::numeric_limits<Out>::max());
    i = i < omin ? omin : i;
    i = i > omax ? omax : i;
    return static_cast<Out>(i);
  } else {
    // int64 / uint64 from double: hi = 2^63 (or 2^64) is not an Out value
    const W lo = static_cast<W>(std::numeric_limits<Out>::min());
    const W hi = static_cast<W>(std::numeric_limits<Out>::max());  // rounds up to 2^k
    if (!(v > lo)) return std::numeric_limits<Out>::min();
    if (!(v < hi)) return std::numeric_limits<Out>::max();
    Out i = static_cast<Out>(v);
    const W d = v - static_cast<W>(i);
    if (d >= W(0.5)) ++i;
    else if (d <= W(-0.5)) --i;
    return i;
  }
}

}  // namespace fastops
