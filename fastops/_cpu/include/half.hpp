// float16 -> float32 of a C-contiguous array on the pool's threads, bit for bit as
// NumPy's astype: the ops that compute float16 in float32 (Backend.element_view) convert
// with it.  NumPy's astype runs on one thread at ~1.3 ns an element: 2.6 ms of a
// 2000x1000 k=10 topk that took 6.9 ms hot against onnxruntime's 3.3.
//
// Built into the runtime module (_runtime.pyx, the baseline target), so every build of
// every family has it; F16C through a target attribute, chosen at run time
// (half_to_float's f16c: FASTOPS_SIMD allows it and the CPU has it).
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FASTOPS_HAVE_F16C_TARGET 1
#endif

#include "parallel.hpp"

namespace fastops {

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);          // inf, NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;                                      // +-0
  } else {                                            // subnormal: normalize
    int e = -1;
    do {
      man <<= 1;
      ++e;
    } while (!(man & 0x400u));
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((man & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

#if FASTOPS_HAVE_F16C_TARGET
// Steps of 8 by VCVTPH2PS.  F16C quiets signaling NaNs, NumPy's astype keeps their bits:
// steps holding an inf or NaN go bit by bit.  Returns the elements it converted.
__attribute__((target("avx,f16c"))) inline int64_t half_to_float_f16c(const uint16_t* src,
                                                                      float* dst, int64_t n) {
  const __m128i exp = _mm_set1_epi16(0x7C00);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exp), exp))) {
      for (int64_t j = i; j < i + 8; ++j) dst[j] = half_bits_to_float(src[j]);
    } else {
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
  }
  return i;
}
#endif

// f16c: F16C allowed (FASTOPS_SIMD); used where the CPU (and OS: AVX state) has it.
inline void half_to_float(const uint16_t* src, float* dst, int64_t n, bool f16c, int nthreads) {
#if FASTOPS_HAVE_F16C_TARGET
  f16c = f16c && __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
#endif
  const int nt = threads_for(n, nthreads);
  parallel_for(n, chunk_for(n, nt, 2), nt, [&](int64_t b, int64_t e, int) {
    int64_t i = b;
#if FASTOPS_HAVE_F16C_TARGET
    if (f16c) i += half_to_float_f16c(src + b, dst + b, e - b);
#endif
    for (; i < e; ++i) dst[i] = half_bits_to_float(src[i]);
  });
}

}  // namespace fastops
