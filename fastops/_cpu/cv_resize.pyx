# Thin typed entry points for fastops.cv.resize's kernels in include/cv_resize.hpp.
# Arguments are validated and shaped by fastops.cv; these only release the GIL.
# fastops/_gpu/cv_resize.py exposes the same functions for CuPy arrays.
#
# Images are (H, W, C) views whose pixels are C contiguous elements (any row stride,
# negative too); outputs are contiguous (dh, dw, C).  Every extent is >= 1.
from cython cimport floating
from libc.float cimport DBL_EPSILON
from libc.math cimport fabs, nearbyint
from libc.stdint cimport int16_t, int64_t, uint8_t, uint16_t
from libcpp cimport bool as cbool
cimport numpy as cnp

from fastops._cpu._fast cimport kPoolMinBytes, small_output
from fastops._cpu._pool import empty as _pool_empty
from fastops._threads import get_num_threads

cnp.import_array()

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
    bint c_resize_takes "fastops::cv_resize_takes"(int typenum)
    bint c_resize_rows "fastops::cv_resize_rows"(
        int typenum, const void* x, int64_t h, int64_t w, int64_t C, int64_t rs, int interp,
        double sx, double inv_x, double sy, double inv_y, int64_t isx, int64_t isy, void* out,
        int64_t dh, int64_t dw, int nthreads) except +


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



# ------------------------------------------------------------------ the fast path
cdef inline int64_t _round_int(double v) noexcept nogil:
    """saturate_cast<int>(v) for v > 0: round half to even, at most INT_MAX."""
    return <int64_t>nearbyint(v) if v < 2147483647.0 else 2147483647


cdef inline int64_t _rows_of_pixels(cnp.ndarray a, int64_t h, int64_t w, int64_t C) noexcept:
    """The row stride in elements of an image whose rows are w * C contiguous elements at a
    positive stride (C-contiguous, or a crop img[y0:y1, x0:x1] of a larger one), else -1.
    (Strides of axes of length 1 are arbitrary in NumPy, and ignored.)"""
    if cnp.PyArray_IS_C_CONTIGUOUS(a):
        return w * C
    cdef int64_t item = cnp.PyArray_ITEMSIZE(a)
    cdef cnp.npy_intp* s = cnp.PyArray_STRIDES(a)
    if (C > 1 and s[2] != item) or (w > 1 and s[1] != C * item):
        return -1
    if h == 1:
        return w * C
    if s[0] <= 0 or s[0] % item or s[0] < w * C * item:
        return -1
    return s[0] // item


def fast_resize(img, dsize, dst, interpolation):
    """cv.resize of an aligned, native-order NumPy uint8, uint16, int16, float32 or float64
    image, 2-D or 3-D, C-contiguous or a crop of one (rows of contiguous pixels at a
    positive stride: img[y0:y1, x0:x1] took ~30 us of Python on the general path), to a
    dsize given as a tuple or list of two positive Python ints, with INTER_NEAREST,
    INTER_NEAREST_EXACT, or INTER_LINEAR, INTER_CUBIC or INTER_AREA where hal::resize runs
    the separable filters or resizeAreaFast_ (fastops.cv._dispatch_modes' routing), into
    a new array or into a dst that is exactly the output (C-contiguous, aligned, native,
    writeable, of the output's shape and dtype, not overlapping img: cv2 returns that
    dst); else None (the general path: a preallocated dst cost ~10 us of Python there,
    15 % of a 640x480x3 -> 224x224 float32 call on 2 threads).  Unlike the other fast
    paths it takes any size (fastops/_cpu/_fast.pxd): outputs of more than
    kParallelGrain elements run on get_num_threads() threads without the GIL (those of
    kPoolMinBytes or more come from the block pool), as the general path does, whose
    ~12 us of Python a 224x224 image would otherwise pay."""
    if type(img) is not cnp.ndarray or type(interpolation) is not int \
            or (type(dsize) is not tuple and type(dsize) is not list) or len(dsize) != 2 \
            or (dst is not None and type(dst) is not cnp.ndarray):
        return None
    dw_obj, dh_obj = dsize[0], dsize[1]
    if type(dw_obj) is not int or type(dh_obj) is not int or not (0 < dw_obj < (1 << 31)) \
            or not (0 < dh_obj < (1 << 31)) or not (0 <= interpolation <= 3 or interpolation == 6):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>img
    cdef int nd = cnp.PyArray_NDIM(a), typenum = cnp.PyArray_TYPE(a)
    if (nd != 2 and nd != 3) or not (cnp.PyArray_ISALIGNED(a) and cnp.PyArray_ISNOTSWAPPED(a)) \
            or cnp.PyArray_SIZE(a) == 0 or sizeof(cnp.npy_intp) != sizeof(int64_t):
        return None
    if not c_resize_takes(typenum):
        return None
    cdef int64_t h = cnp.PyArray_DIMS(a)[0], w = cnp.PyArray_DIMS(a)[1]
    cdef int64_t C = cnp.PyArray_DIMS(a)[2] if nd == 3 else 1
    cdef int64_t rs = _rows_of_pixels(a, h, w, C)
    if rs < 0:
        return None
    cdef int64_t dw = dw_obj, dh = dh_obj
    cdef int interp = interpolation
    if (dh == h and dw == w) or dh * dw > ((1 << 62) // C) // cnp.PyArray_ITEMSIZE(a):
        return None
    # hal::resize's routing, as fastops.cv._dispatch_modes
    cdef double inv_x = <double>dw / <double>w, inv_y = <double>dh / <double>h
    cdef double sx = 1.0 / inv_x, sy = 1.0 / inv_y
    cdef int64_t isx = _round_int(sx), isy = _round_int(sy)
    cdef bint area_fast = fabs(sx - isx) < DBL_EPSILON and fabs(sy - isy) < DBL_EPSILON
    if interp == 0 or interp == 6:
        area_fast = False
    if interp == 1 and area_fast and isx == 2 and isy == 2:
        interp = 3
    if interp == 3 and sx >= 1 and sy >= 1:
        if not area_fast:
            return None         # INTER_AREA tables: the general path
    else:
        isx = isy = 0
    cdef int64_t n = dh * dw * C
    cdef int nthreads = 1
    cdef cnp.ndarray out
    cdef cnp.npy_intp dims[3]
    dims[0], dims[1], dims[2] = dh, dw, C
    cdef cnp.ndarray d
    cdef char* lo
    cdef char* hi
    if dst is not None:
        d = <cnp.ndarray>dst
        lo = <char*>cnp.PyArray_DATA(d)
        hi = lo + cnp.PyArray_NBYTES(d)
        if cnp.PyArray_NDIM(d) != (2 if C == 1 else 3) or cnp.PyArray_TYPE(d) != typenum \
                or cnp.PyArray_DIMS(d)[0] != dh or cnp.PyArray_DIMS(d)[1] != dw \
                or (C != 1 and cnp.PyArray_DIMS(d)[2] != C) \
                or not (cnp.PyArray_ISCARRAY(d) and cnp.PyArray_ISNOTSWAPPED(d)) \
                or (lo < <char*>cnp.PyArray_DATA(a)
                    + ((h - 1) * rs + w * C) * cnp.PyArray_ITEMSIZE(a)
                    and <char*>cnp.PyArray_DATA(a) < hi):
            return None
        out = d
    elif small_output(n) or n * cnp.PyArray_ITEMSIZE(a) < kPoolMinBytes:
        # (the pool's Python call cost 5-10 us of a 224x224x3 -> 112x112 call after a pause)
        out = cnp.PyArray_EMPTY(2 if C == 1 else 3, dims, typenum, 0)
    else:
        out = _pool_empty((dh_obj, dw_obj) if C == 1 else (dh_obj, dw_obj, C), a.dtype)
    if not small_output(n):
        nthreads = get_num_threads()
    cdef const void* x = cnp.PyArray_DATA(a)
    cdef void* o = cnp.PyArray_DATA(out)
    if nthreads == 1:       # (a small image: releasing the GIL costs more than the kernel)
        c_resize_rows(typenum, x, h, w, C, rs, interp, sx, inv_x, sy, inv_y, isx, isy, o, dh,
                      dw, 1)
    else:
        with nogil:
            c_resize_rows(typenum, x, h, w, C, rs, interp, sx, inv_x, sy, inv_y, isx, isy, o,
                          dh, dw, nthreads)
    return out
