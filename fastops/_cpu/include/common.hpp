// Shared helpers for the CPU kernels (included by every family header).
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <new>
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

// An exception that leaves an OpenMP region calls std::terminate, so code inside a
// parallel region that can throw (an allocation) runs through OmpErrors::run: the first
// exception is kept, later work items are skipped, and rethrow() after the region hands
// it to the Cython boundary (`except +`: std::bad_alloc becomes MemoryError).
class OmpErrors {
 public:
  template <typename F>
  void run(F&& f) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      f();
    } catch (...) {
      bool expected = false;
      if (failed_.compare_exchange_strong(expected, true)) error_ = std::current_exception();
    }
  }
  void rethrow() {
    if (failed_.load()) std::rethrow_exception(error_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

}  // namespace fastops
