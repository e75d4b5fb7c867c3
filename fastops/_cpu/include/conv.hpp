// Depthwise convolution (groups == C == M: one KH x KW filter per channel), the Conv of
// MobileNet-style backbones run by fastops.onnx.Session.  Through im2col + GEMM it would
// be C one-row GEMMs; through NumPy, one short-row multiply-add pass per tap (9-25
// passes whose inner loops are a feature-map row: 46 ms of the frcnn detector's 150).
//
// Each work item is one (image, channel) plane: it is copied once into the thread's
// zero-padded scratch, so the taps need no bounds logic, and each block of outputs of a
// row accumulates its taps in row-major order in registers:
//   y = x_t0 * w_t0;  y = y + x_t * w_t (t = 1 .. KH*KW-1);  y = y + b
// the sequence the NumPy form computed, so results did not change bits when this
// kernel replaced it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "common.hpp"
#include "parallel.hpp"

namespace fastops {

// Activations a Session fuses into the Conv or Gemm before them (fastops/onnx/
// _packed_gemm.py ACT), computed as the unfused NumPy kernels do (fastops/onnx/_std.py),
// so fusing does not change bits: Relu is np.maximum(v, 0) (NaN kept, -0 -> +0),
// HardSwish is v * clip(v * float(1/6) + 0.5, 0, 1) with NaN propagated through the clip.
// Per value, GCC compiles HardSwish's clip to two branches (it skips the multiply where
// the clip gives 1), which mispredict on real data: 4-8x the depthwise convolution's own
// time.  Blocks of values go through avx_act or dw_hardswish instead.
enum ConvAct : int { kActNone = 0, kActRelu = 1, kActHardSwish = 2 };

// The element type of a scalar T or of a GCC vector T.
template <typename T, typename = void>
struct LaneOf {
  typedef T type;
};
template <typename T>
struct LaneOf<T, std::void_t<decltype(std::declval<T>()[0])>> {
  typedef std::remove_cv_t<std::remove_reference_t<decltype(std::declval<T>()[0])>> type;
};

// On a value or on each lane of a vector of values (depthwise_lanes): the same compares
// and selects either way.  The clip is std::min(std::max(t, 0), 1) written as selects
// (max(t, 0) is t < 0 ? 0 : t, min(t, 1) is 1 < t ? 1 : t): a NaN t stays.
template <typename T>
inline T conv_act(T v, int act) {
  typedef typename LaneOf<T>::type E;
  const T zero = T{}, one = zero + E(1);
  if (act == kActRelu) {
    const T r = v > zero ? v : zero;
    return v != v ? v : r;
  }
  if (act == kActHardSwish) {
    T t = v * static_cast<E>(1.0 / 6.0);
    t = t + E(0.5);
    t = t < zero ? zero : t;
    t = one < t ? one : t;
    return v * t;
  }
  return v;
}

#if defined(__AVX2__)
// A mask of the lanes i of 8 with lo <= i < hi (for maskload / maskstore).
inline __m256i lanes_between(int64_t lo, int64_t hi) {
  const __m256i i = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const auto clamp = [](int64_t v) {
    return static_cast<int>(std::min<int64_t>(std::max<int64_t>(v, -1), 8));
  };
  const __m256i l = _mm256_set1_epi32(clamp(lo)), h = _mm256_set1_epi32(clamp(hi));
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(l, i), _mm256_cmpgt_epi32(h, i));
}
#endif

#if defined(__AVX__)
// conv_act on 8 floats: max(v, 0) gives +0 for -0, NaN lanes keep v (Relu); max/min(c,
// t) return t where t is NaN (HardSwish's clip).
inline __m256 avx_act(__m256 v, int act) {
  const __m256 zero = _mm256_setzero_ps();
  if (act == kActRelu)
    return _mm256_blendv_ps(_mm256_max_ps(v, zero), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  if (act == kActHardSwish) {
    __m256 t = _mm256_mul_ps(v, _mm256_set1_ps(static_cast<float>(1.0 / 6.0)));
    t = _mm256_add_ps(t, _mm256_set1_ps(0.5f));
    t = _mm256_min_ps(_mm256_set1_ps(1.f), _mm256_max_ps(zero, t));
    return _mm256_mul_ps(v, t);
  }
  return v;
}
#endif

// Outputs per register block: two vectors of the build's width (GCC/Clang vector
// extensions: 64 bytes with AVX-512, as the x86-64-v4 build has, 32 with AVX, else 16; a
// 32-byte vector on SSE2 goes through memory, 8x slower).  Each block's sums stay in
// registers across all taps.  (Plain loops over a 16-element array were unrolled into
// scalar code by GCC 11: 2.5x slower on 64x160x208, 3x3.)  Rows of at most kDwNarrowMaxOW
// outputs take 32-byte vectors in the AVX-512 build: a 13-wide row computed 32 outputs
// per block (frcnn's 960-channel 5x5 on 10 x 13, 2 threads: 0.16 -> 0.21 ms), while
// wider rows gain 10-20 % (672-channel 5x5 on 20 x 26 0.31 -> 0.25, 16-channel 3x3 on
// 160 x 208 0.18 -> 0.155).  Lanes are independent sums: the width changes no bits.
#if defined(__AVX512F__)
constexpr int kDwVecBytes = 64;
#elif defined(__AVX__)
constexpr int kDwVecBytes = 32;
#else
constexpr int kDwVecBytes = 16;
#endif
constexpr int kDwNarrowBytes = kDwVecBytes < 32 ? kDwVecBytes : 32;
constexpr int64_t kDwNarrowMaxOW = 16;
template <typename T, int Bytes = kDwVecBytes>
struct DwVec {
  typedef T type __attribute__((vector_size(Bytes)));
  static constexpr int64_t lanes = Bytes / sizeof(T);
};
constexpr int64_t kDwVecs = 2;
constexpr int kDwRows = 4;  // output rows per register block (dw_block)

template <typename T, int Bytes = kDwVecBytes>
inline typename DwVec<T, Bytes>::type dw_load(const T* p) {
  typename DwVec<T, Bytes>::type v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Stride-2 phase split of one row: input columns [x0, x1) (contiguous) to padded
// columns x + pad_l, even ones to seg0, odd ones to seg1 at index column / 2; pairs
// of vectors are de-interleaved with one shuffle each.
template <typename T, int Bytes>
inline void dw_split2(const T* s, int64_t x0, int64_t x1, int64_t pad_l, T* seg0, T* seg1) {
  typedef typename DwVec<T, Bytes>::type V;
  constexpr int64_t L = DwVec<T, Bytes>::lanes;
  int64_t xx = x0;
  if ((xx + pad_l) & 1) {  // a first column of odd phase
    seg1[(xx + pad_l) >> 1] = s[xx];
    ++xx;
  }
  typedef decltype(V{} < V{}) Idx;
  Idx even{}, odd{};
  for (int64_t i = 0; i < L; ++i) {
    even[i] = 2 * i;
    odd[i] = 2 * i + 1;
  }
  for (; xx + 2 * L <= x1; xx += 2 * L) {
    const V a = dw_load<T, Bytes>(s + xx), b = dw_load<T, Bytes>(s + xx + L);
    const V e = __builtin_shuffle(a, b, even), o = __builtin_shuffle(a, b, odd);
    const int64_t k = (xx + pad_l) >> 1;
    std::memcpy(seg0 + k, &e, sizeof(V));
    std::memcpy(seg1 + k, &o, sizeof(V));
  }
  for (; xx < x1; ++xx) {
    const int64_t col = xx + pad_l;
    (col & 1 ? seg1 : seg0)[col >> 1] = s[xx];
  }
}

// d[0, n) = s[0, n) in vectors, the last one overlapping the one before: a short row's
// copy was a libc memmove call (GCC's loop-to-memcpy), 15 % of the 960-channel 5x5
// depthwise layer on 10 x 13.
template <typename T, int Bytes>
inline void copy_row_in(const T* s, int64_t n, T* d) {
  typedef typename DwVec<T, Bytes>::type V;
  constexpr int64_t L = DwVec<T, Bytes>::lanes;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V v = dw_load<T, Bytes>(s + i);
    std::memcpy(d + i, &v, sizeof(V));
  }
  if (i < n) {
    const V v = dw_load<T, Bytes>(s + n - L);
    std::memcpy(d + n - L, &v, sizeof(V));
  }
}
template <typename T>
inline void copy_row(const T* s, int64_t n, T* d) {
  if (n >= DwVec<T>::lanes) {
    copy_row_in<T, kDwVecBytes>(s, n, d);
  } else if (n >= DwVec<T, kDwNarrowBytes>::lanes) {
    copy_row_in<T, kDwNarrowBytes>(s, n, d);
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
  }
}

// Columns [x0, x1) of the row s (element stride sxW) into the phase-split padded row d:
// column c = x + pad_l at segment c % stride_w (segments WS apart), index c / stride_w;
// other columns are left as they are.  Stride 1 is the plain padded row.  Stride 2
// de-interleaves in vectors of the build's width, narrower ones for rows too short for
// a pair of those (a 26-wide row went through the scalar loop: two thirds of the
// 672-channel 5x5 stride-2 layer's time).
template <typename T>
inline void split_row(const T* s, int64_t sxW, int64_t x0, int64_t x1, int64_t pad_l,
                      int64_t stride_w, int64_t WS, T* d) {
  if (stride_w == 1 && sxW == 1) {
    copy_row(s + x0, x1 - x0, d + x0 + pad_l);
  } else if (stride_w == 1) {
    for (int64_t xx = x0; xx < x1; ++xx) d[xx + pad_l] = s[xx * sxW];
  } else if (stride_w == 2 && sxW == 1) {
    if (x1 - x0 >= 4 * DwVec<T>::lanes)
      dw_split2<T, kDwVecBytes>(s, x0, x1, pad_l, d, d + WS);
    else
      dw_split2<T, kDwNarrowBytes>(s, x0, x1, pad_l, d, d + WS);
  } else {  // one phase segment at a time, no division per element
    for (int64_t ph = 0; ph < stride_w; ++ph) {
      int64_t col = x0 + pad_l;
      col += ((ph - col) % stride_w + stride_w) % stride_w;  // first of this phase
      T* seg = d + ph * WS;
      for (int64_t k = col / stride_w; col < x1 + pad_l; col += stride_w, ++k)
        seg[k] = s[(col - pad_l) * sxW];
    }
  }
}

// The phase-split, zero-padded rows split_row writes (depthwise_conv2d's planes,
// conv_rows' bands): padded columns [0, WP) as stride_w segments of WS columns, rows RS
// apart; input columns [x0, x1) lie inside.
struct PhaseRows {
  int64_t WS, RS, x0, x1;
  PhaseRows(int64_t W, int64_t WP, int64_t stride_w, int64_t pad_l)
      : WS((WP + stride_w - 1) / stride_w),
        RS(size_mul(WS, stride_w)),
        x0(std::min(W, std::max<int64_t>(0, -pad_l))),
        x1(std::max(x0, std::min(W, WP - pad_l))) {}
  // Tap (i, j)'s offset from its output's first padded row, row-major: output ox reads
  // padded column ox * stride_w + j * dil_w, at segment index ox + (j * dil_w) / stride_w.
  std::vector<int64_t> tap_offsets(int64_t KH, int64_t KW, int64_t dil_h, int64_t dil_w,
                                   int64_t stride_w) const {
    std::vector<int64_t> toff(static_cast<size_t>(KH * KW));
    for (int64_t i = 0; i < KH; ++i)
      for (int64_t j = 0; j < KW; ++j) {
        const int64_t cj = j * dil_w;
        toff[i * KW + j] = i * dil_h * RS + (cj % stride_w) * WS + cj / stride_w;
      }
    return toff;
  }
};

// Bias and HardSwish on a register block, its first nb values stored to dst: in AVX
// registers in the x86-64-v3 and -v4 float builds (a row's last block with masked
// stores: through a stack copy, GCC made the copy a memmove call, 16 % of the
// 240-channel 3x3 layer on 40 x 52, and a vector copy of the fresh stack stores stalled
// on store forwarding); elsewhere in split loops (so that GCC emits compares and blends,
// not the branches a per-value conv_act compiles to).
template <typename V, typename T>
inline void dw_hardswish(V a0, V a1, T b, bool has_bias, T* dst, int64_t nb) {
  static_assert(kDwVecs == 2, "two vectors per block");
#if defined(__AVX512F__)
  // 64-byte blocks in zmm, avx_act's operations per lane: the 8-float pieces took as
  // many instructions as the 9 taps (240 channels 3x3 on 40 x 52)
  if constexpr (std::is_same<T, float>::value && sizeof(V) == 64) {
    __m512 v[2];
    std::memcpy(&v[0], &a0, sizeof(V));
    std::memcpy(&v[1], &a1, sizeof(V));
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.f);
    for (int i = 0; i < 2 && 16 * i < nb; ++i) {
      if (has_bias) v[i] = _mm512_add_ps(v[i], _mm512_set1_ps(b));
      __m512 t = _mm512_mul_ps(v[i], _mm512_set1_ps(static_cast<float>(1.0 / 6.0)));
      t = _mm512_add_ps(t, _mm512_set1_ps(0.5f));
      // (the maskz forms: GCC 12 warns of _mm512_max_ps's undefined pass-through here)
      t = _mm512_maskz_min_ps(0xffff, one, _mm512_maskz_max_ps(0xffff, zero, t));
      const __m512 r = _mm512_mul_ps(v[i], t);
      if (nb >= 16 * (i + 1))
        _mm512_storeu_ps(dst + 16 * i, r);
      else
        _mm512_mask_storeu_ps(dst + 16 * i, first_lanes<__mmask16>(nb - 16 * i), r);
    }
    return;
  }
#endif
#if defined(__AVX2__)
  if constexpr (std::is_same<T, float>::value && sizeof(V) == 32) {
    __m256 v[2];
    std::memcpy(&v[0], &a0, sizeof(V));
    std::memcpy(&v[1], &a1, sizeof(V));
    for (int i = 0; i < 2 && 8 * i < nb; ++i) {
      if (has_bias) v[i] = _mm256_add_ps(v[i], _mm256_set1_ps(b));
      const __m256 r = avx_act(v[i], kActHardSwish);
      if (nb >= 8 * (i + 1))
        _mm256_storeu_ps(dst + 8 * i, r);
      else
        _mm256_maskstore_ps(dst + 8 * i, lanes_between(0, nb - 8 * i), r);
    }
    return;
  }
#endif
  constexpr int64_t N = 2 * int64_t(sizeof(V) / sizeof(T));
  T v[N], t[N];
  std::memcpy(v, &a0, sizeof(V));
  std::memcpy(v + N / 2, &a1, sizeof(V));
  if (has_bias)
    for (int64_t k = 0; k < N; ++k) v[k] = v[k] + b;
  for (int64_t k = 0; k < N; ++k) t[k] = v[k] * static_cast<T>(1.0 / 6.0) + T(0.5);
  for (int64_t k = 0; k < N; ++k) t[k] = std::max(t[k], T(0));
  for (int64_t k = 0; k < N; ++k) t[k] = std::min(t[k], T(1));
  for (int64_t k = 0; k < nb; ++k) dst[k] = v[k] * t[k];
}

// One block of outputs in each of R output rows: `in` points at the first row's first
// output in the phase-split padded plane (see below), row r at in + r * rstep, toff/wt
// the taps' offsets and weights.  Each output's sum is a chain of dependent adds, one
// per tap; R rows make 2R independent chains (one row: a chain's add latency, not the
// adder's throughput, set the pace: 13-25 GFLOP/s on one core).
template <int R, int Bytes, typename T>
inline void dw_block(const T* in, int64_t rstep, const int64_t* toff, const T* wt,
                     int64_t taps, typename DwVec<T, Bytes>::type (&acc)[R][kDwVecs]) {
  static_assert(kDwVecs == 2, "two vectors per block");
  constexpr int64_t L = DwVec<T, Bytes>::lanes;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc[r][0] = dw_load<T, Bytes>(in + r * rstep + toff[0]) * wt[0];
    acc[r][1] = dw_load<T, Bytes>(in + r * rstep + toff[0] + L) * wt[0];
  }
  for (int64_t t = 1; t < taps; ++t) {
    const T wv = wt[t];
    const T* p = in + toff[t];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      acc[r][0] = acc[r][0] + dw_load<T, Bytes>(p + r * rstep) * wv;
      acc[r][1] = acc[r][1] + dw_load<T, Bytes>(p + r * rstep + L) * wv;
    }
  }
}

// Bias and activation on a block's sums, stored to the nb (<= block) outputs at dst.
template <int Bytes, typename T>
inline void dw_store(const typename DwVec<T, Bytes>::type (&acc)[kDwVecs], T b,
                     bool has_bias, int act, T* dst, int64_t nb) {
  constexpr int64_t block = kDwVecs * DwVec<T, Bytes>::lanes;
  // HardSwish on the registers (dw_hardswish, straight to dst); no
  // activation or Relu per value (GCC vectorizes that loop; the register form
  // measured 10-20 % slower for them)
  if (act == kActHardSwish) {
    dw_hardswish(acc[0], acc[1], b, has_bias, dst, nb);
  } else {
    T sums[block];
    std::memcpy(sums, acc, sizeof(sums));
    if (has_bias) {
      for (int64_t k = 0; k < nb; ++k) dst[k] = conv_act(sums[k] + b, act);
    } else {
      for (int64_t k = 0; k < nb; ++k) dst[k] = conv_act(sums[k], act);
    }
  }
}

// The output rows [oy0, oy1) of one plane, R at a time.
template <int R, int Bytes, typename T>
inline void dw_rows(const T* pp, int64_t RS, int64_t stride_h, const int64_t* toff,
                    const T* wt, int64_t taps, T b, bool has_bias, int act, T* o,
                    int64_t OW, int64_t oy0, int64_t oy1) {
  constexpr int64_t block = kDwVecs * DwVec<T, Bytes>::lanes;
  typename DwVec<T, Bytes>::type acc[R][kDwVecs];
  for (int64_t oy = oy0; oy + R <= oy1; oy += R)
    for (int64_t ox0 = 0; ox0 < OW; ox0 += block) {
      dw_block<R, Bytes>(pp + oy * stride_h * RS + ox0, stride_h * RS, toff, wt, taps, acc);
      const int64_t nb = std::min(block, OW - ox0);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
        dw_store<Bytes>(acc[r], b, has_bias, act, o + (oy + r) * OW + ox0, nb);
    }
}

// v[r][k] -> v[k][r] for the L vectors of L lanes at v: log2(L) stages, each swapping one
// bit of the row index with the same bit of the lane index by two-source shuffles with
// constant masks (vpermt2ps with AVX-512: L log2(L) of them).
template <typename Idx, int L, int D, int... K>
constexpr Idx dw_swap_mask(std::integer_sequence<int, K...>, bool high) {
  typedef std::remove_reference_t<decltype(Idx{}[0])> E;
  return Idx{static_cast<E>(high ? ((K & D) ? L + K : K + D) : ((K & D) ? L + K - D : K))...};
}

template <typename T, typename V, int D = 1>
inline void dw_transpose(V* v) {
  constexpr int L = sizeof(V) / sizeof(T);
  typedef decltype(V{} < V{}) Idx;
  constexpr Idx lo = dw_swap_mask<Idx, L, D>(std::make_integer_sequence<int, L>{}, false);
  constexpr Idx hi = dw_swap_mask<Idx, L, D>(std::make_integer_sequence<int, L>{}, true);
#pragma GCC unroll 16
  for (int i = 0; i < L; ++i)
    if (!(i & D)) {
      const V a = v[i], b = v[i + D];
      v[i] = __builtin_shuffle(a, b, lo);
      v[i + D] = __builtin_shuffle(a, b, hi);
    }
  if constexpr (2 * D < L) dw_transpose<T, V, 2 * D>(v);
}

// Depthwise with the channels in the vector lanes, for planes whose rows are short: a
// plane per item (depthwise_conv2d) spends a block of 2 vectors on each output row
// whatever its width (a 13-wide row left 3 of 16 lanes idle, in narrower vectors).  Here
// an item is a group of L channels (L the build's lanes): their planes are transposed
// into the thread's zero-padded tile (pixel-major, a pixel's L channels in one vector),
// each output pixel's sums take the taps in depthwise_conv2d's order (so no bit changes),
// kDwPixels pixels of a row at a time, and the sums go back to the planes through the
// same transpose.
constexpr int64_t kDwPixels = 8;

template <int P, typename T, typename V>
inline void dw_pixels(const T* tile, int64_t step, const int64_t* toff, const V* wv,
                      int64_t taps, V bv, bool has_bias, int act, V* dst) {
  V acc[P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p)
    acc[p] = dw_load<T, sizeof(V)>(tile + p * step + toff[0]) * wv[0];
  for (int64_t t = 1; t < taps; ++t) {
    const V w = wv[t];
    const T* q = tile + toff[t];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[p] = acc[p] + dw_load<T, sizeof(V)>(q + p * step) * w;
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) dst[p] = conv_act(has_bias ? acc[p] + bv : acc[p], act);
}

// dw_pixels for n (0 <= n <= P) pixels, P a compile-time bound.
template <int P, typename T, typename V>
inline void dw_pixels_n(int64_t n, const T* tile, int64_t step, const int64_t* toff,
                        const V* wv, int64_t taps, V bv, bool has_bias, int act, V* dst) {
  if constexpr (P > 0) {
    if (n == P) return dw_pixels<P>(tile, step, toff, wv, taps, bv, has_bias, act, dst);
    dw_pixels_n<P - 1>(n, tile, step, toff, wv, taps, bv, has_bias, act, dst);
  }
}

// The first n (0 < n <= lanes) values at p as a vector, the rest 0; and the first n lanes
// of v to p: masked loads and stores where the build has them (a variable-length memcpy
// became rep movsq, 3x the whole kernel's time), else lane by lane.
template <typename V, typename T>
inline V dw_load_n(const T* p, int64_t n) {
  constexpr int64_t L = sizeof(V) / sizeof(T);
  V v;
  if (n == L) {
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64 && std::is_same<T, float>::value) {
    const __m512 r = _mm512_maskz_loadu_ps(first_lanes<__mmask16>(n), p);
    std::memcpy(&v, &r, sizeof(V));
    return v;
  } else if constexpr (sizeof(V) == 64 && std::is_same<T, double>::value) {
    const __m512d r = _mm512_maskz_loadu_pd(first_lanes<__mmask8>(n), p);
    std::memcpy(&v, &r, sizeof(V));
    return v;
  }
#endif
  v = V{};
  for (int64_t k = 0; k < n; ++k) v[k] = p[k];
  return v;
}

template <typename V, typename T>
inline void dw_store_n(T* p, V v, int64_t n) {
  constexpr int64_t L = sizeof(V) / sizeof(T);
  if (n == L) {
    std::memcpy(p, &v, sizeof(V));
    return;
  }
#if defined(__AVX512F__)
  if constexpr (sizeof(V) == 64 && std::is_same<T, float>::value) {
    __m512 r;
    std::memcpy(&r, &v, sizeof(V));
    _mm512_mask_storeu_ps(p, first_lanes<__mmask16>(n), r);
    return;
  } else if constexpr (sizeof(V) == 64 && std::is_same<T, double>::value) {
    __m512d r;
    std::memcpy(&r, &v, sizeof(V));
    _mm512_mask_storeu_pd(p, first_lanes<__mmask8>(n), r);
    return;
  }
#endif
  for (int64_t k = 0; k < n; ++k) p[k] = v[k];
}

// d[p * L + c] = src[c * sc + p] for p < n, c < cn (lanes c >= cn: 0): cn rows of n
// contiguous values interleaved, L x L blocks at a time.
template <typename T, typename V>
inline void dw_interleave(const T* src, int64_t sc, int64_t cn, int64_t n, T* d) {
  constexpr int64_t L = sizeof(V) / sizeof(T);
  for (int64_t x = 0; x < n; x += L) {
    const int64_t cnt = std::min(L, n - x);
    V v[L];
#pragma GCC unroll 16
    for (int64_t c = 0; c < L; ++c) v[c] = c < cn ? dw_load_n<V>(src + c * sc + x, cnt) : V{};
    dw_transpose<T>(v);
    for (int64_t p = 0; p < cnt; ++p) std::memcpy(d + (x + p) * L, &v[p], sizeof(V));
  }
}

// dw_interleave's inverse: the n pixels of ot (pixel-major, L lanes each) into cn rows
// of out, plane_out apart.
template <typename T, typename V>
inline void dw_deinterleave(const V* ot, int64_t n, int64_t cn, int64_t plane_out, T* out) {
  constexpr int64_t L = sizeof(V) / sizeof(T);
  for (int64_t q = 0; q < n; q += L) {
    const int64_t cnt = std::min(L, n - q);
    V v[L];
    for (int64_t p = 0; p < L; ++p) v[p] = p < cnt ? ot[q + p] : V{};
    dw_transpose<T>(v);
    for (int64_t c = 0; c < cn; ++c) dw_store_n(out + c * plane_out + q, v[c], cnt);
  }
}

template <typename T>
void depthwise_lanes(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN,
                     int64_t sxC, int64_t sxH, int64_t sxW, const T* w, int64_t KH, int64_t KW,
                     int64_t swC, int64_t swH, int64_t swW, const T* bias, int64_t sb,
                     int64_t stride_h, int64_t stride_w, int64_t pad_t, int64_t pad_l,
                     int64_t dil_h, int64_t dil_w, T* out, int64_t OH, int64_t OW, int act,
                     int nthreads) {
  typedef typename DwVec<T>::type V;
  constexpr int64_t L = DwVec<T>::lanes;
  const int64_t HP = (OH - 1) * stride_h + (KH - 1) * dil_h + 1;
  const int64_t WP = (OW - 1) * stride_w + (KW - 1) * dil_w + 1;
  const int64_t taps = KH * KW, groups_c = (C + L - 1) / L, items = N * groups_c;
  const int64_t plane_out = OH * OW;
  const int nt = threads_for(work_product(work_product(N * C, plane_out), taps + 1) +
                                 work_product(N * C, size_mul(HP, WP)),
                             nthreads);
  std::vector<int64_t> toff(static_cast<size_t>(taps)), woff(static_cast<size_t>(taps));
  for (int64_t i = 0; i < KH; ++i)
    for (int64_t j = 0; j < KW; ++j) {
      toff[i * KW + j] = (i * dil_h * WP + j * dil_w) * L;   // from a pixel's first tap
      woff[i * KW + j] = i * swH + j * swW;
    }
  const bool dense_w = swW == 1 && swH == KW;   // a channel's taps contiguous
  const int64_t y0 = std::max<int64_t>(0, -pad_t), y1 = std::min(H, HP - pad_t);
  const int64_t xa = std::max<int64_t>(0, -pad_l), xb = std::min(W, WP - pad_l);
  // per thread: the padded input tile (zeroed once: items write only the input's pixels),
  // the output tile, the taps' weight vectors and the bias vector
  ThreadScratch<T> tiles(size_mul(size_mul(HP, WP), L), nt);
  ThreadScratch<V> outs(plane_out, nt, false), wvs(taps + 1, nt, false);
  parallel_for(items, chunk_for(items, nt), nt, [&](int64_t lo, int64_t hi, int tid) {
    T* tile = tiles(tid);
    V* ot = outs(tid);
    V* wv = wvs(tid);
    const int64_t* to = toff.data();
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / groups_c, c0 = item % groups_c * L;
      const int64_t cn = std::min(L, C - c0);
      const T* src = x + n * sxN + c0 * sxC;
      for (int64_t y = y0; y < y1; ++y) {
        T* d = tile + ((y + pad_t) * WP + pad_l) * L;
        if (sxW == 1) {
          dw_interleave<T, V>(src + y * sxH + xa, sxC, cn, xb - xa, d + xa * L);
        } else {
          for (int64_t c = 0; c < cn; ++c)
            for (int64_t xx = xa; xx < xb; ++xx)
              d[xx * L + c] = src[c * sxC + y * sxH + xx * sxW];
        }
      }
      T* wl = reinterpret_cast<T*>(wv);
      if (dense_w) {
        dw_interleave<T, V>(w + c0 * swC, swC, cn, taps, wl);
      } else {
        for (int64_t c = 0; c < L; ++c)
          for (int64_t t = 0; t < taps; ++t)
            wl[t * L + c] = c < cn ? w[(c0 + c) * swC + woff[t]] : T(0);
      }
      for (int64_t c = 0; c < L; ++c)
        wl[taps * L + c] = bias && c < cn ? bias[(c0 + c) * sb] : T(0);
      const int64_t step = stride_w * L;
      const V bv = wv[taps];
      const bool has_bias = bias != nullptr;
      for (int64_t oy = 0; oy < OH; ++oy) {
        const T* row = tile + oy * stride_h * WP * L;
        V* orow = ot + oy * OW;
        int64_t ox = 0;
        for (; ox + kDwPixels <= OW; ox += kDwPixels)
          dw_pixels<kDwPixels>(row + ox * step, step, to, wv, taps, bv, has_bias, act, orow + ox);
        // the rest as one block: P sums in flight (pairs and a single ran at their add
        // chains' latency, more than the 8-pixel block took)
        dw_pixels_n<kDwPixels - 1>(OW - ox, row + ox * step, step, to, wv, taps, bv, has_bias,
                                   act, orow + ox);
      }
      dw_deinterleave<T, V>(ot, plane_out, cn, plane_out, out + (n * C + c0) * plane_out);
    }
  });
}

// Where depthwise_lanes runs instead of a plane per item: the AVX-512 build (64-byte
// vectors: its planes' rows of at most kDwNarrowMaxOW take 32-byte ones), at least one
// whole group of channels, rows of at most 32 outputs, and 5x5 kernels in float32 (3x3
// ones: 9 taps do not pay for the transposes) or any kernel in float64.  Harness, 2
// threads, us, planes / lanes: float32 960 channels 5x5 on 10 x 13 158 / 74, 672 5x5
// stride 2 on 20 x 26 161 / 80, 184 3x3 on 20 x 26 35 / 49, 120 5x5 on 40 x 52 160 /
// 150, 72 5x5 stride 2 on 80 x 104 137 / 199; float64 184 3x3 on 20 x 26 139 / 67, 240
// 3x3 stride 2 on 40 x 52 268 / 204; the x86-64-v3 build's 8 lanes gained nothing (960
// 5x5: 156 / 140, 184 3x3: 46 / 69).  The padded tile (HP x WP pixels of L lanes) stays
// within kDwLanesMaxTile bytes, in L2: a tall image would otherwise take a tile 16x its
// plane per thread.
constexpr int64_t kDwLanesMaxTile = int64_t(1) << 20;

template <typename T>
constexpr bool dw_lanes_pay(int64_t C, int64_t taps, int64_t OW, int64_t HP, int64_t WP) {
  constexpr int64_t pixel = DwVec<T>::lanes * static_cast<int64_t>(sizeof(T));
  return kDwVecBytes == 64 && C >= DwVec<T>::lanes && OW <= 32 &&
         (taps >= 25 || sizeof(T) == 8) && WP <= kDwLanesMaxTile / pixel &&
         HP <= kDwLanesMaxTile / (WP * pixel);
}

// x (N, C, H, W) and w (C, 1, KH, KW) with any element strides, bias (C,) or null, act a
// ConvAct applied after the bias, out C-contiguous (N, C, OH, OW) with N, C, OH, OW, KH,
// KW >= 1 and H, W >= 0.  pad_t, pad_l: the top/left zero padding; the padded plane spans
// every tap of every output.
//
// Phase split: each padded row is stored as stride_w segments of WS columns, padded
// column c at segment c % stride_w, index c / stride_w.  Output ox of tap column j
// reads padded column ox * stride_w + j * dil_w: segment (j * dil_w) % stride_w, index
// ox + (j * dil_w) / stride_w, so every tap's loads are contiguous in ox whatever the
// stride (stride 1: the plain padded row).
template <typename T>
void depthwise_conv2d(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN,
                      int64_t sxC, int64_t sxH, int64_t sxW, const T* w, int64_t KH,
                      int64_t KW, int64_t swC, int64_t swH, int64_t swW, const T* bias,
                      int64_t sb, int64_t stride_h, int64_t stride_w, int64_t pad_t,
                      int64_t pad_l, int64_t dil_h, int64_t dil_w, T* out, int64_t OH,
                      int64_t OW, int act, int nthreads) {
  const int64_t HP = (OH - 1) * stride_h + (KH - 1) * dil_h + 1;
  const int64_t WP = (OW - 1) * stride_w + (KW - 1) * dil_w + 1;
  if (dw_lanes_pay<T>(C, KH * KW, OW, HP, WP))
    return depthwise_lanes(x, N, C, H, W, sxN, sxC, sxH, sxW, w, KH, KW, swC, swH, swW, bias,
                           sb, stride_h, stride_w, pad_t, pad_l, dil_h, dil_w, out, OH, OW, act,
                           nthreads);
  const PhaseRows pr(W, WP, stride_w, pad_l);
  const int64_t WS = pr.WS, RS = pr.RS, x0 = pr.x0, x1 = pr.x1;
  const int64_t taps = KH * KW;
  const int64_t planes = N * C;
  const int64_t plane_out = OH * OW;
  const int nt = threads_for(work_product(work_product(planes, plane_out), taps + 1) +
                                 work_product(planes, size_mul(HP, RS)),
                             nthreads);
  const std::vector<int64_t> toff = pr.tap_offsets(KH, KW, dil_h, dil_w, stride_w);
  // the rows of the input inside the padded plane
  const int64_t y0 = std::max<int64_t>(0, -pad_t), y1 = std::min(H, HP - pad_t);
  const int64_t plane_pad = size_mul(HP, RS);
  const int64_t block = kDwVecs * DwVec<T>::lanes;  // the widest
  const int64_t scratch = size_add(plane_pad, block);  // slack: a block may run past
  const bool narrow = OW <= kDwNarrowMaxOW;
  // Zeroed here, once: a plane writes only the input's rows and columns, so the padding
  // and the slack stay 0 for every plane a thread runs.  (Zeroed at the top of the body,
  // which runs per chunk, with chunks of one plane, this was most of the kernel's time
  // on 2 threads: docs/onnx.md, "Depthwise, again".)
  ThreadScratch<T> pads(scratch, nt), weights(taps, nt);
  parallel_for(planes, chunk_for(planes, nt), nt, [&](int64_t lo, int64_t hi, int tid) {
    T* pp = pads(tid);
    T* wt = weights(tid);
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / C, c = item % C;
      const T* src = x + n * sxN + c * sxC;
      for (int64_t y = y0; y < y1; ++y) {
        split_row(src + y * sxH, sxW, x0, x1, pad_l, stride_w, WS, pp + (y + pad_t) * RS);
      }
      for (int64_t i = 0; i < KH; ++i)
        for (int64_t j = 0; j < KW; ++j) wt[i * KW + j] = w[c * swC + i * swH + j * swW];
      const T b = bias ? bias[c * sb] : T(0);
      T* o = out + item * plane_out;
      const int64_t whole = OH / kDwRows * kDwRows;
      const auto rows = [&](auto bytes) {  // whole groups of kDwRows rows, then the rest
        constexpr int B = decltype(bytes)::value;
        dw_rows<kDwRows, B>(pp, RS, stride_h, toff.data(), wt, taps, b, bias != nullptr, act,
                            o, OW, 0, whole);
        dw_rows<1, B>(pp, RS, stride_h, toff.data(), wt, taps, b, bias != nullptr, act, o,
                      OW, whole, OH);
      };
      if (narrow)
        rows(std::integral_constant<int, kDwNarrowBytes>{});
      else
        rows(std::integral_constant<int, kDwVecBytes>{});
    }
  });
}

// ------------------------------------------------------------------ im2col
// cols (N, C * KH * KW, OH * OW) contiguous, row (c, i, j) = x[n][c] sampled at
// (oy * stride_h - pad_t + i * dil_h, ox * stride_w - pad_l + j * dil_w), 0 outside: the
// right operand of an im2col convolution.  Per output row, the columns inside the image
// are one contiguous range (found once per tap), memcpy'd at unit strides; parallel over
// (image, channel).  frcnn's 256 x 10 x 13 3x3 layer: 0.16 ms (NumPy's strided-window
// copy 0.27); its RGB stem: 0.28 ms on 2 threads (0.53).
template <typename T>
void im2col(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN,
            int64_t sxC, int64_t sxH, int64_t sxW, int64_t KH, int64_t KW, int64_t stride_h,
            int64_t stride_w, int64_t pad_t, int64_t pad_l, int64_t dil_h, int64_t dil_w,
            T* cols, int64_t OH, int64_t OW, int nthreads) {
  const int64_t P = OH * OW, taps = KH * KW;
  const int nt = threads_for(work_product(N * C * taps, P), nthreads);
  parallel_for(N * C, 1, nt, [&](int64_t lo, int64_t hi, int) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / C, c = item % C;
      const T* src = x + n * sxN + c * sxC;
      T* dst = cols + item * taps * P;
      for (int64_t i = 0; i < KH; ++i)
        for (int64_t j = 0; j < KW; ++j, dst += P) {
          // outputs ox with 0 <= ox * stride_w + off < W
          const int64_t off = j * dil_w - pad_l;
          const int64_t ox0 = std::min(OW, off >= 0 ? 0 : (-off + stride_w - 1) / stride_w);
          const int64_t ox1 = std::max(ox0, std::min(OW, W - off <= 0 ? 0 :
                                                           (W - off - 1) / stride_w + 1));
          for (int64_t oy = 0; oy < OH; ++oy) {
            T* d = dst + oy * OW;
            const int64_t iy = oy * stride_h - pad_t + i * dil_h;
            if (iy < 0 || iy >= H) {
              std::fill(d, d + OW, T(0));
              continue;
            }
            std::fill(d, d + ox0, T(0));
            const T* s = src + iy * sxH + (ox0 * stride_w + off) * sxW;
            if (stride_w == 1 && sxW == 1) {
              std::memcpy(d + ox0, s, sizeof(T) * static_cast<size_t>(ox1 - ox0));
            } else {
              const int64_t step = stride_w * sxW;
              for (int64_t ox = ox0; ox < ox1; ++ox, s += step) d[ox] = *s;
            }
            std::fill(d + ox1, d + OW, T(0));
          }
        }
    }
  });
}

// ------------------------------------------------------------------ packed GEMM
// out[n][m][p] = act(sum_k A[m][k] * B[n][k][p] + row_bias[m] + col_bias[p]), the GEMM of
// Session's Conv (A = the weight (M, C*KH*KW), B = the image (C, H*W) for 1x1, else its
// im2col matrix) and Gemm with a constant weight (Y^T = W B^T: A = the weight, B = the
// input rows, read transposed).  A is packed into panels of kCgMR rows, k-major (A[m][k]
// at panel m / kCgMR, offset k * kCgMR + m % kCgMR, in blocks of kCgKC k; rows past M are
// 0): once per Session for a weight.  B is packed per block into strips (below).
//
// Blocking (GotoBLAS's): a register block is kCgMR x kCgNR outputs
// (12 AVX accumulators; per k two loads of a B row, kCgMR broadcasts, 12 FMAs); the
// x86-64-v4 build takes two panels at once (gemm_pair_block, 12 x 32 in 24 zmm) and a
// block's last 2-10 columns along the rows of 4-8 panels (gemm_tail_cols), with every
// output's sum the same chain of FMAs, so the two builds give the same bits.  Work
// items are (image, block of kCgNC columns, run of panels); an item walks k in passes
// of kCgKC, and within a pass its panels x strips, so that the pass's B block (kCgKC x
// kCgNC, 256 KiB) stays in L2 across the run's panels and each A panel slice (6 KiB)
// in L1 across the strips; the output block accumulates across passes.  Runs of one
// block share one copy of its strips where it is small (kSharedPackBytes).  Bias and
// activation are applied in registers on the last pass, so the output is written once
// (unfused, an activation read and wrote it again).
//
// Only the x86-64-v3 and -v4 builds have it (kPackedGemm): FMA is explicit
// (_mm256_fmadd_ps) and the project compiles with -ffp-contract=off, so the baseline
// build would run at a quarter of the speed; there Session uses NumPy's BLAS.  Sums are
// not bit-identical to a BLAS's (no two BLAS agree: blocking and FMA differ per CPU);
// Conv and Gemm promise tolerance.  Why not OpenBLAS: after a multi-threaded call its
// workers spin for ~0.1 s (OPENBLAS_THREAD_TIMEOUT, read once at load), on a 2-core
// machine taking a core from every fastops kernel that follows; the frcnn Session's
// Conv ran 26.9 ms a run with OPENBLAS_NUM_THREADS=1 and 39.8 without (docs/onnx.md has
// the measurements).
#if defined(__AVX2__) && defined(__FMA__)
constexpr bool kPackedGemm = true;
#else
constexpr bool kPackedGemm = false;
#endif
constexpr int64_t kCgMR = 6;
constexpr int64_t kCgNR = 16;
constexpr int64_t kCgKC = 256;
constexpr int64_t kCgNC = 256;

// The packed A ends in kCgPackSlack zeros: gemm_tail_cols reads a panel's 6 values of
// a k as 8, the last panel's last k 2 past its end.
constexpr int64_t kCgPackSlack = 8;
inline int64_t gemm_packed_size(int64_t M, int64_t K) {
  return size_mul((M + kCgMR - 1) / kCgMR * kCgMR, K) + kCgPackSlack;
}

// Where panel mb's values for k in [k0, k0 + kCgKC) start in the packed A (k0 a multiple
// of kCgKC): the packed A is k0 blocks of all panels, so that a pass over the panels
// reads one contiguous stretch (a Linear layer's 51 MB weight streams from memory).
inline int64_t gemm_panel_offset(int64_t M, int64_t K, int64_t mb, int64_t k0) {
  const int64_t mpad = (M + kCgMR - 1) / kCgMR * kCgMR;
  return k0 * mpad + mb * kCgMR * std::min(kCgKC, K - k0);
}

// a (M, K) with element strides (saM, saK) -> packed (gemm_packed_size(M, K)): for each
// block of kCgKC k, each panel of kCgMR rows, k-major (rows past M are 0).
inline void gemm_pack(const float* a, int64_t M, int64_t K, int64_t saM, int64_t saK,
                      float* packed, int nthreads) {
  const int64_t panels = (M + kCgMR - 1) / kCgMR;
  const int nt = threads_for(work_product(M, K), nthreads);
  parallel_for(panels, chunk_for(panels, nt, 2), nt, [&](int64_t lo, int64_t hi, int) {
    for (int64_t mb = lo; mb < hi; ++mb) {
      const int64_t m0 = mb * kCgMR;
      for (int64_t k0 = 0; k0 < K; k0 += kCgKC) {
        float* dst = packed + gemm_panel_offset(M, K, mb, k0);
        const int64_t kc = std::min(kCgKC, K - k0);
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t r = 0; r < kCgMR; ++r)
            dst[k * kCgMR + r] = m0 + r < M ? a[(m0 + r) * saM + (k0 + k) * saK] : 0.f;
      }
    }
  });
  std::fill_n(packed + gemm_packed_size(M, K) - kCgPackSlack, kCgPackSlack, 0.f);
}

#if defined(__AVX2__) && defined(__FMA__)
// dst[c * lds + r] = src[r * ls + c] for an 8 x 8 tile.
inline void transpose8x8(const float* src, int64_t ls, float* dst, int64_t lds) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ls);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);      // a0 b0 a1 b1 | a4 b4 a5 b5
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);  // a2 b2 a3 b3 | a6 b6 a7 b7
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);      // column 0 (| 4) of 4 rows
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);  // 1 (| 5)
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int c = 0; c < 4; ++c) {
    _mm256_storeu_ps(dst + c * lds, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));
    _mm256_storeu_ps(dst + (c + 4) * lds, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));
  }
}

struct GemmEpilogue {
  const float* row_bias;  // [m] or null
  const float* col_bias;  // [p] or null
  int act;
  // the last pass on the sum of row r, column j: row bias, column bias, activation
  float finish(float v, int64_t r, int64_t j) const {
    if (row_bias) v = v + row_bias[r];
    if (col_bias) v = v + col_bias[j];
    return conv_act(v, act);
  }
};

// One 16-wide output row of a block: c's old values added (later passes), then on the
// last pass the biases (row, then column) and the activation.
inline void gemm_store_row(float* cr, __m256 v0, __m256 v1, int64_t r,
                           const GemmEpilogue& ep, bool first, bool last) {
  if (!first) {
    v0 = _mm256_add_ps(_mm256_loadu_ps(cr), v0);
    v1 = _mm256_add_ps(_mm256_loadu_ps(cr + 8), v1);
  }
  if (last) {
    if (ep.row_bias) {
      const __m256 bv = _mm256_set1_ps(ep.row_bias[r]);
      v0 = _mm256_add_ps(v0, bv);
      v1 = _mm256_add_ps(v1, bv);
    }
    if (ep.col_bias) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(ep.col_bias));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(ep.col_bias + 8));
    }
    v0 = avx_act(v0, ep.act);
    v1 = avx_act(v1, ep.act);
  }
  _mm256_storeu_ps(cr, v0);
  _mm256_storeu_ps(cr + 8, v1);
}

// Columns [0, nr) of output row r of a block, from its sums (the scalar form of
// gemm_store_row: the same operations per value).
inline void gemm_store_tail(float* cr, const float* sums, int64_t nr, int64_t r,
                            const GemmEpilogue& ep, bool first, bool last) {
  for (int64_t j = 0; j < nr; ++j) {
    float v = sums[j];
    if (!first) v = cr[j] + v;
    cr[j] = last ? ep.finish(v, r, j) : v;
  }
}

// gemm_block's B rows: row k at b + k * ld (a packed strip, or a matrix read in place)
struct StridedRows {
  const float* b;
  int64_t ld;
  const float* operator()(int64_t k) const { return b + k * ld; }
};

// row k at r[k] + off: conv_rows' taps, each a run of one row of its scratch
struct TapRows {
  const float* const* r;
  int64_t off;
  const float* operator()(int64_t k) const { return r[k] + off; }
};

// One kCgMR x kCgNR block over kc values of k (Wide = false: its first 8 columns only,
// for a last strip of at most 8: P = 130 or 150 would otherwise compute 7-11 % of
// padding): c (row stride ldc) gets the sums (first pass) or adds them; the last pass
// adds the biases (row, then column) and applies the activation.  Rows past mr and
// columns past nr come from zero padding, not stored.  A whole block is stored straight
// from its registers: through a stack copy, a Conv with few input channels (K = 16-40,
// 2k-33k pixels, Relu / HardSwish) took 8-15 % longer.
template <bool Wide, class Rows>
inline void gemm_block(const float* ap, const Rows& brow, int64_t kc, float* c,
                       int64_t ldc, int64_t mr, int64_t nr, const GemmEpilogue& ep,
                       bool first, bool last) {
  static_assert(kCgMR == 6 && kCgNR == 16, "the accumulators below are 6 x 2 vectors");
  // Named accumulators: GCC 12 kept an __m256[6][2] array on the stack inside the k loop
  // (a store per FMA, 3x slower) when this function was inlined into the work loop.
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
         c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = brow(k);
    const __m256 b0 = _mm256_loadu_ps(bk);
    const __m256 b1 = Wide ? _mm256_loadu_ps(bk + 8) : b0;
    const float* a = ap + k * kCgMR;
    __m256 av = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    if (Wide) c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    if (Wide) c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    if (Wide) c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    if (Wide) c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    if (Wide) c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    if (Wide) c51 = _mm256_fmadd_ps(av, b1, c51);
  }
  const __m256 acc[kCgMR * 2] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
  if (Wide && mr == kCgMR && nr == kCgNR) {  // a whole block: stored from the registers
#pragma GCC unroll 6
    for (int r = 0; r < kCgMR; ++r)
      gemm_store_row(c + r * ldc, acc[2 * r], acc[2 * r + 1], r, ep, first, last);
    return;
  }
  alignas(32) float sums[kCgMR * kCgNR];
  for (int i = 0; i < kCgMR * 2; ++i) _mm256_store_ps(sums + i * 8, acc[i]);
  for (int64_t r = 0; r < mr; ++r) {
    float* cr = c + r * ldc;
    if (nr == kCgNR)
      gemm_store_row(cr, _mm256_load_ps(sums + r * kCgNR), _mm256_load_ps(sums + r * kCgNR + 8),
                     r, ep, first, last);
    else
      gemm_store_tail(cr, sums + r * kCgNR, nr, r, ep, first, last);
  }
}

#if defined(__AVX512F__)
// Two panels at once, 12 rows by one or two strips (x86-64-v4 build).  12 x 32 in 512-bit
// registers takes 2 loads of B and 12 broadcasts per 24 FMAs, where gemm_block's 6 x 16
// takes 8 loads per 12 FMAs of half the width: the box head's fc6 Gemm (1024 x 12544 x
// 150), harness, 1 / 2 threads: 50.0 -> 40.8 / 26.0 -> 21.2 ms.  Short k passes too
// (2 threads, Intel AVX-512 FP16 VM, with the wide column blocks of gemm_packed_run:
// 672 x 112 x 520 0.39 -> 0.25 ms, 480 x 80 x 520 0.21 -> 0.14, 240 x 40 x 2080 0.23 ->
// 0.17, 64 x 16 x 33280 0.49 either way).  Every output's sum is
// gemm_block's FMA chain over k, and the stores are gemm_store_row's or gemm_block's
// scalar ones, so the bits are the same as the x86-64-v3 build's.  ap: panel mb (panel mb
// + 1 follows at + kCgMR * kc); bs: strip j (strip j + 1 at + kCgNR * kc); mr: the rows
// that exist (7-12; 1-6 with Panels = 1, a run's last panel alone: as fast as
// gemm_block's ymm 6 x 16 per FMA and twice as wide); nr: the columns (<= Strips * kCgNR).
template <int Strips, int Panels>
inline void gemm_pair_block(const float* ap, const float* bs, int64_t kc, float* c,
                            int64_t ldc, int64_t mr, int64_t nr, const GemmEpilogue& ep,
                            bool first, bool last) {
  constexpr int64_t MR = Panels * kCgMR;
  __m512 acc[MR][Strips];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  const float* a1 = ap + kCgMR * kc;
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    __m512 b[Strips];
    for (int s = 0; s < Strips; ++s) b[s] = _mm512_loadu_ps(bs + (s * kc + k) * kCgNR);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512 av =
          _mm512_set1_ps(r < kCgMR ? ap[k * kCgMR + r] : a1[k * kCgMR + r - kCgMR]);
      for (int s = 0; s < Strips; ++s) acc[r][s] = _mm512_fmadd_ps(av, b[s], acc[r][s]);
    }
  }
  if (nr == Strips * kCgNR) {  // whole strips: stored from the registers
    GemmEpilogue es[Strips];   // strip s's column bias
    for (int s = 0; s < Strips; ++s)
      es[s] = {ep.row_bias, ep.col_bias ? ep.col_bias + s * kCgNR : nullptr, ep.act};
    for (int64_t r = 0; r < mr; ++r)
      for (int s = 0; s < Strips; ++s)
        gemm_store_row(c + r * ldc + s * kCgNR, _mm512_extractf32x8_ps(acc[r][s], 0),
                       _mm512_extractf32x8_ps(acc[r][s], 1), r, es[s], first, last);
    return;
  }
  alignas(64) float sums[MR][Strips * kCgNR];
  for (int r = 0; r < MR; ++r)
    for (int s = 0; s < Strips; ++s) _mm512_store_ps(sums[r] + s * kCgNR, acc[r][s]);
  for (int64_t r = 0; r < mr; ++r) gemm_store_tail(c + r * ldc, sums[r], nr, r, ep, first, last);
}

// The last 2-10 columns of up to tail_panels(NR) panels, in registers along the rows: per k
// a load of each panel's 6 values (as 8), one broadcast per column, and an FMA per
// column and pair of panels.  Before, an 8-lane pair block broadcast every A value
// against one B row, 13 loads a k for a pair of panels whatever the columns (P = 130's
// last 2 columns cost 13 % of the FPN's 256 -> 256 3x3 on 10 x 13).  A pair of panels
// alone runs at the FMA latency (2 sums in flight); eight keep 4 x NR in flight (four
// for 8-10 columns, whose 4 x NR sums would not fit in the 32 registers).
// Masked loads of the 6 values (no over-read) ran this loop at ~20 cycles a k.  Each
// output's sum is still the chain acc = a * b + acc over k, so the bits are gemm_block's.
// ap: the first panel (panel i at + i * kCgMR * kc); panels: 1 to tail_panels(NR) (missing
// ones read the last again, never stored); mr: the rows that exist; NR: the columns
// computed (>= nr; the strip's columns past its width are zero padding).  Register q
// holds panel 2q's rows in lanes 0-5 and panel 2q + 1's in lanes 8-13 (lanes 6-7 and
// 14-15: the next k's, never stored).
constexpr int64_t tail_panels(int NR) { return NR <= 6 ? 8 : 4; }
template <int NR>
inline void gemm_tail_cols(const float* ap, int64_t panels, const float* bs, int64_t kc,
                           float* c, int64_t ldc, int64_t mr, int64_t nr,
                           const GemmEpilogue& ep, bool first, bool last) {
  constexpr int Q = tail_panels(NR) / 2;
  const float* pa[2 * Q];
  for (int i = 0; i < 2 * Q; ++i)
    pa[i] = ap + std::min<int64_t>(i, panels - 1) * kCgMR * kc;
  __m512 acc[Q][NR];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 av[Q];
    for (int q = 0; q < Q; ++q)
      av[q] = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(pa[2 * q] + k * kCgMR)),
                                 _mm256_loadu_ps(pa[2 * q + 1] + k * kCgMR), 1);
    const float* bk = bs + k * kCgNR;
    for (int j = 0; j < NR; ++j) {
      const __m512 bv = _mm512_set1_ps(bk[j]);
      for (int q = 0; q < Q; ++q) acc[q][j] = _mm512_fmadd_ps(av[q], bv, acc[q][j]);
    }
  }
  alignas(64) float sums[Q][NR][16];
  for (int q = 0; q < Q; ++q)
    for (int j = 0; j < NR; ++j) _mm512_store_ps(sums[q][j], acc[q][j]);
  for (int64_t r = 0; r < mr; ++r) {
    const int64_t panel = r / kCgMR, lane = panel % 2 * 8 + r % kCgMR;
    float row[NR] = {};
    for (int j = 0; j < NR; ++j) row[j] = sums[panel / 2][j][lane];
    gemm_store_tail(c + r * ldc, row, nr, r, ep, first, last);
  }
}

#endif

// gemm_packed for P == 1 (a 1x1 Conv on a pooled vector: squeeze-and-excitation's two
// per MobileNetV3 block).  The block kernel would compute 8 columns for the one used and
// pack B into 16-wide strips: 40-60 us for 240 x 960, 2-3x NumPy's sgemv.  Here B's
// column is spread to match a panel's layout (xs[k * kCgMR + r] = B[k]), so a panel's
// k-pass is one contiguous dot product in 24-lane steps (4 values of k), folded per row
// in a fixed order (the same sums on any thread count).
inline void gemv_packed(const float* packed, int64_t M, int64_t K, const float* b,
                        int64_t N, int64_t sbn, int64_t kstride, const float* row_bias,
                        const float* col_bias, int act, float* out, int nt) {
  const int64_t panels = (M + kCgMR - 1) / kCgMR;
  std::vector<float> xs(static_cast<size_t>(size_mul(N * K, kCgMR)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t r = 0; r < kCgMR; ++r)
        xs[(n * K + k) * kCgMR + r] = b[n * sbn + k * kstride];
  parallel_for(N * panels, chunk_for(N * panels, nt), nt, [&](int64_t lo, int64_t hi, int) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / panels, mb = item % panels;
      float sums[kCgMR] = {};
      for (int64_t k0 = 0; k0 < K; k0 += kCgKC) {
        const int64_t len = std::min(kCgKC, K - k0) * kCgMR;
        const float* ap = packed + gemm_panel_offset(M, K, mb, k0);
        const float* xp = xs.data() + (n * K + k0) * kCgMR;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0;
        int64_t i = 0;
        for (; i + 24 <= len; i += 24) {
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(ap + i), _mm256_loadu_ps(xp + i), a0);
          a1 = _mm256_fmadd_ps(_mm256_loadu_ps(ap + i + 8), _mm256_loadu_ps(xp + i + 8), a1);
          a2 = _mm256_fmadd_ps(_mm256_loadu_ps(ap + i + 16), _mm256_loadu_ps(xp + i + 16), a2);
        }
        alignas(32) float lanes[24];
        _mm256_store_ps(lanes, a0);
        _mm256_store_ps(lanes + 8, a1);
        _mm256_store_ps(lanes + 16, a2);
        for (int q = 0; q < 24; ++q) sums[q % kCgMR] += lanes[q];  // lane q: row q % 6
        for (; i < len; ++i) sums[i % kCgMR] += ap[i] * xp[i];
      }
      const int64_t m0 = mb * kCgMR, mr = std::min(kCgMR, M - m0);
      const GemmEpilogue ep{row_bias ? row_bias + m0 : nullptr, col_bias, act};
      for (int64_t r = 0; r < mr; ++r) out[n * M + m0 + r] = ep.finish(sums[r], r, 0);
    }
  });
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
// The B operands of gemm_packed_run.  pack(n, k0, kc, p, w, dst) writes B[n][k0 + k][p + q]
// to dst[k * kCgNR + q] for k < kc, q < w, and zeros for q in [w, kCgNR); in_place(n, k0,
// p) is the first row of a whole strip (16 columns from p) readable where it lies, with
// row stride ld, or null.

// A matrix: b (N, K, P), image n at b + n * sbn, element (k, p) at + k * ldb + p, or with
// trans at + p * ldb + k (Gemm's input rows).
struct MatrixB {
  const float* b;
  int64_t sbn, ldb;
  bool trans;
  int64_t ld() const { return ldb; }
  const float* in_place(int64_t n, int64_t k0, int64_t p) const {
    return trans ? nullptr : b + n * sbn + k0 * ldb + p;
  }
  void pack(int64_t n, int64_t k0, int64_t kc, int64_t p, int64_t w, float* dst) const {
    if (trans) {  // a row of b per column
      const float* src = b + n * sbn + p * ldb + k0;
      int64_t k1 = 0;
      if (w == kCgNR)  // 8 x 8 tiles through registers: fc6 (150 x 12544) 4-7 % faster
        for (; k1 + 8 <= kc; k1 += 8)
          for (int64_t q = 0; q < kCgNR; q += 8)
            transpose8x8(src + q * ldb + k1, ldb, dst + k1 * kCgNR + q, kCgNR);
      for (int64_t q = 0; q < w; ++q)
        for (int64_t k = k1; k < kc; ++k) dst[k * kCgNR + q] = src[q * ldb + k];
    } else {
      const float* src = b + n * sbn + k0 * ldb + p;
      if (w == kCgNR) {
        for (int64_t k = 0; k < kc; ++k) {
          _mm256_storeu_ps(dst + k * kCgNR, _mm256_loadu_ps(src + k * ldb));
          _mm256_storeu_ps(dst + k * kCgNR + 8, _mm256_loadu_ps(src + k * ldb + 8));
        }
        return;
      }
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t q = 0; q < w; ++q) dst[k * kCgNR + q] = src[k * ldb + q];
    }
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t q = w; q < kCgNR; ++q) dst[k * kCgNR + q] = 0.f;
  }
};

// The im2col matrix of an image batch, packed strip by strip from the image: row k = (c,
// i, j) of image n, column p = (oy, ox) is x[n][c] at (oy * sh - pt + i * dh, ox * sw -
// pl + j * dw), 0 outside.  conv_packed's route for many taps on small images (the FPN's
// 256 -> 256 3x3 on 10 x 13), where conv_rows reads B's rows from too many places.
struct ImageB {
  const float* x;
  int64_t C, H, W, sxN, sxC, sxH, sxW, KH, KW, sh, sw, pt, pl, dh, dw, OW;
  int64_t ld() const { return 0; }
  const float* in_place(int64_t, int64_t, int64_t) const { return nullptr; }

  // Stride-1 rows (sw == 1, contiguous) of kernels of at most kTableTaps taps, strips of
  // at most kTableSegs runs (rows of 4 or more): each tap's reads are the same for every
  // channel, so they are worked out once per strip (TapReads) and each row of the strip
  // is 2 loads (a whole strip inside one input row) or up to 5 pairs of masked loads
  // (masked lanes read nothing and give 0).  Worked out per row, the masks made packing a
  // quarter of the FPN's 256 -> 256 3x3 on 10 x 13 (13- and 26-wide rows).
  static constexpr int64_t kTableTaps = 49, kTableSegs = 5;  // 7 x 7; 17 KB of stack
  struct TapReads {
    bool whole;                       // one plain copy of 16 from plane + off[0]
    int64_t segs, off[kTableSegs];    // else segs masked reads, slot t from plane + off[s] + t
    __m256i lo[kTableSegs], hi[kTableSegs];
  };

  void pack(int64_t n, int64_t k0, int64_t kc, int64_t p, int64_t w, float* dst) const {
    // the strip's columns as runs along output rows (several where rows are short)
    int64_t seg_q[kCgNR], seg_oy[kCgNR], seg_ox[kCgNR], seg_len[kCgNR], segs = 0;
    for (int64_t q = 0; q < w; ++segs) {
      seg_q[segs] = q;
      seg_oy[segs] = (p + q) / OW;
      seg_ox[segs] = (p + q) % OW;
      seg_len[segs] = std::min(w - q, OW - seg_ox[segs]);
      q += seg_len[segs];
    }
    const int64_t taps = KH * KW;
    TapReads reads[kTableTaps];
    const bool table = sw == 1 && sxW == 1 && taps <= kTableTaps && segs <= kTableSegs;
    for (int64_t t = 0; table && t < taps; ++t) {
      const int64_t i = t / KW, off = t % KW * dw - pl;  // ix = ox + off
      TapReads& r = reads[t];
      const int64_t iy0 = seg_oy[0] * sh - pt + i * dh, base0 = seg_ox[0] + off;
      r.whole = seg_len[0] == kCgNR && iy0 >= 0 && iy0 < H && base0 >= 0 && base0 + kCgNR <= W;
      r.segs = 0;
      if (r.whole) {
        r.off[0] = iy0 * sxH + base0;
        continue;
      }
      for (int64_t s = 0; s < segs; ++s) {
        const int64_t iy = seg_oy[s] * sh - pt + i * dh;
        if (iy < 0 || iy >= H) continue;
        const int64_t base = seg_ox[s] + off, sq = seg_q[s];  // slot sq + q: ix base + q
        const int64_t a = std::max<int64_t>(0, -base), b = std::min(seg_len[s], W - base);
        if (a >= b) continue;
        r.off[r.segs] = iy * sxH + (base - sq);  // slot t reads row[t]
        r.lo[r.segs] = lanes_between(sq + a, sq + b);
        r.hi[r.segs++] = lanes_between(sq + a - 8, sq + b - 8);
      }
    }
    int64_t c = k0 / taps, t = k0 % taps;
    for (int64_t k = 0; k < kc; ++k) {
      float* d = dst + k * kCgNR;
      const float* plane = x + n * sxN + c * sxC;
      if (table) {
        const TapReads& r = reads[t];
        if (r.whole) {  // the common case on large images: two plain copies
          _mm256_storeu_ps(d, _mm256_loadu_ps(plane + r.off[0]));
          _mm256_storeu_ps(d + 8, _mm256_loadu_ps(plane + r.off[0] + 8));
        } else {
          __m256 lo = _mm256_setzero_ps(), hi = lo;
          for (int64_t s = 0; s < r.segs; ++s) {
            lo = _mm256_or_ps(lo, _mm256_maskload_ps(plane + r.off[s], r.lo[s]));
            hi = _mm256_or_ps(hi, _mm256_maskload_ps(plane + r.off[s] + 8, r.hi[s]));
          }
          _mm256_storeu_ps(d, lo);
          _mm256_storeu_ps(d + 8, hi);
        }
      } else {
        const int64_t i = t / KW, off = t % KW * dw - pl;  // ix = ox * sw + off
        for (int64_t s = 0; s < segs; ++s) {
          float* ds = d + seg_q[s];
          const int64_t iy = seg_oy[s] * sh - pt + i * dh, len = seg_len[s];
          const int64_t base = seg_ox[s] * sw + off;  // ix of the run's first output
          // the run's outputs [a, b) read inside the row: 0 <= base + q * sw < W
          int64_t a = len, b = len;
          if (iy >= 0 && iy < H) {
            if (base >= 0 && base + (len - 1) * sw < W) {  // no divisions inside the image
              a = 0;
            } else {
              a = base >= 0 ? 0 : std::min(len, (-base + sw - 1) / sw);
              b = std::max(a, base >= W ? 0 : std::min(len, (W - 1 - base) / sw + 1));
            }
          }
          if (a == 0 && b == kCgNR && sxW == 1 && sw == 2) {
            // the even ones of row[0 .. 30], loads kept inside that range
            const float* row = plane + iy * sxH + base;
            const __m256 v0 = _mm256_loadu_ps(row), v1 = _mm256_loadu_ps(row + 8),
                         v2 = _mm256_loadu_ps(row + 16), v3 = _mm256_loadu_ps(row + 23);
            // 0 2 8 10 | 4 6 12 14 and 16 18 24 26 | 20 22 28 30; then 64-bit lanes 0 2 1 3
            const __m256d e0 = _mm256_castps_pd(_mm256_shuffle_ps(v0, v1, 0x88)),
                          e1 = _mm256_castps_pd(_mm256_shuffle_ps(v2, v3, 0xD8));
            _mm256_storeu_ps(ds, _mm256_castpd_ps(_mm256_permute4x64_pd(e0, 0xD8)));
            _mm256_storeu_ps(ds + 8, _mm256_castpd_ps(_mm256_permute4x64_pd(e1, 0xD8)));
            continue;
          }
          for (int64_t q = 0; q < a; ++q) ds[q] = 0.f;
          for (int64_t q = a; q < b; ++q) ds[q] = plane[iy * sxH + (base + q * sw) * sxW];
          for (int64_t q = b; q < len; ++q) ds[q] = 0.f;
        }
        for (int64_t q = w; q < kCgNR; ++q) d[q] = 0.f;
      }
      if (++t == taps) t = 0, ++c;
    }
  }
};

// gemm_packed_run widens its column blocks for k passes of at most this many k
#if defined(__AVX512F__)
constexpr int64_t kWideMaxK = kCgKC;
#else
constexpr int64_t kWideMaxK = 31;
#endif

// gemm_packed_run's strips shared by runs: at most this big (fc6's 8 MB ran 13 % slower)
constexpr int64_t kSharedPackBytes = int64_t(2) << 20;

// out (N, M, P) contiguous = act(A B[n] + row_bias + col_bias), A packed by gemm_pack, B
// one of the sources above; row_bias (M,) and col_bias (P,) contiguous or null; act a
// ConvAct.
template <class Src>
void gemm_packed_run(const float* packed, int64_t M, int64_t K, const Src& src, int64_t N,
                     int64_t P, const float* row_bias, const float* col_bias, int act,
                     float* out, int nt) {
  const int64_t panels = (M + kCgMR - 1) / kCgMR;
  // Column blocks: a k pass's B block is kc x bw floats, up to kCgKC x kCgNC (256 KiB, for
  // L2), so passes of few k take wider blocks; an item then writes each output row in
  // runs of 4-16 KiB instead of 1, which the prefetchers follow.  2 threads, Intel
  // AVX-512 VM: frcnn's 16 -> 64 1x1 on 160 x 208 0.68 -> 0.49 ms (with gemm_pair_block),
  // 40 -> 240 on 40 x 52 0.23 -> 0.17.  The x86-64-v3 build's gemm_block loads B twice
  // as often per FMA and gains only below kWideMaxK (K = 16: 0.70 -> 0.57 ms; K = 40-160
  // ran 4-8 % slower from L2 instead of L1).  The blocks are of equal width (to a
  // strip), and where images x blocks are a few, but not a multiple of the threads,
  // narrower ones that are: P = 520 (480 -> 112 1x1 on 20 x 26) made blocks of 256, 256
  // and 8 columns, one thread taking two (2 threads, kernel: 0.83-1.19 ms, 0.63-1.05
  // with 4 blocks).  The blocking changes no sum.
  const int64_t kc1 = std::min(K, kCgKC);
  int64_t bw = kc1 <= kWideMaxK ? std::max(kCgNC, kCgKC * kCgNC / kc1 / kCgNR * kCgNR) : kCgNC;
  int64_t cblocks = (P + bw - 1) / bw;
  if (N * cblocks > nt && N * cblocks < 8 * nt && N * cblocks % nt)
    cblocks = ((N * cblocks + nt - 1) / nt * nt + N - 1) / N;
  bw = ((P + cblocks - 1) / cblocks + kCgNR - 1) / kCgNR * kCgNR;
  cblocks = (P + bw - 1) / bw;
  // An item per thread at least: split the panels only where images x column blocks
  // are fewer (each run packs the same B blocks again).
  const int64_t want = nt;
  const int64_t runs = std::min(panels, std::max<int64_t>(1, (want + N * cblocks - 1) /
                                                                 (N * cblocks)));
  const int64_t per = (panels + runs - 1) / runs;
  const int64_t kc_max = std::min(K, kCgKC);
  const int64_t nc_max = std::min((P + kCgNR - 1) / kCgNR * kCgNR, bw);
  // A strip read by one or two panels is not worth its copy: whole strips are read in
  // place where the source allows (rpn's 3- and 12-channel 1x1 heads on 256 channels:
  // the copy took as long as the products)
  const bool direct = per <= 2;
  // Where several runs share a column block, its strips are packed once, by every
  // thread, before the products (all k passes: K x nc_max per block), not by each run:
  // the FPN's 256 -> 256 3x3 on 10 x 13 spent a quarter of its time packing (ImageB),
  // the same strips on both threads.  (At most kSharedPackBytes: a copy of B, padded.)
  const int64_t strips = nc_max / kCgNR, blocks = N * cblocks;
  const int64_t shared_size = size_mul(size_mul(blocks, K), nc_max);
  const bool shared = runs > 1 && !direct && shared_size <= kSharedPackBytes / 4;
  ThreadScratch<float> bshared(shared ? shared_size : 1, 1, false);
  ThreadScratch<float> bpacks(shared ? 1 : size_mul(kc_max, nc_max), nt);
  // block (n, cb)'s k pass k0 as strips of kc x kCgNR, zero-padded: each row of a strip
  // in one cache line (B's own rows are pages apart on large images: a TLB miss per k)
  const auto pack_strip = [&](int64_t blk, int64_t k0, int64_t j, float* dst) {
    const int64_t n = blk / cblocks, j0 = blk % cblocks * bw;
    const int64_t nc = std::min(P, j0 + bw) - j0, kc = std::min(kCgKC, K - k0);
    if (j < nc) src.pack(n, k0, kc, j0 + j, std::min(kCgNR, nc - j), dst + j * kc);
  };
  if (shared) {
    const int64_t passes = (K + kCgKC - 1) / kCgKC, tasks = blocks * passes * strips;
    parallel_for(tasks, chunk_for(tasks, nt), nt, [&](int64_t lo, int64_t hi, int) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t blk = t / (passes * strips), k0 = t / strips % passes * kCgKC;
        pack_strip(blk, k0, t % strips * kCgNR, bshared(0) + (blk * K + k0) * nc_max);
      }
    });
  }
  parallel_for(N * cblocks * runs, 1, nt, [&](int64_t lo, int64_t hi, int slot) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t run = item % runs, blk = item / runs, cb = blk % cblocks, n = blk / cblocks;
      const int64_t mb0 = run * per, mb1 = std::min(panels, mb0 + per);
      const int64_t j0 = cb * bw, nc = std::min(P, j0 + bw) - j0;
#if defined(__AVX512F__)
      // columns of a zmm block where `rest` remain: two strips where more than 24, else one
      const auto block_cols = [](int64_t rest) {
        return std::min(rest, rest > 3 * kCgNR / 2 ? 2 * kCgNR : kCgNR);
      };
      int64_t jt = 0;   // the columns of zmm blocks; the 2-10 after them go along the rows
      while (nc - jt > 10) jt += block_cols(nc - jt);
#endif
      for (int64_t k0 = 0; k0 < K; k0 += kCgKC) {
        const int64_t kc = std::min(kCgKC, K - k0);
        float* bpack = shared ? bshared(0) + (blk * K + k0) * nc_max : bpacks(slot);
        if (!shared)
          for (int64_t j = 0; j < nc; j += kCgNR)
            if (!(direct && nc - j >= kCgNR && src.in_place(n, k0, j0 + j)))
              pack_strip(blk, k0, j, bpack);
        for (int64_t mb = mb0; mb < mb1; ++mb) {
          const int64_t m = mb * kCgMR, mr = std::min(kCgMR, M - m);
          const float* ap = packed + gemm_panel_offset(M, K, mb, k0);
          float* o = out + (n * M + m) * P + j0;
          int64_t j = 0;
#if defined(__AVX512F__)
          // panels mb and mb + 1 together (or a run's last panel alone): two strips
          // where more than 24 columns remain, then one; the last 2-10 columns (jt on)
          // after the run's panels, along the rows (P = 150: 4 x 32, 16, then 6)
          const auto zmm_blocks = [&](auto panels) {
            constexpr int Pn = decltype(panels)::value;
            const GemmEpilogue ep{row_bias ? row_bias + m : nullptr, nullptr, act};
            const int64_t mrp = std::min(Pn * kCgMR, M - m);
            const bool first = k0 == 0, last = k0 + kc >= K;
            while (j < jt) {
              GemmEpilogue ej = ep;
              if (col_bias) ej.col_bias = col_bias + j0 + j;
              const int64_t nr = block_cols(jt - j);
              if (nr > kCgNR)
                gemm_pair_block<2, Pn>(ap, bpack + j * kc, kc, o + j, P, mrp, nr, ej, first, last);
              else
                gemm_pair_block<1, Pn>(ap, bpack + j * kc, kc, o + j, P, mrp, nr, ej, first, last);
              j += nr;
            }
          };
          if (!direct && mb + 1 < mb1) {
            zmm_blocks(std::integral_constant<int, 2>{});
            ++mb;
          } else if (!direct) {
            zmm_blocks(std::integral_constant<int, 1>{});
          }
          if (!direct) j = nc;
#endif
          for (; j < nc; j += kCgNR) {
            const GemmEpilogue ep{row_bias ? row_bias + m : nullptr,
                                  col_bias ? col_bias + j0 + j : nullptr, act};
            const int64_t nr = std::min(kCgNR, nc - j);
            const float* ip = direct && nr == kCgNR ? src.in_place(n, k0, j0 + j) : nullptr;
            const float* bs = ip ? ip : bpack + j * kc;
            const int64_t ls = ip ? src.ld() : kCgNR;
            const StridedRows rows{bs, ls};
            if (nr > kCgNR / 2)
              gemm_block<true>(ap, rows, kc, o + j, P, mr, nr, ep, k0 == 0, k0 + kc >= K);
            else
              gemm_block<false>(ap, rows, kc, o + j, P, mr, nr, ep, k0 == 0, k0 + kc >= K);
          }
        }
#if defined(__AVX512F__)
        const auto tail = [&](auto cols) {   // columns [jt, nc), tail_panels(NR) at a time
          constexpr int NR = decltype(cols)::value;
          for (int64_t g = mb0; g < mb1; g += tail_panels(NR)) {
            const int64_t m = g * kCgMR, cnt = std::min(tail_panels(NR), mb1 - g);
            const GemmEpilogue ep{row_bias ? row_bias + m : nullptr,
                                  col_bias ? col_bias + j0 + jt : nullptr, act};
            gemm_tail_cols<NR>(packed + gemm_panel_offset(M, K, g, k0), cnt, bpack + jt * kc,
                               kc, out + (n * M + m) * P + j0 + jt, P,
                               std::min(cnt * kCgMR, M - m), nc - jt, ep, k0 == 0,
                               k0 + kc >= K);
          }
        };
        if (!direct && jt < nc) {
          switch ((nc - jt + 1) / 2) {
            case 1: tail(std::integral_constant<int, 2>{}); break;
            case 2: tail(std::integral_constant<int, 4>{}); break;
            case 3: tail(std::integral_constant<int, 6>{}); break;
            case 4: tail(std::integral_constant<int, 8>{}); break;
            default: tail(std::integral_constant<int, 10>{});
          }
        }
#endif
      }
    }
  });
}
#endif

// The sums of no products: out[n][m][p] = act(row_bias[m] + col_bias[p]).
inline void gemm_no_products(int64_t N, int64_t M, int64_t P, const float* row_bias,
                             const float* col_bias, int act, float* out) {
  for (int64_t i = 0; i < N * M; ++i)
    for (int64_t p = 0; p < P; ++p)
      out[i * P + p] = conv_act((row_bias ? row_bias[i % M] : 0.f) +
                                    (col_bias ? col_bias[p] : 0.f), act);
}

// packed: gemm_pack(A (M, K)); b (N, K, P): image n at b + n * sbn, element (k, p) at
// + k * ldb + p, or with b_trans at + p * ldb + k (Gemm's input rows); out (N, M, P)
// contiguous; row_bias (M,) and col_bias (P,) contiguous or null; act a ConvAct.
inline void gemm_packed(const float* packed, int64_t M, int64_t K, const float* b,
                        int64_t N, int64_t sbn, int64_t ldb, bool b_trans, int64_t P,
                        const float* row_bias, const float* col_bias, int act, float* out,
                        int nthreads) {
  if (K == 0) return gemm_no_products(N, M, P, row_bias, col_bias, act, out);
#if defined(__AVX2__) && defined(__FMA__)
  const int nt = threads_for(work_product(work_product(N * M, P), K), nthreads);
  if (P == 1) {  // element (k, 0) at b[k] with b_trans, else b[k * ldb]
    gemv_packed(packed, M, K, b, N, sbn, b_trans ? 1 : ldb, row_bias, col_bias, act, out, nt);
    return;
  }
  gemm_packed_run(packed, M, K, MatrixB{b, sbn, ldb, b_trans}, N, P, row_bias, col_bias,
                  act, out, nt);
#else
  (void)packed, (void)b, (void)sbn, (void)ldb, (void)b_trans, (void)nthreads;
#endif
}

#if defined(__AVX2__) && defined(__FMA__)
// conv_packed for few taps (an RGB stem's 27, 16 -> 16 3x3's 144) or large images, with
// no im2col strips: each work item, a band of up to kConvRowsBand output rows of an
// image, copies the input rows it reads into its thread's zero-padded scratch,
// phase-split by the column stride as depthwise_conv2d's planes are, so that every tap
// of 16 consecutive outputs is 16 consecutive floats there, and gemm_block reads B's
// rows in place (TapRows).  The stem's strips had cost as much to pack as their
// products.  Same sums in the same order as ImageB's, so the same bits.
constexpr int64_t kConvRowsBand = 4;
inline void conv_rows(const float* packed, int64_t M, const float* x, int64_t N, int64_t C,
                      int64_t H, int64_t W, int64_t sxN, int64_t sxC, int64_t sxH,
                      int64_t sxW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                      int64_t pt, int64_t pl, int64_t dh, int64_t dw, const float* row_bias,
                      int act, float* out, int64_t OH, int64_t OW, int nt) {
  const int64_t K = C * KH * KW, P = OH * OW, panels = (M + kCgMR - 1) / kCgMR;
  // scratch rows hold the padded columns the outputs [0, OW rounded up to kCgNR) read
  const int64_t WP = ((OW + kCgNR - 1) / kCgNR * kCgNR - 1) * sw + (KW - 1) * dw + 1;
  const PhaseRows pr(W, WP, sw, pl);
  const int64_t WS = pr.WS, RS = pr.RS;
  // bands of up to kConvRowsBand rows, at least 4 per thread (20 x 26 in bands of 4
  // left one thread 3 of 5)
  const int64_t band_rows = std::max<int64_t>(1, std::min(kConvRowsBand, N * OH / (4 * nt)));
  const int64_t rows = (band_rows - 1) * sh + (KH - 1) * dh + 1;
  const int64_t bands = (OH + band_rows - 1) / band_rows;
  // tap k = (c, i, j)'s offset: channel c's rows follow channel c - 1's
  std::vector<int64_t> toff = pr.tap_offsets(KH, KW, dh, dw, sw);
  toff.resize(static_cast<size_t>(K));
  for (int64_t k = KH * KW; k < K; ++k) toff[k] = toff[k - KH * KW] + rows * RS;
  // zeroed once: a band writes only the input's columns, and fills rows outside it
  ThreadScratch<float> scratch(size_mul(size_mul(C, rows), RS), nt);
  ThreadScratch<const float*> taps(K, nt, false);  // tap k's row for the output row
  parallel_for(N * bands, 1, nt, [&](int64_t lo, int64_t hi, int slot) {
    float* sp = scratch(slot);
    const float** r = taps(slot);
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / bands, oy0 = item % bands * band_rows;
      const int64_t oy1 = std::min(OH, oy0 + band_rows), iy0 = oy0 * sh - pt;
      for (int64_t c = 0; c < C; ++c)
        for (int64_t y = 0; y < rows; ++y) {
          float* d = sp + (c * rows + y) * RS;
          const int64_t iy = iy0 + y;
          if (iy < 0 || iy >= H)
            std::fill(d, d + RS, 0.f);
          else
            split_row(x + n * sxN + c * sxC + iy * sxH, sxW, pr.x0, pr.x1, pl, sw, WS, d);
        }
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        const float* row0 = sp + (oy - oy0) * sh * RS;
        for (int64_t k = 0; k < K; ++k) r[k] = row0 + toff[k];
        // per k pass, each strip's B rows (kc x 16 floats) stay in L1 across the panels,
        // whose pass (M x kc) stays in L2
        for (int64_t k0 = 0; k0 < K; k0 += kCgKC) {
          const int64_t kc = std::min(kCgKC, K - k0);
          for (int64_t j = 0; j < OW; j += kCgNR) {
            const int64_t nr = std::min(kCgNR, OW - j);
            const TapRows rows{r + k0, j};
            for (int64_t mb = 0; mb < panels; ++mb) {
              const int64_t m = mb * kCgMR, mr = std::min(kCgMR, M - m);
              const float* ap = packed + gemm_panel_offset(M, K, mb, k0);
              float* o = out + (n * M + m) * P + oy * OW + j;
              const GemmEpilogue ep{row_bias ? row_bias + m : nullptr, nullptr, act};
              if (nr > kCgNR / 2)
                gemm_block<true>(ap, rows, kc, o, P, mr, nr, ep, k0 == 0, k0 + kc >= K);
              else
                gemm_block<false>(ap, rows, kc, o, P, mr, nr, ep, k0 == 0, k0 + kc >= K);
            }
          }
        }
      }
    }
  });
}
#endif

// out (N, M, OH, OW) contiguous = act(conv(x, A) + row_bias), A (M, C * KH * KW) packed by
// gemm_pack: gemm_packed on x's im2col matrix, which is never materialized (conv_rows or
// ImageB).  x (N, C, H, W) at element strides sx*, non-empty.
inline void conv_packed(const float* packed, int64_t M, const float* x, int64_t N,
                        int64_t C, int64_t H, int64_t W, int64_t sxN, int64_t sxC,
                        int64_t sxH, int64_t sxW, int64_t KH, int64_t KW, int64_t stride_h,
                        int64_t stride_w, int64_t pad_t, int64_t pad_l, int64_t dil_h,
                        int64_t dil_w, const float* row_bias, int act, float* out,
                        int64_t OH, int64_t OW, int nthreads) {
  const int64_t K = size_mul(C, KH * KW), P = size_mul(OH, OW);
  if (K == 0) return gemm_no_products(N, M, P, row_bias, nullptr, act, out);
#if defined(__AVX2__) && defined(__FMA__)
  const int nt = threads_for(work_product(work_product(N * M, P), K), nthreads);
  // conv_rows reads each strip's B rows from its scratch band, ImageB packs them once a k
  // pass (contiguous, for all panels): conv_rows / ImageB, 2 threads, kernel: 3 -> 16 3x3
  // s2 on 320 x 416 0.45, K 144 on 160 x 208 0.54, K 576 on 80 x 104 0.73, K 1152 on
  // 100 x 136 0.86; K 2304 on 40 x 52 1.07, on 20 x 26 1.21, on 10 x 13 1.27
  if (K <= kCgKC || P >= 4096)
    return conv_rows(packed, M, x, N, C, H, W, sxN, sxC, sxH, sxW, KH, KW, stride_h,
                     stride_w, pad_t, pad_l, dil_h, dil_w, row_bias, act, out, OH, OW, nt);
  const ImageB src{x, C, H, W, sxN, sxC, sxH, sxW, KH, KW, stride_h, stride_w, pad_t, pad_l,
                   dil_h, dil_w, OW};
  gemm_packed_run(packed, M, K, src, N, P, row_bias, nullptr, act, out, nt);
#else
  (void)packed, (void)x, (void)C, (void)H, (void)W, (void)sxN, (void)sxC, (void)sxH,
      (void)sxW, (void)stride_h, (void)stride_w, (void)pad_t, (void)pad_l, (void)dil_h,
      (void)dil_w, (void)nthreads;
#endif
}

}  // namespace fastops
