// Shared helpers for the CPU kernels (included by every family header).
#pragma once
#include <cstdint>
#include <type_traits>

namespace fastops {

// NaN test that folds to `false` for integer types.
template <typename T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point<T>::value) return v != v;
  else return false;
}

// Work (in elements touched) below which a loop runs on one thread: forking an OpenMP
// team costs a few microseconds, about what 32k simple element operations cost here.
constexpr int64_t kParallelGrain = 1 << 15;

inline int threads_for(int64_t work, int nthreads) {
  if (work < kParallelGrain || nthreads < 1) return 1;
  int64_t useful = work / kParallelGrain;
  return useful < nthreads ? static_cast<int>(useful) : nthreads;
}

}  // namespace fastops
