// Depthwise convolution (groups == C == M: one KH x KW filter per channel), the Conv of
// MobileNet-style backbones run by fastops.onnx.Session.  Through im2col + GEMM it would
// be C one-row GEMMs; through NumPy, one short-row multiply-add pass per tap (9-25
// passes whose inner loops are a feature-map row: 46 ms of the frcnn detector's 150).
//
// Each work item is one (image, channel) plane: it is copied once into the thread's
// zero-padded scratch, so the taps need no bounds logic, and every output row
// accumulates its taps in row-major order in place (the row stays in L1):
//   y = x_t0 * w_t0;  y = y + x_t * w_t (t = 1 .. KH*KW-1);  y = y + b
// the sequence the NumPy form computed, so results did not change bits when this
// kernel replaced it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common.hpp"
#include "parallel.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace fastops {

// x (N, C, H, W) and w (C, 1, KH, KW) with any element strides, bias (C,) or null,
// out C-contiguous (N, C, OH, OW) with N, C, OH, OW, KH, KW >= 1 and H, W >= 0.  pad_t,
// pad_l: the top/left zero padding; the padded plane spans every tap of every output.
template <typename T>
void depthwise_conv2d(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN,
                      int64_t sxC, int64_t sxH, int64_t sxW, const T* w, int64_t KH,
                      int64_t KW, int64_t swC, int64_t swH, int64_t swW, const T* bias,
                      int64_t sb, int64_t stride_h, int64_t stride_w, int64_t pad_t,
                      int64_t pad_l, int64_t dil_h, int64_t dil_w, T* out, int64_t OH,
                      int64_t OW, int nthreads) {
  const int64_t HP = (OH - 1) * stride_h + (KH - 1) * dil_h + 1;
  const int64_t WP = (OW - 1) * stride_w + (KW - 1) * dil_w + 1;
  const int64_t planes = N * C;
  const int64_t plane_out = OH * OW;
  const int nt = threads_for(work_product(work_product(planes, plane_out), KH * KW + 1) +
                                 work_product(planes, HP * WP),
                             nthreads);
  // the rows and columns of the input inside the padded plane
  const int64_t y0 = std::max<int64_t>(0, -pad_t), y1 = std::min(H, HP - pad_t);
  const int64_t x0 = std::max<int64_t>(0, -pad_l), x1 = std::min(W, WP - pad_l);
  const int64_t plane_pad = size_mul(HP, WP);
  std::vector<T> pads(static_cast<size_t>(size_mul(plane_pad, nt)));
  parallel_for(planes, 1, nt, [&](int64_t lo, int64_t hi, int tid) {
    T* pp = pads.data() + tid * plane_pad;
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / C, c = item % C;
      const T* src = x + n * sxN + c * sxC;
      std::fill(pp, pp + plane_pad, T(0));
      for (int64_t y = y0; y < y1; ++y) {
        T* d = pp + (y + pad_t) * WP + pad_l;
        const T* s = src + y * sxH;
        for (int64_t xx = x0; xx < x1; ++xx) d[xx] = s[xx * sxW];
      }
      const T* wc = w + c * swC;
      T* o = out + item * plane_out;
      for (int64_t oy = 0; oy < OH; ++oy) {
        T* row = o + oy * OW;
        for (int64_t i = 0; i < KH; ++i) {
          const T* in = pp + (oy * stride_h + i * dil_h) * WP;
          for (int64_t j = 0; j < KW; ++j) {
            const T wv = wc[i * swH + j * swW];
            const T* r = in + j * dil_w;
            if (i == 0 && j == 0) {
              for (int64_t ox = 0; ox < OW; ++ox) row[ox] = r[ox * stride_w] * wv;
            } else if (stride_w == 1) {
              for (int64_t ox = 0; ox < OW; ++ox) row[ox] = row[ox] + r[ox] * wv;
            } else {
              for (int64_t ox = 0; ox < OW; ++ox) row[ox] = row[ox] + r[ox * stride_w] * wv;
            }
          }
        }
        if (bias) {
          const T b = bias[c * sb];
          for (int64_t ox = 0; ox < OW; ++ox) row[ox] = row[ox] + b;
        }
      }
    }
  });
}

}  // namespace fastops
