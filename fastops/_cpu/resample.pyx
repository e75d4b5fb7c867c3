# Thin typed entry points for the resize kernels in include/resample.hpp.
# Arguments are validated and shaped by fastops.resample; these only release the GIL.
# fastops/_gpu/resample.py exposes the same functions for CuPy arrays.
from cython cimport floating
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t
from libcpp cimport bool as cbool

from fastops._cpu._types cimport uword

ctypedef fused rs_t:
    uint8_t
    int8_t
    int32_t
    int64_t
    float
    double

# every kernel is `except +`: std::bad_alloc (per-thread scratch) becomes MemoryError
cdef extern from "resample.hpp" namespace "fastops" nogil:
    void c_table "fastops::resize_table"[W](
        int64_t n_in, int64_t n_out, int mode, int ctm, int nearest_mode, double scale,
        double out_width, double roi_start, double roi_end, double cubic_a, cbool antialias,
        cbool exclude_outside, int64_t n_raw, int64_t tap_start, int64_t K, int64_t* first,
        int64_t* count, W* weights, uint8_t* extrap, int nthreads) except +
    void c_resize2d "fastops::resize2d_flat"[T, W](
        const T* x, const int64_t* shape, const int64_t* strides, const int64_t* fh,
        const int64_t* ch, const W* wh, int64_t Kh, int64_t Ho, const int64_t* fw,
        const int64_t* cw, const W* ww, int64_t Kw, int64_t Wo, cbool v_first, T* out,
        int nthreads) except +
    void c_nearest2d "fastops::nearest2d_flat"[T](
        const T* x, const int64_t* shape, const int64_t* strides, const int64_t* fh,
        int64_t Ho, const int64_t* fw, int64_t Wo, T* out, int nthreads) except +
    void c_round_cast "fastops::resize_round_cast"[W, T](
        const W* src, int64_t n, T* dst, int nthreads) except +
    void c_fill "fastops::resize_fill"[T](
        T* out, int64_t B, int64_t m, int64_t C, const uint8_t* mask, int code, T value,
        int nthreads) except +


def axis_table(int64_t n_in, int64_t n_out, int mode, int ctm, int nearest_mode,
               double scale, double out_width, double roi_start, double roi_end,
               double cubic_a, bint antialias, bint exclude_outside, int64_t n_raw,
               int64_t tap_start, int64_t[::1] first, int64_t[::1] count,
               floating[:, ::1] weights, uint8_t[::1] extrap, int nthreads):
    """Fill one axis table (n_out >= 1 rows): first, count, extrap (n_out,), weights
    (n_out, K) with K >= every row's merged tap count."""
    with nogil:
        c_table(n_in, n_out, mode, ctm, nearest_mode, scale, out_width, roi_start, roi_end,
                cubic_a, antialias, exclude_outside, n_raw, tap_start, weights.shape[1],
                &first[0], &count[0], &weights[0, 0], &extrap[0], nthreads)


def resize2d(const rs_t[:, :, :, :, :] x, const int64_t[::1] fh, const int64_t[::1] ch,
             const floating[:, ::1] wh, const int64_t[::1] fw, const int64_t[::1] cw,
             const floating[:, ::1] ww, bint v_first, rs_t[:, :, :, :, ::1] out,
             int nthreads):
    """Resize axes 1 and 3 of x (B, H, M, Wd, C), any strides, into out (B, Ho, M, Wo, C);
    every extent >= 1, tables with Ho / Wo rows."""
    cdef int64_t shape[5]
    cdef int64_t strides[5]
    cdef int i
    for i in range(5):
        shape[i] = x.shape[i]
        strides[i] = x.strides[i] // <int64_t>sizeof(rs_t)
    with nogil:
        c_resize2d(&x[0, 0, 0, 0, 0], shape, strides, &fh[0], &ch[0], &wh[0, 0],
                   wh.shape[1], wh.shape[0], &fw[0], &cw[0], &ww[0, 0], ww.shape[1],
                   ww.shape[0], v_first, &out[0, 0, 0, 0, 0], nthreads)


def nearest2d(const uword[:, :, :, :, :] x, const int64_t[::1] fh, const int64_t[::1] fw,
              uword[:, :, :, :, ::1] out, int nthreads):
    """out[b, yo, m, xo, c] = x[b, fh[yo], m, fw[xo], c]; every extent >= 1."""
    cdef int64_t shape[5]
    cdef int64_t strides[5]
    cdef int i
    for i in range(5):
        shape[i] = x.shape[i]
        strides[i] = x.strides[i] // <int64_t>sizeof(uword)
    with nogil:
        c_nearest2d(&x[0, 0, 0, 0, 0], shape, strides, &fh[0], fh.shape[0], &fw[0],
                    fw.shape[0], &out[0, 0, 0, 0, 0], nthreads)


def round_cast(const floating[::1] src, rs_t[::1] dst, int nthreads):
    """dst = src rounded half away from zero and saturated (cast for float dst)."""
    with nogil:
        c_round_cast(&src[0], src.shape[0], &dst[0], nthreads)


def fill(uword[:, :, ::1] out, const uint8_t[::1] mask, int code, const uword[::1] value,
         int nthreads):
    """out[b, o, :] = value[0] wherever mask[o] == code (1: tf_crop_and_resize
    extrapolation, 2: nearest with exclude_outside picking outside the axis); value is a
    1-element NumPy array of out's element type."""
    with nogil:
        c_fill(&out[0, 0, 0], out.shape[0], out.shape[1], out.shape[2], &mask[0], code,
               value[0], nthreads)
