# distutils: extra_compile_args = -mno-avx512vl
# selection built for x86-64-v4 (see __init__.py): the same source, included.  Without
# AVX512VL: with it GCC 12 turned the 128-bit compares of the rank step (then 4 lanes;
# select_short's are still) into k-mask compares and mask moves, and short-row topk ran
# 5-12 % slower than the baseline (topk 100000x20 float32 k=5, one thread,
# scripts/simd_ab.py); the 512-bit code (ranks_of_keys' 16 lanes, the filters of large
# topk, nonzero, the cummax/cummin column steps) needs only AVX512F/BW/DQ.
include "../selection.pyx"
