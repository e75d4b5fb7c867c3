// fastops.cv.resize on the CPU: OpenCV's cv::resize (modules/imgproc/src/resize.cpp,
// OpenCV 5.0 with IPP off) reproduced operation for operation, so results are bit-exact
// with it on every image type.
//
// Images are (H, W, C) with C-contiguous pixels and any row stride (negative too); outputs
// are contiguous (dh, dw, C).  fastops/cv.py picks the path exactly as hal::resize does.
// Reused from the resize family (resample.hpp) where the arithmetic is the same: the
// nearest gather (nearest2d) and, for float images, INTER_AREA downscaling (resize2d with
// cv_area_table's tables, horizontal pass first: OpenCV's resizeArea_ sums).  The rest:
//
// * cv_resize_fixed: INTER_LINEAR / INTER_CUBIC / INTER_AREA-upscale on uint8 in 11-bit
//   fixed point (resizeGeneric_ with HResizeLinear/HResizeCubic<uchar, int, short> and
//   VResizeLinear/VResizeCubic with FixedPtCast<int, uchar, 22>).  Horizontal pass per
//   source row into int32, kept in a per-thread ring of K rows (each source row is
//   resized once per stripe of output rows, OpenCV's scheme), then the vertical pass:
//   linear ((b0 * (H0 >> 4)) >> 16) + ((b1 * (H1 >> 4)) >> 16) + 2 >> 2 (OpenCV's
//   v_mul_hi trick, the same on every ISA); cubic as OpenCV's VResizeCubicVec_32s8u:
//   float32 ((H3*b3 + H2*b2) + H1*b1) + H0*b0 with b = beta * 2^-22, rounded half to
//   even, for the elements its 8-lane vector loop covers (x < width rounded down to 8),
//   and (sum + 2^21) >> 22 in integers for the tail (the two differ on ~2e-6 of values).
// * cv_resize_float: the same filters on uint16 / int16 / float32 / float64 in OpenCV's
//   float arithmetic and order (the resize family's apply merges clamped edge taps and
//   sums cubic taps in another order, so it is not reused there).
// * one-hot columns (every horizontal tap weight 0 or 1: odd integer downscales such as
//   1920 -> 640, or an unchanged width): the horizontal sums of an integer image are then
//   exact, so uint8 linear / linear_exact / cubic and 16-bit linear / cubic rows of 3 and
//   4 channels take a widening gather (hot_pass; uint8 INTER_LINEAR into an int16 ring,
//   what the vertical pass would have packed), one-channel 16-bit rows of
//   the x86-64-v3 and -v4 builds in-lane byte shuffles (hot_stride_row); the vertical
//   sums are unchanged.
// * exact 2x linear upscales (dw = 2w) of 16-bit and float32 rows, x86-64-v3 and -v4:
//   the horizontal sums from three contiguous windows (up2_run), the same operations.
// * float32 one-channel rows whose columns step by a constant s with constant weights
//   (integer downscales), x86-64-v3 and -v4: 4 columns from blended loads
//   (const_stride_steps); other one-channel linear rows load each column's tap pair
//   (Lane128 / Lane256 pairs), not a 4-element window.
// * cv_resize_exact: INTER_LINEAR_EXACT (resize_bitExact): softdouble (IEEE double)
//   coefficients in 8 (uint8) or 16 (uint16, int16) fractional bits, exact integer passes
//   rounded (v + half) >> shift.
// * cv_area_fast: resizeAreaFast_ (integer scale factors) for every dtype, with OpenCV's
//   two rules for 2x2 cells ((a+b+c+d+2) >> 2 for 1/3/4-channel integer images, the
//   float32 vector order for 1/4 channels) and its sum order elsewhere.
// * cv_area: resizeArea_ (non-integer downscale) for integer images: float32 sums in
//   OpenCV's order, rounded half to even; cv_area_table builds the cells' tables.
// * cv_nn_table: INTER_NEAREST (floor(x * (1 / scale)) in double) and
//   INTER_NEAREST_EXACT (OpenCV 5 / Pillow: the running double sum f = scale / 2,
//   f += scale); the gather itself is resample.hpp's nearest2d.
//
// Every output value is one fixed sequence of operations (tables are built before the
// parallel region, rows are independent), so results never depend on the thread count,
// the stripe split or the SIMD path (SSE2 baseline; AVX2 chosen at run time as in
// resample.hpp for the uint8 passes, and in the x86-64-v3 build of this module
// (fastops/_cpu/avx2) for the float / 16-bit / float64 passes and the 2x2 area cells);
// the CUDA kernels (kernels/cv_resize.cu) evaluate the same sequences.
// Indices are int64 and clamped where used: no table value, scale or coordinate can make
// a kernel read or write out of bounds.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <vector>
#include "parallel.hpp"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common.hpp"
#include "npy_types.hpp"
#include "resample.hpp"

// OpenCV's float sequences, bit for bit, on every build: no FMA contraction (setup.py
// passes -ffp-contract=off too; this keeps it with -march=native or other builds).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace fastops {
namespace cvr {

enum Interp : int {
  kNearest = 0,
  kLinear = 1,
  kCubic = 2,
  kArea = 3,
  kLinearExact = 5,
  kNearestExact = 6,
};

// OpenCV's coefficient rules per axis: linear, cubic, INTER_AREA upscaling (bilinear with
// the "area" fractions).
enum TableKind : int { kTabLinear = 0, kTabCubic = 1, kTabAreaLinear = 2 };

// cvFloor of a coordinate; values beyond +-2^53 cannot address an axis (tamed first, so
// the conversion is defined whatever the scale).
inline int64_t floor_i64(double v) {
  constexpr double kBig = 9007199254740992.0;  // 2^53
  if (!(v == v)) return 0;
  v = v < -kBig ? -kBig : (v > kBig ? kBig : v);
  return static_cast<int64_t>(std::floor(v));
}

inline int64_t clamp_idx(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// The horizontal passes of multi-channel images read each source row left to right (then
// the next row the ring needs, usually the one below) and prefetch kRowPrefetchBytes
// ahead of their reads, one prefetch per vector step.  On the AVX-512 EPYC VM the
// hardware prefetchers did not keep up with a large image that does not stay in the
// cache between calls: the float32 pass waited on its source loads (half of its samples
// on one load).  One thread, back to back, 1920x1080 -> 640x640, ms, none / 16
// KiB ahead: float32 3-channel linear 2.2-2.7 / 1.07-1.18, cubic 3.0-3.3 / 1.44-1.57,
// 4-channel cubic 3.5-3.6 / 1.64-1.65; uint16 3-channel linear 1.1-1.6 / 0.89-0.91,
// 4-channel 1.7-1.9 / 0.78-0.81; float64 3-channel 3.5-5.3 / 2.5-2.6; uint8 4-channel
// cubic 0.75-0.84 / 0.69-0.71 (4 and 8 KiB ahead: less on float32).  One-channel rows
// gained nothing and lost 3-5 % (uint8, uint16, float32), so they do not prefetch.  The
// address is computed as an integer: it may lie past the image (a prefetch never faults).
constexpr uintptr_t kRowPrefetchBytes = 16384;
// The float passes (16-bit, float32 and float64 images) prefetch only images of
// kPrefetchImageBytes or more: smaller ones stay in L3 between calls, where the
// prefetches only cost.  The float32 3-channel linear row pass over 1920-pixel rows
// alone, one thread, back to back, us, none / 16 KiB ahead: 3.7 MB 81 / 92, 8.3 MB
// 202 / 252, 12.4 MB 356-365 / 379-388, 13.1 MB 411 / 408, 13.8 MB 623 / 428, 16.6 MB
// 557-731 / 461-516 (the knee is the VM's share of its 32 MB L3).  Whole calls, 2
// threads, none / ahead interleaved in one process, medians of 9: float32 640x480x3 ->
// 224x224 linear 0.88 (0.57 in the cv.resize bench, one build after the other), cubic
// 0.99, 720x1280x3 -> 320x320 linear 0.80, 640x480x3 -> 1280x960 linear 0.90; uint16
// 1920x1080x3 (11.9 MiB) 0.97-1.04.  The uint8 passes keep prefetching: 1920x1080x3 and
// x4 (5.9 and 7.9 MiB) ran 1.01-1.08 without.
constexpr int64_t kPrefetchImageBytes = int64_t(12) << 20;
// float32 3-channel 2x2 cells take the aligned 8-cell steps (area2x2_f32_avx512's
// Resident) on images below this size, not kPrefetchImageBytes: 2 threads, back to back,
// A/B in one process, 61 calls, 1024x1024 (12 MiB) 0.90-0.94 and 1200x1200 (17 MB)
// 0.87-0.91, after a pause 0.84 / 1.02, one thread 0.99-1.00.  1400x1400 (23.5 MB) and
// 1920x1080 (25 MB) keep the 5-cell steps, which the 8-cell ones lost to there.
constexpr int64_t kResident2x2Bytes = int64_t(20) << 20;

// The bytes from an image's first row to its last (h rows rs elements apart), against
// which kPrefetchImageBytes and kResident2x2Bytes are set.
template <typename T>
inline int64_t image_bytes(int64_t h, int64_t rs) {
  return h * rs * static_cast<int64_t>(sizeof(T));
}

// Prefetches each cache line once, kRowPrefetchBytes ahead of the reads it is shown (a
// pass consumes 36-144 bytes of a float32 3-channel row per vector step when it
// downscales 3x: one prefetch per step left lines out, and the 512-bit pass ran slower
// than the 256-bit one until this); nothing where `on` is false (next starts past every
// address).  Into L2 (PREFETCHT1): on the Intel Xeon VM, 1920x1080 -> 640x640 linear, 2
// threads, modules alternating in one process, back to back / after a pause: float32
// 3-channel 0.95 / 0.93-0.94, 4-channel 0.97 / 0.96, float64 3-channel 0.92 / 0.94,
// uint16 and uint8 0.97-1.03 / 0.95-1.0 (docs/performance.md, twenty-fourth run).
struct LinePrefetch {
  uintptr_t next;
  explicit LinePrefetch(bool on) : next(on ? 0 : ~uintptr_t(0)) {}
  RS_INLINE void operator()(const void* p) {
    const uintptr_t want = reinterpret_cast<uintptr_t>(p) + kRowPrefetchBytes;
    if (next == 0) next = want & ~uintptr_t(63);
    for (; next <= want; next += 64) __builtin_prefetch(reinterpret_cast<const void*>(next), 0, 2);
  }
};
// The horizontal passes' prefetcher: one-channel rows compile to nothing (above).
template <int C>
struct RowPrefetch : LinePrefetch {
  explicit RowPrefetch(bool on = true) : LinePrefetch(C > 1 && on) {}
  RS_INLINE void operator()(const void* p) {
    if constexpr (C > 1) LinePrefetch::operator()(p);
  }
};
// The prefetchers of R rows, for steps that test `value` at compile time (std::false_type
// where the image is not prefetched): the test of `prefetch` in every step of the two-row
// steps cost 10 % of their time.
template <int C, int R>
struct RowFetch : std::true_type {
  RowPrefetch<C> pf[R];
  RS_INLINE void operator()(int r, const void* p) { pf[r](p); }
};

// cvRound of a float in int32 range: round half to even (cvtss2si in the default
// rounding mode, as OpenCV's cvRound; nearbyint is a libm call below SSE4.1).
inline int64_t round_even(float v) {
#if defined(__SSE2__)
  return _mm_cvtss_si32(_mm_set_ss(v));
#else
  return static_cast<int64_t>(std::nearbyint(v));
#endif
}
template <typename T>
inline T saturate_float(float v) {
  if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(v);
  } else {
    constexpr float lo = static_cast<float>(std::numeric_limits<T>::min());
    constexpr float hi = static_cast<float>(std::numeric_limits<T>::max());
    if (!(v > lo)) return std::numeric_limits<T>::min();  // (NaN cannot come from ints)
    if (!(v < hi)) return std::numeric_limits<T>::max();
    return static_cast<T>(round_even(v));
  }
}
// saturate_cast<T>(WT), WT float (double for double images)
template <typename T, typename WT>
inline T store_wt(WT v) {
  if constexpr (std::is_floating_point<T>::value) return static_cast<T>(v);
  else return saturate_float<T>(static_cast<float>(v));
}
template <typename T>
inline T saturate_int(int64_t v) {
  constexpr int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return static_cast<T>(v < lo ? lo : (v > hi ? hi : v));
}

// ------------------------------------------------------------------ coordinates
// hal::resize's source index and fraction of output d: (float)((d + 0.5) * scale - 0.5)
// split into floor and fraction, or with area_mode (INTER_AREA upscaling)
// sx = floor(d * scale), fx = (float)((d + 1) - (sx + 1) * inv_scale), wrapped into
// [0, 1).  Unclamped.
inline void gen_coord(int64_t d, double scale, double inv_scale, bool area_mode, int64_t& sx,
                      float& fx) {
  if (!area_mode) {
    const float f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
    sx = floor_i64(f);
    fx = f - static_cast<float>(sx);
  } else {
    sx = floor_i64(static_cast<double>(d) * scale);
    const float f = static_cast<float>(static_cast<double>(d + 1) -
                                       static_cast<double>(sx + 1) * inv_scale);
    fx = f <= 0.f ? 0.f : f - static_cast<float>(floor_i64(f));
  }
}

// interpolateCubic (A = -0.75), float32, in OpenCV's evaluation order.
inline void cubic_coeffs_cv(float x, float c[4]) {
  const float A = -0.75f;
  c[0] = ((A * (x + 1.f) - 5.f * A) * (x + 1.f) + 8.f * A) * (x + 1.f) - 4.f * A;
  c[1] = ((A + 2.f) * x - (A + 3.f)) * x * x + 1.f;
  c[2] = ((A + 2.f) * (1.f - x) - (A + 3.f)) * (1.f - x) * (1.f - x) + 1.f;
  c[3] = 1.f - c[0] - c[1] - c[2];
}

// saturate_cast<short>(c * INTER_RESIZE_COEF_SCALE)
inline int16_t q11(float c) { return saturate_float<int16_t>(c * 2048.f); }

// The taps of output d along one axis (hal::resize's tables): source indices (clamped:
// the horizontal pass clamps the taps, the vertical pass clips the rows) and float32
// coefficients.  x_rule: the horizontal rule (a linear tap left of the image or at its
// last sample becomes (1, 0) at the edge); otherwise the vertical rule (coefficients of
// the unclamped fraction, rows clipped).  Returns the tap count (2 or 4).
inline int gen_taps(int64_t d, int64_t n_in, double scale, double inv_scale, int kind,
                    bool x_rule, int64_t idx[4], float c[4]) {
  int64_t sx;
  float fx;
  gen_coord(d, scale, inv_scale, kind == kTabAreaLinear, sx, fx);
  if (kind == kTabCubic) {
    cubic_coeffs_cv(fx, c);
    for (int k = 0; k < 4; ++k) idx[k] = clamp_idx(sx - 1 + k, n_in);
    return 4;
  }
  if (x_rule) {
    if (sx < 0) fx = 0.f, sx = 0;
    if (sx >= n_in - 1) fx = 0.f, sx = n_in - 1;
  }
  c[0] = 1.f - fx;
  c[1] = fx;
  idx[0] = clamp_idx(sx, n_in);
  idx[1] = clamp_idx(sx + 1, n_in);
  return 2;
}

// Is output d of a cubic axis inside OpenCV's [xmin, xmax) (all four taps in the image
// without clamping)?  Its horizontal sum then has no leading 0 + (HResizeCubic).
inline bool gen_taps_interior(int64_t d, int64_t n_in, double scale, double inv_scale) {
  int64_t sx;
  float fx;
  gen_coord(d, scale, inv_scale, false, sx, fx);
  return sx >= 1 && sx + 2 < n_in;
}

// ------------------------------------------------------------------ nearest tables
// INTER_NEAREST: min(floor(x * ifx), n_in - 1) with ifx = 1 / inv_scale (double).
// INTER_NEAREST_EXACT: scale = n_in / n_out, f = scale * 0.5, then min(floor(f),
// n_in - 1) and f += scale per output (OpenCV 5's resizeNN_bitexact_tab, sequential).
inline void nn_table(int64_t n_in, int64_t n_out, double ifx, bool exact, int64_t* idx) {
  if (exact) {
    const double scale = static_cast<double>(n_in) / static_cast<double>(n_out);
    double f = scale * 0.5;
    for (int64_t i = 0; i < n_out; ++i) {
      idx[i] = clamp_idx(floor_i64(f), n_in);
      f += scale;
    }
    return;
  }
  for (int64_t i = 0; i < n_out; ++i)
    idx[i] = clamp_idx(floor_i64(static_cast<double>(i) * ifx), n_in);
}

// ------------------------------------------------------------------ area tables
// One row of an INTER_AREA table (computeResizeAreaTab's cell of output d) in the resize
// family's layout (first, count, weights[K]): the partial first and last source samples
// weighted by their covered fraction / cell width (threshold 1e-3), the full ones by
// 1 / cell width, alpha rounded to float32 as OpenCV stores it; K >= the widest cell.
template <typename W>
inline void area_row(int64_t d, int64_t n_in, double scale, int64_t K, int64_t* first,
                     int64_t* count, W* w) {
  W* row = w + d * K;
  for (int64_t k = 0; k < K; ++k) row[k] = W(0);
  const double fsx1 = static_cast<double>(d) * scale;
  const double fsx2 = fsx1 + scale;
  const double cell = std::min(scale, static_cast<double>(n_in) - fsx1);
  int64_t sx1 = floor_i64(std::ceil(fsx1)), sx2 = floor_i64(fsx2);
  sx2 = std::min(sx2, n_in - 1);
  sx1 = std::min(sx1, sx2);
  // the taps are consecutive source indices; at most K of them are stored
  int64_t f0 = -1, cnt = 0;
  auto push = [&](int64_t s, float a) {
    if (cnt == 0) f0 = s;
    if (cnt < K && s == f0 + cnt) {
      row[cnt] = static_cast<W>(a);
      ++cnt;
    }
  };
  if (static_cast<double>(sx1) - fsx1 > 1e-3)
    push(sx1 - 1, static_cast<float>((static_cast<double>(sx1) - fsx1) / cell));
  for (int64_t s = sx1; s < sx2 && cnt < K; ++s) push(s, static_cast<float>(1.0 / cell));
  if (fsx2 - static_cast<double>(sx2) > 1e-3)
    push(sx2, static_cast<float>(std::min(std::min(fsx2 - static_cast<double>(sx2), 1.0), cell) /
                                 cell));
  if (cnt == 0 || f0 < 0 || f0 + cnt > n_in) {  // (only a degenerate scale)
    for (int64_t k = 0; k < K; ++k) row[k] = W(0);
    f0 = 0;
    cnt = 0;
  }
  first[d] = f0;
  count[d] = cnt;
}

// ------------------------------------------------------------------ images
template <typename T>
struct Img {
  const T* p;
  int64_t H, W, C, rs;  // rs: row stride in elements (pixels are C contiguous elements)
  const T* row(int64_t y) const { return p + y * rs; }
};

// Work split shared by the passes: stripes of output rows, enough for balance, at least
// 16 rows each (a new stripe recomputes up to K - 1 ring rows).
inline int64_t stripe_rows(int64_t rows, int nt) {
  int64_t s = std::max<int64_t>(16, (rows + 4 * nt - 1) / (4 * nt));
  return std::min<int64_t>(s, std::max<int64_t>(rows, 1));
}

constexpr int64_t kSlack = 16;  // values a SIMD store may write past a ring row
constexpr size_t kSoloRingBytes = 256 << 10;  // ring_apply keeps one-thread rings this small

// ------------------------------------------------------------------ one-hot columns
// Columns whose taps are one-hot (one weight exactly `one`, the others 0: every column of
// an odd integer downscale, linear or cubic, e.g. 1920 -> 640) make the horizontal sum of
// an integer image exact (uint8: S * 2048 in int32; 16-bit: (float)S plus zeros, whatever
// OpenCV's order), so the horizontal pass is a widening gather.  Returns the hot tap's
// element offset per column, or nothing when a column has a fractional weight.
template <typename A>
std::vector<int64_t> one_hot_taps(const int64_t* xo, const A* xa, int K, int64_t dw, A one) {
  std::vector<int64_t> hot(static_cast<size_t>(dw));
  for (int64_t d = 0; d < dw; ++d) {
    int64_t at = -1;
    for (int k = 0; k < K; ++k) {
      const A a = xa[d * K + k];
      if (a == one && at < 0) {
        at = xo[d * K + k];
      } else if (a != A(0)) {
        return {};
      }
    }
    if (at < 0) return {};
    hot[d] = at;
  }
  return hot;
}

// The 2 or 4 bytes at p (any alignment).
inline uint32_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

#if defined(__SSE2__)
// The 4 bytes at p in the low 32 bits of a vector; load4b_x2: those at p, then at q.
RS_INLINE __m128i load4b(const uint8_t* p) { return _mm_cvtsi32_si128(int(load_u32(p))); }
RS_INLINE __m128i load4b_x2(const uint8_t* p, const uint8_t* q) {
  return _mm_unpacklo_epi32(load4b(p), load4b(q));
}

// 4 consecutive elements as float32 (uint16 / int16 widened exactly).
template <typename T>
RS_INLINE __m128 load4f(const T* p) {
  if constexpr (std::is_same<T, float>::value) {
    return _mm_loadu_ps(p);
  } else {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same<T, uint16_t>::value)
      return _mm_cvtepi32_ps(_mm_unpacklo_epi16(v, _mm_setzero_si128()));
    else
      return _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16));
  }
}

// The 4 elements at p as their horizontal sums, stored at h (uint8: the value times the
// weight 2^Bits, 11 for INTER_LINEAR / INTER_CUBIC and 8 for INTER_LINEAR_EXACT).
template <int Bits>
inline void hot_sum4(const uint8_t* p, int32_t* h) {
  const __m128i z = _mm_setzero_si128();
  const __m128i x = _mm_unpacklo_epi16(_mm_unpacklo_epi8(load4b(p), z), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_slli_epi32(x, Bits));
}
template <int Bits, typename T>
inline void hot_sum4(const T* p, float* h) { _mm_storeu_ps(h, load4f<T>(p)); }
// uint8 INTER_LINEAR's int16 ring (cv_resize_fixed): S << 7, what the vertical pass makes
// of the int32 sum S << 11 (shift by 4, pack)
template <int Bits>
inline void hot_sum4(const uint8_t* p, int16_t* h) {
  const __m128i x = _mm_unpacklo_epi8(load4b(p), _mm_setzero_si128());
  _mm_storel_epi64(reinterpret_cast<__m128i*>(h), _mm_slli_epi16(x, Bits));
}
#endif

// A source value as the horizontal sum of a one-hot column.
template <int Bits>
inline int32_t hot_sum(uint8_t v) { return int32_t(v) << Bits; }
template <int Bits, typename T>
inline float hot_sum(T v) { return static_cast<float>(v); }

#if defined(__AVX2__)
// Two pixels of C = 3 or 4 channels at p and q as their horizontal sums, stored at h.
template <int C, int Bits>
inline void hot_sum4x2(const uint8_t* p, const uint8_t* q, int32_t* h) {
  const __m256i x = _mm256_slli_epi32(_mm256_cvtepu8_epi32(load4b_x2(p, q)), Bits);
  if constexpr (C == 4) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h), x);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm256_castsi256_si128(x));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + C), _mm256_extracti128_si256(x, 1));
  }
}
template <int C, int Bits>
inline void hot_sum4x2(const uint8_t* p, const uint8_t* q, int16_t* h) {
  const __m128i x = _mm_slli_epi16(_mm_cvtepu8_epi16(load4b_x2(p, q)), Bits);
  if constexpr (C == 4) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h), x);
  } else {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(h), x);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(h + C), _mm_unpackhi_epi64(x, x));
  }
}
template <int C, int Bits, typename T>
inline void hot_sum4x2(const T* p, const T* q, float* h) {
  const __m128i v = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                                       _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)));
  const __m256 x = _mm256_cvtepi32_ps(std::is_same_v<T, uint16_t> ? _mm256_cvtepu16_epi32(v)
                                                                   : _mm256_cvtepi16_epi32(v));
  if constexpr (C == 4) {
    _mm256_storeu_ps(h, x);
  } else {
    _mm_storeu_ps(h, _mm256_castps256_ps128(x));
    _mm_storeu_ps(h + C, _mm256_extractf128_ps(x, 1));
  }
}
#endif

// The horizontal pass of one-hot columns, 3 or 4 channels: H[d * C + c] = the sum of
// S[hot[d] + c], 4 elements per pixel at once where they lie in the row (a fourth is
// overwritten by the next pixel or lands in the ring's slack).  uint16 1920x1080x3 ->
// 640x640 linear, 2 threads, ms: 0.26-0.32 with the two-tap steps, 0.18 with this; tried
// and slower: prefetching as the other multi-channel passes do (0.29-0.35), 16-bit ring
// rows copied 8 bytes a pixel and widened in the vertical pass (0.27).  One channel keeps
// the permute steps (5x faster than a scalar gather: uint16 1920x1080 -> 640x640 linear
// 0.077 ms against 0.37), two channels the pair steps (0.15 against 0.16-0.18).
template <int C, int Bits, typename T, typename HT>
inline void hot_hrow(const T* S, const int64_t* hot, int64_t Lin, int64_t dw, HT* H) {
  int64_t d = 0;
#if defined(__AVX2__)
  for (; d + 2 <= dw && std::max(hot[d], hot[d + 1]) + 4 <= Lin; d += 2)
    hot_sum4x2<C, Bits>(S + hot[d], S + hot[d + 1], H + d * C);
#endif
#if defined(__SSE2__)
  for (; d < dw && hot[d] + 4 <= Lin; ++d) hot_sum4<Bits>(S + hot[d], H + d * C);
#endif
  for (; d < dw; ++d)
    for (int64_t c = 0; c < C; ++c) H[d * C + c] = hot_sum<Bits>(S[hot[d] + c]);
}

// One-hot columns of one channel whose taps step by a constant s elements (an odd
// integer downscale: 1920 -> 640 is s = 3), kHotStrideMax at most, 16-bit: the 4 outputs
// of a 128-bit lane take elements 0, s, 2s, 3s from two 16-byte loads, at their first tap
// and ending at the last (each element from the first that holds it), each load
// widened into int32 lanes by one in-lane vpshufb whose zero bytes clear the lanes
// another load fills, then OR'd: two lanes' 4 outputs per 256-bit vector.  The step s is a
// template argument (hot_stride_steps), so the shuffles stay in registers.  Cross-lane
// permutes are what the first version of these steps (one vpermd per 8 elements) waited
// on: Zen 1 runs a ymm vpermd in 3 uops, one per 4 cycles.  uint16 1920x1080 -> 640x640
// linear, Zen 1 VM, one thread, the horizontal pass alone: 0.54 -> 0.18 ms; the whole
// call 0.64 -> 0.30 against cv2's 0.51.
constexpr int64_t kHotStrideMax = 7;

// hot[d] = hot[0] + s d for every column, s = 3, 5 or 7 (one-hot columns have odd steps:
// (d + 0.5) s - 0.5 is an integer for every d), at least 16 columns, in a build with
// hot_stride_row (AVX2: the x86-64-v3 and -v4 builds; on Zen 4 the -v4 build's permute
// steps, which it kept until measured there, took 1.5-2.2x as long, one thread, whole call,
// 1920x1080 -> 640x640 linear 0.174 -> 0.113 ms, cubic 0.300 -> 0.136, -> 384x720 (s = 5)
// 0.164 -> 0.082; s = 7 tied).
inline bool hot_stride_ok(const std::vector<int64_t>& hot) {
#if !defined(__AVX2__)
  return false;
#endif
  if (hot.size() < 16) return false;
  const int64_t s = hot[1] - hot[0];
  if (s < 3 || s > kHotStrideMax || s % 2 == 0) return false;
  for (size_t d = 1; d < hot.size(); ++d)
    if (hot[d] - hot[d - 1] != s) return false;
  return true;
}

#if defined(__AVX2__)
template <int S, typename T>
inline void hot_stride_steps(const T* S0, int64_t n, float* H) {  // n groups of 8 columns
  static_assert(S % 2 == 1 && 3 <= S && S <= kHotStrideMax);
  constexpr int at[2] = {0, 3 * S - 7};  // the loads' first elements: 0 .. 7, 3S - 7 .. 3S
  // shuffle j puts element k S into int32 lane k (uint16: the low half; int16: the high
  // half, then an arithmetic shift) where load j is the first to hold it
  __m256i shuf[2];
  for (int j = 0; j < 2; ++j) {
    alignas(32) int8_t b[32];
    for (int k = 0; k < 4; ++k) {
      const int e = k * S - at[j];
      const bool mine = j == 0 ? k * S <= 7 : k * S > 7;
      const int lo = std::is_same_v<T, uint16_t> ? 0 : 2;
      for (int i = 0; i < 4; ++i) {
        const bool byte = mine && (i == lo || i == lo + 1);
        b[4 * k + i] = b[16 + 4 * k + i] = static_cast<int8_t>(byte ? 2 * e + i - lo : -128);
      }
    }
    shuf[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(b));
  }
  auto two = [](const T* q) {  // lane 0: the 8 elements at q; lane 1: those at q + 4S
    return _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 4 * S)), 1);
  };
  for (int64_t g = 0; g < n; ++g) {
    const T* p = S0 + 8 * S * g;  // lane 0: columns 8g .. 8g + 3; lane 1: 8g + 4 .. 8g + 7
    __m256i acc = _mm256_or_si256(_mm256_shuffle_epi8(two(p), shuf[0]),
                                  _mm256_shuffle_epi8(two(p + at[1]), shuf[1]));
    if constexpr (std::is_same_v<T, int16_t>) acc = _mm256_srai_epi32(acc, 16);
    _mm256_storeu_ps(H + 8 * g, _mm256_cvtepi32_ps(acc));
  }
}

template <typename T>
inline void hot_stride_row(const T* S, const int64_t* hot, int64_t Lin, int64_t dw, float* H) {
  const int64_t s = hot[1] - hot[0];
  // groups of 8 columns whose 8 s elements lie in the row: hot[0] + s (d + 8) <= Lin
  const int64_t n = std::min(dw, (Lin - hot[0]) / s) / 8;
  using Steps = void (*)(const T*, int64_t, float*);
  const Steps steps = s == 3 ? hot_stride_steps<3, T>
                      : s == 5 ? hot_stride_steps<5, T> : hot_stride_steps<7, T>;
  steps(S + hot[0], n, H);
  for (int64_t d = 8 * n; d < dw; ++d) H[d] = hot_sum<11>(S[hot[d]]);
}
#endif

// One-channel float32 rows whose interior columns step by a constant s source elements
// with the same K weights in every column: an integer downscale (1920 -> 640 is s = 3
// with weights (1, 0) linear, (0, 1, 0, 0) cubic; s = 2 or 6 with (0.5, 0.5) linear).  The
// x86-64-v3 build takes 4 outputs from the 4-element loads that cover their taps, tap k
// of the 4 put in place by two blends and one shufps (in-lane: Zen 1 runs a cross-lane
// permute in 3 to 8 uops), then the window pass's sequence ((t0 c0 + t1 c1) + t2 c2) +
// t3 c3 with the columns' own weights, so a zero weight's tap still turns an infinity into
// NaN and keeps its zero's sign, as in OpenCV.  The window pass loads a window and an
// offset per column and transposes them: 0.68 ns per output against 0.33 here, one row
// of 1920 -> 640 in L2 on the Zen 1 VM (docs/performance.md, forty-third session).  The
// x86-64-v4 build takes them too, for s <= 5, over its permute and wide steps: Zen 4, one
// thread, whole call, 1920x1080 -> w x 720 linear, ms: s = 1 0.95 -> 0.51, s = 2 0.53 ->
// 0.40, s = 3 (-> 640x640) 0.42 -> 0.29, s = 5 0.23 -> 0.17; s = 6 lost (0.16 -> 0.17,
// cubic 0.205 -> 0.219), s = 7 tied.
// s % 4 != 0: tap k of outputs 0 and 1 (2 and 3) must sit in different lanes of their loads.
#if defined(__AVX512F__) && defined(__AVX512BW__)
constexpr int64_t kConstStrideMax = 5;
#else
constexpr int64_t kConstStrideMax = 7;
#endif

constexpr int64_t const_stride_loads(int64_t s, int K) { return (3 * s + K - 1) / 4 + 1; }

#if defined(__AVX2__)
// tap E of outputs 0-3 (elements E, S + E, 2S + E, 3S + E of the loads L)
template <int S, int E>
RS_INLINE __m128 const_stride_tap(const __m128* L) {
  constexpr int p0 = E % 4, p1 = (S + E) % 4, p2 = (2 * S + E) % 4, p3 = (3 * S + E) % 4;
  static_assert(p0 != p1 && p2 != p3, "s % 4 == 0");
  const __m128 x = _mm_blend_ps(L[E / 4], L[(S + E) / 4], 1 << p1);
  const __m128 y = _mm_blend_ps(L[(2 * S + E) / 4], L[(3 * S + E) / 4], 1 << p3);
  return _mm_shuffle_ps(x, y, p0 | p1 << 2 | p2 << 4 | p3 << 6);
}

template <int S, int K>
inline void const_stride_steps(const float* B, int64_t n, const float* c, float* H) {
  constexpr int NL = static_cast<int>(const_stride_loads(S, K));
  __m128 w[K];
  for (int k = 0; k < K; ++k) w[k] = _mm_set1_ps(c[k]);
  for (int64_t g = 0; g < n; ++g) {  // n groups of 4 outputs, the first at B
    const float* p = B + 4 * S * g;
    __m128 L[NL];
    for (int i = 0; i < NL; ++i) L[i] = _mm_loadu_ps(p + 4 * i);
    __m128 acc = _mm_add_ps(_mm_mul_ps(const_stride_tap<S, 0>(L), w[0]),
                            _mm_mul_ps(const_stride_tap<S, 1>(L), w[1]));
    if constexpr (K == 4) {
      acc = _mm_add_ps(acc, _mm_mul_ps(const_stride_tap<S, 2>(L), w[2]));
      acc = _mm_add_ps(acc, _mm_mul_ps(const_stride_tap<S, 3>(L), w[3]));
    }
    _mm_storeu_ps(H + 4 * g, acc);
  }
}

using ConstStride = void (*)(const float*, int64_t, const float*, float*);

template <int K>
ConstStride const_stride_fn(int64_t s) {
  switch (s) {
    case 1: return const_stride_steps<1, K>;
    case 2: return const_stride_steps<2, K>;
    case 3: return const_stride_steps<3, K>;
    case 5: return const_stride_steps<5, K>;
    default: break;
  }
  if constexpr (kConstStrideMax == 7) {
    if (s == 6) return const_stride_steps<6, K>;
    if (s == 7) return const_stride_steps<7, K>;
  }
  return nullptr;
}
#endif

template <int Bits = 11, typename T, typename HT>
inline void hot_pass(const T* S, const int64_t* hot, int64_t C, int64_t Lin, int64_t dw, HT* H) {
  if (C == 3) hot_hrow<3, Bits>(S, hot, Lin, dw, H); else hot_hrow<4, Bits>(S, hot, Lin, dw, H);
}

// ------------------------------------------------------------------ fixed-point uint8
// Tables of the uint8 separable passes (cv_resize_fixed, and cv_resize_exact on uint8):
// per output pixel K element offsets (clamped index * C) and int16 coefficients; per
// output row K clipped source rows and coefficients.  For the vector horizontal pass:
// the first tap's offset per pixel and the coefficient pairs packed for pmaddwd
// ((a0 & 0xffff) | a1 << 16), four copies per pixel (taps 0-1 in wa4, taps 2-3 in wb4).
struct FixedTables {
  int K = 2;
  std::vector<int64_t> xo, yr;
  std::vector<int16_t> xa, yb;
  std::vector<int64_t> o0;
  std::vector<int32_t> wa4, wb4;
  // cubic, C = 2..4, for the AVX2 byte-shuffle pass: per pixel the pmaddwd weights of its
  // two shuffled halves (C = 3: (a01, a01, a01, a23) and (a23, a23, 0, 0); C = 2:
  // (a01, a01, a23, a23); C = 4: wa4 and wb4)
  std::vector<int32_t> ws1, ws2;
  // C = 1: the pairs once per pixel (w1a: taps 0-1, w1b: taps 2-3) and, for the AVX2
  // pass, per group of 4 outputs from simd_lo: pshufb masks picking its taps from the 16
  // bytes at its first tap (sh01: taps 0-1, sh23: 2-3; 4 bytes per output) where they all
  // lie there (gok), else int32 gather indices (o32; empty for rows of 2^31 bytes or more)
  std::vector<int32_t> w1a, w1b, o32;
  std::vector<uint8_t> sh01, sh23, gok;
  std::vector<char> ok;  // pack_pairs' scratch
  int64_t simd_lo = 0, simd_hi = 0;  // pixels [simd_lo, simd_hi) take the vector loop
};

// The calling thread's FixedTables, reused call after call: every table is rebuilt with
// assign() (the capacity stays), so a loop of small resizes allocates nothing; tiny
// cv.resize 8x8x3 -> 5x4 (fastops/_bench/tiny.py) spent ~0.3 of its 1.2 us kernel in ten
// mallocs and frees.  Tables of outputs over kKeepTables rows + columns are let go after
// the call (release_tables).
constexpr int64_t kKeepTables = 4096;

// (static: each build its own, see thread_plan)
static FixedTables& thread_tables() {
  static thread_local FixedTables t;
  return t;
}

inline void release_tables(FixedTables& t, int64_t dw, int64_t dh) {
  if (dw + dh > kKeepTables) t = FixedTables();
}

inline int32_t pack_pair(int16_t a, int16_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(a)) |
                              (static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16));
}

// o0, wa4 / wb4 and the vector range from xo / xa.  The vector passes read 2 (C = 1) or 8
// bytes at the first tap, cubic 4 (C = 1) or 8 bytes at taps 0 and 2: a pixel qualifies
// when its taps are consecutive (a linear tap of weight 0 may be anything) and the loads
// stay inside the row; the first run of qualifying pixels takes the vector loop.
inline void pack_pairs(FixedTables& t, int64_t C, int64_t Lin, int64_t dw) {
  const int K = t.K;
  t.o0.assign(static_cast<size_t>(dw), 0);
  t.wa4.assign(static_cast<size_t>(4 * dw), 0);
  t.wb4.assign(static_cast<size_t>(K == 4 ? 4 * dw : 0), 0);
  // (cubic C = 3, 4: the AVX2 pass loads 16 bytes per pixel; C = 1: 4-byte gathers)
  const int64_t reach = K == 2 ? (C == 1 ? 4 : 8)
                               : (C == 1 ? 4 : (C == 2 ? 12 : std::max<int64_t>(2 * C + 8, 16)));
  std::vector<char>& ok = t.ok;
  ok.assign(static_cast<size_t>(dw), 0);
  const bool shuf = K == 4 && C >= 2 && C <= 4;
  t.ws1.assign(static_cast<size_t>(shuf ? 4 * dw : 0), 0);
  t.ws2.assign(static_cast<size_t>(shuf ? 4 * dw : 0), 0);
  t.w1a.assign(static_cast<size_t>(C == 1 ? dw : 0), 0);
  t.w1b.assign(static_cast<size_t>(C == 1 && K == 4 ? dw : 0), 0);
  t.o32.assign(static_cast<size_t>(C == 1 && Lin <= INT32_MAX ? dw : 0), 0);
  for (int64_t d = 0; d < dw; ++d) {
    const int64_t* o = t.xo.data() + d * K;
    const int16_t* a = t.xa.data() + d * K;
    t.o0[d] = o[0];
    if (C == 1) {
      t.w1a[d] = pack_pair(a[0], a[1]);
      if (K == 4) t.w1b[d] = pack_pair(a[2], a[3]);
      if (!t.o32.empty()) t.o32[d] = static_cast<int32_t>(o[0]);
    }
    for (int i = 0; i < 4; ++i) {
      t.wa4[4 * d + i] = pack_pair(a[0], a[1]);
      if (K == 4) t.wb4[4 * d + i] = pack_pair(a[2], a[3]);
    }
    if (shuf) {
      const int32_t p01 = pack_pair(a[0], a[1]), p23 = pack_pair(a[2], a[3]);
      const int32_t w1[3][4] = {{p01, p01, p23, p23}, {p01, p01, p01, p23}, {p01, p01, p01, p01}};
      const int32_t w2[3][4] = {{0, 0, 0, 0}, {p23, p23, 0, 0}, {p23, p23, p23, p23}};
      for (int i = 0; i < 4; ++i) {
        t.ws1[4 * d + i] = w1[C - 2][i];
        t.ws2[4 * d + i] = w2[C - 2][i];
      }
    }
    bool consecutive = true;
    for (int k = 1; k < K; ++k)
      if (o[k] != o[0] + k * C && !(K == 2 && a[1] == 0)) consecutive = false;
    ok[d] = consecutive && o[0] + reach <= Lin;
  }
  t.simd_lo = 0;
  while (t.simd_lo < dw && !ok[t.simd_lo]) ++t.simd_lo;
  t.simd_hi = t.simd_lo;
  while (t.simd_hi < dw && ok[t.simd_hi]) ++t.simd_hi;
  if (C == 1) {
    const int64_t n = t.simd_hi - t.simd_lo, groups = (n + 3) / 4;
    t.sh01.assign(static_cast<size_t>(4 * n), 0x80);
    t.sh23.assign(static_cast<size_t>(K == 4 ? 4 * n : 0), 0x80);
    t.gok.assign(static_cast<size_t>(groups), 0);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t x0 = t.simd_lo + 4 * g, base = t.o0[x0];
      bool fits = x0 + 4 <= t.simd_hi && base + 16 <= Lin;
      for (int64_t i = 0; i < 4 && fits; ++i) {
        const int64_t r = t.o0[x0 + i] - base;  // taps r .. r + K - 1
        if (r < 0 || r + K > 16) {
          fits = false;
          break;
        }
        uint8_t* m = t.sh01.data() + 4 * (4 * g + i);
        m[0] = static_cast<uint8_t>(r), m[2] = static_cast<uint8_t>(r + 1);
        if (K == 4) {
          uint8_t* m2 = t.sh23.data() + 4 * (4 * g + i);
          m2[0] = static_cast<uint8_t>(r + 2), m2[2] = static_cast<uint8_t>(r + 3);
        }
      }
      t.gok[g] = fits;
    }
  }
}

inline void fixed_tables(FixedTables& t, int64_t w, int64_t h, int64_t C, int64_t dw,
                         int64_t dh, double scale_x, double inv_x, double scale_y,
                         double inv_y, int interp) {
  const int kind = interp == kCubic ? kTabCubic : (interp == kArea ? kTabAreaLinear : kTabLinear);
  const int K = kind == kTabCubic ? 4 : 2;
  t.K = K;
  t.xo.assign(static_cast<size_t>(dw * K), 0);
  t.xa.assign(static_cast<size_t>(dw * K), 0);
  t.yr.assign(static_cast<size_t>(dh * K), 0);
  t.yb.assign(static_cast<size_t>(dh * K), 0);
  int64_t idx[4];
  float c[4];
  for (int64_t d = 0; d < dw; ++d) {
    gen_taps(d, w, scale_x, inv_x, kind, true, idx, c);
    for (int k = 0; k < K; ++k) {
      t.xa[d * K + k] = q11(c[k]);
      t.xo[d * K + k] = idx[k] * C;
    }
    // past the last sample OpenCV computes S[sx] * 2048 (coefficients (2048, 0))
    if (K == 2 && idx[1] == idx[0]) t.xa[d * K] = 2048, t.xa[d * K + 1] = 0;
  }
  pack_pairs(t, C, w * C, dw);
  for (int64_t d = 0; d < dh; ++d) {
    int64_t sy;
    float fy;
    gen_coord(d, scale_y, inv_y, kind == kTabAreaLinear, sy, fy);
    float cy[4];
    if (kind == kTabCubic) {
      cubic_coeffs_cv(fy, cy);
    } else {
      cy[0] = 1.f - fy;
      cy[1] = fy;
    }
    for (int k = 0; k < K; ++k) {
      t.yb[d * K + k] = q11(cy[k]);
      t.yr[d * K + k] = clamp_idx(sy - K / 2 + 1 + k, h);
    }
  }
}

// Horizontal pass, scalar: H[xo * C + c] = sum_k a[k] * S[o[k] + c] (exact in int32).
inline void fixed_hrow_scalar(const uint8_t* S, const FixedTables& t, int64_t C, int64_t x0,
                              int64_t x1, int32_t* H) {
  const int K = t.K;
  const int64_t* xo = t.xo.data();
  const int16_t* xa = t.xa.data();
  for (int64_t x = x0; x < x1; ++x) {
    const int64_t* o = xo + x * K;
    const int16_t* a = xa + x * K;
    for (int64_t c = 0; c < C; ++c) {
      int32_t acc = 0;
      for (int k = 0; k < K; ++k) acc += static_cast<int32_t>(a[k]) * S[o[k] + c];
      H[x * C + c] = acc;
    }
  }
}

#if defined(__SSE2__)
// Two taps of one pixel of C <= 4 channels with pmaddwd: 8 bytes at the first tap,
// widened to int16 and paired with the same bytes shifted by one pixel.
template <int C>
RS_INLINE __m128i pair_madd(const uint8_t* p, __m128i w) {
  const __m128i v = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                                      _mm_setzero_si128());
  return _mm_madd_epi16(_mm_unpacklo_epi16(v, _mm_srli_si128(v, 2 * C)), w);
}

// The vector horizontal pass over pixels [lo, hi): 4 int32 stored per pixel (the lanes
// past C are overwritten by the next pixel or land in the row's slack).
template <int C, int K>
inline void hpair_sse2(const uint8_t* S, const FixedTables& t, int64_t lo, int64_t hi,
                       int32_t* H) {
  const int64_t* o0 = t.o0.data();
  const int32_t* wa = t.wa4.data();
  const int32_t* wb = t.wb4.data();
  if constexpr (C == 1) {
    const __m128i z = _mm_setzero_si128();
    const int32_t* w1a = t.w1a.data();
    const int32_t* w1b = t.w1b.data();
    int64_t x = lo;
    for (; x + 4 <= hi; x += 4) {
      if constexpr (K == 2) {
        // lanes p0 | p1 << 8 -> int16 pairs (p0, p1)
        const __m128i v = _mm_set_epi32(
            static_cast<int>(load_u16(S + o0[x + 3])), static_cast<int>(load_u16(S + o0[x + 2])),
            static_cast<int>(load_u16(S + o0[x + 1])), static_cast<int>(load_u16(S + o0[x])));
        const __m128i pairs = _mm_or_si128(_mm_and_si128(v, _mm_set1_epi32(0xff)),
                                           _mm_slli_epi32(_mm_srli_epi32(v, 8), 16));
        const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w1a + x));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(H + x), _mm_madd_epi16(pairs, w));
      } else {
        const __m128i v = _mm_set_epi32(
            static_cast<int>(load_u32(S + o0[x + 3])), static_cast<int>(load_u32(S + o0[x + 2])),
            static_cast<int>(load_u32(S + o0[x + 1])), static_cast<int>(load_u32(S + o0[x])));
        const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w1a + x));
        const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w1b + x));
        const __m128i wlo = _mm_unpacklo_epi32(pa, pb), whi = _mm_unpackhi_epi32(pa, pb);
        const __m128i m0 = _mm_madd_epi16(_mm_unpacklo_epi8(v, z), wlo);  // x, x+1: 01 23
        const __m128i m1 = _mm_madd_epi16(_mm_unpackhi_epi8(v, z), whi);  // x+2, x+3
        const __m128 e = _mm_shuffle_ps(_mm_castsi128_ps(m0), _mm_castsi128_ps(m1),
                                        _MM_SHUFFLE(2, 0, 2, 0));
        const __m128 od = _mm_shuffle_ps(_mm_castsi128_ps(m0), _mm_castsi128_ps(m1),
                                         _MM_SHUFFLE(3, 1, 3, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(H + x),
                         _mm_add_epi32(_mm_castps_si128(e), _mm_castps_si128(od)));
      }
    }
    fixed_hrow_scalar(S, t, C, x, hi, H);
  } else {
    RowPrefetch<C> pf(true);
    for (int64_t x = lo; x < hi; ++x) {
      const uint8_t* p = S + o0[x];
      pf(p);
      __m128i r = pair_madd<C>(p, _mm_loadu_si128(reinterpret_cast<const __m128i*>(wa + 4 * x)));
      if constexpr (K == 4)
        r = _mm_add_epi32(r, pair_madd<C>(p + 2 * C, _mm_loadu_si128(
                                                         reinterpret_cast<const __m128i*>(wb + 4 * x))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(H + x * C), r);
    }
  }
}
#endif

#ifdef RS_AVX2
// AVX2: two pixels per iteration (one per 128-bit lane), C = 2..4.
template <int C>
RS_AVX2_FN __m256i pair2_madd(const uint8_t* p, const uint8_t* q, const int32_t* w) {
  const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
  const __m256i v = _mm256_cvtepu8_epi16(_mm_unpacklo_epi64(a, b));
  const __m256i pr = _mm256_unpacklo_epi16(v, _mm256_srli_si256(v, 2 * C));
  return _mm256_madd_epi16(pr, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
}

// Cubic taps of two pixels (C = 2..4) from one load each: pshufb builds the int16 pairs
// (tap0, tap1) and (tap2, tap3) of each channel, pmaddwd weighs them, and the two halves
// of every channel are added (palignr lines them up for C = 3).
template <int C>
__attribute__((target("avx2"))) int64_t hcubic_shuffle_avx2(const uint8_t* S,
                                                            const FixedTables& t, int64_t lo,
                                                            int64_t hi, int32_t* H) {
  const int64_t* o0 = t.o0.data();
  const int32_t* w1 = t.ws1.data();
  const int32_t* w2 = t.ws2.data();
  const int z = -1;
  __m256i m1, m2;
  if constexpr (C == 2) {  // bytes t_k c_j at 2k + j
    m1 = _mm256_setr_epi8(0, z, 2, z, 1, z, 3, z, 4, z, 6, z, 5, z, 7, z,
                          0, z, 2, z, 1, z, 3, z, 4, z, 6, z, 5, z, 7, z);
    m2 = m1;
  } else if constexpr (C == 3) {  // 3k + j
    m1 = _mm256_setr_epi8(0, z, 3, z, 1, z, 4, z, 2, z, 5, z, 6, z, 9, z,
                          0, z, 3, z, 1, z, 4, z, 2, z, 5, z, 6, z, 9, z);
    m2 = _mm256_setr_epi8(7, z, 10, z, 8, z, 11, z, z, z, z, z, z, z, z, z,
                          7, z, 10, z, 8, z, 11, z, z, z, z, z, z, z, z, z);
  } else {  // 4k + j
    m1 = _mm256_setr_epi8(0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z,
                          0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z);
    m2 = _mm256_setr_epi8(8, z, 12, z, 9, z, 13, z, 10, z, 14, z, 11, z, 15, z,
                          8, z, 12, z, 9, z, 13, z, 10, z, 14, z, 11, z, 15, z);
  }
  int64_t x = lo;
  RowPrefetch<C> pf(true);
  for (; x + 2 <= hi; x += 2) {
    pf(S + o0[x]);
    __m256i v;
    if constexpr (C == 2) {
      v = _mm256_set_m128i(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(S + o0[x + 1])),
                           _mm_loadl_epi64(reinterpret_cast<const __m128i*>(S + o0[x])));
    } else {
      v = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(S + o0[x + 1])),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(S + o0[x])));
    }
    const __m256i a = _mm256_madd_epi16(_mm256_shuffle_epi8(v, m1),
                                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + 4 * x)));
    __m256i r;
    if constexpr (C == 2) {
      r = _mm256_add_epi32(a, _mm256_srli_si256(a, 8));
    } else {
      const __m256i b = _mm256_madd_epi16(_mm256_shuffle_epi8(v, m2),
                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w2 + 4 * x)));
      r = C == 3 ? _mm256_add_epi32(a, _mm256_alignr_epi8(b, a, 12)) : _mm256_add_epi32(a, b);
    }
    if constexpr (C == 4) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(H + x * C), r);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(H + x * C), _mm256_castsi256_si128(r));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(H + (x + 1) * C), _mm256_extracti128_si256(r, 1));
    }
  }
  return x;
}

RS_AVX2_FN __m256i ld256(const void* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// C = 1 from lo = simd_lo: 8 outputs per iteration, int16 tap pairs weighed by pmaddwd
// with the packed coefficient pairs.  The taps of two groups of 4 outputs come from 16
// bytes at each group's first tap through its pshufb masks (one load and one shuffle per
// group); blocks whose taps spread wider (downscales beyond ~4x) gather 4 bytes per
// output (Zen 3: ~14 cycles per gather, 3x the shuffle path).
template <int K>
__attribute__((target("avx2"))) int64_t hshuffle1_avx2(const uint8_t* S, const FixedTables& t,
                                                       int64_t lo, int64_t hi, int32_t* H) {
  const int64_t* o0 = t.o0.data();
  const int32_t* o32 = t.o32.data();
  const int32_t* w1a = t.w1a.data();
  const int32_t* w1b = t.w1b.data();
  const uint8_t* sh01 = t.sh01.data();
  const uint8_t* sh23 = t.sh23.data();
  const uint8_t* gok = t.gok.data();
  const bool gather = !t.o32.empty();
  const int z = -1;
  const __m256i g01 = _mm256_setr_epi8(0, z, 1, z, 4, z, 5, z, 8, z, 9, z, 12, z, 13, z,
                                       0, z, 1, z, 4, z, 5, z, 8, z, 9, z, 12, z, 13, z);
  const __m256i g23 = _mm256_setr_epi8(2, z, 3, z, 6, z, 7, z, 10, z, 11, z, 14, z, 15, z,
                                       2, z, 3, z, 6, z, 7, z, 10, z, 11, z, 14, z, 15, z);
  int64_t x = lo;
  for (; x + 8 <= hi; x += 8) {
    const int64_t g = (x - lo) / 4;
    __m256i p01, p23;
    if (gok[g] && gok[g + 1]) {
      const __m256i v = _mm256_set_m128i(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(S + o0[x + 4])),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(S + o0[x])));
      p01 = _mm256_shuffle_epi8(v, ld256(sh01 + 4 * (x - lo)));
      if constexpr (K == 4) p23 = _mm256_shuffle_epi8(v, ld256(sh23 + 4 * (x - lo)));
    } else if (gather) {
      const __m256i v = _mm256_i32gather_epi32(reinterpret_cast<const int*>(S), ld256(o32 + x), 1);
      p01 = _mm256_shuffle_epi8(v, g01);
      if constexpr (K == 4) p23 = _mm256_shuffle_epi8(v, g23);
    } else {
      break;
    }
    __m256i r = _mm256_madd_epi16(p01, ld256(w1a + x));
    if constexpr (K == 4) r = _mm256_add_epi32(r, _mm256_madd_epi16(p23, ld256(w1b + x)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(H + x), r);
  }
  return x;
}

template <int C, int K>
__attribute__((target("avx2"))) void hpair_avx2(const uint8_t* S, const FixedTables& t,
                                                int64_t lo, int64_t hi, int32_t* H) {
  const int64_t* o0 = t.o0.data();
  const int32_t* wa = t.wa4.data();
  const int32_t* wb = t.wb4.data();
  int64_t x = lo;
  RowPrefetch<C> pf(true);
  if constexpr (C == 1) {
    x = hshuffle1_avx2<K>(S, t, lo, hi, H);
    if (x < hi) hpair_sse2<C, K>(S, t, x, hi, H);
    return;
  } else if constexpr (K == 4) {
    x = hcubic_shuffle_avx2<C>(S, t, lo, hi, H);
  } else {
    // linear: bytes t_k c_j at C k + j -> int16 pairs (t0 c_j, t1 c_j)
    const int z = -1;
    __m256i m;
    if constexpr (C == 2)
      m = _mm256_setr_epi8(0, z, 2, z, 1, z, 3, z, z, z, z, z, z, z, z, z,
                           0, z, 2, z, 1, z, 3, z, z, z, z, z, z, z, z, z);
    else if constexpr (C == 3)
      m = _mm256_setr_epi8(0, z, 3, z, 1, z, 4, z, 2, z, 5, z, z, z, z, z,
                           0, z, 3, z, 1, z, 4, z, 2, z, 5, z, z, z, z, z);
    else
      m = _mm256_setr_epi8(0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z,
                           0, z, 4, z, 1, z, 5, z, 2, z, 6, z, 3, z, 7, z);
    for (; x + 2 <= hi; x += 2) {
      pf(S + o0[x]);
      const __m256i v = _mm256_set_m128i(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(S + o0[x + 1])),
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(S + o0[x])));
      const __m256i r = _mm256_madd_epi16(_mm256_shuffle_epi8(v, m),
                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wa + 4 * x)));
      if constexpr (C == 4) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(H + x * C), r);
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(H + x * C), _mm256_castsi256_si128(r));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(H + (x + 1) * C), _mm256_extracti128_si256(r, 1));
      }
    }
  }
  for (; x + 2 <= hi; x += 2) {
    const uint8_t* p = S + o0[x];
    const uint8_t* q = S + o0[x + 1];
    pf(p);
    __m256i r = pair2_madd<C>(p, q, wa + 4 * x);
    if constexpr (K == 4) r = _mm256_add_epi32(r, pair2_madd<C>(p + 2 * C, q + 2 * C, wb + 4 * x));
    if constexpr (C == 4) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(H + x * C), r);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(H + x * C), _mm256_castsi256_si128(r));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(H + (x + 1) * C), _mm256_extracti128_si256(r, 1));
    }
  }
  if (x < hi) hpair_sse2<C, K>(S, t, x, hi, H);
}
#endif

template <int C, int K>
inline void fixed_hrow_ck(const uint8_t* S, const FixedTables& t, int64_t dw, int32_t* H,
                          bool avx2) {
  fixed_hrow_scalar(S, t, C, 0, t.simd_lo, H);
#if defined(__SSE2__)
#ifdef RS_AVX2
  if (avx2) {
    hpair_avx2<C, K>(S, t, t.simd_lo, t.simd_hi, H);
    fixed_hrow_scalar(S, t, C, t.simd_hi, dw, H);
    return;
  }
#endif
  hpair_sse2<C, K>(S, t, t.simd_lo, t.simd_hi, H);
#else
  fixed_hrow_scalar(S, t, C, t.simd_lo, t.simd_hi, H);
#endif
  (void)avx2;
  fixed_hrow_scalar(S, t, C, t.simd_hi, dw, H);
}

inline void fixed_hrow(const uint8_t* S, const FixedTables& t, int64_t C, int64_t dw, int32_t* H,
                       bool avx2) {
  const bool k2 = t.K == 2;
  switch (C) {
    case 1: k2 ? fixed_hrow_ck<1, 2>(S, t, dw, H, avx2) : fixed_hrow_ck<1, 4>(S, t, dw, H, avx2); break;
    case 2: k2 ? fixed_hrow_ck<2, 2>(S, t, dw, H, avx2) : fixed_hrow_ck<2, 4>(S, t, dw, H, avx2); break;
    case 3: k2 ? fixed_hrow_ck<3, 2>(S, t, dw, H, avx2) : fixed_hrow_ck<3, 4>(S, t, dw, H, avx2); break;
    case 4: k2 ? fixed_hrow_ck<4, 2>(S, t, dw, H, avx2) : fixed_hrow_ck<4, 4>(S, t, dw, H, avx2); break;
    default: fixed_hrow_scalar(S, t, C, 0, dw, H);
  }
}

// The hot tap of every column of t's tables (weights in units of 2^Bits) where each is
// one tap of weight 2^Bits and the row has 3 or 4 channels, else nothing.
template <int Bits>
inline std::vector<int64_t> fixed_hot(const FixedTables& t, int64_t C, int64_t dw) {
  if (C != 3 && C != 4) return {};
  return one_hot_taps<int16_t>(t.xo.data(), t.xa.data(), t.K, dw, int16_t(1 << Bits));
}

// The uint8 horizontal pass over t's tables, whose weights are in units of 2^Bits (11:
// INTER_LINEAR / INTER_CUBIC, 8: INTER_LINEAR_EXACT): the one-hot gather over `hot`
// (fixed_hot) where it is not empty, else fixed_hrow.  uint8
// 1920x1080x3 -> 640x640, 2 threads, back to back: on the AMD EPYC VM linear ran 0.24 ms
// with fixed_hrow's pair steps and 0.27 with the gather (cubic 0.31 -> 0.27); on the Intel
// AVX-512 FP16 VM (thirty-second session, one process) linear 0.45 -> 0.33, linear_exact
// 0.49 -> 0.38 and 4 channels 0.35 -> 0.33, where the pair steps had left the second
// thread nearly idle (1 thread 0.44 ms, 2 threads 0.42).
template <int Bits>
inline auto fixed_hpass(const FixedTables& t, int64_t C, int64_t w, int64_t dw, bool avx2,
                        std::vector<int64_t> hot) {
  return [&t, C, Lin = w * C, dw, avx2, hot = std::move(hot)](const uint8_t* src, int32_t* H) {
    if (hot.empty()) return fixed_hrow(src, t, C, dw, H, avx2);
    hot_pass<Bits>(src, hot.data(), C, Lin, dw, H);
  };
}

// Vertical pass, linear (VResizeLinear<uchar> and VResizeLinearVec_32s8u).
inline uint8_t vlin_one(int32_t h0, int32_t h1, int32_t b0, int32_t b1) {
  const int32_t v = (((b0 * (h0 >> 4)) >> 16) + ((b1 * (h1 >> 4)) >> 16) + 2) >> 2;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

#ifdef RS_AVX2
// 16 outputs from x = h0 >> 4 and y = h1 >> 4 (int16): VResizeLinearVec_32s8u's steps
// before the pack, (mulhi(x, b0) + mulhi(y, b1) + 2) >> 2 with saturating adds.
__attribute__((target("avx2"))) inline __m256i vlin16_avx2(__m256i x, __m256i y, __m256i b0,
                                                           __m256i b1) {
  const __m256i r = _mm256_adds_epi16(_mm256_mulhi_epi16(x, b0), _mm256_mulhi_epi16(y, b1));
  return _mm256_srai_epi16(_mm256_adds_epi16(r, _mm256_set1_epi16(2)), 2);
}

// The vertical pass on ring rows of the horizontal sums h (int32) or of h >> 4 (int16,
// cv_resize_fixed's one-hot ring): 32 outputs a step.
template <typename HT>
__attribute__((target("avx2"))) inline int64_t vlin_avx2(const HT* S0, const HT* S1, int16_t b0s,
                                                         int16_t b1s, int64_t n, uint8_t* d) {
  const __m256i b0 = _mm256_set1_epi16(b0s), b1 = _mm256_set1_epi16(b1s);
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    const __m256i* x = reinterpret_cast<const __m256i*>(S0 + j);
    const __m256i* y = reinterpret_cast<const __m256i*>(S1 + j);
    if constexpr (std::is_same_v<HT, int32_t>) {
      __m256i u[4], v[4];  // h >> 4
      for (int i = 0; i < 4; ++i) {
        u[i] = _mm256_srai_epi32(_mm256_loadu_si256(x + i), 4);
        v[i] = _mm256_srai_epi32(_mm256_loadu_si256(y + i), 4);
      }
      // packs interleaves 128-bit lanes: (0,1) -> [0lo 1lo 0hi 1hi]; fixed by the final permute
      const __m256i x01 = _mm256_packs_epi32(u[0], u[1]), x23 = _mm256_packs_epi32(u[2], u[3]);
      const __m256i y01 = _mm256_packs_epi32(v[0], v[1]), y23 = _mm256_packs_epi32(v[2], v[3]);
      const __m256i p = _mm256_packus_epi16(vlin16_avx2(x01, y01, b0, b1), vlin16_avx2(x23, y23, b0, b1));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + j),
                          _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    } else {
      const __m256i p =
          _mm256_packus_epi16(vlin16_avx2(_mm256_loadu_si256(x), _mm256_loadu_si256(y), b0, b1),
                              vlin16_avx2(_mm256_loadu_si256(x + 1), _mm256_loadu_si256(y + 1), b0, b1));
      // packus interleaves 128-bit lanes: [0-7 16-23 | 8-15 24-31]
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + j), _mm256_permute4x64_epi64(p, 0xD8));
    }
  }
  return j;
}
#endif

template <typename HT>
inline void fixed_vrow_linear(const HT* const* rows, const int16_t* b, int64_t n, uint8_t* d,
                              bool avx2) {
  const HT* S0 = rows[0];
  const HT* S1 = rows[1];
  int64_t j = 0;
#ifdef RS_AVX2
  if (avx2) j = vlin_avx2(S0, S1, b[0], b[1], n, d);
#endif
  (void)avx2;
#if defined(__SSE2__)
  const __m128i b0 = _mm_set1_epi16(b[0]), b1 = _mm_set1_epi16(b[1]), two = _mm_set1_epi16(2);
  auto ld = [](const HT* p) {  // 8 values of h >> 4 as int16
    if constexpr (std::is_same_v<HT, int32_t>) {
      auto q = [](const int32_t* r) {
        return _mm_srai_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r)), 4);
      };
      return _mm_packs_epi32(q(p), q(p + 4));
    } else {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    }
  };
  for (; j + 16 <= n; j += 16) {
    __m128i r[2];
    for (int i = 0; i < 2; ++i) {
      r[i] = _mm_adds_epi16(_mm_mulhi_epi16(ld(S0 + j + 8 * i), b0), _mm_mulhi_epi16(ld(S1 + j + 8 * i), b1));
      r[i] = _mm_srai_epi16(_mm_adds_epi16(r[i], two), 2);
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j), _mm_packus_epi16(r[0], r[1]));
  }
#endif
  constexpr int32_t up = std::is_same_v<HT, int32_t> ? 1 : 16;  // (int16 rows hold h >> 4)
  for (; j < n; ++j) d[j] = vlin_one(S0[j] * up, S1[j] * up, b[0], b[1]);
}

// Vertical pass, cubic (VResizeCubic<uchar> with VResizeCubicVec_32s8u): float32 for
// j < nv = n rounded down to 8 (OpenCV's 128-bit vector loop), integers for the tail.
inline uint8_t vcub_float_one(const int32_t* const* S, const float* bf, int64_t j) {
  float acc = static_cast<float>(S[3][j]) * bf[3];
  acc = static_cast<float>(S[2][j]) * bf[2] + acc;
  acc = static_cast<float>(S[1][j]) * bf[1] + acc;
  acc = static_cast<float>(S[0][j]) * bf[0] + acc;
  return saturate_float<uint8_t>(acc);
}

#ifdef RS_AVX2
RS_AVX2_FN __m256 ld8f(const int32_t* p) {
  return _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

__attribute__((target("avx2"))) inline int64_t vcub_avx2(const int32_t* const* S,
                                                         const float* bf, int64_t nv,
                                                         uint8_t* d) {
  const __m256 b0 = _mm256_set1_ps(bf[0]), b1 = _mm256_set1_ps(bf[1]);
  const __m256 b2 = _mm256_set1_ps(bf[2]), b3 = _mm256_set1_ps(bf[3]);
  int64_t j = 0;
  for (; j + 16 <= nv; j += 16) {
    __m256i q[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t o = j + 8 * i;
      __m256 acc = _mm256_mul_ps(ld8f(S[3] + o), b3);
      acc = _mm256_add_ps(_mm256_mul_ps(ld8f(S[2] + o), b2), acc);
      acc = _mm256_add_ps(_mm256_mul_ps(ld8f(S[1] + o), b1), acc);
      acc = _mm256_add_ps(_mm256_mul_ps(ld8f(S[0] + o), b0), acc);
      q[i] = _mm256_cvtps_epi32(acc);
    }
    const __m256i p16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xd8);
    const __m128i p8 = _mm_packus_epi16(_mm256_castsi256_si128(p16),
                                        _mm256_extracti128_si256(p16, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j), p8);
  }
  return j;
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
// vcub_avx2 with 16 lanes (the x86-64-v4 build): the same float sequence per element;
// max(q, 0) then an unsigned saturating narrow is packs_epi32 + packus_epi16's clamp.
inline int64_t vcub_avx512(const int32_t* const* S, const float* bf, int64_t nv, uint8_t* d) {
  const __m512 b0 = _mm512_set1_ps(bf[0]), b1 = _mm512_set1_ps(bf[1]);
  const __m512 b2 = _mm512_set1_ps(bf[2]), b3 = _mm512_set1_ps(bf[3]);
  auto ld = [](const int32_t* p) { return _mm512_cvtepi32_ps(_mm512_loadu_si512(p)); };
  int64_t j = 0;
  for (; j + 16 <= nv; j += 16) {
    __m512 acc = _mm512_mul_ps(ld(S[3] + j), b3);
    acc = _mm512_add_ps(_mm512_mul_ps(ld(S[2] + j), b2), acc);
    acc = _mm512_add_ps(_mm512_mul_ps(ld(S[1] + j), b1), acc);
    acc = _mm512_add_ps(_mm512_mul_ps(ld(S[0] + j), b0), acc);
    const __m512i q = _mm512_max_epi32(_mm512_cvtps_epi32(acc), _mm512_setzero_si512());
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j), _mm512_cvtusepi32_epi8(q));
  }
  return j;
}
#endif

inline void fixed_vrow_cubic(const int32_t* const* S, const int16_t* b, int64_t n, uint8_t* d,
                             bool avx2) {
  const int64_t nv = (n / 8) * 8;
  const float scale = 1.f / (2048 * 2048);
  float bf[4];
  for (int k = 0; k < 4; ++k) bf[k] = static_cast<float>(b[k]) * scale;
  int64_t j = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  j = vcub_avx512(S, bf, nv, d);  // (the SSE2 loop below takes a last 8)
#elif defined(RS_AVX2)
  if (avx2) j = vcub_avx2(S, bf, nv, d);
#endif
  (void)avx2;
#if defined(__SSE2__)
  {
    const __m128 b0 = _mm_set1_ps(bf[0]), b1 = _mm_set1_ps(bf[1]);
    const __m128 b2 = _mm_set1_ps(bf[2]), b3 = _mm_set1_ps(bf[3]);
    auto ld = [](const int32_t* p) {
      return _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    };
    for (; j + 8 <= nv; j += 8) {
      __m128i q[2];
      for (int i = 0; i < 2; ++i) {
        const int64_t o = j + 4 * i;
        __m128 acc = _mm_mul_ps(ld(S[3] + o), b3);
        acc = _mm_add_ps(_mm_mul_ps(ld(S[2] + o), b2), acc);
        acc = _mm_add_ps(_mm_mul_ps(ld(S[1] + o), b1), acc);
        acc = _mm_add_ps(_mm_mul_ps(ld(S[0] + o), b0), acc);
        q[i] = _mm_cvtps_epi32(acc);
      }
      const __m128i p16 = _mm_packs_epi32(q[0], q[1]);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + j), _mm_packus_epi16(p16, p16));
    }
  }
#endif
  for (; j < nv; ++j) d[j] = vcub_float_one(S, bf, j);
  for (; j < n; ++j) {
    int64_t acc = 0;
    for (int k = 0; k < 4; ++k) acc += static_cast<int64_t>(b[k]) * S[k][j];
    d[j] = saturate_int<uint8_t>((acc + (1 << 21)) >> 22);
  }
}

// The ring scheme shared by the separable integer passes: output rows in stripes, each
// stripe keeping the horizontally resized source rows of its last output rows in K slots
// (slot y % K, K = 2 or 4; the rows of one output are K consecutive clipped indices, so distinct
// rows never share a slot).  hrow(src_row, H_row), vrow(rows[K], row index, out_row).
// hrow2(src_a, src_b, H_a, H_b), where given, resizes two rows at once: the rows an output
// row lacks are handed to it in pairs (the tables' loads are shared; downscales by 2x or
// more in y lack both rows of every output row).
template <typename T, typename HT, class HFn, class VFn, class H2Fn = std::nullptr_t>
void ring_apply(const Img<T>& x, int64_t dh, int64_t Lout, int K, const int64_t* yrows,
                HFn hrow, VFn vrow, T* out, int nthreads, H2Fn hrow2 = nullptr) {
  if (dh == 0 || Lout == 0) return;
  const int64_t hrows = std::min<int64_t>(x.H, dh * K);
  const int nt = threads_for(rsk::work(double(Lout) * (double(hrows) * 4 + double(dh) * K)),
                             nthreads);
  const int64_t stripe = stripe_rows(dh, nt);
  const int64_t stripes = (dh + stripe - 1) / stripe;
  // Rows start 64 bytes apart from a 64-byte aligned ring, so that the vertical pass's
  // 64-byte loads never split a cache line: split, they cost float32 640x480x3 ->
  // 224x224 cubic's four-row sums 9.3 cycles per 16 outputs against ~5 (one thread,
  // whose ring below came 16-byte aligned from the heap).
  constexpr size_t kRowAlign = 64 / sizeof(HT);
  const size_t row_len = (static_cast<size_t>(Lout + kSlack) + kRowAlign - 1) / kRowAlign *
                         kRowAlign;
  const size_t per = row_len * static_cast<size_t>(K);
  // One thread and a small ring: the calling thread's, kept across calls, so that a loop
  // of small resizes allocates nothing (tiny cv.resize, fastops/_bench/tiny.py: the two
  // aligned scratch allocations were ~5% of an 8x8 call).
  static thread_local std::vector<HT> solo_ring;
  static thread_local int64_t solo_tag[8];
  const bool solo = nt == 1 && per * sizeof(HT) <= kSoloRingBytes;
  if (solo && solo_ring.size() < per + kRowAlign) solo_ring.resize(per + kRowAlign);
  const uintptr_t solo_at = reinterpret_cast<uintptr_t>(solo_ring.data());
  HT* const solo_base = solo_ring.data() + (64 - solo_at % 64) % 64 / sizeof(HT);
  std::optional<ThreadScratch<HT>> scratch;
  std::optional<ThreadScratch<int64_t>> tags;
  if (!solo) {
    scratch.emplace(static_cast<int64_t>(per), nt);
    tags.emplace(K, nt);
  }
  parallel_for(stripes, 1, nt, [&](int64_t s_lo, int64_t s_hi, int tid) {
    HT* ring = solo ? solo_base : (*scratch)(tid);
    int64_t* tag = solo ? solo_tag : (*tags)(tid);
    const HT* rp[8];
    for (int64_t s = s_lo; s < s_hi; ++s) {
      for (int k = 0; k < K; ++k) tag[k] = -1;
      const int64_t y0 = s * stripe, y1 = std::min(dh, y0 + stripe);
      for (int64_t yo = y0; yo < y1; ++yo) {
        int64_t lack[4];  // the rows to resize, then their slots
        HT* lack_at[4];
        int nl = 0;
        for (int k = 0; k < K; ++k) {
          const int64_t y = clamp_idx(yrows[yo * K + k], x.H);
          const int64_t sl = y & (K - 1);  // y % K, K = 2 or 4 (no division per row)
          HT* hr = ring + static_cast<size_t>(sl) * row_len;
          if (tag[sl] != y) {
            lack[nl] = y;
            lack_at[nl++] = hr;
            tag[sl] = y;
          }
          rp[k] = hr;
        }
        int i = 0;
        if constexpr (!std::is_same_v<H2Fn, std::nullptr_t>)
          for (; i + 2 <= nl; i += 2)
            hrow2(x.row(lack[i]), x.row(lack[i + 1]), lack_at[i], lack_at[i + 1]);
        for (; i < nl; ++i) hrow(x.row(lack[i]), lack_at[i]);
        vrow(rp, yo, out + yo * Lout);
      }
    }
  });
}

}  // namespace cvr

// uint8 INTER_LINEAR / INTER_CUBIC / INTER_AREA (upscaling: bilinear with OpenCV's area
// coefficients) in OpenCV's 11-bit fixed point.
inline void cv_resize_fixed(const uint8_t* x, int64_t h, int64_t w, int64_t C, int64_t rs,
                            double scale_x, double inv_x, double scale_y, double inv_y,
                            int interp, uint8_t* out, int64_t dh, int64_t dw, int nthreads) {
  using namespace cvr;
  FixedTables& t = thread_tables();
  fixed_tables(t, w, h, C, dw, dh, scale_x, inv_x, scale_y, inv_y, interp);
  const Img<uint8_t> img{x, h, w, C, rs};
  const int64_t Lout = dw * C;
  const bool avx2 = rsk::use_avx2();
  std::vector<int64_t> hot = fixed_hot<11>(t, C, dw);
  if (t.K == 2 && !hot.empty()) {
    // INTER_LINEAR over one-hot columns (odd integer downscales such as 1920 -> 640):
    // every horizontal sum is S << 11, which the vertical pass reads as (S << 11) >> 4
    // packed to int16, so the ring holds S << 7 as int16 (hot_sum4 / hot_sum4x2's int16
    // overloads): half the bytes, no shift and pack per output in the vertical pass, the
    // same values.  uint8 1920x1080x4 -> 640x640, Zen 1 VM, one thread: 1.35 -> 0.97 ms
    // (docs/performance.md, forty-second session).
    auto hrow = [&, Lin = w * C](const uint8_t* src, int16_t* H) {
      hot_pass<7>(src, hot.data(), C, Lin, dw, H);
    };
    auto vrow = [&](const int16_t* const* rows, int64_t yo, uint8_t* d) {
      fixed_vrow_linear(rows, t.yb.data() + 2 * yo, Lout, d, avx2);
    };
    ring_apply<uint8_t, int16_t>(img, dh, Lout, 2, t.yr.data(), hrow, vrow, out, nthreads);
    release_tables(t, dw, dh);
    return;
  }
  const auto hrow = fixed_hpass<11>(t, C, w, dw, avx2, std::move(hot));
  if (t.K == 2) {
    auto vrow = [&](const int32_t* const* rows, int64_t yo, uint8_t* d) {
      fixed_vrow_linear(rows, t.yb.data() + 2 * yo, Lout, d, avx2);
    };
    ring_apply<uint8_t, int32_t>(img, dh, Lout, 2, t.yr.data(), std::cref(hrow), vrow, out,
                                 nthreads);
  } else {
    auto vrow = [&](const int32_t* const* rows, int64_t yo, uint8_t* d) {
      fixed_vrow_cubic(rows, t.yb.data() + 4 * yo, Lout, d, avx2);
    };
    ring_apply<uint8_t, int32_t>(img, dh, Lout, 4, t.yr.data(), std::cref(hrow), vrow, out,
                                 nthreads);
  }
  release_tables(t, dw, dh);
}

// ------------------------------------------------------------------ float arithmetic
// INTER_LINEAR / INTER_CUBIC / INTER_AREA-upscale of uint16, int16, float32 and float64
// images: resizeGeneric_ with HResizeLinear / HResizeCubic<T, WT, float> and
// VResizeLinear / VResizeCubic<T, WT, float, Cast<WT, T>> (WT float; double for double),
// OpenCV's operations in OpenCV's order: horizontal sums per source row (a linear tap
// past the last sample is S * 1; cubic edge pixels start from 0 + ..., as HResizeCubic's
// border loop), the vertical sum in tap order except where OpenCV's vector loop adds
// from the last tap (cubic, x < width rounded down to 4 float32 / 8 16-bit lanes), then
// saturate_cast (round half to even).  Bit-exact with OpenCV's own code (IPP off).
// (The resize family's separable apply merges clamped edge taps and sums forward, so it
// is reused only where the arithmetic is the same: INTER_AREA downscaling.)
namespace cvr {

template <typename T>
struct FloatPath {
  using WT = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
  // lanes of OpenCV's VResizeCubicVec (128-bit): 4 float32, 8 for 16-bit outputs, none
  // for double (VResizeNoVec)
  static constexpr int64_t kCubicLanes =
      std::is_same<T, double>::value ? 0 : (std::is_same<T, float>::value ? 4 : 8);
};

// Lanes per output pixel, pixels per 128-bit group, and the elements read from a pixel's
// first tap (o0 + hwindow <= Lin) of the vector horizontal pass below.
constexpr int64_t hlanes(int64_t C) { return C == 3 ? 4 : C; }
constexpr int64_t hgroup_px(int64_t C) { return C == 1 ? 4 : (C == 2 ? 2 : 1); }
constexpr int64_t hwindow(int64_t C, int K) { return C == 1 ? 4 : K * hlanes(C); }
// the same for float64 sums (hrun64): 4 outputs per 256-bit vector for one channel, one
// pixel per vector for 2-4
constexpr int64_t hlanes64(int64_t C) { return C == 1 ? 1 : 4; }
constexpr int64_t hwindow64(int64_t C, int K) { return C == 1 ? 4 : (K - 1) * C + 4; }

#if defined(__SSE2__)
// d[j] = saturate_cast<T>(v) for 4 floats (16-bit T): clamp, round half to even, pack.
template <typename T>
RS_INLINE void store4_16(__m128 v, T* d) {
  const __m128 lo = _mm_set1_ps(static_cast<float>(std::numeric_limits<T>::min()));
  const __m128 hi = _mm_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
  __m128i q = _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(v, lo), hi));
  if constexpr (std::is_same<T, uint16_t>::value) {  // no packus_epi32 in SSE2
    q = _mm_sub_epi32(q, _mm_set1_epi32(32768));
    q = _mm_xor_si128(_mm_packs_epi32(q, q), _mm_set1_epi16(static_cast<short>(0x8000)));
  } else {
    q = _mm_packs_epi32(q, q);
  }
  _mm_storel_epi64(reinterpret_cast<__m128i*>(d), q);
}

// The vector horizontal pass of the float paths (WT float, C <= 4, output pixels whose
// taps are consecutive source pixels): lanes are output elements, Lp per pixel (C; 4 for
// C = 3, the fourth lane overwritten by the next pixel's store), P pixels per 128-bit
// group.  A group's taps come from 4-element windows of the source row (load4f) put in
// place by in-lane shuffles, so the AVX2 build runs two groups per 256-bit vector (pixels
// [d, d + P) in the low lane, [d + P, d + 2P) in the high one) with the same code.  Every
// lane computes ((t0 * c0 + t1 * c1) + t2 * c2) + t3 * c3, the scalar sequence.
// (float32 1920x1080 -> 640x640 linear, 2 threads: C = 1 1.31 -> see docs/performance.md)

// One-channel rows with two taps (linear) load each pixel's tap pair, not a 4-element
// window: taps 0 and 1 are consecutive, and an 8-byte load crosses a cache line at 1 of
// 16 float offsets where the window's 16-byte one does at 3.  float32 1920 -> 1280, the
// horizontal pass in L2 on the Zen 1 VM: 0.51 ns per output against the windows'
// 0.69-0.84 (docs/performance.md, forty-third session).
// The 2 floats at a and the 2 at b: a0 a1 b0 b1.  (movlps / movhps: builtins that take any
// alignment; _mm_load_sd dereferences a double*, which UBSan rejects at a float's.)
RS_INLINE __m128 pair2f(const float* a, const float* b) {
  const __m128 lo = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(a));
  return _mm_loadh_pi(lo, reinterpret_cast<const __m64*>(b));
}

// 16-bit: the pairs at o[0..3] as four int32 lanes (tap 0 in the low half, tap 1 high)
template <typename T>
RS_INLINE __m128i pairs4_16(const T* S, const int64_t* o) {
  auto b = [&](int j) { return reinterpret_cast<const uint8_t*>(S + o[j]); };
  return _mm_unpacklo_epi64(load4b_x2(b(0), b(1)), load4b_x2(b(2), b(3)));
}

struct Lane128 {
  using V = __m128;
  static constexpr int kGroups = 1;
  static constexpr bool kTaps3x2 = false;  // (taps3x2 below: no pshufb in SSE2)
  // the window at o[0] + e (o: first-tap offsets from the group's first pixel)
  template <typename T, int P>
  static RS_INLINE V window(const T* S, const int64_t* o, int64_t e) { return load4f<T>(S + o[0] + e); }
  static RS_INLINE V load(const float* p) { return _mm_loadu_ps(p); }
  static RS_INLINE V mul(V a, V b) { return _mm_mul_ps(a, b); }
  static RS_INLINE V add(V a, V b) { return _mm_add_ps(a, b); }
  static RS_INLINE V lo(V a, V b) { return _mm_movelh_ps(a, b); }    // a0 a1 b0 b1
  static RS_INLINE V hi(V a, V b) { return _mm_movehl_ps(b, a); }    // a2 a3 b2 b3
  static RS_INLINE V unlo(V a, V b) { return _mm_unpacklo_ps(a, b); }  // a0 b0 a1 b1
  static RS_INLINE V unhi(V a, V b) { return _mm_unpackhi_ps(a, b); }  // a2 b2 a3 b3
  // (one channel, two taps) the pixels' taps 0 and 1 (o: their first taps)
  template <typename T>
  static RS_INLINE void pairs(const T* S, const int64_t* o, V t[2]) {
    if constexpr (std::is_same<T, float>::value) {
      const V p = pair2f(S + o[0], S + o[1]), q = pair2f(S + o[2], S + o[3]);
      t[0] = _mm_shuffle_ps(p, q, 0x88);
      t[1] = _mm_shuffle_ps(p, q, 0xDD);
    } else {
      const __m128i v = pairs4_16(S, o);
      const __m128i lo = std::is_same<T, uint16_t>::value
                             ? _mm_and_si128(v, _mm_set1_epi32(0xffff))
                             : _mm_srai_epi32(_mm_slli_epi32(v, 16), 16);
      const __m128i hi = std::is_same<T, uint16_t>::value ? _mm_srli_epi32(v, 16)
                                                          : _mm_srai_epi32(v, 16);
      t[0] = _mm_cvtepi32_ps(lo);
      t[1] = _mm_cvtepi32_ps(hi);
    }
  }
  static RS_INLINE void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static RS_INLINE void store3(float* p, V v) { _mm_storeu_ps(p, v); }
  static RS_INLINE V set1(float a) { return _mm_set1_ps(a); }
  template <typename T>
  static RS_INLINE void store16(V v, T* d) { store4_16<T>(v, d); }
  template <typename T>
  static RS_INLINE void store3_16(V v, T* d) { store4_16<T>(v, d); }
  // (s + 2) >> 2 of lanes holding exact integers
  static RS_INLINE V shr2(V s) {
    return _mm_cvtepi32_ps(_mm_srai_epi32(_mm_add_epi32(_mm_cvtps_epi32(s), _mm_set1_epi32(2)), 2));
  }
};

#if defined(__AVX2__)
// 4 consecutive elements at a (low lane) and at b (high lane) as float32.
template <typename T>
RS_INLINE __m256 load4f_x2(const T* a, const T* b) {
  if constexpr (std::is_same<T, float>::value) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), _mm_loadu_ps(b), 1);
  } else {
    const __m128i v = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
    if constexpr (std::is_same<T, uint16_t>::value)
      return _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(v));
    else
      return _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(v));
  }
}

struct Lane256 {
  using V = __m256;
  static constexpr int kGroups = 2;
  template <typename T, int P>
  static RS_INLINE V window(const T* S, const int64_t* o, int64_t e) {
    return load4f_x2<T>(S + o[0] + e, S + o[P] + e);
  }
  // Taps 0 and 1 of two 16-bit 3-channel pixels (o[0], o[1]) from one 8-element load
  // each, split by pshufb, where two windows per tap took 4 loads and 2 unpacks: the
  // horizontal pass of 480 rows, uint16 640x3 -> 224 pixels, one thread, 0.86-0.88 of
  // the windows' time (docs/performance.md, fifty-first session).  Reads 8 elements from
  // a pixel's first tap: hwindow(3, 2).
  static constexpr bool kTaps3x2 = true;
  template <typename T>
  static RS_INLINE void taps3x2(const T* S, const int64_t* o, V t[2]) {
    const __m256i v = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(S + o[0]))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(S + o[1])), 1);
    constexpr bool u = std::is_same<T, uint16_t>::value;
    // the bytes of elements 0-2 (tap 0) into three int32 lanes, their low halves (uint16)
    // or high ones (int16, sign-extended below); z clears a byte (pshufb: index bit 7),
    // also after the + 6 that makes tap 1's mask (elements 3-5)
    constexpr char z = -128;
    const __m256i m0 = _mm256_broadcastsi128_si256(
        u ? _mm_setr_epi8(0, 1, z, z, 2, 3, z, z, 4, 5, z, z, z, z, z, z)
          : _mm_setr_epi8(z, z, 0, 1, z, z, 2, 3, z, z, 4, 5, z, z, z, z));
    const __m256i m1 = _mm256_add_epi8(m0, _mm256_set1_epi8(6));
    __m256i a = _mm256_shuffle_epi8(v, m0), b = _mm256_shuffle_epi8(v, m1);
    if constexpr (!u) {
      a = _mm256_srai_epi32(a, 16);
      b = _mm256_srai_epi32(b, 16);
    }
    t[0] = _mm256_cvtepi32_ps(a);
    t[1] = _mm256_cvtepi32_ps(b);
  }
  static RS_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  static RS_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static RS_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
  static RS_INLINE V lo(V a, V b) { return _mm256_shuffle_ps(a, b, 0x44); }
  static RS_INLINE V hi(V a, V b) { return _mm256_shuffle_ps(a, b, 0xEE); }
  static RS_INLINE V unlo(V a, V b) { return _mm256_unpacklo_ps(a, b); }
  static RS_INLINE V unhi(V a, V b) { return _mm256_unpackhi_ps(a, b); }
  template <typename T>
  static RS_INLINE void pairs(const T* S, const int64_t* o, V t[2]) {  // (Lane128's)
    if constexpr (std::is_same<T, float>::value) {
      const V p = _mm256_insertf128_ps(_mm256_castps128_ps256(pair2f(S + o[0], S + o[1])),
                                       pair2f(S + o[4], S + o[5]), 1);
      const V q = _mm256_insertf128_ps(_mm256_castps128_ps256(pair2f(S + o[2], S + o[3])),
                                       pair2f(S + o[6], S + o[7]), 1);
      t[0] = _mm256_shuffle_ps(p, q, 0x88);
      t[1] = _mm256_shuffle_ps(p, q, 0xDD);
    } else {
      const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(pairs4_16(S, o)),
                                                pairs4_16(S, o + 4), 1);
      const __m256i lo = std::is_same<T, uint16_t>::value
                             ? _mm256_and_si256(v, _mm256_set1_epi32(0xffff))
                             : _mm256_srai_epi32(_mm256_slli_epi32(v, 16), 16);
      const __m256i hi = std::is_same<T, uint16_t>::value ? _mm256_srli_epi32(v, 16)
                                                          : _mm256_srai_epi32(v, 16);
      t[0] = _mm256_cvtepi32_ps(lo);
      t[1] = _mm256_cvtepi32_ps(hi);
    }
  }
  static RS_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static RS_INLINE void store3(float* p, V v) {  // pixel d at p, pixel d + 1 at p + 3
    _mm_storeu_ps(p, _mm256_castps256_ps128(v));
    _mm_storeu_ps(p + 3, _mm256_extractf128_ps(v, 1));
  }
  static RS_INLINE V set1(float a) { return _mm256_set1_ps(a); }
  // store4_16 for 8 lanes, without its clamp: packus / packs saturate int32 as the clamp
  // would, and every sum stored here lies far inside int32 (a 16-bit image's values times
  // weights whose magnitudes add up to at most 2), so cvtps_epi32 cannot overflow.  The
  // clamp was a fifth of uint16 640x480x3 -> 1280x960 linear's vertical pass on Zen 1.
  template <typename T>
  static RS_INLINE void store16(V v, T* d) {
    const __m256i q = _mm256_cvtps_epi32(v);
    const __m128i a = _mm256_castsi256_si128(q), b = _mm256_extracti128_si256(q, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), std::is_same<T, uint16_t>::value
                                                        ? _mm_packus_epi32(a, b)
                                                        : _mm_packs_epi32(a, b));
  }
  // store16 of a and b in one 256-bit store: packus / packs interleave the 128-bit lanes,
  // vpermq puts them back in order.  (vrun16's 16-lane steps: see there.)
  template <typename T>
  static RS_INLINE void store16x2(V a, V b, T* d) {
    const __m256i x = _mm256_cvtps_epi32(a), y = _mm256_cvtps_epi32(b);
    const __m256i q = std::is_same<T, uint16_t>::value ? _mm256_packus_epi32(x, y)
                                                       : _mm256_packs_epi32(x, y);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_permute4x64_epi64(q, 0xD8));
  }
  template <typename T>
  static RS_INLINE void store3_16(V v, T* d) {  // pixel at d, the next one at d + 3
    Lane128::store16<T>(_mm256_castps256_ps128(v), d);
    Lane128::store16<T>(_mm256_extractf128_ps(v, 1), d + 3);
  }
  static RS_INLINE V shr2(V s) {
    return _mm256_cvtepi32_ps(
        _mm256_srai_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(s), _mm256_set1_epi32(2)), 2));
  }
};
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
// The x86-64-v4 build's 16-bit vertical pass (vrun16): 16 lanes of the same sequence.
// (Its horizontal steps are hperm and hquad below; 16-bit 3- and 4-channel rows took four
// 128-bit groups per 512-bit vector here before them.)
struct Lane512 {
  using V = __m512;
  static RS_INLINE V load(const float* p) { return _mm512_loadu_ps(p); }
  static RS_INLINE V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static RS_INLINE V add(V a, V b) { return _mm512_add_ps(a, b); }
  static RS_INLINE V set1(float a) { return _mm512_set1_ps(a); }
  template <typename T>
  static RS_INLINE void store16(V v, T* d) {  // store4_16 for 16 lanes
    const V lo = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::min()));
    const V hi = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
    // clamped first, so the saturating narrowing is exact
    const __m512i q = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), std::is_same<T, uint16_t>::value
                                                           ? _mm512_cvtusepi32_epi16(q)
                                                           : _mm512_cvtsepi32_epi16(q));
  }
};

// 16-bit elements paired in int32 lanes (element 2j low, 2j + 1 high) as two float32
// vectors, lo = the even elements and hi = the odd ones: ALU work, no shuffle.
template <typename T>
RS_INLINE void split_pairs(__m512i v, __m512& lo, __m512& hi) {
  if constexpr (std::is_same<T, uint16_t>::value) {
    lo = _mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(0xffff)));
    hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 16));
  } else {
    lo = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(v, 16), 16));
    hi = _mm512_cvtepi32_ps(_mm512_srai_epi32(v, 16));
  }
}

// Four 16-bit 3- or 4-channel pixels per step (float32 3-channel linear: hquad3), from one
// load per pixel: the 4K elements at its first tap hold all K taps (tap k's channels at
// k * C), and two-source permutes (vpermt2ps) put tap k of the four pixels in the
// 4-lanes-per-pixel layout of the coefficient table.  The window steps (Lane256, and
// before this a 512-bit one for 16-bit) load each tap of each pixel and shuffle it in
// place.  Against them, 2 threads, back to back
// (docs/performance.md, fifteenth run): uint16 3-channel cubic and the 3-channel VGA ->
// 1280x960 linear 0.83-0.88, float32 640x480x3 -> 224x224 linear 0.90; float32 4-channel
// linear (1.12) and cubic (four 64-byte loads and twelve permutes per step: 1.3) keep
// Lane256; float32 3-channel cubic takes hpairs3 below.  float32 3-channel linear rows
// (hquad3) permute straight into a 3-lanes-per-pixel table: no compaction permute.

// Linear: the windows (8 elements) of 4 pixels as the 32 elements of a and b, pixel i's
// element e at 8i + e.  float32: a = pixels 0, 1 and b = 2, 3; 16-bit: the four in one
// register, split_pairs.  index2 maps an element to its permute index.
template <typename T>
RS_INLINE void quad_windows2(const T* S, const int64_t* o, __m512& a, __m512& b) {
  if constexpr (std::is_same<T, float>::value) {
    a = _mm512_mask_broadcast_f32x8(_mm512_castps256_ps512(_mm256_loadu_ps(S + o[0])), 0xFF00,
                                    _mm256_loadu_ps(S + o[1]));
    b = _mm512_mask_broadcast_f32x8(_mm512_castps256_ps512(_mm256_loadu_ps(S + o[2])), 0xFF00,
                                    _mm256_loadu_ps(S + o[3]));
  } else {
    auto ld = [&](int i) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(S + o[i])); };
    __m512i v = _mm512_castsi128_si512(ld(0));
    v = _mm512_mask_broadcast_i32x4(v, 0x00F0, ld(1));
    v = _mm512_mask_broadcast_i32x4(v, 0x0F00, ld(2));
    v = _mm512_mask_broadcast_i32x4(v, 0xF000, ld(3));
    split_pairs<T>(v, a, b);
  }
}

template <typename T>
RS_INLINE __m512i index2(__m512i e) {
  if constexpr (std::is_same<T, float>::value) return e;
  return _mm512_add_epi32(_mm512_srli_epi32(e, 1),
                          _mm512_slli_epi32(_mm512_and_si512(e, _mm512_set1_epi32(1)), 4));
}

// 16 16-bit elements at p as float32
template <typename T>
RS_INLINE __m512 widen16f(const T* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_cvtepi32_ps(std::is_same<T, uint16_t>::value ? _mm512_cvtepu16_epi32(v)
                                                              : _mm512_cvtepi16_epi32(v));
}

template <int C, int K, typename T>
RS_INLINE void hquad(const T* S, const int64_t* o, const float* c, int64_t cstride, float* H) {
  static_assert(sizeof(T) == 2, "float32: hquad3");
  __m512 acc;
  if constexpr (K == 2) {  // lane 4i + e <- element 8i + kC + e
    __m512 a, b;
    quad_windows2<T>(S, o, a, b);
    const __m512i e0 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    const __m512i i0 = index2<T>(e0);
    const __m512i i1 = index2<T>(_mm512_add_epi32(e0, _mm512_set1_epi32(C)));
    acc = _mm512_add_ps(_mm512_mul_ps(_mm512_permutex2var_ps(a, i0, b), _mm512_loadu_ps(c)),
                        _mm512_mul_ps(_mm512_permutex2var_ps(a, i1, b),
                                      _mm512_loadu_ps(c + cstride)));
  } else {  // cubic: pixel i's 16 elements in w[i]; lane 4i + e <- w[i][kC + e]
    const __m512 w[4] = {widen16f(S + o[0]), widen16f(S + o[1]), widen16f(S + o[2]),
                         widen16f(S + o[3])};
    __m512i ik = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 0, 1, 2, 3, 16, 17, 18, 19);
    for (int k = 0; k < K; ++k) {
      const __m512 t = _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(w[0], ik, w[1]),
                                            _mm512_permutex2var_ps(w[2], ik, w[3]));
      const __m512 p = _mm512_mul_ps(t, _mm512_loadu_ps(c + k * cstride));
      acc = k == 0 ? p : _mm512_add_ps(acc, p);
      ik = _mm512_add_epi32(ik, _mm512_set1_epi32(C));
    }
  }
  if constexpr (C == 3)  // drop lane 4i + 3 (the row's slack takes the store's tail)
    acc = _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 15, 15, 15), acc);
  _mm512_storeu_ps(H, acc);
}

// float32 3-channel linear rows: hquad's windows; the permutes put tap k of pixel i's
// channel e in lane 3i + e, so the 12 outputs need no compaction (then 4 lanes the next
// step or the row's slack overwrites), and the coefficients come from the pixels' tap
// pairs (c = xa + 2d: c0 c1 of 4 pixels in 32 bytes) spread by two vpermps.  The load
// ports bound these steps on AMD Zen 4: hquad's 64-byte coefficient loads from a 4-lane
// table (unaligned, 48 bytes apart) cost more than two permutes of one 32-byte load.  The
// horizontal pass alone, 448 rows 640x3 -> 224x3, one thread: 8.6 -> 7.0 cycles per 4
// pixels (docs/performance.md, forty-eighth session).
RS_INLINE void hquad3(const float* S, const int64_t* o, const float* c, float* H) {
  __m512 a, b;
  quad_windows2<float>(S, o, a, b);
  const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 8, 9, 10, 16, 17, 18, 24, 25, 26, 0, 0, 0, 0);
  const __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(3));
  const __m512i c0 = _mm512_setr_epi32(0, 0, 0, 2, 2, 2, 4, 4, 4, 6, 6, 6, 0, 0, 0, 0);
  const __m512 pairs = _mm512_castps256_ps512(_mm256_loadu_ps(c));
  const __m512 k0 = _mm512_permutexvar_ps(c0, pairs);
  const __m512 k1 = _mm512_permutexvar_ps(_mm512_add_epi32(c0, _mm512_set1_epi32(1)), pairs);
  _mm512_storeu_ps(H, _mm512_add_ps(_mm512_mul_ps(_mm512_permutex2var_ps(a, i0, b), k0),
                                    _mm512_mul_ps(_mm512_permutex2var_ps(a, i1, b), k1)));
}
#endif

// float32 3-channel rows in the x86-64-v4 build: hquad3 takes the linear ones (its table:
// the tap pairs, xa), hpairs3 the cubic ones (cubic_pairs).
template <typename T>
constexpr bool float3_v4([[maybe_unused]] int64_t C) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  return std::is_same<T, float>::value && C == 3;
#else
  return false;
#endif
}
template <typename T>
constexpr bool quad3_rows(int64_t C, int K) { return float3_v4<T>(C) && K == 2; }

// Does the horizontal table hold up2_run's taps for source pixels 1 <= i <= w - 2?
inline bool up2_rows(const int64_t* xo, const float* xa, int64_t w, int64_t C, int64_t dw) {
  if (dw != 2 * w || w < 3) return false;
  for (int64_t i = 1; i + 1 < w; ++i) {
    const int64_t e = 4 * i, o = 4 * i + 2;  // outputs 2i and 2i + 1, two taps each
    if (xo[e] != (i - 1) * C || xo[e + 1] != i * C || xa[e] != 0.25f || xa[e + 1] != 0.75f ||
        xo[o] != i * C || xo[o + 1] != (i + 1) * C || xa[o] != 0.75f || xa[o + 1] != 0.25f)
      return false;
  }
  return true;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// Exact 2x linear upscales of a row (dw = 2w): output pixel 2i is S[i - 1] * 0.25 +
// S[i] * 0.75 and 2i + 1 is S[i] * 0.75 + S[i + 1] * 0.25 (the tables' taps for 1 <= i <=
// w - 2, checked by up2_rows), so both are elementwise sums of three contiguous windows,
// interleaved pixel by pixel with two permutes: kUp2Px<C> source pixels (16 / C) per step,
// the outputs of pixels [i, i + P) at H + 2iC (C = 3: two lanes past them, overwritten by
// the next step or landing in the ring's slack).  Source elements [(i - 1)C, (i + 1)C +
// 16) are read.  2 threads, back to back, 640x480 -> 1280x960, ms, the window / permute
// steps -> this: uint16 3 channels 0.27-0.33 -> 0.17-0.22 (cv2 0.24-0.28), float32 0.23-0.28
// -> 0.14-0.19 (cv2 0.20-0.25), one channel 0.10-0.13 / 0.12-0.14 -> 0.08-0.10 / 0.07-0.08,
// 4 channels 0.30-0.36 / 0.50-0.70 -> 0.26-0.28 / 0.42-0.50.
template <int C>
constexpr int64_t kUp2Px = 16 / C;

template <typename T>
RS_INLINE __m512 load16f(const T* p) {
  if constexpr (std::is_same_v<T, float>) return _mm512_loadu_ps(p);
  else return widen16f(p);
}

// Output lane q of a step <- E's lane or O's (16 + lane), the two permutes' indices.
template <int C>
constexpr std::array<int32_t, 32> up2_index() {
  std::array<int32_t, 32> ix{};
  for (int q = 0; q < 32; ++q) {
    const int px = q / (2 * C), r = q % (2 * C);
    ix[q] = px >= kUp2Px<C> ? 0 : (r < C ? px * C + r : 16 + px * C + r - C);
  }
  return ix;
}

template <int C, typename T>
inline int64_t up2_run(const T* S, int64_t i, int64_t i_end, int64_t Lin, float* H) {
  constexpr int64_t P = kUp2Px<C>;
  const __m512 q1 = _mm512_set1_ps(0.25f), q3 = _mm512_set1_ps(0.75f);
  static constexpr std::array<int32_t, 32> ix = up2_index<C>();
  const __m512i lo = _mm512_loadu_si512(ix.data()), hi = _mm512_loadu_si512(ix.data() + 16);
  for (; i + P <= i_end && (i + 1) * C + 16 <= Lin; i += P) {
    const T* s = S + i * C;
    const __m512 a = load16f(s - C), b = load16f(s), c = load16f(s + C);
    const __m512 e = _mm512_add_ps(_mm512_mul_ps(a, q1), _mm512_mul_ps(b, q3));
    const __m512 o = _mm512_add_ps(_mm512_mul_ps(b, q3), _mm512_mul_ps(c, q1));
    float* h = H + 2 * i * C;
    _mm512_storeu_ps(h, _mm512_permutex2var_ps(e, lo, o));
    _mm512_storeu_ps(h + 16, _mm512_permutex2var_ps(e, hi, o));
  }
  return i;
}
#elif defined(__AVX2__)
// The x86-64-v3 build's up2_run: the same sums (e = a * 0.25 + b * 0.75, o = b * 0.75 +
// c * 0.25) in 8 lanes.  C = 1, 2, 4: 8 elements per step, e and o unpacked per pixel
// within 128-bit lanes (C = 4: the lanes are the pixels), vperm2f128 puts the halves in
// order for two 256-bit stores.  C = 3: 4 pixels a step from blends (quad, below); the
// row's first two pixels and its last ones two at a time, pixel i in the low lane and i
// + 1 in the high one (load4f_x2), each output pixel stored 4 wide (the fourth lane
// overwritten by the next store or landing in the ring's slack).  Source elements [(i -
// 1)C, (i + 1)C + 8) are read (C = 3: [3i - 6, 3i + 18)).  These replaced 128-bit stores
// of every 4 outputs, kept from Zen 1 (a cross-lane permute in 3 to 8 uops there): AMD
// Zen 3 VM, 2 threads, back to back, A/B in one process, 640x480 -> 1280x960: uint16 3
// channels 0.85, float32 0.81 (320x240 -> 640x480 0.85), float32 4 channels 0.82, uint16
// 1 / 2 channels 0.97 / 1.01.
template <int C, typename T>
inline int64_t up2_run(const T* S, int64_t i, int64_t i_end, int64_t Lin, float* H) {
  const __m256 q1 = _mm256_set1_ps(0.25f), q3 = _mm256_set1_ps(0.75f);
  auto st = [](float* h, __m128 v) { _mm_storeu_ps(h, v); };
  if constexpr (C == 3) {
    auto pair = [&](int64_t i) {  // pixels i and i + 1
      const T* s = S + 3 * i;
      const __m256 a = load4f_x2<T>(s - 3, s), b = load4f_x2<T>(s, s + 3);
      const __m256 c = load4f_x2<T>(s + 3, s + 6);
      const __m256 b3 = _mm256_mul_ps(b, q3);
      const __m256 e = _mm256_add_ps(_mm256_mul_ps(a, q1), b3);
      const __m256 o = _mm256_add_ps(b3, _mm256_mul_ps(c, q1));
      float* h = H + 6 * i;
      st(h, _mm256_castps256_ps128(e));
      st(h + 3, _mm256_castps256_ps128(o));
      st(h + 6, _mm256_extractf128_ps(e, 1));
      st(h + 9, _mm256_extractf128_ps(o, 1));
    };
    // Pixels i .. i + 3, 24 outputs, in three 8-lane stores: output q of the step is u * w0
    // + v * w1 with u = s[q - 3 - 3(q / 6)], v = u + 3 (s = S + 3i), the weights (0.25,
    // 0.75) in lanes of e (q % 6 < 3) and (0.75, 0.25) in lanes of o: the same products
    // and sums as pair's.  Lanes of one pixel share a base, so u and v are blends of
    // loads at s - 6 ... s + 10.  Reads s[-6, 18).
    static constexpr float kW0[24] = {.25f, .25f, .25f, .75f, .75f, .75f, .25f, .25f,  // q % 6
                                      .25f, .75f, .75f, .75f, .25f, .25f, .25f, .75f,
                                      .75f, .75f, .25f, .25f, .25f, .75f, .75f, .75f};
    const __m256 one = _mm256_set1_ps(1.f);
    const __m256 w0[3] = {_mm256_loadu_ps(kW0), _mm256_loadu_ps(kW0 + 8),
                          _mm256_loadu_ps(kW0 + 16)};
    const __m256 w1[3] = {_mm256_sub_ps(one, w0[0]), _mm256_sub_ps(one, w0[1]),
                          _mm256_sub_ps(one, w0[2])};
    auto quad = [&](int64_t i) {
      const T* s = S + 3 * i;
      auto L = [&](int64_t k) { return rsk::avx_load8f(s + k); };
      const __m256 m6 = L(-6), m3 = L(-3), z0 = L(0), m1 = L(-1), p2 = L(2), p5 = L(5);
      const __m256 p4 = L(4), p7 = L(7), p10 = L(10);
      float* h = H + 6 * i;
      auto out = [&](float* at, __m256 u, __m256 v, int k) {
        _mm256_storeu_ps(at, _mm256_add_ps(_mm256_mul_ps(u, w0[k]), _mm256_mul_ps(v, w1[k])));
      };
      out(h, _mm256_blend_ps(m3, m6, 0xC0), _mm256_blend_ps(z0, m3, 0xC0), 0);
      out(h + 8, _mm256_blend_ps(p2, m1, 0xF0), _mm256_blend_ps(p5, p2, 0xF0), 1);
      out(h + 16, _mm256_blend_ps(p7, p4, 0xFC), _mm256_blend_ps(p10, p7, 0xFC), 2);
    };
    if (i < 2 && i + 2 <= i_end && 3 * i + 10 <= Lin) {  // (quad reads from 2 pixels back)
      pair(i);
      i += 2;
    }
    for (; i >= 2 && i + 4 <= i_end && 3 * i + 18 <= Lin; i += 4) quad(i);
    for (; i + 2 <= i_end && 3 * i + 10 <= Lin; i += 2) pair(i);
  } else {
    constexpr int64_t P = 8 / C;
    for (; i + P <= i_end && (i + 1) * C + 8 <= Lin; i += P) {
      const T* s = S + i * C;
      const __m256 b3 = _mm256_mul_ps(rsk::avx_load8f(s), q3);
      const __m256 e = _mm256_add_ps(_mm256_mul_ps(rsk::avx_load8f(s - C), q1), b3);
      const __m256 o = _mm256_add_ps(b3, _mm256_mul_ps(rsk::avx_load8f(s + C), q1));
      __m256 lo = e, hi = o;  // C = 4: pixel i's e and o in the low lanes, i + 1's high
      if constexpr (C == 1) {
        lo = _mm256_unpacklo_ps(e, o), hi = _mm256_unpackhi_ps(e, o);
      } else if constexpr (C == 2) {
        lo = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(e), _mm256_castps_pd(o)));
        hi = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(e), _mm256_castps_pd(o)));
      }
      float* h = H + 2 * i * C;
      _mm256_storeu_ps(h, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(h + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
  }
  return i;
}
#endif

// The K taps of pixels [d, d + kGroups * P) of one source row S (o = first-tap offsets
// + d), in the lane layout above.
template <class L, int C, int K, typename T>
RS_INLINE void htaps(const T* S, const int64_t* o, typename L::V t[K]) {
  constexpr int P = static_cast<int>(hgroup_px(C));
  using V = typename L::V;
  if constexpr (C == 1 && K == 2) {  // tap pairs
    L::template pairs<T>(S, o, t);
  } else if constexpr (C == 1) {  // windows of 4 outputs, transposed
    V w[4];
    for (int j = 0; j < 4; ++j) w[j] = L::template window<T, P>(S, o + j, 0);
    const V a = L::unlo(w[0], w[1]), b = L::unlo(w[2], w[3]);
    t[0] = L::lo(a, b);
    t[1] = L::hi(a, b);
    if constexpr (K == 4) {
      const V a2 = L::unhi(w[0], w[1]), b2 = L::unhi(w[2], w[3]);
      t[2] = L::lo(a2, b2);
      t[3] = L::hi(a2, b2);
    }
  } else if constexpr (C == 2) {  // taps (k, k + 1) of two pixels per window pair
    for (int k = 0; k < K; k += 2) {
      const V v = L::template window<T, P>(S, o, 2 * k), u = L::template window<T, P>(S, o + 1, 2 * k);
      t[k] = L::lo(v, u);
      t[k + 1] = L::hi(v, u);
    }
  } else {  // one pixel per group: tap k's window
    for (int k = 0; k < K; ++k) t[k] = L::template window<T, P>(S, o, k * C);
  }
}

// The sums of pixels [d, d + kGroups * P) of R rows S[r] (R = 1 or 2: two rows share the
// offset and coefficient loads): c = the coefficient table (tap k's lanes at c + k *
// cstride) + d * Lp.
template <class L, int C, int K, typename T, int R>
RS_INLINE void hsums(const T* const* S, const int64_t* o, const float* c, int64_t cstride,
                     typename L::V acc[R]) {
  typename L::V w[K], t[R][K];
  for (int k = 0; k < K; ++k) w[k] = L::load(c + k * cstride);
  for (int r = 0; r < R; ++r) {
    if constexpr (C == 3 && K == 2 && sizeof(T) == 2 && L::kTaps3x2)
      L::template taps3x2<T>(S[r], o, t[r]);
    else
      htaps<L, C, K, T>(S[r], o, t[r]);
  }
  for (int r = 0; r < R; ++r) {
    acc[r] = L::mul(t[r][0], w[0]);
    for (int k = 1; k < K; ++k) acc[r] = L::add(acc[r], L::mul(t[r][k], w[k]));
  }
}

// hsums stored: H[r] = row r's output + d * C.
template <class L, int C, int K, typename T, int R>
RS_INLINE void hgroup_rows(const T* const* S, const int64_t* o, const float* c, int64_t cstride,
                           float* const* H) {
  typename L::V acc[R];
  hsums<L, C, K, T, R>(S, o, c, cstride, acc);  // (its loads before any store)
  for (int r = 0; r < R; ++r) {
    if constexpr (C == 3) L::store3(H[r], acc[r]);
    else L::store(H[r], acc[r]);
  }
}

#if defined(__AVX2__)
// Pixels [d, d + 4) of R 3-channel rows: two Lane256 groups, whose 12 outputs a row go out
// in one 256-bit and one 128-bit store (vpermps packs each group's two pixels) where
// store3 took four, two of them vextractf128 to memory (perf put a third of float32
// 640x480x3 -> 224x224's horizontal pass on those).  Writes H[r][0, 12) only.  Float32
// linear only: AMD Zen 3 VM, 2 threads, back to back, A/B in one process, float32
// 640x480x3 -> 224x224 0.93-0.96, 1920x1080x3 -> 1280x720 0.94-0.96; cubic and uint16
// rows (more taps or pshufb taps live per step) read 1.02-1.15.
template <int K, typename T, int R>
RS_INLINE void hgroup3x2_rows(const T* const* S, const int64_t* o, const float* c,
                              int64_t cstride, float* const* H) {
  __m256 a[R], b[R];
  hsums<Lane256, 3, K, T, R>(S, o, c, cstride, a);
  hsums<Lane256, 3, K, T, R>(S, o + 2, c + 2 * hlanes(3), cstride, b);
  const __m256i ia = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 0, 0);  // pixels d, d + 1
  const __m256i ib = _mm256_setr_epi32(2, 4, 5, 6, 0, 0, 0, 1);  // d + 2 (split), d + 3
  for (int r = 0; r < R; ++r) {
    const __m256 pb = _mm256_permutevar8x32_ps(b[r], ib);
    _mm256_storeu_ps(H[r], _mm256_blend_ps(_mm256_permutevar8x32_ps(a[r], ia), pb, 0xC0));
    _mm_storeu_ps(H[r] + 8, _mm256_castps256_ps128(pb));
  }
}
#endif

template <class L, int C, int K, typename T>
RS_INLINE void hgroup(const T* S, const int64_t* o, const float* c, int64_t cstride, float* H) {
  hgroup_rows<L, C, K, T, 1>(&S, o, c, cstride, &H);
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// One-channel rows (16-bit; float32 linear only): kPermPx pixels per step whose taps lie
// in the 128 bytes at the step's first tap (any upscale; downscales up to about 4x) take
// every tap from two 512-bit loads and one two-source permute per tap pair (16-bit:
// vpermt2w, each int32 lane a pixel's taps 2m and 2m + 1, split without a shuffle;
// float32: vpermt2ps, tap 2m in lanes 0-7 and 2m + 1 in 8-15), where Lane256 loads four
// windows per group of outputs and transposes them.  The step's K / 2 vectors of 16
// int32 indices come from perm_table (kPermNone where the step's taps do not fit: such
// steps take Lane256's windows).  2 threads, back to back, against the window steps:
// uint16 1920x1080 -> 640x640 linear 0.80 and cubic about 0.85, float32 linear 0.88;
// float32 cubic and 2-channel rows (16-bit and float32) were no faster (docs/performance.md,
// fifteenth run).
template <typename T>
constexpr int64_t kPermPx = sizeof(T) == 2 ? 16 : 8;
constexpr int32_t kPermNone = -1;
// float32 linear rows whose every step of 16 pixels has its taps in 32 floats (downscales
// up to about 1.9x) take 16 pixels per step instead (hperm_wide): one vpermt2ps per tap
// puts tap k of all 16 in place, so a step has two loads and two permutes where the
// 8-pixel steps above take two loads and one permute for 8 pixels, then split the
// product's halves.  AMD Zen 4 VM, one thread, 1920x1080 -> 1280x720, the whole call
// (C++ harness): 0.61-0.69 -> 0.53-0.60 ms.  Cubic rows (four permutes per step) ran
// slower than the windows they keep: 0.88 -> 0.93-1.0 ms (docs/performance.md,
// forty-fifth session).
constexpr int64_t kWidePermPx = 16;

template <int K, typename T>
RS_INLINE void hperm(const T* S, const int32_t* ix, const float* c, int64_t cstride, float* H) {
  if constexpr (std::is_same<T, float>::value) {
    const __m512 a = _mm512_loadu_ps(S), b = _mm512_loadu_ps(S + 16);
    __m256 acc;
    for (int m = 0; m < K / 2; ++m) {
      const __m512 t = _mm512_permutex2var_ps(a, _mm512_loadu_si512(ix + 16 * m), b);
      const float* cm = c + 2 * m * cstride;
      const __m512 cv = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(cm)),
                                           _mm256_loadu_ps(cm + cstride), 1);
      const __m512 p = _mm512_mul_ps(t, cv);
      const __m256 p0 = _mm512_castps512_ps256(p), p1 = _mm512_extractf32x8_ps(p, 1);
      acc = m == 0 ? _mm256_add_ps(p0, p1) : _mm256_add_ps(_mm256_add_ps(acc, p0), p1);
    }
    _mm256_storeu_ps(H, acc);
  } else {
    const __m512i a = _mm512_loadu_si512(S), b = _mm512_loadu_si512(S + 32);
    __m512 acc;
    for (int m = 0; m < K / 2; ++m) {
      __m512 t0, t1;
      split_pairs<T>(_mm512_permutex2var_epi16(a, _mm512_loadu_si512(ix + 16 * m), b), t0, t1);
      const float* cm = c + 2 * m * cstride;
      const __m512 p0 = _mm512_mul_ps(t0, _mm512_loadu_ps(cm));
      const __m512 p1 = _mm512_mul_ps(t1, _mm512_loadu_ps(cm + cstride));
      acc = m == 0 ? _mm512_add_ps(p0, p1) : _mm512_add_ps(_mm512_add_ps(acc, p0), p1);
    }
    _mm512_storeu_ps(H, acc);
  }
}

RS_INLINE void hperm_wide(const float* S, const int32_t* ix, const float* c, int64_t cstride,
                          float* H) {
  const __m512 a = _mm512_loadu_ps(S), b = _mm512_loadu_ps(S + 16);
  const __m512 t0 = _mm512_permutex2var_ps(a, _mm512_loadu_si512(ix), b);
  const __m512 t1 = _mm512_permutex2var_ps(a, _mm512_loadu_si512(ix + 16), b);
  _mm512_storeu_ps(H, _mm512_add_ps(_mm512_mul_ps(t0, _mm512_loadu_ps(c)),
                                    _mm512_mul_ps(t1, _mm512_loadu_ps(c + cstride))));
}
#endif

// Whether hperm takes the rows of C channels and K taps (the x86-64-v4 build only).
template <typename T>
constexpr bool perm_rows(int64_t C, int K) { return C == 1 && (K == 2 || sizeof(T) == 2); }

// float32 3-channel cubic rows, x86-64-v4 build: two pixels per 512-bit vector, taps 0-1
// of a pixel from one 32-byte load at its first tap (channels in lanes 0-2, tap 1's in
// 3-5) and taps 2-3 from one at tap 2.  Each is multiplied by (c0 c0 c0 c1 c1 c1 0 0),
// (c2 c2 c2 c3 c3 c3 0 0) (the table: cubic_pairs_table, cstride apart), and a lane
// shift by 3 lines up the sums ((p0 + p1) + p2) + p3 in lanes 0-2, the scalar sequence;
// one permute packs four pixels: 12 vector loads per four pixels where Lane256 takes 20
// (a 4-float window per tap per pixel) and the steps were bound by their loads (as slow
// with the rows in L1).  640x480x3 -> 224x224, 2 threads, back to back: 0.75 of
// Lane256's time (docs/performance.md, eighteenth run).
template <typename T>
constexpr bool cubic_pairs(int64_t C, int K) { return float3_v4<T>(C) && K == 4; }

inline void cubic_pairs_table(const float* xa, int64_t dw, std::vector<float>& cw) {
  cw.assign(static_cast<size_t>(16 * dw), 0.f);
  for (int64_t d = 0; d < dw; ++d)
    for (int l = 0; l < 3; ++l)
      for (int k = 0; k < 2; ++k) {
        cw[d * 8 + 3 * k + l] = xa[d * 4 + k];
        cw[(dw + d) * 8 + 3 * k + l] = xa[d * 4 + 2 + k];
      }
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
RS_INLINE void hpairs3(const float* S, const int64_t* o, const float* c, int64_t cstride,
                       float* H) {
  const __m512i shift3 = _mm512_setr_epi32(3, 4, 5, 3, 4, 5, 3, 4, 11, 12, 13, 11, 12, 13, 11, 12);
  __m512 r[2];
  for (int h = 0; h < 2; ++h) {
    const float* s0 = S + o[2 * h];
    const float* s1 = S + o[2 * h + 1];
    const __m512 w01 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(s0)),
                                          _mm256_loadu_ps(s1), 1);
    const __m512 w23 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(s0 + 6)),
                                          _mm256_loadu_ps(s1 + 6), 1);
    const __m512 p01 = _mm512_mul_ps(w01, _mm512_loadu_ps(c + 16 * h));
    const __m512 p23 = _mm512_mul_ps(w23, _mm512_loadu_ps(c + cstride + 16 * h));
    const __m512 a = _mm512_add_ps(_mm512_add_ps(p01, _mm512_permutexvar_ps(shift3, p01)), p23);
    r[h] = _mm512_add_ps(a, _mm512_permutexvar_ps(shift3, p23));
  }
  // the 12 outputs, then 4 lanes the next step (or the row's slack) overwrites
  const __m512i pack = _mm512_setr_epi32(0, 1, 2, 8, 9, 10, 16, 17, 18, 24, 25, 26, 0, 0, 0, 0);
  _mm512_storeu_ps(H, _mm512_permutex2var_ps(r[0], pack, r[1]));
}
#endif

// The permute indices of hperm's steps over pixels [lo, hi) of a one-channel row with K
// consecutive taps (o0: first-tap offsets; Lin: the row's length), 8K int32 per step
// (wide float32 steps, kWidePermPx pixels: 16K); empty where the build has no permute step.
template <typename T>
std::vector<int32_t> perm_table(const int64_t* o0, int64_t lo, int64_t hi, int64_t Lin, int K,
                                [[maybe_unused]] bool wide = false) {
  std::vector<int32_t> ix;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  const int64_t span = 128 / sizeof(T), G = wide ? kWidePermPx : kPermPx<T>;
  for (int64_t d = lo; d + G <= hi; d += G) {
    const int64_t base = o0[d];
    const bool fits = base + span <= Lin && o0[d + G - 1] + K - 1 - base < span;
    for (int m = 0; m < K / 2; ++m)
      for (int64_t j = 0; j < 16 * (wide ? 2 : 1); ++j) {
        // 16-bit: pixel j's taps 2m, 2m + 1 (words 2j, 2j + 1); float32: pixel j % 8's
        // tap 2m + j / 8; wide: pixel j % 16's tap 2m + j / 16
        const int64_t w = sizeof(T) == 2 ? o0[d + j] + 2 * m - base
                          : wide ? o0[d + j % 16] + 2 * m + j / 16 - base
                                 : o0[d + j % 8] + 2 * m + j / 8 - base;
        const int64_t v = sizeof(T) == 2 ? w | (w + 1) << 16 : w;
        ix.push_back(fits ? static_cast<int32_t>(v) : kPermNone);
      }
  }
#endif
  return ix;
}

// Whether steps of `width` elements over pixels [lo, hi) of C channels leave elements a
// last step must end at hi C (the element steps of both builds).
inline bool needs_last_step(int64_t C, int64_t lo, int64_t hi, int64_t width) {
  const int64_t n = (hi - lo) * C;
  return n % width != 0 && n > width;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// 16-bit 3-channel rows, x86-64-v4: hperm's steps over output elements instead of
// pixels.  Element e = d C + c of a row has tap k at o0[d] + c + k C; a step takes 16
// consecutive elements whose taps lie in the 64 elements from its first pixel's tap 0
// (from Lin - 64 at the row's end), one vpermt2w per tap pair, the coefficients one per
// element (Lp = C: no fourth lane to drop, no pixel compaction).  Upscales and
// downscales up to about 3.8x (C = 3 linear) fit.  The steps run over [lo C, hi C) in 16s,
// the last ending at hi C, and return the pixel where they stopped (the caller's scalar
// pixels give the same bits).  hquad's four-pixel steps (masked broadcasts, two vpermt2ps
// and a vpermps per 12 outputs) ran slower on AMD Zen 4: uint16 1920x1080x3 -> 1280x720
// linear, the horizontal pass alone with its rows in L1, one thread, 0.88 -> 0.73-0.75 ms
// (docs/performance.md, forty-fifth session).

// The element steps' table over pixels [lo, hi): per step the first element it reads,
// then 8K int32 permute indices; empty when a step's taps do not fit (the rows then keep
// their pixel steps).  After the steps of 16 from lo C, one more ends at hi C where
// elements are left (needs_last_step).

template <int C>
std::vector<int32_t> elem_perm_table(const int64_t* o0, int64_t lo, int64_t hi, int64_t Lin,
                                     int K) {
  std::vector<int32_t> ix;
  if (Lin < 64) return ix;
  auto step = [&](int64_t e) {  // elements e .. e + 15
    const int64_t d = e / C, c = e % C;
    const int64_t base = std::min(o0[d], Lin - 64);  // (o0 does not decrease)
    ix.push_back(static_cast<int32_t>(base));
    for (int m = 0; m < K / 2; ++m)
      for (int64_t j = 0; j < 16; ++j) {
        const int64_t dj = d + (c + j) / C, cj = (c + j) % C;  // element e + j
        const int64_t w = o0[dj] + cj + 2 * m * C - base;  // taps 2m and 2m + 1
        if (w < 0 || w + C >= 64) return false;
        ix.push_back(static_cast<int32_t>(w | (w + C) << 16));
      }
    return true;
  };
  for (int64_t e = lo * C; e + 16 <= hi * C; e += 16)
    if (!step(e)) return {};
  if (needs_last_step(C, lo, hi, 16) && !step(hi * C - 16)) return {};
  return ix;
}

// The last step ends at the run's last element, over elements the step before computed
// too (the same operations, the same bits): the scalar pixels it replaces were 18 % of
// uint16 640x480x3 -> 224x224 linear, one thread (6 of 224 pixels a row).
template <int C, int K, typename T>
inline int64_t hrun_elem(const T* S, const int64_t*, const float* cw, int64_t cstride,
                         int64_t lo, int64_t hi, const int32_t* perm, bool prefetch, float* H) {
  RowPrefetch<C> pf(prefetch);
  auto step = [&](int64_t e) {
    const T* p = S + perm[0];
    pf(p);
    hperm<K, T>(p, perm + 1, cw + e, cstride, H + e);
    perm += 8 * K + 1;
  };
  int64_t e = lo * C;
  for (; e + 16 <= hi * C; e += 16) step(e);
  if (needs_last_step(C, lo, hi, 16)) {
    step(hi * C - 16);
    e = hi * C;
  }
  return e / C;
}
#endif

#if defined(__AVX2__) && !(defined(__AVX512F__) && defined(__AVX512BW__))
// 16-bit rows, x86-64-v3: steps of 8 output elements (AVX2 has no vpermt2w).  Element
// e = dC + c has tap k at o0[d] + c + kC, so tap k of a step's 8 elements lies in the 16
// elements from base + kC, at offsets w_j = o0[d_j] + c_j - base that are the same for
// every tap.  One 256-bit load holds those 16 as 8 pairs: vpermd picks pair w_j >> 1 for
// element j, and a variable shift its low or high half, so a linear step has 2 window
// loads and 2 lane-crossing permutes for 8 outputs, and no conversion shuffle.  The pixel
// steps (hgroup) spend 5 shuffles on 6 outputs (3 channels) or load 8 pairs and their
// offsets for 8 (one channel).  A step fits where every w_j is below 16: downscales up to
// about 2x (one channel) or 1.6x (3 channels), and upscales; cubic too (4 window loads).
// Measured on the AMD Zen 3 VM (docs/performance.md, fifty-first session): the horizontal
// pass of 1080 rows, uint16 1920 -> 1280 pixels, one thread: 3 channels 0.83-0.87 and one
// channel 0.69 of the pixel steps' time.  2 and 4 channels, whose pixel steps fill every
// lane, ran slower with them (whole calls 1.05 and 1.15) and keep the pixel steps.
constexpr int64_t kWordWindow = 16;

// The steps' table over pixels [lo, hi): per step its base, then 8 indices (pair w >> 1 in
// bits 0-2, bit 4 set for a low half: the left shift that brings it up); empty when a step
// does not fit (the rows keep their pixel steps).  After the steps of 8 from lo C, one
// more ends at hi C where elements are left.
inline std::vector<int32_t> words_table(const int64_t* o0, int64_t lo, int64_t hi, int64_t Lin,
                                        int64_t C, int K) {
  std::vector<int32_t> ix;
  const int64_t last_base = Lin - kWordWindow - (K - 1) * C;  // tap K - 1's window ends at Lin
  if (last_base < 0) return ix;
  auto step = [&](int64_t e) {  // elements e .. e + 7
    const int64_t base = std::min(o0[e / C], last_base);  // (o0 does not decrease)
    ix.push_back(static_cast<int32_t>(base));
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t w = o0[(e + j) / C] + (e + j) % C - base;
      if (w < 0 || w >= kWordWindow) return false;
      ix.push_back(static_cast<int32_t>((w >> 1) | (w & 1 ? 0 : 16)));
    }
    return true;
  };
  for (int64_t e = lo * C; e + 8 <= hi * C; e += 8)
    if (!step(e)) return {};
  if (needs_last_step(C, lo, hi, 8) && !step(hi * C - 8)) return {};
  return ix;
}

// R = 1 or 2 rows S[r] -> H[r] (two rows share the table's loads).  The last step ends at
// the run's last element, over elements the step before computed too (the same
// operations, the same bits).
template <int C, int K, typename T, int R = 1>
inline int64_t hrun_words(const T* const* S, const float* cw, int64_t cstride, int64_t lo,
                          int64_t hi, const int32_t* tab, bool prefetch, float* const* H) {
  auto step = [&](int64_t e, auto& fetch) {
    const __m256i ix = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tab + 1));
    const __m256i up = _mm256_and_si256(ix, _mm256_set1_epi32(16));
    __m256 w[K], acc[R];
    for (int k = 0; k < K; ++k) w[k] = _mm256_loadu_ps(cw + k * cstride + e);
    for (int r = 0; r < R; ++r) {
      const T* p = S[r] + tab[0];
      if constexpr (std::decay_t<decltype(fetch)>::value) fetch(r, p);
      for (int k = 0; k < K; ++k) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + k * C));
        const __m256i h = _mm256_sllv_epi32(_mm256_permutevar8x32_epi32(v, ix), up);
        const __m256i t = std::is_same<T, uint16_t>::value ? _mm256_srli_epi32(h, 16)
                                                           : _mm256_srai_epi32(h, 16);
        const __m256 m = _mm256_mul_ps(_mm256_cvtepi32_ps(t), w[k]);
        acc[r] = k == 0 ? m : _mm256_add_ps(acc[r], m);  // t0 c0 + t1 c1 + ..., in order
      }
    }
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(H[r] + e, acc[r]);
    tab += 9;
  };
  int64_t e = lo * C;
  auto steps = [&](auto& fetch) {
    for (; e + 8 <= hi * C; e += 8) step(e, fetch);
    if (needs_last_step(C, lo, hi, 8)) {
      step(hi * C - 8, fetch);
      e = hi * C;
    }
  };
  if (prefetch && C > 1) {
    RowFetch<C, R> fetch;
    steps(fetch);
  } else {
    std::false_type none;
    steps(none);
  }
  return e / C;
}
#endif

// Four-pixel steps over [d, hi), the last ending at hi over pixels the step before computed
// (the same operations, the same bits); returns where the scalar pixels start.  The
// scalar pixels the last step replaces (float32 3-channel cubic: 2 of 224 a row of
// 640x480 -> 224x224) took about a fifth of ring_apply's own samples (the vertical sums
// half); A/B 0.94-0.98, one thread.
template <class Step>
RS_INLINE int64_t quad_steps(int64_t d, int64_t hi, Step step) {
  if (hi - d < 4) return d;
  for (; d + 4 <= hi; d += 4) step(d);
  if (d < hi) step(hi - 4);
  return hi;
}

// The vector pass over pixels [lo, hi); returns where it stopped (the rest is scalar).
// perm: perm_table's indices where the build has them for C and K (else null); Wide: its
// wide steps (float32, one channel, every step fits).
template <int C, int K, typename T, bool Wide = false>
inline int64_t hrun(const T* S, const int64_t* o0, const float* cw, int64_t cstride, int64_t lo,
                    int64_t hi, const int32_t* perm, bool prefetch, float* H) {
  constexpr int64_t P = hgroup_px(C), Lp = hlanes(C);
  int64_t d = lo;
  RowPrefetch<C> pf(prefetch);
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if constexpr (Wide) {
    static_assert(std::is_same_v<T, float> && C == 1 && K == 2);
    for (; d + kWidePermPx <= hi; d += kWidePermPx, perm += 32)
      hperm_wide(S + o0[d], perm, cw + d, cstride, H + d);
  } else if constexpr (perm_rows<T>(C, K)) {
    constexpr int64_t G = kPermPx<T>;
    for (; perm && d + G <= hi; d += G, perm += 8 * K) {
      if (perm[0] != kPermNone) {
        hperm<K, T>(S + o0[d], perm, cw + d, cstride, H + d);
      } else {
        for (int64_t e = d; e < d + G; e += 2 * P)
          hgroup<Lane256, C, K, T>(S, o0 + e, cw + e, cstride, H + e);
      }
    }
  } else if constexpr (cubic_pairs<T>(C, K)) {  // (their tables have no other steps)
    return quad_steps(d, hi, [&](int64_t e) {
      pf(S + o0[e]);
      hpairs3(S, o0 + e, cw + e * 8, cstride, H + e * C);
    });
  } else if constexpr (quad3_rows<T>(C, K)) {
    return quad_steps(d, hi, [&](int64_t e) {
      pf(S + o0[e]);
      hquad3(S, o0 + e, cw + 2 * e, H + 3 * e);
    });
  } else if constexpr (sizeof(T) == 2 && C >= 3) {
    for (; d + 4 <= hi; d += 4) {
      pf(S + o0[d]);
      hquad<C, K, T>(S, o0 + d, cw + d * Lp, cstride, H + d * C);
    }
  }
#endif
#if defined(__AVX2__)
  if constexpr (C == 3 && K == 2 && std::is_same_v<T, float>) {
    for (; d + 4 <= hi; d += 4) {
      pf(S + o0[d]);
      float* const Hd = H + d * C;
      hgroup3x2_rows<K, T, 1>(&S, o0 + d, cw + d * Lp, cstride, &Hd);
    }
  }
  for (; d + 2 * P <= hi; d += 2 * P) {
    pf(S + o0[d]);
    hgroup<Lane256, C, K, T>(S, o0 + d, cw + d * Lp, cstride, H + d * C);
  }
#endif
  for (; d + P <= hi; d += P) {
    pf(S + o0[d]);
    hgroup<Lane128, C, K, T>(S, o0 + d, cw + d * Lp, cstride, H + d * C);
  }
  return d;
}

// float64 images (double sums), the AVX2 build: 4 outputs per 256-bit vector for one
// channel (windows of 4 transposed), one pixel per vector for 2-4 channels (lanes past C
// overwritten by the next pixel or landing in the row's slack); each lane runs the scalar
// sequence (hlanes64 / hwindow64 above).
#if defined(__AVX2__)

template <int C, int K, typename T>
inline int64_t hrun64(const T* S, const int64_t* o0, const double* cw, int64_t cstride,
                      int64_t lo, int64_t hi, bool prefetch, double* H) {
  int64_t d = lo;
  RowPrefetch<C> pf(prefetch);
  if constexpr (C == 1) {
    for (; d + 4 <= hi; d += 4) {
      pf(S + o0[d]);
      const __m256d w0 = _mm256_loadu_pd(S + o0[d]), w1 = _mm256_loadu_pd(S + o0[d + 1]);
      const __m256d w2 = _mm256_loadu_pd(S + o0[d + 2]), w3 = _mm256_loadu_pd(S + o0[d + 3]);
      const __m256d a = _mm256_unpacklo_pd(w0, w1), b = _mm256_unpackhi_pd(w0, w1);
      const __m256d c = _mm256_unpacklo_pd(w2, w3), e = _mm256_unpackhi_pd(w2, w3);
      const __m256d t[4] = {_mm256_permute2f128_pd(a, c, 0x20), _mm256_permute2f128_pd(b, e, 0x20),
                            _mm256_permute2f128_pd(a, c, 0x31), _mm256_permute2f128_pd(b, e, 0x31)};
      __m256d acc = _mm256_mul_pd(t[0], _mm256_loadu_pd(cw + d));
      for (int k = 1; k < K; ++k)
        acc = _mm256_add_pd(acc, _mm256_mul_pd(t[k], _mm256_loadu_pd(cw + k * cstride + d)));
      _mm256_storeu_pd(H + d, acc);
    }
  } else {
    for (; d < hi; ++d) {
      const T* p = S + o0[d];
      pf(p);
      __m256d acc = _mm256_mul_pd(_mm256_loadu_pd(p), _mm256_loadu_pd(cw + 4 * d));
      for (int k = 1; k < K; ++k)
        acc = _mm256_add_pd(acc, _mm256_mul_pd(_mm256_loadu_pd(p + k * C),
                                               _mm256_loadu_pd(cw + k * cstride + 4 * d)));
      _mm256_storeu_pd(H + d * C, acc);
    }
  }
  return d;
}
#endif

// resizeAreaFast_'s 2x2 cells of a float32 / 16-bit image (C <= 4), cells [d, d +
// kGroups * P) of one output row D: the pixels (a, b) of source row R0 and (c, d) of R1
// come from htaps (cell d's taps at o0[d] = 2dC and + C), then each lane runs OpenCV's
// sequence: float32 1 / 4 channels ResizeAreaFastVec_SIMD_32f's ((a + b) + (c + d)) *
// 0.25f, float32 2 / 3 channels the scalar 0 + (((a + b) + c) + d) times 0.25f; 16-bit
// sums are exact in float: 1 / 3 / 4 channels (s + 2) >> 2, 2 channels s * 0.25f
// rounded half to even.
template <class L, int C, typename T>
RS_INLINE void area2x2_group(const T* R0, const T* R1, const int64_t* o, T* D) {
  using V = typename L::V;
  V t[2], u[2];
  htaps<L, C, 2, T>(R0, o, t);
  htaps<L, C, 2, T>(R1, o, u);
  const V q = L::set1(0.25f);
  if constexpr (std::is_same<T, float>::value) {
    V r;
    if constexpr (C == 1 || C == 4)
      r = L::mul(L::add(L::add(t[0], t[1]), L::add(u[0], u[1])), q);
    else
      r = L::mul(L::add(L::set1(0.f), L::add(L::add(L::add(t[0], t[1]), u[0]), u[1])), q);
    if constexpr (C == 3) L::store3(D, r);
    else L::store(D, r);
  } else {
    const V sum = L::add(L::add(L::add(t[0], t[1]), u[0]), u[1]);
    const V r = C == 2 ? L::mul(sum, q) : L::shr2(sum);
    if constexpr (C == 3) L::template store3_16<T>(r, D);
    else L::template store16<T>(r, D);
  }
}

#if defined(__AVX2__)
// 16 consecutive 16-bit elements as two int32 vectors: C = 1 the even and odd elements
// (in order), C = 4 the pixels 0, 2 and 1, 3 (outputs 0-3 in the low lane, 4-7 high).
template <int C, typename T>
RS_INLINE void split16_avx2(const T* p, __m256i& x, __m256i& y) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  constexpr bool u = std::is_same<T, uint16_t>::value;
  if constexpr (C == 1) {
    x = u ? _mm256_and_si256(v, _mm256_set1_epi32(0xffff))
          : _mm256_srai_epi32(_mm256_slli_epi32(v, 16), 16);
    y = u ? _mm256_srli_epi32(v, 16) : _mm256_srai_epi32(v, 16);
  } else if (u) {
    x = _mm256_unpacklo_epi16(v, _mm256_setzero_si256());
    y = _mm256_unpackhi_epi16(v, _mm256_setzero_si256());
  } else {
    x = _mm256_srai_epi32(_mm256_unpacklo_epi16(v, v), 16);
    y = _mm256_srai_epi32(_mm256_unpackhi_epi16(v, v), 16);
  }
}
#endif

// 8 consecutive 16-bit elements as two int32 vectors (split16_avx2 in 128 bits).
template <int C, typename T>
RS_INLINE void split16_sse2(const T* p, __m128i& x, __m128i& y) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  constexpr bool u = std::is_same<T, uint16_t>::value;
  if constexpr (C == 1) {
    x = u ? _mm_and_si128(v, _mm_set1_epi32(0xffff)) : _mm_srai_epi32(_mm_slli_epi32(v, 16), 16);
    y = u ? _mm_srli_epi32(v, 16) : _mm_srai_epi32(v, 16);
  } else if (u) {
    x = _mm_unpacklo_epi16(v, _mm_setzero_si128());
    y = _mm_unpackhi_epi16(v, _mm_setzero_si128());
  } else {
    x = _mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16);
    y = _mm_srai_epi32(_mm_unpackhi_epi16(v, v), 16);
  }
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// Elements to skip from p until p is 32-byte aligned, in steps of `step` elements (0 where
// no such step count exists).  A 512-bit load at 16 or 48 bytes past a 64-byte line splits
// one of the two 256-bit halves that AMD Zen 4 loads it as across two lines, and NumPy's
// large arrays start 16 bytes past a page (glibc's mmap chunk header): 1920x1080 float32
// -> 960x540 2x2 cells, kernel alone, one thread, rows in L3: 132-136 us from an aligned
// image, 147-180 us 16 bytes past one, 133-136 with the head cells; whole calls back to
// back, 2 threads: float32 / uint16 one channel 0.91 / 0.92 of before, uint16 4 channels
// 0.97.  (Where the loads are 32 bytes apart per cell, float32 4 channels, no head helps;
// the linear rows' window loads lost 2 % at 16 bytes past a line: not done.)
template <typename T>
inline int64_t split_head(const T* p, int64_t step) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t unit = sizeof(T) * static_cast<uintptr_t>(step);
  for (int64_t k = 0; k < 32; ++k)  // (steps of 24 bytes: 24k = -at mod 32 for some k < 4)
    if (((at + static_cast<uintptr_t>(k) * unit) & 31) == 0) return k;
  return 0;
}

// Four 3-channel 2x2 cells from 32 consecutive elements of a row: the element of each
// output's pixel 0 (pixel = 0) or pixel 1 (pixel = 1), in output order, 12 lanes used.
inline __m512i cells3_lanes(int pixel) {
  return _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 6, 7, 8, 12, 13, 14, 18, 19, 20, 0, 0, 0, 0),
                          _mm512_set1_epi32(3 * pixel));
}
#endif

// resizeAreaFast_'s 2x2 cells of a 16-bit image with 1 or 4 channels in integers: output
// element j = (a + b + c + d + 2) >> 2 of source elements 2j (C = 1: 2j, 2j + 1; C = 4:
// the pixel pair 2j - j % 4 ...) of rows R0 and R1, for j < n; returns where it stopped.
// (The float-lane area2x2_group converts every element; this runs at cv2's speed.)
template <int C, typename T>
inline int64_t area2x2_run16(const T* R0, const T* R1, const int64_t*, int64_t cells, T* D) {
  if constexpr (C == 3) {
    // one cell per 128-bit lane: 16 bytes at its first pixel (the pixels at elements 0-2
    // and 3-5, widened), 4 values stored (the fourth overwritten by the next cell; the
    // caller keeps the last cell and 2 elements past the 16 bytes)
    int64_t d = 0;
    auto sum2 = [](__m128i v) {  // (pixel 0, pixel 1) widened to int32
      const __m128i w = _mm_srli_si128(v, 6);
      if constexpr (std::is_same<T, uint16_t>::value)
        return _mm_add_epi32(_mm_unpacklo_epi16(v, _mm_setzero_si128()),
                             _mm_unpacklo_epi16(w, _mm_setzero_si128()));
      else
        return _mm_add_epi32(_mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16),
                             _mm_srai_epi32(_mm_unpacklo_epi16(w, w), 16));
    };
#if defined(__AVX512F__) && defined(__AVX512BW__)
    // four cells per step: the rows' 32 elements at the first cell widened and added
    // (vertical sums of elements 0-31), then each output's pixel-0 and pixel-1 sums
    // gathered from them by two permutes (cells3_lanes); 12 values narrowed and stored
    // under a mask (the sums fit: no saturation).  Reads 8 elements past the fourth cell,
    // inside the row while a fifth cell follows (the caller's bound gives 2 elements
    // past each cell's 16 bytes).  uint16 1920x1080x3 ->
    // 960x540, 2 threads, back to back, alternating processes: 296-321 -> 183-186 us
    // (cv2 244-250).
    {
      constexpr bool u = std::is_same<T, uint16_t>::value;
      auto widen = [](const T* p) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        return u ? _mm512_cvtepu16_epi32(v) : _mm512_cvtepi16_epi32(v);
      };
      const __m512i first = cells3_lanes(0), second = cells3_lanes(1);
      const __m512i two = _mm512_set1_epi32(2);
      for (; d + 5 <= cells; d += 4) {
        const T* a = R0 + 6 * d;
        const T* b = R1 + 6 * d;
        const __m512i lo = _mm512_add_epi32(widen(a), widen(b));            // elements 0-15
        const __m512i hi = _mm512_add_epi32(widen(a + 16), widen(b + 16));  // 16-31
        const __m512i sum = _mm512_add_epi32(_mm512_permutex2var_epi32(lo, first, hi),
                                             _mm512_permutex2var_epi32(lo, second, hi));
        const __m512i r = _mm512_srai_epi32(_mm512_add_epi32(sum, two), 2);
        if constexpr (u) _mm512_mask_cvtusepi32_storeu_epi16(D + 3 * d, __mmask16(0x0fff), r);
        else _mm512_mask_cvtsepi32_storeu_epi16(D + 3 * d, __mmask16(0x0fff), r);
      }
    }
#endif
#if defined(__AVX2__)
    auto sum2x2 = [](const T* p) {  // two cells, one per lane
      const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + 6),
                                            reinterpret_cast<const __m128i*>(p));
      const __m256i w = _mm256_srli_si256(v, 6);
      if constexpr (std::is_same<T, uint16_t>::value)
        return _mm256_add_epi32(_mm256_unpacklo_epi16(v, _mm256_setzero_si256()),
                                _mm256_unpacklo_epi16(w, _mm256_setzero_si256()));
      else
        return _mm256_add_epi32(_mm256_srai_epi32(_mm256_unpacklo_epi16(v, v), 16),
                                _mm256_srai_epi32(_mm256_unpacklo_epi16(w, w), 16));
    };
    for (; d + 2 <= cells; d += 2) {
      const __m256i r = _mm256_srai_epi32(
          _mm256_add_epi32(_mm256_add_epi32(sum2x2(R0 + 6 * d), sum2x2(R1 + 6 * d)),
                           _mm256_set1_epi32(2)), 2);
      const __m256i q = std::is_same<T, uint16_t>::value ? _mm256_packus_epi32(r, r)
                                                         : _mm256_packs_epi32(r, r);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(D + 3 * d), _mm256_castsi256_si128(q));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(D + 3 * d + 3), _mm256_extracti128_si256(q, 1));
    }
#endif
    for (; d < cells; ++d) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(R0 + 6 * d));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(R1 + 6 * d));
      __m128i r = _mm_srai_epi32(_mm_add_epi32(_mm_add_epi32(sum2(a), sum2(b)),
                                               _mm_set1_epi32(2)), 2);
      if constexpr (std::is_same<T, uint16_t>::value) {
        r = _mm_sub_epi32(r, _mm_set1_epi32(32768));
        r = _mm_xor_si128(_mm_packs_epi32(r, r), _mm_set1_epi16(static_cast<short>(0x8000)));
      } else {
        r = _mm_packs_epi32(r, r);
      }
      _mm_storel_epi64(reinterpret_cast<__m128i*>(D + 3 * d), r);
    }
    return d;
  }
  const int64_t n = cells * C;
  int64_t j = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
  // the first cells one by one until R0's loads are 32-byte aligned (split_head): element
  // j is channel j % C of cell j / C, whose pixels start at element 2j - j % C
  for (const int64_t head = std::min(cells, split_head(R0, 2 * C)) * C; j < head; ++j) {
    const int64_t e = 2 * j - j % C;
    D[j] = static_cast<T>((int32_t(R0[e]) + R0[e + C] + R1[e] + R1[e + C] + 2) >> 2);
  }
  {  // split16_avx2 in 512 bits: 16 outputs per step (uint16 1920x1080x4 -> 960x540, 2
     // threads, back to back, us: 426-553 -> 388-466, cv2 348-521: bound by memory; one
     // channel 64 either way, cv2 66-68)
    constexpr bool u = std::is_same<T, uint16_t>::value;
    auto split = [](const T* p, __mmask32 k, __m512i& x, __m512i& y) {  // k: elements read
      const __m512i v = _mm512_maskz_loadu_epi16(k, p);
      if constexpr (C == 1) {
        x = u ? _mm512_and_si512(v, _mm512_set1_epi32(0xffff))
              : _mm512_srai_epi32(_mm512_slli_epi32(v, 16), 16);
        y = u ? _mm512_srli_epi32(v, 16) : _mm512_srai_epi32(v, 16);
      } else if (u) {
        x = _mm512_unpacklo_epi16(v, _mm512_setzero_si512());
        y = _mm512_unpackhi_epi16(v, _mm512_setzero_si512());
      } else {
        x = _mm512_srai_epi32(_mm512_unpacklo_epi16(v, v), 16);
        y = _mm512_srai_epi32(_mm512_unpackhi_epi16(v, v), 16);
      }
    };
    // outputs j .. j + 15 from the 2m elements of each row there (m < 16: masked)
    auto sums = [&](int64_t j, int64_t m) {
      __m512i a, b, c, d;
      split(R0 + 2 * j, first_lanes<__mmask32>(2 * m), a, b);
      split(R1 + 2 * j, first_lanes<__mmask32>(2 * m), c, d);
      return _mm512_srai_epi32(
          _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a, b), _mm512_add_epi32(c, d)),
                           _mm512_set1_epi32(2)), 2);
    };
    for (; j + 16 <= n; j += 16) {
      const __m512i s = sums(j, 16);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(D + j),
                          u ? _mm512_cvtusepi32_epi16(s) : _mm512_cvtsepi32_epi16(s));
    }
    // the row's last cells under masks (in this build the caller's cells are all the
    // row's full ones)
    if (j < n) {
      const __mmask16 k = first_lanes<__mmask16>(n - j);
      if constexpr (u) _mm512_mask_cvtusepi32_storeu_epi16(D + j, k, sums(j, n - j));
      else _mm512_mask_cvtsepi32_storeu_epi16(D + j, k, sums(j, n - j));
      j = n;
    }
  }
#endif
#if defined(__AVX2__)
  for (; j + 8 <= n; j += 8) {
    __m256i a, b, c, d;
    split16_avx2<C, T>(R0 + 2 * j, a, b);
    split16_avx2<C, T>(R1 + 2 * j, c, d);
    const __m256i s = _mm256_srai_epi32(
        _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d)),
                         _mm256_set1_epi32(2)), 2);
    const __m128i lo = _mm256_castsi256_si128(s), hi = _mm256_extracti128_si256(s, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(D + j), std::is_same<T, uint16_t>::value
                                                            ? _mm_packus_epi32(lo, hi)
                                                            : _mm_packs_epi32(lo, hi));
  }
#endif
  for (; j + 4 <= n; j += 4) {
    __m128i a, b, c, d;
    split16_sse2<C, T>(R0 + 2 * j, a, b);
    split16_sse2<C, T>(R1 + 2 * j, c, d);
    __m128i s = _mm_srai_epi32(_mm_add_epi32(_mm_add_epi32(_mm_add_epi32(a, b), _mm_add_epi32(c, d)),
                                             _mm_set1_epi32(2)), 2);
    if constexpr (std::is_same<T, uint16_t>::value) {  // no packus_epi32 in SSE2
      s = _mm_sub_epi32(s, _mm_set1_epi32(32768));
      s = _mm_xor_si128(_mm_packs_epi32(s, s), _mm_set1_epi16(static_cast<short>(0x8000)));
    } else {
      s = _mm_packs_epi32(s, s);
    }
    _mm_storel_epi64(reinterpret_cast<__m128i*>(D + j), s);
  }
  return j / C;
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
// float32 2x2 cells of 1, 3 or 4 channels, x86-64-v4: 32 consecutive floats of each row
// per step (16, 5 or 4 cells), each cell's two pixels split by shuffles (C = 1), loads
// 3 floats apart (C = 3) or 128-bit lane shuffles (C = 4), in area2x2_group's order,
// where Lane256 gathers a window per pixel.  float32 1920x1080 -> 960x540, 2 threads,
// back to back, alternating processes, us: 1 channel 175 -> 100 (cv2 86-101), 3 channels
// 691 -> 576 (cv2 559-587), 4 channels 861 -> 811 (cv2 747-908: bound by memory).  Every
// cell of [0, n): the last step's loads and stores masked to its cells, which reads and
// writes nothing past them.  (Before, the last 15 cells of a 1-channel row, 3 of a
// 4-channel one, took the generic scalar cell sums: 4 % of the 1-channel call.)
template <int C, bool Resident>
inline int64_t area2x2_f32_avx512(const float* R0, const float* R1, int64_t n, float* D) {
  int64_t d = 0;
  const __m512 q = _mm512_set1_ps(0.25f);
  // the first m of the 32 floats at p in a and b (m < 32: masked loads, which read nothing
  // past them; GCC makes all-lane masks plain loads)
  auto load32 = [](const float* p, int64_t m, __m512& a, __m512& b) {
    a = _mm512_maskz_loadu_ps(first_lanes<__mmask16>(m), p);
    b = _mm512_maskz_loadu_ps(first_lanes<__mmask16>(m - 16), p + 16);
  };
  if constexpr (C == 1) {
    // vshufps splits even and odd pixels within 128-bit lanes (cells 0 1 4 5 | 2 3 6 7 |
    // ...), one vpermpd puts the 16 results in order: two-source vpermt2ps per row instead
    // ran 1.13x slower on AMD Zen 4 (512-bit permutes on 256-bit shuffle units): kernel
    // alone, one thread, rows in L3, 1920x1080 -> 960x540, us: 146-148 -> 128-131 (reading
    // the image alone: 85).
    const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    // the sums of cells d .. d + 15 in order, the loads of m floats (m < 32: masked)
    auto cells = [&](int64_t d, int64_t m) {
      auto pairs = [&](const float* p) {
        __m512 a, b;
        load32(p, m, a, b);
        return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
      };
      const __m512 r = _mm512_mul_ps(_mm512_add_ps(pairs(R0 + 2 * d), pairs(R1 + 2 * d)), q);
      return _mm512_castpd_ps(_mm512_permutexvar_pd(order, _mm512_castps_pd(r)));
    };
    // the first cells one by one until R0's loads are 32-byte aligned (split_head)
    for (const int64_t head = std::min(n, split_head(R0, 2)); d < head; ++d)
      D[d] = ((R0[2 * d] + R0[2 * d + 1]) + (R1[2 * d] + R1[2 * d + 1])) * 0.25f;
    for (; d + 16 <= n; d += 16) _mm512_storeu_ps(D + d, cells(d, 32));
    if (d < n) {
      _mm512_mask_storeu_ps(D + d, first_lanes<__mmask16>(n - d), cells(d, 2 * (n - d)));
      d = n;
    }
  } else if constexpr (C == 4) {
    // the sums of cells d .. d + 3, the loads of m floats (m < 32: masked)
    auto cells = [&](int64_t d, int64_t m) {
      auto pairs = [&](const float* p) {
        __m512 a, b;
        load32(p, m, a, b);
        return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
      };
      return _mm512_mul_ps(_mm512_add_ps(pairs(R0 + 8 * d), pairs(R1 + 8 * d)), q);
    };
    for (; d + 4 <= n; d += 4) _mm512_storeu_ps(D + 4 * d, cells(d, 32));
    if (d < n) {
      _mm512_mask_storeu_ps(D + 4 * d, first_lanes<__mmask16>(4 * (n - d)), cells(d, 8 * (n - d)));
      d = n;
    }
  } else if constexpr (C == 3) {
    // 5 cells per step with one permute: loads 3 floats on put each cell's second pixel
    // under its first, so the sums run in place, then the 15 lanes that start a cell
    // (0-2, 6-8, 12-14 of the first 16 floats, 2-4, 8-10 of the next 16) come together.
    // (Splitting each row's pixels first took four permutes per 4 cells; kernel alone, one
    // thread, rows in L3, 1600x900 -> 800x450: 0.77 -> 0.68 ms.)  Reads 35 floats and
    // stores 16 (the last overwritten by the next step) from cell d: inside the row while
    // two more cells follow (d + 7 <= n: n is the row's full cells).
    alignas(64) static constexpr int32_t kStarts[16] = {0,  1,  2,  6,  7,  8,  12, 13,
                                                        14, 18, 19, 20, 24, 25, 26, 0};
    const __m512i starts = _mm512_load_si512(kStarts);
    const __m512 zero = _mm512_setzero_ps();
    // ((a0 + a1) + b0) + b1, the loads at a and b under mask k, those 3 floats on under k3
    // (as load32's)
    auto sums = [](const float* a, const float* b, __mmask16 k, __mmask16 k3) {
      return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_maskz_loadu_ps(k, a),
                                                       _mm512_maskz_loadu_ps(k3, a + 3)),
                                         _mm512_maskz_loadu_ps(k, b)),
                           _mm512_maskz_loadu_ps(k3, b + 3));
    };
    constexpr __mmask16 kAll = 0xFFFF;
    // r <= 5 cells from cell e in one step: loads masked to their 6r floats, the 3r
    // outputs stored under a mask (the row's first cells before aligned loads, its last)
    auto masked = [&](int64_t e, int64_t r) {
      const float* a = R0 + 6 * e;
      const float* b = R1 + 6 * e;
      auto part = [&](int64_t o, int64_t m) {  // the sums at o of the elements below m
        return sums(a + o, b + o, first_lanes<__mmask16>(m), first_lanes<__mmask16>(m - 3));
      };
      const __m512 sum = _mm512_permutex2var_ps(part(0, 6 * r), starts, part(16, 6 * r - 16));
      _mm512_mask_storeu_ps(D + 3 * e, first_lanes<__mmask16>(3 * r),
                            _mm512_mul_ps(_mm512_add_ps(zero, sum), q));
    };
    // 8 cells (48 floats, 192 bytes of each row) per step: valignd for the loads 3 floats
    // on, two permutes for the 24 outputs.  a3 / b3 (the next step's first loads) reach
    // only lanes of t2 that start no cell, so a step reads nothing past its cells.
    alignas(64) static constexpr int32_t kFirst[16] = {0,  1,  2,  6,  7,  8,  12, 13,
                                                       14, 18, 19, 20, 24, 25, 26, 30};
    alignas(64) static constexpr int32_t kSecond[16] = {15, 16, 20, 21, 22, 26, 27, 28,
                                                        0,  0,  0,  0,  0,  0,  0,  0};
    const __m512i first = _mm512_load_si512(kFirst), second = _mm512_load_si512(kSecond);
    auto on3 = [](__m512 x, __m512 y) {  // lanes 3-15 of x, 0-2 of y
      return _mm512_castsi512_ps(
          _mm512_alignr_epi32(_mm512_castps_si512(y), _mm512_castps_si512(x), 3));
    };
    auto cell_sums = [&](__m512 a, __m512 a_next, __m512 b, __m512 b_next) {
      return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a, on3(a, a_next)), b), on3(b, b_next));
    };
    auto step8 = [&](float* out, __m512 a0, __m512 a1, __m512 a2, __m512 a3, __m512 b0,
                     __m512 b1, __m512 b2, __m512 b3) {
      const __m512 t0 = cell_sums(a0, a1, b0, b1), t1 = cell_sums(a1, a2, b1, b2);
      const __m512 t2 = cell_sums(a2, a3, b2, b3);
      const __m512 lo = _mm512_permutex2var_ps(t0, first, t1);
      const __m512 hi = _mm512_permutex2var_ps(t1, second, t2);
      _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_add_ps(zero, lo), q));
      _mm256_storeu_ps(out + 16, _mm512_castps512_ps256(_mm512_mul_ps(_mm512_add_ps(zero, hi), q)));
    };
    // The 8 cells from e in unaligned loads: a row's first (before the aligned steps) and
    // last (ending at the row's end, rewriting cells done with the same sums).  They
    // replaced masked 5-cell steps (up to three a row; perf put 13 % of a 160-pixel-wide
    // image's samples on one of their masked loads): kernel alone,
    // one thread, 640x640x3 from 16 bytes past a line, us: 80 -> 78-79 (5 without those
    // steps; a plain loop with this traffic: 68); 160x2560x3 100 -> 96.  Whole calls, back
    // to back, A/B, 1 / 2 threads: 224x224 0.98 / 0.98, 320x320 0.96 / 0.96, 640x640 0.98 /
    // 0.98-1.00, 1280x720 0.94 / 0.98, 1920x1080 0.93 / 0.98-1.05.  (The same change in the
    // 1- and 4-channel steps read 0.99-1.02: not made.)
    auto edge8 = [&](int64_t e) {
      const float* a = R0 + 6 * e;
      const float* b = R1 + 6 * e;
      const __m512 a2 = _mm512_loadu_ps(a + 32), b2 = _mm512_loadu_ps(b + 32);
      step8(D + 3 * e, _mm512_loadu_ps(a), _mm512_loadu_ps(a + 16), a2, a2, _mm512_loadu_ps(b),
            _mm512_loadu_ps(b + 16), b2, b2);
    };
    // Images that stay in L3 between calls (Resident: below kResident2x2Bytes) take the
    // steps where both rows' loads can be 32-byte aligned (after at most 3 cells): three
    // aligned loads per row (a fourth, the next step's first, carried).  Reads 64 floats
    // from cell d: inside the row while d + 11 <= n.  Kernel alone, one thread, 224x224x3
    // rows in L2, ns per cell: 0.79-0.94 -> 0.58-0.85; unaligned (rows
    // 220 pixels apart: a 512-bit load 16 bytes past a line splits, split_head) 1.06-1.11
    // -> 1.13-1.16, so those keep the 5-cell steps.  Whole calls, back to back, A/B, 1 / 2
    // threads: 320x320 0.89 / 0.88, 640x480 0.88 / 0.97, 1280x720 (11 MB) 0.89 / 0.90;
    // 1920x1080 (25 MB, from memory) 1.07 / 1.16, so those keep them too (a prefetch 1 KB
    // ahead did not help).
    const auto at = [](const float* p) { return reinterpret_cast<uintptr_t>(p); };
    const int64_t head = Resident ? split_head(R0, 6) : 0;
    if (Resident && (at(R0 + 6 * head) & 31) == 0 && ((at(R1) - at(R0)) & 31) == 0 &&
        head + 11 <= n) {
      if (head > 0) edge8(0);
      d = head;
      __m512 a0 = _mm512_loadu_ps(R0 + 6 * d), b0 = _mm512_loadu_ps(R1 + 6 * d);
      for (; d + 11 <= n; d += 8) {
        const float* a = R0 + 6 * d;
        const float* b = R1 + 6 * d;
        const __m512 a3 = _mm512_loadu_ps(a + 48), b3 = _mm512_loadu_ps(b + 48);
        step8(D + 3 * d, a0, _mm512_loadu_ps(a + 16), _mm512_loadu_ps(a + 32), a3, b0,
              _mm512_loadu_ps(b + 16), _mm512_loadu_ps(b + 32), b3);
        a0 = a3;
        b0 = b3;
      }
    }
    for (; d + 7 <= n; d += 5) {
      const float* a = R0 + 6 * d;
      const float* b = R1 + 6 * d;
      const __m512 sum = _mm512_permutex2var_ps(sums(a, b, kAll, kAll), starts,
                                                sums(a + 16, b + 16, kAll, kAll));
      _mm512_storeu_ps(D + 3 * d, _mm512_mul_ps(_mm512_add_ps(zero, sum), q));
    }
    // the last cells: one 8-cell step ending at the row's end (rewriting cells already done
    // with the same sums), or masked 5-cell steps in rows of fewer than 8 cells (the scalar
    // cell sums these replace took 8-12 % of 224x224x3 -> 112x112: 6 of 112 cells a row)
    if (d < n && n >= 8) {
      edge8(n - 8);
      d = n;
    }
    for (; d < n; d += 5) masked(d, std::min<int64_t>(5, n - d));
  }
  return d;
}
#endif

#if defined(__AVX2__)
// float32 2x2 cells of 1 channel, x86-64-v3: 16 consecutive floats of each row per step
// (8 cells); vshufps splits them into even and odd pixels within 128-bit lanes (cells 0 1
// 4 5 | 2 3 6 7), and one vpermpd puts the 8 results in order: ((a + b) + (c + d)) *
// 0.25f per cell, area2x2_group's sequence, where Lane256 loads and transposes four
// windows per 4 cells.  Reads R0 / R1 [0, 2n).  float32 1920x1080 -> 960x540 linear
// (INTER_AREA's cells), Zen 1 VM, 2 threads, back to back, against Lane256 in one process
// (scripts/checkout_ab.py): 0.361 -> 0.270 ms.
inline int64_t area2x2_f32c1_avx2(const float* R0, const float* R1, int64_t n, float* D) {
  int64_t d = 0;
  const __m256 q = _mm256_set1_ps(0.25f);
  auto pairs = [](const float* p) {
    const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    return _mm256_add_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xDD));
  };
  for (; d + 8 <= n; d += 8) {
    const __m256 r = _mm256_mul_ps(_mm256_add_ps(pairs(R0 + 2 * d), pairs(R1 + 2 * d)), q);
    _mm256_storeu_ps(D + d, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(r), 0xD8)));
  }
  return d;
}
#endif

#if defined(__AVX2__)
// float32 2x2 cells of 3 or 4 channels, x86-64-v3, in area2x2_group's sums (C = 3: 0 +
// (((a + b) + c) + d), C = 4: ((a + b) + (c + d)), times 0.25f) from contiguous loads in
// place of Lane256's window per pixel.  C = 4: two cells a step, each row's pixels 0 and 1
// as 128-bit halves.  C = 3: 8 cells (48 floats of each row, 24 outputs) a step: the
// in-place sums s[x] = ((a[x] + a[x + 3]) + b[x]) + b[x + 3] of 8 floats from bases 0, 6,
// 14, 24, 32 and 37, whose lanes that start a cell (s[6c + ch]) four vpermps and four
// blends bring together: bases chosen so that no step reads past its cells.  The row's last
// step ends at its last cell (rewriting cells done with the same sums); rows of fewer
// than 8 cells are left to the caller.  Reads R0 / R1 [0, 2nC).  AMD Zen 3 VM, 2
// threads, back to back, A/B in one process (medians of 15), against Lane256 / cv2 (IPP):
// C = 3 1920x1080 0.87 / 0.86, 1024x1024 0.79 / 0.85, 640x640 0.77 / 0.84, 224x224 0.69 /
// 0.68; C = 4 (bound by L3 or memory) 1920x1080 0.93 / 0.94-0.99, 640x640 0.94 / 0.99-1.00.
inline int64_t area2x2_f32c3_avx2(const float* R0, const float* R1, int64_t n, float* D) {
  if (n < 8) return 0;
  const __m256 q = _mm256_set1_ps(0.25f), zero = _mm256_setzero_ps();
  const __m256i i0 = _mm256_setr_epi32(0, 1, 2, 0, 1, 2, 6, 7);  // out0: s0-2 | s6-8, 12, 13
  const __m256i i1 = _mm256_setr_epi32(0, 4, 5, 6, 0, 1, 2, 6);  // out1: s14, 18-20 | 24-26, 30
  const __m256i i2 = _mm256_setr_epi32(7, 0, 4, 5, 6, 5, 6, 7);  // out2: s31, 32, 36-38 | 42-44
  auto step = [&](int64_t e) {
    const float* a = R0 + 6 * e;
    const float* b = R1 + 6 * e;
    auto sum = [&](int64_t x) {
      return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(a + x),
                                                       _mm256_loadu_ps(a + x + 3)),
                                         _mm256_loadu_ps(b + x)),
                           _mm256_loadu_ps(b + x + 3));
    };
    auto scaled = [&](__m256 v) { return _mm256_mul_ps(_mm256_add_ps(zero, v), q); };
    const __m256 t0 = sum(0), t6 = sum(6), t14 = sum(14), t24 = sum(24), t32 = sum(32);
    const __m256 t37 = sum(37);
    const __m256 o0 = _mm256_blend_ps(t0, _mm256_permutevar8x32_ps(t6, i0), 0xF8);
    const __m256 o1 = _mm256_blend_ps(_mm256_permutevar8x32_ps(t14, i1),
                                      _mm256_permutevar8x32_ps(t24, i1), 0xF0);
    const __m256 o2 = _mm256_blend_ps(
        _mm256_permutevar8x32_ps(_mm256_blend_ps(t32, t24, 0x80), i2), t37, 0xE0);
    float* out = D + 3 * e;
    _mm256_storeu_ps(out, scaled(o0));
    _mm256_storeu_ps(out + 8, scaled(o1));
    _mm256_storeu_ps(out + 16, scaled(o2));
  };
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) step(d);
  if (d < n) step(n - 8);
  return n;
}

inline int64_t area2x2_f32c4_avx2(const float* R0, const float* R1, int64_t n, float* D) {
  const __m256 q = _mm256_set1_ps(0.25f);
  auto pair = [](const float* p) {  // p0 + p1 of cells p and p + 8
    const __m256 x = _mm256_loadu_ps(p), y = _mm256_loadu_ps(p + 8);
    return _mm256_add_ps(_mm256_permute2f128_ps(x, y, 0x20), _mm256_permute2f128_ps(x, y, 0x31));
  };
  int64_t d = 0;
  for (; d + 2 <= n; d += 2) {
    const float* a = R0 + 8 * d;
    const float* b = R1 + 8 * d;
    const __m256 r = _mm256_add_ps(pair(a), pair(b));
    _mm256_storeu_ps(D + 4 * d, _mm256_mul_ps(r, q));
  }
  if (d < n) {
    const float* a = R0 + 8 * d;
    const float* b = R1 + 8 * d;
    const __m128 r = _mm_add_ps(_mm_add_ps(_mm_loadu_ps(a), _mm_loadu_ps(a + 4)),
                                _mm_add_ps(_mm_loadu_ps(b), _mm_loadu_ps(b + 4)));
    _mm_storeu_ps(D + 4 * d, _mm_mul_ps(r, _mm_set1_ps(0.25f)));
    d = n;
  }
  return d;
}
#endif

// Cells [0, n) of one output row; returns where it stopped.  n leaves room for the
// windows (hwindow) and, for C = 3, for the fourth lane's store (the caller keeps the
// row's last cell), except in area2x2_f32_avx512 and the x86-64-v3 float32 3- and
// 4-channel steps (n: the row's full cells).  Resident:
// the image stays in L3 between calls (area2x2_f32_avx512).
template <int C, typename T, bool Resident = false>
inline int64_t area2x2_run(const T* R0, const T* R1, const int64_t* o0, int64_t n, T* D) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if constexpr (std::is_same<T, float>::value && C != 2)
    return area2x2_f32_avx512<C, Resident>(R0, R1, n, D);  // every cell
  else
#endif
  {
    constexpr int64_t P = hgroup_px(C);
    int64_t d = 0;
#if defined(__AVX2__)
    if constexpr (std::is_same<T, float>::value && C == 3)
      return area2x2_f32c3_avx2(R0, R1, n, D);  // every cell (rows of 8 or more)
    if constexpr (std::is_same<T, float>::value && C == 4)
      return area2x2_f32c4_avx2(R0, R1, n, D);  // every cell
    if constexpr (std::is_same<T, float>::value && C == 1)
      d = area2x2_f32c1_avx2(R0, R1, n, D);
    for (; d + 2 * P <= n; d += 2 * P) area2x2_group<Lane256, C, T>(R0, R1, o0 + d, D + d * C);
#endif
    for (; d + P <= n; d += P) area2x2_group<Lane128, C, T>(R0, R1, o0 + d, D + d * C);
    return d;
  }
}

// Run (area2x2_run or area2x2_run16) over the full rows [dy0, dy1) of 2x2 cells (input
// rows 2dy and 2dy + 1, rs elements apart), each prefetched after a pause (cv_area_fast);
// returns where a row's cells stopped (n alone decides it).  One call a chunk rather than
// one a row: the per-row call through a pointer and cv_area_fast's per-row code cost
// 12-15 ns a row, float32 one channel, kernel alone, one thread, 256x4096 -> 128x2048 from
// 16 bytes past a line, us: 97 -> 73 (a plain loop with the same traffic: 59).  Whole
// calls, float32, back to back, A/B, 1 / 2 threads: 224x224x1 0.84 / 0.96, 224x224x3 0.91
// / 0.96, 1024x1024x1 0.95 / 0.97, 640x640x4 0.95 / 0.96, 640x640x3 0.98 / 0.98, 1920x1080x3
// 1.00 / 0.99.
template <auto Run, typename T>
int64_t area2x2_rows(const T* x, int64_t rs, int64_t dy0, int64_t dy1, const int64_t* o0,
                     int64_t n, T* out, int64_t Lout, bool paused) {
  LinePrefetch pf(paused);
  int64_t stop = 0;
  for (int64_t dy = dy0; dy < dy1; ++dy) {
    const T* R0 = x + 2 * dy * rs;
    pf(R0);
    stop = Run(R0, R0 + rs, o0, n, out + dy * Lout);
  }
  return stop;
}

// The vertical pass of 16-bit images over elements [j, n): linear R0 * b0 + R1 * b1, cubic
// OpenCV's vector order R0 * b0 + (R1 * b1 + (R2 * b2 + R3 * b3)), then saturate_cast
// (round half to even).  Returns where it stopped.  Lane256 takes 16 lanes a step with one
// 256-bit store (store16x2), where 8 lanes and a 128-bit store a step put 30 % of uint16
// 640x480x3 -> 1280x960's vertical pass on the store (perf): AMD Zen 3 VM, 2 threads,
// back to back, A/B in one process, that resize 0.81, 1920x1080x3 -> 1280x720 0.94,
// 640x480x3 -> 224x224 cubic 0.95.
template <class L, int K, typename T>
RS_INLINE int64_t vrun16(const float* const* R, const float* b, int64_t j, int64_t n, T* d) {
  using V = typename L::V;
  constexpr int64_t W = sizeof(V) / sizeof(float);
  V c[K];
  for (int k = 0; k < K; ++k) c[k] = L::set1(b[k]);
  const float* r[K];  // (local: the stores to d would make the compiler reload R[k])
  for (int k = 0; k < K; ++k) r[k] = R[k];
  auto sum = [&](int64_t j) {
    if constexpr (K == 2)
      return L::add(L::mul(L::load(r[0] + j), c[0]), L::mul(L::load(r[1] + j), c[1]));
    const V t = L::add(L::mul(L::load(r[2] + j), c[2]), L::mul(L::load(r[3] + j), c[3]));
    return L::add(L::mul(L::load(r[0] + j), c[0]), L::add(L::mul(L::load(r[1] + j), c[1]), t));
  };
  if constexpr (sizeof(V) == 32)  // Lane256: 16 lanes a step, one store
    for (; j + 2 * W <= n; j += 2 * W) L::template store16x2<T>(sum(j), sum(j + W), d + j);
  for (; j + W <= n; j += W) L::template store16<T>(sum(j), d + j);
  return j;
}
#endif

// Which sums have a vector horizontal pass in this build (float32: SSE2 and up; float64:
// the x86-64-v3 build), and the pass itself for C <= 4 channels and K taps.
#if defined(__AVX2__)
template <typename WT>
constexpr bool kHVec = true;
#elif defined(__SSE2__)
template <typename WT>
constexpr bool kHVec = std::is_same_v<WT, float>;
#else
template <typename WT>
constexpr bool kHVec = false;
#endif

// Steps: the pixel steps (0), the wide float32 ones (kWideSteps, x86-64-v4) or the
// element steps of 16-bit rows (kElemSteps: hrun_elem on x86-64-v4, 3 channels;
// hrun_words on x86-64-v3).
constexpr int kWideSteps = 1, kElemSteps = 2;

template <int C, int K, typename T, int Steps = 0, typename WT = typename FloatPath<T>::WT>
inline int64_t hvec(const T* S, const int64_t* o0, const WT* cw, int64_t cstride, int64_t lo,
                    int64_t hi, const int32_t* perm, bool prefetch, WT* H) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
  if constexpr (Steps == kElemSteps)
    return hrun_elem<C, K, T>(S, o0, cw, cstride, lo, hi, perm, prefetch, H);
#elif defined(__AVX2__)
  if constexpr (Steps == kElemSteps)
    return hrun_words<C, K, T>(&S, cw, cstride, lo, hi, perm, prefetch, &H);
#endif
#if defined(__AVX2__)
  if constexpr (std::is_same_v<WT, double>)
    return hrun64<C, K, T>(S, o0, cw, cstride, lo, hi, prefetch, H);
#endif
#if defined(__SSE2__)
  if constexpr (std::is_same_v<WT, float>)
    return hrun<C, K, T, Steps == kWideSteps>(S, o0, cw, cstride, lo, hi, perm, prefetch, H);
#endif
  return lo;  // (not instantiated where kHVec<WT> is false)
}

#if defined(__AVX2__) && !(defined(__AVX512F__) && defined(__AVX512BW__))
// Two rows at once (ring_apply's hrow2), x86-64-v3, float sums: hvec's pixel steps or
// word steps with each step's offset, index and coefficient loads shared by the rows;
// returns where both stopped (hvec's d).  Never for prefetched images (resize_float's
// hrow2 keeps those one row a step), so `prefetch` is unused.  The horizontal pass of 480
// rows, float32 640x3 -> 224 pixels, one thread: 0.81 of the one-row steps' time; 1920x3
// -> 1280: 0.77 (docs/performance.md, fifty-first session).
template <int C, int K, typename T, int Steps = 0>
inline int64_t hvec2(const T* S0, const T* S1, const int64_t* o0, const float* cw,
                     int64_t cstride, int64_t lo, int64_t hi, const int32_t* perm, bool,
                     float* H0, float* H1) {
  const T* const S[2] = {S0, S1};
  if constexpr (Steps == kElemSteps) {
    float* const H[2] = {H0, H1};
    return hrun_words<C, K, T, 2>(S, cw, cstride, lo, hi, perm, false, H);
  } else {  // hrun's steps in this build
    constexpr int64_t P = hgroup_px(C), Lp = hlanes(C);
    int64_t d = lo;
    if constexpr (C == 3 && K == 2 && std::is_same_v<T, float>) {
      for (; d + 4 <= hi; d += 4) {
        float* const H[2] = {H0 + d * C, H1 + d * C};
        hgroup3x2_rows<K, T, 2>(S, o0 + d, cw + d * Lp, cstride, H);
      }
    }
    for (; d + 2 * P <= hi; d += 2 * P) {
      float* const H[2] = {H0 + d * C, H1 + d * C};
      hgroup_rows<Lane256, C, K, T, 2>(S, o0 + d, cw + d * Lp, cstride, H);
    }
    for (; d + P <= hi; d += P) {
      float* const H[2] = {H0 + d * C, H1 + d * C};
      hgroup_rows<Lane128, C, K, T, 2>(S, o0 + d, cw + d * Lp, cstride, H);
    }
    return d;
  }
}
#endif

// resize_float's tables: per output column its K taps (xo, xa), tap count (xn) and cubic
// border flag (xz); per output row its K source rows (yr) and coefficients (yb); and the
// horizontal pass's choice (one-hot gather, exact 2x windows, or the vector run over
// [f0, f1) with its first-tap offsets o0, coefficient table cw and permute indices perm).
// They depend on the geometry only, so each thread keeps the last call's (thread_plan):
// a loop over frames of one size builds them once.  float32 640x480x3 -> 224x224 linear,
// 2 threads, back to back: the build was 3.6 % of the samples, on the calling thread
// while the other waited (docs/performance.md, twenty-seventh session).
template <typename T>
struct FloatPlan {
  using WT = typename FloatPath<T>::WT;
  using Up2 = int64_t (*)(const T*, int64_t, int64_t, int64_t, float*);
  using HRun = int64_t (*)(const T*, const int64_t*, const WT*, int64_t, int64_t, int64_t,
                           const int32_t*, bool, WT*);
  using HRun2 = int64_t (*)(const T*, const T*, const int64_t*, const WT*, int64_t, int64_t,
                            int64_t, const int32_t*, bool, WT*, WT*);
  // the key: every argument the tables depend on (doubles compared by value: a NaN
  // scale cannot reach here)
  int64_t h = -1, w = -1, C = -1, dh = -1, dw = -1;
  int kind = -1;
  double scale_x = 0, inv_x = 0, scale_y = 0, inv_y = 0;
  int K = 2;
  std::vector<int64_t> xo, yr, hot, o0;
  std::vector<WT> xa, yb, cw;
  std::vector<int8_t> xn, xz;
  std::vector<int32_t> perm;
  Up2 up2 = nullptr;
  HRun run = nullptr;
  HRun2 run2 = nullptr;  // run over two rows at once (hvec2), where the build has it
  int64_t f0 = 0, f1 = 0, cstride = 0;
  // const_stride_steps over sn groups of 4 columns from f0 (x86-64-v3, float32, C = 1),
  // sw: their K weights
  void (*srun)(const float*, int64_t, const float*, float*) = nullptr;
  int64_t sn = 0;
  float sw[4] = {};

  bool same(int64_t h_, int64_t w_, int64_t C_, int64_t dh_, int64_t dw_, int kind_,
            double sx, double ix, double sy, double iy) const {
    return h == h_ && w == w_ && C == C_ && dh == dh_ && dw == dw_ && kind == kind_ &&
           scale_x == sx && inv_x == ix && scale_y == sy && inv_y == iy;
  }
  void build(int64_t h, int64_t w, int64_t C, int64_t dh, int64_t dw, int kind, double sx,
             double ix, double sy, double iy);
};

template <typename T>
void FloatPlan<T>::build(int64_t h_, int64_t w_, int64_t C_, int64_t dh_, int64_t dw_,
                         int kind_, double scale_x_, double inv_x_, double scale_y_,
                         double inv_y_) {
  h = -1;  // (invalid until the build completes: an exception leaves no stale key)
  K = kind_ == kTabCubic ? 4 : 2;
  xo.assign(static_cast<size_t>(dw_ * K), 0);
  yr.assign(static_cast<size_t>(dh_ * K), 0);
  xa.assign(static_cast<size_t>(dw_ * K), WT(0));
  yb.assign(static_cast<size_t>(dh_ * K), WT(0));
  xn.assign(static_cast<size_t>(dw_), 0);
  xz.assign(static_cast<size_t>(dw_), 0);
  int64_t idx[4];
  float c[4];
  for (int64_t d = 0; d < dw_; ++d) {
    gen_taps(d, w_, scale_x_, inv_x_, kind_, true, idx, c);
    for (int k = 0; k < K; ++k) {
      xo[d * K + k] = idx[k] * C_;
      xa[d * K + k] = static_cast<WT>(c[k]);
    }
    // linear: past the last sample one tap (S * 1); cubic: border pixels from 0 + ...
    xn[d] = static_cast<int8_t>(K == 2 && idx[1] == idx[0] ? 1 : K);
    xz[d] = static_cast<int8_t>(K == 4 && !gen_taps_interior(d, w_, scale_x_, inv_x_));
  }
  for (int64_t d = 0; d < dh_; ++d) {
    int64_t sy;
    float fy;
    gen_coord(d, scale_y_, inv_y_, kind_ == kTabAreaLinear, sy, fy);
    float cy[4];
    if (kind_ == kTabCubic) {
      cubic_coeffs_cv(fy, cy);
    } else {
      cy[0] = 1.f - fy;
      cy[1] = fy;
    }
    for (int k = 0; k < K; ++k) {
      yb[d * K + k] = static_cast<WT>(cy[k]);
      yr[d * K + k] = clamp_idx(sy - K / 2 + 1 + k, h_);
    }
  }
  hot.clear();
  if constexpr (std::is_integral_v<T>) {
    if (C_ == 1 || C_ == 3 || C_ == 4)
      hot = one_hot_taps<WT>(xo.data(), xa.data(), K, dw_, 1.f);
    if (C_ == 1 && !hot_stride_ok(hot)) hot.clear();
  }
  up2 = nullptr;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<WT, float>)
    if (K == 2 && C_ <= 4 && up2_rows(xo.data(), xa.data(), w_, C_, dw_)) {
      const Up2 runs[4] = {up2_run<1, T>, up2_run<2, T>, up2_run<3, T>, up2_run<4, T>};
      up2 = runs[C_ - 1];
    }
#endif
  const int64_t Lin = w_ * C_;
  // The vector pass (C <= 4; float64 in the AVX2 build only) takes the run of pixels
  // whose taps are K consecutive source pixels (linear: not clamped; cubic: interior) and
  // whose windows stay inside the row; the few pixels at the edges are scalar.
  f0 = f1 = 0;
  int64_t Lp = 1;
  int64_t reach = 0;  // elements the vector pass reads from a pixel's first tap
  bool pairs = false;  // hpairs3's steps and table
  run = nullptr;
  run2 = nullptr;
  o0.clear();
  cw.clear();
  perm.clear();
  if constexpr (kHVec<WT>) {
    if (C_ <= 4 && hot.empty() && !up2) {
      const HRun runs[2][4] = {{hvec<1, 2, T>, hvec<2, 2, T>, hvec<3, 2, T>, hvec<4, 2, T>},
                               {hvec<1, 4, T>, hvec<2, 4, T>, hvec<3, 4, T>, hvec<4, 4, T>}};
      run = runs[K == 4][C_ - 1];
#if defined(__AVX2__) && !(defined(__AVX512F__) && defined(__AVX512BW__))
      if constexpr (std::is_same_v<WT, float>) {
        const HRun2 runs2[2][4] = {
            {hvec2<1, 2, T>, hvec2<2, 2, T>, hvec2<3, 2, T>, hvec2<4, 2, T>},
            {hvec2<1, 4, T>, hvec2<2, 4, T>, hvec2<3, 4, T>, hvec2<4, 4, T>}};
        run2 = runs2[K == 4][C_ - 1];
      }
#endif
      constexpr bool f32 = std::is_same_v<WT, float>;
      Lp = f32 ? hlanes(C_) : hlanes64(C_);
      reach = f32 ? hwindow(C_, K) : hwindow64(C_, K);
      pairs = cubic_pairs<T>(C_, K);
    }
  }
  if (run) {
    auto fast = [&](int64_t d) {
      return (K == 2 ? xn[d] == 2 : !xz[d]) && xo[d * K] + reach <= Lin;
    };
    while (f0 < dw_ && !fast(f0)) ++f0;
    f1 = f0;
    while (f1 < dw_ && fast(f1)) ++f1;
    o0.resize(static_cast<size_t>(dw_));
    for (int64_t d = 0; d < dw_; ++d) o0[d] = xo[d * K];
#if defined(__AVX512F__) && defined(__AVX512BW__)
    if constexpr (sizeof(T) == 2)
      if (C_ == 3) {  // the element steps where every step fits
        perm = elem_perm_table<3>(o0.data(), f0, f1, Lin, K);
        if (!perm.empty()) {
          run = K == 2 ? hvec<3, 2, T, kElemSteps> : hvec<3, 4, T, kElemSteps>;
          Lp = 3;  // (the table below: one coefficient per element)
        }
      }
#elif defined(__AVX2__)
    if constexpr (sizeof(T) == 2)
      if (C_ == 1 || C_ == 3) {  // the word steps where every step fits
        perm = words_table(o0.data(), f0, f1, Lin, C_, K);
        if (!perm.empty()) {
          const HRun steps[2][2] = {{hvec<1, 2, T, kElemSteps>, hvec<3, 2, T, kElemSteps>},
                                    {hvec<1, 4, T, kElemSteps>, hvec<3, 4, T, kElemSteps>}};
          run = steps[K == 4][C_ == 3];
          const HRun2 steps2[2][2] = {
              {hvec2<1, 2, T, kElemSteps>, hvec2<3, 2, T, kElemSteps>},
              {hvec2<1, 4, T, kElemSteps>, hvec2<3, 4, T, kElemSteps>}};
          run2 = steps2[K == 4][C_ == 3];
          Lp = C_;  // (one coefficient per element)
        }
      }
#endif
    if (quad3_rows<T>(C_, K)) {
      cw = xa;
    } else if (pairs) {
      if constexpr (std::is_same_v<WT, float>) cubic_pairs_table(xa.data(), dw_, cw);
    } else {
      cw.resize(static_cast<size_t>(K * dw_ * Lp));
      for (int64_t d = 0; d < dw_; ++d)
        for (int k = 0; k < K; ++k)
          for (int64_t l = 0; l < Lp; ++l) cw[(k * dw_ + d) * Lp + l] = xa[d * K + k];
    }
    if constexpr (std::is_same_v<WT, float>)
      if (perm_rows<T>(C_, K) && perm.empty()) {
        bool wide = false;
#if defined(__AVX512F__) && defined(__AVX512BW__)
        if constexpr (std::is_same_v<T, float>)
          if (K == 2) {  // the wide steps where every one fits
            perm = perm_table<T>(o0.data(), f0, f1, Lin, K, true);
            wide = !perm.empty() && std::find(perm.begin(), perm.end(), kPermNone) == perm.end();
            if (wide) run = hvec<1, 2, T, kWideSteps>;
          }
#endif
        if (!wide) perm = perm_table<T>(o0.data(), f0, f1, Lin, K);
      }
  }
  srun = nullptr;
  sn = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>)
    if (run && C_ == 1 && f1 - f0 >= 16) {
      const int64_t s = o0[f0 + 1] - o0[f0];
      bool same = s >= 1 && s <= kConstStrideMax && s % 4 != 0;
      for (int64_t d = f0 + 1; same && d < f1; ++d)
        same = o0[d] - o0[d - 1] == s &&
               std::memcmp(&xa[d * K], &xa[f0 * K], sizeof(float) * K) == 0;
      // groups g whose loads [o0[f0] + 4 s g, + 4 loads) lie in the row
      const int64_t room = Lin - o0[f0] - 4 * const_stride_loads(s, K);
      if (same && room >= 0) {
        srun = K == 2 ? const_stride_fn<2>(s) : const_stride_fn<4>(s);
        run2 = nullptr;  // (hrow2 runs only the scalar pixels and run)
        sn = std::min((f1 - f0) / 4, room / (4 * s) + 1);
        std::memcpy(sw, &xa[f0 * K], sizeof(float) * K);
      }
    }
#endif
  cstride = pairs ? 8 * dw_ : dw_ * Lp;
  w = w_, C = C_, dh = dh_, dw = dw_, kind = kind_;
  scale_x = scale_x_, inv_x = inv_x_, scale_y = scale_y_, inv_y = inv_y_;
  h = h_;
}

// Internal linkage (static), so each build of this module (baseline, x86-64-v3, -v4) keeps
// its own plans: a function-local static of an inline function is an STB_GNU_UNIQUE
// symbol, one object for every module in the process, and a plan holds its build's
// function pointers and build-specific tables (hot, perm), which another build loaded in
// the same process (scripts/checkout_ab.py, simd_ab.py) must not run.  tests/test_simd.py
// test_unique_symbols_are_process_wide_state checks every module for such symbols.
template <typename T>
static FloatPlan<T>& thread_plan() {
  static thread_local FloatPlan<T> p;
  return p;
}

template <typename T>
void resize_float(const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, double scale_x,
                  double inv_x, double scale_y, double inv_y, int interp, T* out, int64_t dh,
                  int64_t dw, int nthreads) {
  using WT = typename FloatPath<T>::WT;
  const int kind = interp == kCubic ? kTabCubic : (interp == kArea ? kTabAreaLinear : kTabLinear);
  FloatPlan<T>& plan = thread_plan<T>();
  if (!plan.same(h, w, C, dh, dw, kind, scale_x, inv_x, scale_y, inv_y))
    plan.build(h, w, C, dh, dw, kind, scale_x, inv_x, scale_y, inv_y);
  const int K = plan.K;
  const auto up2 = plan.up2;
  const auto run = plan.run;
  const int64_t f0 = plan.f0, f1 = plan.f1, cstride = plan.cstride;
  const Img<T> img{x, h, w, C, rs};
  const int64_t Lout = dw * C, Lin = w * C;
  // (raw pointers in locals: CPython builds extensions with -fno-strict-aliasing, so a
  // pointer read through a captured vector is reloaded after every store)
  const int64_t* xo_p = plan.xo.data();
  const WT* xa_p = plan.xa.data();
  const int8_t* xn_p = plan.xn.data();
  const int8_t* xz_p = plan.xz.data();
  auto pixel = [=](const T* S, WT* H, int64_t d) {
    const int64_t* o = xo_p + d * K;
    const WT* a = xa_p + d * K;
    const int n = xn_p[d];
    const bool z = xz_p[d] != 0;
    for (int64_t ch = 0; ch < C; ++ch) {
      WT acc = static_cast<WT>(S[o[0] + ch]) * a[0];
      if (z) acc = WT(0) + acc;
      for (int k = 1; k < n; ++k) acc = acc + static_cast<WT>(S[o[k] + ch]) * a[k];
      H[d * C + ch] = acc;
    }
  };
  const int64_t* o0_p = plan.o0.data();
  const WT* cw_p = plan.cw.data();
  const int32_t* perm_p = plan.perm.empty() ? nullptr : plan.perm.data();
  const int64_t* hot_p = plan.hot.empty() ? nullptr : plan.hot.data();
  const auto srun = plan.srun;
  const int64_t sn = plan.sn;
  const float* sw_p = plan.sw;
  const bool prefetch = image_bytes<T>(h, rs) >= kPrefetchImageBytes;
  auto hrow = [=](const T* S, WT* H) {
    if constexpr (std::is_integral_v<T>)
      if (hot_p) {
#if defined(__AVX2__)
        if (C == 1) return hot_stride_row(S, hot_p, Lin, dw, H);
#endif
        return hot_pass(S, hot_p, C, Lin, dw, H);
      }
    if constexpr (std::is_same_v<WT, float>) {
      if (up2) {  // outputs 0 and 1 (source pixel 0) and the tail by the tables
        pixel(S, H, 0);
        pixel(S, H, 1);
        for (int64_t d = 2 * up2(S, 1, w - 1, Lin, H); d < dw; ++d) pixel(S, H, d);
        return;
      }
    }
    int64_t d = 0;
    for (; d < f0; ++d) pixel(S, H, d);
    if (srun) {
      if constexpr (std::is_same_v<T, float>) srun(S + o0_p[f0], sn, sw_p, H + f0);
      d = f0 + 4 * sn;
    }
    if (run) d = run(S, o0_p, cw_p, cstride, d, f1, perm_p, prefetch, H);
    for (; d < dw; ++d) pixel(S, H, d);
  };
  // run2: set only where hrow would take run between scalar pixels.  Prefetched images
  // keep one row at a time: float32 1920x1080x3 -> 1280x720 linear, 2 threads, back to
  // back, ran 1.06 of one-row steps with two (docs/performance.md, fifty-first session).
  const auto run2 = plan.run2;
  auto hrow2 = [=](const T* S0, const T* S1, WT* H0, WT* H1) {
    if (!run2 || prefetch) {
      hrow(S0, H0);
      hrow(S1, H1);
      return;
    }
    int64_t d = 0;
    for (; d < f0; ++d) {
      pixel(S0, H0, d);
      pixel(S1, H1, d);
    }
    for (d = run2(S0, S1, o0_p, cw_p, cstride, d, f1, perm_p, prefetch, H0, H1); d < dw; ++d) {
      pixel(S0, H0, d);
      pixel(S1, H1, d);
    }
  };
  constexpr int64_t lanes = FloatPath<T>::kCubicLanes;
  const WT* yb_p = plan.yb.data();
  auto vrow = [=](const WT* const* R, int64_t yo, T* dst) {
    const WT* b = yb_p + yo * K;
    int64_t j = 0;
    if (K == 2) {
      const WT b0 = b[0], b1 = b[1];
      const WT* S0 = R[0];
      const WT* S1 = R[1];
#if defined(__SSE2__)
      if constexpr (std::is_integral<T>::value) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
        j = vrun16<Lane512, 2, T>(R, b, j, Lout, dst);
#endif
#if defined(__AVX2__)
        j = vrun16<Lane256, 2, T>(R, b, j, Lout, dst);
#endif
        j = vrun16<Lane128, 2, T>(R, b, j, Lout, dst);
      }
#endif
      for (; j < Lout; ++j) dst[j] = store_wt<T, WT>(S0[j] * b0 + S1[j] * b1);
      return;
    }
    const int64_t nv = lanes ? (Lout / lanes) * lanes : 0;
    const WT b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
#if defined(__SSE2__)
    if constexpr (std::is_integral<T>::value) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
      j = vrun16<Lane512, 4, T>(R, b, j, nv, dst);
#endif
#if defined(__AVX2__)
      j = vrun16<Lane256, 4, T>(R, b, j, nv, dst);
#endif
      j = vrun16<Lane128, 4, T>(R, b, j, nv, dst);
    }
#endif
    for (; j < nv; ++j)
      dst[j] = store_wt<T, WT>(R[0][j] * b0 + (R[1][j] * b1 + (R[2][j] * b2 + R[3][j] * b3)));
    for (; j < Lout; ++j)
      dst[j] = store_wt<T, WT>(R[0][j] * b0 + R[1][j] * b1 + R[2][j] * b2 + R[3][j] * b3);
  };
  ring_apply<T, WT>(img, dh, Lout, K, plan.yr.data(), hrow, vrow, out, nthreads, hrow2);
  if (dw + dh > kKeepTables) plan = FloatPlan<T>();  // (large tables are not kept)
}

}  // namespace cvr

template <typename T>
void cv_resize_float(const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, double scale_x,
                     double inv_x, double scale_y, double inv_y, int interp, T* out,
                     int64_t dh, int64_t dw, int nthreads) {
  cvr::resize_float<T>(x, h, w, C, rs, scale_x, inv_x, scale_y, inv_y, interp, out, dh, dw,
                       nthreads);
}

// ------------------------------------------------------------------ INTER_LINEAR_EXACT
namespace cvr {

// resize_bitExact's fixed-point types: uint8 -> ufixedpoint16 (8 fractional bits, the
// vertical sum in 32 bits); uint16 -> ufixedpoint32, int16 -> fixedpoint32 (16 bits,
// vertical sums in 64 bits).
template <typename T>
struct ExactTypes {
  static constexpr int kBits = sizeof(T) == 1 ? 8 : 16;
  using HT = typename std::conditional<sizeof(T) == 1, uint16_t,
                                       typename std::conditional<std::is_signed<T>::value,
                                                                 int32_t, uint32_t>::type>::type;
  using CT = typename std::conditional<sizeof(T) == 1, uint16_t, uint32_t>::type;
  using VT = typename std::conditional<sizeof(T) == 1, uint32_t,
                                       typename std::conditional<std::is_signed<T>::value,
                                                                 int64_t, uint64_t>::type>::type;
};

// interpolationLinear::getCoeffs in IEEE double (softdouble): (index, c0, c1) with
// c1 = cvRound(frac * 2^bits); outputs left of the image (every output for n_in == 1) take
// sample 0, outputs at or past the last sample take it with (2^bits, 0).
inline void exact_coeffs(int64_t d, int64_t n_in, double scale, int bits, int64_t& idx,
                         uint32_t& c0, uint32_t& c1) {
  const uint32_t one = 1u << bits;
  const double fval = scale * (static_cast<double>(d) + 0.5) - 0.5;
  const int64_t ival = floor_i64(fval);
  if (ival >= 0 && n_in > 1) {
    if (ival < n_in - 1) {
      const double f = (fval - static_cast<double>(ival)) * static_cast<double>(one);
      c1 = static_cast<uint32_t>(std::nearbyint(f));
      c0 = one - c1;
      idx = ival;
      return;
    }
    idx = n_in - 1;
  } else {
    idx = 0;
  }
  c0 = one;
  c1 = 0;
}

}  // namespace cvr

namespace cvr {

// The uint8 vertical pass of resize_bitExact: (b0 * H0 + b1 * H1 + 2^15) >> 16, b <= 256
// and H <= 65280 (exact in int32).
#ifdef RS_AVX2
__attribute__((target("avx2"))) inline int64_t exact_v_avx2(const int32_t* S0,
                                                            const int32_t* S1, int32_t b0,
                                                            int32_t b1, int64_t n,
                                                            uint8_t* d) {
  const __m256i vb0 = _mm256_set1_epi32(b0), vb1 = _mm256_set1_epi32(b1);
  const __m256i half = _mm256_set1_epi32(1 << 15);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256i q[2];
    for (int i = 0; i < 2; ++i) {
      const __m256i h0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(S0 + j + 8 * i));
      const __m256i h1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(S1 + j + 8 * i));
      const __m256i v = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(h0, vb0),
                                                          _mm256_mullo_epi32(h1, vb1)), half);
      q[i] = _mm256_srli_epi32(v, 16);
    }
    const __m256i p16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xd8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j),
                     _mm_packus_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1)));
  }
  return j;
}
#endif

inline void exact_u8(const uint8_t* x, int64_t h, int64_t w, int64_t C, int64_t rs,
                     double scale_x, double scale_y, uint8_t* out, int64_t dh, int64_t dw,
                     int nthreads) {
  FixedTables& t = thread_tables();
  t.K = 2;
  t.xo.assign(static_cast<size_t>(2 * dw), 0);
  t.xa.assign(static_cast<size_t>(2 * dw), 0);
  t.yr.assign(static_cast<size_t>(2 * dh), 0);
  t.yb.assign(static_cast<size_t>(2 * dh), 0);
  for (int64_t d = 0; d < dw; ++d) {
    int64_t i;
    uint32_t c0, c1;
    exact_coeffs(d, w, scale_x, 8, i, c0, c1);
    t.xo[2 * d] = i * C;
    t.xo[2 * d + 1] = std::min(i + 1, w - 1) * C;
    t.xa[2 * d] = static_cast<int16_t>(c0);
    t.xa[2 * d + 1] = static_cast<int16_t>(c1);
  }
  pack_pairs(t, C, w * C, dw);
  for (int64_t d = 0; d < dh; ++d) {
    int64_t i;
    uint32_t c0, c1;
    exact_coeffs(d, h, scale_y, 8, i, c0, c1);
    t.yr[2 * d] = i;
    t.yr[2 * d + 1] = std::min(i + 1, h - 1);
    t.yb[2 * d] = static_cast<int16_t>(c0);
    t.yb[2 * d + 1] = static_cast<int16_t>(c1);
  }
  const Img<uint8_t> img{x, h, w, C, rs};
  const int64_t Lout = dw * C;
  const bool avx2 = rsk::use_avx2();
  const auto hrow = fixed_hpass<8>(t, C, w, dw, avx2, fixed_hot<8>(t, C, dw));
  auto vrow = [&](const int32_t* const* rows, int64_t yo, uint8_t* d) {
    const int32_t b0 = t.yb[2 * yo], b1 = t.yb[2 * yo + 1];
    int64_t j = 0;
#ifdef RS_AVX2
    if (avx2) j = exact_v_avx2(rows[0], rows[1], b0, b1, Lout, d);
#endif
    for (; j < Lout; ++j)
      d[j] = saturate_int<uint8_t>((b0 * rows[0][j] + b1 * rows[1][j] + (1 << 15)) >> 16);
  };
  ring_apply<uint8_t, int32_t>(img, dh, Lout, 2, t.yr.data(), std::cref(hrow), vrow, out,
                               nthreads);
  release_tables(t, dw, dh);
}

}  // namespace cvr

template <typename T>
void cv_resize_exact(const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, double scale_x,
                     double scale_y, T* out, int64_t dh, int64_t dw, int nthreads) {
  using namespace cvr;
  if constexpr (std::is_same<T, uint8_t>::value) {
    exact_u8(x, h, w, C, rs, scale_x, scale_y, out, dh, dw, nthreads);
    return;
  }
  using HT = typename ExactTypes<T>::HT;
  using CT = typename ExactTypes<T>::CT;
  using VT = typename ExactTypes<T>::VT;
  constexpr int bits = ExactTypes<T>::kBits;
  std::vector<int64_t> xo0(static_cast<size_t>(dw)), xo1(static_cast<size_t>(dw));
  std::vector<CT> xa(static_cast<size_t>(2 * dw)), yb(static_cast<size_t>(2 * dh));
  std::vector<int64_t> yr(static_cast<size_t>(2 * dh));
  for (int64_t d = 0; d < dw; ++d) {
    int64_t i;
    uint32_t c0, c1;
    exact_coeffs(d, w, scale_x, bits, i, c0, c1);
    xo0[d] = i * C;
    xo1[d] = std::min(i + 1, w - 1) * C;
    xa[2 * d] = static_cast<CT>(c0);
    xa[2 * d + 1] = static_cast<CT>(c1);
  }
  for (int64_t d = 0; d < dh; ++d) {
    int64_t i;
    uint32_t c0, c1;
    exact_coeffs(d, h, scale_y, bits, i, c0, c1);
    yr[2 * d] = i;
    yr[2 * d + 1] = std::min(i + 1, h - 1);
    yb[2 * d] = static_cast<CT>(c0);
    yb[2 * d + 1] = static_cast<CT>(c1);
  }
  const Img<T> img{x, h, w, C, rs};
  const int64_t Lout = dw * C;
  const CT* xa_p = xa.data();  // (locals: see resize_float)
  const int64_t* xo0_p = xo0.data();
  const int64_t* xo1_p = xo1.data();
  const CT* yb_p = yb.data();
  auto hrow = [=](const T* S, HT* Hr) {
    for (int64_t xo = 0; xo < dw; ++xo) {
      const HT a0 = static_cast<HT>(xa_p[2 * xo]), a1 = static_cast<HT>(xa_p[2 * xo + 1]);
      const T* p0 = S + xo0_p[xo];
      const T* p1 = S + xo1_p[xo];
      for (int64_t c = 0; c < C; ++c)
        Hr[xo * C + c] = static_cast<HT>(a0 * static_cast<HT>(p0[c]) + a1 * static_cast<HT>(p1[c]));
    }
  };
  auto vrow = [=](const HT* const* rows, int64_t yo, T* d) {
    const VT b0 = static_cast<VT>(yb_p[2 * yo]), b1 = static_cast<VT>(yb_p[2 * yo + 1]);
    const HT* S0 = rows[0];
    const HT* S1 = rows[1];
    constexpr VT half = VT(1) << (2 * bits - 1);
    for (int64_t j = 0; j < Lout; ++j) {
      const VT v = b0 * static_cast<VT>(S0[j]) + b1 * static_cast<VT>(S1[j]) + half;
      d[j] = saturate_int<T>(static_cast<int64_t>(v >> (2 * bits)));
    }
  };
  ring_apply<T, HT>(img, dh, Lout, 2, yr.data(), hrow, vrow, out, nthreads);
}

// ------------------------------------------------------------------ INTER_AREA, integer scale
namespace cvr {

template <typename T>
struct AreaTypes {  // resizeAreaFast_'s WT and resizeArea_'s WT
  using FastWT = typename std::conditional<
      std::is_same<T, uint8_t>::value, int32_t,
      typename std::conditional<std::is_same<T, double>::value, double, float>::type>::type;
  using WT = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
};

template <typename T>
inline T cast_from(float v) { return saturate_float<T>(v); }

}  // namespace cvr

namespace cvr {

// uint8 2x2 cells of 1, 3 or 4 channels, (a + b + c + d + 2) >> 2 over the first n
// outputs of a row (full cells only): pshufb pairs each output's two bytes, pmaddubsw adds
// them.  Returns how many outputs it wrote (the rest is the caller's scalar loop).
#ifdef RS_AVX2
__attribute__((target("avx2"))) inline int64_t area2x2_u8_avx2(const uint8_t* r0,
                                                               const uint8_t* r1, int64_t C,
                                                               int64_t n, uint8_t* d) {
  const __m256i ones = _mm256_set1_epi8(1), two = _mm256_set1_epi16(2);
  const int z = -1;
  int64_t j = 0;
  if (C == 1 || C == 4) {
    const __m256i m = C == 1 ? _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
                             : _mm256_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15,
                                                0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    for (; j + 16 <= n; j += 16) {  // inputs 2j .. 2j + 31
      const __m256i a = _mm256_shuffle_epi8(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + 2 * j)), m);
      const __m256i b = _mm256_shuffle_epi8(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + 2 * j)), m);
      __m256i v = _mm256_add_epi16(_mm256_maddubs_epi16(a, ones), _mm256_maddubs_epi16(b, ones));
      v = _mm256_srli_epi16(_mm256_add_epi16(v, two), 2);
      const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi16(v, v), 0xd8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j), _mm256_castsi256_si128(p));
    }
    return j;
  }
  // C = 3: 12 input bytes (4 pixels) -> 6 outputs per 128-bit lane
  const __m256i m = _mm256_setr_epi8(0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11, z, z, z, z,
                                     0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11, z, z, z, z);
  for (; j + 14 <= n; j += 12) {  // reads inputs 2j .. 2j + 27, writes d[j .. j + 13]
    const __m256i a = _mm256_shuffle_epi8(
        _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + 2 * j + 12)),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + 2 * j))), m);
    const __m256i b = _mm256_shuffle_epi8(
        _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + 2 * j + 12)),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + 2 * j))), m);
    __m256i v = _mm256_add_epi16(_mm256_maddubs_epi16(a, ones), _mm256_maddubs_epi16(b, ones));
    v = _mm256_srli_epi16(_mm256_add_epi16(v, two), 2);
    const __m256i p = _mm256_packus_epi16(v, v);  // lane: 6 outputs, 2 junk, repeated
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d + j), _mm256_castsi256_si128(p));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d + j + 6), _mm256_extracti128_si256(p, 1));
  }
  return j;
}
#endif

// resizeAreaFast_ on uint8: exact integer sums (vertical sums first, then each cell's
// columns: any order gives the same int), then OpenCV's rules.
inline void area_fast_u8(const uint8_t* x, int64_t h, int64_t w, int64_t C, int64_t rs,
                         int64_t isx, int64_t isy, uint8_t* out, int64_t dh, int64_t dw,
                         int nthreads) {
  const Img<uint8_t> img{x, h, w, C, rs};
  const int64_t area = isx * isy;
  const float scale = 1.f / static_cast<float>(area);
  const int64_t Lout = dw * C;
  const int64_t full_w = std::min(w / isx, dw);
  const int64_t nfull = full_w * C, used = full_w * isx * C;
  const bool int2x2 = isx == 2 && isy == 2 && (C == 1 || C == 3 || C == 4);
  const bool avx2 = rsk::use_avx2();
  // The first call after a pause finds its input evicted and waits on its loads (the
  // stream prefetcher restarts at every 4 KiB page): it prefetches the rows ahead.  A
  // loop of calls does not (its rows come from the cache or the hardware prefetcher).
  // 224x224x3 -> 112x112 after a 20 ms pause, interleaved medians of 41, us, fastops
  // none / ahead / cv2: 134 / 123 / 121; 224x224x4 133 / 124 / 119; 1920x1080x3 -> 960x540
  // 658 / 622 / 1061; back to back, 1920x1080x3 144-154 / 173-174 (hence not there).
  // Asked before threads_for, whose cold check restarts the pause clock.
  const bool paused = after_pause();
  // The 2x2 cells' units (input bytes) are cheap: after a pause one thread beat two, whose
  // wake cost ~135 us (uint8 3-channel halved, interleaved medians of 31, us, 1 / 2
  // threads / cv2: 320x320 115 / 176 / 141, 448x448 136 / 203 / 209, 640x640 178 / 226 /
  // 340); 1920x1080 (6.2M units) runs on two, 578-631 against cv2's 927-1059.
  const int nt = threads_for(rsk::work(double(dh) * double(Lout) * double(area)), nthreads,
                             int2x2 ? 8 : 1);
  const size_t per = static_cast<size_t>(used + kSlack);
  ThreadScratch<int32_t> scratch(int2x2 ? 0 : static_cast<int64_t>(per), nt);
  parallel_for(dh, chunk_for(dh, nt), nt, [&](int64_t dy_lo, int64_t dy_hi, int tid) {
    int32_t* vs = int2x2 ? nullptr : scratch(tid);
    LinePrefetch pf(paused);
    for (int64_t dy = dy_lo; dy < dy_hi; ++dy) {
      uint8_t* D = out + dy * Lout;
      const int64_t sy0 = dy * isy;
      if (sy0 >= h) {
        std::memset(D, 0, static_cast<size_t>(Lout));
        continue;
      }
      const bool full_row = sy0 + isy <= h;
      int64_t nf = 0;  // outputs of full cells written
      if (full_row) pf(img.row(sy0));
      if (full_row && int2x2) {
        const uint8_t* r0 = img.row(sy0);
        const uint8_t* r1 = img.row(sy0 + 1);
        int64_t j = 0;
#ifdef RS_AVX2
        if (avx2) j = area2x2_u8_avx2(r0, r1, C, nfull, D);
#endif
        // the tail, one cell at a time (a division per element was 8 % of a
        // 224x224x3 -> 112x112 call)
        for (int64_t c = j % C, k = (j / C) * 2 * C + c; j < nfull; ++j, ++k) {
          D[j] = static_cast<uint8_t>((r0[k] + r0[k + C] + r1[k] + r1[k + C] + 2) >> 2);
          if (++c == C) c = 0, k += C;
        }
        nf = nfull;
      } else if (full_row) {
        const uint8_t* r = img.row(sy0);
        for (int64_t k = 0; k < used; ++k) vs[k] = r[k];
        for (int64_t yy = 1; yy < isy; ++yy) {
          r = img.row(sy0 + yy);
          for (int64_t k = 0; k < used; ++k) vs[k] += r[k];
        }
        for (int64_t dx = 0; dx < full_w; ++dx)
          for (int64_t c = 0; c < C; ++c) {
            const int32_t* q = vs + dx * isx * C + c;
            int32_t sum = 0;
            for (int64_t i = 0; i < isx; ++i) sum += q[i * C];
            D[dx * C + c] = saturate_float<uint8_t>(static_cast<float>(sum) * scale);
          }
        nf = nfull;
      }
      // cells cut by the image border: saturate((float)sum / count)
      for (int64_t j = nf; j < Lout; ++j) {
        const int64_t dx = j / C, c = j % C, sx0 = dx * isx;
        int32_t sum = 0;
        int64_t count = 0;
        for (int64_t sy = 0; sy < isy && sy0 + sy < h; ++sy) {
          const uint8_t* S = img.row(sy0 + sy);
          for (int64_t sx = 0; sx < isx && sx0 + sx < w; ++sx) {
            sum += S[(sx0 + sx) * C + c];
            ++count;
          }
        }
        D[j] = count ? saturate_float<uint8_t>(static_cast<float>(sum) / static_cast<float>(count))
                     : uint8_t(0);
      }
    }
  });
  (void)avx2;
}

}  // namespace cvr

// resizeAreaFast_: out (dh, dw, C) from integer cells sx x sy.
template <typename T>
void cv_area_fast(const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, int64_t isx,
                  int64_t isy, T* out, int64_t dh, int64_t dw, int nthreads) {
  using namespace cvr;
  if (isx < 1 || isy < 1 || dh == 0 || dw == 0 || C == 0) return;  // (the caller's invariants)
  if constexpr (std::is_same<T, uint8_t>::value) {
    area_fast_u8(x, h, w, C, rs, isx, isy, out, dh, dw, nthreads);
    return;
  }
  using WT = typename AreaTypes<T>::FastWT;
  const Img<T> img{x, h, w, C, rs};
  const int64_t area = isx * isy;
  const float scale = 1.f / static_cast<float>(area);
  const int64_t Lout = dw * C;
  const int64_t full_w = std::min(w / isx, dw);  // cells inside the image horizontally
  const bool int2x2 = isx == 2 && isy == 2 && (C == 1 || C == 3 || C == 4) &&
                      std::is_integral<T>::value;
  // ResizeAreaFastVec_SIMD_32f: 2x2 cells of 1-channel images in groups of 4 outputs and
  // of 4-channel ones: ((a + b) + (c + d)) * 0.25f
  const bool f32x2 = isx == 2 && isy == 2 && std::is_same<T, float>::value && (C == 1 || C == 4);
  const int64_t f32_simd = C == 4 ? full_w : (full_w / 4) * 4;
  // the cell's element offsets from its first element in OpenCV's (row, column) order
  std::vector<int64_t> ofs(static_cast<size_t>(area));
  for (int64_t k = 0; k < area; ++k) ofs[k] = (k / isx) * rs + (k % isx) * C;
  const int64_t* ofs_p = ofs.data();
  // 2x2 cells of float32 / 16-bit images, C <= 4: cells [0, nvec) of full rows in vectors
  // (area2x2_rows)
  using Run2x2 = int64_t (*)(const T*, int64_t, int64_t, int64_t, const int64_t*, int64_t, T*,
                             int64_t, bool);
  Run2x2 run2x2 = nullptr;
  int64_t nvec = 0;
  std::vector<int64_t> o2;
#if defined(__SSE2__)
  if constexpr (std::is_same<T, float>::value || std::is_same<T, uint16_t>::value ||
                std::is_same<T, int16_t>::value) {
    if (isx == 2 && isy == 2 && C <= 4) {
      Run2x2 runs[4] = {area2x2_rows<area2x2_run<1, T>, T>, area2x2_rows<area2x2_run<2, T>, T>,
                        area2x2_rows<area2x2_run<3, T>, T>, area2x2_rows<area2x2_run<4, T>, T>};
#if defined(__AVX512F__) && defined(__AVX512BW__)
      if (std::is_same<T, float>::value && image_bytes<T>(h, rs) < kResident2x2Bytes)
        runs[2] = area2x2_rows<area2x2_run<3, T, true>, T>;  // an image that stays in L3
#endif
      if constexpr (std::is_integral<T>::value) {
        runs[0] = area2x2_rows<area2x2_run16<1, T>, T>;
        runs[2] = area2x2_rows<area2x2_run16<3, T>, T>;
        runs[3] = area2x2_rows<area2x2_run16<4, T>, T>;
      }
      run2x2 = runs[C - 1];
      // float32 cells of 1, 3 or 4 channels and 16-bit ones of 1 or 4 in the x86-64-v4
      // build, float32 ones of 3 or 4 in the x86-64-v3 build: every full one
      // (area2x2_f32_avx512 and area2x2_run16 mask their last step, area2x2_f32c3_avx2
      // ends its last at the row's last cell); else loads inside the row: 2dC + hw <= w *
      // C (16 bytes per cell for 16-bit C = 3)
      bool every_cell = false;
#if defined(__AVX512F__) && defined(__AVX512BW__)
      every_cell = std::is_same<T, float>::value ? C != 2 : C == 1 || C == 4;
#elif defined(__AVX2__)
      every_cell = std::is_same<T, float>::value && (C == 3 || C == 4);
#endif
      if (every_cell) {
        nvec = full_w;
      } else {
        const int64_t hw = std::is_integral<T>::value && C == 3 ? 8 : hwindow(C, 2);
        nvec = std::min(full_w, w * C >= hw ? (w * C - hw) / (2 * C) + 1 : 0);
        if (C == 3) nvec = std::min(nvec, dw - 1);
      }
      // float32 one-channel cells past f32_simd take OpenCV's scalar sum order, which the
      // vector steps (from any first cell: split_head) must not reach
      if (f32x2 && C == 1) nvec = std::min(nvec, f32_simd);
      o2.resize(static_cast<size_t>(std::max<int64_t>(nvec, 0)));
      for (int64_t d = 0; d < nvec; ++d) o2[d] = 2 * d * C;
    }
  }
#endif
  const int64_t* o2_p = o2.data();
  const bool paused = after_pause();  // rows prefetched after a pause, as area_fast_u8
  const int nt = threads_for(rsk::work(double(dh) * double(Lout) * double(area)), nthreads);
  const int64_t full_dh = std::min(dh, h / isy);  // rows of cells inside the image
  parallel_for(dh, chunk_for(dh, nt), nt, [&](int64_t dy_lo, int64_t dy_hi, int) {
    // the vector cells of the chunk's full rows, then what they leave row by row
    const int64_t vec_hi = run2x2 ? std::max(dy_lo, std::min(dy_hi, full_dh)) : dy_lo;
    const int64_t vec_stop =
        vec_hi > dy_lo ? run2x2(x, rs, dy_lo, vec_hi, o2_p, nvec, out, Lout, paused) : 0;
    if (vec_hi == dy_hi && vec_stop >= full_w && full_w == dw) return;
    LinePrefetch pf(paused);
    for (int64_t dy = dy_lo; dy < dy_hi; ++dy) {
      T* D = out + dy * Lout;
      const int64_t sy0 = dy * isy;
      if (sy0 >= h) {
        for (int64_t j = 0; j < Lout; ++j) D[j] = T(0);
        continue;
      }
      const bool full_row = sy0 + isy <= h;
      const int64_t nfull = full_row ? full_w : 0;
      const int64_t dx0 = dy < vec_hi ? vec_stop : 0;
      if (full_row && dy >= vec_hi) pf(img.row(sy0));
      for (int64_t dx = dx0; dx < nfull; ++dx) {
        const int64_t sx0 = dx * isx;
        for (int64_t c = 0; c < C; ++c) {
          const T* S = img.row(sy0) + sx0 * C + c;
          T* d = D + dx * C + c;
          if (int2x2) {
            const T* S1 = img.row(sy0 + 1) + sx0 * C + c;
            const int64_t s = static_cast<int64_t>(S[0]) + S[C] + S1[0] + S1[C];
            *d = static_cast<T>((s + 2) >> 2);
            continue;
          }
          if (f32x2 && dx < f32_simd) {
            const T* S1 = img.row(sy0 + 1) + sx0 * C + c;
            *d = static_cast<T>(((S[0] + S[C]) + (S1[0] + S1[C])) * 0.25f);
            continue;
          }
          // sum += S[ofs[k]] + S[ofs[k+1]] + S[ofs[k+2]] + S[ofs[k+3]], ofs in (row, col)
          // order; element sums in int for 8/16-bit types (exact), in T for float types
          WT sum = WT(0);
          int64_t k = 0;
          using ET = typename std::conditional<std::is_floating_point<T>::value, T, int32_t>::type;
          for (; k + 4 <= area; k += 4)
            sum += static_cast<WT>(((static_cast<ET>(S[ofs_p[k]]) + static_cast<ET>(S[ofs_p[k + 1]])) +
                                    static_cast<ET>(S[ofs_p[k + 2]])) + static_cast<ET>(S[ofs_p[k + 3]]));
          for (; k < area; ++k) sum += static_cast<WT>(S[ofs_p[k]]);
          if constexpr (std::is_same<T, double>::value)
            *d = sum * static_cast<double>(scale);
          else
            *d = store_wt<T, float>(static_cast<float>(sum) * scale);
        }
      }
      // cells cut by the image border: saturate((float)sum / count)
      for (int64_t dx = nfull; dx < dw; ++dx) {
        const int64_t sx0 = dx * isx;
        for (int64_t c = 0; c < C; ++c) {
          using SWT = typename std::conditional<std::is_same<T, uint8_t>::value, int32_t, WT>::type;
          SWT sum = SWT(0);
          int64_t count = 0;
          for (int64_t sy = 0; sy < isy && sy0 + sy < h; ++sy) {
            const T* S = img.row(sy0 + sy);
            for (int64_t sx = 0; sx < isx && sx0 + sx < w; ++sx) {
              sum += static_cast<SWT>(S[(sx0 + sx) * C + c]);
              ++count;
            }
          }
          D[dx * C + c] = count ? cast_from<T>(static_cast<float>(sum) / static_cast<float>(count))
                                : T(0);
        }
      }
    }
  });
}

namespace cvr {

// A source row in float (exact for 8/16-bit values).
template <typename T>
inline void to_float(const T* S, int64_t n, float* dst) {
  int64_t j = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same<T, uint8_t>::value) {
    const __m128i z = _mm_setzero_si128();
    for (; j + 16 <= n; j += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(S + j));
      const __m128i lo = _mm_unpacklo_epi8(b, z), hi = _mm_unpackhi_epi8(b, z);
      _mm_storeu_ps(dst + j, _mm_cvtepi32_ps(_mm_unpacklo_epi16(lo, z)));
      _mm_storeu_ps(dst + j + 4, _mm_cvtepi32_ps(_mm_unpackhi_epi16(lo, z)));
      _mm_storeu_ps(dst + j + 8, _mm_cvtepi32_ps(_mm_unpacklo_epi16(hi, z)));
      _mm_storeu_ps(dst + j + 12, _mm_cvtepi32_ps(_mm_unpackhi_epi16(hi, z)));
    }
  }
#endif
  for (; j < n; ++j) dst[j] = static_cast<float>(S[j]);
}

// buf[xo * C + c] = 0 + S[f * C + c] * a0 + S[(f + 1) * C + c] * a1 + ... (OpenCV's order):
// C <= 4 with one 4-lane vector per pixel (srcf and buf have 4 values of slack).
inline void area_hrow(const float* srcf, const int64_t* fx, const int64_t* cx, const float* wx,
                      int64_t Kx, int64_t C, int64_t dw, float* buf) {
#if defined(__SSE2__)
  if (C <= 4) {
    for (int64_t xo = 0; xo < dw; ++xo) {
      const float* a = wx + xo * Kx;
      const float* sp = srcf + fx[xo] * C;
      const int64_t n = cx[xo];
      __m128 b = _mm_setzero_ps();
      for (int64_t t = 0; t < n; ++t)
        b = _mm_add_ps(b, _mm_mul_ps(_mm_loadu_ps(sp + t * C), _mm_set1_ps(a[t])));
      _mm_storeu_ps(buf + xo * C, b);
    }
    return;
  }
#endif
  for (int64_t xo = 0; xo < dw; ++xo) {
    const float* a = wx + xo * Kx;
    const float* sp = srcf + fx[xo] * C;
    const int64_t n = cx[xo];
    for (int64_t c = 0; c < C; ++c) {
      float b = 0.f;
      for (int64_t t = 0; t < n; ++t) b = b + sp[t * C + c] * a[t];
      buf[xo * C + c] = b;
    }
  }
}

// d = saturate_cast<T>(acc) (round half to even), in vectors (clamped first, as the
// passes' stores: the values of an area mean lie in T's range all the same).  The 16-bit
// stores were scalar: 40 % of uint16 1920x1080x4 -> 640x640 INTER_AREA's samples (perf).
template <typename T>
inline void store_rounded(const float* acc, int64_t n, T* d) {
  int64_t j = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 2) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
    for (; j + 16 <= n; j += 16) Lane512::store16<T>(_mm512_loadu_ps(acc + j), d + j);
#endif
#if defined(__AVX2__)
    for (; j + 8 <= n; j += 8) Lane256::store16<T>(_mm256_loadu_ps(acc + j), d + j);
#endif
    for (; j + 4 <= n; j += 4) store4_16<T>(_mm_loadu_ps(acc + j), d + j);
  }
  if constexpr (std::is_same<T, uint8_t>::value) {
    const __m128 lo = _mm_setzero_ps(), hi = _mm_set1_ps(255.f);
    auto q = [&](int64_t k) {
      return _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(_mm_loadu_ps(acc + k), lo), hi));
    };
    for (; j + 16 <= n; j += 16) {
      const __m128i a = _mm_packs_epi32(q(j), q(j + 4));
      const __m128i b = _mm_packs_epi32(q(j + 8), q(j + 12));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j), _mm_packus_epi16(a, b));
    }
  }
#endif
  for (; j < n; ++j) d[j] = saturate_float<T>(acc[j]);
}

}  // namespace cvr

// resizeArea_ for integer images (float32 sums): tables in resample's layout (first,
// count, weights) from cv_area_table.  Per output row: for each of its source
// rows, buf = sum_x S * alpha (taps in order), then acc = beta0 * buf0 + beta1 * buf1 + ...
// Source rows shared by two output rows are resized once per stripe (a ring of Ky rows).
template <typename T>
void cv_area(const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, const int64_t* fy,
             const int64_t* cy, const float* wy, int64_t Ky, const int64_t* fx,
             const int64_t* cx, const float* wx, int64_t Kx, T* out, int64_t dh, int64_t dw,
             int nthreads) {
  using namespace cvr;
  const Img<T> img{x, h, w, C, rs};
  const int64_t Lout = dw * C, Lin = w * C;
  if (dh == 0 || Lout == 0) return;
  const int64_t R = std::max<int64_t>(Ky, 1);
  const int nt = threads_for(
      rsk::work(double(Lout) * (double(h) * double(Kx) * 2 + double(dh) * double(R))), nthreads);
  const int64_t stripe = stripe_rows(dh, nt);
  const int64_t stripes = (dh + stripe - 1) / stripe;
  const size_t row_len = static_cast<size_t>(Lout + kSlack);
  const size_t per = row_len * static_cast<size_t>(R + 1) + static_cast<size_t>(Lin + kSlack);
  ThreadScratch<float> scratch(static_cast<int64_t>(per), nt);
  ThreadScratch<int64_t> tags(R, nt);
  // pixels whose taps are all inside [0, w - 1] (always, by construction; checked)
  std::vector<int64_t> fxc(static_cast<size_t>(dw)), cxc(static_cast<size_t>(dw));
  for (int64_t d = 0; d < dw; ++d) {
    const int64_t f = clamp_idx(fx[d], w);
    fxc[d] = f;
    cxc[d] = std::max<int64_t>(0, std::min(std::min(cx[d], Kx), w - f));
  }
  parallel_for(stripes, 1, nt, [&](int64_t s_lo, int64_t s_hi, int tid) {
    float* ring = scratch(tid);
    float* acc = ring + row_len * static_cast<size_t>(R);
    float* srcf = acc + row_len;
    int64_t* tag = tags(tid);
    for (int64_t s = s_lo; s < s_hi; ++s) {
      for (int64_t k = 0; k < R; ++k) tag[k] = -1;
      const int64_t y0 = s * stripe, y1 = std::min(dh, y0 + stripe);
      for (int64_t yo = y0; yo < y1; ++yo) {
        const int64_t f = clamp_idx(fy[yo], h);
        const int64_t cnt = std::max<int64_t>(0, std::min(std::min(cy[yo], R), h - f));
        for (int64_t k = 0; k < cnt; ++k) {
          const int64_t y = f + k;
          const int64_t sl = y % R;
          float* buf = ring + static_cast<size_t>(sl) * row_len;
          if (tag[sl] != y) {
            // the source row in float (exact for 8/16-bit values), then the taps
            to_float(img.row(y), Lin, srcf);
            area_hrow(srcf, fxc.data(), cxc.data(), wx, Kx, C, dw, buf);
            tag[sl] = y;
          }
          const float beta = wy[yo * Ky + k];
          if (k == 0) {
            for (int64_t j = 0; j < Lout; ++j) acc[j] = beta * buf[j];
          } else {
            for (int64_t j = 0; j < Lout; ++j) acc[j] = acc[j] + beta * buf[j];
          }
        }
        T* d = out + yo * Lout;
        if (cnt == 0) {
          for (int64_t j = 0; j < Lout; ++j) d[j] = T(0);
        } else {
          store_rounded<T>(acc, Lout, d);
        }
      }
    }
  });
}

// ------------------------------------------------------------------ flat entry points
inline void cv_nn_table(int64_t n_in, int64_t n_out, double ifx, bool exact, int64_t* idx) {
  cvr::nn_table(n_in, n_out, ifx, exact, idx);
}

// cv2's image types, computed as they are (float16 goes through float32 in fastops.cv)
template <typename T>
constexpr bool cv_image_type = std::is_same_v<T, uint8_t> || std::is_same_v<T, uint16_t> ||
                               std::is_same_v<T, int16_t> || std::is_floating_point_v<T>;

inline bool cv_resize_takes(int typenum) {
  bool ok = false;
  visit_real(typenum, [&](auto t) { ok = cv_image_type<decltype(t)>; });
  return ok;
}

// cv_resize.pyx fast_resize's entry: an image of NumPy type `typenum` (false, nothing
// run, unless cv_resize_takes it) whose rows of w * C contiguous elements lie rs elements
// apart; isx > 0: resizeAreaFast_ with isx x isy cells, else the separable filter
// `interp` (fixed point for uint8).
inline bool cv_resize_rows(int typenum, const void* x, int64_t h, int64_t w, int64_t C,
                           int64_t rs, int interp, double sx, double inv_x, double sy,
                           double inv_y, int64_t isx, int64_t isy, void* out, int64_t dh,
                           int64_t dw, int nthreads) {
  bool done = false;
  visit_real(typenum, [&](auto t) {
    using T = decltype(t);
    if constexpr (cv_image_type<T>) {
      const T* xs = static_cast<const T*>(x);
      T* o = static_cast<T*>(out);
      if (interp == 0 || interp == 6) {  // INTER_NEAREST(_EXACT): a gather of the bits
        std::vector<int64_t> fh(static_cast<size_t>(dh)), fw(static_cast<size_t>(dw));
        cvr::nn_table(h, dh, sy, interp == 6, fh.data());
        cvr::nn_table(w, dw, sx, interp == 6, fw.data());
        visit_word(sizeof(T), [&](auto u) {
          using U = decltype(u);
          const rsk::View5<U> v{reinterpret_cast<const U*>(xs), 1, h, 1, w, C, h * rs, rs, 0,
                                C, 1};
          nearest2d<U>(v, fh.data(), dh, fw.data(), dw, reinterpret_cast<U*>(o), nthreads);
        });
      } else if (isx > 0) {
        cv_area_fast<T>(xs, h, w, C, rs, isx, isy, o, dh, dw, nthreads);
      } else if constexpr (std::is_same_v<T, uint8_t>) {
        cv_resize_fixed(xs, h, w, C, rs, sx, inv_x, sy, inv_y, interp, o, dh, dw, nthreads);
      } else {
        cv_resize_float<T>(xs, h, w, C, rs, sx, inv_x, sy, inv_y, interp, o, dh, dw, nthreads);
      }
      done = true;
    }
  });
  return done;
}

template <typename W>
void cv_area_table(int64_t n_in, int64_t n_out, double scale, int64_t K, int64_t* first,
                   int64_t* count, W* weights, int nthreads) {
  const int nt = threads_for(n_out * 64, nthreads);
  parallel_for(n_out, chunk_for(n_out, nt), nt, [&](int64_t d_lo, int64_t d_hi, int) {
    for (int64_t d = d_lo; d < d_hi; ++d) cvr::area_row<W>(d, n_in, scale, K, first, count, weights);
  });
}

}  // namespace fastops
