# The compiled fast paths of the public calls (issue 14: a tiny call's fixed cost).
#
# A public op's entry first offers its arguments to the fast_<op> function of its
# family's module (@_dispatch.public(fast=...), through fastops._dispatch.fast_path).
# That function takes only the common call whose validation cannot fail: exact NumPy
# arrays, C-contiguous, aligned, native byte order, a dtype the kernel computes as is,
# plain Python ints in range, at most kParallelGrain elements per array (the kernels run
# those on one thread anyway).  It allocates the outputs and runs the same kernel as the
# general path, holding the GIL (no other thread can change a tiny input mid-call, and
# releasing it costs more than the kernel).  For anything
# else it returns None and the public function goes on with its general path, whose
# validation owns every error message; so a fast path never raises for bad input.
# Exceptions to the size bound (plain_any): cv_resize.fast_resize takes images of any
# size (the general path's ~12 us of Python was as much as a 224x224 resize) and crops
# of larger ones (rows of contiguous pixels at a positive stride), and the
# scatter family's fast paths arrays of any size (8-16 us, a quarter of a 42k-element
# last-axis gather), and roi_align.fast_roi_align maps of any size (a few RoIs of an FPN
# level); above kParallelGrain elements they run get_num_threads() threads without the
# GIL, as the general path would, and outputs of kPoolMinBytes or more come from the
# block pool.
cimport numpy as cnp
from cpython.long cimport PyLong_AsLongAndOverflow
from libc.stdint cimport int64_t

cdef extern from "npy_types.hpp" namespace "fastops" nogil:
    bint is_real_type(int typenum)
    bint copy_as_double(int typenum, const void* src, int64_t n, double* dst)

cdef extern from "common.hpp" namespace "fastops" nogil:
    const int64_t kParallelGrain

# Outputs of this many bytes or more come from the block pool (fastops/_cpu/_pool.pyx);
# smaller ones are np.empty's.
cdef enum:
    kPoolMinBytes = 1 << 20

cdef inline bint plain(object x):
    """x is exactly an ndarray, C-contiguous, aligned, native byte order, with between 1
    and kParallelGrain elements."""
    if type(x) is not cnp.ndarray or sizeof(cnp.npy_intp) != sizeof(int64_t):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef cnp.npy_intp size = cnp.PyArray_SIZE(a)
    return (cnp.PyArray_ISCARRAY_RO(a) and cnp.PyArray_ISNOTSWAPPED(a)
            and 0 < size <= kParallelGrain)


cdef inline bint plain_any(object x):
    """plain() without the size bound: at least one element."""
    if type(x) is not cnp.ndarray or sizeof(cnp.npy_intp) != sizeof(int64_t):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>x
    return (cnp.PyArray_ISCARRAY_RO(a) and cnp.PyArray_ISNOTSWAPPED(a)
            and cnp.PyArray_SIZE(a) > 0)


cdef inline bint small_output(int64_t size):
    """An output the fast path may fill on one thread (inputs are bounded by plain(),
    but a gather or a sampling grid can make an output much larger than its inputs)."""
    return size <= kParallelGrain


cdef inline int plain_axis(object axis, int ndim):
    """``axis`` in [0, ndim) when it is a Python int in [-ndim, ndim), else -1."""
    if type(axis) is not int:
        return -1
    cdef int overflow = 0
    cdef long a = PyLong_AsLongAndOverflow(axis, &overflow)
    if overflow or a < -ndim or a >= ndim:
        return -1
    return <int>(a + ndim if a < 0 else a)


cdef inline int64_t prod(const cnp.npy_intp* dims, int begin, int end):
    cdef int64_t p = 1
    cdef int d
    for d in range(begin, end):
        p *= dims[d]
    return p


cdef inline const int64_t* shape_of(cnp.ndarray a):
    """a.shape as int64_t (npy_intp is 64-bit wherever fastops builds: plain() checks)."""
    return <const int64_t*>cnp.PyArray_DIMS(a)


cdef inline bint moves_bits(int typenum, int itemsize):
    """A dtype the bit-moving kernels take (fastops.scatter's _check_data_dtype): bool,
    an integer, float or complex type of 1, 2, 4 or 8 bytes."""
    return ((cnp.PyTypeNum_ISBOOL(typenum) or cnp.PyTypeNum_ISNUMBER(typenum))
            and (itemsize == 1 or itemsize == 2 or itemsize == 4 or itemsize == 8))


cdef inline bint index_type(cnp.ndarray a):
    """int32 or int64 (any spelling): the index dtypes the kernels take as they are."""
    cdef int itemsize = cnp.PyArray_ITEMSIZE(a)
    return cnp.PyTypeNum_ISSIGNED(cnp.PyArray_TYPE(a)) and (itemsize == 4 or itemsize == 8)


cdef inline int reduction_code(object reduction, dict codes):
    """The kernel code of a reduction argument (None or a key of ``codes``), else -1."""
    if reduction is None:
        return 0
    if type(reduction) is not str:
        return -1
    return codes.get(reduction, -1)


cdef inline bint same_dims(const cnp.npy_intp* a, const cnp.npy_intp* b, int n):
    cdef int d
    for d in range(n):
        if a[d] != b[d]:
            return False
    return True
