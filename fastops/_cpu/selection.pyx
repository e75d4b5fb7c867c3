# Thin typed entry points for the selection kernels in include/selection.hpp.
# Inputs are validated and shaped by fastops.selection; these only release the GIL.
from libc.stdint cimport int64_t, uint64_t
from libcpp cimport bool as cbool

cimport numpy as cnp

from fastops._cpu import _pool
from fastops._cpu._fast cimport is_real_type, plain, plain_axis, prod, shape_of
from fastops._cpu._types cimport real, uword

cnp.import_array()

# every kernel is `except +`: std::bad_alloc (scratch) becomes MemoryError
cdef extern from "selection.hpp" namespace "fastops" nogil:
    void c_topk "fastops::topk"[T](const T* x, int64_t outer, int64_t n, int64_t inner,
                                   int64_t s_outer, int64_t s_n, int64_t s_inner, int64_t k,
                                   cbool largest, cbool sorted, T* values, int64_t* indices,
                                   int nthreads) except +
    void c_cumext "fastops::cumext"[T](const T* x, int64_t outer, int64_t n, int64_t inner,
                                       int64_t s_outer, int64_t s_n, int64_t s_inner,
                                       cbool is_max, T* values, int64_t* indices, int nthreads) except +
    void c_cumext_from "fastops::cumext_from"[T](const T* x, int64_t outer, int64_t n,
                                                 int64_t inner, int64_t s_outer, int64_t s_n,
                                                 int64_t s_inner, cbool is_max, const T* cv,
                                                 const int64_t* ci, int64_t offset, T* values,
                                                 int64_t* indices, int nthreads) except +
    void c_cumext_last "fastops::cumext_last"[T](const T* x, int64_t outer, int64_t n,
                                                 int64_t inner, int64_t s_outer, int64_t s_n,
                                                 int64_t s_inner, cbool is_max, int64_t offset,
                                                 T* last_v, int64_t* last_i,
                                                 int nthreads) except +
    int64_t c_nonzero_count "fastops::nonzero_count"[U](const U* x, int64_t size, U mask,
                                                        int nchunks, int64_t* counts,
                                                        uint64_t* bits,
                                                        int nthreads) except +
    void c_nonzero_fill "fastops::nonzero_fill"(const uint64_t* bits, int64_t size, int ndim,
                                                const int64_t* shape, int nchunks,
                                                const int64_t* offsets, int64_t nnz,
                                                int64_t* out, int nthreads) except +
    bint cumext_contiguous(int typenum, const void* x, int64_t outer, int64_t n,
                           int64_t inner, cbool is_max, void* values,
                           int64_t* indices) except +
    bint topk_contiguous(int typenum, const void* x, int64_t outer, int64_t n, int64_t inner,
                         int64_t k, cbool largest, cbool sorted, void* values,
                         int64_t* indices) except +
    enum: kNonzeroFastWords
    int64_t nonzero_count_contiguous(int itemsize, cbool is_float, const void* x,
                                     int64_t size, uint64_t* bits) except +
    void nonzero_fill_contiguous(const uint64_t* bits, int64_t size, int ndim,
                                 const int64_t* shape, int64_t nnz, int64_t* out) except +


def topk(const real[:, :, :] x, int64_t k, bint largest, bint sorted,
         real[:, :, ::1] values, int64_t[:, :, ::1] indices, int nthreads):
    """x viewed as (outer, n, inner), non-empty; outputs (outer, k, inner)."""
    cdef int64_t isz = sizeof(real)
    with nogil:
        c_topk(&x[0, 0, 0], x.shape[0], x.shape[1], x.shape[2], x.strides[0] // isz,
               x.strides[1] // isz, x.strides[2] // isz, k, largest, sorted,
               &values[0, 0, 0], &indices[0, 0, 0], nthreads)


def cumext(const real[:, :, :] x, bint is_max, real[:, :, ::1] values,
           int64_t[:, :, ::1] indices, int nthreads):
    """Running max (is_max) or min along axis 1 of a non-empty (outer, n, inner) view."""
    cdef int64_t isz = sizeof(real)
    with nogil:
        c_cumext(&x[0, 0, 0], x.shape[0], x.shape[1], x.shape[2], x.strides[0] // isz,
                 x.strides[1] // isz, x.strides[2] // isz, is_max, &values[0, 0, 0],
                 &indices[0, 0, 0], nthreads)


def cumext_from(const real[:, :, :] x, bint is_max, const real[:, ::1] carry_v,
                const int64_t[:, ::1] carry_i, int64_t offset, real[:, :, ::1] values,
                int64_t[:, :, ::1] indices, int nthreads):
    """cumext of a non-empty (outer, n, inner) view whose element 0 is at global position
    `offset`, each lane's running (value, global index) starting from the carry
    (carry_v, carry_i: (outer, inner)); indices written are global.  An empty carry
    ((0, 0) arrays) means none: the lane starts from its first element."""
    cdef int64_t isz = sizeof(real)
    cdef int64_t outer = x.shape[0], inner = x.shape[2]
    cdef const real* cv = NULL
    cdef const int64_t* ci = NULL
    for d in range(3):
        if values.shape[d] != x.shape[d] or indices.shape[d] != x.shape[d]:
            raise ValueError("cumext_from: the outputs must have x's shape")
    if carry_v.shape[0] != 0 or carry_i.shape[0] != 0:
        if (carry_v.shape[0] != outer or carry_v.shape[1] != inner or
                carry_i.shape[0] != outer or carry_i.shape[1] != inner):
            raise ValueError("cumext_from: the carry must have shape (outer, inner)")
        cv = &carry_v[0, 0]
        ci = &carry_i[0, 0]
    with nogil:
        c_cumext_from(&x[0, 0, 0], outer, x.shape[1], inner, x.strides[0] // isz,
                      x.strides[1] // isz, x.strides[2] // isz, is_max, cv, ci, offset,
                      &values[0, 0, 0], &indices[0, 0, 0], nthreads)


def cumext_last(const real[:, :, :] x, bint is_max, int64_t offset, real[:, ::1] last_v,
                int64_t[:, ::1] last_i, int nthreads):
    """The final running (value, global index) of each lane of a non-empty (outer, n,
    inner) view (element 0 at global position `offset`) into (outer, inner) arrays,
    without writing the scan: a read-only pass."""
    cdef int64_t isz = sizeof(real)
    if (last_v.shape[0] != x.shape[0] or last_v.shape[1] != x.shape[2] or
            last_i.shape[0] != x.shape[0] or last_i.shape[1] != x.shape[2]):
        raise ValueError("cumext_last: the outputs must have shape (outer, inner)")
    with nogil:
        c_cumext_last(&x[0, 0, 0], x.shape[0], x.shape[1], x.shape[2], x.strides[0] // isz,
                      x.strides[1] // isz, x.strides[2] // isz, is_max, offset,
                      &last_v[0, 0], &last_i[0, 0], nthreads)


def nonzero(const uword[::1] x, uword mask, const int64_t[::1] shape, int nthreads):
    """Coordinates (ndim, nnz) of the words of C-contiguous `x` with (word & mask) != 0."""
    import numpy as np
    cdef int64_t size = x.shape[0]
    cdef int ndim = shape.shape[0]
    # a few chunks per thread keep the fill pass balanced when density varies
    cdef int nchunks = max(1, min(4 * nthreads, size // 4096))
    cdef int64_t[::1] offsets = np.empty(nchunks, dtype=np.int64)
    cdef uint64_t[::1] bits = _pool.empty(((size + 63) // 64,), np.uint64)
    cdef int64_t nnz
    with nogil:
        nnz = c_nonzero_count(&x[0], size, mask, nchunks, &offsets[0], &bits[0], nthreads)
    out = _pool.empty((ndim, nnz), np.int64)
    cdef int64_t[:, ::1] o = out
    if nnz:
        with nogil:
            c_nonzero_fill(&bits[0], size, ndim, &shape[0], nchunks, &offsets[0], nnz,
                           &o[0, 0], nthreads)
    return out


cdef int _real_axis(object x, object axis):
    """The axis in [0, x.ndim) of a plain input (fastops/_cpu/_fast.pxd) of a real dtype
    the kernels take as is, else -1."""
    if not plain(x) or not is_real_type(cnp.PyArray_TYPE(<cnp.ndarray>x)):
        return -1
    return plain_axis(axis, cnp.PyArray_NDIM(<cnp.ndarray>x))


def fast_cumext(x, axis, bint is_max, result):
    """cummax (is_max) / cummin of a plain input as the named tuple ``result`` (values,
    indices), or None: the general path (fastops.selection) decides."""
    cdef int ax = _real_axis(x, axis)
    if ax < 0:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef int nd = cnp.PyArray_NDIM(a), typenum = cnp.PyArray_TYPE(a)
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(a)
    cdef cnp.ndarray values = cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    cdef cnp.ndarray indices = cnp.PyArray_EMPTY(nd, dims, cnp.NPY_INT64, 0)
    cumext_contiguous(typenum, cnp.PyArray_DATA(a), prod(dims, 0, ax), dims[ax],
                      prod(dims, ax + 1, nd), is_max, cnp.PyArray_DATA(values),
                      <int64_t*>cnp.PyArray_DATA(indices))
    return tuple.__new__(result, (values, indices))     # (no Python-level __new__)


def fast_topk(x, k, axis, largest, sorted, result):
    """topk of a plain input (fastops/_cpu/_fast.pxd) with a Python int 1 <= k <= n and
    Python bool flags, as the named tuple ``result`` (values, indices); else None."""
    if type(k) is not int or type(largest) is not bool or type(sorted) is not bool:
        return None
    cdef int ax = _real_axis(x, axis)
    if ax < 0:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef int nd = cnp.PyArray_NDIM(a), typenum = cnp.PyArray_TYPE(a)
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(a)
    if not 1 <= k <= dims[ax]:
        return None
    cdef cnp.npy_intp out_dims[64]      # NPY_MAXDIMS
    for d in range(nd):
        out_dims[d] = dims[d]
    out_dims[ax] = k
    cdef cnp.ndarray values = cnp.PyArray_EMPTY(nd, out_dims, typenum, 0)
    cdef cnp.ndarray indices = cnp.PyArray_EMPTY(nd, out_dims, cnp.NPY_INT64, 0)
    topk_contiguous(typenum, cnp.PyArray_DATA(a), prod(dims, 0, ax), dims[ax],
                    prod(dims, ax + 1, nd), k, largest, sorted, cnp.PyArray_DATA(values),
                    <int64_t*>cnp.PyArray_DATA(indices))
    return tuple.__new__(result, (values, indices))     # (no Python-level __new__)


def fast_nonzero(x):
    """nonzero of a plain input (fastops/_cpu/_fast.pxd) of rank >= 1 and a bool, integer
    or float dtype of 1, 2, 4 or 8 bytes; else None."""
    if not plain(x):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef int nd = cnp.PyArray_NDIM(a), typenum = cnp.PyArray_TYPE(a)
    cdef int itemsize = cnp.PyArray_ITEMSIZE(a)
    cdef bint is_float = cnp.PyTypeNum_ISFLOAT(typenum)
    if nd == 0 or not (is_float or cnp.PyTypeNum_ISINTEGER(typenum)
                       or cnp.PyTypeNum_ISBOOL(typenum)) or itemsize not in (1, 2, 4, 8):
        return None
    cdef int64_t size = cnp.PyArray_SIZE(a)
    cdef uint64_t bits[kNonzeroFastWords]        # plain(): size <= kParallelGrain
    cdef int64_t nnz = nonzero_count_contiguous(itemsize, is_float, cnp.PyArray_DATA(a), size,
                                                bits)
    cdef cnp.npy_intp out_dims[2]
    out_dims[0] = nd
    out_dims[1] = nnz
    cdef cnp.ndarray out = cnp.PyArray_EMPTY(2, out_dims, cnp.NPY_INT64, 0)
    if nnz:
        nonzero_fill_contiguous(bits, size, nd, shape_of(a), nnz,
                                <int64_t*>cnp.PyArray_DATA(out))
    return out
