// ONNX Resize (opsets 10-19) on the CPU: per-axis tap tables and a separable apply.
//
// Tables.  Every resized axis gets one table, built once per call by axis_table():
// output index o -> (first source index, tap count, weights), the taps covering source
// indices first .. first + count - 1, all in bounds.  Coordinates are mapped in double
// with the ONNX reference's expressions operation for operation (onnx/reference/ops/
// op_resize.py, _compute_x_ori); the raw taps (2 for linear, 4 for cubic, 2/scale-wide
// with antialias) are weighted and normalized in double as the reference does, the
// out-of-range taps are clamped to the edge (its edge padding) and merged into the edge
// tap, zero-weight taps at either end are dropped, and the weights are stored in the
// compute type W (float for 8-bit and float inputs, double for 32/64-bit integers).
// Nearest tables hold one tap of weight 1.  An output that tf_crop_and_resize maps
// outside [0, n - 1] is flagged (extrap = 1) and gets no taps; the caller fills it with
// extrapolation_value.  A nearest pick outside the axis with exclude_outside is flagged
// 2 (the caller writes 0 there, as the reference's renormalization of zero weights does).
//
// Apply.  resize2d() resizes two axes of a 5-D strided view (B, H, M, Wd, C) — NCHW
// planes are (N*C, H, 1, W, 1), HWC images (1, H, 1, W, C) — into a contiguous output,
// one output row (b, yo, m) at a time: a vertical step (output row = weighted sum of
// source rows, a loop over contiguous rows that vectorizes) and a horizontal step
// (out[xo, c] = weighted sum of row[first .. first + count - 1, c]).  The step that runs
// first is chosen by the caller (`v_first`, the cheaper order by multiply-adds,
// fastops/resample.py): vertical first typically when the output has fewer rows than
// the input (the horizontal step then runs on output rows only), horizontal first
// otherwise, with each horizontally resized source row kept in a per-thread ring so that
// it is computed once per stripe of output rows (OpenCV's scheme).  An axis whose table
// is the identity gets no step (resize of one axis = resize2d with a length-1 or
// identity partner).  Intermediates stay in W: integer inputs are rounded (half away
// from zero, saturated) only when the final value is stored.
//
// Speed: the vertical step is a SIMD loop over contiguous rows (SSE2 / NEON through
// vector extensions, AVX2 when the CPU has it, chosen at run time); the horizontal step
// reads one pixel of C <= 4 channels per vector, and exact 2x tables (periodic: every
// output of a phase has the same taps) run vector loops without reading the table per
// output.  Each fast path below carries its measurement.
//
// Results never depend on the thread count, the stripe size or the SIMD path: every
// output value is one fixed sequence of operations, acc = w0 * v0, acc = acc + w1 * v1,
// ..., over the taps in order, first along the axis that runs first, and the GPU
// kernels (kernels/resample.cu) evaluate the same sequence with round-to-nearest
// intrinsics, so CPU and GPU agree bit for bit.  Hence no FMA contraction: setup.py
// builds every kernel with -ffp-contract=off (also with -march=native).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>
#include "npy_types.hpp"
#include "parallel.hpp"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common.hpp"
#include "interp.hpp"

namespace fastops {
namespace rsk {

enum Mode : int { kNearest = 0, kLinear = 1, kCubic = 2 };
enum Ctm : int {
  kHalfPixel = 0,
  kHalfPixelSymmetric = 1,
  kPytorchHalfPixel = 2,
  kAlignCorners = 3,
  kAsymmetric = 4,
  kTfCropAndResize = 5,
  kTfHalfPixelForNN = 6,
};
enum NearestMode : int { kRoundPreferFloor = 0, kRoundPreferCeil = 1, kFloor = 2, kCeil = 3 };

// One axis of one call (the public layer fills it; see fastops/resample.py).
struct AxisParams {
  int64_t n_in, n_out;
  double scale;      // the coordinate scale (float32 `scales` value, or out / in)
  double out_width;  // the reference's output_width: scale * n_in (exactly n_out for sizes)
  double roi_start, roi_end, cubic_a;
  int mode, ctm, nearest_mode;
  bool antialias, exclude_outside;
  int64_t n_raw;      // raw taps per output (before clamping and merging)
  int64_t tap_start;  // offset of the first raw tap from the (adjusted) floor
};

// Source coordinate of output o, the reference's expression in its evaluation order.
inline double source_coord(const AxisParams& p, int64_t o) {
  const double y = static_cast<double>(o);
  switch (p.ctm) {
    case kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(p.n_out) / p.out_width;
      const double center = static_cast<double>(p.n_in) / 2;
      const double offset = center * (1 - adjustment);
      return offset + (y + 0.5) / p.scale - 0.5;
    }
    case kPytorchHalfPixel:  // the spec (and ONNX Runtime): 0 for a length-1 output
      return p.n_out > 1 ? (y + 0.5) / p.scale - 0.5 : 0.0;
    case kAlignCorners:
      return p.n_out == 1 ? 0.0 : y * static_cast<double>(p.n_in - 1) / (p.out_width - 1);
    case kAsymmetric:
      return y / p.scale;
    case kTfHalfPixelForNN:
      return (y + 0.5) / p.scale;
    case kTfCropAndResize: {
      const double d = p.roi_end - p.roi_start;
      const double n1 = static_cast<double>(p.n_in - 1);
      const double x = p.n_out == 1 ? d * n1 / 2 : y * d * n1 / (p.out_width - 1);
      return x + p.roi_start * n1;
    }
    default:  // kHalfPixel
      return (y + 0.5) / p.scale - 0.5;
  }
}

// A work estimate for threads_for, computed in double and capped (products of extents
// and tap counts can pass int64 in absurd but allocatable cases).
inline int64_t work(double w) { return w < 4.0e18 ? static_cast<int64_t>(w) : int64_t(4e18); }

// Coordinates beyond +-2^52 cannot address a real axis; clamping keeps floor() and the
// integer conversion defined (NaN cannot arise from validated parameters; it maps to 0).
inline double tame(double x) {
  constexpr double kBig = 4503599627370496.0;  // 2^52
  if (!(x == x)) return 0.0;
  return x < -kBig ? -kBig : (x > kBig ? kBig : x);
}

// Raw coefficient of tap k (before normalization) at fraction r, the reference's
// expressions (_linear_coeffs, _cubic_coeffs, *_antialias).
inline double raw_coeff(const AxisParams& p, int64_t k, double r) {
  if (!p.antialias) {
    if (p.mode == kLinear) return k == 0 ? 1 - r : r;
    double c[4];
    cubic_coeffs<double>(r, p.cubic_a, c);
    return c[k];
  }
  const double s = std::min(p.scale, 1.0);
  const double i = static_cast<double>(p.tap_start + k);
  if (p.mode == kLinear) {
    const double c = 1 - std::fabs((i - r) * s);
    return c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);
  }
  return cubic_kernel<double>(s * (i - r), p.cubic_a);
}

// Fill row o of a table.  K >= every merged tap count (min(n_raw, n_in), 1 for nearest).
// The taps are walked several times (sums, trimming, merging) recomputing each
// coefficient, so that no scratch is needed; the CUDA builder (kernels/resample.cu,
// axis_table) is this function operation for operation.
template <typename W>
inline void table_row(const AxisParams& p, int64_t o, int64_t K, int64_t* first,
                      int64_t* count, W* weights, uint8_t* extrap) {
  W* wrow = weights + o * K;
  for (int64_t k = 0; k < K; ++k) wrow[k] = W(0);
  first[o] = 0;
  count[o] = 0;
  double x = source_coord(p, o);
  const double last = static_cast<double>(p.n_in - 1);
  if (p.ctm == kTfCropAndResize && !(x >= 0.0 && x <= last)) {
    extrap[o] = 1;  // also NaN (an overflowing roi)
    return;
  }
  extrap[o] = 0;
  x = tame(x);
  double fl = std::floor(x);
  double r = x - fl;  // exact
  if (p.mode == kNearest) {
    int64_t idx = static_cast<int64_t>(fl);
    if (r != 0.0) {  // an integral coordinate picks itself in every nearest mode
      bool up;
      switch (p.nearest_mode) {
        case kRoundPreferCeil: up = r >= 0.5; break;
        case kFloor: up = false; break;
        case kCeil: up = true; break;
        default: up = r > 0.5; break;
      }
      idx += up;
    }
    if (p.exclude_outside && (idx < 0 || idx >= p.n_in)) {
      // the reference's rule: the one sample has weight 0 and nothing renormalizes, so
      // the output is 0 (ONNX Runtime rejects exclude_outside with nearest)
      extrap[o] = 2;
      return;
    }
    first[o] = std::min<int64_t>(std::max<int64_t>(idx, 0), p.n_in - 1);
    count[o] = 1;
    wrow[0] = W(1);
    return;
  }
  // The reference's window: at an integral x the ratio is 1 and the window starts one
  // lower ("prefer the pixel on the left").
  if (r == 0.0) {
    fl -= 1.0;
    r = 1.0;
  }
  const int64_t base = static_cast<int64_t>(fl) + p.tap_start;
  const int64_t n = p.n_raw;
  double s1 = 1.0, s2 = 1.0;
  if (p.antialias) {  // coeffs / sum(coeffs)
    s1 = 0.0;
    for (int64_t k = 0; k < n; ++k) s1 += raw_coeff(p, k, r);
  }
  auto inside = [&](int64_t k) { return base + k >= 0 && base + k < p.n_in; };
  auto norm1 = [&](int64_t k) {
    const double c = raw_coeff(p, k, r);
    return p.antialias ? c / s1 : c;
  };
  if (p.exclude_outside) {  // zero the outside taps, renormalize
    s2 = 0.0;
    for (int64_t k = 0; k < n; ++k) s2 += inside(k) ? norm1(k) : 0.0;
    if (s2 == 0.0) s2 = 1.0;
  }
  auto coeff = [&](int64_t k) {
    if (!p.exclude_outside) return norm1(k);
    return inside(k) ? norm1(k) / s2 : 0.0;
  };
  // drop zero weights at both ends, clamp to the edge and merge equal indices
  int64_t k0 = 0, k1 = n;
  while (k0 < k1 && coeff(k0) == 0.0) ++k0;
  while (k1 > k0 && coeff(k1 - 1) == 0.0) --k1;
  if (k0 == k1) return;
  auto clamp_idx = [&](int64_t i) {
    return i < 0 ? int64_t(0) : (i >= p.n_in ? p.n_in - 1 : i);
  };
  const int64_t f = clamp_idx(base + k0);
  int64_t prev = f, c = 0;
  double acc = coeff(k0);
  for (int64_t k = k0 + 1; k < k1; ++k) {
    const int64_t idx = clamp_idx(base + k);
    const double ck = coeff(k);
    if (idx == prev) {
      acc += ck;
    } else {
      if (c < K) wrow[c] = static_cast<W>(acc);
      ++c;
      acc = ck;
      prev = idx;
    }
  }
  if (c < K) wrow[c] = static_cast<W>(acc);
  ++c;
  first[o] = f;
  count[o] = std::min(c, K);
}

}  // namespace rsk

// Build one axis table: first, count (n_out), weights (n_out * K), extrap (n_out).
template <typename W>
void resize_axis_table(const rsk::AxisParams& p, int64_t K, int64_t* first, int64_t* count,
                       W* weights, uint8_t* extrap, int nthreads) {
  const int64_t n_raw = std::max<int64_t>(p.n_raw, 1);
  const int nt = threads_for(rsk::work(double(p.n_out) * double(n_raw) * 16), nthreads);
  parallel_for(p.n_out, chunk_for(p.n_out, nt), nt, [&](int64_t o_lo, int64_t o_hi, int) {
    for (int64_t o = o_lo; o < o_hi; ++o) rsk::table_row<W>(p, o, K, first, count, weights, extrap);
  });
}

namespace rsk {

// A table as the apply kernels see it.
template <typename W>
struct Table {
  const int64_t* first;
  const int64_t* count;
  const W* w;
  int64_t K, n_out;
};

template <typename W>
inline bool nonneg_weights(const Table<W>& t) {
  for (int64_t o = 0; o < t.n_out; ++o)
    for (int64_t k = 0; k < t.count[o]; ++k)
      if (!(t.w[o * t.K + k] >= W(0))) return false;
  return true;
}

template <typename W>
inline bool is_identity(const Table<W>& t, int64_t n_in) {
  if (t.n_out != n_in) return false;
  for (int64_t o = 0; o < t.n_out; ++o)
    if (t.count[o] != 1 || t.first[o] != o || t.w[o * t.K] != W(1)) return false;
  return true;
}

// A 5-D strided view (B, H, M, Wd, C), strides in elements.
template <typename T>
struct View5 {
  const T* p;
  int64_t B, H, M, Wd, C;
  int64_t sB, sH, sM, sW, sC;
  // a row (b, y, m): Wd * C elements
  const T* row(int64_t b, int64_t y, int64_t m) const { return p + b * sB + y * sH + m * sM; }
  // are the Wd * C elements of a row at offsets 0, 1, 2, ... ?
  bool flat() const { return (C == 1 || sC == 1) && (Wd == 1 || sW == (C == 1 ? 1 : C)); }
};

// ------------------------------------------------------------------ SIMD helpers
// 16-byte vectors of W (GCC/Clang vector extensions: SSE2 on x86-64, NEON on arm64;
// 32-byte vectors cost stack spills without AVX).  Loads convert from the source type.
// Every lane runs the scalar sequence (w0 * v0, then + w1 * v1, ...), so the vector
// paths are bit-identical to the scalar ones and to the GPU.
#define RS_INLINE inline __attribute__((always_inline))
template <typename W>
struct VW {
  typedef W type __attribute__((vector_size(16)));
  static constexpr int N = 16 / static_cast<int>(sizeof(W));
};

template <typename S, typename W>
RS_INLINE typename VW<W>::type vload(const S* p) {
  typedef S vs __attribute__((vector_size(VW<W>::N * sizeof(S))));
  vs v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, typename VW<W>::type);
}

// Four consecutive vectors (4N values) from p.  For bytes -> float,
// __builtin_convertvector scalarizes on SSE2 (GCC 12: one scalar conversion per lane,
// 8x slower here); one 16-byte load widened with unpacks and cvtdq2ps instead.
template <typename S, typename W>
RS_INLINE void vload4(const S* p, typename VW<W>::type v[4]) {
#if defined(__SSE2__)
  if constexpr (std::is_same<W, float>::value && sizeof(S) == 1 &&
                std::is_integral<S>::value) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i lo16, hi16;
    if constexpr (std::is_signed<S>::value) {  // byte into the high half, then shift
      lo16 = _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8);
      hi16 = _mm_srai_epi16(_mm_unpackhi_epi8(b, b), 8);
    } else {
      const __m128i z = _mm_setzero_si128();
      lo16 = _mm_unpacklo_epi8(b, z);
      hi16 = _mm_unpackhi_epi8(b, z);
    }
    // 16 -> 32 bits: the 16-bit values are sign-correct, duplicate and shift
    const __m128i q0 = _mm_srai_epi32(_mm_unpacklo_epi16(lo16, lo16), 16);
    const __m128i q1 = _mm_srai_epi32(_mm_unpackhi_epi16(lo16, lo16), 16);
    const __m128i q2 = _mm_srai_epi32(_mm_unpacklo_epi16(hi16, hi16), 16);
    const __m128i q3 = _mm_srai_epi32(_mm_unpackhi_epi16(hi16, hi16), 16);
    v[0] = _mm_cvtepi32_ps(q0);
    v[1] = _mm_cvtepi32_ps(q1);
    v[2] = _mm_cvtepi32_ps(q2);
    v[3] = _mm_cvtepi32_ps(q3);
    return;
  }
#endif
  for (int i = 0; i < 4; ++i) v[i] = vload<S, W>(p + i * VW<W>::N);
}

template <typename W>
RS_INLINE void vstore(W* p, typename VW<W>::type v) {
  std::memcpy(p, &v, sizeof v);
}

// even / odd lanes of the 2N values a ++ b
template <typename W>
RS_INLINE typename VW<W>::type even_lanes(typename VW<W>::type a, typename VW<W>::type b) {
  if constexpr (VW<W>::N == 4) return __builtin_shufflevector(a, b, 0, 2, 4, 6);
  else return __builtin_shufflevector(a, b, 0, 2);
}
// interleave: a0 b0 a1 b1 ... (low half, high half)
template <typename W>
RS_INLINE void zip_store(W* p, typename VW<W>::type a, typename VW<W>::type b) {
  typename VW<W>::type lo, hi;
  if constexpr (VW<W>::N == 4) {
    lo = __builtin_shufflevector(a, b, 0, 4, 1, 5);
    hi = __builtin_shufflevector(a, b, 2, 6, 3, 7);
  } else {
    lo = __builtin_shufflevector(a, b, 0, 2);
    hi = __builtin_shufflevector(a, b, 1, 3);
  }
  vstore<W>(p, lo);
  vstore<W>(p + VW<W>::N, hi);
}

// dst[j] = (W) row[j] for the Wd * C elements of a row.
template <typename T, typename W>
inline void load_row(const View5<T>& v, const T* row, W* dst) {
  if (v.flat()) {
    const int64_t n = v.Wd * v.C;
    for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<W>(row[j]);
  } else {
    for (int64_t xi = 0; xi < v.Wd; ++xi)
      for (int64_t c = 0; c < v.C; ++c)
        dst[xi * v.C + c] = static_cast<W>(row[xi * v.sW + c * v.sC]);
  }
}

// ------------------------------------------------------------------ vertical step
// dst[j] = sum_k w[k] * rows[k][j], j < n, rows flat: two vectors at a time, every tap
// accumulated in registers.
template <typename S, typename W>
inline void vstep_flat(const S* const* rows, const W* w, int64_t cnt, int64_t n, W* dst) {
  typedef typename VW<W>::type V;
  constexpr int N = VW<W>::N;
  if (cnt == 0) {
    for (int64_t j = 0; j < n; ++j) dst[j] = W(0);
    return;
  }
  const W w0 = w[0];
  const S* r0 = rows[0];
  int64_t j = 0;
  for (; j + 4 * N <= n; j += 4 * N) {
    V a[4], v[4];
    vload4<S, W>(r0 + j, v);
    for (int i = 0; i < 4; ++i) a[i] = w0 * v[i];
    for (int64_t k = 1; k < cnt; ++k) {
      const W wk = w[k];
      vload4<S, W>(rows[k] + j, v);
      for (int i = 0; i < 4; ++i) a[i] = a[i] + wk * v[i];
    }
    for (int i = 0; i < 4; ++i) vstore<W>(dst + j + i * N, a[i]);
  }
  for (; j < n; ++j) {
    W acc = w0 * static_cast<W>(r0[j]);
    for (int64_t k = 1; k < cnt; ++k) acc = acc + w[k] * static_cast<W>(rows[k][j]);
    dst[j] = acc;
  }
}

// AVX2 (8 floats / 4 doubles per register, no FMA: the same products and sums) for the
// vertical step, chosen at run time.  Measured on the 2-core machine (AVX2), uint8
// HWC 1080x1920 -> 360 rows, 5-tap antialias, vertical step alone: SSE2 2.0 ms,
// AVX2 1.0 ms (best of 5, noisy machine).
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RS_AVX2 1
#define RS_AVX2_FN __attribute__((target("avx2"), always_inline)) inline

template <typename S>
RS_AVX2_FN __m256 avx_load8f(const S* p) {
  if constexpr (std::is_same<S, uint8_t>::value)
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  else if constexpr (std::is_same<S, int8_t>::value)
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  else if constexpr (std::is_same<S, uint16_t>::value)  // (cv_resize's up2_run)
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  else if constexpr (std::is_same<S, int16_t>::value)
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  else
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
}

template <typename S>
RS_AVX2_FN __m256d avx_load4d(const S* p) {
  if constexpr (std::is_same<S, int32_t>::value)
    return _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else
    return _mm256_loadu_pd(reinterpret_cast<const double*>(p));
}

template <typename S, typename W>
constexpr bool avx2_vstep_ok() {
  if constexpr (std::is_same<W, float>::value)
    return std::is_same<S, uint8_t>::value || std::is_same<S, int8_t>::value ||
           std::is_same<S, float>::value;
  else
    return std::is_same<S, int32_t>::value || std::is_same<S, double>::value;
}

template <typename S, typename W>
__attribute__((target("avx2"))) void vstep_flat_avx2(const S* const* rows, const W* w,
                                                     int64_t cnt, int64_t n, W* dst) {
  int64_t j = 0;
  if constexpr (std::is_same<W, float>::value) {
    for (; j + 32 <= n; j += 32) {
      __m256 a[4];
      __m256 wv = _mm256_set1_ps(w[0]);
      for (int i = 0; i < 4; ++i) a[i] = _mm256_mul_ps(wv, avx_load8f(rows[0] + j + 8 * i));
      for (int64_t k = 1; k < cnt; ++k) {
        wv = _mm256_set1_ps(w[k]);
        for (int i = 0; i < 4; ++i)
          a[i] = _mm256_add_ps(a[i], _mm256_mul_ps(wv, avx_load8f(rows[k] + j + 8 * i)));
      }
      for (int i = 0; i < 4; ++i) _mm256_storeu_ps(dst + j + 8 * i, a[i]);
    }
    for (; j + 8 <= n; j += 8) {  // (short rows: a tiny image's 16 values per row)
      __m256 a = _mm256_mul_ps(_mm256_set1_ps(w[0]), avx_load8f(rows[0] + j));
      for (int64_t k = 1; k < cnt; ++k)
        a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(w[k]), avx_load8f(rows[k] + j)));
      _mm256_storeu_ps(dst + j, a);
    }
  } else {
    for (; j + 16 <= n; j += 16) {
      __m256d a[4];
      __m256d wv = _mm256_set1_pd(w[0]);
      for (int i = 0; i < 4; ++i) a[i] = _mm256_mul_pd(wv, avx_load4d(rows[0] + j + 4 * i));
      for (int64_t k = 1; k < cnt; ++k) {
        wv = _mm256_set1_pd(w[k]);
        for (int i = 0; i < 4; ++i)
          a[i] = _mm256_add_pd(a[i], _mm256_mul_pd(wv, avx_load4d(rows[k] + j + 4 * i)));
      }
      for (int i = 0; i < 4; ++i) _mm256_storeu_pd(dst + j + 4 * i, a[i]);
    }
    for (; j + 4 <= n; j += 4) {
      __m256d a = _mm256_mul_pd(_mm256_set1_pd(w[0]), avx_load4d(rows[0] + j));
      for (int64_t k = 1; k < cnt; ++k)
        a = _mm256_add_pd(a, _mm256_mul_pd(_mm256_set1_pd(w[k]), avx_load4d(rows[k] + j)));
      _mm256_storeu_pd(dst + j, a);
    }
  }
  for (; j < n; ++j) {
    W acc = w[0] * static_cast<W>(rows[0][j]);
    for (int64_t k = 1; k < cnt; ++k) acc = acc + w[k] * static_cast<W>(rows[k][j]);
    dst[j] = acc;
  }
}

// FASTOPS_SIMD=baseline keeps the SSE2 path (the tests compare both; common.hpp simd_cap).
inline bool cpu_has_avx2() {
  static const bool ok = simd_cap() >= 1 && __builtin_cpu_supports("avx2");
  return ok;
}

// AVX-512 (16 lanes) for the vertical step and the float -> 8-bit store, where the AVX2
// ones run (the avx2 flag) and the CPU has AVX-512 F/BW unless FASTOPS_SIMD caps it at
// baseline or x86-64-v3 (simd_cap), as it caps the x86-64-v4 builds.
// The same operations per lane.  uint8 540x960x3 -> 1080x1920 linear, one thread, back
// to back: see docs/performance.md (thirteenth run).
#define RS_AVX512_FN __attribute__((target("avx512f,avx512bw"), always_inline)) inline

inline bool cpu_has_avx512() {
  static const bool ok = simd_cap() >= 2 && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw");
  return ok;
}

template <typename S>
RS_AVX512_FN __m512 avx512_load16f(const S* p) {
  if constexpr (std::is_same<S, uint8_t>::value)
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  else if constexpr (std::is_same<S, int8_t>::value)
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  else
    return _mm512_loadu_ps(p);
}

// vstep_flat_avx2 in float with 16 lanes: dst = w0 * r0 + w1 * r1 + ... left to right;
// with stream, the 64-byte-aligned part of dst by non-temporal stores (kStreamBytes).
template <typename S>
__attribute__((target("avx512f,avx512bw"))) void vstep_flat_avx512(
    const S* const* rows, const float* w, int64_t cnt, int64_t n, float* dst, bool stream) {
  auto one = [&](int64_t j) {
    float acc = w[0] * static_cast<float>(rows[0][j]);
    for (int64_t k = 1; k < cnt; ++k) acc = acc + w[k] * static_cast<float>(rows[k][j]);
    dst[j] = acc;
  };
  int64_t j = 0;
  if (stream) {
    for (; j < n && (reinterpret_cast<uintptr_t>(dst + j) & 63); ++j) one(j);
    for (; j + 16 <= n; j += 16) {
      __m512 a = _mm512_mul_ps(_mm512_set1_ps(w[0]), avx512_load16f(rows[0] + j));
      for (int64_t k = 1; k < cnt; ++k)
        a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_set1_ps(w[k]), avx512_load16f(rows[k] + j)));
      _mm512_stream_ps(dst + j, a);
    }
  }
  for (; j + 64 <= n; j += 64) {
    __m512 a[4];
    __m512 wv = _mm512_set1_ps(w[0]);
    for (int i = 0; i < 4; ++i) a[i] = _mm512_mul_ps(wv, avx512_load16f(rows[0] + j + 16 * i));
    for (int64_t k = 1; k < cnt; ++k) {
      wv = _mm512_set1_ps(w[k]);
      for (int i = 0; i < 4; ++i)
        a[i] = _mm512_add_ps(a[i], _mm512_mul_ps(wv, avx512_load16f(rows[k] + j + 16 * i)));
    }
    for (int i = 0; i < 4; ++i) _mm512_storeu_ps(dst + j + 16 * i, a[i]);
  }
  for (; j + 16 <= n; j += 16) {
    __m512 a = _mm512_mul_ps(_mm512_set1_ps(w[0]), avx512_load16f(rows[0] + j));
    for (int64_t k = 1; k < cnt; ++k)
      a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_set1_ps(w[k]), avx512_load16f(rows[k] + j)));
    _mm512_storeu_ps(dst + j, a);
  }
  for (; j < n; ++j) one(j);
}
#endif

// The vertical step with the best instruction set available.
// (stream: the AVX-512 step may write dst with non-temporal stores; the caller fences.)
template <typename S, typename W>
inline void vstep(const S* const* rows, const W* w, int64_t cnt, int64_t n, W* dst,
                  bool avx2, bool stream = false) {
#ifdef RS_AVX2
  if constexpr (avx2_vstep_ok<S, W>()) {
    if (avx2 && cnt > 0) {
      if constexpr (std::is_same<W, float>::value) {
        if (cpu_has_avx512()) {
          vstep_flat_avx512<S>(rows, w, cnt, n, dst, stream);
          return;
        }
      }
      vstep_flat_avx2<S, W>(rows, w, cnt, n, dst);
      return;
    }
  }
#endif
  (void)avx2;
  vstep_flat<S, W>(rows, w, cnt, n, dst);
}

inline bool use_avx2() {
#ifdef RS_AVX2
  return cpu_has_avx2();
#else
  return false;
#endif
}

// The same for rows of any strides (xi * sW + c * sC).
template <typename S, typename W>
inline void vstep_strided(const S* const* rows, const W* w, int64_t cnt, int64_t Wd,
                          int64_t C, int64_t sW, int64_t sC, W* dst) {
  for (int64_t xi = 0; xi < Wd; ++xi)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t off = xi * sW + c * sC;
      W acc = W(0);
      if (cnt > 0) acc = w[0] * static_cast<W>(rows[0][off]);
      for (int64_t k = 1; k < cnt; ++k) acc = acc + w[k] * static_cast<W>(rows[k][off]);
      dst[xi * C + c] = acc;
    }
}

// ------------------------------------------------------------------ horizontal step
// dst[xo * C + c] = sum_k w[xo, k] * src[(first[xo] + k) * C + c], src flat.
//
// C = 1 with an exactly periodic table (measured below) runs a vector loop over groups
// of outputs: "up2", two outputs per source step (integer 2x upscale: every output of a
// phase has the same taps and weights), and "down2", one output per two source steps
// (2x downscale, with or without antialias).  Other rows run the scalar loop.
struct HPlan {
  int kind = 0;           // 0 none, 1 up2, 2 down2
  int64_t lo = 0, groups = 0;  // rows lo .. lo + groups * P - 1 are periodic
};

template <typename W>
inline bool same_row(const Table<W>& t, int64_t a, int64_t b, int64_t shift) {
  if (t.count[a] != t.count[b] || t.first[b] != t.first[a] + shift) return false;
  for (int64_t k = 0; k < t.count[a]; ++k)
    if (t.w[a * t.K + k] != t.w[b * t.K + k]) return false;
  return true;
}

// The longest run of rows where row o + P repeats row o shifted by Q source indices.
template <typename W>
inline HPlan plan_periodic(const Table<W>& t, int64_t n_in) {
  HPlan h;
  const int64_t m = t.n_out;
  int P, Q, kind;
  if (m == 2 * n_in) {
    P = 2, Q = 1, kind = 1;
  } else if (n_in == 2 * m) {
    P = 1, Q = 2, kind = 2;
  } else {
    return h;
  }
  int64_t best_lo = 0, best_len = 0, o = 0;
  while (o + P < m) {
    if (!same_row(t, o, o + P, Q) || t.count[o] == 0) {
      ++o;
      continue;
    }
    const int64_t a = o;
    while (o + P < m && same_row(t, o, o + P, Q)) ++o;
    const int64_t len = o + P - a;  // rows a .. o + P - 1
    if (len > best_len) best_lo = a, best_len = len;
  }
  h.kind = kind;
  h.lo = best_lo;
  h.groups = best_len / P;
  // down2 loads 2N values per tap for N groups: one past the last tap of the last
  // group, so the last group of the run stays with the scalar loop
  if (kind == 2) h.groups -= 1;
  if (h.groups < 4 * VW<W>::N) h.kind = 0;  // not worth it
  return h;
}

template <typename W>
RS_INLINE W hsum_row(const W* s, const W* w, int64_t cnt) {
  W acc = W(0);
  if (cnt > 0) acc = w[0] * s[0];
  for (int64_t k = 1; k < cnt; ++k) acc = acc + w[k] * s[k];
  return acc;
}

template <typename W>
inline void hstep_c1_scalar(const W* src, const Table<W>& t, int64_t o0, int64_t o1,
                            W* dst) {
  const int64_t K = t.K;
  if (K == 2) {
    for (int64_t xo = o0; xo < o1; ++xo) {
      const W* s = src + t.first[xo];
      const W* w = t.w + 2 * xo;
      const int64_t cnt = t.count[xo];
      W acc = W(0);
      if (cnt > 0) acc = w[0] * s[0];
      if (cnt > 1) acc = acc + w[1] * s[1];
      dst[xo] = acc;
    }
    return;
  }
  for (int64_t xo = o0; xo < o1; ++xo)
    dst[xo] = hsum_row(src + t.first[xo], t.w + K * xo, t.count[xo]);
}

#ifdef RS_AVX2
// The up2 loop of float rows of C <= 4 channels with 16 lanes (cpu_has_avx512).  In flat
// (channel-interleaved) terms the two phases are a[j] = sum_k w0[k] * s0[j + k C] and
// b[j] = sum_k w1[k] * s1[j + k C], and output pixel pair g is a[Cg .. Cg + C - 1]
// followed by b[Cg .. Cg + C - 1]: so a and b are plain 16-lane sums of contiguous loads
// (the same products and sums as the scalar loop) and a vpermt2ps per output vector
// interleaves them.  One step takes G source pixels (16 for C = 1, else 8), whose C G
// values of a and of b lie in one or two vectors at offsets 0 / 8 / 16 (Up2Plan), and
// writes 2 C G outputs; it reads nothing past what those pixels' taps read.  Measured
// back to back, 2 threads, fastops._bench.resample: uint8 540x960x3 -> 1080x1920 linear
// (with vstep_store) 1.32 -> 0.93 ms; float32 (8, 3, 512, 512) -> 1024x1024 (C = 1, 16
// pixels a step as the loop this replaced) unchanged.
template <int C>
struct Up2Plan {
  static constexpr int G = C == 1 ? 16 : 8;  // source pixels per step
  static constexpr int V = 2 * C * G / 16;   // output vectors per step
  int nbase[2] = {0, 0};  // vectors of a (0) and b (1) per step
  int base[2][4] = {};     // their offsets
  int src[2][4] = {};      // output vector v permutes a[src[0][v]] and b[src[1][v]]
  int idx[4][16] = {};     // with these indices
  // every vector lies within the step's C G values (no read past the scalar loop's)
  constexpr bool in_step() const {
    for (int ph = 0; ph < 2; ++ph)
      for (int i = 0; i < nbase[ph]; ++i)
        if (base[ph][i] + 16 > C * G) return false;
    return true;
  }
};

// Output f of a step is value j of phase ph (f's pixel f / 2C, of phase r / C, channel
// r % C, with r = f % 2C).
struct Up2Source {
  int ph, j;
};
template <int C>
constexpr Up2Source up2_source(int f) {
  const int r = f % (2 * C);
  return {r / C, C * (f / (2 * C)) + r % C};
}

template <int C>
constexpr Up2Plan<C> up2_plan() {
  Up2Plan<C> p;
  for (int v = 0; v < Up2Plan<C>::V; ++v) {
    int lo[2] = {1 << 30, 1 << 30}, hi[2] = {-1, -1};
    for (int l = 0; l < 16; ++l) {
      const auto [ph, j] = up2_source<C>(16 * v + l);
      lo[ph] = lo[ph] < j ? lo[ph] : j;
      hi[ph] = hi[ph] > j ? hi[ph] : j;
    }
    for (int ph = 0; ph < 2; ++ph) {
      int i = 0;  // reuse a vector that covers the range, else one at lo rounded to 8
      while (i < p.nbase[ph] && !(p.base[ph][i] <= lo[ph] && hi[ph] < p.base[ph][i] + 16)) ++i;
      if (i == p.nbase[ph]) p.base[ph][p.nbase[ph]++] = lo[ph] / 8 * 8;
      p.src[ph][v] = i;
    }
    for (int l = 0; l < 16; ++l) {
      const auto [ph, j] = up2_source<C>(16 * v + l);
      p.idx[v][l] = 16 * ph + j - p.base[ph][p.src[ph][v]];
    }
  }
  return p;
}

// One phase's sums at offsets base[0 .. N) from p, every tap (unrolled over the vectors,
// which stay in registers).
template <int C, int N>
RS_AVX512_FN void up2_sums(const float* p, const float* w, int64_t cnt, const int* base,
                           __m512* acc) {
#pragma GCC unroll 2
  for (int i = 0; i < N; ++i)
    acc[i] = _mm512_mul_ps(_mm512_set1_ps(w[0]), _mm512_loadu_ps(p + base[i]));
  for (int64_t k = 1; k < cnt; ++k) {
    const __m512 wk = _mm512_set1_ps(w[k]);
#pragma GCC unroll 2
    for (int i = 0; i < N; ++i)
      acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(wk, _mm512_loadu_ps(p + base[i] + k * C)));
  }
}

template <int C>
__attribute__((target("avx512f,avx512bw"))) inline int64_t up2_avx512(
    const float* s0, const float* w0, int64_t c0, const float* s1, const float* w1,
    int64_t c1, int64_t groups, float* dst) {
  static constexpr Up2Plan<C> plan = up2_plan<C>();
  constexpr int G = Up2Plan<C>::G, V = Up2Plan<C>::V;
  constexpr int NA = plan.nbase[0], NB = plan.nbase[1];
  static_assert(plan.in_step(), "a vector past the step's values");
  __m512i idx[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v)
    idx[v] = _mm512_loadu_si512(static_cast<const void*>(plan.idx[v]));
  int64_t g = 0;
  for (; g + G <= groups; g += G) {
    __m512 a[NA], b[NB];
    up2_sums<C, NA>(s0 + C * g, w0, c0, plan.base[0], a);
    up2_sums<C, NB>(s1 + C * g, w1, c1, plan.base[1], b);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      _mm512_storeu_ps(dst + 2 * C * g + 16 * v,
                       _mm512_permutex2var_ps(a[plan.src[0][v]], idx[v], b[plan.src[1][v]]));
  }
  return g;
}
#endif

// Measured (2-core machine, 1 thread, noisy): the horizontal step of fastops._bench.
// resample's float32 (8, 3, 512, 512) -> 1024 x 1024 (12288 rows 512 -> 1024), L1-resident
// rows: scalar loop 11.2 ms, up2 vector loop 3.1 ms; the same rows 1024 -> 512:
// scalar 15 ms, down2 3.4-7.6 ms; with antialias (4 taps) scalar 30-39 ms, down2 10 ms.
template <typename W>
inline void hstep_c1(const W* src, const Table<W>& t, const HPlan& h, W* dst) {
  typedef typename VW<W>::type V;
  constexpr int N = VW<W>::N;
  const int64_t m = t.n_out, K = t.K;
  if (h.kind == 0) {
    hstep_c1_scalar(src, t, 0, m, dst);
    return;
  }
  const int P = h.kind == 1 ? 2 : 1;
  const int64_t lo = h.lo;
  hstep_c1_scalar(src, t, 0, lo, dst);
  int64_t g = 0;
  if (h.kind == 1) {
    const int64_t c0 = t.count[lo], c1 = t.count[lo + 1];
    const W* w0 = t.w + lo * K;
    const W* w1 = t.w + (lo + 1) * K;
    const W* s0 = src + t.first[lo];
    const W* s1 = src + t.first[lo + 1];
#ifdef RS_AVX2
    if constexpr (std::is_same_v<W, float>)
      if (cpu_has_avx512()) g = up2_avx512<1>(s0, w0, c0, s1, w1, c1, h.groups, dst + lo);
#endif
    for (; g + N <= h.groups; g += N) {
      V a = w0[0] * vload<W, W>(s0 + g);
      for (int64_t k = 1; k < c0; ++k) a = a + w0[k] * vload<W, W>(s0 + g + k);
      V b = w1[0] * vload<W, W>(s1 + g);
      for (int64_t k = 1; k < c1; ++k) b = b + w1[k] * vload<W, W>(s1 + g + k);
      zip_store<W>(dst + lo + 2 * g, a, b);
    }
  } else {
    const int64_t c0 = t.count[lo];
    const W* w0 = t.w + lo * K;
    const W* s0 = src + t.first[lo];
    for (; g + N <= h.groups; g += N) {
      const W* s = s0 + 2 * g;
      V a = w0[0] * even_lanes<W>(vload<W, W>(s), vload<W, W>(s + N));
      for (int64_t k = 1; k < c0; ++k)
        a = a + w0[k] * even_lanes<W>(vload<W, W>(s + k), vload<W, W>(s + k + N));
      vstore<W>(dst + lo + g, a);
    }
  }
  hstep_c1_scalar(src, t, lo + g * P, m, dst);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // 4 doubles per pixel: 32-byte vectors, inlined
#endif
// C = 2..4: one pixel per 4-lane vector, two pixels at a time when their tap counts
// agree (two independent accumulation chains).  src must have 4 readable values past
// its end; dst too when dst_slack (else exactly C values are stored per pixel).
template <typename W, int C>
inline void hstep_small(const W* src, const Table<W>& t, W* dst, bool dst_slack,
                        int64_t o0 = 0, int64_t o1 = -1) {
  typedef W v4 __attribute__((vector_size(4 * sizeof(W))));
  const int64_t m = o1 < 0 ? t.n_out : o1, K = t.K;
  auto ld = [](const W* p) {
    v4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  auto st = [&](int64_t xo, v4 acc) {
    if (dst_slack || xo + 1 < t.n_out) std::memcpy(dst + xo * C, &acc, sizeof acc);
    else std::memcpy(dst + xo * C, &acc, C * sizeof(W));
  };
  int64_t xo = o0;
  while (xo < m) {
    const int64_t cnt = t.count[xo];
    const W* s0 = src + t.first[xo] * C;
    const W* w0 = t.w + K * xo;
    if (cnt > 0 && xo + 1 < m && t.count[xo + 1] == cnt) {
      const W* s1 = src + t.first[xo + 1] * C;
      const W* w1 = w0 + K;
      v4 a = w0[0] * ld(s0), b = w1[0] * ld(s1);
      for (int64_t k = 1; k < cnt; ++k) {
        a = a + w0[k] * ld(s0 + k * C);
        b = b + w1[k] * ld(s1 + k * C);
      }
      st(xo, a);
      st(xo + 1, b);
      xo += 2;
      continue;
    }
    v4 acc = {};
    if (cnt > 0) acc = w0[0] * ld(s0);
    for (int64_t k = 1; k < cnt; ++k) acc = acc + w0[k] * ld(s0 + k * C);
    st(xo, acc);
    ++xo;
  }
}

// C = 2..4 over a periodic run (see HPlan): the phases' weights are broadcast once and
// the table is not read per pixel.  Measured with fastops._bench.resample's uint8
// 540x960x3 -> 1080x1920 (2-core machine, 1 thread, horizontal step alone, 540 rows):
// per-pixel table loop 4.2 ms, this loop 2.0 ms.
template <typename W, int C>
inline bool hstep_small_periodic(const W* src, const Table<W>& t, const HPlan& h, W* dst,
                                 bool dst_slack) {
  typedef W v4 __attribute__((vector_size(4 * sizeof(W))));
  constexpr int kMaxTaps = 8;
  const int64_t m = t.n_out, K = t.K;
  const int P = h.kind == 1 ? 2 : 1;
  v4 wv[2][kMaxTaps];
  int64_t cnt[2];
  const W* sp[2];
  for (int p = 0; p < P; ++p) {
    cnt[p] = t.count[h.lo + p];
    if (cnt[p] > kMaxTaps || cnt[p] == 0) return false;
    for (int64_t k = 0; k < cnt[p]; ++k) {
      const W w = t.w[(h.lo + p) * K + k];
      wv[p][k] = v4{w, w, w, w};
    }
    sp[p] = src + t.first[h.lo + p] * C;
  }
  auto ld = [](const W* q) {
    v4 v;
    std::memcpy(&v, q, sizeof v);
    return v;
  };
  const int64_t step = h.kind == 1 ? C : 2 * C;  // source advance per group
  int64_t g0 = 0;  // groups done by the 16-lane loop
#ifdef RS_AVX2
  if constexpr (std::is_same_v<W, float>)
    if (h.kind == 1 && cpu_has_avx512())
      g0 = up2_avx512<C>(sp[0], t.w + h.lo * K, cnt[0], sp[1], t.w + (h.lo + 1) * K, cnt[1],
                         h.groups, dst + h.lo * C);
#endif
  if (h.kind == 1 && cnt[0] == 2 && cnt[1] == 2 && dst_slack) {
    // 2x linear upscale: both phases' two taps unrolled, every store a whole vector
    // (uint8 540x960x3 -> 1080x1920: 24 -> 8 instructions per pixel, callgrind)
    W* d = dst + (h.lo + 2 * g0) * C;
    for (int64_t g = g0; g < h.groups; ++g, d += 2 * C) {
      const W* q0 = sp[0] + g * C;
      const W* q1 = sp[1] + g * C;
      const v4 a = wv[0][0] * ld(q0) + wv[0][1] * ld(q0 + C);
      const v4 b = wv[1][0] * ld(q1) + wv[1][1] * ld(q1 + C);
      std::memcpy(d, &a, sizeof a);
      std::memcpy(d + C, &b, sizeof b);
    }
    return true;
  }
  for (int64_t g = g0; g < h.groups; ++g) {
    for (int p = 0; p < P; ++p) {
      const W* q = sp[p] + g * step;
      v4 acc = wv[p][0] * ld(q);
      for (int64_t k = 1; k < cnt[p]; ++k) acc = acc + wv[p][k] * ld(q + k * C);
      const int64_t xo = h.lo + g * P + p;
      if (dst_slack || xo + 1 < m) std::memcpy(dst + xo * C, &acc, sizeof acc);
      else std::memcpy(dst + xo * C, &acc, C * sizeof(W));
    }
  }
  return true;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// C > 4: vectors along the channels.
template <typename W>
inline void hstep_wide(const W* src, const Table<W>& t, int64_t C, W* dst) {
  typedef typename VW<W>::type V;
  constexpr int N = VW<W>::N;
  const int64_t m = t.n_out, K = t.K;
  for (int64_t xo = 0; xo < m; ++xo) {
    const W* s = src + t.first[xo] * C;
    const W* w = t.w + K * xo;
    const int64_t cnt = t.count[xo];
    W* d = dst + xo * C;
    if (cnt == 0) {
      for (int64_t c = 0; c < C; ++c) d[c] = W(0);
      continue;
    }
    int64_t c = 0;
    for (; c + N <= C; c += N) {
      V a = w[0] * vload<W, W>(s + c);
      for (int64_t k = 1; k < cnt; ++k) a = a + w[k] * vload<W, W>(s + k * C + c);
      vstore<W>(d + c, a);
    }
    for (; c < C; ++c) {
      W a = w[0] * s[c];
      for (int64_t k = 1; k < cnt; ++k) a = a + w[k] * s[k * C + c];
      d[c] = a;
    }
  }
}

template <typename W, int C>
inline void hstep_small_any(const W* src, const Table<W>& t, const HPlan& h, W* dst,
                            bool dst_slack) {
  if (h.kind != 0) {
    const int P = h.kind == 1 ? 2 : 1;
    const int64_t hi = h.lo + h.groups * P;
    hstep_small<W, C>(src, t, dst, dst_slack, 0, h.lo);
    if (hstep_small_periodic<W, C>(src, t, h, dst, dst_slack)) {
      hstep_small<W, C>(src, t, dst, dst_slack, hi, t.n_out);
      return;
    }
  }
  hstep_small<W, C>(src, t, dst, dst_slack);
}

// Slack (in W values) that hstep may read past a flat source row / write past a
// destination row that is scratch.
constexpr int64_t kSlack = 4;

template <typename W>
inline void hstep(const W* src, const Table<W>& t, const HPlan& h, int64_t C, W* dst,
                  bool dst_slack) {
  switch (C) {
    case 1: hstep_c1(src, t, h, dst); break;
    case 2: hstep_small_any<W, 2>(src, t, h, dst, dst_slack); break;
    case 3: hstep_small_any<W, 3>(src, t, h, dst, dst_slack); break;
    case 4: hstep_small_any<W, 4>(src, t, h, dst, dst_slack); break;
    default: hstep_wide(src, t, C, dst);
  }
}

#ifdef RS_AVX2
// round_saturate of 32 floats to 8-bit with AVX2: 4 x 8 lanes rounded, packed, in order.
template <typename T, bool NonNeg>
RS_AVX2_FN __m256i round32_avx2(const __m256 v[4]) {
  const __m256 lo = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::min()));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
  const __m256 half = _mm256_set1_ps(0.5f), mhalf = _mm256_set1_ps(-0.5f);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    __m256 x = v[i];
    if (NonNeg) {  // 0 <= x: trunc(min(x, max) + 0.5), the sum exact below 2^23
      q[i] = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_min_ps(x, hi), half));
      continue;
    }
    x = _mm256_and_ps(x, _mm256_cmp_ps(x, x, _CMP_ORD_Q));  // NaN -> 0
    x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256i r = _mm256_cvttps_epi32(x);
    const __m256 d = _mm256_sub_ps(x, _mm256_cvtepi32_ps(r));
    r = _mm256_sub_epi32(r, _mm256_castps_si256(_mm256_cmp_ps(d, half, _CMP_GE_OQ)));
    r = _mm256_add_epi32(r, _mm256_castps_si256(_mm256_cmp_ps(d, mhalf, _CMP_LE_OQ)));
    q[i] = r;
  }
  const __m256i ab = _mm256_packs_epi32(q[0], q[1]);
  const __m256i cd = _mm256_packs_epi32(q[2], q[3]);
  const __m256i b8 = std::is_signed<T>::value ? _mm256_packs_epi16(ab, cd)
                                               : _mm256_packus_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(b8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// store_row's float -> 8-bit loop with AVX2 (8 lanes).
template <typename T, bool NonNeg>
__attribute__((target("avx2"))) int64_t store_row_avx2(const float* src, int64_t n, T* dst) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(src + j + 8 * i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), round32_avx2<T, NonNeg>(v));
  }
  return j;
}

// The vertical step of float rows fused with the store to 8-bit, AVX2: vstep's sums
// (w[0] r0, then + w[k] rk in order, no FMA) rounded in registers as store_row does, so
// no float row goes through memory.  Returns where it stopped (a multiple of 32).
// uint8 540x960x3 -> 1080x1920 linear, Zen 1 VM, 2 threads, against vstep + store_row
// in one process (scripts/checkout_ab.py): 2.19 -> 1.60 ms back to back, 2.83 -> 2.24
// after a pause (cv2 2.0-2.2).
template <typename T, bool NonNeg>
__attribute__((target("avx2"))) int64_t vstep_store_avx2(const float* const* rows,
                                                         const float* w, int64_t cnt,
                                                         int64_t n, T* dst) {
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256 v[4];
    const __m256 w0 = _mm256_set1_ps(w[0]);
    for (int i = 0; i < 4; ++i) v[i] = _mm256_mul_ps(w0, _mm256_loadu_ps(rows[0] + j + 8 * i));
    for (int64_t k = 1; k < cnt; ++k) {
      const __m256 wk = _mm256_set1_ps(w[k]);
      for (int i = 0; i < 4; ++i)
        v[i] = _mm256_add_ps(v[i], _mm256_mul_ps(wk, _mm256_loadu_ps(rows[k] + j + 8 * i)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), round32_avx2<T, NonNeg>(v));
  }
  return j;
}

// store_row_avx2's rounding of 16 floats to 8-bit with AVX-512: after the clamp the
// saturating narrows are exact.
template <typename T, bool NonNeg>
RS_AVX512_FN __m128i round16_avx512(__m512 v) {
  const __m512 lo = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::min()));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
  const __m512 half = _mm512_set1_ps(0.5f), mhalf = _mm512_set1_ps(-0.5f);
  const __m512i one = _mm512_set1_epi32(1);
  __m512i r;
  if (NonNeg) {  // 0 <= v: trunc(min(v, max) + 0.5), the sum exact below 2^23
    r = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_min_ps(v, hi), half));
  } else {
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN -> 0
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    r = _mm512_cvttps_epi32(v);
    const __m512 d = _mm512_sub_ps(v, _mm512_cvtepi32_ps(r));
    r = _mm512_mask_add_epi32(r, _mm512_cmp_ps_mask(d, half, _CMP_GE_OQ), r, one);
    r = _mm512_mask_sub_epi32(r, _mm512_cmp_ps_mask(d, mhalf, _CMP_LE_OQ), r, one);
  }
  return std::is_signed<T>::value ? _mm512_cvtsepi32_epi8(r) : _mm512_cvtusepi32_epi8(r);
}

// store_row_avx2 with 16 lanes (cpu_has_avx512).
template <typename T, bool NonNeg>
__attribute__((target("avx512f,avx512bw"))) int64_t store_row_avx512(const float* src,
                                                                     int64_t n, T* dst) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                     round16_avx512<T, NonNeg>(_mm512_loadu_ps(src + j)));
  return j;
}

// The vertical step of float rows fused with the store to 8-bit (cpu_has_avx512): the
// sums of vstep_flat_avx512, rounded in registers as store_row does, so no float row
// goes through memory.  Returns where it stopped (a multiple of 16).
template <typename T, bool NonNeg>
__attribute__((target("avx512f,avx512bw"))) int64_t vstep_store_avx512(
    const float* const* rows, const float* w, int64_t cnt, int64_t n, T* dst) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 a = _mm512_mul_ps(_mm512_set1_ps(w[0]), _mm512_loadu_ps(rows[0] + j));
    for (int64_t k = 1; k < cnt; ++k)
      a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_set1_ps(w[k]), _mm512_loadu_ps(rows[k] + j)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), round16_avx512<T, NonNeg>(a));
  }
  return j;
}
#endif

// dst = round_saturate(src).  float -> 8-bit with SSE2 or AVX2 (the scalar loop does not
// vectorize: 4 ns per value), the same operations as round_saturate: NaN -> 0, clamp,
// truncate, correct by the exact remainder, pack.  Measured (2-core machine, 1 thread)
// on 6.2M values: SSE2 2.4 ms, AVX2 1.3 ms.
//
// nonneg: every value is known to be >= 0 (unsigned input, non-negative weights): then
// trunc(min(v, max) + 0.5) is the same rounding (v + 0.5 is exact below 2^23) in a
// third of the operations (uint8 540x960x3 -> 1080x1920: 16 -> 8 instructions per 8
// values, callgrind).
template <typename W, typename T>
inline void store_row(const W* src, int64_t n, T* dst, bool avx2, bool nonneg) {
  int64_t j = 0;
#ifdef RS_AVX2
  if constexpr (std::is_same<W, float>::value && sizeof(T) == 1) {
    if (avx2 && cpu_has_avx512())
      j = nonneg ? store_row_avx512<T, true>(src, n, dst)
                 : store_row_avx512<T, false>(src, n, dst);
    else if (avx2)
      j = nonneg ? store_row_avx2<T, true>(src, n, dst)
                 : store_row_avx2<T, false>(src, n, dst);
  }
#endif
  (void)avx2;
#if defined(__SSE2__)
  if constexpr (std::is_same<W, float>::value && sizeof(T) == 1) {
    const __m128 lo = _mm_set1_ps(static_cast<float>(std::numeric_limits<T>::min()));
    const __m128 hi = _mm_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
    const __m128 half = _mm_set1_ps(0.5f), mhalf = _mm_set1_ps(-0.5f);
    auto round4 = [&](const float* p) {
      __m128 v = _mm_loadu_ps(p);
      if (nonneg) return _mm_cvttps_epi32(_mm_add_ps(_mm_min_ps(v, hi), half));
      v = _mm_and_ps(v, _mm_cmpord_ps(v, v));  // NaN -> 0
      v = _mm_max_ps(v, lo);  // (v > lo) ? v : lo
      v = _mm_min_ps(v, hi);
      __m128i i = _mm_cvttps_epi32(v);
      const __m128 d = _mm_sub_ps(v, _mm_cvtepi32_ps(i));
      i = _mm_sub_epi32(i, _mm_castps_si128(_mm_cmpge_ps(d, half)));  // true = -1
      i = _mm_add_epi32(i, _mm_castps_si128(_mm_cmple_ps(d, mhalf)));
      return i;
    };
    for (; j + 16 <= n; j += 16) {
      const __m128i a = _mm_packs_epi32(round4(src + j), round4(src + j + 4));
      const __m128i b = _mm_packs_epi32(round4(src + j + 8), round4(src + j + 12));
      const __m128i r = std::is_signed<T>::value ? _mm_packs_epi16(a, b) : _mm_packus_epi16(a, b);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), r);
    }
  }
#endif
  for (; j < n; ++j) dst[j] = round_saturate<T, W>(src[j]);
}

// An output row of integers from W rows: vstep into buf, then store_row; 8-bit from float
// with AVX2 or AVX-512 in one pass (vstep_store_avx2 / _avx512).  uint8 540x960x3 ->
// 1080x1920 linear: see docs/performance.md (twentieth run, forty-first session).
template <typename W, typename T>
inline void vstep_store(const W* const* rows, const W* w, int64_t cnt, int64_t n, W* buf,
                        T* dst, bool avx2, bool nonneg) {
#ifdef RS_AVX2
  if constexpr (std::is_same<W, float>::value && sizeof(T) == 1) {
    if (avx2 && cnt > 0) {
      const bool wide = cpu_has_avx512();
      int64_t j = wide ? (nonneg ? vstep_store_avx512<T, true>(rows, w, cnt, n, dst)
                                 : vstep_store_avx512<T, false>(rows, w, cnt, n, dst))
                       : (nonneg ? vstep_store_avx2<T, true>(rows, w, cnt, n, dst)
                                 : vstep_store_avx2<T, false>(rows, w, cnt, n, dst));
      for (; j < n; ++j) {
        W acc = w[0] * rows[0][j];
        for (int64_t k = 1; k < cnt; ++k) acc = acc + w[k] * rows[k][j];
        dst[j] = round_saturate<T, W>(acc);
      }
      return;
    }
  }
#endif
  vstep<W, W>(rows, w, cnt, n, buf, avx2);
  store_row<W, T>(buf, n, dst, avx2, nonneg);
}

}  // namespace rsk

// No fixed-point uint8 path.  Where every weight is a multiple of 2^-s (exact 2x / 4x
// scales: 0.25/0.75, 0.5/0.5, 1/8 3/8 3/8 1/8), the float path is exact and a 16-bit
// integer path gives the same bytes; it was built and measured (2-core machine, 1 thread,
// best of 15, noisy): uint8 HWC 1080x1920x3 -> 540x960 linear 2.5 ms float vs 2.9 ms
// int16, 540x960x3 -> 1080x1920 4.5 ms float vs 6.2 ms int16 (the AVX2 float steps are
// bound by memory and by the per-pixel horizontal gather, not by arithmetic), so it was
// removed.  Non-dyadic weights cannot use one anyway: quantized weights would change
// bytes under round-half-away-from-zero.

// Resize axes H and Wd of x (a 5-D strided view) into out (B, Ho, M, Wo, C), contiguous.
// th / tw: the tables (n_out = Ho / Wo).  v_first: vertical step first (see the top).
template <typename T, typename W>
void resize2d(const rsk::View5<T>& x, const rsk::Table<W>& th, const rsk::Table<W>& tw,
              bool v_first, T* out, int nthreads) {
  using namespace rsk;
  const int64_t B = x.B, H = x.H, M = x.M, Wd = x.Wd, C = x.C;
  const int64_t Ho = th.n_out, Wo = tw.n_out;
  const int64_t Lin = Wd * C, Lout = Wo * C;
  if (B == 0 || M == 0 || Ho == 0 || Lout == 0) return;
  const bool h_id = is_identity(th, H), w_id = is_identity(tw, Wd);
  const bool flat = x.flat();
  constexpr bool same = std::is_same<T, W>::value;  // out rows can take W directly
  const int64_t rows_out = B * Ho * M;
  const HPlan hplan = (!w_id && C <= 4) ? plan_periodic(tw, Wd) : HPlan();
  // the horizontal step reads its source in place only for C = 1 (no over-read)
  const bool h_direct = same && flat && C == 1;
  const bool avx2 = use_avx2();
  const bool nonneg = std::is_unsigned<T>::value && nonneg_weights(th) && nonneg_weights(tw);
  T* const out0 = out;
  auto out_row = [&](int64_t b, int64_t yo, int64_t m) {
    return out0 + ((b * Ho + yo) * M + m) * Lout;
  };

  if (h_id && w_id) {  // a copy (the public layer normally skips identity axes)
    const int nt = threads_for(rows_out * Lout, nthreads);
    parallel_for(rows_out, chunk_for(rows_out, nt), nt, [&](int64_t r_lo, int64_t r_hi, int) {
      for (int64_t r = r_lo; r < r_hi; ++r) {
        const int64_t m = r % M, yo = (r / M) % Ho, b = r / (M * Ho);
        const T* src = x.row(b, yo, m);
        T* d = out_row(b, yo, m);
        if (flat) {
          std::memcpy(d, src, static_cast<size_t>(Lout) * sizeof(T));
        } else {
          for (int64_t xi = 0; xi < Wd; ++xi)
            for (int64_t c = 0; c < C; ++c) d[xi * C + c] = src[xi * x.sW + c * x.sC];
        }
      }
    });
    return;
  }

  if (w_id || (v_first && !h_id)) {
    // Vertical step per output row, then (unless w_id) the horizontal step.
    const double per_row = double(Lin) * double(std::max<int64_t>(th.K, 1)) +
                           (w_id ? 0.0 : double(Lout) * double(std::max<int64_t>(tw.K, 1)) * 3);
    const int nt = threads_for(work(double(rows_out) * per_row), nthreads);
    const size_t vsz = static_cast<size_t>(Lin + kSlack);
    const size_t hsz = static_cast<size_t>(Lout + kSlack);
    const bool need_h = !w_id && !same;  // a W row before the final store
    const size_t per = vsz + (need_h ? hsz : 0);
    ThreadScratch<W> scratch(static_cast<int64_t>(per), nt);
    ThreadScratch<const T*> rowp(th.K, nt);
    const int64_t chunk = std::max<int64_t>(1, rows_out / (16 * nt));
    parallel_for(rows_out, chunk, nt, [&](int64_t r_lo, int64_t r_hi, int tid) {
      W* vbuf = scratch(tid);
      W* hbuf = vbuf + vsz;
      const T** rp = rowp(tid);
      for (int64_t r = r_lo; r < r_hi; ++r) {
        const int64_t m = r % M, yo = (r / M) % Ho, b = r / (M * Ho);
        const int64_t cnt = th.count[yo], f = th.first[yo];
        for (int64_t k = 0; k < cnt; ++k) rp[k] = x.row(b, f + k, m);
        T* d = out_row(b, yo, m);
        // vertical: into vbuf, or straight into the output row when nothing follows
        W* vdst = (w_id && same) ? reinterpret_cast<W*>(d) : vbuf;
        if (flat) vstep<T, W>(rp, th.w + th.K * yo, cnt, Lin, vdst, avx2);
        else vstep_strided<T, W>(rp, th.w + th.K * yo, cnt, Wd, C, x.sW, x.sC, vdst);
        if (w_id) {
          if (!same) store_row<W, T>(vbuf, Lout, d, avx2, nonneg);
          continue;
        }
        if (same) {
          hstep<W>(vbuf, tw, hplan, C, reinterpret_cast<W*>(d), false);
        } else {
          hstep<W>(vbuf, tw, hplan, C, hbuf, true);
          store_row<W, T>(hbuf, Lout, d, avx2, nonneg);
        }
      }
    });
    return;
  }

  if (h_id) {
    // Horizontal step only: one output row per source row.
    const int nt = threads_for(
        work(double(rows_out) * double(Lout) * double(std::max<int64_t>(tw.K, 1)) * 3),
        nthreads);
    const size_t lsz = h_direct ? 0 : static_cast<size_t>(Lin + kSlack);
    const size_t hsz = same ? 0 : static_cast<size_t>(Lout + kSlack);
    ThreadScratch<W> scratch(static_cast<int64_t>(lsz + hsz), nt);
    const int64_t chunk = std::max<int64_t>(1, rows_out / (16 * nt));
    parallel_for(rows_out, chunk, nt, [&](int64_t r_lo, int64_t r_hi, int tid) {
      W* lbuf = scratch(tid);
      W* hbuf = lbuf + lsz;
      for (int64_t r = r_lo; r < r_hi; ++r) {
        const int64_t m = r % M, yo = (r / M) % Ho, b = r / (M * Ho);
        const T* src = x.row(b, yo, m);
        T* d = out_row(b, yo, m);
        const W* s;
        if (h_direct) {
          s = reinterpret_cast<const W*>(src);
        } else {
          load_row<T, W>(x, src, lbuf);
          s = lbuf;
        }
        if (same) {
          hstep<W>(s, tw, hplan, C, reinterpret_cast<W*>(d), false);
        } else {
          hstep<W>(s, tw, hplan, C, hbuf, true);
          store_row<W, T>(hbuf, Lout, d, avx2, nonneg);
        }
      }
    });
    return;
  }

  // Horizontal step first: each thread takes stripes of output rows of one (b, m) plane
  // and keeps the horizontally resized source rows in a ring of K_h slots (slot y % R).
  const int64_t R = std::max<int64_t>(th.K, 1);
  const int64_t planes = B * M;
  const double hrows = std::min(double(H), double(Ho) * double(R));
  const int nt = threads_for(
      work(double(planes) * double(Lout) * (hrows * double(tw.K) * 3 + double(Ho) * double(R))),
      nthreads);
  // stripes: enough items for balance, at least 16 rows each (a new stripe recomputes
  // up to R - 1 ring rows)
  int64_t stripe = std::max<int64_t>(16, (planes * Ho + 4 * nt - 1) / (4 * nt));
  stripe = std::min<int64_t>(stripe, Ho);
  const int64_t stripes = (Ho + stripe - 1) / stripe;
  const size_t lsz = h_direct ? 0 : static_cast<size_t>(Lin + kSlack);
  const size_t osz = same ? 0 : static_cast<size_t>(Lout);
  const size_t row_len = static_cast<size_t>(Lout + kSlack);
  const size_t rsz = static_cast<size_t>(R) * row_len;
  const size_t per = rsz + lsz + osz;
  ThreadScratch<W> scratch(static_cast<int64_t>(per), nt);
  ThreadScratch<int64_t> tags(R, nt);
  ThreadScratch<const W*> rowp(R, nt);
  // (the same 2x upscale, 100 MB out: 3.8-4.6 -> 2.9-3.0 ms with non-temporal stores)
  const bool stream =
      same && double(planes) * double(Ho) * double(Lout) * sizeof(W) >= double(kStreamBytes);
  parallel_for(planes * stripes, 1, nt, [&](int64_t item_lo, int64_t item_hi, int tid) {
    W* ring = scratch(tid);
    W* lbuf = ring + rsz;
    W* obuf = lbuf + lsz;
    int64_t* tag = tags(tid);
    const W** rp = rowp(tid);
    for (int64_t item = item_lo; item < item_hi; ++item) {
      const int64_t plane = item / stripes, s = item % stripes;
      const int64_t b = plane / M, m = plane % M;
      const int64_t y0 = s * stripe, y1 = std::min(Ho, y0 + stripe);
      for (int64_t k = 0; k < R; ++k) tag[k] = -1;
      for (int64_t yo = y0; yo < y1; ++yo) {
        const int64_t cnt = th.count[yo], f = th.first[yo];
        for (int64_t k = 0; k < cnt; ++k) {
          const int64_t y = f + k;
          const int64_t sl = y % R;
          W* hr = ring + sl * row_len;
          if (tag[sl] != y) {
            const T* src = x.row(b, y, m);
            const W* sp;
            if (h_direct) {
              sp = reinterpret_cast<const W*>(src);
            } else {
              load_row<T, W>(x, src, lbuf);
              sp = lbuf;
            }
            hstep<W>(sp, tw, hplan, C, hr, true);
            tag[sl] = y;
          }
          rp[k] = hr;
        }
        T* d = out_row(b, yo, m);
        if constexpr (same)
          vstep<W, W>(rp, th.w + th.K * yo, cnt, Lout, reinterpret_cast<W*>(d), avx2, stream);
        else
          vstep_store<W, T>(rp, th.w + th.K * yo, cnt, Lout, obuf, d, avx2, nonneg);
      }
    }
    if (stream) stream_fence();
  });
}

// Nearest: out[b, yo, m, xo, c] = x[b, fh[yo], m, fw[xo], c] (pure gather, any element
// type by its bits).  Consecutive output rows with the same source row are copied.
namespace rsk {

// one output row from a source row: pixels of C elements (C contiguous in the source
// when cflat); CS = C as a constant (0: any)
template <typename T, int CS>
inline void gather_row(const T* src, const int64_t* offw, int64_t Wo, int64_t C, int64_t sC,
                       bool cflat, int dup, T* d) {
  if constexpr (CS == 1) {
    if (dup == 2) {  // an exact 2x upscale of a contiguous row: each element twice
      typedef T V __attribute__((vector_size(16)));
      constexpr int L = 16 / sizeof(T);
      const int64_t n = Wo / 2;
      const T* s = src + offw[0];
      int64_t j = 0;
      for (; j + L <= n; j += L) {
        V v;
        std::memcpy(&v, s + j, sizeof v);
        V lo, hi;
        if constexpr (L == 16) {
          lo = __builtin_shufflevector(v, v, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
          hi = __builtin_shufflevector(v, v, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14,
                                       14, 15, 15);
        } else if constexpr (L == 8) {
          lo = __builtin_shufflevector(v, v, 0, 0, 1, 1, 2, 2, 3, 3);
          hi = __builtin_shufflevector(v, v, 4, 4, 5, 5, 6, 6, 7, 7);
        } else if constexpr (L == 4) {
          lo = __builtin_shufflevector(v, v, 0, 0, 1, 1);
          hi = __builtin_shufflevector(v, v, 2, 2, 3, 3);
        } else {
          lo = __builtin_shufflevector(v, v, 0, 0);
          hi = __builtin_shufflevector(v, v, 1, 1);
        }
        std::memcpy(d + 2 * j, &lo, sizeof lo);
        std::memcpy(d + 2 * j + L, &hi, sizeof hi);
      }
      for (; j < n; ++j) d[2 * j] = d[2 * j + 1] = s[j];
      return;
    }
    for (int64_t xo = 0; xo < Wo; ++xo) d[xo] = src[offw[xo]];
  } else if constexpr (CS > 1) {
    if (cflat) {
      for (int64_t xo = 0; xo < Wo; ++xo)
        std::memcpy(d + xo * CS, src + offw[xo], CS * sizeof(T));
      return;
    }
    for (int64_t xo = 0; xo < Wo; ++xo)
      for (int c = 0; c < CS; ++c) d[xo * CS + c] = src[offw[xo] + c * sC];
  } else {
    if (cflat) {
      for (int64_t xo = 0; xo < Wo; ++xo)
        std::memcpy(d + xo * C, src + offw[xo], static_cast<size_t>(C) * sizeof(T));
      return;
    }
    for (int64_t xo = 0; xo < Wo; ++xo)
      for (int64_t c = 0; c < C; ++c) d[xo * C + c] = src[offw[xo] + c * sC];
  }
}

#if defined(RS_AVX2)
// Rows of pixels of B <= 16 contiguous bytes by byte permutes, where the CPU has AVX-512
// VBMI: vpermt2b puts any 64 output bytes together from 128 source bytes, so a step
// writes the run of whole output pixels whose source bytes lie in the 128 bytes from the
// run's lowest one (uint8 3-channel 3x downscale: 14 pixels) with two masked loads (no
// byte outside the row's pixels is read: masked-off bytes never fault), one permute
// and one masked store, where the per-pixel copies take about five instructions a pixel.
// Built once per call (the same for every row).  cv.resize uint8 1920x1080x3 -> 640x640
// nearest, 2 threads, against the per-pixel copies in one process (scripts/checkout_ab.py,
// medians of 41): 0.59-0.67 back to back; after a pause 0.90, and 0.74-0.78 with the
// next row's windows prefetched (docs/performance.md, twenty-seventh session).
struct PermSteps {
  std::vector<int64_t> base, at;     // source byte of the step's window, first output byte
  std::vector<uint64_t> lo, hi, out; // bytes read of the window's halves, bytes written
  std::vector<uint8_t> idx;          // 64 per step: output byte j <- window byte idx[j]
};

inline bool cpu_has_vbmi() {
  static const bool ok = cpu_has_avx512() && __builtin_cpu_supports("avx512vbmi");
  return ok;
}

// offw: each output pixel's first source element, of E bytes; B bytes a pixel (<= 16).
inline PermSteps perm_steps(const int64_t* offw, int64_t E, int64_t Wo, int64_t B) {
  PermSteps s;
  auto off = [&](int64_t p) { return offw[p] * E; };
  for (int64_t p = 0; p < Wo;) {
    int64_t lo = off(p), hi = off(p) + B, g = 1;
    for (; p + g < Wo && (g + 1) * B <= 64; ++g) {
      const int64_t l = std::min(lo, off(p + g)), h = std::max(hi, off(p + g) + B);
      if (h - l > 128) break;
      lo = l;
      hi = h;
    }
    s.base.push_back(lo);
    s.at.push_back(p * B);
    s.lo.push_back(first_lanes<uint64_t>(hi - lo));
    s.hi.push_back(first_lanes<uint64_t>(hi - lo - 64));
    s.out.push_back(first_lanes<uint64_t>(g * B));
    for (int64_t j = 0; j < 64; ++j)
      s.idx.push_back(j < g * B ? static_cast<uint8_t>(off(p + j / B) - lo + j % B) : 0);
    p += g;
  }
  return s;
}

// next: the source row of this thread's next output row (null: none), its windows
// prefetched into L2 as this row's are read.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) inline void perm_gather_row(
    const uint8_t* src, const uint8_t* next, const PermSteps& s, uint8_t* d) {
  const int64_t n = static_cast<int64_t>(s.base.size());
  for (int64_t i = 0; i < n; ++i) {
    if (next) {
      _mm_prefetch(reinterpret_cast<const char*>(next + s.base[i]), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(next + s.base[i] + 64), _MM_HINT_T1);
    }
    const uint8_t* w = src + s.base[i];
    const __m512i a = _mm512_maskz_loadu_epi8(s.lo[i], w);
    const __m512i b = _mm512_maskz_loadu_epi8(s.hi[i], w + 64);
    const __m512i v = _mm512_permutex2var_epi8(a, _mm512_loadu_si512(s.idx.data() + 64 * i), b);
    _mm512_mask_storeu_epi8(d + s.at[i], s.out[i], v);
  }
}
#endif

}  // namespace rsk

// Measured (2-core machine, 1 thread, best of 15, noisy): uint8 540x960x3 -> 1080x1920
// nearest, per-element loop over C 3.4 ms -> fixed-size pixel copies 2.3 ms (cv2 3.3 ms);
// float32 (3, 224, 224) -> 448 x 448, element gather 0.2 ms -> 2x duplication 0.1 ms.
template <typename T>
void nearest2d(const rsk::View5<T>& x, const int64_t* fh, int64_t Ho, const int64_t* fw,
               int64_t Wo, T* out, int nthreads) {
  using namespace rsk;
  const int64_t B = x.B, M = x.M, C = x.C;
  const int64_t Lout = Wo * C;
  const int64_t rows = B * Ho * M;
  if (rows == 0 || Lout == 0) return;
  std::vector<int64_t> offw(static_cast<size_t>(Wo));
  for (int64_t xo = 0; xo < Wo; ++xo) offw[xo] = fw[xo] * x.sW;
  const bool cflat = C == 1 || x.sC == 1;
  // exact 2x duplication of a contiguous row: fw[xo] = fw[0] + xo / 2
  int dup = 0;
  if (C == 1 && x.sW == 1 && Wo % 2 == 0 && Wo >= 32) {
    dup = 2;
    for (int64_t xo = 0; xo < Wo && dup; ++xo)
      if (fw[xo] != fw[0] + xo / 2) dup = 0;
  }
#if defined(RS_AVX2)
  const int64_t px_bytes = C * static_cast<int64_t>(sizeof(T));
  PermSteps steps;
  const bool perm = cflat && !dup && px_bytes <= 16 && cpu_has_vbmi();
  if (perm) steps = perm_steps(offw.data(), sizeof(T), Wo, px_bytes);
#endif
  const int nt = threads_for(rows * Lout, nthreads);
  const int64_t chunk = std::max<int64_t>(1, rows / (16 * nt));
  parallel_for(rows, chunk, nt, [&](int64_t r_lo, int64_t r_hi, int) {
    // the previous row of this thread (any chunk): the same source row means the same
    // output row, already complete
    const T* prev_src = nullptr;
    const T* prev_out = nullptr;
    auto source = [&](int64_t r) { return x.row(r / (M * Ho), fh[(r / M) % Ho], r % M); };
    const T* next = source(r_lo);
    for (int64_t r = r_lo; r < r_hi; ++r) {
      const T* src = next;
      next = r + 1 < r_hi ? source(r + 1) : nullptr;
      T* d = out + r * Lout;
      if (src == prev_src) {
        std::memcpy(d, prev_out, static_cast<size_t>(Lout) * sizeof(T));
#if defined(RS_AVX2)
      } else if (perm) {  // (prefetching two or three rows ahead: no better after a pause)
        perm_gather_row(reinterpret_cast<const uint8_t*>(src),
                        reinterpret_cast<const uint8_t*>(next == src ? nullptr : next), steps,
                        reinterpret_cast<uint8_t*>(d));
#endif
      } else {
        switch (C) {
          case 1: gather_row<T, 1>(src, offw.data(), Wo, C, x.sC, cflat, dup, d); break;
          case 2: gather_row<T, 2>(src, offw.data(), Wo, C, x.sC, cflat, 0, d); break;
          case 3: gather_row<T, 3>(src, offw.data(), Wo, C, x.sC, cflat, 0, d); break;
          case 4: gather_row<T, 4>(src, offw.data(), Wo, C, x.sC, cflat, 0, d); break;
          default: gather_row<T, 0>(src, offw.data(), Wo, C, x.sC, cflat, 0, d);
        }
      }
      prev_src = src;
      prev_out = d;
    }
  });
}

// dst[i] = round_saturate(src[i]) (the last pass of a chain of more than two axes).
template <typename W, typename T>
void resize_round_cast(const W* src, int64_t n, T* dst, int nthreads) {
  const int nt = threads_for(n, nthreads);
  parallel_for(n, chunk_for(n, nt), nt, [&](int64_t i_lo, int64_t i_hi, int) {
    for (int64_t i = i_lo; i < i_hi; ++i) dst[i] = round_saturate<T, W>(src[i]);
  });
}

// out (B, m, C) contiguous: out[b, o, :] = value where mask[o] == code.
template <typename T>
void resize_fill(T* out, int64_t B, int64_t m, int64_t C, const uint8_t* mask, int code,
                 T value, int nthreads) {
  const int nt = threads_for(B * m * C, nthreads);
  parallel_for(B, chunk_for(B, nt), nt, [&](int64_t b_lo, int64_t b_hi, int) {
    for (int64_t b = b_lo; b < b_hi; ++b)
      for (int64_t o = 0; o < m; ++o)
        if (mask[o] == code)
          for (int64_t c = 0; c < C; ++c) out[(b * m + o) * C + c] = value;
  });
}

// ------------------------------------------------------------------ flat entry points
// (scalar arguments for the Cython module)
template <typename W>
void resize_table(int64_t n_in, int64_t n_out, int mode, int ctm, int nearest_mode,
                  double scale, double out_width, double roi_start, double roi_end,
                  double cubic_a, bool antialias, bool exclude_outside, int64_t n_raw,
                  int64_t tap_start, int64_t K, int64_t* first, int64_t* count, W* weights,
                  uint8_t* extrap, int nthreads) {
  rsk::AxisParams p;
  p.n_in = n_in;
  p.n_out = n_out;
  p.scale = scale;
  p.out_width = out_width;
  p.roi_start = roi_start;
  p.roi_end = roi_end;
  p.cubic_a = cubic_a;
  p.mode = mode;
  p.ctm = ctm;
  p.nearest_mode = nearest_mode;
  p.antialias = antialias;
  p.exclude_outside = exclude_outside;
  p.n_raw = n_raw;
  p.tap_start = tap_start;
  resize_axis_table<W>(p, K, first, count, weights, extrap, nthreads);
}

template <typename T>
rsk::View5<T> view5(const T* x, const int64_t* shape, const int64_t* strides) {
  return rsk::View5<T>{x,          shape[0],   shape[1],   shape[2],   shape[3],  shape[4],
                       strides[0], strides[1], strides[2], strides[3], strides[4]};
}

template <typename T, typename W>
void resize2d_flat(const T* x, const int64_t* shape, const int64_t* strides,
                   const int64_t* fh, const int64_t* ch, const W* wh, int64_t Kh, int64_t Ho,
                   const int64_t* fw, const int64_t* cw, const W* ww, int64_t Kw, int64_t Wo,
                   bool v_first, T* out, int nthreads) {
  resize2d<T, W>(view5(x, shape, strides), rsk::Table<W>{fh, ch, wh, Kh, Ho},
                 rsk::Table<W>{fw, cw, ww, Kw, Wo}, v_first, out, nthreads);
}

// resample.pyx resize2d's entry: x of NumPy type `typenum` (uint8, int8, int32, int64,
// float32 or float64; false, nothing run, for another), weights float64 when `wdouble`
// else float32, out of x's type.
inline bool resize2d_typed(int typenum, bool wdouble, const void* x, const int64_t* shape,
                           const int64_t* strides, const int64_t* fh, const int64_t* ch,
                           const void* wh, int64_t Kh, int64_t Ho, const int64_t* fw,
                           const int64_t* cw, const void* ww, int64_t Kw, int64_t Wo,
                           bool v_first, void* out, int nthreads) {
  bool done = false;
  visit_real(typenum, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> ||
                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                  std::is_floating_point_v<T>) {
      auto run = [&](auto w) {
        using W = decltype(w);
        resize2d_flat<T, W>(static_cast<const T*>(x), shape, strides, fh, ch,
                            static_cast<const W*>(wh), Kh, Ho, fw, cw, static_cast<const W*>(ww),
                            Kw, Wo, v_first, static_cast<T*>(out), nthreads);
      };
      wdouble ? run(double{}) : run(float{});
      done = true;
    }
  });
  return done;
}

template <typename T>
void nearest2d_flat(const T* x, const int64_t* shape, const int64_t* strides,
                    const int64_t* fh, int64_t Ho, const int64_t* fw, int64_t Wo, T* out,
                    int nthreads) {
  nearest2d<T>(view5(x, shape, strides), fh, Ho, fw, Wo, out, nthreads);
}

// nearest2d_flat on elements of `itemsize` bytes moved as words (resample.pyx
// fast_planned_resize); false, nothing run, for another size.
inline bool nearest2d_words(int itemsize, const void* x, const int64_t* shape,
                            const int64_t* strides, const int64_t* fh, int64_t Ho,
                            const int64_t* fw, int64_t Wo, void* out, int nthreads) {
  return visit_word(itemsize, [&](auto t) {
    using T = decltype(t);
    nearest2d_flat<T>(static_cast<const T*>(x), shape, strides, fh, Ho, fw, Wo,
                      static_cast<T*>(out), nthreads);
  });
}

}  // namespace fastops
