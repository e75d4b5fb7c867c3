# Thin typed entry points for the InstanceNormalization kernel in include/norm.hpp (inputs
# validated and shaped by fastops.norm; this only releases the GIL) and for the Session's
# NumPy helpers there and in include/elementwise.hpp (GlobalAveragePool, binary arithmetic).
from cython cimport floating
from libc.math cimport isfinite
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

cimport numpy as cnp

from fastops._cpu._fast cimport copy_as_double, plain, prod

cnp.import_array()

# `except +`: std::bad_alloc (per-thread scratch) becomes MemoryError
cdef extern from "norm.hpp" namespace "fastops" nogil:
    void c_instance_norm "fastops::instance_norm"[T](
        const T* x, int64_t N, int64_t C, int64_t L, int64_t sN, int64_t sC,
        const double* scale, const double* bias, double eps, T* y, int nthreads) except +
    void c_plane_means "fastops::plane_means"[T](
        const T* x, int64_t P, int64_t L, int64_t sP, T* out, int nthreads) except +


def instance_norm(const floating[:, :, :] x, const double[::1] scale,
                  const double[::1] bias, double epsilon, floating[:, :, ::1] y,
                  int nthreads):
    """x (N, C, L), N*C*L > 0, unit stride along L (checked by fastops.norm), any N/C
    strides; y (N, C, L) C-contiguous."""
    cdef int64_t isz = sizeof(floating)
    with nogil:
        c_instance_norm(&x[0, 0, 0], x.shape[0], x.shape[1], x.shape[2], x.strides[0] // isz,
                        x.strides[1] // isz, &scale[0], &bias[0], epsilon, &y[0, 0, 0],
                        nthreads)


cdef extern from "elementwise.hpp" namespace "fastops" nogil:
    void c_binary_rows "fastops::binary_rows"[T](
        int op, const T* a, int64_t sra, int la, const T* b, int64_t srb, int lb, T* out,
        int64_t R, int64_t L, int nthreads) except +


def binary_rows(int op, const floating[::1] a, int64_t sra, int la, const floating[::1] b,
                int64_t srb, int lb, floating[::1] out, int64_t R, int64_t L, int nthreads):
    """out (R * L,) = a op b with op 0-3 (add, sub, mul, div) and element (r, l) of an
    operand at r * sr + l * l_ (l_ 0 or 1), R, L >= 1 (include/elementwise.hpp); every
    element read must lie inside its operand."""
    if R < 1 or L < 1 or not (0 <= op <= 3) or la not in (0, 1) or lb not in (0, 1) \
            or sra < 0 or srb < 0 or out.shape[0] != R * L \
            or (R - 1) * sra + (L - 1) * la >= a.shape[0] \
            or (R - 1) * srb + (L - 1) * lb >= b.shape[0]:
        raise ValueError("binary_rows: operands or output do not match the (R, L) view")
    with nogil:
        c_binary_rows(op, &a[0], sra, la, &b[0], srb, lb, &out[0], R, L, nthreads)


cdef class SizeSwitch:
    """small(a, b) unless an operand is an ndarray of at least ``limit`` elements, then
    big(a, b): the Session's Add/Sub/Mul/Div choose between NumPy and binary_rows here, in
    C, so that small operands pay no Python frame for the choice (a Loop body's 16-element
    Add and Mul: as a Python wrapper the check cost a quarter of the Loop benchmark, 12.1
    against 9.2 ms for 10000 iterations)."""
    cdef object small, big
    cdef Py_ssize_t limit

    def __cinit__(self, small, big, Py_ssize_t limit):
        self.small = small
        self.big = big
        self.limit = limit

    def __call__(self, a, b):
        if (cnp.PyArray_Check(a) and cnp.PyArray_SIZE(a) >= self.limit) or \
                (cnp.PyArray_Check(b) and cnp.PyArray_SIZE(b) >= self.limit):
            return self.big(a, b)
        return self.small(a, b)


def plane_means(const floating[:, ::1] x, floating[::1] out, int nthreads):
    """out[p] = mean of row p of x (P, L), L >= 1 (include/norm.hpp)."""
    if out.shape[0] != x.shape[0]:
        raise ValueError(f"plane_means: out has {out.shape[0]} elements, expected "
                         f"{x.shape[0]}")
    if x.shape[1] < 1:
        raise ValueError("plane_means: planes must not be empty")
    if x.shape[0] == 0:
        return
    with nogil:
        c_plane_means(&x[0, 0], x.shape[0], x.shape[1], x.shape[1], &out[0], nthreads)


def fast_instance_norm(x, scale, bias, epsilon):
    """instance_norm of a plain float32/float64 x (fastops/_cpu/_fast.pxd) with plain real
    scale and bias of shape (C,) and a Python float epsilon >= 0; else None."""
    if not (plain(x) and plain(scale) and plain(bias)) or type(epsilon) is not float:
        return None
    cdef double eps = epsilon
    cdef cnp.ndarray a = <cnp.ndarray>x, sc = <cnp.ndarray>scale, bi = <cnp.ndarray>bias
    cdef int nd = cnp.PyArray_NDIM(a), typenum = cnp.PyArray_TYPE(a)
    if (nd < 3 or not (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)
            or not isfinite(eps) or eps < 0 or cnp.PyArray_NDIM(sc) != 1
            or cnp.PyArray_NDIM(bi) != 1):
        return None
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(a)
    cdef int64_t N = dims[0], C = dims[1], L = prod(dims, 2, nd)
    if cnp.PyArray_DIMS(sc)[0] != C or cnp.PyArray_DIMS(bi)[0] != C:
        return None
    cdef double* params = <double*>malloc(2 * C * sizeof(double))
    if params == NULL:
        return None
    try:
        if not (copy_as_double(cnp.PyArray_TYPE(sc), cnp.PyArray_DATA(sc), C, params) and
                copy_as_double(cnp.PyArray_TYPE(bi), cnp.PyArray_DATA(bi), C, params + C)):
            return None
        y = cnp.PyArray_EMPTY(nd, dims, typenum, 0)
        if typenum == cnp.NPY_FLOAT:
            c_instance_norm(<const float*>cnp.PyArray_DATA(a), N, C, L, C * L, L, params,
                            params + C, eps, <float*>cnp.PyArray_DATA(y), 1)
        else:
            c_instance_norm(<const double*>cnp.PyArray_DATA(a), N, C, L, C * L, L, params,
                            params + C, eps, <double*>cnp.PyArray_DATA(y), 1)
        return y
    finally:
        free(params)
