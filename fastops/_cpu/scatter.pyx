# Thin typed entry points for the scatter/gather kernels in include/scatter.hpp.
# Inputs are validated and shaped by fastops.scatter; these only release the GIL.
# Every function returns the row-major position of the first out-of-range index in
# `idx` (nothing is written to the output then), or -1.
from libc.stdint cimport int32_t, int64_t

cimport numpy as cnp

from fastops._cpu._fast cimport (index_type, moves_bits, plain, plain_axis, prod,
                                 reduction_code, same_dims, shape_of, small_output)
from fastops._cpu._types cimport real

from fastops._cpu import _pool

cnp.import_array()

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
    int64_t scatter_elements_contiguous(int typenum, int itemsize, int index_typenum,
                                        const void* data, void* out, const void* idx,
                                        const void* upd, int64_t O, int64_t m, int64_t In,
                                        int64_t n_axis, int reduction) except +
    int64_t gather_elements_contiguous(int itemsize, int index_typenum, const void* data,
                                       const void* idx, int64_t O, int64_t m, int64_t In,
                                       int64_t n_axis, void* out) except +
    int64_t scatter_nd_contiguous(int typenum, int itemsize, int index_typenum,
                                  const void* data, void* out, int64_t out_size,
                                  const void* idx, int64_t N, int k, const int64_t* dims,
                                  const void* upd, int64_t S, int reduction) except +
    int64_t gather_nd_contiguous(int itemsize, int index_typenum, const void* data,
                                 const void* idx, int64_t N, int k, const int64_t* dims,
                                 int64_t S, void* out) except +


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
    # scratch: each tuple's row, then the owners' order of the updates (scatter.hpp);
    # pooled, as outputs are: a fresh 3 MB block faulted its pages in on every call
    # (200k rows: scatter_nd "none" 0.5-0.8 ms slower than with the pool)
    cdef int64_t[::1] rows = _pool.empty((max(2 * N, 1),), np.int64)
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


# ------------------------------------------------ compiled fast paths (_fast.pxd)
# Each returns the op's result for plain inputs whose indices are all in range, else
# None (the general path in fastops.scatter then validates, and raises for a bad index).
cdef inline bint _elements_layout(cnp.ndarray data, cnp.ndarray indices, int ax):
    """indices has data's rank and its shape outside the axis (no offset tables)."""
    cdef int nd = cnp.PyArray_NDIM(data), d
    if cnp.PyArray_NDIM(indices) != nd:
        return False
    for d in range(nd):
        if d != ax and cnp.PyArray_DIMS(indices)[d] != cnp.PyArray_DIMS(data)[d]:
            return False
    return True


def fast_scatter_elements(data, indices, updates, axis, reduction, dict codes):
    if not (plain(data) and plain(indices) and plain(updates)):
        return None
    cdef cnp.ndarray d = <cnp.ndarray>data, i = <cnp.ndarray>indices, u = <cnp.ndarray>updates
    cdef int nd = cnp.PyArray_NDIM(d), typenum = cnp.PyArray_TYPE(d)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(d), red = reduction_code(reduction, codes)
    cdef int ax = plain_axis(axis, nd)
    if (red < 0 or ax < 0 or not moves_bits(typenum, itemsize) or not index_type(i)
            or cnp.PyArray_TYPE(u) != typenum or cnp.PyArray_NDIM(u) != nd
            or not same_dims(cnp.PyArray_DIMS(u), cnp.PyArray_DIMS(i), nd)
            or not _elements_layout(d, i, ax)):
        return None
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(i)
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(nd, cnp.PyArray_DIMS(d), typenum, 0)
    if scatter_elements_contiguous(typenum, itemsize, cnp.PyArray_TYPE(i), cnp.PyArray_DATA(d),
                                   cnp.PyArray_DATA(out), cnp.PyArray_DATA(i),
                                   cnp.PyArray_DATA(u), prod(dims, 0, ax), dims[ax],
                                   prod(dims, ax + 1, nd), cnp.PyArray_DIMS(d)[ax], red) != -1:
        return None
    return out


def fast_gather_elements(data, indices, axis):
    if not (plain(data) and plain(indices)):
        return None
    cdef cnp.ndarray d = <cnp.ndarray>data, i = <cnp.ndarray>indices
    cdef int nd = cnp.PyArray_NDIM(d), typenum = cnp.PyArray_TYPE(d)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(d)
    cdef int ax = plain_axis(axis, nd)
    if (ax < 0 or not moves_bits(typenum, itemsize) or not index_type(i)
            or not _elements_layout(d, i, ax)):
        return None
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(i)
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    if gather_elements_contiguous(itemsize, cnp.PyArray_TYPE(i), cnp.PyArray_DATA(d),
                                  cnp.PyArray_DATA(i), prod(dims, 0, ax), dims[ax],
                                  prod(dims, ax + 1, nd), cnp.PyArray_DIMS(d)[ax],
                                  cnp.PyArray_DATA(out)) != -1:
        return None
    return out


def fast_scatter_nd(data, indices, updates, reduction, dict codes):
    if not (plain(data) and plain(indices) and plain(updates)):
        return None
    cdef cnp.ndarray d = <cnp.ndarray>data, i = <cnp.ndarray>indices, u = <cnp.ndarray>updates
    cdef int nd = cnp.PyArray_NDIM(d), typenum = cnp.PyArray_TYPE(d)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(d), red = reduction_code(reduction, codes)
    cdef int qd = cnp.PyArray_NDIM(i)
    if (red < 0 or qd == 0 or not moves_bits(typenum, itemsize) or not index_type(i)
            or cnp.PyArray_TYPE(u) != typenum):
        return None
    cdef int k = <int>cnp.PyArray_DIMS(i)[qd - 1]     # >= 1: indices is not empty
    if k > nd or cnp.PyArray_NDIM(u) != qd - 1 + nd - k \
            or not same_dims(cnp.PyArray_DIMS(u), cnp.PyArray_DIMS(i), qd - 1) \
            or not same_dims(cnp.PyArray_DIMS(u) + qd - 1, cnp.PyArray_DIMS(d) + k, nd - k):
        return None
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(nd, cnp.PyArray_DIMS(d), typenum, 0)
    if scatter_nd_contiguous(typenum, itemsize, cnp.PyArray_TYPE(i), cnp.PyArray_DATA(d),
                             cnp.PyArray_DATA(out), cnp.PyArray_SIZE(d), cnp.PyArray_DATA(i),
                             prod(cnp.PyArray_DIMS(i), 0, qd - 1), k, shape_of(d),
                             cnp.PyArray_DATA(u), prod(cnp.PyArray_DIMS(d), k, nd), red) != -1:
        return None
    return out


def fast_gather_nd(data, indices, batch_dims):
    if not (plain(data) and plain(indices)) or type(batch_dims) is not int or batch_dims != 0:
        return None
    cdef cnp.ndarray d = <cnp.ndarray>data, i = <cnp.ndarray>indices
    cdef int nd = cnp.PyArray_NDIM(d), typenum = cnp.PyArray_TYPE(d)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(d), qd = cnp.PyArray_NDIM(i)
    if qd == 0 or not moves_bits(typenum, itemsize) or not index_type(i):
        return None
    cdef int k = <int>cnp.PyArray_DIMS(i)[qd - 1]     # >= 1: indices is not empty
    if k > nd or qd - 1 + nd - k > 64 or not small_output(             # (NPY_MAXDIMS)
            prod(cnp.PyArray_DIMS(i), 0, qd - 1) * prod(cnp.PyArray_DIMS(d), k, nd)):
        return None
    cdef cnp.npy_intp out_dims[64]
    cdef int r
    for r in range(qd - 1):
        out_dims[r] = cnp.PyArray_DIMS(i)[r]
    for r in range(k, nd):
        out_dims[qd - 1 + r - k] = cnp.PyArray_DIMS(d)[r]
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(qd - 1 + nd - k, out_dims, typenum, 0)
    if gather_nd_contiguous(itemsize, cnp.PyArray_TYPE(i), cnp.PyArray_DATA(d),
                            cnp.PyArray_DATA(i), prod(cnp.PyArray_DIMS(i), 0, qd - 1), k,
                            shape_of(d), prod(cnp.PyArray_DIMS(d), k, nd),
                            cnp.PyArray_DATA(out)) != -1:
        return None
    return out
