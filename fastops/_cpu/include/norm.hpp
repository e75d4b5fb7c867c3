// InstanceNormalization (ONNX InstanceNormalization 6/22, MMCV MMCVInstanceNormalization).
//
// x is viewed as (N, C, L) planes with element strides (sN, sC, 1): the spatial axes of
// a plane are contiguous.  y is C-contiguous (N, C, L).
//
// Statistics: one pass over a plane, in double, of d = x - x0 and d*d, where x0 is the
// plane's first element.  The shift removes the cancellation that makes E[x^2] - E[x]^2
// useless in float32 (ONNX Runtime: 1.8e-2 max error at a mean of 1e4; one-pass float32:
// 1.5e3) and the double accumulator the rounding of long sums.  Each plane is summed in
// fixed chunks of kNormChunk elements (8 lanes inside a chunk, chunks added in order), so
// the statistics are the same bits whichever threads computed which chunks.
//
// Output: y = ((x - m_hi) - m_lo) * a + b in T, with the mean split into T's nearest value
// m_hi and the remainder m_lo, a = scale / sqrt(var + eps) and b = bias.  For data near its
// mean, x - m_hi is exact (Sterbenz), so a float32 plane with a mean of 1e4 keeps the
// accuracy of a float64 computation (a few ulp of y) instead of losing 1e4 * 2^-24 to a
// folded shift.  No FMA contraction (setup.py: -ffp-contract=off): the GPU kernel
// computes the same bits.
//
// Parallelism: with at least as many planes as threads, a thread computes a plane's
// statistics and normalizes it while it is still in cache (x read from memory once);
// with fewer planes, (plane, chunk) items run in parallel for the statistics and again
// for the output.  The result never depends on the thread count.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "parallel.hpp"


namespace fastops {

constexpr int64_t kNormChunk = int64_t(1) << 14;

struct NormSums {
  double s1, s2;  // sum of d, sum of d * d, d = x - x0
};

// Sums of one chunk in 8 independent lanes (lane k takes elements i with i % 8 == k), the
// lanes and the tail added in a fixed order.  The lanes are two 4-double vectors written
// with GCC vector extensions: written as a plain 8-lane loop, GCC's SLP vectorizer had
// mixed one ymm, one xmm and two scalar lanes (3x slower than this).
template <typename T>
inline NormSums norm_chunk(const T* x, int64_t len, double x0) {
  typedef double v4d __attribute__((vector_size(32)));
  typedef T v4t __attribute__((vector_size(4 * sizeof(T))));
  const v4d shift = {x0, x0, x0, x0};
  v4d a0 = {0, 0, 0, 0}, a1 = a0, b0 = a0, b1 = a0;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    v4t lo, hi;
    std::memcpy(&lo, x + i, sizeof lo);
    std::memcpy(&hi, x + i + 4, sizeof hi);
    const v4d d0 = __builtin_convertvector(lo, v4d) - shift;
    const v4d d1 = __builtin_convertvector(hi, v4d) - shift;
    a0 += d0;
    a1 += d1;
    b0 += d0 * d0;
    b1 += d1 * d1;
  }
  double a[8] = {a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]};
  double b[8] = {b0[0], b0[1], b0[2], b0[3], b1[0], b1[1], b1[2], b1[3]};
  for (; i < len; ++i) {
    const double d = static_cast<double>(x[i]) - x0;
    a[i & 7] += d;
    b[i & 7] += d * d;
  }
  NormSums s{0, 0};
  for (int k = 0; k < 8; ++k) {
    s.s1 += a[k];
    s.s2 += b[k];
  }
  return s;
}

template <typename T>
struct NormCoef {
  T m_hi, m_lo, a, b;
};

// Coefficients of one plane from its chunk sums (added in chunk order).
template <typename T>
inline NormCoef<T> norm_coef(const NormSums* chunks, int64_t nchunks, int64_t L, double x0,
                             double scale, double bias, double eps) {
  double s1 = 0, s2 = 0;
  for (int64_t c = 0; c < nchunks; ++c) {
    s1 += chunks[c].s1;
    s2 += chunks[c].s2;
  }
  const double md = s1 / static_cast<double>(L);
  double var = s2 / static_cast<double>(L) - md * md;  // shifted: no cancellation
  if (var < 0) var = 0;
  const double mean = x0 + md;
  NormCoef<T> k;
  k.m_hi = static_cast<T>(mean);
  k.m_lo = static_cast<T>(mean - static_cast<double>(k.m_hi));
  k.a = static_cast<T>(scale / std::sqrt(var + eps));
  k.b = static_cast<T>(bias);
  return k;
}

// Outputs of at least kStreamBytes go out with non-temporal stores (common.hpp):
// 8x64x128x128 float32 from 2.79 to 2.45 ms (medians of six runs each, 2 threads, C++
// harness around instance_norm).  The same operations, so the same bits.

template <typename T>
inline void norm_apply(const T* x, T* y, int64_t len, const NormCoef<T>& k, bool stream) {
  int64_t i = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
    if (stream) {
      using S = Sse<T>;
      for (; i < len && (reinterpret_cast<uintptr_t>(y + i) & 15); ++i)
        y[i] = ((x[i] - k.m_hi) - k.m_lo) * k.a + k.b;
      const typename S::V mh = S::set1(k.m_hi), ml = S::set1(k.m_lo), a = S::set1(k.a),
                          b = S::set1(k.b);
      for (; i + S::kWidth <= len; i += S::kWidth)
        S::stream(y + i, S::add(S::mul(S::sub(S::sub(S::load(x + i), mh), ml), a), b));
    }
  }
#endif
  for (; i < len; ++i) y[i] = ((x[i] - k.m_hi) - k.m_lo) * k.a + k.b;
}

// Non-temporal stores are weakly ordered: each thread fences its own before its part of
// the call counts as done.
inline void norm_fence(bool stream) {
  if (stream) stream_fence();
}

// scale, bias: (C,) in double; y: (N, C, L) C-contiguous; L >= 1.
template <typename T>
void instance_norm(const T* x, int64_t N, int64_t C, int64_t L, int64_t sN, int64_t sC,
                   const double* scale, const double* bias, double eps, T* y, int nthreads) {
  const int64_t P = N * C;
  const int64_t nchunks = (L + kNormChunk - 1) / kNormChunk;
  const int nt = threads_for(work_product(P, L), nthreads);
  auto plane = [&](int64_t p) { return x + (p / C) * sN + (p % C) * sC; };
  const bool stream = P * L >= kStreamBytes / static_cast<int64_t>(sizeof(T));
  if (P >= nt) {
    // fused: statistics then output while the plane is in cache; scratch per thread
    ThreadScratch<NormSums> scratch(nchunks, nt);
    parallel_for(P, chunk_for(P, nt), nt, [&](int64_t p0, int64_t p1, int slot) {
      NormSums* part = scratch(slot);
      for (int64_t p = p0; p < p1; ++p) {
        const T* xp = plane(p);
        const double x0 = static_cast<double>(xp[0]);
        for (int64_t c = 0; c < nchunks; ++c)
          part[c] = norm_chunk(xp + c * kNormChunk, std::min(kNormChunk, L - c * kNormChunk), x0);
        const int64_t ch = p % C;
        const NormCoef<T> k = norm_coef<T>(part, nchunks, L, x0, scale[ch], bias[ch], eps);
        norm_apply(xp, y + p * L, L, k, stream);
      }
      norm_fence(stream);
    });
    return;
  }
  // few planes: (plane, chunk) items for the statistics, then for the output
  std::vector<NormSums> part(static_cast<size_t>(size_mul(P, nchunks)));
  std::vector<NormCoef<T>> coef(static_cast<size_t>(P));
  const int64_t items = P * nchunks;
  parallel_for(items, 1, nt, [&](int64_t i0, int64_t i1, int) {
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t p = it / nchunks, c = it % nchunks;
      const T* xp = plane(p);
      part[it] = norm_chunk(xp + c * kNormChunk, std::min(kNormChunk, L - c * kNormChunk),
                            static_cast<double>(xp[0]));
    }
  });
  for (int64_t p = 0; p < P; ++p)  // P < nt: a handful
    coef[p] = norm_coef<T>(part.data() + p * nchunks, nchunks, L,
                           static_cast<double>(plane(p)[0]), scale[p % C], bias[p % C], eps);
  parallel_for(items, 1, nt, [&](int64_t i0, int64_t i1, int) {
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t p = it / nchunks, c = it % nchunks;
      norm_apply(plane(p) + c * kNormChunk, y + p * L + c * kNormChunk,
                 std::min(kNormChunk, L - c * kNormChunk), coef[p], stream);
    }
    norm_fence(stream);
  });
}

// Mean of each of P planes of L contiguous values (plane p at x + p * sP), in T:
// GlobalAveragePool of Session.  16 running sums per plane (the loop GCC vectorizes
// without reassociating), folded pairwise, then one division.  NumPy's mean over the
// two spatial axes took 90 us for frcnn's 672 x 20 x 26 SE inputs (eight a run).
template <typename T>
void plane_means(const T* x, int64_t P, int64_t L, int64_t sP, T* out, int nthreads) {
  constexpr int64_t kLanes = 16;
  const int nt = threads_for(work_product(P, L), nthreads);
  parallel_for(P, chunk_for(P, nt), nt, [&](int64_t lo, int64_t hi, int) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* s = x + p * sP;
      T acc[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= L; i += kLanes)
        for (int64_t k = 0; k < kLanes; ++k) acc[k] = acc[k] + s[i + k];
      for (int64_t k = 0; i + k < L; ++k) acc[k] = acc[k] + s[i + k];
      for (int64_t w = kLanes / 2; w >= 1; w /= 2)
        for (int64_t k = 0; k < w; ++k) acc[k] = acc[k] + acc[k + w];
      out[p] = acc[0] / static_cast<T>(L);
    }
  });
}

}  // namespace fastops
