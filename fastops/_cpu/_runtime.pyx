# OpenMP runtime queries for fastops._threads, and the CPU's SIMD support.
import os

cimport openmp


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
