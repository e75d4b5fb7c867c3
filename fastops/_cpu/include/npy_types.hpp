// NumPy type numbers -> the kernels' C types, for the compiled fast paths of the public
// calls (the fast_* functions of the .pyx modules, see fastops/_cpu/_fast.pxd): one
// switch here instead of a fused-type memoryview dispatch per call.
#pragma once
#include <cstdint>
#include <type_traits>

#include <numpy/ndarraytypes.h>

namespace fastops {

// Calls f(T{}) with T the fixed-width C type of the integer or floating NumPy type
// number `typenum` and returns true; returns false (f not called) for every other
// dtype (bool, float16, complex, ...), which the general path handles.  NPY_LONG and
// NPY_LONGLONG are distinct type numbers of the same width on LP64 (np.dtype("q") is not
// np.int64's "l"): both map by size.
template <typename F>
inline bool visit_real(int typenum, F&& f) {
  using Long = std::conditional_t<sizeof(long) == 8, int64_t, int32_t>;
  using ULong = std::make_unsigned_t<Long>;
  static_assert(sizeof(int) == 4 && sizeof(long long) == 8, "LP64 or LLP64 expected");
  switch (typenum) {
    case NPY_UBYTE: f(uint8_t{}); return true;
    case NPY_BYTE: f(int8_t{}); return true;
    case NPY_USHORT: f(uint16_t{}); return true;
    case NPY_SHORT: f(int16_t{}); return true;
    case NPY_UINT: f(uint32_t{}); return true;
    case NPY_INT: f(int32_t{}); return true;
    case NPY_ULONG: f(ULong{}); return true;
    case NPY_LONG: f(Long{}); return true;
    case NPY_ULONGLONG: f(uint64_t{}); return true;
    case NPY_LONGLONG: f(int64_t{}); return true;
    case NPY_FLOAT: f(float{}); return true;
    case NPY_DOUBLE: f(double{}); return true;
    default: return false;
  }
}

inline bool is_real_type(int typenum) {
  return visit_real(typenum, [](auto) {});
}

// Is `typenum` the NumPy type of T (visit_real's mapping: long and long long alike)?
template <typename T>
inline bool is_npy_type(int typenum) {
  bool same = false;
  visit_real(typenum, [&](auto t) { same = std::is_same_v<decltype(t), T>; });
  return same;
}

// dst[0:n] = src[0:n] converted to double (per-channel parameters); false for a dtype
// visit_real leaves out.
inline bool copy_as_double(int typenum, const void* src, int64_t n, double* dst) {
  return visit_real(typenum, [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<double>(static_cast<const T*>(src)[i]);
  });
}

// f(U{}) with U the unsigned word of `itemsize` bytes (kernels that move bits), false
// for other sizes.
template <typename F>
inline bool visit_word(int itemsize, F&& f) {
  switch (itemsize) {
    case 1: f(uint8_t{}); return true;
    case 2: f(uint16_t{}); return true;
    case 4: f(uint32_t{}); return true;
    case 8: f(uint64_t{}); return true;
    default: return false;
  }
}

// f(I{}) with I int32_t or int64_t for a signed 4- or 8-byte integer type number (the
// index dtypes the kernels take), false for any other.
template <typename F>
inline bool visit_index(int typenum, F&& f) {
  bool done = false;
  visit_real(typenum, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      f(T{});
      done = true;
    }
  });
  return done;
}

}  // namespace fastops
