# Thin typed entry points for the scatter/gather kernels in include/scatter.hpp.
# Inputs are validated and shaped by fastops.scatter; these only release the GIL.
# Every function returns the row-major position of the first out-of-range index in
# `idx` (nothing is written to the output then), or -1.
from libc.stdint cimport int32_t, int64_t

cimport numpy as cnp

from fastops._cpu._fast cimport (index_type, kPoolMinBytes, moves_bits, plain_any, plain_axis,
                                 prod, reduction_code, same_dims, shape_of, small_output)
from fastops._cpu._types cimport real, uword

from fastops._cpu import _pool
from fastops._threads import get_num_threads

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
                                        int64_t n_axis, int reduction, int nthreads) except +
    int64_t gather_elements_contiguous(int itemsize, int index_typenum, const void* data,
                                       const void* idx, int64_t O, int64_t m, int64_t In,
                                       int64_t n_axis, void* out, int nthreads) except +
    int64_t scatter_nd_contiguous(int typenum, int itemsize, int index_typenum,
                                  const void* data, void* out, int64_t out_size,
                                  const void* idx, int64_t N, int k, const int64_t* dims,
                                  const void* upd, int64_t S, int reduction,
                                  int nthreads) except +
    int64_t gather_nd_contiguous(int itemsize, int index_typenum, const void* data,
                                 const void* idx, int64_t N, int k, const int64_t* dims,
                                 int64_t S, void* out, int nthreads) except +


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
                    uword[::1] out, int nthreads):
    """data: any strides (offsets in elements); out: C-contiguous, same size as idx.
    Gathers move bits: data and out are unsigned words of the element's size."""
    cdef const uword* dp = <const uword*>_addr(data)
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
              int64_t per_batch, int64_t batch_rows, int64_t S, uword[::1] out, int nthreads):
    """data: C-contiguous rows of S elements; out: (N, S) C-contiguous; unsigned words."""
    cdef const uword* dp = <const uword*>_addr(data)
    cdef uword* op = &out[0] if out.shape[0] else NULL
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


# The fast paths take C-contiguous arrays of any size (_fast.pxd): the general path's
# Python (layout tables, validation) cost 8-16 us a call, a quarter of a 42k-element
# last-axis gather.  Large calls run get_num_threads() threads without the GIL, as the
# general path does; a bad index (or an output that cannot be allocated) hands the call
# to the general path, which names it.
cdef object _fresh(int nd, const cnp.npy_intp* dims, cnp.ndarray like):
    """A new C-contiguous array of ``like``'s dtype: np.empty's, or from kPoolMinBytes the
    block pool's (as the general path's be.empty); None where it cannot be had."""
    cdef int64_t n = prod(dims, 0, nd)
    if n > (1 << 56):
        return None
    try:
        if n * cnp.PyArray_ITEMSIZE(like) < kPoolMinBytes:
            return cnp.PyArray_EMPTY(nd, <cnp.npy_intp*>dims, cnp.PyArray_TYPE(like), 0)
        return _pool.empty(tuple([dims[r] for r in range(nd)]), like.dtype)
    except MemoryError:
        return None


cdef inline int _threads(int64_t work):
    """One thread holding the GIL for small work (releasing it costs more), else the
    configured count."""
    return 1 if small_output(work) else get_num_threads()


def fast_scatter_elements(data, indices, updates, axis, reduction, dict codes):
    if not (plain_any(data) and plain_any(indices) and plain_any(updates)):
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
    out = _fresh(nd, cnp.PyArray_DIMS(d), d)
    if out is None:
        return None
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(i)
    cdef const void* dp = cnp.PyArray_DATA(d)
    cdef void* op = cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef const void* ip = cnp.PyArray_DATA(i)
    cdef const void* up = cnp.PyArray_DATA(u)
    cdef int itype = cnp.PyArray_TYPE(i)
    cdef int64_t O = prod(dims, 0, ax), m = dims[ax], In = prod(dims, ax + 1, nd)
    cdef int64_t n_axis = cnp.PyArray_DIMS(d)[ax], r
    cdef int nt = _threads(max(cnp.PyArray_SIZE(d), cnp.PyArray_SIZE(i)))
    if nt == 1:
        r = scatter_elements_contiguous(typenum, itemsize, itype, dp, op, ip, up, O, m, In,
                                        n_axis, red, 1)
    else:
        with nogil:
            r = scatter_elements_contiguous(typenum, itemsize, itype, dp, op, ip, up, O, m, In,
                                            n_axis, red, nt)
    return out if r == -1 else None


def fast_gather_elements(data, indices, axis, int64_t rows_min):
    if not plain_any(data):
        return None
    if not plain_any(indices):
        return _gather_broadcast_rows(<cnp.ndarray>data, indices, axis, rows_min)
    cdef cnp.ndarray d = <cnp.ndarray>data, i = <cnp.ndarray>indices
    cdef int nd = cnp.PyArray_NDIM(d), typenum = cnp.PyArray_TYPE(d)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(d)
    cdef int ax = plain_axis(axis, nd)
    if (ax < 0 or not moves_bits(typenum, itemsize) or not index_type(i)
            or not _elements_layout(d, i, ax)):
        return None
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(i)
    out = _fresh(nd, dims, d)
    if out is None:
        return None
    cdef const void* dp = cnp.PyArray_DATA(d)
    cdef void* op = cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef const void* ip = cnp.PyArray_DATA(i)
    cdef int itype = cnp.PyArray_TYPE(i)
    cdef int64_t O = prod(dims, 0, ax), m = dims[ax], In = prod(dims, ax + 1, nd)
    cdef int64_t n_axis = cnp.PyArray_DIMS(d)[ax], r
    cdef int nt = _threads(cnp.PyArray_SIZE(i))
    if nt == 1:
        r = gather_elements_contiguous(itemsize, itype, dp, ip, O, m, In, n_axis, op, 1)
    else:
        with nogil:
            r = gather_elements_contiguous(itemsize, itype, dp, ip, O, m, In, n_axis, op, nt)
    return out if r == -1 else None


cdef object _gather_broadcast_rows(cnp.ndarray d, object indices, object axis,
                                   int64_t rows_min):
    """gather_elements along axis 0 of at least rows_min indices that are a contiguous
    column of row numbers broadcast over every later dimension, which they span whole
    (fastops.scatter._broadcast_rows at axis 0: torch's expand, ONNX Expand): whole rows
    through the gather_nd kernel, without the general path's Python, which ran 30-80 us
    slower right after such a copy than alone (150x256x7x7 float32, rows expanded over
    256x7x7: 0.35 -> 0.30 ms, torch.gather 0.29-0.33).  Else None."""
    if type(indices) is not cnp.ndarray:
        return None
    cdef cnp.ndarray i = <cnp.ndarray>indices
    cdef int nd = cnp.PyArray_NDIM(d), typenum = cnp.PyArray_TYPE(d), r
    cdef int itemsize = cnp.PyArray_ITEMSIZE(d)
    if cnp.PyArray_NDIM(i) != nd or nd < 2 or plain_axis(axis, nd) != 0 \
            or cnp.PyArray_SIZE(i) < rows_min or not moves_bits(typenum, itemsize) \
            or not index_type(i) or not cnp.PyArray_ISALIGNED(i) \
            or not cnp.PyArray_ISNOTSWAPPED(i) or sizeof(cnp.npy_intp) != sizeof(int64_t):
        return None
    cdef const cnp.npy_intp* di = cnp.PyArray_DIMS(i)
    cdef const cnp.npy_intp* dd = cnp.PyArray_DIMS(d)
    cdef const cnp.npy_intp* st = cnp.PyArray_STRIDES(i)
    cdef bint spread = False
    for r in range(1, nd):
        if di[r] != dd[r] or (di[r] > 1 and st[r] != 0):
            return None
        spread = spread or di[r] > 1
    if not spread or (di[0] > 1 and st[0] != cnp.PyArray_ITEMSIZE(i)):
        return None
    out = _fresh(nd, di, d)
    if out is None:
        return None
    cdef int64_t N = di[0], S = prod(dd, 1, nd), res
    cdef const int64_t* n_axis = shape_of(d)
    cdef const void* dp = cnp.PyArray_DATA(d)
    cdef void* op = cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef const void* ip = cnp.PyArray_DATA(i)
    cdef int itype = cnp.PyArray_TYPE(i)
    cdef int nt = _threads(N * S)
    if nt == 1:
        res = gather_nd_contiguous(itemsize, itype, dp, ip, N, 1, n_axis, S, op, 1)
    else:
        with nogil:
            res = gather_nd_contiguous(itemsize, itype, dp, ip, N, 1, n_axis, S, op, nt)
    return out if res == -1 else None


def fast_scatter_nd(data, indices, updates, reduction, dict codes):
    if not (plain_any(data) and plain_any(indices) and plain_any(updates)):
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
    out = _fresh(nd, cnp.PyArray_DIMS(d), d)
    if out is None:
        return None
    cdef const void* dp = cnp.PyArray_DATA(d)
    cdef void* op = cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef const void* ip = cnp.PyArray_DATA(i)
    cdef const void* up = cnp.PyArray_DATA(u)
    cdef int itype = cnp.PyArray_TYPE(i)
    cdef int64_t size = cnp.PyArray_SIZE(d), N = prod(cnp.PyArray_DIMS(i), 0, qd - 1)
    cdef int64_t S = prod(cnp.PyArray_DIMS(d), k, nd), r
    cdef const int64_t* shape = shape_of(d)
    cdef int nt = _threads(max(size, cnp.PyArray_SIZE(u)))
    if nt == 1:
        r = scatter_nd_contiguous(typenum, itemsize, itype, dp, op, size, ip, N, k, shape, up,
                                  S, red, 1)
    else:
        with nogil:
            r = scatter_nd_contiguous(typenum, itemsize, itype, dp, op, size, ip, N, k, shape,
                                      up, S, red, nt)
    return out if r == -1 else None


def fast_gather_nd(data, indices, batch_dims):
    if not (plain_any(data) and plain_any(indices)) or type(batch_dims) is not int \
            or batch_dims != 0:
        return None
    cdef cnp.ndarray d = <cnp.ndarray>data, i = <cnp.ndarray>indices
    cdef int nd = cnp.PyArray_NDIM(d), typenum = cnp.PyArray_TYPE(d)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(d), qd = cnp.PyArray_NDIM(i)
    if qd == 0 or not moves_bits(typenum, itemsize) or not index_type(i):
        return None
    cdef int k = <int>cnp.PyArray_DIMS(i)[qd - 1]     # >= 1: indices is not empty
    cdef int64_t N = prod(cnp.PyArray_DIMS(i), 0, qd - 1), S = prod(cnp.PyArray_DIMS(d), k, nd)
    if k > nd or qd - 1 + nd - k > 64 or (S and N > (1 << 56) // S):   # (NPY_MAXDIMS)
        return None
    cdef cnp.npy_intp out_dims[64]
    cdef int r
    for r in range(qd - 1):
        out_dims[r] = cnp.PyArray_DIMS(i)[r]
    for r in range(k, nd):
        out_dims[qd - 1 + r - k] = cnp.PyArray_DIMS(d)[r]
    out = _fresh(qd - 1 + nd - k, out_dims, d)
    if out is None:
        return None
    cdef const void* dp = cnp.PyArray_DATA(d)
    cdef void* op = cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef const void* ip = cnp.PyArray_DATA(i)
    cdef int itype = cnp.PyArray_TYPE(i)
    cdef const int64_t* shape = shape_of(d)
    cdef int64_t res
    cdef int nt = _threads(N * S)
    if nt == 1:
        res = gather_nd_contiguous(itemsize, itype, dp, ip, N, k, shape, S, op, 1)
    else:
        with nogil:
            res = gather_nd_contiguous(itemsize, itype, dp, ip, N, k, shape, S, op, nt)
    return out if res == -1 else None
