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

}  // namespace fastops
