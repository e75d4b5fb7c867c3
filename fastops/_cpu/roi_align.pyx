# Thin typed entry point for the RoIAlign kernel in include/roi_align.hpp.
# Inputs are validated and shaped by fastops.detection.roi_align; this only releases the GIL.
from cython cimport floating
from libc.math cimport floor, isfinite
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libcpp cimport bool as cbool

cimport numpy as cnp

from fastops._cpu._fast cimport kParallelGrain, plain, plain_any, small_output
from fastops._threads import get_num_threads

cnp.import_array()

cdef extern from "roi_align.hpp" namespace "fastops" nogil:
    void c_roi_align "fastops::roi_align"[T](
        const T* x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t sN, int64_t sC, int64_t sH,
        int64_t sW, const T* boxes, const int64_t* batch, int64_t K, int64_t PH, int64_t PW,
        T scale, int64_t sampling_ratio, int mode, cbool aligned, T* out,
        int nthreads) except +   # std::bad_alloc -> MemoryError (tables of huge RoIs)


def roi_align(const floating[:, :, :, :] x, const floating[:, ::1] boxes,
              const int64_t[::1] batch, double spatial_scale, int64_t sampling_ratio,
              int mode, bint aligned, floating[:, :, :, ::1] out, int nthreads):
    """x (N, C, H, W) with H, W >= 1, any element strides; boxes (K, 4) [x1, y1, x2, y2];
    batch (K,) indices in [0, N); out (K, C, PH, PW) with K, C >= 1.
    mode: 0 avg, 1 max (of interpolated samples), 2 onnx_max."""
    cdef int64_t isz = sizeof(floating)
    cdef floating scale = <floating>spatial_scale
    with nogil:
        c_roi_align(&x[0, 0, 0, 0], x.shape[0], x.shape[1], x.shape[2], x.shape[3],
                    x.strides[0] // isz, x.strides[1] // isz, x.strides[2] // isz,
                    x.strides[3] // isz,
                    &boxes[0, 0], &batch[0], boxes.shape[0], out.shape[2], out.shape[3],
                    scale, sampling_ratio, mode, aligned, &out[0, 0, 0, 0], nthreads)


# ------------------------------------------------ compiled fast path (_fast.pxd)
cdef object _fast_run(const floating* xp, cnp.ndarray x, const floating* rp, int64_t K,
                      const int64_t* bp, int64_t oh, int64_t ow, double scale, int64_t ratio,
                      int mode, bint aligned):
    """Copies the boxes and batch indices (checked: finite boxes, integral in-range batch
    values; None otherwise) and runs the kernel: on one thread holding the GIL for a map
    of at most kParallelGrain elements, else on get_num_threads() threads without it (a
    few RoIs of a large map: the general path's ~50 us of Python was 0.45 of a 1-RoI 7x7
    call on a 2x256x200x272 map, back to back)."""
    cdef cnp.npy_intp* d = cnp.PyArray_DIMS(x)
    cdef int64_t N = d[0], C = d[1], H = d[2], W = d[3], cols = 4 if bp else 5, k, j
    cdef floating* boxes = <floating*>malloc(K * (4 * sizeof(floating) + sizeof(int64_t)))
    if boxes == NULL:
        return None
    cdef int64_t* batch = <int64_t*>(boxes + 4 * K)
    cdef double v
    cdef cnp.npy_intp out_dims[4]
    cdef int nthreads = 1 if small_output(N * C * H * W) else get_num_threads()
    cdef floating* o
    try:
        for k in range(K):
            for j in range(4):
                boxes[4 * k + j] = rp[cols * k + cols - 4 + j]
                if not isfinite(boxes[4 * k + j]):
                    return None
            if bp:
                batch[k] = bp[k]
            else:
                v = rp[5 * k]
                if not (isfinite(v) and v == floor(v) and 0 <= v < N):
                    return None
                batch[k] = <int64_t>v
            if not 0 <= batch[k] < N:
                return None
        out_dims[0] = K
        out_dims[1] = C
        out_dims[2] = oh
        out_dims[3] = ow
        out = cnp.PyArray_EMPTY(4, out_dims, cnp.PyArray_TYPE(x), 0)
        o = <floating*>cnp.PyArray_DATA(out)
        if nthreads == 1:
            c_roi_align(xp, N, C, H, W, C * H * W, H * W, W, 1, boxes, batch, K, oh, ow,
                        <floating>scale, ratio, mode, aligned, o, 1)
        else:
            with nogil:
                c_roi_align(xp, N, C, H, W, C * H * W, H * W, W, 1, boxes, batch, K, oh, ow,
                            <floating>scale, ratio, mode, aligned, o, nthreads)
        return out
    finally:
        free(boxes)


cdef inline int64_t _output_extent(object v):
    """v when it is a Python int in [1, kParallelGrain] (so K * C * oh * ow cannot
    overflow: K and C are extents of plain arrays), else -1."""
    return v if type(v) is int and 0 < v <= kParallelGrain else -1


def fast_roi_align(x, rois, output_size, spatial_scale, sampling_ratio, mode, aligned,
                   batch_indices, dict modes):
    """roi_align of a 4-D float32/float64 x (C-contiguous, aligned, native; any size) and
    plain rois of its dtype (with plain int64 batch_indices, or the batch column), int or
    (int, int) output_size, Python float/int scale and ratio, an exact mode name and a
    bool aligned, with at most kParallelGrain outputs; else None."""
    if not (plain_any(x) and plain(rois)) or type(aligned) is not bool or type(mode) is not str \
            or type(sampling_ratio) is not int or not (type(spatial_scale) is float
                                                     or type(spatial_scale) is int):
        return None
    cdef cnp.ndarray a = <cnp.ndarray>x, r = <cnp.ndarray>rois, bi
    cdef int typenum = cnp.PyArray_TYPE(a), mode_code = modes.get(mode, -1)
    cdef const int64_t* bp = NULL
    cdef int cols = 5
    if batch_indices is not None:
        if not plain(batch_indices):
            return None
        bi = <cnp.ndarray>batch_indices
        if cnp.PyArray_TYPE(bi) != cnp.NPY_INT64 or cnp.PyArray_NDIM(bi) != 1:
            return None
        bp = <const int64_t*>cnp.PyArray_DATA(bi)
        cols = 4
    if (cnp.PyArray_NDIM(a) != 4 or cnp.PyArray_TYPE(r) != typenum or cnp.PyArray_NDIM(r) != 2
            or cnp.PyArray_DIMS(r)[1] != cols or mode_code < 0
            or not (typenum == cnp.NPY_FLOAT or typenum == cnp.NPY_DOUBLE)):
        return None
    cdef int64_t K = cnp.PyArray_DIMS(r)[0], oh, ow
    if bp and cnp.PyArray_DIMS(bi)[0] != K:
        return None
    if type(output_size) is tuple and len(output_size) == 2:
        oh, ow = _output_extent(output_size[0]), _output_extent(output_size[1])
    else:
        oh = ow = _output_extent(output_size)
    cdef double scale = spatial_scale
    if oh < 0 or ow < 0 or not isfinite(scale) or sampling_ratio > (1 << 31) - 1 \
            or not small_output(K * cnp.PyArray_DIMS(a)[1] * oh * ow):
        return None
    cdef int64_t ratio = 0 if sampling_ratio <= 0 else sampling_ratio   # (<= 2**31 - 1)
    if typenum == cnp.NPY_FLOAT:
        return _fast_run[float](<const float*>cnp.PyArray_DATA(a), a,
                                <const float*>cnp.PyArray_DATA(r), K, bp, oh, ow, scale,
                                ratio, mode_code, aligned)
    return _fast_run[double](<const double*>cnp.PyArray_DATA(a), a,
                             <const double*>cnp.PyArray_DATA(r), K, bp, oh, ow, scale, ratio,
                             mode_code, aligned)
