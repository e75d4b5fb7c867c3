// Shared helpers for the CPU kernels (included by every family header).
#pragma once
#include <cstdint>
#include <new>
#include <type_traits>

namespace fastops {

// NaN test that folds to `false` for integer types.
template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point<T>::value) return v != v;
  else return false;
}

// Work (in elements touched) below which a loop runs on one thread: waking the pool's
// workers costs a few microseconds, about what 32k simple element operations cost here.
constexpr int64_t kParallelGrain = 1 << 15;

inline int threads_for(int64_t work, int nthreads) {
  if (work < kParallelGrain || nthreads < 1) return 1;
  int64_t useful = work / kParallelGrain;
  return useful < nthreads ? static_cast<int>(useful) : nthreads;
}

// Work estimates that may exceed int64 (huge sampling ratios, broadcast inputs): the
// product saturates instead of wrapping, which only matters for threads_for.
inline int64_t work_product(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

// Sizes of scratch that the kernels allocate themselves (tables whose length depends on
// the data): overflow means the request cannot be met, reported like a failed allocation
// (std::bad_alloc -> MemoryError at the Cython boundary).
inline int64_t size_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw std::bad_alloc();
  return r;
}
inline int64_t size_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw std::bad_alloc();
  return r;
}

}  // namespace fastops
