// Deformable convolution, DCN v1 and v2 (torchvision deform_conv2d, MMCV DeformConv2d /
// ModulatedDeformConv2d, ONNX DeformConv 19/22).
//
// y[n, m, oy, ox] = bias[m] + sum over c in m's group, taps k = (i, j) of
//     weight[m, c, i, j] * mask[n, d(c), k, oy, ox] * bilinear(x[n, c], py, px)
//   py = oy * stride_h - pad_h + i * dil_h + offset[n, d(c), k, 0, oy, ox]
//   px = ox * stride_w - pad_w + j * dil_w + offset[n, d(c), k, 1, oy, ox]
// with d(c) = c / (C / deform_groups) and the torchvision/MMCV boundary rule: a sample
// with py <= -1, py >= H, px <= -1 or px >= W (or a NaN coordinate) is 0, otherwise each
// of its four corners outside the map contributes 0.
//
// Algorithm (per call):
//  1. The weight is reordered once to wr[g][m][k * Cg + c] (a GEMM operand).
//  2. x is transposed to channels-last, one chunk of images at a time:
//     xt[n][pixel][c] with one extra all-zero pixel (index H*W) per image.  A corner
//     outside the map points at that zero pixel with weight 0, so it reads in bounds and
//     contributes exactly 0 even where the map holds inf/NaN (the plan of ONNX Runtime
//     points such corners at pixel 0, where an inf turns the sample into NaN).
//  3. Work items are (image, tile of P output pixels); P depends only on the problem's
//     shape.  For each item a thread builds the bilinear sampling plan of the tile (per
//     deform group, tap and pixel: 4 element offsets into xt and 4 weights times the
//     mask), then for each group the column tile col[p][k * Cg + c]: every plan entry
//     blends 4 contiguous channel vectors (vectorizes across channels), then one GEMM
//     out[n, g*Mg : (g+1)*Mg, tile] = wr[g] . col^T, then the bias.
//  The column matrix therefore never materializes beyond one tile per thread (it would be
//  N * C * kh * kw * OH * OW elements).  Each output element is produced by one fixed
//  sequence of operations (its tile's plan, column and single-threaded GEMM), so results
//  do not depend on the thread count or on how images are chunked (im2col_step).
//
// Why channels-last columns: a microbenchmark of the column fill alone (same plan, tiles,
// one thread, no GEMM) took 2.9-8 ms channels-last vs 9-16 ms with ONNX Runtime's NCHW
// columns (one scalar 4-corner gather per channel, tap and pixel) for 64 channels of
// 64x64, and 74-80 vs 221-226 ms for 256 channels of 100x136 (noisy shared 2-core VM).
//
// GEMM, single-threaded inside each parallel_for thread: in float32 in the x86-64-v4
// build, fastops' own AVX-512 GEMM (gemm_nt_zmm), in the x86-64-v3 build the Session's
// packed AVX2 GEMM (conv.hpp gemm_packed, B read transposed); else a CBLAS sgemm/dgemm
// found at run time (NumPy's bundled OpenBLAS, see deform_conv.pyx); without one, a
// portable GEMM (gemm_nt_builtin).  The GEMM is most of the op: 1x256x100x136, 256 -> 256, 3x3, one
// thread on the AVX-512 EPYC: 160 ms with OpenBLAS (its GEMM alone 144), 87 with the
// AVX-512 GEMM.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common.hpp"
#include "conv.hpp"
#include "parallel.hpp"

// One fixed sequence of roundings per output element on every build (no FMA contraction
// in the sampling arithmetic, even with -march=native).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace fastops {

// ------------------------------------------------------------------ GEMM back ends
// CBLAS function pointers (row-major calls).  ilp64: 64-bit integer arguments (OpenBLAS
// built with INTERFACE64, as NumPy's wheels bundle it); otherwise 32-bit.
struct DcnGemm {
  std::uintptr_t sgemm = 0;
  std::uintptr_t dgemm = 0;
  bool ilp64 = true;
};

enum : int { kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112 };

template <typename T, typename I>
using cblas_gemm_fn = void (*)(int, int, int, I, I, I, T, const T*, I, const T*, I, T, T*, I);

// C[m][n] = sum_k A[m][k] * B[n][k] (row-major, both operands contiguous along k), the
// fallback where no BLAS is available.  Blocks of kGemmNR columns of B are packed k-major
// into `pack` (K * kGemmNR elements, zero-padded), then kGemmMR x kGemmNR blocks of C
// accumulate outer products over k in 16-byte vectors (GCC/Clang vector extensions: SSE2
// on baseline x86-64, NEON on arm64), each element summed in ascending k, so results do
// not depend on the block an element falls in.  Measured (64 x 512 x 576 float, 1
// thread): 12 GFLOP/s, about 5x below OpenBLAS's AVX2 kernel; plain loops (dot products
// with 8 partial sums, or scalar outer products that GCC kept in memory) ran 3 GFLOP/s.
constexpr int64_t kGemmMR = 4;
constexpr int64_t kGemmNV = 2;                       // 16-byte vectors per row of a block
constexpr int64_t kGemmNR = kGemmNV * 16 / 4;        // columns per block (float: 8)

template <typename T>
void gemm_nt_builtin(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                     int64_t ldb, T* C, int64_t ldc, T* pack) {
  constexpr int64_t VL = 16 / int64_t(sizeof(T));    // lanes per vector
  constexpr int64_t NR = VL * kGemmNV;               // <= kGemmNR (the pack's row length)
#if defined(__GNUC__)
  typedef T V __attribute__((vector_size(16)));
#endif
  for (int64_t n0 = 0; n0 < N; n0 += NR) {
    const int64_t nr = std::min(NR, N - n0);
    for (int64_t k = 0; k < K; ++k) {
      T* row = pack + k * NR;
      for (int64_t j = 0; j < nr; ++j) row[j] = B[(n0 + j) * ldb + k];
      for (int64_t j = nr; j < NR; ++j) row[j] = T(0);
    }
    int64_t m = 0;
#if defined(__GNUC__)
    for (; m + kGemmMR <= M; m += kGemmMR) {
      V acc[kGemmMR][kGemmNV] = {};
      const T* a = A + m * lda;
      for (int64_t k = 0; k < K; ++k) {
        V b[kGemmNV];
        std::memcpy(b, pack + k * NR, sizeof(b));
        for (int64_t r = 0; r < kGemmMR; ++r) {
          const T av = a[r * lda + k];
          for (int64_t v = 0; v < kGemmNV; ++v) acc[r][v] += av * b[v];
        }
      }
      for (int64_t r = 0; r < kGemmMR; ++r) {
        T out[NR];
        for (int64_t v = 0; v < kGemmNV; ++v) {
          const V t = acc[r][v];
          std::memcpy(out + v * VL, &t, sizeof(V));
        }
        for (int64_t j = 0; j < nr; ++j) C[(m + r) * ldc + n0 + j] = out[j];
      }
    }
#endif
    for (; m < M; ++m) {                              // remaining rows (all, without GNU C)
      T acc[NR] = {};
      const T* a = A + m * lda;
      for (int64_t k = 0; k < K; ++k) {
        const T* b = pack + k * NR;
        const T av = a[k];
        for (int64_t j = 0; j < NR; ++j) acc[j] += av * b[j];
      }
      for (int64_t j = 0; j < nr; ++j) C[m * ldc + n0 + j] = acc[j];
    }
  }
}

// C[m][n] = sum_k A[m][k] * B[n][k] in float32 with AVX-512 (the x86-64-v4 build only:
// kDcnZmmGemm), the deformable convolution's GEMM there: wr[g] . col^T per tile.  Why
// not the BLAS: NumPy's bundled OpenBLAS (0.3.x) runs its Haswell (AVX2) sgemm on Zen 5
// and other AVX-512 CPUs: 111 GFLOP/s on one core of the AVX-512 EPYC, where this
// kernel runs 220-230 (the core's 512-bit FMA peak is 240, its 256-bit one 120;
// 256 x 224 x 2304 tiles, 1x256x100x136 -> 256 3x3).
//
// The C^T form: the register block is kZmmMR rows of B (output pixels: the column tile
// as it is filled, rows contiguous in k, read by broadcasts, never packed) times a strip
// of SW rows of A (output channels, SW = 16 or 32, one or two 512-bit vectors) packed
// k-major once per call by zmm_pack.  k runs in passes of kZmmKC (the pass's strip slice,
// 48 KiB, stays in L1 across the pixel blocks; the tile's kZmmKC columns in L2); the
// partial sums of earlier passes wait in scratch, and the last pass writes its block
// transposed into C.  Each element is the same sequence whatever its block or tile:
// FMAs in ascending k within a pass, then the earlier passes' sum + this pass's, so the
// results do not depend on the tiling or the thread count.  Measured in a standalone
// loop (one thread, 256 x 224 x 2304, GFLOP/s): MR 12 / 14 with KC 256: 207 / 222; MR
// 14 with KC 128 / 384 / 768 / all of K: 199 / 227 / 228 / 230.
constexpr int64_t kZmmMR = 14;   // 28 accumulators of the 32 zmm registers
constexpr int64_t kZmmKC = 384;
#if defined(__AVX512F__)
constexpr bool kDcnZmmGemm = true;
#else
constexpr bool kDcnZmmGemm = false;
#endif

inline int64_t zmm_strip(int64_t M) { return M <= 16 ? 16 : 32; }
inline int64_t zmm_round(int64_t n, int64_t step) { return size_mul((n + step - 1) / step, step); }
// floats of zmm_pack's output for an (M, K) A, and of gemm_nt_zmm's scratch for N rows
inline int64_t zmm_packed_size(int64_t M, int64_t K) {
  return size_mul(zmm_round(M, zmm_strip(M)), K);
}
inline int64_t zmm_scratch_size(int64_t M, int64_t N) {
  return size_add(size_mul(zmm_round(N, kZmmMR), zmm_round(M, zmm_strip(M))),
                  kZmmMR * kZmmKC);
}

// A (M, K), rows lda apart -> strips of SW rows, k-major: A[m][k] at
// (m / SW * K + k) * SW + m % SW; rows past M are 0.
inline void zmm_pack(const float* A, int64_t M, int64_t K, int64_t lda, float* packed) {
  const int64_t SW = zmm_strip(M);
  for (int64_t m0 = 0; m0 < M; m0 += SW) {
    float* dst = packed + m0 * K;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < SW; ++j) dst[k * SW + j] = m0 + j < M ? A[(m0 + j) * lda + k] : 0.f;
  }
}

#if defined(__AVX512F__)
// One block: rows a[r * lda + k] (r < kZmmMR) times the strip slice w[k * 16 * NV + ...]
// over kc values of k.  ct: this block's partial sums (kZmmMR x 16 * NV), read unless
// first, written unless last; on the last pass rows < nb and columns < mb go to
// c[col * ldc + row] (C transposed: the strip's rows are C's rows).
template <int NV>
__attribute__((noinline)) void zmm_block(const float* a, int64_t lda, const float* w,
                                         int64_t kc, float* ct, bool first, bool last,
                                         float* c, int64_t ldc, int64_t nb, int64_t mb) {
  constexpr int64_t SW = 16 * NV;
  // fully unrolled, so GCC keeps the accumulators in registers (checked: no stack traffic
  // in the k loop)
  __m512 acc[kZmmMR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < kZmmMR; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 wv[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(w + k * SW + 16 * v);
#pragma GCC unroll 16
    for (int r = 0; r < kZmmMR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(av, wv[v], acc[r][v]);
    }
  }
  if (!first) {
#pragma GCC unroll 16
    for (int r = 0; r < kZmmMR; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v)
        acc[r][v] = _mm512_add_ps(_mm512_loadu_ps(ct + r * SW + 16 * v), acc[r][v]);
  }
  float* dst = ct;
  alignas(64) float sums[kZmmMR * SW];
  if (last) dst = sums;
#pragma GCC unroll 16
  for (int r = 0; r < kZmmMR; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(dst + r * SW + 16 * v, acc[r][v]);
  if (!last) return;
  for (int64_t m = 0; m < mb; ++m) {
    float* cm = c + m * ldc;
    for (int64_t r = 0; r < nb; ++r) cm[r] = sums[r * SW + m];
  }
}

// C (M x N, rows ldc apart) = A . B^T with A packed by zmm_pack (M, K), B (N, K) rows
// ldb apart, K >= 1; scratch: zmm_scratch_size(M, N) floats.  Rows of B past N are never
// read: a last block of fewer than kZmmMR rows is copied, zero-padded, into scratch.
inline void gemm_nt_zmm(const float* packed, int64_t M, int64_t K, const float* B,
                        int64_t N, int64_t ldb, float* C, int64_t ldc, float* scratch) {
  const int64_t SW = zmm_strip(M);
  const int64_t Np = zmm_round(N, kZmmMR), Mp = zmm_round(M, SW);
  float* tail = scratch + Np * Mp;  // kZmmMR x kZmmKC
  const int64_t nfull = N / kZmmMR * kZmmMR;  // rows in full blocks
  for (int64_t k0 = 0; k0 < K; k0 += kZmmKC) {
    const int64_t kc = std::min(kZmmKC, K - k0);
    const bool first = k0 == 0, last = k0 + kc >= K;
    for (int64_t r = 0; nfull < N && r < kZmmMR; ++r)
      for (int64_t k = 0; k < kc; ++k)
        tail[r * kc + k] = nfull + r < N ? B[(nfull + r) * ldb + k0 + k] : 0.f;
    // strips outer: the strip's slice (kc x SW) stays in L1 across the row blocks
    for (int64_t m = 0; m < M; m += SW) {
      const float* w = packed + (m * K + k0 * SW);
      const int64_t mb = std::min(SW, M - m);
      for (int64_t n = 0; n < N; n += kZmmMR) {
        const bool full = n < nfull;
        const float* a = full ? B + n * ldb + k0 : tail;
        const int64_t lda = full ? ldb : kc, nb = full ? kZmmMR : N - n;
        float* ct = scratch + (m / SW * Np + n) * SW;
        if (SW == 16)
          zmm_block<1>(a, lda, w, kc, ct, first, last, C + m * ldc + n, ldc, nb, mb);
        else
          zmm_block<2>(a, lda, w, kc, ct, first, last, C + m * ldc + n, ldc, nb, mb);
      }
    }
  }
}
#endif

// Can the BLAS take these sizes?  (32-bit interfaces cannot address past 2**31 - 1.)
inline bool dcn_blas_fits(const DcnGemm& g, int64_t a, int64_t b, int64_t c, int64_t d) {
  if (g.ilp64) return true;
  const int64_t lim = INT32_MAX;
  return a <= lim && b <= lim && c <= lim && d <= lim;
}

// The GEMM a call asks for (deform_conv.pyx set_gemm) and the one it gets: in float32 the
// AVX-512 GEMM in the x86-64-v4 build, else (asked for it or for "avx2") conv.hpp's packed
// AVX2 GEMM in the x86-64-v3 and -v4 builds (kPackedGemm), else the BLAS where one was
// found and can address the operands, else the builtin one.  Why the packed GEMM before
// the BLAS (NumPy's OpenBLAS 0.3.x, its Haswell sgemm): the whole op, Zen 1 VM, 2 threads,
// after a pause, against the BLAS build in one process (scripts/checkout_ab.py, medians
// of 11): fastops._bench.conv's 2x64x64x64 -> 64 3x3 15.8 -> 12.5-12.8 ms (v1 and v2),
// 1x256x100x136 -> 256 3x3 246 -> 243 ms (there the GEMMs run at about 38 GFLOP/s a core
// either way).
enum DcnGemmKind : int { kDcnBuiltin = 0, kDcnBlas = 1, kDcnZmm = 2, kDcnYmm = 3 };

template <typename T>
inline int dcn_gemm_resolve(const DcnGemm& g, int kind, int64_t M, int64_t N, int64_t K,
                            int64_t ld) {
  if (kind == kDcnZmm && kDcnZmmGemm && std::is_same<T, float>::value) return kDcnZmm;
  if ((kind == kDcnZmm || kind == kDcnYmm) && kPackedGemm && std::is_same<T, float>::value)
    return kDcnYmm;
  if (kind != kDcnBuiltin && (std::is_same<T, float>::value ? g.sgemm : g.dgemm) &&
      dcn_blas_fits(g, M, N, K, ld))
    return kDcnBlas;
  return kDcnBuiltin;
}

template <typename T>
inline void dcn_blas_gemm_nt(const DcnGemm& g, int64_t M, int64_t N, int64_t K, const T* A,
                             int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  const std::uintptr_t p = std::is_same<T, float>::value ? g.sgemm : g.dgemm;
  if (g.ilp64) {
    auto fn = reinterpret_cast<cblas_gemm_fn<T, int64_t>>(p);
    fn(kCblasRowMajor, kCblasNoTrans, kCblasTrans, M, N, K, T(1), A, lda, B, ldb, T(0), C,
       ldc);
  } else {
    auto fn = reinterpret_cast<cblas_gemm_fn<T, int32_t>>(p);
    fn(kCblasRowMajor, kCblasNoTrans, kCblasTrans, static_cast<int32_t>(M),
       static_cast<int32_t>(N), static_cast<int32_t>(K), T(1), A, static_cast<int32_t>(lda),
       B, static_cast<int32_t>(ldb), T(0), C, static_cast<int32_t>(ldc));
  }
}

// C = A . B^T (beta 0) with `kind`, a dcn_gemm_resolve result.  scratch: the builtin
// GEMM's B panel (K * kGemmNR), the AVX-512 one's (zmm_scratch_size(M, N)) or the packed
// one's C block (M * N, copied into C's rows ldc apart); zpacked: A as zmm_pack or
// gemm_pack gives it (those two GEMMs only).  Null for either: allocated here (the tests'
// and the self-test's entry; the kernel below passes both, packed once per call).
template <typename T>
inline void dcn_gemm_nt(const DcnGemm& g, int kind, int64_t M, int64_t N, int64_t K,
                        const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc,
                        T* scratch, const T* zpacked) {
  if (K == 0) {  // no input channels: the product is 0 (do not ask BLAS about k = 0)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * ldc + n] = T(0);
    return;
  }
  std::vector<T> own_scratch, own_packed;
  if (kind == kDcnBlas) {
    dcn_blas_gemm_nt(g, M, N, K, A, lda, B, ldb, C, ldc);
    return;
  }
  if constexpr (std::is_same<T, float>::value && kPackedGemm) {
    if (kind == kDcnYmm) {
      if (!zpacked) {
        own_packed.resize(static_cast<size_t>(gemm_packed_size(M, K)));
        gemm_pack(A, M, K, lda, 1, own_packed.data(), 1);
        zpacked = own_packed.data();
      }
      if (!scratch) {
        own_scratch.resize(static_cast<size_t>(size_mul(M, N)));
        scratch = own_scratch.data();
      }
      // one thread: the caller's tile is its work item (the sums do not depend on it)
      gemm_packed(zpacked, M, K, B, 1, 0, ldb, true, N, nullptr, nullptr, kActNone, scratch, 1);
      for (int64_t m = 0; m < M; ++m) std::memcpy(C + m * ldc, scratch + m * N, N * sizeof(T));
      return;
    }
  }
#if defined(__AVX512F__)
  if constexpr (std::is_same<T, float>::value) {
    if (kind == kDcnZmm) {
      if (!zpacked) {
        own_packed.resize(static_cast<size_t>(zmm_packed_size(M, K)));
        zmm_pack(A, M, K, lda, own_packed.data());
        zpacked = own_packed.data();
      }
      if (!scratch) {
        own_scratch.resize(static_cast<size_t>(zmm_scratch_size(M, N)));
        scratch = own_scratch.data();
      }
      gemm_nt_zmm(zpacked, M, K, B, N, ldb, C, ldc, scratch);
      return;
    }
  }
#endif
  if (!scratch) {
    own_scratch.resize(static_cast<size_t>(size_mul(K, kGemmNR)));
    scratch = own_scratch.data();
  }
  gemm_nt_builtin(M, N, K, A, lda, B, ldb, C, ldc, scratch);
}

// ------------------------------------------------------------------ sampling plan
// One bilinear sample: element offsets of its 4 corners in the channels-last image
// (pixel * C) and their weights (times the mask).  Corners outside the map point at the
// image's zero pixel.  // candidate for interp.hpp (a 2-D corner form of AxisLerp with
// the deformable-conv edge rule)
template <typename T>
struct DcnSample {
  int64_t off[4];
  T w[4];
};

// The torchvision/MMCV rule for one sample at (py, px) of an H x W map.  `zero` is the
// element offset of the zero pixel, C the channel stride of the channels-last image,
// m the mask value (1 without a mask).  Arithmetic in T, in torchvision's order
// (w1 = hh * hw, ...); the mask multiplies each weight.  A NaN coordinate fails both
// comparisons: the sample is outside (0, as ONNX Runtime gives; torchvision's floor of
// NaN is undefined behaviour).
template <typename T>
inline void dcn_sample(T py, T px, int64_t H, int64_t W, int64_t C, int64_t zero, T m,
                       DcnSample<T>& s) {
  if (!(py > T(-1) && py < static_cast<T>(H) && px > T(-1) && px < static_cast<T>(W))) {
    for (int j = 0; j < 4; ++j) {
      s.off[j] = zero;
      s.w[j] = m * T(0);  // 0; NaN for a NaN/inf mask, as the peers' mask * 0
    }
    return;
  }
  const T fy = std::floor(py);
  const T fx = std::floor(px);
  const int64_t yl = static_cast<int64_t>(fy);  // in [-1, H - 1]: exact
  const int64_t xl = static_cast<int64_t>(fx);
  const int64_t yh = yl + 1;
  const int64_t xh = xl + 1;
  const T ly = py - fy;
  const T lx = px - fx;
  const T hy = T(1) - ly;
  const T hx = T(1) - lx;
  const bool ylo = yl >= 0, yhi = yh <= H - 1, xlo = xl >= 0, xhi = xh <= W - 1;
  s.off[0] = (ylo && xlo) ? (yl * W + xl) * C : zero;
  s.off[1] = (ylo && xhi) ? (yl * W + xh) * C : zero;
  s.off[2] = (yhi && xlo) ? (yh * W + xl) * C : zero;
  s.off[3] = (yhi && xhi) ? (yh * W + xh) * C : zero;
  s.w[0] = m * (hy * hx);
  s.w[1] = m * (hy * lx);
  s.w[2] = m * (ly * hx);
  s.w[3] = m * (ly * lx);
}

// ------------------------------------------------------------------ column tiles
// col[p][k * cg + c] (p < np, k < K, c < cg) for the channels ch0 .. ch0 + cg - 1 of one
// group: each plan entry blends 4 contiguous channel vectors of the channels-last image
// xn, w0*v0 + w1*v1 + w2*v2 + w3*v3 left to right (a group's channels may span several
// deform groups: one segment per deform group).  Vector width: an AVX2 build of this
// loop (chosen at run time) measured no faster than the baseline SSE2 one
// (1x256x100x136 and 2x64x64x64, 3x3, one output channel so that the sampling
// dominates: 38-61 vs 39-53 ms and 6.8-10 vs 6.8-8.9 ms CPU time, noisy shared VM): the
// blend is bound by the gathers from the image and the column writes, not by arithmetic,
// so there is no run-time dispatch.
// Plain (no offsets): each entry is one integer pixel (or the zero pixel), copied.
template <bool Plain, typename T>
void dcn_fill_columns(const DcnSample<T>* plan, int64_t P, int64_t np, int64_t K,
                      int64_t ch0, int64_t cg, int64_t Cd, const T* xn, T* col) {
  const int64_t kcg = K * cg;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t c0 = 0; c0 < cg;) {
      const int64_t ch = ch0 + c0;                   // first channel of this segment
      const int64_t d = ch / Cd;                     // its deform group
      const int64_t len = std::min(cg - c0, (d + 1) * Cd - ch);
      const DcnSample<T>* pl = plan + (d * K + k) * P;
      for (int64_t p = 0; p < np; ++p) {
        const DcnSample<T>& s = pl[p];
        if (Plain) {
          std::memcpy(col + p * kcg + k * cg + c0, xn + s.off[0] + ch,
                      static_cast<size_t>(len) * sizeof(T));
          continue;
        }
        const T* __restrict s0 = xn + s.off[0] + ch;
        const T* __restrict s1 = xn + s.off[1] + ch;
        const T* __restrict s2 = xn + s.off[2] + ch;
        const T* __restrict s3 = xn + s.off[3] + ch;
        const T w0 = s.w[0], w1 = s.w[1], w2 = s.w[2], w3 = s.w[3];
        T* __restrict dst = col + p * kcg + k * cg + c0;
        for (int64_t c = 0; c < len; ++c)
          dst[c] = w0 * s0[c] + w1 * s1[c] + w2 * s2[c] + w3 * s3[c];
      }
      c0 += len;
    }
  }
}

// ------------------------------------------------------------------ tile sizes
// Output pixels per tile.  Small tiles keep the column tile in cache while the GEMM
// reads it; large ones make each GEMM call efficient (OpenBLAS repacks the weight operand
// on every call, and a narrow N is slow: sgemm 256 x P x 2304 alone ran 277 ms (P = 64),
// 265 (128), 236 (256), 245 (512) per 13600 pixels on one core).  The column tile aims at
// 2 MiB (P = 224 for 256 channels x 3x3 in float32, 512 for 64 channels), within
// [64, 512] pixels.  Measured with fastops._bench.conv, 1 thread, CPU time, on the shared
// 2-core VM (noisy): the totals were flat within the noise for P from 64 to 512 on both
// workloads and worse outside (P = 16: 390 vs 310 ms on the detector layer; P = 1024:
// 21 vs 17 ms on 2x64x64x64).
constexpr int64_t kDcnColTileBytes = int64_t(2) << 20;
constexpr int64_t kDcnTileMin = 64;
constexpr int64_t kDcnTileMax = 512;
constexpr int64_t kDcnTileStep = 32;
// Channels-last copy of x made per chunk of images (bounded scratch, like MMCV's
// im2col_step); a single image larger than this is still done in one piece.
constexpr int64_t kDcnChunkBytes = int64_t(64) << 20;

// A small image (OH * OW < kDcnTileSplit * P) is still cut into kDcnTileSplit tiles of
// at least kDcnTileStep pixels, so that its GEMMs spread over the threads: the frcnn
// detector's 256 -> 256 3x3 convolution of a 10 x 13 map ran as one tile on one thread
// (4.4 ms; 2.2 ms as 4 tiles on 2 threads).  Shape-only, like every tile rule here.
constexpr int64_t kDcnTileSplit = 4;

inline int64_t dcn_tile_pixels(int64_t kcg, int64_t ohw, int64_t elem) {
  int64_t p = kDcnColTileBytes / std::max<int64_t>(1, kcg * elem);
  p = std::max(kDcnTileMin, std::min(kDcnTileMax, p));
  p = (p / kDcnTileStep) * kDcnTileStep;
  const int64_t split = (ohw + kDcnTileSplit - 1) / kDcnTileSplit;
  p = std::min(p, std::max(kDcnTileStep, (split + 7) / 8 * 8));
  return std::min(p, std::max<int64_t>(1, ohw));
}

// ------------------------------------------------------------------ the kernel
// x (N, C, H, W), offset (N, 2*dg*KH*KW, OH, OW) or null (a plain convolution: dg = 1,
// no mask, integer taps copied into the columns: Session's Conv), mask (N, dg*KH*KW,
// OH, OW) or null, weight (M, C/G, KH, KW): any element strides.  bias (M,) or null.
// out: C-contiguous (N, M, OH, OW).  N, M, OH, OW >= 1; C, H, W >= 0; C % G == 0, C % dg == 0, M % G == 0.
// Sizes are validated by the caller (fastops.conv); coordinates are never trusted.
template <typename T>
void deform_conv2d(const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sxN,
                   int64_t sxC, int64_t sxH, int64_t sxW, const T* off, int64_t soN,
                   int64_t soC, int64_t soH, int64_t soW, const T* mask, int64_t smN,
                   int64_t smC, int64_t smH, int64_t smW, const T* weight, int64_t M,
                   int64_t KH, int64_t KW, int64_t swM, int64_t swC, int64_t swH, int64_t swW,
                   const T* bias, int64_t sb, int64_t stride_h, int64_t stride_w,
                   int64_t pad_h, int64_t pad_w, int64_t dil_h, int64_t dil_w, int64_t groups,
                   int64_t dgroups, T* out, int64_t OH, int64_t OW, const DcnGemm& gemm,
                   int gemm_kind, int nthreads) {
  const int64_t K = KH * KW;
  const int64_t G = groups, DG = dgroups;
  const int64_t Cg = C / G, Mg = M / G, Cd = C / DG;
  const int64_t KCg = K * Cg;
  const int64_t HW = H * W;
  const int64_t OHW = OH * OW;
  const int64_t img = size_mul(size_add(HW, 1), C);  // channels-last image + zero pixel

  const int kind = dcn_gemm_resolve<T>(gemm, gemm_kind, Mg, OHW, KCg, KCg);

  // 1. weight reordered to wr[g][m][k * Cg + c]
  std::vector<T> wr(static_cast<size_t>(size_mul(M, KCg)));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t i = 0; i < KH; ++i)
        for (int64_t j = 0; j < KW; ++j)
          wr[m * KCg + (i * KW + j) * Cg + c] = weight[m * swM + c * swC + i * swH + j * swW];

  const int64_t P = dcn_tile_pixels(KCg, OHW, static_cast<int64_t>(sizeof(T)));
  const int64_t tiles = (OHW + P - 1) / P;
  const int64_t chunk = std::max<int64_t>(
      1, std::min<int64_t>(N, kDcnChunkBytes / std::max<int64_t>(1, img * int64_t(sizeof(T)))));

  // work: blending (N*OHW*K*C) plus the GEMM (N*OHW*K*C*Mg)
  const int64_t work = work_product(work_product(N * OHW, KCg * G), Mg + 4);
  int nt = threads_for(work, nthreads);
  nt = static_cast<int>(std::min<int64_t>(nt, std::max<int64_t>(1, chunk * tiles)));

  // scratch, all allocated before the parallel region
  // (uninitialized: every element is written before it is read)
  std::unique_ptr<T[]> xt(new T[static_cast<size_t>(size_mul(chunk, img))]);
  const int64_t plan_n = size_mul(size_mul(DG, K), P);
  ThreadScratch<DcnSample<T>> plans(plan_n, nt, false);
  ThreadScratch<T> cols(size_mul(P, KCg), nt, false);
  // the GEMM's scratch: the builtin one's B panel, the AVX-512 one's partial sums
  const int64_t pack_n = kind == kDcnBuiltin ? size_mul(KCg, kGemmNR)
                         : kind == kDcnZmm   ? zmm_scratch_size(Mg, P)
                         : kind == kDcnYmm   ? size_mul(Mg, P)
                                             : 0;
  ThreadScratch<T> packs(pack_n, nt, false);
  // the AVX-512 or packed GEMM's A: each group's weight rows packed, wz_n per group
  const int64_t wz_n = kind == kDcnZmm   ? zmm_packed_size(Mg, KCg)
                       : kind == kDcnYmm ? gemm_packed_size(Mg, KCg)
                                         : 0;
  std::vector<T> wz(static_cast<size_t>(size_mul(G, wz_n)));
  if constexpr (std::is_same<T, float>::value)
    for (int64_t g = 0; g < G && wz_n; ++g) {
      if (kind == kDcnZmm) zmm_pack(wr.data() + g * Mg * KCg, Mg, KCg, KCg, wz.data() + g * wz_n);
      else gemm_pack(wr.data() + g * Mg * KCg, Mg, KCg, KCg, 1, wz.data() + g * wz_n, 1);
    }

  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t nb = std::min(chunk, N - n0);
    // 2. channels-last copy of the chunk, rows (image, y) split across threads
    const int64_t rows = nb * std::max<int64_t>(H, 1);
    parallel_for(rows, chunk_for(rows, nt), nt, [&](int64_t r_lo, int64_t r_hi, int) {
      for (int64_t r = r_lo; r < r_hi; ++r) {
        const int64_t nl = r / std::max<int64_t>(H, 1);
        T* dst = xt.get() + nl * img;
        if (H == 0 || r % H == H - 1) {  // the zero pixel, once per image
          for (int64_t c = 0; c < C; ++c) dst[HW * C + c] = T(0);
        }
        if (H == 0 || W == 0 || C == 0) continue;
        const int64_t y = r % H;
        const T* src = x + (n0 + nl) * sxN + y * sxH;
        T* drow = dst + y * W * C;
        // blocks of 16 channels: each pixel gets 64 contiguous bytes (float) per block
        for (int64_t c0 = 0; c0 < C; c0 += 16) {
          const int64_t cn = std::min<int64_t>(16, C - c0);
          for (int64_t xx = 0; xx < W; ++xx) {
            const T* s = src + c0 * sxC + xx * sxW;
            T* d = drow + xx * C + c0;
            for (int64_t c = 0; c < cn; ++c) d[c] = s[c * sxC];
          }
        }
      }
    });
    // 3. per (image, tile) item, once the chunk's copy is complete
    parallel_for(nb * tiles, 1, nt, [&](int64_t item_lo, int64_t item_hi, int tid) {
      DcnSample<T>* plan = plans(tid);
      T* col = cols(tid);
      T* pack = packs(tid);
      for (int64_t item = item_lo; item < item_hi; ++item) {
        const int64_t nl = item / tiles;
        const int64_t n = n0 + nl;
        const int64_t p0 = (item % tiles) * P;
        const int64_t np = std::min(P, OHW - p0);
        const T* xn = xt.get() + nl * img;
        const int64_t zero = HW * C;

        // 3a. the plan of this tile: plan[(d * K + k) * P + p]
        for (int64_t d = 0; d < DG; ++d) {
          for (int64_t i = 0; i < KH; ++i) {
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t k = i * KW + j;
              const T* oy_ptr = off ? off + n * soN + (d * 2 * K + 2 * k) * soC : nullptr;
              const T* ox_ptr = off ? oy_ptr + soC : nullptr;
              const T* m_ptr = mask ? mask + n * smN + (d * K + k) * smC : nullptr;
              DcnSample<T>* pl = plan + (d * K + k) * P;
              int64_t oy = p0 / OW, ox = p0 - (p0 / OW) * OW;
              for (int64_t p = 0; p < np; ++p, ++ox) {
                if (ox == OW) {
                  ox = 0;
                  ++oy;
                }
                if (!off) {  // plain convolution: the tap's pixel or the zero pixel
                  const int64_t iy = oy * stride_h - pad_h + i * dil_h;
                  const int64_t ix = ox * stride_w - pad_w + j * dil_w;
                  pl[p].off[0] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? (iy * W + ix) * C
                                                                           : zero;
                  continue;
                }
                const T py = static_cast<T>(oy * stride_h - pad_h + i * dil_h) +
                             oy_ptr[oy * soH + ox * soW];
                const T px = static_cast<T>(ox * stride_w - pad_w + j * dil_w) +
                             ox_ptr[oy * soH + ox * soW];
                const T mv = m_ptr ? m_ptr[oy * smH + ox * smW] : T(1);
                dcn_sample(py, px, H, W, C, zero, mv, pl[p]);
              }
            }
          }
        }

        for (int64_t g = 0; g < G; ++g) {
          // 3b. column tile col[p][k * Cg + c] of group g
          if (off)
            dcn_fill_columns<false>(plan, P, np, K, g * Cg, Cg, Cd, xn, col);
          else
            dcn_fill_columns<true>(plan, P, np, K, g * Cg, Cg, Cd, xn, col);
          // 3c. out[n, g*Mg:(g+1)*Mg, p0:p0+np] = wr[g] . col^T, then the bias
          T* o = out + (n * M + g * Mg) * OHW + p0;
          dcn_gemm_nt<T>(gemm, kind, Mg, np, KCg, wr.data() + g * Mg * KCg, KCg, col, KCg,
                         o, OHW, pack, wz_n ? wz.data() + g * wz_n : nullptr);
          if (bias) {
            for (int64_t m = 0; m < Mg; ++m) {
              const T b = bias[(g * Mg + m) * sb];
              T* row = o + m * OHW;
              for (int64_t p = 0; p < np; ++p) row[p] += b;
            }
          }
        }
      }
    });
  }
}

}  // namespace fastops
