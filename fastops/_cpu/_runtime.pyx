# OpenMP runtime queries for fastops._threads, the CPU's SIMD support, the float16
# conversion every family's build shares, and fastops._dispatch's compiled argument tests.
import os

cimport numpy as cnp
cimport openmp
from libc.stdint cimport int64_t, uint16_t
from libcpp cimport bool as cbool

cnp.import_array()


def max_threads():
    """omp_get_max_threads() of the calling thread (OMP_NUM_THREADS, threadpoolctl)."""
    return openmp.omp_get_max_threads()


def set_max_threads(int n):
    openmp.omp_set_num_threads(n)


def num_procs():
    return openmp.omp_get_num_procs()


cdef extern from *:
    """
    static int fastops_has_x86_64_v3(void) {
    #if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 12 || defined(__clang__))
      return __builtin_cpu_supports("x86-64-v3");  /* cpuid and the OS's AVX state (xgetbv) */
    #else
      return 0;
    #endif
    }
    static int fastops_has_x86_64_v4(void) {
    #if defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 12 || defined(__clang__))
      return __builtin_cpu_supports("x86-64-v4");  /* and the OS's ZMM/opmask state */
    #else
      return 0;
    #endif
    }
    """
    int fastops_has_x86_64_v3() nogil
    int fastops_has_x86_64_v4() nogil


cdef extern from "common.hpp" namespace "fastops":
    int simd_cap_of(const char* env) nogil


def simd_cap():
    """FASTOPS_SIMD as the kernels parse it (common.hpp simd_cap_of): "baseline",
    "x86-64-v3" or "x86-64-v4" (unset: "x86-64-v4"); ValueError for another value."""
    env = os.environ.get("FASTOPS_SIMD")
    cdef bytes raw = env.encode("utf-8", "surrogateescape") if env is not None else None
    cap = simd_cap_of(<const char*>raw if raw is not None else NULL)
    if cap < 0:
        raise ValueError(f"FASTOPS_SIMD={os.environ.get('FASTOPS_SIMD')!r}: expected one of "
                         "baseline, x86-64-v3, x86-64-v4")
    return ("baseline", "x86-64-v3", "x86-64-v4")[cap]


def has_x86_64_v3():
    """Whether this CPU (and OS) runs x86-64-v3 code: AVX2, FMA, BMI1/2, F16C, ..."""
    return bool(fastops_has_x86_64_v3())


def has_x86_64_v4():
    """Whether this CPU (and OS) runs x86-64-v4 code: AVX-512 F, BW, CD, DQ and VL."""
    return bool(fastops_has_x86_64_v4())


def plain_args(tuple args, frozenset types):
    """Whether every argument's type is in ``types``, or it is a tuple of such values: the
    test of fastops._dispatch's public entries (no GPU array can hide in such arguments).
    In Python the test cost 0.3 us of a tiny call's ~1.8 (cv.resize 8x8, issue 14)."""
    for a in args:
        if type(a) is tuple:
            for v in <tuple>a:
                if type(v) not in types:
                    return False
        elif type(a) not in types:
            return False
    return True


def contiguous_views(tuple args, tuple inputs, int64_t max_size):
    """``args`` with each NumPy view among ``args[i]``, i in ``inputs``, of 1 to max_size
    elements, aligned and in native byte order, replaced by a C-contiguous copy; None
    where there is no such view (fastops._dispatch.fast_path_of_copies: the fast paths
    take C-contiguous arrays; compiled, as the copies' Python cost 2 us of 5 for a tiny
    topk view).  Broadcasts (a stride of 0 on an axis longer than 1) are left alone: the
    general path may take them as they are (gather_elements' broadcast rows)."""
    cdef list copies = None
    cdef cnp.ndarray a
    cdef Py_ssize_t i
    cdef int d
    cdef bint broadcast
    for i in inputs:
        x = args[i]
        if type(x) is not cnp.ndarray:
            continue
        a = <cnp.ndarray>x
        if cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_ISALIGNED(a) \
                or not cnp.PyArray_ISNOTSWAPPED(a) \
                or not (0 < cnp.PyArray_SIZE(a) <= max_size):
            continue
        broadcast = False
        for d in range(cnp.PyArray_NDIM(a)):
            if cnp.PyArray_STRIDES(a)[d] == 0 and cnp.PyArray_DIMS(a)[d] > 1:
                broadcast = True
        if broadcast:
            continue
        if copies is None:
            copies = list(args)
        copies[i] = cnp.PyArray_NewCopy(a, cnp.NPY_CORDER)
    return None if copies is None else tuple(copies)


cdef extern from "half.hpp" namespace "fastops":
    void c_half_to_float "fastops::half_to_float"(const uint16_t* src, float* dst, int64_t n,
                                                  cbool f16c, int nthreads) except + nogil


def half_to_float32(const uint16_t[::1] src, float[::1] dst, bint f16c, int nthreads):
    """dst = the float16 bits src as float32, bit for bit as NumPy's astype (include/half.hpp);
    f16c: by F16C where this CPU has it (False: the portable loop, FASTOPS_SIMD=baseline)."""
    if src.shape[0] != dst.shape[0]:
        raise ValueError(f"half_to_float32: {src.shape[0]} elements into {dst.shape[0]}")
    if src.shape[0] == 0:
        return
    with nogil:
        c_half_to_float(&src[0], &dst[0], src.shape[0], f16c, nthreads)
