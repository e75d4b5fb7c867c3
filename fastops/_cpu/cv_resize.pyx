# Thin typed entry points for fastops.cv.resize's kernels in include/cv_resize.hpp.
# Arguments are validated and shaped by fastops.cv; these only release the GIL.
# fastops/_gpu/cv_resize.py exposes the same functions for CuPy arrays.
#
# Images are (H, W, C) views whose pixels are C contiguous elements (any row stride,
# negative too); outputs are contiguous (dh, dw, C).  Every extent is >= 1.
from cython cimport floating
from libc.stdint cimport int16_t, int64_t, uint8_t, uint16_t
from libcpp cimport bool as cbool

ctypedef fused exact_t:
    uint8_t
    uint16_t
    int16_t

ctypedef fused float_t:
    uint16_t
    int16_t
    float
    double

ctypedef fused area_t:
    uint8_t
    uint16_t
    int16_t
    float
    double

# every kernel is `except +`: std::bad_alloc (tables, per-thread rings) becomes MemoryError
cdef extern from "cv_resize.hpp" namespace "fastops" nogil:
    void c_nn_table "fastops::cv_nn_table"(
        int64_t n_in, int64_t n_out, double ifx, cbool exact, int64_t* idx) except +
    void c_area_table "fastops::cv_area_table"[W](
        int64_t n_in, int64_t n_out, double scale, int64_t K, int64_t* first, int64_t* count,
        W* weights, int nthreads) except +
    void c_resize_fixed "fastops::cv_resize_fixed"(
        const uint8_t* x, int64_t h, int64_t w, int64_t C, int64_t rs, double scale_x,
        double inv_x, double scale_y, double inv_y, int interp, uint8_t* out, int64_t dh,
        int64_t dw, int nthreads) except +
    void c_resize_float "fastops::cv_resize_float"[T](
        const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, double scale_x,
        double inv_x, double scale_y, double inv_y, int interp, T* out, int64_t dh,
        int64_t dw, int nthreads) except +
    void c_resize_exact "fastops::cv_resize_exact"[T](
        const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, double scale_x,
        double scale_y, T* out, int64_t dh, int64_t dw, int nthreads) except +
    void c_area_fast "fastops::cv_area_fast"[T](
        const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, int64_t isx, int64_t isy,
        T* out, int64_t dh, int64_t dw, int nthreads) except +
    void c_area "fastops::cv_area"[T](
        const T* x, int64_t h, int64_t w, int64_t C, int64_t rs, const int64_t* fy,
        const int64_t* cy, const float* wy, int64_t Ky, const int64_t* fx, const int64_t* cx,
        const float* wx, int64_t Kx, T* out, int64_t dh, int64_t dw, int nthreads) except +


cdef int64_t _row_stride(int64_t s0, int64_t s1, int64_t s2, int64_t C, int64_t item) except? -1:
    """Row stride in elements of an (H, W, C) view with C-contiguous pixels."""
    if (C > 1 and s2 != item) or s1 != C * item or s0 % item:
        raise ValueError("cv_resize kernels need C-contiguous pixels (fastops.cv copies)")
    return s0 // item


def nn_table(int64_t n_in, int64_t n_out, double ifx, bint exact, int64_t[::1] idx,
             int nthreads):
    """idx[i] = the source index of output i: INTER_NEAREST (floor(i * ifx), ifx = 1 /
    inv_scale) or INTER_NEAREST_EXACT (OpenCV 5's running sum), clamped to the axis."""
    with nogil:
        c_nn_table(n_in, n_out, ifx, exact, &idx[0])


def area_table(int64_t n_in, int64_t n_out, double scale, int64_t[::1] first,
               int64_t[::1] count, floating[:, ::1] weights, int nthreads):
    """The INTER_AREA cells of one axis (computeResizeAreaTab) in the resize family's table
    layout (fastops.resample.Table): weights (n_out, K), K >= floor(scale) + 2."""
    with nogil:
        c_area_table(n_in, n_out, scale, weights.shape[1], &first[0], &count[0],
                     &weights[0, 0], nthreads)


def resize_fixed(const uint8_t[:, :, :] x, double scale_x, double inv_x, double scale_y,
                 double inv_y, int interp, uint8_t[:, :, ::1] out, int nthreads):
    """uint8 INTER_LINEAR (1), INTER_CUBIC (2), INTER_AREA upscaling (3) in 11-bit fixed
    point."""
    cdef int64_t C = x.shape[2]
    cdef int64_t rs = _row_stride(x.strides[0], x.strides[1], x.strides[2], C, 1)
    with nogil:
        c_resize_fixed(&x[0, 0, 0], x.shape[0], x.shape[1], C, rs, scale_x, inv_x, scale_y,
                       inv_y, interp, &out[0, 0, 0], out.shape[0], out.shape[1], nthreads)


def resize_float(const float_t[:, :, :] x, double scale_x, double inv_x, double scale_y,
                 double inv_y, int interp, float_t[:, :, ::1] out, int nthreads):
    """uint16 / int16 / float32 / float64 INTER_LINEAR (1), INTER_CUBIC (2), INTER_AREA
    upscaling (3) in OpenCV's float arithmetic (float32; float64 for float64)."""
    cdef int64_t C = x.shape[2]
    cdef int64_t rs = _row_stride(x.strides[0], x.strides[1], x.strides[2], C,
                                  sizeof(float_t))
    with nogil:
        c_resize_float(&x[0, 0, 0], x.shape[0], x.shape[1], C, rs, scale_x, inv_x, scale_y,
                       inv_y, interp, &out[0, 0, 0], out.shape[0], out.shape[1], nthreads)


def resize_exact(const exact_t[:, :, :] x, double scale_x, double scale_y,
                 exact_t[:, :, ::1] out, int nthreads):
    """INTER_LINEAR_EXACT (uint8, uint16, int16)."""
    cdef int64_t C = x.shape[2]
    cdef int64_t rs = _row_stride(x.strides[0], x.strides[1], x.strides[2], C,
                                  sizeof(exact_t))
    with nogil:
        c_resize_exact(&x[0, 0, 0], x.shape[0], x.shape[1], C, rs, scale_x, scale_y,
                       &out[0, 0, 0], out.shape[0], out.shape[1], nthreads)


def area_fast(const area_t[:, :, :] x, int64_t isx, int64_t isy, area_t[:, :, ::1] out,
              int nthreads):
    """INTER_AREA with integer factors isx, isy >= 1 (resizeAreaFast_)."""
    cdef int64_t C = x.shape[2]
    cdef int64_t rs = _row_stride(x.strides[0], x.strides[1], x.strides[2], C, sizeof(area_t))
    with nogil:
        c_area_fast(&x[0, 0, 0], x.shape[0], x.shape[1], C, rs, isx, isy, &out[0, 0, 0],
                    out.shape[0], out.shape[1], nthreads)


def area(const exact_t[:, :, :] x, const int64_t[::1] fy, const int64_t[::1] cy,
         const float[:, ::1] wy, const int64_t[::1] fx, const int64_t[::1] cx,
         const float[:, ::1] wx, exact_t[:, :, ::1] out, int nthreads):
    """INTER_AREA cells of integer images (resizeArea_) from area_table tables."""
    cdef int64_t C = x.shape[2]
    cdef int64_t rs = _row_stride(x.strides[0], x.strides[1], x.strides[2], C,
                                  sizeof(exact_t))
    with nogil:
        c_area(&x[0, 0, 0], x.shape[0], x.shape[1], C, rs, &fy[0], &cy[0], &wy[0, 0],
               wy.shape[1], &fx[0], &cx[0], &wx[0, 0], wx.shape[1], &out[0, 0, 0],
               out.shape[0], out.shape[1], nthreads)
