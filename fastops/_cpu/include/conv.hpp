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
#include <vector>

#include "common.hpp"
#include "parallel.hpp"

namespace fastops {

// Outputs per register block: two vectors of the build's width (GCC/Clang vector
// extensions: 32 bytes with AVX, as the x86-64-v3 build has, else 16; a 32-byte vector
// on SSE2 goes through memory, 8x slower).  Each block's sums stay in registers across
// all taps.  (Plain loops over a 16-element array were unrolled into scalar code by GCC
// 11: 2.5x slower on 64x160x208, 3x3.)
#if defined(__AVX__)
constexpr int kDwVecBytes = 32;
#else
constexpr int kDwVecBytes = 16;
#endif
template <typename T>
struct DwVec {
  typedef T type __attribute__((vector_size(kDwVecBytes)));
  static constexpr int64_t lanes = kDwVecBytes / sizeof(T);
};
constexpr int64_t kDwVecs = 2;

template <typename T>
inline typename DwVec<T>::type dw_load(const T* p) {
  typename DwVec<T>::type v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// One block of outputs of one output row: `in` points at the block's first output in
// the phase-split padded plane (see below), toff/wt the taps' offsets and weights.
template <typename T>
inline void dw_block(const T* in, const int64_t* toff, const T* wt, int64_t taps,
                     typename DwVec<T>::type* acc) {
  constexpr int64_t L = DwVec<T>::lanes;
  typename DwVec<T>::type a0 = dw_load(in + toff[0]) * wt[0];
  typename DwVec<T>::type a1 = dw_load(in + toff[0] + L) * wt[0];
  for (int64_t t = 1; t < taps; ++t) {
    a0 = a0 + dw_load(in + toff[t]) * wt[t];
    a1 = a1 + dw_load(in + toff[t] + L) * wt[t];
  }
  acc[0] = a0;
  acc[1] = a1;
}

// x (N, C, H, W) and w (C, 1, KH, KW) with any element strides, bias (C,) or null,
// out C-contiguous (N, C, OH, OW) with N, C, OH, OW, KH, KW >= 1 and H, W >= 0.  pad_t,
// pad_l: the top/left zero padding; the padded plane spans every tap of every output.
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
                      int64_t OW, int nthreads) {
  const int64_t HP = (OH - 1) * stride_h + (KH - 1) * dil_h + 1;
  const int64_t WP = (OW - 1) * stride_w + (KW - 1) * dil_w + 1;
  const int64_t WS = (WP + stride_w - 1) / stride_w;  // columns per phase segment
  const int64_t RS = size_mul(WS, stride_w);            // padded row stride
  const int64_t taps = KH * KW;
  const int64_t planes = N * C;
  const int64_t plane_out = OH * OW;
  const int nt = threads_for(work_product(work_product(planes, plane_out), taps + 1) +
                                 work_product(planes, size_mul(HP, RS)),
                             nthreads);
  std::vector<int64_t> toff(static_cast<size_t>(taps));
  for (int64_t i = 0; i < KH; ++i)
    for (int64_t j = 0; j < KW; ++j) {
      const int64_t cj = j * dil_w;
      toff[i * KW + j] = i * dil_h * RS + (cj % stride_w) * WS + cj / stride_w;
    }
  // the rows and columns of the input inside the padded plane
  const int64_t y0 = std::max<int64_t>(0, -pad_t), y1 = std::min(H, HP - pad_t);
  const int64_t x0 = std::max<int64_t>(0, -pad_l), x1 = std::min(W, WP - pad_l);
  const int64_t plane_pad = size_mul(HP, RS);
  const int64_t block = kDwVecs * DwVec<T>::lanes;
  const int64_t scratch = size_add(plane_pad, block);  // slack: a block may run past
  std::vector<T> pads(static_cast<size_t>(size_mul(scratch, nt)));  // slack stays 0
  std::vector<T> weights(static_cast<size_t>(size_mul(taps, nt)));
  parallel_for(planes, 1, nt, [&](int64_t lo, int64_t hi, int tid) {
    T* pp = pads.data() + tid * scratch;
    T* wt = weights.data() + tid * taps;
    typename DwVec<T>::type acc[kDwVecs];
    std::fill(pp, pp + plane_pad, T(0));  // the padding stays 0 for every plane
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / C, c = item % C;
      const T* src = x + n * sxN + c * sxC;
      for (int64_t y = y0; y < y1; ++y) {
        T* d = pp + (y + pad_t) * RS;
        const T* s = src + y * sxH;
        if (stride_w == 1) {
          for (int64_t xx = x0; xx < x1; ++xx) d[xx + pad_l] = s[xx * sxW];
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
      for (int64_t i = 0; i < KH; ++i)
        for (int64_t j = 0; j < KW; ++j) wt[i * KW + j] = w[c * swC + i * swH + j * swW];
      const T b = bias ? bias[c * sb] : T(0);
      T* o = out + item * plane_out;
      for (int64_t oy = 0; oy < OH; ++oy) {
        const T* in = pp + oy * stride_h * RS;
        T* row = o + oy * OW;
        for (int64_t ox0 = 0; ox0 < OW; ox0 += block) {
          dw_block(in + ox0, toff.data(), wt, taps, acc);
          T sums[kDwVecs * DwVec<T>::lanes];
          std::memcpy(sums, acc, sizeof(sums));
          const int64_t nb = std::min(block, OW - ox0);
          if (bias) {
            for (int64_t k = 0; k < nb; ++k) row[ox0 + k] = sums[k] + b;
          } else {
            for (int64_t k = 0; k < nb; ++k) row[ox0 + k] = sums[k];
          }
        }
      }
    }
  });
}

}  // namespace fastops
