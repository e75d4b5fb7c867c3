# Thin typed entry point for the InstanceNormalization kernel in include/norm.hpp.
# Inputs are validated and shaped by fastops.norm; this only releases the GIL.
from cython cimport floating
from libc.stdint cimport int64_t

# `except +`: std::bad_alloc (per-thread scratch) becomes MemoryError
cdef extern from "norm.hpp" namespace "fastops" nogil:
    void c_instance_norm "fastops::instance_norm"[T](
        const T* x, int64_t N, int64_t C, int64_t L, int64_t sN, int64_t sC,
        const double* scale, const double* bias, double eps, T* y, int nthreads) except +


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
