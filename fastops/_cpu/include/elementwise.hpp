// Binary arithmetic (Add, Sub, Mul, Div) of fastops.onnx.Session on float32 / float64
// arrays large enough for the pool's threads (NumPy's ufuncs run on one): residual adds,
// squeeze-and-excitation channel scales, input normalization.  The output is viewed as
// (R, L) rows; each operand's element (r, l) is base[r * sr + l * sl] with sl 1 (a full
// row) or 0 (one value per row, or a scalar with sr 0), which covers a same-shape pair,
// a scalar, and a per-channel (1, C, 1, 1) against (1, C, H, W) operand.  Each element is
// the one IEEE operation a op b that NumPy's loops compute (no FMA, no reassociation), so
// the bits equal NumPy's on any thread count.
#pragma once
#include <algorithm>
#include <cstdint>

#include "common.hpp"
#include "parallel.hpp"

namespace fastops {

enum BinaryOp : int { kBinAdd = 0, kBinSub = 1, kBinMul = 2, kBinDiv = 3 };

template <int Op, typename T>
inline T binary_apply(T a, T b) {
  if constexpr (Op == kBinAdd) return a + b;
  if constexpr (Op == kBinSub) return a - b;
  if constexpr (Op == kBinMul) return a * b;
  return a / b;
}

// Elements per task: long rows split, short rows grouped.
constexpr int64_t kBinaryBlock = int64_t(1) << 14;
constexpr int64_t kBinaryCheap = 8;

template <int Op, int LA, int LB, typename T>
void binary_rows_run(const T* a, int64_t sra, const T* b, int64_t srb, T* out, int64_t R,
                     int64_t L, int nthreads) {
  const int64_t per_row = (L + kBinaryBlock - 1) / kBinaryBlock;
  const int64_t tasks = R * per_row;
  // Elements are far cheaper than kWakeWork's units: a call that finds the pool cold (the
  // Session run's first op, the input's normalization) runs alone unless it is large.
  const int nt = threads_for(work_product(R, L), nthreads, kBinaryCheap);
  parallel_for(tasks, chunk_for(tasks, nt), nt, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / per_row, l0 = t % per_row * kBinaryBlock;
      const int64_t l1 = std::min(L, l0 + kBinaryBlock);
      const T* pa = a + r * sra;
      const T* pb = b + r * srb;
      T* po = out + r * L;
      for (int64_t l = l0; l < l1; ++l) po[l] = binary_apply<Op, T>(pa[l * LA], pb[l * LB]);
    }
  });
}

// out (R, L) C-contiguous = a op b (see above); la, lb in {0, 1}; R, L >= 1.
template <typename T>
void binary_rows(int op, const T* a, int64_t sra, int la, const T* b, int64_t srb, int lb,
                 T* out, int64_t R, int64_t L, int nthreads) {
  auto with_op = [&](auto o) {
    constexpr int Op = decltype(o)::value;
    if (la && lb)
      binary_rows_run<Op, 1, 1>(a, sra, b, srb, out, R, L, nthreads);
    else if (la)
      binary_rows_run<Op, 1, 0>(a, sra, b, srb, out, R, L, nthreads);
    else if (lb)
      binary_rows_run<Op, 0, 1>(a, sra, b, srb, out, R, L, nthreads);
    else
      binary_rows_run<Op, 0, 0>(a, sra, b, srb, out, R, L, nthreads);
  };
  switch (op) {
    case kBinAdd: with_op(std::integral_constant<int, kBinAdd>{}); break;
    case kBinSub: with_op(std::integral_constant<int, kBinSub>{}); break;
    case kBinMul: with_op(std::integral_constant<int, kBinMul>{}); break;
    default: with_op(std::integral_constant<int, kBinDiv>{}); break;
  }
}

}  // namespace fastops
