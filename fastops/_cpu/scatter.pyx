# Thin typed entry points for the scatter/gather kernels in include/scatter.hpp.
# Inputs are validated and shaped by fastops.scatter; these only release the GIL.
# Every function returns the row-major position of the first out-of-range index in
# `idx` (nothing is written to the output then), or -1.
from libc.stdint cimport int32_t, int64_t

from fastops._cpu._types cimport real

ctypedef fused index_t:
    int32_t
    int64_t

# every kernel is `except +`: std::bad_alloc (scratch) becomes MemoryError
cdef extern from "scatter.hpp" namespace "fastops" nogil:
    int64_t c_scatter_elements "fastops::scatter_elements"[T, I](
        const T* data, T* out, int64_t out_size, const I* idx, const T* upd, int64_t O,
        int64_t m, int64_t In, const int64_t* outer_off, const int64_t* inner_off,
        int64_t s_outer, int64_t s_inner, int64_t s_axis, int64_t n_axis, int reduction,
        int nthreads) except +
    int64_t c_gather_elements "fastops::gather_elements"[T, I](
        const T* data, const I* idx, int64_t O, int64_t m, int64_t In,
        const int64_t* outer_off, const int64_t* inner_off, int64_t s_outer, int64_t s_inner,
        int64_t s_axis, int64_t n_axis, T* out, int nthreads) except +
    int64_t c_scatter_nd "fastops::scatter_nd"[T, I](
        const T* data, T* out, int64_t out_size, const I* idx, int64_t N, int k,
        const int64_t* dims, const T* upd, int64_t S, int64_t* rows, int reduction,
        int nthreads) except +
    int64_t c_gather_nd "fastops::gather_nd"[T, I](
        const T* data, const I* idx, int64_t N, int k, const int64_t* dims,
        int64_t per_batch, int64_t batch_rows, int64_t S, T* out, int nthreads) except +


cdef inline size_t _addr(a):
    """Address of element [0, ..., 0] of a NumPy array (any strides), 0 for None/empty."""
    if a is None or a.size == 0:
        return 0
    return a.__array_interface__["data"][0]


cdef inline const int64_t* _table(const int64_t[::1] t):
    return &t[0] if t is not None and t.shape[0] else NULL


def scatter_elements(data, real[::1] out, const index_t[::1] idx, const real[::1] upd,
                     int64_t O, int64_t m, int64_t In, const int64_t[::1] outer_off,
                     const int64_t[::1] inner_off, int64_t s_outer, int64_t s_inner,
                     int64_t s_axis, int64_t n_axis, int reduction, int nthreads):
    """out = data (C-contiguous, or None when out already holds it), then the scatter."""
    cdef const real* dp = <const real*>_addr(data)
    cdef real* op = &out[0] if out.shape[0] else NULL
    cdef const int64_t* oo = _table(outer_off)
    cdef const int64_t* io = _table(inner_off)
    cdef int64_t r
    with nogil:
        r = c_scatter_elements(dp, op, out.shape[0], &idx[0], &upd[0], O, m, In, oo, io,
                               s_outer, s_inner, s_axis, n_axis, reduction, nthreads)
    return r


def gather_elements(data, const index_t[::1] idx, int64_t O, int64_t m, int64_t In,
                    const int64_t[::1] outer_off, const int64_t[::1] inner_off,
                    int64_t s_outer, int64_t s_inner, int64_t s_axis, int64_t n_axis,
                    real[::1] out, int nthreads):
    """data: any strides (offsets in elements); out: C-contiguous, same size as idx."""
    cdef const real* dp = <const real*>_addr(data)
    cdef const int64_t* oo = _table(outer_off)
    cdef const int64_t* io = _table(inner_off)
    cdef int64_t r
    with nogil:
        r = c_gather_elements(dp, &idx[0], O, m, In, oo, io, s_outer, s_inner, s_axis,
                              n_axis, &out[0], nthreads)
    return r


def scatter_nd(data, real[::1] out, const index_t[::1] idx, int64_t N, int k,
               const int64_t[::1] dims, const real[::1] upd, int64_t S, int reduction,
               int nthreads):
    """out (rows of S) = data (C-contiguous, or None), then N index tuples of depth k."""
    import numpy as np
    cdef int64_t[::1] rows = np.empty(max(N, 1), dtype=np.int64)
    cdef const real* dp = <const real*>_addr(data)
    cdef real* op = &out[0] if out.shape[0] else NULL
    cdef const real* up = &upd[0] if upd.shape[0] else NULL
    cdef const int64_t* dm = &dims[0] if dims.shape[0] else NULL
    cdef const index_t* ip = &idx[0] if idx.shape[0] else NULL
    cdef int64_t r
    with nogil:
        r = c_scatter_nd(dp, op, out.shape[0], ip, N, k, dm, up, S, &rows[0], reduction,
                         nthreads)
    return r


def gather_nd(data, const index_t[::1] idx, int64_t N, int k, const int64_t[::1] dims,
              int64_t per_batch, int64_t batch_rows, int64_t S, real[::1] out, int nthreads):
    """data: C-contiguous rows of S elements; out: (N, S) C-contiguous."""
    cdef const real* dp = <const real*>_addr(data)
    cdef real* op = &out[0] if out.shape[0] else NULL
    cdef const int64_t* dm = &dims[0] if dims.shape[0] else NULL
    cdef const index_t* ip = &idx[0] if idx.shape[0] else NULL
    cdef int64_t r
    with nogil:
        r = c_gather_nd(dp, ip, N, k, dm, per_batch, batch_rows, S, op, nthreads)
    return r
